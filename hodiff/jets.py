"""Univariate Taylor-mode jets: the Taylor coefficients of ``t -> u(x + t v)`` up to any order ``k``.

For a direction ``v`` the function ``g(t) = u(x + t v)`` has the Taylor series
``g(t) = c_0 + c_1 t + ... + c_k t^k + O(t^(k+1))`` with ``c_j = D^j_v u(x) / j!``, where
``D^j_v u = sum u_{i_1...i_j} v_{i_1}...v_{i_j}`` is the ``j``-th directional derivative: a
contraction of the ``j``-th derivative tensor with ``v`` in every slot. The series is pushed
through a Keras chain in one forward pass:

- a Dense layer ``h W + b`` is linear: every coefficient is multiplied by ``W``, the bias shifts
  ``c_0`` only;
- an elementwise activation ``s`` composes series by Faà di Bruno's formula,
  ``[t^n] s(h(t)) = sum_{m=1}^{n} s^(m)(h_0) / m! * [t^n] (h(t) - h_0)^m``, with the derivatives
  ``s^(m)`` in closed form for tanh, sigmoid, sin, cos and exp, and by nested tapes
  (:func:`~hodiff.elementwise_derivatives`) for the other activations.

All ``S`` directions travel together: the value is computed once per point, the ``k``
coefficients of every direction as one stacked tensor ``(k, N, S, width)``, so a Dense layer is
one matmul for all of them. The cost is about ``k^2 S / 2`` forward passes for orders up to
``k`` (``k^3 S / 6`` elementwise products in the activations), with no ``d^k`` anywhere.

Anything that is not a chain of Dense / elementwise layers goes through ``method="nested"``:
``k`` nested tapes over the scalar ``t`` (the same derivatives, slower; any differentiable ``u``).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, NamedTuple

import keras
import numpy as np
import tensorflow as tf
from numpy.polynomial import polynomial

from hodiff import _validate, taylor
from hodiff.derivatives import elementwise_derivatives

__all__ = [
    "JET_METHODS",
    "SparseDirections",
    "taylor_coefficients",
    "directional_derivative",
    "contracted_derivative",
    "forward_biharmonic",
    "check_order",
]

JET_METHODS = ("forward", "nested")


class SparseDirections(NamedTuple):
    """Directions with few nonzero entries: ``v[indices[..., j]] = values[..., j]``.

    ``indices`` (ints) and ``values`` (floats) have the same shape ``(S, m)`` or ``(N, S, m)``;
    an index may repeat (the values add). A basis vector ``e_i`` is ``indices=[[i]], values=[[1.0]]``.
    The forward path then starts with a gather of ``m`` rows of the first kernel instead of a
    ``d``-wide matmul, which is what makes coordinate sampling cheap in thousands of dimensions.
    """

    indices: Any
    values: Any


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


# ---------------------------------------------------------------------------------------------
# Derivatives of order 0..k of the activations.


def _polynomial_rule(function: Callable, step: np.ndarray) -> Callable[[int], Callable]:
    """Derivatives of ``y = function(h)`` when ``dy/dh = step(y)`` is a polynomial in ``y``."""

    def rule(order: int) -> Callable:
        polys = [np.array([0.0, 1.0])]  # y itself, ascending coefficients in y
        for _ in range(order):
            polys.append(polynomial.polymul(polynomial.polyder(polys[-1]), step))

        def derivatives(h):
            y = function(h)
            out = []
            for coefficients in polys:
                value = tf.zeros_like(y) + float(coefficients[-1])
                for c in coefficients[-2::-1]:  # Horner
                    value = value * y + float(c)
                out.append(value)
            out[0] = y
            return out

        return derivatives

    return rule


def _cyclic_rule(functions: list[tuple[Callable, float]]) -> Callable[[int], Callable]:
    """Derivatives cycling through ``sign * function(h)`` (sin, cos, exp)."""

    def rule(order: int) -> Callable:
        def derivatives(h):
            values = [f(h) for f, _ in functions]
            return [functions[m % len(functions)][1] * values[m % len(functions)] for m in range(order + 1)]

        return derivatives

    return rule


_TANH = _polynomial_rule(tf.tanh, np.array([1.0, 0.0, -1.0]))  # tanh' = 1 - tanh^2
_SIGMOID = _polynomial_rule(tf.sigmoid, np.array([0.0, 1.0, -1.0]))  # s' = s - s^2
_SIN = _cyclic_rule([(tf.sin, 1.0), (tf.cos, 1.0), (tf.sin, -1.0), (tf.cos, -1.0)])
_COS = _cyclic_rule([(tf.cos, 1.0), (tf.sin, -1.0), (tf.cos, -1.0), (tf.sin, 1.0)])
_EXP = _cyclic_rule([(tf.exp, 1.0)])

_CLOSED_FORMS: list[tuple[Callable, Callable[[int], Callable]]] = [
    (keras.activations.tanh, _TANH),
    (tf.tanh, _TANH),
    (tf.math.tanh, _TANH),
    (keras.activations.sigmoid, _SIGMOID),
    (tf.sigmoid, _SIGMOID),
    (tf.math.sigmoid, _SIGMOID),
    (tf.sin, _SIN),
    (tf.math.sin, _SIN),
    (tf.cos, _COS),
    (tf.math.cos, _COS),
    (keras.activations.exponential, _EXP),
    (tf.exp, _EXP),
    (tf.math.exp, _EXP),
]


def _derivatives_rule(activation: Callable, order: int) -> Callable:
    """A function of ``h`` returning ``[s(h), s'(h), ..., s^(order)(h)]``."""
    for known, rule in _CLOSED_FORMS:
        if activation is known:
            return rule(order)
    return elementwise_derivatives(activation, order, unconnected="zero")


def _nonlinear_terms(h: list[tf.Tensor], scaled: list[tf.Tensor], order: int) -> dict[int, tf.Tensor]:
    """``sum_{m=2}^{n} s^(m)(h_0) / m! [t^n] (h(t) - h_0)^m`` for ``n = 2..order``.

    Uses the input coefficients ``h_1..h_{order-1}`` only (``h[j - 1]`` is coefficient ``j``): the
    top coefficient of ``s(h(t))`` is ``s'(h_0) h_order`` plus these terms, linear in ``h_order``.
    """
    power = {n: h[n - 1] for n in range(1, order)}  # [t^n] (h - h_0)^(m - 1), for n >= m - 1
    out: dict[int, tf.Tensor] = {}
    for m in range(2, order + 1):
        power = {n: tf.add_n([h[j - 1] * power[n - j] for j in range(1, n - m + 2)]) for n in range(m, order + 1)}
        for n in range(m, order + 1):
            out[n] = scaled[m] * power[n] if n not in out else out[n] + scaled[m] * power[n]
    return out


def _compose(
    derivatives: list[tf.Tensor], series: tf.Tensor, order: int, top: tf.Tensor | None = None, mixing: Any = None
) -> tuple[tf.Tensor, tf.Tensor | None]:
    """Faà di Bruno: the coefficients of ``s(h(t))`` from those of ``h`` and ``s^(m)(h_0)``.

    Without ``top``: ``series`` is ``(k, N, S, w)`` (coefficient ``j`` at index ``j - 1``). With
    ``top``: ``series`` holds coefficients ``1..k-1`` and ``top`` ``(N, R, w)`` the collapsed
    coefficient ``k``, ``sum_s mixing[n, r, s] c_k^(s)``. Derivatives are ``(N, w)``.
    """
    lower = order if top is None else order - 1
    h = [series[j] for j in range(lower)]
    scaled = [derivatives[m][:, None, :] / math.factorial(m) for m in range(order + 1)]
    nonlinear = _nonlinear_terms(h, scaled, order)
    out = [scaled[1] * h[n - 1] + nonlinear[n] if n > 1 else scaled[1] * h[0] for n in range(1, lower + 1)]
    if top is not None:
        top = scaled[1] * top + tf.einsum("nrs,nsw->nrw", mixing, nonlinear[order])
    return tf.stack(out), top


# ---------------------------------------------------------------------------------------------
# Directions.


def _directions(directions: Any, x: tf.Tensor, dtype: tf.DType, caller: str) -> tf.Tensor | SparseDirections:
    """Directions broadcast to one set per point: dense ``(N, S, d)`` or sparse ``(N, S, m)``."""
    d = x.shape[1]
    num_points = tf.shape(x)[0]
    if isinstance(directions, SparseDirections):
        indices = tf.convert_to_tensor(directions.indices)
        if not indices.dtype.is_integer:
            raise TypeError(f"{caller}: SparseDirections.indices must be ints (coordinates), got {indices.dtype.name}.")
        values = _validate.as_float_tensor(directions.values, "directions.values", caller)
        if indices.shape.rank not in (2, 3) or indices.shape != values.shape:
            raise ValueError(
                f"{caller}: SparseDirections needs indices and values of one shape, (S, m) or (N, S, m); got "
                f"{tuple(indices.shape)} and {tuple(values.shape)}."
            )
        if indices.shape.rank == 2:
            shape = tf.concat([[num_points], tf.shape(indices)], 0)
            indices, values = tf.broadcast_to(indices[None], shape), tf.broadcast_to(values[None], shape)
        return SparseDirections(tf.cast(indices, tf.int32), tf.cast(values, dtype))
    v = _validate.as_float_tensor(directions, "directions", caller)
    if v.shape.rank not in (2, 3) or v.shape[-1] != d:
        raise ValueError(
            f"{caller}: directions must have shape (S, d) (the same S directions at every point) or (N, S, d) "
            f"(S directions per point) with d={d} like x; got shape {tuple(v.shape)}. For one direction use "
            f"v[None, :]."
        )
    v = tf.cast(v, dtype)
    if v.shape.rank == 2:
        v = tf.broadcast_to(v[None], tf.concat([[num_points], tf.shape(v)], 0))
    return v


def _dense(directions: tf.Tensor | SparseDirections, d: int) -> tf.Tensor:
    if isinstance(directions, SparseDirections):
        one_hot = tf.one_hot(directions.indices, d, dtype=directions.values.dtype)  # (N, S, m, d)
        return tf.reduce_sum(directions.values[..., None] * one_hot, axis=-2)
    return directions


def _first_layer(directions: tf.Tensor | SparseDirections, kernel: tf.Tensor) -> tf.Tensor:
    """``v W`` for every direction, ``(N, S, width)``; a gather of kernel rows for sparse directions."""
    if isinstance(directions, SparseDirections):
        rows = tf.gather(kernel, directions.indices)  # (N, S, m, width)
        return tf.reduce_sum(directions.values[..., None] * rows, axis=-2)
    return tf.einsum("nsd,dw->nsw", directions, kernel)


# ---------------------------------------------------------------------------------------------
# The two paths.


def _steps(model: Any, x: tf.Tensor, order: int, caller: str) -> tuple[list[tuple[str, Any]], tf.DType]:
    """The propagation steps of a Keras chain (activations with derivatives up to ``order``) and the
    dtype to propagate in: the wider of ``x``'s and the model's compute dtype."""
    steps = taylor.supported_layers(model, caller, activation_rule=lambda s: _derivatives_rule(s, order))
    dense_layers = [layer for kind, layer in steps if kind == "dense"]
    if not dense_layers:
        raise ValueError(f"{caller}: the model has no Dense layer; nothing to propagate.")
    d = x.shape[1]
    if dense_layers[0].kernel.shape[0] != d:
        raise ValueError(
            f"{caller}: x has d={d} columns but the model's first Dense layer expects "
            f"{dense_layers[0].kernel.shape[0]} inputs."
        )
    return steps, max(x.dtype, tf.as_dtype(dense_layers[0].compute_dtype), key=lambda t: t.size)


def _forward(model: Any, x: tf.Tensor, directions: Any, order: int, caller: str, mixing: Any = None) -> list[tf.Tensor]:
    """Coefficients ``0..k``; with ``mixing`` (``(N, R, S)``) the last is ``sum_s mixing[:, r, s] c_k^(s)``."""
    steps, dtype = _steps(model, x, order, caller)
    d = x.shape[1]
    result_dtype = x.dtype
    v = _directions(directions, x, dtype, caller)
    num_points = tf.shape(x)[0]
    collapse = mixing is not None and order > 1  # carry coefficient k as R weighted sums, not S copies
    rows = order - 1 if collapse else order
    if mixing is not None:
        mixing = tf.cast(mixing, dtype)
    value = tf.cast(x, dtype)
    series = None  # (rows, N, S, width); None while it is still the input's [v, 0, ..., 0]
    top = None  # (N, R, width) when collapsing

    def start(first: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor | None]:
        padded = tf.pad(first[None], [[0, rows - 1], [0, 0], [0, 0], [0, 0]])
        if not collapse:
            return padded, None
        return padded, tf.zeros(tf.stack([num_points, tf.shape(mixing)[1], tf.shape(first)[2]]), dtype)

    for kind, step in steps:
        if kind == "dense":
            kernel = tf.cast(step.kernel, dtype)
            if series is None:  # x + t v: coefficient 1 is v, the higher ones vanish
                series, top = start(_first_layer(v, kernel))
            else:
                num_directions = tf.shape(series)[2]
                product = tf.matmul(tf.reshape(series, [-1, kernel.shape[0]]), kernel)
                series = tf.reshape(product, tf.stack([rows, num_points, num_directions, kernel.shape[1]]))
                if top is not None:
                    top = tf.einsum("nrw,wv->nrv", top, kernel)
            value = tf.matmul(value, kernel)
            if step.use_bias:  # the bias shifts the value only
                value = value + tf.cast(step.bias, dtype)
        else:
            if series is None:
                series, top = start(_dense(v, d))
            derivatives = step(value)
            series, top = _compose(derivatives, series, order, top, mixing)
            value = derivatives[0]
    assert series is not None
    coefficients = [tf.broadcast_to(value[:, None, :], tf.shape(series[0]))] + [series[j] for j in range(rows)]
    if mixing is not None:
        last = top if collapse else tf.einsum("nrs,nsw->nrw", mixing, coefficients[-1])
        coefficients = coefficients[:-1] + [last] if not collapse else coefficients + [last]
    return [tf.cast(c, result_dtype) for c in coefficients]


def _nested(u: Callable, x: tf.Tensor, directions: Any, order: int, caller: str) -> list[tf.Tensor]:
    d = x.shape[1]
    v = _dense(_directions(directions, x, x.dtype, caller), d)  # (N, S, d)
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
        elementwise Activation layers (nested chains included), as in :mod:`hodiff.taylor`;
        for ``method="nested"``, any scalar field ``(N, d) -> (N,)`` or ``(N, 1)``.
      x: points, shape ``(N, d)``.
      directions: ``(S, d)`` (the same ``S`` directions at every point), ``(N, S, d)`` (``S``
        directions per point) or :class:`SparseDirections`.
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
        return _forward(u, x, directions, order, caller)
    return _nested(u, x, directions, order, caller)


def directional_derivative(
    u: Any, x: tf.Tensor, directions: Any, order: int, method: str = "forward", caller: str = "directional_derivative"
) -> tf.Tensor:
    """The ``k``-th directional derivative ``D^k_v u(x) = d^k/dt^k u(x + t v) |_{t=0}``.

    Args:
      u: a Keras chain (``method="forward"``) or any scalar field (``method="nested"``).
      x: points, shape ``(N, d)``.
      directions: ``(S, d)``, ``(N, S, d)`` or :class:`SparseDirections`.
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


def contracted_derivative(
    u: Any,
    x: tf.Tensor,
    directions: Any,
    weights: Any,
    order: int,
    method: str = "forward",
    caller: str = "contracted_derivative",
) -> tf.Tensor:
    """Weighted sums of ``k``-th directional derivatives, ``sum_s weights[r, s] D^k_{v_s} u(x)``.

    The forward path never stores the ``S`` top coefficients: Faà di Bruno's formula is linear in
    the highest input coefficient, so coefficient ``k`` is carried as the ``R`` weighted sums
    themselves (a collapsed jet). For ``k = 2`` and ``R = 1`` this is the forward Laplacian's
    saving: ``S + 1`` rows per layer instead of ``2 S``.

    Args:
      u: a Keras chain (``method="forward"``) or any scalar field (``method="nested"``).
      x: points, shape ``(N, d)``.
      directions: ``(S, d)``, ``(N, S, d)`` or :class:`SparseDirections`.
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
      from hodiff.jets import contracted_derivative, directional_derivative

      model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(8, "tanh"), keras.layers.Dense(1)])
      x = tf.random.normal((4, 3))
      laplacian = contracted_derivative(model, x, tf.eye(3), tf.ones((1, 3)), order=2)   # (4, 1, 1)
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
        return _forward(u, x, directions, order, caller, mixing)[-1] * math.factorial(order)
    each = directional_derivative(u, x, directions, order, method, caller)
    return tf.einsum("nrs,ns...->nr...", tf.cast(mixing, each.dtype), each)


