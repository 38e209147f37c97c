"""Self-scaled dense BFGS: the update against the textbook matrix formula, convergence, the TensorFlow wrapper."""

import keras
import numpy as np
import pytest
import scipy.optimize
import tensorflow as tf

from hodiff.training.bfgs import minimize_bfgs, self_scaled_bfgs


def textbook_bfgs(fun, x, iterations, scaling):
    """The same algorithm with the whole matrix formula (Nocedal & Wright eq. 6.17), O(n^3) per update."""
    n = x.size
    inverse_hessian = np.eye(n)
    value, gradient = fun(x)
    previous = value + np.linalg.norm(gradient) / 2
    path = []
    for _ in range(iterations):
        direction = -inverse_hessian @ gradient
        step, *_, new_value, _, _ = scipy.optimize.line_search(
            lambda p: fun(p)[0], lambda p: fun(p)[1], x, direction, gradient, value, previous
        )
        s = step * direction
        y = fun(x + s)[1] - gradient
        rho = 1.0 / (y @ s)
        if scaling == "al-baali":
            inverse_hessian = inverse_hessian / min(1.0, 1.0 / (-step * rho * (s @ gradient)))
        left = np.eye(n) - rho * np.outer(s, y)
        inverse_hessian = left @ inverse_hessian @ left.T + rho * np.outer(s, s)
        previous, value, x, gradient = value, new_value, x + s, fun(x + s)[1]
        path.append(x)
    return np.array(path)


def rosenbrock(x):
    return scipy.optimize.rosen(x), scipy.optimize.rosen_der(x)


@pytest.mark.parametrize("scaling", ["al-baali", "none"])
def test_the_rank_two_update_takes_the_textbook_iterates(scaling):
    x0 = np.array([-1.2, 1.0, 0.5, -0.3, 0.8])
    path = []
    self_scaled_bfgs(rosenbrock, x0, 25, scaling=scaling, callback=lambda r: path.append(r.x.copy()))
    np.testing.assert_allclose(np.array(path), textbook_bfgs(rosenbrock, x0, 25, scaling), rtol=0, atol=1e-9)


@pytest.mark.parametrize("scaling", ["al-baali", "none"])
def test_rosenbrock_converges_in_about_scipys_iterations(scaling):
    result = self_scaled_bfgs(rosenbrock, np.zeros(20), max_iterations=1000, scaling=scaling)
    reference = scipy.optimize.minimize(
        scipy.optimize.rosen, np.zeros(20), jac=scipy.optimize.rosen_der, method="BFGS", options={"gtol": 1e-10}
    )
    assert result.success and result.message == "the gradient vanished (gtol)"
    np.testing.assert_allclose(result.x, 1.0, atol=1e-9)
    assert result.nit <= 1.2 * reference.nit


def test_where_the_wolfe_search_fails_backtracking_still_descends(monkeypatch):
    """A first step along -g far too long for the Wolfe search's zoom (as a PINN window's loss of 10 with
    large gradients met): Armijo backtracking takes over, and the run converges."""
    monkeypatch.setattr(scipy.optimize, "line_search", lambda *args, **kwargs: (None,) * 6)
    result = self_scaled_bfgs(rosenbrock, np.zeros(4), max_iterations=3000, gtol=1e-6)
    assert result.success
    np.testing.assert_allclose(result.x, 1.0, atol=1e-4)


def test_an_ill_conditioned_quadratic_is_solved():
    rng = np.random.default_rng(0)
    basis = np.linalg.qr(rng.normal(size=(40, 40)))[0]
    matrix = basis @ np.diag(np.logspace(0, 4, 40)) @ basis.T
    target = rng.normal(size=40)
    quadratic = lambda x: (0.5 * x @ matrix @ x - target @ x, matrix @ x - target)
    result = self_scaled_bfgs(quadratic, np.zeros(40), max_iterations=200, gtol=1e-7)
    assert result.success  # |x - solution| <= |gradient| / smallest eigenvalue
    np.testing.assert_allclose(result.x, np.linalg.solve(matrix, target), rtol=0, atol=1e-6)


