"""hodiff.linalg: the Hessian operator, eigenvalues and Newton-CG, against scipy and numpy."""

import numpy as np
import tensorflow as tf
from conftest import make_mlp, points

import hodiff
from hodiff.checks import reference_hessian


def rosenbrock(x):
    return tf.reduce_sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def test_operator_matvec_equals_scipy_hessian():
    x = np.array([0.5, -0.3, 1.2, 0.8, -1.0])
    H = hodiff.hessian_operator(rosenbrock, x)
    expected, _ = reference_hessian(rosenbrock, [tf.constant(x)])
    assert H.shape == (5, 5)
    np.testing.assert_allclose(H @ np.eye(5), expected, rtol=1e-6, atol=1e-6)


def test_top_eigenvalues_match_dense_eigh():
    x = np.array([0.5, -0.3, 1.2, 0.8, -1.0, 0.1])
    values, vectors = hodiff.hessian_eigenvalues(rosenbrock, x, k=2)
    dense, _ = reference_hessian(rosenbrock, [tf.constant(x)])
    expected = np.sort(np.linalg.eigvalsh(dense))[::-1][:2]
    np.testing.assert_allclose(values, expected, rtol=1e-6)
    np.testing.assert_allclose(dense @ vectors[:, 0], values[0] * vectors[:, 0], rtol=1e-5, atol=1e-5)


def test_eigenvalues_over_model_weights_match_the_dense_hessian():
    model = make_mlp(2, width=5, depth=1)
    x = points(16, 2)
    loss = lambda weights: tf.reduce_mean((model(x)[:, 0] - tf.sin(x[:, 0])) ** 2)
    values, _ = hodiff.hessian_eigenvalues(loss, model.trainable_variables, k=3)
    flat = np.concatenate([w.numpy().ravel() for w in model.trainable_variables])
    operator = hodiff.hessian_operator(loss, model.trainable_variables)
    dense = operator @ np.eye(flat.size)
    np.testing.assert_allclose(dense, dense.T, atol=1e-10)  # symmetric
    np.testing.assert_allclose(values, np.sort(np.linalg.eigvalsh(dense))[::-1][:3], rtol=1e-6)


def test_operator_follows_variable_updates():
    w, u = tf.Variable([1.0, -2.0, 0.5], dtype=tf.float64), tf.Variable([3.0, 1.0, -1.0], dtype=tf.float64)
    # f = sum(w^4) / 12 + w . u: the Hessian is [[diag(w^2), I], [I, 0]]
    H = hodiff.hessian_operator(lambda x: tf.reduce_sum(x[0] ** 4) / 12.0 + tf.reduce_sum(x[0] * x[1]), [w, u])
    a, b = np.array([1.0, 2.0, -1.0]), np.array([0.5, -1.0, 2.0])

    def closed_form():
        return np.concatenate([w.numpy() ** 2 * a + b, a])

    np.testing.assert_allclose(H @ np.concatenate([a, b]), closed_form(), rtol=1e-12)
    w.assign([3.0, 0.25, -4.0])
    u.assign([-7.0, 0.0, 2.0])
    np.testing.assert_allclose(H @ np.concatenate([a, b]), closed_form(), rtol=1e-12)
    assert closed_form()[0] == 9.5  # 3^2 * 1 + 0.5: the new values, not the old


def test_newton_cg_follows_scipys_own_rosenbrock_solve():
    """Same iterates as scipy with its closed-form rosen_der and rosen_hess_prod."""
    import scipy.optimize

    start = np.array([-1.2, 1.0])
    result = hodiff.newton_cg(rosenbrock, start)
    reference = scipy.optimize.minimize(
        scipy.optimize.rosen,
        start,
        jac=scipy.optimize.rosen_der,
        hessp=scipy.optimize.rosen_hess_prod,
        method="Newton-CG",
    )
    assert result.success and result.nhev == reference.nhev > 0
    np.testing.assert_allclose(result.x, reference.x, rtol=1e-8)
    np.testing.assert_allclose(result.x, np.ones(2), atol=1e-4)
