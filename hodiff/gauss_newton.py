"""Generalised Gauss-Newton-vector products: ``G v = J^T H_L J v`` without forming ``G``.

For a model ``f(params)`` (its outputs) and a loss ``L(outputs)``, the generalised Gauss-Newton
matrix is ``G = J^T H_L J`` with ``J = d f / d params`` and ``H_L`` the Hessian of ``L`` in the
outputs. It is the Hessian of ``L(f(params))`` without the terms in the second derivatives of
``f``: positive semi-definite for a convex loss, which makes it the curvature of choice for
natural-gradient, K-FAC-style and Hessian-free (truncated Newton) optimisers.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import tensorflow as tf

from hodiff import _validate
from hodiff.derivatives import hvp, jvp, vjp

__all__ = ["ggn_vector_product"]


def ggn_vector_product(
    f: Callable[[Any], Any],
    loss: Callable[[Any], tf.Tensor],
    params: Any,
    v: Any,
    unconnected: str = "error",
) -> Any:
    """The generalised Gauss-Newton matrix times ``v``: ``J^T H_L J v``.

    Composed from the transforms: ``J v`` by :func:`hodiff.jvp` of ``f``, ``H_L (J v)`` by
    :func:`hodiff.hvp` of ``loss`` at ``f(params)``, and ``J^T (H_L J v)`` by the pullback of
    :func:`hodiff.vjp`.

    Args:
      f: the model as a function of ``params``, returning its outputs (a tensor or a nested
        structure), e.g. ``lambda w: hodiff.functional_call(model, w, x)``, or
        ``lambda w: model(x)`` with ``params = model.trainable_variables``.
      loss: scalar function of the outputs (close over the targets), e.g.
        ``lambda out: tf.reduce_mean((out - y) ** 2)``.
      params: the parameters; a tensor, Variable or nested structure of them.
      v: the direction, with the structure and shapes of ``params``.
      unconnected: ``"error"`` (default) or ``"zero"`` for parameters the outputs do not depend on.

    Returns:
      ``G v`` with the structure of ``params``.

    References:
      Schraudolph, "Fast curvature matrix-vector products for second-order gradient descent",
      Neural Computation 2002. Martens, "New insights and perspectives on the natural gradient
      method", JMLR 2020.

    Example:
      ```python
      import tensorflow as tf
      import hodiff

      A = tf.constant([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
      f = lambda w: tf.linalg.matvec(A, w)             # J = A
      loss = lambda out: 0.5 * tf.reduce_sum(out**2)   # H_L = I, so G = A^T A
      Gv = hodiff.ggn_vector_product(f, loss, tf.constant([1.0, -1.0]), tf.constant([1.0, 0.0]))
      assert Gv.numpy().tolist() == [35.0, 44.0]
      ```
    """
    caller = "ggn_vector_product"
    _validate.check_unconnected(unconnected, caller)
    params = _validate.as_differentiable(params, "params", caller)
    v = _validate.as_differentiable(v, "v", caller)
    _validate.check_same_shape(v, params, "v", "params", caller)
    outputs, jacobian_v = jvp(f, (params,), (v,), unconnected=unconnected)
    curvature_jacobian_v = hvp(loss, outputs, jacobian_v, unconnected=unconnected)
    _, pullback = vjp(f, params, unconnected=unconnected)
    return pullback(curvature_jacobian_v)[0]
