"""Differential operators on fields sampled at collocation points, exact and stochastic.

A *field* is a function of a batch of points ``x`` of shape ``(N, d)``: a scalar field ``u``
returns ``(N,)`` or ``(N, 1)``, a vector field ``v`` returns ``(N, d)``. Rows must be
independent (a Keras MLP applied to points is). The operators return one value per point.

One dtype rule holds for every operator and method: results come in the dtype of the points
``x``, whatever the field computes in (a ``mixed_float16`` Keras model included); the forward
(Taylor-mode) path propagates in the wider of the two dtypes.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import tensorflow as tf

from hodiff import _validate, taylor
from hodiff._tower import MultiIndex, derivative_tower
from hodiff.derivatives import hvp, vjp
from hodiff.estimators import Estimate, mean_and_stderr, rademacher

Field = Callable[[tf.Tensor], tf.Tensor]

__all__ = ["partials", "laplacian", "divergence", "stochastic_laplacian", "stochastic_divergence", "OPERATOR_METHODS"]

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
    indices: dict[str | tuple[str, ...], MultiIndex] = {
        name if isinstance(name, str) else tuple(name): _parse_partial(name, coords, caller) for name in wanted
    }
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
            jet = taylor.forward_jet(u, x, caller=caller, need_jacobian=False)
            _validate.check_per_point_values(jet.laplacian, x, "u", caller)
            return jet.laplacian
        if method == "hutchinson":
            return stochastic_laplacian(u, x, num_probes, seed, unconnected).value
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
            return stochastic_divergence(v, x, num_probes, seed, unconnected).value
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


def _replicated_points(
    x: tf.Tensor, num_probes: int, seed: int, unconnected: str, caller: str
) -> tuple[tf.Tensor, tf.Tensor, tf.Tensor]:
    """Validates the inputs of a per-point estimator; returns ``(x, points, probes)``.

    ``points`` stacks ``num_probes`` copies of ``x``, with one Rademacher probe per copy.
    """
    _validate.check_count(num_probes, "num_probes", caller)
    _validate.check_unconnected(unconnected, caller)
    x = _validate.as_differentiable(x, "x", caller)
    _validate.check_field_points(x, caller)
    replicated = tf.tile(x, [num_probes, 1])
    return x, replicated, rademacher(tf.shape(replicated), seed, x.dtype)


def _per_point(samples: tf.Tensor, num_probes: int, num_points) -> Estimate:
    return mean_and_stderr(tf.reshape(samples, tf.stack([num_probes, num_points])))


def stochastic_laplacian(
    u: Field, x: tf.Tensor, num_probes: int = 16, seed: int = 0, unconnected: str = "error"
) -> Estimate:
    """Per-point Hutchinson estimate of the Laplacian of a scalar field, ``E[v^T H(x_n) v]``.

    All probes run as one batch: the points are stacked ``num_probes`` times, and one
    Hessian-vector product of ``sum_n u(x_n)`` (block-diagonal Hessian, as rows are
    independent) gives every ``H(x_n) v``.

    Args:
      u: scalar field ``(N, d) -> (N,)`` or ``(N, 1)``.
      x: points, shape ``(N, d)``.
      num_probes: probes per point.
      seed: int seed of the probes.
      unconnected: ``"error"`` or ``"zero"``.

    Returns:
      :class:`~hodiff.Estimate` with value and stderr shaped like ``u(x)``, in the dtype of ``x``.

    References:
      Hutchinson, "A stochastic estimator of the trace of the influence matrix for Laplacian
      smoothing splines", Comm. Statist. Simulation Comput. 1989.

    Example:
      ```python
      import tensorflow as tf
      from hodiff import stochastic_laplacian

      u = lambda x: tf.reduce_sum(x**2, axis=1)           # H = 2I: every probe is exact
      estimate = stochastic_laplacian(u, tf.ones((3, 5)), num_probes=4)
      tf.debugging.assert_near(estimate.value, tf.fill([3], 10.0))
      ```
    """
    caller = "stochastic_laplacian"
    x, points, probes = _replicated_points(x, num_probes, seed, unconnected, caller)
    as_column = []

    def total(p):
        values, column = _validate.check_per_point_values(u(p), p, "u", caller)
        as_column.append(column)
        return tf.reduce_sum(tf.cast(values, p.dtype))

    hessian_probes = hvp(total, points, probes, unconnected=unconnected)
    estimate = _per_point(tf.reduce_sum(probes * hessian_probes, axis=1), num_probes, tf.shape(x)[0])
    if as_column[0]:
        return Estimate(estimate.value[:, None], estimate.stderr[:, None])
    return estimate


def stochastic_divergence(
    v: Field, x: tf.Tensor, num_probes: int = 16, seed: int = 0, unconnected: str = "error"
) -> Estimate:
    """Per-point Hutchinson estimate of the divergence of a vector field, ``E[e^T J(x_n) e]``.

    Args:
      v: vector field ``(N, d) -> (N, d)``.
      x: points, shape ``(N, d)``.
      num_probes: probes per point (all in one reverse pass over the stacked batch).
      seed: int seed of the probes.
      unconnected: ``"error"`` or ``"zero"``.

    Returns:
      :class:`~hodiff.Estimate` with value and stderr of shape ``(N,)``, in the dtype of ``x``.

    References:
      Hutchinson, "A stochastic estimator of the trace of the influence matrix for Laplacian
      smoothing splines", Comm. Statist. Simulation Comput. 1989.

    Example:
      ```python
      import tensorflow as tf
      from hodiff import stochastic_divergence

      estimate = stochastic_divergence(lambda x: 3.0 * x, tf.ones((2, 4)), num_probes=2)
      tf.debugging.assert_near(estimate.value, [12.0, 12.0])   # J = 3I: exact
      ```
    """
    caller = "stochastic_divergence"
    x, points, probes = _replicated_points(x, num_probes, seed, unconnected, caller)

    def field(p):
        values = v(p)
        _validate.check_vector_field(values, p, caller)
        return tf.cast(values, p.dtype)

    _, pullback = vjp(field, points, unconnected=unconnected)
    jacobian_probes = pullback(probes)[0]
    return _per_point(tf.reduce_sum(probes * jacobian_probes, axis=1), num_probes, tf.shape(x)[0])