# ---------------------------------------------------------------------------------------------
# The biharmonic in one collapsed pass.


def _biharmonic_activation(
    derivatives: list[tf.Tensor],
    g: tf.Tensor,
    hessian: tf.Tensor | None,
    gradient_of_laplacian: tf.Tensor | None,
    biharmonic: tf.Tensor | None,
    pairs: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray],
) -> tuple[tf.Tensor, tf.Tensor, tf.Tensor, tf.Tensor]:
    """The rows of ``y = s(h)`` from those of ``h`` (chain rule up to order 4, summed over coordinates).

    ``g`` ``(d, N, w)`` (or ``(d, 1, w)``) holds ``h_i``, ``hessian`` ``(P, N, w)`` the ``h_ij``
    for ``i <= j``, ``gradient_of_laplacian`` ``(d, N, w)`` ``(Delta h)_i`` and ``biharmonic``
    ``(N, w)``; ``None`` for zero (the first activation after the input's affine maps). With
    ``q = sum_i h_i^2`` and ``L = Delta h = tr(h_ij)``:

    - ``y_i = s' h_i``, ``y_ij = s' h_ij + s'' h_i h_j``;
    - ``(Delta y)_i = s' (Delta h)_i + s'' (h_i L + 2 sum_j h_ij h_j) + s''' h_i q``;
    - ``Delta^2 y = s' Delta^2 h + s'' (L^2 + 4 sum_i h_i (Delta h)_i + 2 |h_ij|^2)
      + s''' (2 q L + 4 sum_ij h_i h_ij h_j) + s'''' q^2``.
    """
    first, second, full, multiplicity = pairs
    s1, s2, s3, s4 = derivatives[1:5]
    d = len(full)
    q = tf.reduce_sum(g * g, axis=0)
    new_g = s1 * g
    outer = tf.gather(g, first) * tf.gather(g, second)
    new_hessian = s2 * outer if hessian is None else s1 * hessian + s2 * outer
    if hessian is None:
        return new_g, new_hessian, s3 * g * q, s4 * q * q
    assert gradient_of_laplacian is not None and biharmonic is not None
    laplacian = tf.reduce_sum(tf.gather(hessian, np.flatnonzero(first == second)), axis=0)
    square = tf.gather(hessian, full.reshape(-1))  # (d * d, N, w): the full symmetric h_ij
    square = tf.reshape(square, tf.concat([[d, d], tf.shape(hessian)[1:]], 0))
    hessian_g = tf.reduce_sum(square * g[None], axis=1)  # sum_j h_ij h_j, (d, N, w)
    frobenius = tf.reduce_sum(tf.constant(multiplicity, hessian.dtype)[:, None, None] * hessian * hessian, axis=0)
    new_gradient = s1 * gradient_of_laplacian + s2 * (g * laplacian + 2.0 * hessian_g) + s3 * g * q
    new_biharmonic = (
        s1 * biharmonic
        + s2 * (laplacian * laplacian + 4.0 * tf.reduce_sum(g * gradient_of_laplacian, axis=0) + 2.0 * frobenius)
        + s3 * (2.0 * q * laplacian + 4.0 * tf.reduce_sum(g * hessian_g, axis=0))
        + s4 * q * q
    )
    return new_g, new_hessian, new_gradient, new_biharmonic


