"""Stable custom gradients: values, first and second derivatives against scipy, huge logits."""

import numpy as np
import pytest
import tensorflow as tf

import hodiff
from hodiff.checks import assert_close, check_grads
from hodiff.training import stable

LOGITS = np.array([0.3, -1.2, 2.0, 0.7])
LABELS = np.array([[0.2, 0.1, 0.6, 0.1], [0.0, 1.0, 0.0, 0.0]])


@pytest.mark.parametrize(
    "f",
    [
        lambda z: tf.reduce_sum(stable.stable_softmax(z) * tf.range(1.0, 5.0, dtype=z.dtype) ** 2),
        lambda z: tf.reduce_sum(stable.stable_log_softmax(z) * tf.constant([0.5, -1.0, 2.0, 0.25], z.dtype)),
        lambda z: stable.stable_softmax_cross_entropy(
            tf.constant(LABELS, z.dtype), tf.reshape(tf.concat([z, z[::-1]], 0), (2, 4))
        ),
        lambda z: stable.safe_norm(z) ** 3 + stable.safe_norm(z),
        lambda z: tf.reduce_sum(stable.safe_sqrt(z**2 + 1.0)),
    ],
    ids=["softmax", "log_softmax", "cross_entropy", "safe_norm", "safe_sqrt"],
)
def test_first_and_second_derivatives_match_scipy(f, dtype):
    check_grads(f, (tf.constant(LOGITS, dtype),), order=2)


def test_cross_entropy_gradient_in_labels_matches_scipy():
    f = lambda labels: stable.stable_softmax_cross_entropy(
        labels, tf.constant([[1.0, 2.0, -1.0], [0.5, 0.0, 3.0]], labels.dtype)
    )
    check_grads(f, (tf.constant([[0.2, 0.5, 0.3], [1.0, 0.0, 0.0]], tf.float64),), order=1)


def naive_softmax(z):
    return tf.exp(z) / tf.reduce_sum(tf.exp(z))


@pytest.mark.parametrize(
    "stable_fn, naive_fn",
    [
        (stable.stable_softmax, naive_softmax),
        (stable.stable_log_softmax, lambda z: tf.math.log(naive_softmax(z))),
    ],
)
def test_huge_float32_logits_stay_finite_where_the_naive_formula_fails(stable_fn, naive_fn, run):
    logits = tf.constant([1e4, -1e4, 5e3, 0.0], tf.float32)
    weights = tf.constant([1.0, 2.0, 3.0, 4.0])

    def value_grad_hessian(fn):
        return lambda z: (
            fn(z),
            hodiff.grad(lambda z: tf.reduce_sum(fn(z) * weights))(z),
            hodiff.hessian(lambda z: tf.reduce_sum(fn(z) * weights))(z),
        )

    naive = run(value_grad_hessian(naive_fn), logits)
    assert not all(np.isfinite(part).all() for part in naive), "the naive formula should overflow"
    value, gradient, hessian = run(value_grad_hessian(stable_fn), logits)
    assert np.isfinite(value).all() and np.isfinite(gradient).all() and np.isfinite(hessian).all()
    # Float64 has the same overflow at 1e4; the shifted closed form is the reference.
    z = logits.numpy().astype(np.float64)
    log_p = z - z.max() - np.log(np.exp(z - z.max()).sum())
    expected = np.exp(log_p) if stable_fn is stable.stable_softmax else log_p
    assert_close(value, expected, rtol=1e-6, atol=1e-6, what="value")


def test_cross_entropy_with_huge_logits(run):
    labels = tf.constant([[0.0, 1.0], [0.5, 0.5]])
    logits = tf.constant([[1e4, -1e4], [3e4, 3e4]])
    naive = run(
        lambda z: hodiff.value_and_grad(
            lambda z: -tf.reduce_mean(tf.reduce_sum(labels * tf.math.log(naive_softmax(z)), -1))
        )(z),
        logits,
    )
    assert not np.isfinite(naive[1]).all()
    loss, gradient = run(hodiff.value_and_grad(lambda z: stable.stable_softmax_cross_entropy(labels, z)), logits)
    assert_close(loss, (2e4 + np.log(2.0)) / 2, rtol=1e-6)
    assert_close(gradient, [[0.5, -0.5], [0.0, 0.0]], rtol=1e-6, atol=1e-6)


def test_second_derivative_through_custom_gradient_is_the_true_one(run):
    """The classic mistake: a custom gradient that reuses forward intermediates has a wrong Hessian."""
    z = tf.constant([0.3, -1.2, 2.0], tf.float64)
    p = np.exp(z.numpy()) / np.exp(z.numpy()).sum()
    f = lambda z: stable.stable_log_softmax(z)[0]
    expected = -(np.diag(p) - np.outer(p, p))  # Hessian of log p_0 = z_0 - logsumexp(z)
    assert_close(run(hodiff.hessian(f), z), expected, rtol=1e-12, atol=1e-14)


