"""Univariate Taylor jets: the Taylor coefficients of ``t -> u(x + t v)`` up to any order ``k``.

For a direction ``v`` the function ``g(t) = u(x + t v)`` has the Taylor series
``g(t) = c_0 + c_1 t + ... + c_k t^k + O(t^(k+1))`` with ``c_j = D^j_v u(x) / j!``, where
``D^j_v u = sum u_{i_1...i_j} v_{i_1}...v_{i_j}`` is the ``j``-th directional derivative: a
contraction of the ``j``-th derivative tensor with ``v`` in every slot.

``method="forward"`` pushes the series through a Keras chain in one pass
(:func:`hodiff.jets.propagation.series`; about ``k^2 S / 2`` forward passes for ``S``
directions, no ``d^k`` anywhere); ``method="nested"`` takes ``k`` nested tapes over the scalar
``t`` (the same derivatives, slower; any differentiable ``u``). Differential operators built
from these jets (Laplacian, biharmonic, contractions) are objects in :mod:`hodiff.operators`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import keras
import numpy as np
import tensorflow as tf

from hodiff import _validate
from hodiff.derivatives import elementwise_derivatives
from hodiff.jets import directions as directions_
from hodiff.jets import propagation

__all__ = ["JET_METHODS", "check_order", "taylor_coefficients", "directional_derivative", "weighted_jets"]

JET_METHODS = ("forward", "nested")


def check_order(order: Any, caller: str, name: str = "order") -> int:
    """Returns ``order`` as an int, or raises unless it is an int >= 1."""
    if isinstance(order, bool) or not isinstance(order, (int, np.integer)):
        raise TypeError(
            f"{caller}: {name} must be an int >= 1 (the order of the derivative), got {order!r} of type "
            f"{type(order).__name__}. Pass e.g. {name}=4."
        )
    if order < 1:
        raise ValueError(
            f"{caller}: {name} must be >= 1 (the order of the derivative), got {order}. Order 0 is the value "
            f"itself: call u(x)."
        )
    return int(order)


def _nested(u: Callable, x: tf.Tensor, directions: Any, order: int, caller: str) -> list[tf.Tensor]:
    d = x.shape[1]
    v = directions_.to_dense(directions_.per_point(directions, x, x.dtype, caller), d)  # (N, S, d)
    shape = tf.shape(v)
    points = tf.reshape(tf.broadcast_to(x[:, None, :], shape), [-1, d])
    flat = tf.reshape(v, [-1, d])
    as_column = []

    def along_line(t):
        values, column = _validate.check_per_point_values(u(points + t[:, None] * flat), points, "u", caller)
        as_column.append(column)
        return tf.cast(values, x.dtype)

    derivatives = elementwise_derivatives(along_line, order, unconnected="zero")(tf.zeros(tf.shape(flat)[:1], x.dtype))
    result_shape = tf.concat([shape[:2], tf.constant([1] if as_column[0] else [], tf.int32)], 0)
    return [tf.reshape(derivatives[j] / math.factorial(j), result_shape) for j in range(order + 1)]


def taylor_coefficients(
    u: Any, x: tf.Tensor, directions: Any, order: int, method: str = "forward", caller: str = "taylor_coefficients"
) -> list[tf.Tensor]:
    """The Taylor coefficients ``c_0..c_k`` of ``t -> u(x + t v)`` for every point and direction.

    ``c_j = D^j_v u(x) / j!``, where ``D^j_v u`` is the ``j``-th derivative tensor of ``u``
    contracted with ``v`` in all ``j`` slots.

    Args:
      u: for ``method="forward"``, a ``keras.Sequential`` or functional chain of Dense and
        elementwise Activation layers (nested chains included), see :func:`hodiff.jets.rules.supported_layers`;
        for ``method="nested"``, any scalar field ``(N, d) -> (N,)`` or ``(N, 1)``.
      x: points, shape ``(N, d)``.
      directions: ``(S, d)`` (the same ``S`` directions at every point), ``(N, S, d)`` (``S``
        directions per point) or :class:`~hodiff.jets.SparseDirections`.
      order: the highest order ``k``, an int >= 1.
      method: ``"forward"`` (Taylor mode, one stacked pass) or ``"nested"`` (``k`` nested tapes
        along ``t``, any differentiable ``u``).
      caller: name used in error messages.

    Returns:
      A list of ``k + 1`` tensors in the dtype of ``x``, each of shape ``(N, S)`` followed by
      the trailing shape of ``u(x)`` (``(N, S, 1)`` for a Keras model with one output).

    References:
      Griewank and Walther, "Evaluating Derivatives", 2nd ed., SIAM 2008, chapter 13 (Taylor
      propagation). Bettencourt, Johnson and Duvenaud, "Taylor-mode automatic differentiation
      for higher-order derivatives in JAX", 2019.

    Example:
      ```python
      import keras, tensorflow as tf
      from hodiff.jets import taylor_coefficients

      model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(8, "tanh"), keras.layers.Dense(1)])
      x, v = tf.random.normal((5, 3)), tf.random.normal((2, 3))      # 5 points, 2 directions
      c = taylor_coefficients(model, x, v, order=4)
      assert len(c) == 5 and c[4].shape == (5, 2, 1)
      tf.debugging.assert_near(c[0][:, 0], model(x))                 # c_0 is the value
      ```
    """
    order = check_order(order, caller)
    if method not in JET_METHODS:
        raise ValueError(
            f"{caller}: method={method!r} is not an option; use 'forward' (Taylor mode through a Keras chain of "
            f"Dense/elementwise layers) or 'nested' (nested tapes, any differentiable u)."
        )
    x = _validate.as_differentiable(x, "x", caller)
    _validate.check_field_points(x, caller)
    if method == "forward":
        if not isinstance(u, (keras.Model, keras.layers.Layer)):
            raise ValueError(
                f"{caller}: method='forward' propagates jets through Keras chains of Dense and elementwise "
                f"Activation layers; got {type(u).__name__}. Use method='nested' (nested tapes along the "
                f"direction) for a plain function."
            )
        return propagation.series(u, x, directions, order, caller)
    return _nested(u, x, directions, order, caller)


def directional_derivative(
    u: Any, x: tf.Tensor, directions: Any, order: int, method: str = "forward", caller: str = "directional_derivative"
) -> tf.Tensor:
    """The ``k``-th directional derivative ``D^k_v u(x) = d^k/dt^k u(x + t v) |_{t=0}``.

    Args:
      u: a Keras chain (``method="forward"``) or any scalar field (``method="nested"``).
      x: points, shape ``(N, d)``.
      directions: ``(S, d)``, ``(N, S, d)`` or :class:`~hodiff.jets.SparseDirections`.
      order: ``k``, an int >= 1.
      method: ``"forward"`` or ``"nested"``, as in :func:`taylor_coefficients`.
      caller: name used in error messages.

    Returns:
      ``k! c_k``, shape ``(N, S)`` followed by the trailing shape of ``u(x)``.

    Example:
      ```python
      import tensorflow as tf
      from hodiff.jets import directional_derivative

      u = lambda x: tf.reduce_sum(x**4, axis=1)                    # D^4_v u = 24 sum v_i^4
      v = tf.constant([[1.0, 2.0]])
      fourth = directional_derivative(u, tf.ones((3, 2)), v, order=4, method="nested")
      tf.debugging.assert_near(fourth, tf.fill([3, 1], 24.0 * 17))
      ```
    """
    coefficients = taylor_coefficients(u, x, directions, order, method, caller)
    return coefficients[-1] * math.factorial(len(coefficients) - 1)


def weighted_jets(
    u: Any,
    x: tf.Tensor,
    directions: Any,
    weights: Any,
    order: int,
    method: str = "forward",
    caller: str = "weighted_jets",
) -> tf.Tensor:
    """Weighted sums of ``k``-th directional derivatives, ``sum_s weights[r, s] D^k_{v_s} u(x)``.

    The jet engine under every operator of :mod:`hodiff.operators` evaluated by jets (users build
    a :class:`hodiff.operators.Contraction` instead).

    The forward path never stores the ``S`` top coefficients: Faà di Bruno's formula is linear in
    the highest input coefficient, so coefficient ``k`` is carried as the ``R`` weighted sums
    themselves (a collapsed jet). For ``k = 2`` and ``R = 1`` this is the forward Laplacian's
    saving: ``S + 1`` rows per layer instead of ``2 S``.

    Args:
      u: a Keras chain (``method="forward"``) or any scalar field (``method="nested"``).
      x: points, shape ``(N, d)``.
      directions: ``(S, d)``, ``(N, S, d)`` or :class:`~hodiff.jets.SparseDirections`.
      weights: ``(R, S)`` (the same at every point) or ``(N, R, S)``.
      order: ``k``, an int >= 1.
      method: ``"forward"`` or ``"nested"``.
      caller: name used in error messages.

    Returns:
      Shape ``(N, R)`` followed by the trailing shape of ``u(x)``, in the dtype of ``x``.

    References:
      Dangel, Siebert, Zeinhofer and Walther, "Collapsing Taylor mode automatic
      differentiation", 2025 (arXiv:2505.13644).

    Example:
      ```python
      import keras, tensorflow as tf
      from hodiff.jets.taylor import directional_derivative, weighted_jets

      model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(8, "tanh"), keras.layers.Dense(1)])
      x = tf.random.normal((4, 3))
      laplacian = weighted_jets(model, x, tf.eye(3), tf.ones((1, 3)), order=2)   # (4, 1, 1)
      each = directional_derivative(model, x, tf.eye(3), order=2)                         # (4, 3, 1)
      tf.debugging.assert_near(laplacian[:, 0], tf.reduce_sum(each, axis=1), atol=1e-5)
      ```
    """
    order = check_order(order, caller)
    x = _validate.as_differentiable(x, "x", caller)
    _validate.check_field_points(x, caller)
    mixing = tf.cast(_validate.as_float_tensor(weights, "weights", caller), x.dtype)
    if mixing.shape.rank not in (2, 3):
        raise ValueError(
            f"{caller}: weights must have shape (R, S) or (N, R, S) (R weighted sums of S directions); got shape "
            f"{tuple(mixing.shape)}. For one sum use weights[None, :]."
        )
    if mixing.shape.rank == 2:
        mixing = tf.broadcast_to(mixing[None], tf.concat([tf.shape(x)[:1], tf.shape(mixing)], 0))
    if method == "forward" and isinstance(u, (keras.Model, keras.layers.Layer)):
        return propagation.series(u, x, directions, order, caller, mixing)[-1] * math.factorial(order)
    each = directional_derivative(u, x, directions, order, method, caller)
    return tf.einsum("nrs,ns...->nr...", tf.cast(mixing, each.dtype), each)
