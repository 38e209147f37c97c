"""Differential operators on fields sampled at collocation points.

A *field* is a function of a batch of points ``x`` of shape ``(N, d)``: a scalar field ``u``
returns ``(N,)`` or ``(N, 1)``, a vector field ``v`` returns ``(N, d)``. Rows must be
independent (a Keras MLP applied to points is). The operators return one value per point.
"""

from __future__ import annotations

from typing import Callable, Sequence

import tensorflow as tf

from hodiff import _validate, estimators, taylor
from hodiff._tower import MultiIndex, derivative_tower

Field = Callable[[tf.Tensor], tf.Tensor]

__all__ = ["partials", "laplacian", "divergence", "OPERATOR_METHODS"]

OPERATOR_METHODS = ("nested", "forward", "hutchinson")


def _parse_partial(name: str | Sequence[str], coords: Sequence[str], caller: str) -> MultiIndex:
    """Turns ``"xxt"`` (single-letter coords) or ``("x1", "x1")`` into a multi-index."""
    index = []
    for letter in name:
        if letter not in coords:
            raise ValueError(
                f"{caller}: wanted {name!r} uses {letter!r}, which is not one of coords "
                f"{tuple(coords)}. Use the coordinate names given in coords; for names longer "
                f"than one letter, write the partial as a tuple, e.g. ('x1', 'x1')."
            )
        index.append(list(coords).index(letter))
    return tuple(index)


def partials(
    u: Field,
    x: tf.Tensor,
    coords: Sequence[str],
    wanted: Sequence[str | Sequence[str]],
    unconnected: str = "error",
) -> dict[str | tuple[str, ...], tf.Tensor]:
    """Named partial derivatives of a scalar field at collocation points, sharing tapes.

    Args:
      u: scalar field, ``(N, d) -> (N,)`` or ``(N, 1)``, e.g. a Keras model.
      x: points, shape ``(N, d)``.
      coords: one name per column of ``x``, e.g. ``("x", "t")``.
      wanted: partials by name: ``"x"``, ``"xx"``, ``"xxxx"``, mixed ``"xt"``, or tuples of
        names for multi-letter coordinates; ``""`` is the field value itself.
      unconnected: ``"error"`` (default) or ``"zero"`` (e.g. ``"xxx"`` of a quadratic).

    Returns:
      A dict from each wanted name to a tensor shaped like ``u(x)`` (``(N,)`` or ``(N, 1)``).

    Example:
      ```python
      import tensorflow as tf
      from hodiff import partials

      u = lambda x: tf.sin(x[:, 0]) * tf.exp(-x[:, 1])           # u(x, t)
      x = tf.constant([[0.5, 0.1], [1.0, 0.2]])
      d = partials(u, x, coords=("x", "t"), wanted=("", "t", "xx", "xt"))
      tf.debugging.assert_near(d["t"], -d[""])                   # u_t = -u
      tf.debugging.assert_near(d["xx"], -d[""])                  # u_xx = -u
      ```
    """
    caller = "partials"
    x = _validate.as_differentiable(x, "x", caller)
    d = _validate.check_field_points(x, caller)
    if len(coords) != d or len(set(coords)) != len(coords):
        raise ValueError(f"{caller}: coords must name each of the {d} columns of x once; got {tuple(coords)}.")
    if isinstance(wanted, str):
        raise TypeError(f"{caller}: wanted must be a tuple of names, e.g. ({wanted!r},), not the string {wanted!r}.")
    indices = {name: _parse_partial(name, coords, caller) for name in wanted}
    nodes, as_column = derivative_tower(u, x, list(indices.values()), unconnected, caller)
    return {name: _shape_like_field(nodes[tuple(sorted(i))], as_column) for name, i in indices.items()}


def _shape_like_field(values: tf.Tensor, as_column: bool) -> tf.Tensor:
    return values[:, None] if as_column else values


def _check_method(method: str, caller: str) -> None:
    if method not in OPERATOR_METHODS:
        raise ValueError(
            f"{caller}: method={method!r} is not an option; use 'nested' (exact, nested tapes), "
            f"'forward' (exact, Taylor-mode through Dense/activation Keras stacks) or "
            f"'hutchinson' (unbiased stochastic estimate; set num_probes and seed)."
        )


