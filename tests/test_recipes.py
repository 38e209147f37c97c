"""functional_call, ggn_vector_product and per-example gradients against independent references:
the explicit Gauss-Newton matrix from scipy's Jacobian and the closed-form loss Hessian, and a
loop of single-example gradients; in eager, graph and XLA."""

import keras
import numpy as np
import pytest
import tensorflow as tf
from conftest import make_mlp, points

import hodiff
from hodiff.checks import assert_close, reference_jacobian


def _flat_model(model):
    """(f(flat_weights, x), flat initial weights): the model as a function of one weight vector."""
    shapes = [tuple(v.shape) for v in model.trainable_variables]
    sizes = [int(np.prod(s)) for s in shapes]

    def call(flat, x):
        pieces = tf.split(flat, sizes)
        return hodiff.functional_call(model, [tf.reshape(p, s) for p, s in zip(pieces, shapes)], x)

    flat = np.concatenate([v.numpy().ravel() for v in model.trainable_variables])
    return call, tf.constant(flat, tf.float64)


def test_functional_call_uses_its_weights_and_leaves_the_model_alone(run):
    model = make_mlp(2, 1, width=4, depth=1)
    x = points(5, 2)
    before = [v.numpy().copy() for v in model.trainable_variables]
    doubled = [2.0 * v.value for v in model.trainable_variables]
    kernel0, bias0, kernel1, bias1 = doubled
    expected = (tf.tanh(x @ kernel0 + bias0) @ kernel1 + bias1).numpy()
    assert_close(run(lambda: hodiff.functional_call(model, doubled, x)), expected, rtol=1e-12)
    by_path = {v.path: w for v, w in zip(model.trainable_variables, doubled)}
    assert_close(run(lambda: hodiff.functional_call(model, by_path, x)), expected, rtol=1e-12)
    for variable, value in zip(model.trainable_variables, before):
        np.testing.assert_array_equal(variable.numpy(), value)


def test_functional_call_mapping_may_leave_variables_out():
    model = make_mlp(2, 1, width=4, depth=1)
    x = points(3, 2)
    last_bias = model.trainable_variables[-1]
    shifted = hodiff.functional_call(model, {last_bias.path: last_bias.value + 1.0}, x)
    assert_close(shifted, model(x).numpy() + 1.0, rtol=1e-12)


def test_grad_through_functional_call_matches_scipy(run):
    model = make_mlp(2, 1, width=3, depth=1)
    call, flat = _flat_model(model)
    x = points(4, 2)
    loss = lambda w: tf.reduce_sum(call(w, x) ** 2)
    expected, error = reference_jacobian(loss, [flat])
    assert_close(run(hodiff.grad(loss), flat), expected, rtol=1e-7, reference_error=error)


@pytest.mark.parametrize(
    "weights, match",
    [
        ([tf.zeros(1)], "got 1 weights but the model has 4 trainable variables"),
        ({"nope/kernel": tf.zeros(1)}, "not trainable variables of the model"),
        (tf.zeros(3), "must be a list"),
    ],
)
def test_functional_call_bad_weights(weights, match):
    model = make_mlp(2, 1, width=4, depth=1)
    with pytest.raises((ValueError, KeyError, TypeError), match=match):
        hodiff.functional_call(model, weights, points(2, 2))


def test_functional_call_wrong_shape_names_the_variable():
    model = make_mlp(2, 1, width=4, depth=1)
    weights = [v.value for v in model.trainable_variables]
    weights[0] = tf.zeros((3, 4), tf.float64)
    with pytest.raises(ValueError, match=r"has shape \(3, 4\), but the variable has shape \(2, 4\)"):
        hodiff.functional_call(model, weights, points(2, 2))


def _softmax_cross_entropy_hessian(logits):
    """Closed form: the Hessian of mean_i CE(y_i, softmax(z_i)) in z is blockdiag(diag(p_i) - p_i p_i^T) / N."""
    p = tf.nn.softmax(logits).numpy()
    n, k = p.shape
    H = np.zeros((n, k, n, k))
    for i in range(n):
        H[i, :, i, :] = (np.diag(p[i]) - np.outer(p[i], p[i])) / n
    return H


