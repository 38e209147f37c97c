"""hodiff.estimators: unbiased, reproducible, and reporting an honest standard error."""

import numpy as np
import pytest
import tensorflow as tf
from conftest import make_mlp, points

import hodiff
from hodiff.checks import reference_hessian


def decaying_quadratic(n=40):
    """f(x) = x^T A x / 2 with a rotated, fast-decaying spectrum: trace known exactly."""
    rng = np.random.default_rng(0)
    q, _ = np.linalg.qr(rng.normal(size=(n, n)))
    eigenvalues = 100.0 * 0.7 ** np.arange(n)
    A = tf.constant(q @ np.diag(eigenvalues) @ q.T)
    return (lambda x: 0.5 * tf.reduce_sum(x * tf.linalg.matvec(A, x))), A.numpy(), n


def test_hutchinson_trace_of_mlp_loss_against_scipy():
    model = make_mlp(3, width=4, depth=1)
    f = lambda p: tf.reduce_sum(tf.tanh(p) ** 3) + tf.reduce_sum(model(p[None]))
    x = tf.constant([0.3, -0.7, 1.1], tf.float64)
    exact = np.trace(reference_hessian(f, [x])[0])
    estimate = hodiff.hutchinson_trace(f, x, num_probes=500, seed=1)
    assert abs(float(estimate.value) - exact) < 5 * float(estimate.stderr)
    assert float(estimate.stderr) < 0.3 * abs(exact) + 0.1


def test_estimators_are_reproducible_in_every_mode(run):
    f, _, n = decaying_quadratic(10)
    x = tf.ones(n, tf.float64)
    eager = hodiff.hutchinson_trace(f, x, num_probes=6, seed=4)
    same = run(lambda x: hodiff.hutchinson_trace(f, x, num_probes=6, seed=4), x)
    np.testing.assert_allclose(same.value, eager.value, rtol=1e-12)
    diagonal = run(lambda x: hodiff.hessian_diagonal(f, x, num_probes=6, seed=4), x)
    np.testing.assert_allclose(diagonal.value, hodiff.hessian_diagonal(f, x, num_probes=6, seed=4).value, rtol=1e-12)
    pp = run(lambda x: hodiff.hutchpp_trace(f, x, num_matvecs=9, seed=4), x)
    np.testing.assert_allclose(pp.value, hodiff.hutchpp_trace(f, x, num_matvecs=9, seed=4).value, rtol=1e-10)


def test_hutchpp_beats_hutchinson_on_a_decaying_spectrum():
    f, A, n = decaying_quadratic()
    x = tf.zeros(n, tf.float64)
    exact = np.trace(A)
    errors_plain, errors_pp = [], []
    for seed in range(10):
        errors_plain.append(abs(float(hodiff.hutchinson_trace(f, x, num_probes=30, seed=seed).value) - exact))
        errors_pp.append(abs(float(hodiff.hutchpp_trace(f, x, num_matvecs=30, seed=seed).value) - exact))
    assert np.mean(errors_pp) < 0.2 * np.mean(errors_plain)


def test_hessian_diagonal_is_unbiased():
    f, A, n = decaying_quadratic(8)
    estimate = hodiff.hessian_diagonal(f, tf.zeros(n, tf.float64), num_probes=1000, seed=0)
    assert np.all(np.abs(estimate.value.numpy() - np.diag(A)) < 5 * estimate.stderr.numpy() + 1e-9)


def test_hessian_diagonal_over_model_weights_is_exact_for_a_diagonal_hessian():
    """sum_l k_l sum(w_l^3) has diag(H) = 6 k_l w_l and no off-diagonal part: exact with any probe count."""
    model = make_mlp(2, width=3, depth=1)
    scales = [1.0, -2.0, 3.0, 0.5]
    f = lambda ws: tf.add_n([k * tf.reduce_sum(w**3) for k, w in zip(scales, ws)])
    estimate = hodiff.hessian_diagonal(f, model.trainable_variables, num_probes=2, seed=3)
    assert len(estimate.value) == len(model.trainable_variables)
    for value, stderr, k, w in zip(estimate.value, estimate.stderr, scales, model.trainable_variables):
        np.testing.assert_allclose(value.numpy(), 6.0 * k * w.numpy(), rtol=1e-12, atol=1e-15)
        np.testing.assert_array_equal(stderr.numpy(), 0.0)


def test_hessian_diagonal_over_model_weights_matches_scipy():
    """Each weight's entry is its diagonal entry of scipy's Hessian over all the weights, within 5 stderr."""
    model = make_mlp(2, width=3, depth=1)
    x = points(5, 2)
    shapes = [tuple(w.shape) for w in model.trainable_variables]
    sizes = [int(np.prod(shape)) for shape in shapes]

    def loss(flat):  # the model's loss as a function of its flattened weights [W1, b1, W2, b2]
        w1, b1, w2, b2 = [tf.reshape(w, shape) for w, shape in zip(tf.split(flat, sizes), shapes)]
        return tf.reduce_mean((tf.tanh(x @ w1 + b1) @ w2 + b2) ** 2)

    flat = tf.concat([tf.reshape(w, [-1]) for w in model.trainable_variables], axis=0)
    np.testing.assert_allclose(float(loss(flat)), float(tf.reduce_mean(model(x) ** 2)), rtol=1e-12)
    reference, _ = reference_hessian(loss, (flat,))
    np.testing.assert_allclose(reference[-1, -1], 2.0, rtol=1e-8)  # the output bias: d^2/db^2 mean((u + b)^2)
    expected = np.split(np.diag(reference), np.cumsum(sizes)[:-1])
    estimate = hodiff.hessian_diagonal(
        lambda w: tf.reduce_mean(model(x) ** 2), model.trainable_variables, num_probes=400, seed=1
    )
    for value, stderr, wanted, shape in zip(estimate.value, estimate.stderr, expected, shapes):
        assert value.shape == shape and np.all(stderr.numpy() > 0)
        error = np.abs(value.numpy() - wanted.reshape(shape))
        assert np.all(error <= 5 * stderr.numpy()), (shape, value.numpy(), wanted)


def test_probe_counts_are_validated():
    f = lambda x: tf.reduce_sum(x**2)
    with pytest.raises(ValueError, match="num_probes must be an int >= 1"):
        hodiff.hutchinson_trace(f, tf.ones(3), num_probes=0)
    with pytest.raises(ValueError, match="multiple of 3"):
        hodiff.hutchpp_trace(f, tf.ones(3), num_matvecs=4)
