"""Per-example gradients and their norms, by one vectorised Jacobian of the per-example losses.

The usual recipe for differential privacy (clipping each example's gradient), data valuation and
gradient-noise diagnostics: the Jacobian of the vector of per-example losses in the parameters,
computed by :func:`hodiff.jacobian` (TensorFlow's ``pfor`` vectorises it: one backward pass per
parameter block, not one per example).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import tensorflow as tf

from hodiff import _validate
from hodiff.derivatives import jacobian

__all__ = ["per_example_gradients", "per_example_gradient_norms"]


def per_example_gradients(losses: Callable[[Any], tf.Tensor], params: Any, unconnected: str = "error") -> Any:
    """The gradient of every example's loss in ``params``.

    Args:
      losses: function of ``params`` returning the per-example losses, a vector ``(N,)`` (not
        their mean), e.g. ``lambda w: keras.losses.mean_squared_error(y, functional_call(model, w, x))``.
      params: the parameters; a tensor, Variable or nested structure (e.g.
        ``model.trainable_variables`` with a ``losses`` that calls the model).
      unconnected: ``"error"`` (default) or ``"zero"`` for parameters the losses do not depend on.

    Returns:
      The structure of ``params`` with each leaf shaped ``(N, *leaf.shape)``: row ``i`` is the
      gradient of example ``i``'s loss.

    Example:
      ```python
      import tensorflow as tf
      import hodiff

      x = tf.constant([1.0, 2.0, 3.0])
      losses = lambda w: (w * x - 1.0) ** 2            # d/dw = 2 x (w x - 1)
      g = hodiff.per_example_gradients(losses, tf.constant(1.0))
      assert g.numpy().tolist() == [0.0, 4.0, 12.0]
      ```
    """
    caller = "per_example_gradients"

    def checked_losses(p):
        values = losses(p)
        if values.shape.rank != 1:
            raise ValueError(
                f"{caller}: losses must return one loss per example, a vector (N,); got shape {values.shape}. "
                f"Return the per-example losses, not their mean (e.g. reduce over every axis but the first)."
            )
        return values

    return jacobian(checked_losses, unconnected=unconnected)(_validate.as_differentiable(params, "params", caller))


def per_example_gradient_norms(
    losses: Callable[[Any], tf.Tensor], params: Any, unconnected: str = "error"
) -> tf.Tensor:
    """The Euclidean norm of every example's gradient over all of ``params``.

    Args:
      losses: function of ``params`` returning the per-example losses ``(N,)``; see
        :func:`per_example_gradients`.
      params: the parameters; a tensor, Variable or nested structure.
      unconnected: ``"error"`` (default) or ``"zero"``.

    Returns:
      A vector ``(N,)``: ``sqrt(sum over every parameter of (d loss_i / d p)^2)``.

    Example:
      ```python
      import tensorflow as tf
      import hodiff

      x = tf.constant([1.0, 2.0])
      losses = lambda w: tf.reduce_sum(w * x[:, None], axis=1)  # gradient of example i: x_i * ones(3)
      norms = hodiff.per_example_gradient_norms(losses, tf.zeros(3))
      assert abs(float(norms[1]) - 2.0 * 3.0**0.5) < 1e-6
      ```
    """
    gradients = tf.nest.flatten(per_example_gradients(losses, params, unconnected))
    squares = [tf.reduce_sum(tf.reshape(g, [tf.shape(g)[0], -1]) ** 2, axis=1) for g in gradients]
    return tf.sqrt(tf.add_n(squares))