def laplacian(
    u: Field,
    method: str = "nested",
    num_probes: int = 16,
    seed: int = 0,
    unconnected: str = "error",
) -> Field:
    """Transforms a scalar field into its Laplacian ``sum_i d^2 u / dx_i^2``, one value per point.

    Args:
      u: scalar field, ``(N, d) -> (N,)`` or ``(N, 1)``.
      method: ``"nested"`` (exact; nested tapes, ``d`` reverse passes over the gradient),
        ``"forward"`` (exact; Taylor-mode propagation of value, gradient and Laplacian through a
        Keras stack of Dense and elementwise activation layers, see :mod:`hodiff.taylor`) or
        ``"hutchinson"`` (unbiased estimate ``E[v^T H v]`` with Rademacher probes).
      num_probes: probes per point for ``"hutchinson"``.
      seed: seed of the probes for ``"hutchinson"`` (the same seed gives the same estimate).
      unconnected: ``"error"`` (default) or ``"zero"`` (e.g. a linear field).

    Returns:
      A function of ``x`` (``(N, d)``) returning the Laplacian shaped like ``u(x)``.

    References:
      Hutchinson, "A stochastic estimator of the trace of the influence matrix", 1989.
      Li et al., "Forward Laplacian", arXiv:2307.08214, 2023 (the ``"forward"`` path).

    Example:
      ```python
      import tensorflow as tf
      from hodiff import laplacian

      u = lambda x: tf.reduce_sum(x**2, axis=1)      # Laplacian = 2 d
      x = tf.random.normal((4, 3))
      tf.debugging.assert_near(laplacian(u)(x), tf.fill([4], 6.0))
      ```
    """
    caller = "laplacian"
    _check_method(method, caller)
    _validate.check_unconnected(unconnected, caller)

    def laplacian_u(x):
        x = _validate.as_differentiable(x, "x", caller)
        d = _validate.check_field_points(x, caller)
        if method == "forward":
            jet = taylor.forward_jet(u, x, caller=caller)
            _validate.check_per_point_values(jet.laplacian, x, "u", caller)
            return jet.laplacian
        if method == "hutchinson":
            return estimators.stochastic_laplacian(u, x, num_probes, seed, unconnected).value
        nodes, as_column = derivative_tower(u, x, [(i, i) for i in range(d)], unconnected, caller)
        return _shape_like_field(tf.add_n([nodes[(i, i)] for i in range(d)]), as_column)

    return laplacian_u


def divergence(
    v: Field,
    method: str = "nested",
    num_probes: int = 16,
    seed: int = 0,
    unconnected: str = "error",
) -> Field:
    """Transforms a vector field ``v: (N, d) -> (N, d)`` into its divergence ``sum_i dv_i/dx_i``.

    Args:
      v: vector field returning ``(N, d)``.
      method: ``"nested"`` (exact; ``d`` reverse passes on one tape), ``"forward"`` (exact;
        Taylor-mode Jacobian propagation through a Keras Dense/activation stack) or
        ``"hutchinson"`` (unbiased estimate ``E[e^T J e]``, one reverse pass over
        ``num_probes`` copies of the batch).
      num_probes: probes per point for ``"hutchinson"``.
      seed: seed of the probes for ``"hutchinson"``.
      unconnected: ``"error"`` (default) or ``"zero"``.

    Returns:
      A function of ``x`` returning the divergence, shape ``(N,)``.

    Example:
      ```python
      import tensorflow as tf
      from hodiff import divergence

      v = lambda x: x * tf.reduce_sum(x, axis=1, keepdims=True)   # div = (d + 1) * sum(x)
      x = tf.constant([[1.0, 2.0, 3.0]])
      tf.debugging.assert_near(divergence(v)(x), [24.0])
      ```
    """
    caller = "divergence"
    _check_method(method, caller)
    _validate.check_unconnected(unconnected, caller)

    def divergence_v(x):
        x = _validate.as_differentiable(x, "x", caller)
        d = _validate.check_field_points(x, caller)
        if method == "forward":
            jet = taylor.forward_jet(v, x, caller=caller, need_laplacian=False)
            _validate.check_vector_field(jet.value, x, caller)
            return tf.linalg.trace(jet.jacobian)
        if method == "hutchinson":
            return estimators.stochastic_divergence(v, x, num_probes, seed, unconnected).value
        with tf.GradientTape(persistent=True) as tape:
            tape.watch(x)
            values = v(x)
            _validate.check_vector_field(values, x, caller)
            columns = [values[:, i] for i in range(d)]
        diagonal = []
        for i, column in enumerate(columns):
            diagonal.append(_validate.gradient(tape, column, [x], ["x"], unconnected, caller)[0][:, i])
        return tf.add_n(diagonal)

    return divergence_v

