"""A Keras ``Sequential`` stack of ``Dense`` layers run on parameters with a leading task axis.

:class:`hodiff.meta.MetaLearner` adapts every task of a meta-batch at once when its model is
such a stack: the parameters get a task axis (kernels ``(tasks, in, out)``, biases
``(tasks, out)``), each layer is one batched matmul over the tasks, and the inner step
differentiates the *sum* of the per-task losses, whose gradient with respect to the batched
parameters is every task's own gradient (the tasks do not interact). Other models keep the
task loop.

Example:
  ```python
  import keras, tensorflow as tf
  from hodiff.meta.vectorized import batched_dense_stack

  model = keras.Sequential([keras.Input((1,)), keras.layers.Dense(3, activation="tanh"), keras.layers.Dense(1)])
  f, reason = batched_dense_stack(model, model.trainable_variables)
  params = [tf.stack([tf.convert_to_tensor(v)] * 2) for v in model.trainable_variables]  # two tasks
  x = tf.random.normal((2, 5, 1))
  assert f(params, x).shape == (2, 5, 1) and reason == ""
  ```
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any

import keras
import tensorflow as tf

logger = logging.getLogger(__name__)

__all__ = ["batched_dense_stack", "map_pairs"]

BatchedFunction = Callable[..., tf.Tensor]


def batched_dense_stack(model: Any, variables: Sequence[Any]) -> tuple[BatchedFunction | None, str]:
    """``f(params, x)`` over a leading task axis for a Sequential stack of Dense layers.

    Args:
      model: a Keras model (anything else is reported as not vectorisable).
      variables: the model's trainable variables, in the order the parameter lists use.

    Returns:
      ``(f, "")`` where ``f(params, x)`` takes one tensor per variable with a leading task axis
      and inputs ``x`` of shape ``(tasks, examples, features)``, returning
      ``(tasks, examples, outputs)``; or ``(None, reason)`` naming why the model is not such a
      stack. ``f(offsets, x, shared=params)`` runs each task on ``shared + offsets[task]``
      (``shared`` without a task axis) as one matmul of the shared kernel over all tasks'
      examples plus a batched matmul with the offsets: where the offsets are zeros (the first
      inner step of MAML), XLA drops their product, and only their gradient, each task's own
      gradient, is batched (the shape of JAX's ``vmap`` over tasks with unbatched parameters).
    """
    if not isinstance(model, keras.Sequential):
        return None, f"the model is a {type(model).__name__}, not a keras.Sequential of Dense layers"
    inputs = getattr(model, "inputs", None)
    if not inputs or len(inputs) != 1 or len(inputs[0].shape) != 2:
        return None, "the model does not take a single input of shape (None, features)"
    variables = list(variables)
    plan = []
    used: list[int] = []
    for layer in model.layers:
        if type(layer) is not keras.layers.Dense:
            return None, f"layer {layer.name!r} is a {type(layer).__name__}, not a Dense layer"
        if getattr(layer, "lora_enabled", False) or getattr(layer, "quantization_mode", None):
            return None, f"Dense layer {layer.name!r} uses LoRA or quantisation"
        if layer.compute_dtype != layer.variable_dtype:
            return None, f"Dense layer {layer.name!r} computes in {layer.compute_dtype} (mixed precision)"
        if not layer.trainable:
            return None, f"Dense layer {layer.name!r} is frozen (trainable=False)"
        kernel = _index(variables, layer.kernel)
        bias = _index(variables, layer.bias) if layer.bias is not None else None
        if kernel is None or (layer.bias is not None and bias is None):
            return None, f"the weights of Dense layer {layer.name!r} are not among the meta-learned variables"
        used += [kernel] + ([] if bias is None else [bias])
        plan.append((kernel, bias, layer.activation))
    if sorted(used) != list(range(len(variables))):
        return None, "the model has trainable variables outside its Dense layers"
    dtype = variables[0].dtype

    def function(params: Sequence[tf.Tensor], x: tf.Tensor, shared: Sequence[tf.Tensor] | None = None) -> tf.Tensor:
        h = tf.cast(x, dtype)
        for kernel, bias, activation in plan:
            if shared is None:
                h = tf.matmul(h, params[kernel])
            else:
                h = _shared_matmul(h, shared[kernel], params[kernel])
            if bias is not None:
                h = h + params[bias][:, None, :]
                if shared is not None:
                    h = h + shared[bias]
            if activation is not None:
                h = activation(h)
        return h

    return function, ""


@tf.custom_gradient
def _shared_matmul(h: tf.Tensor, kernel: tf.Tensor, offset: tf.Tensor) -> tuple[tf.Tensor, Callable]:
    """``h @ (kernel + offset)`` per task for a zero ``offset``: the product is one matmul of the
    shared ``kernel`` over every task's examples, and ``offset`` (zero, one per task) only takes
    each task's own gradient ``h[t]^T dy[t]``, as a batched matmul. The gradient is written with
    differentiable ops, so outer tapes differentiate it again (second-order MAML)."""

    def rows(t: tf.Tensor) -> tf.Tensor:
        return tf.reshape(t, [-1, t.shape[-1]])

    def like(flat: tf.Tensor, t: tf.Tensor) -> tf.Tensor:
        lead = t.shape[:-1] if t.shape[:-1].is_fully_defined() else tf.shape(t)[:-1]
        return tf.reshape(flat, tf.concat([lead, tf.shape(flat)[-1:]], 0))

    def gradient(upstream: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor, tf.Tensor]:
        grad_h = like(tf.matmul(rows(upstream), kernel, transpose_b=True), h)
        grad_kernel = tf.matmul(rows(h), rows(upstream), transpose_a=True)
        grad_offset = tf.matmul(h, upstream, transpose_a=True)
        return grad_h, grad_kernel, grad_offset

    return like(tf.matmul(rows(h), kernel), h), gradient


def map_pairs(fn: Callable[[tf.Tensor, tf.Tensor], tf.Tensor], a: tf.Tensor, b: tf.Tensor) -> tf.Tensor:
    """``stack([fn(a[i], b[i]) for i])`` as batched ops: ``fn`` vectorised over the leading axis.

    ``fn`` (e.g. a task's loss) is traced once on one pair and rewritten for the whole axis by
    TensorFlow's ``pfor`` (what ``tf.vectorized_map`` does, JAX's ``vmap``), so 25 tasks cost a
    handful of ops rather than 25 copies. Under XLA ``pfor`` is called without the
    ``tf.function`` that ``tf.vectorized_map`` wraps it in there: across that call boundary XLA
    made the step's inputs and variables compile-time constants and recompiled the step at every
    update (TF 2.21). Where ``fn`` holds an op that ``pfor`` cannot rewrite (or that private
    entry point is missing), and when run eagerly, the pairs are written out one by one, which
    gives the same values.

    Args:
      fn: a function of one pair of slices ``(a[i], b[i])``.
      a: a tensor with a leading axis.
      b: a tensor with the same leading axis.

    Returns:
      The stacked results, leading axis first.

    Example:
      ```python
      import tensorflow as tf
      from hodiff.meta.vectorized import map_pairs

      a, b = tf.random.normal((4, 3)), tf.random.normal((4, 3))
      out = map_pairs(lambda x, y: tf.reduce_mean((x - y) ** 2), a, b)
      tf.debugging.assert_near(out, tf.reduce_mean((a - b) ** 2, axis=1))
      ```
    """
    count = a.shape[0]
    if count is None:
        return tf.vectorized_map(lambda pair: fn(pair[0], pair[1]), (a, b))
    if tf.executing_eagerly():  # eagerly pfor would trace a new tf.function at every call
        return tf.stack([fn(a[i], b[i]) for i in range(count)])
    try:
        if not _under_xla():
            return tf.vectorized_map(lambda pair: fn(pair[0], pair[1]), (a, b), fallback_to_while_loop=False)
        pfor = _pfor_without_function()
        if pfor is not None:
            return pfor(lambda i: fn(tf.gather(a, i), tf.gather(b, i)), count)
    except (ValueError, NotImplementedError, TypeError) as error:  # an op pfor has no rule for
        logger.debug("map_pairs: pfor could not vectorise %s (%s); writing the %d pairs out", fn, error, count)
    return tf.stack([fn(a[i], b[i]) for i in range(count)])


def _pfor_module() -> Any:
    try:
        from tensorflow.python.ops.parallel_for import control_flow_ops
    except ImportError:  # pragma: no cover - a TensorFlow without the module
        return None
    return control_flow_ops


def _under_xla() -> bool:
    module = _pfor_module()
    check = getattr(module, "_is_under_xla_context", None)
    return bool(check()) if check is not None else False


def _pfor_without_function() -> Callable[[Callable[[tf.Tensor], tf.Tensor], int], tf.Tensor] | None:
    """TensorFlow's ``pfor`` without its ``tf.function`` wrapper, or ``None`` where it is missing."""
    implementation = getattr(_pfor_module(), "_pfor_impl", None)
    if implementation is None:
        return None
    return lambda loop_fn, count: implementation(loop_fn, count, fallback_to_while_loop=False)


def _index(variables: list, variable: Any) -> int | None:
    for index, candidate in enumerate(variables):
        if candidate is variable:
            return index
    return None
