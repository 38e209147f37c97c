"""hodiff's gradient of XLA's DynamicUpdateSlice: slices, concatenations and splits differentiate to any order under
XLA, to the closed form and to eager mode, and the op's own gradient is its exact (linear) adjoint."""

import numpy as np
import pytest
import tensorflow as tf
from tensorflow.compiler.tf2xla.ops import gen_xla_ops

from hodiff import _xla_gradients, nth_derivative


def sliced(x):
    """``x^2 sin x + cos x`` through slices of a concatenation and a split."""
    both = tf.concat([x**2, tf.sin(x), tf.cos(x)], axis=1)
    square, rest = tf.split(both, [1, 2], axis=1)
    return square * rest[:, :1] + tf.slice(rest, [0, 1], [-1, 1])


def closed_form(x, order):
    """The ``order``-th derivative of ``x^2 sin x + cos x``."""
    sin, cos = np.sin(x), np.cos(x)
    return {
        1: 2 * x * sin + x**2 * cos - sin,
        2: 2 * sin + 4 * x * cos - x**2 * sin - cos,
        3: 6 * cos - 6 * x * sin - x**2 * cos + sin,
        4: -12 * sin - 8 * x * cos + x**2 * sin + cos,
    }[order]


@pytest.mark.parametrize("dtype, rtol", [(tf.float64, 1e-12), (tf.float32, 2e-5)])
@pytest.mark.parametrize("order", [1, 2, 3, 4])
def test_slices_of_a_concatenation_differentiate_to_fourth_order_under_xla(order, dtype, rtol):
    x = tf.constant([[0.3], [1.1], [-2.0]], dtype)
    derivative = nth_derivative(sliced, order)
    expected = closed_form(x.numpy().astype(np.float64), order)
    for mode in (derivative, tf.function(derivative), tf.function(derivative, jit_compile=True)):
        np.testing.assert_allclose(mode(x).numpy(), expected, rtol=rtol, atol=rtol)


def test_the_gradient_is_the_adjoint_of_the_update_twice_over():
    """``XlaDynamicUpdateSlice(input, update, at)`` is linear: its gradient sends the upstream's slice at ``at`` to
    ``update`` and the rest to ``input``; differentiated again (a weight that depends on the inputs) it is the same."""
    rng = np.random.default_rng(0)
    base, patch, weights = (tf.constant(rng.normal(size=shape)) for shape in ((4, 5), (2, 3), (4, 5)))
    at = tf.constant([1, 2])

    @tf.function(jit_compile=True)
    def gradients(base, patch):
        with tf.GradientTape(persistent=True) as outer:
            outer.watch([base, patch])
            with tf.GradientTape() as inner:
                inner.watch([base, patch])
                updated = gen_xla_ops.xla_dynamic_update_slice(base, patch, at)
                value = tf.reduce_sum(weights * updated**2)
            to_base, to_patch = inner.gradient(value, [base, patch])
            first = tf.reduce_sum(to_base) + tf.reduce_sum(to_patch)
        return to_base, to_patch, outer.gradient(first, base), outer.gradient(first, patch)

    to_base, to_patch, second_base, second_patch = (t.numpy() for t in gradients(base, patch))
    updated = base.numpy().copy()
    updated[1:3, 2:5] = patch.numpy()
    inside = np.zeros((4, 5), bool)
    inside[1:3, 2:5] = True
    full = 2.0 * weights.numpy() * updated
    np.testing.assert_allclose(to_base, np.where(inside, 0.0, full), rtol=1e-14)
    np.testing.assert_allclose(to_patch, full[1:3, 2:5], rtol=1e-14)
    np.testing.assert_allclose(second_base, np.where(inside, 0.0, 2.0 * weights.numpy()), rtol=1e-14)
    np.testing.assert_allclose(second_patch, 2.0 * weights.numpy()[1:3, 2:5], rtol=1e-14)


def test_registering_again_is_a_no_op():
    assert _xla_gradients.register() is False  # importing hodiff registered it once
