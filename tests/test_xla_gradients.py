"""hodiff's gradient of XLA's DynamicUpdateSlice: slices, concatenations and splits differentiate to any order under
XLA, to the closed form and to eager mode, and the op's own gradient is its exact (linear) adjoint."""

import numpy as np
import pytest
import tensorflow as tf
from tensorflow.compiler.tf2xla.ops import gen_xla_ops
from tensorflow.python.framework import ops

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


@pytest.mark.parametrize("index_dtype", [tf.int32, tf.int64])
@pytest.mark.parametrize("at", [(1, 2), (3, 4)], ids=["inside", "clamped"])
@pytest.mark.parametrize("constant_indices", [True, False], ids=["constant", "argument"])
def test_the_gradient_is_the_adjoint_of_the_update_twice_over(index_dtype, at, constant_indices):
    """``XlaDynamicUpdateSlice(input, update, at)`` is linear: its gradient sends the upstream's slice at ``at`` to
    ``update`` and the rest to ``input``; differentiated again (a weight that depends on the inputs) it is the same.
    An ``at`` past the end is clamped so that the update fits, by the op and by its gradient alike."""
    rng = np.random.default_rng(0)
    base, patch, weights = (tf.constant(rng.normal(size=shape)) for shape in ((4, 5), (2, 3), (4, 5)))
    indices = tf.constant(at, index_dtype)

    @tf.function(jit_compile=True)
    def gradients(base, patch, indices):
        indices = tf.constant(at, index_dtype) if constant_indices else indices
        with tf.GradientTape(persistent=True) as outer:
            outer.watch([base, patch])
            with tf.GradientTape() as inner:
                inner.watch([base, patch])
                updated = gen_xla_ops.xla_dynamic_update_slice(base, patch, indices)
                value = tf.reduce_sum(weights * updated**2)
            to_base, to_patch = inner.gradient(value, [base, patch])
            first = tf.reduce_sum(to_base) + tf.reduce_sum(to_patch)
        return updated, to_base, to_patch, outer.gradient(first, base), outer.gradient(first, patch)

    updated, to_base, to_patch, second_base, second_patch = (t.numpy() for t in gradients(base, patch, indices))
    row, column = min(at[0], 4 - 2), min(at[1], 5 - 3)  # where the op writes the update
    window = (slice(row, row + 2), slice(column, column + 3))
    expected = base.numpy().copy()
    expected[window] = patch.numpy()
    np.testing.assert_array_equal(updated, expected)
    inside = np.zeros((4, 5), bool)
    inside[window] = True
    full = 2.0 * weights.numpy() * expected
    np.testing.assert_allclose(to_base, np.where(inside, 0.0, full), rtol=1e-14)
    np.testing.assert_allclose(to_patch, full[window], rtol=1e-14)
    np.testing.assert_allclose(second_base, np.where(inside, 0.0, 2.0 * weights.numpy()), rtol=1e-14)
    np.testing.assert_allclose(second_patch, 2.0 * weights.numpy()[window], rtol=1e-14)


def test_hodiff_registered_its_gradient_once():
    assert ops.gradient_registry.lookup(_xla_gradients.OP_TYPE) is _xla_gradients._dynamic_update_slice_gradient
    assert _xla_gradients.register() is False  # importing hodiff registered it; a second call leaves it
