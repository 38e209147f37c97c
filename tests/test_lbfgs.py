"""minimize_lbfgs against scipy's L-BFGS-B on the same function, on variables and on Keras models."""

import keras
import numpy as np
import pytest
import scipy.optimize
import tensorflow as tf

from hodiff.training.lbfgs import minimize_lbfgs


def test_rosenbrock_on_variables_takes_scipys_iterates():
    x = tf.Variable([-1.2, 1.0, 0.5], dtype=tf.float64)
    rosenbrock = lambda: tf.reduce_sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)
    result = minimize_lbfgs(rosenbrock, [x], max_iterations=300, gtol=1e-8, ftol=1e-12)
    reference = scipy.optimize.minimize(
        scipy.optimize.rosen,
        [-1.2, 1.0, 0.5],
        jac=scipy.optimize.rosen_der,
        method="L-BFGS-B",
        options={"maxiter": 300, "maxfun": 395, "gtol": 1e-8, "ftol": 1e-12, "maxcor": 50},
    )
    assert result.success and result.nit == reference.nit
    np.testing.assert_allclose(result.x, reference.x, rtol=0, atol=1e-9)
    np.testing.assert_array_equal(x.numpy(), result.x)


def test_keras_model_reaches_the_least_squares_solution_in_float32():
    rng = np.random.default_rng(0)
    inputs, targets = rng.normal(size=(64, 3)), rng.normal(size=(64, 1))
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)])
    x, y = tf.constant(inputs, tf.float32), tf.constant(targets, tf.float32)
    result = minimize_lbfgs(lambda: tf.reduce_mean((model(x) - y) ** 2), model, max_iterations=100)
    design = np.hstack([inputs, np.ones((64, 1))])
    solution = np.linalg.lstsq(design, targets, rcond=None)[0]
    np.testing.assert_allclose(
        np.concatenate([model.weights[0].numpy().ravel(), model.weights[1].numpy()]), solution.ravel(), atol=3e-4
    )  # float32 loss: about sqrt(eps32)
    assert result.fun == pytest.approx(np.mean((design @ solution - targets) ** 2), rel=1e-5)


def test_callback_sees_the_variables_at_each_iterate():
    x = tf.Variable([3.0, -2.0], dtype=tf.float64)
    loss = lambda: tf.reduce_sum((x - [1.0, 2.0]) ** 2 * [1.0, 10.0])
    seen = []
    minimize_lbfgs(
        loss,
        [x],
        max_iterations=20,
        callback=lambda r: seen.append((r.fun, float(loss()), r.x.copy(), x.numpy().copy())),
    )
    assert seen
    for fun, recomputed, iterate, held in seen:
        assert fun == pytest.approx(recomputed, rel=1e-12)
        np.testing.assert_array_equal(iterate, held)


def test_loss_scale_is_halved_until_float16_gradients_are_finite():
    v = tf.Variable([3.0, -1.0], dtype=tf.float16)
    result = minimize_lbfgs(
        lambda: tf.reduce_sum(tf.cast(v * v, tf.float32)), [v], max_iterations=20, loss_scale=2.0**20
    )
    assert np.all(np.isfinite(result.x)) and np.all(np.abs(v.numpy()) < 1e-2)


def test_bad_input():
    x = tf.Variable([1.0], dtype=tf.float64)
    with pytest.raises(FloatingPointError, match="the loss is nan"):
        minimize_lbfgs(lambda: tf.reduce_sum(x * np.nan), [x])
    with pytest.raises(ValueError, match="no variables"):
        minimize_lbfgs(lambda: tf.constant(0.0), [])
    with pytest.raises(ValueError, match="max_iterations must be an int >= 1"):
        minimize_lbfgs(lambda: tf.reduce_sum(x), [x], max_iterations=0)


def test_under_a_strategy_the_replica_losses_are_averaged():
    """With strategy=, loss_fn is the replica's loss and its mean over replicas is minimised (one replica here;
    two replicas and two workers: tests/test_pinn_distribute.py)."""
    strategy = tf.distribute.MirroredStrategy(["/cpu:0"])
    with strategy.scope():
        x = tf.Variable([-1.2, 1.0, 0.5], dtype=tf.float64)
    rosenbrock = lambda: tf.reduce_sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)
    result = minimize_lbfgs(rosenbrock, [x], max_iterations=300, gtol=1e-8, ftol=1e-12, strategy=strategy)
    plain = tf.Variable([-1.2, 1.0, 0.5], dtype=tf.float64)
    reference = minimize_lbfgs(
        lambda: tf.reduce_sum(100.0 * (plain[1:] - plain[:-1] ** 2) ** 2 + (1.0 - plain[:-1]) ** 2),
        [plain],
        max_iterations=300,
        gtol=1e-8,
        ftol=1e-12,
    )
    assert result.success and result.nit == reference.nit
    np.testing.assert_allclose(result.x, reference.x, rtol=0, atol=1e-12)
    np.testing.assert_array_equal(x.numpy(), result.x)