@pytest.mark.parametrize("loss_kind", ["squared", "cross_entropy"])
def test_ggn_vector_product_matches_the_explicit_gauss_newton_matrix(run, loss_kind):
    model = make_mlp(2, 3, width=4, depth=1, seed=1)
    call, flat = _flat_model(model)
    x = points(5, 2, seed=2)
    labels = tf.one_hot([0, 2, 1, 1, 0], 3, dtype=tf.float64)
    outputs = call(flat, x)
    if loss_kind == "squared":
        loss = lambda out: tf.reduce_mean((out - labels) ** 2)
        n_out = int(np.prod(outputs.shape))
        H = np.eye(n_out).reshape(outputs.shape + outputs.shape) * 2.0 / n_out
    else:
        loss = lambda out: tf.reduce_mean(tf.nn.softmax_cross_entropy_with_logits(labels, out))
        H = _softmax_cross_entropy_hessian(outputs)
    J, _ = reference_jacobian(lambda w: call(w, x), [flat])  # scipy finite differences: (5, 3, P)
    P = flat.shape[0]
    J2 = J.reshape(-1, P)
    G = J2.T @ H.reshape(J2.shape[0], J2.shape[0]) @ J2
    v = tf.constant(np.random.default_rng(0).normal(size=P))
    Gv = run(lambda w, d: hodiff.ggn_vector_product(lambda p: call(p, x), loss, w, d), flat, v)
    assert_close(Gv, G @ v.numpy(), rtol=1e-7, what="G v")


def test_ggn_vector_product_with_model_variables_equals_functional_form():
    model = make_mlp(2, 1, width=4, depth=1)
    x, y = points(6, 2), points(6, 1, seed=3)
    loss = lambda out: tf.reduce_mean((out - y) ** 2)
    v = [tf.ones_like(w) for w in model.trainable_variables]
    closure = hodiff.ggn_vector_product(lambda w: model(x), loss, model.trainable_variables, v)
    functional = hodiff.ggn_vector_product(
        lambda w: hodiff.functional_call(model, w, x), loss, [w.value for w in model.trainable_variables], v
    )
    for a, b in zip(closure, functional):
        assert_close(a, b, rtol=1e-12)


def test_ggn_vector_product_is_the_hessian_for_a_linear_model(run):
    # f linear in the weights: the Gauss-Newton matrix equals the full Hessian.
    A = tf.constant(np.random.default_rng(1).normal(size=(4, 3)))
    loss = lambda out: tf.reduce_sum(tf.exp(out))
    w, v = tf.constant([0.1, -0.2, 0.3], tf.float64), tf.constant([1.0, 2.0, -1.0], tf.float64)
    expected = hodiff.hvp(lambda p: loss(tf.linalg.matvec(A, p)), w, v)
    actual = run(lambda p, d: hodiff.ggn_vector_product(lambda q: tf.linalg.matvec(A, q), loss, p, d), w, v)
    assert_close(actual, expected, rtol=1e-12)


def test_ggn_vector_product_bad_direction():
    with pytest.raises(ValueError, match="v"):
        hodiff.ggn_vector_product(lambda w: w, lambda o: tf.reduce_sum(o**2), tf.zeros(3), tf.zeros(2))


def test_per_example_gradients_match_single_example_loop(run):
    model = make_mlp(3, 1, width=5, depth=1)
    x, y = points(4, 3), points(4, 1, seed=1)
    losses = lambda w: tf.reduce_sum((hodiff.functional_call(model, w, x) - y) ** 2, axis=1)
    weights = [v.value for v in model.trainable_variables]
    per_example = run(lambda *w: hodiff.per_example_gradients(losses, list(w)), *weights)
    norms = run(lambda *w: hodiff.per_example_gradient_norms(losses, list(w)), *weights)
    for i in range(4):
        single = hodiff.grad(lambda w, i=i: losses(w)[i])(weights)
        for batch_gradient, gradient in zip(per_example, single):
            assert_close(batch_gradient[i], gradient, rtol=1e-12)
        expected_norm = np.sqrt(sum(float(tf.reduce_sum(g**2)) for g in single))
        assert_close(norms[i], expected_norm, rtol=1e-12)


def test_per_example_gradients_with_model_variables():
    model = make_mlp(2, 1, width=3, depth=1)
    x = points(3, 2)
    losses = lambda w: model(x)[:, 0]
    rows = hodiff.per_example_gradients(losses, model.trainable_variables)
    bias_rows = rows[-1].numpy()  # d u_i / d (last bias) = 1 for every example
    np.testing.assert_allclose(bias_rows, np.ones((3, 1)))


def test_per_example_gradients_refuse_a_mean():
    with pytest.raises(ValueError, match="one loss per example"):
        hodiff.per_example_gradients(lambda w: tf.reduce_mean(w**2), tf.ones(3))


def test_functional_call_rejects_unbuilt_model():
    model = keras.Sequential([keras.layers.Dense(2)])
    with pytest.raises(ValueError, match="no weights yet"):
        hodiff.functional_call(model, [], tf.zeros((1, 2)))
