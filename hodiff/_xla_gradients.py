"""The gradient TensorFlow lacks for XLA's ``XlaDynamicUpdateSlice``, so that slices and concatenations differentiate
to any order under XLA.

Inside ``tf.function(jit_compile=True)`` TensorFlow differentiates ``tf.slice`` (and so ``tf.concat``, whose gradient
is ``tf.slice`` of the upstream gradient) into ``XlaDynamicUpdateSlice``, the upstream gradient written into zeros, and
registers no gradient for that op: under XLA the second derivative of a function with a ``tf.slice``, and the third of
one with a concatenation, failed with ``LookupError: gradient registry has no entry for: XlaDynamicUpdateSlice``
(eager and graph mode take another path). The op (``input`` with ``update`` written at ``indices``, clamped so that
``update`` fits) is linear in ``input`` and ``update``: its gradient writes zeros at ``indices`` into the upstream
gradient (for ``input``) and takes the upstream gradient's slice there (for ``update``), and that slice differentiates
into the op again, so every order is covered. Importing :mod:`hodiff` registers it, unless TensorFlow has one.

References:
  TensorFlow's ``_SliceGrad`` (``tensorflow/python/ops/array_grad.py``), which emits the op under XLA.

Example:
  ```python
  import numpy as np
  import tensorflow as tf
  from hodiff import nth_derivative

  def f(x):  # x^2 sin x, through slices of a concatenation
      both = tf.concat([x**2, tf.sin(x)], axis=1)
      return both[:, :1] * both[:, 1:]

  x = tf.constant([[0.5], [1.0]], tf.float64)
  third = tf.function(nth_derivative(f, 3), jit_compile=True)(x).numpy()
  s, c, v = np.sin(x.numpy()), np.cos(x.numpy()), x.numpy()
  np.testing.assert_allclose(third, 6 * c - 6 * v * s - v**2 * c, rtol=1e-12)
  ```
"""

from __future__ import annotations

import tensorflow as tf
from tensorflow.compiler.tf2xla.ops import gen_xla_ops
from tensorflow.python.framework import ops

OP_TYPE = "XlaDynamicUpdateSlice"


def _dynamic_update_slice_gradient(op: tf.Operation, upstream: tf.Tensor) -> tuple:
    """Gradients of ``XlaDynamicUpdateSlice(input, update, indices)`` with respect to its three inputs."""
    update, indices = op.inputs[1], op.inputs[2]
    to_input = gen_xla_ops.xla_dynamic_update_slice(upstream, tf.zeros_like(update), indices)
    size = tf.shape(update, out_type=indices.dtype)
    start = tf.clip_by_value(indices, 0, tf.shape(upstream, out_type=indices.dtype) - size)  # as the op clamps
    to_update = tf.slice(upstream, start, size)
    return to_input, to_update, None


def register() -> bool:
    """Registers the gradient of ``XlaDynamicUpdateSlice`` unless TensorFlow has one; True when this call did."""
    try:
        ops.gradient_registry.lookup(OP_TYPE)
    except LookupError:
        ops.RegisterGradient(OP_TYPE)(_dynamic_update_slice_gradient)
        return True
    return False