def test_clip_gradient_by_norm(run):
    x = tf.constant([1.0, 2.0, 2.0], tf.float64)
    f = lambda x: tf.reduce_sum(tf.constant([3.0, 4.0, 0.0], tf.float64) * stable.clip_gradient_by_norm(x**2, 1.0))
    # forward unchanged
    assert_close(run(f, x), 3.0 * 1 + 4.0 * 4, rtol=1e-15)
    # gradient of x**2 is 2x * upstream; upstream [3, 4, 0] has norm 5 -> clipped to [0.6, 0.8, 0]
    assert_close(run(hodiff.grad(f), x), [1.2, 3.2, 0.0], rtol=1e-12)
    # second derivative of the surrogate: d/dx (2x * clipped) = diag(2 * clipped)
    assert_close(run(hodiff.hessian(f), x), np.diag([1.2, 1.6, 0.0]), rtol=1e-12, atol=1e-15)
    # below the bound nothing changes
    small = lambda x: tf.reduce_sum(0.1 * stable.clip_gradient_by_norm(x, 1.0))
    assert_close(run(hodiff.grad(small), x), [0.1, 0.1, 0.1], rtol=1e-12)


def test_clipped_upstream_is_differentiated_as_a_function_of_the_parameters(run):
    """Outer derivative of the clipped gradient: d/dw of clip(w * x) matches scipy."""
    x = tf.constant([1.0, 2.0, 2.0], tf.float64)

    def clipped_gradient_sum(w):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = tf.reduce_sum(w * stable.clip_gradient_by_norm(x, 1.0) ** 2 / 2)
        return tf.reduce_sum(tape.gradient(y, x) * tf.constant([1.0, -1.0, 0.5], tf.float64))

    check_grads(clipped_gradient_sum, (tf.constant(2.0, tf.float64),), order=1)


def test_scale_gradient_and_reversal(run):
    f = lambda x: scale_sq(x, 0.5)
    scale_sq = lambda x, s: tf.reduce_sum(stable.scale_gradient(x, s) ** 3)
    x = tf.constant([1.0, -2.0], tf.float64)
    assert_close(run(f, x), -7.0, rtol=1e-15)
    assert_close(run(hodiff.grad(f), x), 0.5 * 3 * x.numpy() ** 2, rtol=1e-12)
    assert_close(run(hodiff.grad(lambda x: scale_sq(x, -1.0)), x), -3 * x.numpy() ** 2, rtol=1e-12)
    assert_close(run(hodiff.grad(lambda x: scale_sq(x, 0.0)), x), [0.0, 0.0], rtol=0, atol=0)


def test_straight_through_estimators(run):
    x = tf.constant([-1.7, -0.4, 0.6, 2.5], tf.float64)
    f = lambda x: tf.reduce_sum(tf.constant([1.0, 2.0, 3.0, 4.0], tf.float64) * stable.straight_through_round(x))
    assert_close(run(f, x), -2.0 + 0.0 + 3.0 + 8.0, rtol=1e-15)
    assert_close(run(hodiff.grad(f), x), [1.0, 2.0, 3.0, 4.0], rtol=0)
    assert_close(run(hodiff.hessian(f, unconnected="zero"), x), np.zeros((4, 4)), rtol=0, atol=0)
    g = lambda x: tf.reduce_sum(stable.straight_through_sign(x))
    assert_close(run(g, x), 0.0, rtol=0, atol=0)
    assert_close(run(hodiff.grad(g), x), [0.0, 1.0, 1.0, 0.0], rtol=0)


@pytest.mark.parametrize("fn", [stable.safe_norm, lambda x: tf.reduce_sum(stable.safe_sqrt(x))])
def test_safe_ops_have_finite_derivatives_at_zero(fn, run):
    zero = tf.zeros(3, tf.float64)
    assert run(fn, zero).numpy() == 0.0
    assert_close(run(hodiff.grad(fn), zero), np.zeros(3), rtol=0, atol=0)
    assert_close(run(hodiff.hessian(fn), zero), np.zeros((3, 3)), rtol=0, atol=0)
    assert np.isnan(run(hodiff.grad(tf.norm), zero)).any(), "tf.norm's gradient at 0 is NaN"


def test_bad_input():
    with pytest.raises(TypeError, match="`logits` has dtype int32"):
        stable.stable_softmax(tf.constant([1, 2]))
    with pytest.raises(ValueError, match="max_norm must be > 0"):
        stable.clip_gradient_by_norm(tf.ones(2), -1.0)
    with pytest.raises(ValueError, match=r"both have shape \(batch, classes\).*tf.one_hot"):
        stable.stable_softmax_cross_entropy(tf.ones(3), tf.ones((1, 3)))