@pytest.mark.parametrize("jit_compile", [True, False])
def test_keras_model_reaches_the_least_squares_solution(jit_compile):
    rng = np.random.default_rng(0)
    inputs, targets = rng.normal(size=(64, 3)), rng.normal(size=(64, 1))
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1, dtype="float64")])
    x, y = tf.constant(inputs), tf.constant(targets)
    result = minimize_bfgs(lambda: tf.reduce_mean((model(x) - y) ** 2), model, 100, jit_compile=jit_compile)
    design = np.hstack([inputs, np.ones((64, 1))])
    solution = np.linalg.lstsq(design, targets, rcond=None)[0]
    np.testing.assert_allclose(np.concatenate([w.numpy().ravel() for w in model.weights]), solution.ravel(), atol=1e-9)
    assert result.success


def test_callback_sees_the_variables_and_can_stop():
    x = tf.Variable([3.0, -2.0], dtype=tf.float64)
    loss = lambda: tf.reduce_sum((x - [1.0, 2.0]) ** 2 * [1.0, 10.0]) + tf.reduce_sum(x**4) * 0.01
    seen = []

    def callback(result):
        seen.append((result.fun, float(loss()), result.x.copy(), x.numpy().copy()))
        if len(seen) == 3:
            raise StopIteration

    result = minimize_bfgs(loss, [x], max_iterations=50, callback=callback)
    assert len(seen) == 3 and result.nit == 3 and result.message == "stopped by the callback"
    for fun, recomputed, iterate, held in seen:
        assert fun == pytest.approx(recomputed, rel=1e-12)
        np.testing.assert_array_equal(iterate, held)
    np.testing.assert_array_equal(x.numpy(), seen[-1][2])


def test_under_a_strategy_it_takes_the_same_iterates():
    strategy = tf.distribute.MirroredStrategy(["/cpu:0"])
    with strategy.scope():
        x = tf.Variable([-1.2, 1.0, 0.5], dtype=tf.float64)
    loss = lambda v: tf.reduce_sum(100.0 * (v[1:] - v[:-1] ** 2) ** 2 + (1.0 - v[:-1]) ** 2)
    result = minimize_bfgs(lambda: loss(x), [x], max_iterations=100, strategy=strategy)
    plain = tf.Variable([-1.2, 1.0, 0.5], dtype=tf.float64)
    reference = minimize_bfgs(lambda: loss(plain), [plain], max_iterations=100)
    assert result.success and result.nit == reference.nit
    np.testing.assert_allclose(result.x, reference.x, rtol=0, atol=1e-12)


def test_bad_input():
    x = tf.Variable([1.0], dtype=tf.float64)
    with pytest.raises(FloatingPointError, match="minimize_bfgs: the loss is nan"):
        minimize_bfgs(lambda: tf.reduce_sum(x * np.nan), [x])
    with pytest.raises(ValueError, match="minimize_bfgs: there are no variables"):
        minimize_bfgs(lambda: tf.constant(0.0), [])
    with pytest.raises(ValueError, match="max_iterations must be an int >= 1"):
        minimize_bfgs(lambda: tf.reduce_sum(x), [x], max_iterations=0)
    with pytest.raises(ValueError, match="scaling must be one of"):
        minimize_bfgs(lambda: tf.reduce_sum(x), [x], scaling="oren")
    with pytest.raises(ValueError, match="scaling must be one of"):
        self_scaled_bfgs(rosenbrock, np.zeros(2), scaling="oren")
    big = tf.Variable(tf.zeros([30_001], tf.float64))
    with pytest.raises(ValueError, match="30001 weights .* Use minimize_lbfgs"):
        minimize_bfgs(lambda: tf.reduce_sum(big**2), [big])