def forward_biharmonic(model: Any, x: tf.Tensor, caller: str = "forward_biharmonic") -> tf.Tensor:
    """The exact biharmonic ``Delta^2 u = sum_ij u_iijj`` of a Keras chain, in one collapsed pass.

    The Laplacian of the Laplacian in Taylor mode, with the sums over coordinates carried as
    sums (collapsed): every layer's output ``h`` travels with its gradient ``h_i`` (``d`` rows),
    its Hessian ``h_ij`` (``d (d + 1) / 2`` rows, ``i <= j``), the gradient of its Laplacian
    ``(Delta h)_i`` (``d`` rows) and its biharmonic (one row): ``(d + 1)(d + 4) / 2`` rows per
    point through every Dense layer, one matmul for all of them, against ``3 d^2 + 1`` for the
    ``d^2`` order-4 jets of the polarisation formula (:func:`hodiff.stde.biharmonic`'s terms).
    An activation updates them by the chain rule up to order 4 (see the source for the formulas).

    Args:
      model: a ``keras.Sequential`` or functional chain of Dense and elementwise Activation
        layers, as for :func:`taylor_coefficients`.
      x: points, shape ``(N, d)``.
      caller: name used in error messages.

    Returns:
      The biharmonic of every output, shape ``(N, k)``, in the dtype of ``x``.

    References:
      Dangel, Siebert, Zeinhofer and Walther, "Collapsing Taylor mode automatic
      differentiation", 2025 (arXiv:2505.13644).

    Example:
      ```python
      import keras, tensorflow as tf
      from hodiff import stde
      from hodiff.jets import forward_biharmonic

      model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(8, "tanh"), keras.layers.Dense(1)])
      x = tf.random.normal((4, 3))
      by_jets = stde.apply(model, x, stde.biharmonic(), method="nested")   # 9 order-4 jets by tapes
      tf.debugging.assert_near(forward_biharmonic(model, x), by_jets, rtol=1e-3, atol=1e-3)
      ```
    """
    x = _validate.as_differentiable(x, "x", caller)
    d = _validate.check_field_points(x, caller)
    if not isinstance(model, (keras.Model, keras.layers.Layer)):
        raise ValueError(
            f"{caller}: propagates through Keras chains of Dense and elementwise Activation layers; got "
            f"{type(model).__name__}. Use hodiff.stde.apply(u, x, hodiff.stde.biharmonic(), method='nested')."
        )
    steps, dtype = _steps(model, x, 4, caller)
    first, second = np.triu_indices(d)
    full = np.zeros((d, d), np.int64)
    full[first, second] = full[second, first] = np.arange(len(first))
    pairs = (first, second, full, np.where(first == second, 1.0, 2.0))
    rows = [1, d, len(first), d]  # value, h_i, h_ij, (Delta h)_i; then the biharmonic
    num_points = tf.shape(x)[0]
    value = tf.cast(x, dtype)
    tangents = None  # (d, w): the gradient rows, the same at every point until the first activation
    jet = None  # afterwards: (1 + d + P + d + 1, N, w)
    for kind, step in steps:
        if kind == "dense":
            kernel = tf.cast(step.kernel, dtype)
            if jet is None:
                tangents = kernel if tangents is None else tf.matmul(tangents, kernel)
                value = tf.matmul(value, kernel)
                if step.use_bias:
                    value = value + tf.cast(step.bias, dtype)
            else:
                product = tf.matmul(tf.reshape(jet, [-1, kernel.shape[0]]), kernel)
                jet = tf.reshape(product, tf.stack([-1, num_points, kernel.shape[1]]))
                if step.use_bias:  # the bias shifts the value only
                    jet = tf.concat([jet[:1] + tf.cast(step.bias, dtype), jet[1:]], axis=0)
            continue
        if jet is None:
            g = (tf.eye(d, dtype=dtype) if tangents is None else tangents)[:, None, :]
            h, hessian, gradient, biharmonic = value, None, None, None
        else:
            h, g, hessian, gradient, biharmonic = tf.split(jet, rows + [1], axis=0)
            h, biharmonic = h[0], biharmonic[0]
        derivatives = step(h)
        g, hessian, gradient, biharmonic = _biharmonic_activation(derivatives, g, hessian, gradient, biharmonic, pairs)
        width = tf.shape(derivatives[0])
        jet = tf.concat(
            [derivatives[0][None], tf.broadcast_to(g, tf.concat([[d], width], 0)), hessian, gradient, biharmonic[None]],
            axis=0,
        )
    if jet is None:  # an affine model: every fourth derivative vanishes
        return tf.zeros_like(tf.cast(value, x.dtype))
    return tf.cast(jet[-1], x.dtype)
