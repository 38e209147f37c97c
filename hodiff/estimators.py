"""Stochastic estimators: Hutchinson and Hutch++ traces, Hessian diagonal, per-point Laplacian.

Every estimate is reproducible (stateless random probes drawn from ``seed``) and reports its
own standard error, so a caller can tell whether more probes are needed.
"""

from __future__ import annotations

from typing import Any, Callable, NamedTuple, Sequence

import tensorflow as tf

from hodiff import _validate
from hodiff.derivatives import _first_gradient

__all__ = [
    "Estimate",
    "rademacher",
    "hutchinson_trace",
    "hutchpp_trace",
    "hessian_diagonal",
    "stochastic_laplacian",
    "stochastic_divergence",
]


class Estimate(NamedTuple):
    """A stochastic estimate with its standard error (``std / sqrt(num_samples)``)."""

    value: Any
    stderr: Any


def rademacher(shape: Sequence[int] | tf.Tensor, seed: int, dtype: tf.DType = tf.float32, stream: int = 0) -> tf.Tensor:
    """Stateless Rademacher probes (entries +1 or -1 with equal probability).

    Args:
      shape: shape of the probes.
      seed: an int; the same seed and stream give the same probes in every execution mode.
      dtype: float dtype of the result.
      stream: a second int to draw independent probe sets from one seed.

    Returns:
      A tensor of +1/-1 entries.
    """
    bits = tf.random.stateless_uniform(shape, seed=tf.stack([tf.cast(seed, tf.int64), tf.cast(stream, tf.int64)]), minval=0, maxval=2, dtype=tf.int64)
    return tf.cast(2 * bits - 1, dtype)


def _check_count(value: int, name: str, caller: str, minimum: int = 1) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
        raise ValueError(f"{caller}: {name} must be an int >= {minimum}, got {value!r}.")


def _mean_and_stderr(samples: tf.Tensor) -> Estimate:
    """Mean over axis 0 and its standard error (unbiased variance)."""
    count = tf.cast(tf.shape(samples)[0], samples.dtype)
    mean = tf.reduce_mean(samples, axis=0)
    variance = tf.reduce_sum(tf.square(samples - mean), axis=0) / tf.maximum(count - 1.0, 1.0)
    return Estimate(mean, tf.sqrt(variance / count))


def _hessian_products(f: Callable, x: Any, directions: list, unconnected: str, caller: str) -> list:
    """H @ v for several directions, sharing one forward and one reverse pass."""
    with tf.GradientTape(persistent=True) as outer:
        _validate.watch(outer, x)
        gradient = _first_gradient(f, x, unconnected, caller)
        flat_gradient = tf.nest.flatten(gradient)
        directional = [
            tf.add_n([tf.reduce_sum(g * vi) for g, vi in zip(flat_gradient, tf.nest.flatten(v))]) for v in directions
        ]
    return [_validate.gradient(outer, value, [x], ["x"], unconnected, caller)[0] for value in directional]


def _dot(a: Any, b: Any) -> tf.Tensor:
    return tf.add_n([tf.reduce_sum(ai * bi) for ai, bi in zip(tf.nest.flatten(a), tf.nest.flatten(b))])


def _probes_like(x: Any, seed: int, stream: int) -> Any:
    leaves = tf.nest.flatten(x)
    probes = [rademacher(tf.shape(leaf), seed, leaf.dtype, stream * 1000003 + i) for i, leaf in enumerate(leaves)]
    return tf.nest.pack_sequence_as(x, probes)


def hutchinson_trace(f: Callable, x: Any, num_probes: int = 32, seed: int = 0, unconnected: str = "error") -> Estimate:
    """Hutchinson estimate of ``trace(H)``, the Hessian of a scalar ``f`` at ``x``.

    Args:
      f: scalar function of ``x``.
      x: tensor, Variable or structure of them (e.g. ``model.trainable_variables``).
      num_probes: number of Rademacher probes ``v``; each costs one Hessian-vector product.
      seed: int seed of the probes.
      unconnected: ``"error"`` or ``"zero"``.

    Returns:
      :class:`Estimate` of the trace (a scalar) and its standard error.

    References:
      Hutchinson, "A stochastic estimator of the trace of the influence matrix for Laplacian
      smoothing splines", Comm. Statist. Simulation Comput. 1989.

    Example:
      ```python
      import tensorflow as tf
      from hodiff import hutchinson_trace

      f = lambda x: tf.reduce_sum(tf.range(1.0, 5.0) * x**2)   # H = diag(2, 4, 6, 8)
      estimate = hutchinson_trace(f, tf.ones(4), num_probes=8)
      assert abs(float(estimate.value) - 20.0) < 1e-4          # exact for diagonal H
      ```
    """
    caller = "hutchinson_trace"
    _check_count(num_probes, "num_probes", caller)
    x = _validate.as_differentiable(x, "x", caller)
    probes = [_probes_like(x, seed, k) for k in range(num_probes)]
    products = _hessian_products(f, x, probes, unconnected, caller)
    return _mean_and_stderr(tf.stack([_dot(v, hv) for v, hv in zip(probes, products)]))


def hessian_diagonal(f: Callable, x: Any, num_probes: int = 32, seed: int = 0, unconnected: str = "error") -> Estimate:
    """Stochastic estimate of the Hessian's diagonal, ``E[v * (H v)]`` with Rademacher ``v``.

    Args:
      f: scalar function of ``x``.
      x: tensor, Variable or structure of them.
      num_probes: number of probes; each costs one Hessian-vector product.
      seed: int seed of the probes.
      unconnected: ``"error"`` or ``"zero"``.

    Returns:
      :class:`Estimate` whose value and stderr have the structure and shapes of ``x``.

    References:
      Bekas, Kokiopoulou and Saad, "An estimator for the diagonal of a matrix", Applied
      Numerical Mathematics 2007.

    Example:
      ```python
      import tensorflow as tf
      from hodiff import hessian_diagonal

      f = lambda x: tf.reduce_sum(x**3)                  # diag(H) = 6x, H diagonal: exact
      estimate = hessian_diagonal(f, tf.constant([1.0, 2.0]), num_probes=4)
      tf.debugging.assert_near(estimate.value, [6.0, 12.0])
      ```
    """
    caller = "hessian_diagonal"
    _check_count(num_probes, "num_probes", caller)
    x = _validate.as_differentiable(x, "x", caller)
    probes = [_probes_like(x, seed, k) for k in range(num_probes)]
    products = _hessian_products(f, x, probes, unconnected, caller)
    samples = [[vi * hvi for vi, hvi in zip(tf.nest.flatten(v), tf.nest.flatten(hv))] for v, hv in zip(probes, products)]
    per_leaf = [_mean_and_stderr(tf.stack(leaf_samples)) for leaf_samples in zip(*samples)]
    return Estimate(
        tf.nest.pack_sequence_as(x, [e.value for e in per_leaf]),
        tf.nest.pack_sequence_as(x, [e.stderr for e in per_leaf]),
    )


def hutchpp_trace(f: Callable, x: tf.Tensor, num_matvecs: int = 30, seed: int = 0, unconnected: str = "error") -> Estimate:
    """Hutch++ estimate of ``trace(H)``: exact on a sketched top subspace, Hutchinson on the rest.

    With ``m`` Hessian-vector products, its error falls like ``1/m`` instead of Hutchinson's
    ``1/sqrt(m)`` when the spectrum decays.

    Args:
      f: scalar function of the tensor ``x``.
      x: a tensor or Variable of any shape (treated as a flat vector of ``n`` entries).
      num_matvecs: total Hessian-vector products, a multiple of 3, at least 3.
      seed: int seed of the probes.
      unconnected: ``"error"`` or ``"zero"``.

    Returns:
      :class:`Estimate` of the trace; the stderr is that of the Hutchinson part.

    References:
      Meyer, Musco, Musco and Woodruff, "Hutch++: Optimal stochastic trace estimation",
      SOSA 2021.

    Example:
      ```python
      import tensorflow as tf
      from hodiff import hutchpp_trace

      f = lambda x: 0.5 * tf.reduce_sum(tf.range(1.0, 7.0) * x**2)   # trace 21
      estimate = hutchpp_trace(f, tf.zeros(6), num_matvecs=6)        # sketch of rank 2
      assert abs(float(estimate.value) - 21.0) < 5.0
      ```
    """
    caller = "hutchpp_trace"
    _check_count(num_matvecs, "num_matvecs", caller, minimum=3)
    if num_matvecs % 3:
        raise ValueError(f"{caller}: num_matvecs must be a multiple of 3 (sketch, projection, residual); got {num_matvecs}.")
    x = _validate.as_differentiable(x, "x", caller)
    if not isinstance(x, (tf.Tensor, tf.Variable)):
        raise TypeError(f"{caller}: x must be one tensor or Variable; for a list of variables use hutchinson_trace.")
    k = num_matvecs // 3
    n = x.shape.num_elements()
    sketch = rademacher((n, k), seed, x.dtype, stream=0)
    residual_probes = rademacher((n, k), seed, x.dtype, stream=1)

    def products(columns):  # H @ columns, columns of shape (n, k)
        directions = [tf.reshape(columns[:, i], x.shape) for i in range(columns.shape[1])]
        return tf.stack([tf.reshape(p, [-1]) for p in _hessian_products(f, x, directions, unconnected, caller)], axis=1)

    basis, _ = tf.linalg.qr(products(sketch))
    top_part = tf.linalg.trace(tf.matmul(basis, products(basis), transpose_a=True))
    projected = residual_probes - tf.matmul(basis, tf.matmul(basis, residual_probes, transpose_a=True))
    residual_samples = tf.reduce_sum(projected * products(projected), axis=0)
    residual = _mean_and_stderr(residual_samples)
    return Estimate(top_part + residual.value, residual.stderr)


def _replicated_points(x: tf.Tensor, num_probes: int, seed: int, unconnected: str, caller: str) -> tuple[tf.Tensor, tf.Tensor, tf.Tensor]:
    """Validates the inputs of a per-point estimator; returns ``(x, points, probes)``.

    ``points`` stacks ``num_probes`` copies of ``x``, with one Rademacher probe per copy.
    """
    _check_count(num_probes, "num_probes", caller)
    _validate.check_unconnected(unconnected, caller)
    x = _validate.as_differentiable(x, "x", caller)
    _validate.check_field_points(x, caller)
    replicated = tf.tile(x, [num_probes, 1])
    return x, replicated, rademacher(tf.shape(replicated), seed, x.dtype)


def _per_point(samples: tf.Tensor, num_probes: int, num_points) -> Estimate:
    return _mean_and_stderr(tf.reshape(samples, tf.stack([num_probes, num_points])))


def stochastic_laplacian(u: Callable, x: tf.Tensor, num_probes: int = 16, seed: int = 0, unconnected: str = "error") -> Estimate:
    """Per-point Hutchinson estimate of the Laplacian of a scalar field, ``E[v^T H(x_n) v]``.

    All probes run as one batch: the points are stacked ``num_probes`` times and one
    reverse-over-reverse pass gives every ``v^T H v``.

    Args:
      u: scalar field ``(N, d) -> (N,)`` or ``(N, 1)``.
      x: points, shape ``(N, d)``.
      num_probes: probes per point.
      seed: int seed of the probes.
      unconnected: ``"error"`` or ``"zero"``.

    Returns:
      :class:`Estimate` with value and stderr shaped like ``u(x)``.

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
    with tf.GradientTape() as outer:
        outer.watch(points)
        with tf.GradientTape() as inner:
            inner.watch(points)
            values, as_column = _validate.check_per_point_values(u(points), points, "u", caller)
        gradient = _validate.gradient(inner, values, [points], ["x"], unconnected, caller)[0]
        directional = tf.reduce_sum(gradient * probes)
    hessian_probes = _validate.gradient(outer, directional, [points], ["x"], unconnected, caller)[0]
    estimate = _per_point(tf.reduce_sum(probes * hessian_probes, axis=1), num_probes, tf.shape(x)[0])
    if as_column:
        return Estimate(estimate.value[:, None], estimate.stderr[:, None])
    return estimate


def stochastic_divergence(v: Callable, x: tf.Tensor, num_probes: int = 16, seed: int = 0, unconnected: str = "error") -> Estimate:
    """Per-point Hutchinson estimate of the divergence of a vector field, ``E[e^T J(x_n) e]``.

    Args:
      v: vector field ``(N, d) -> (N, d)``.
      x: points, shape ``(N, d)``.
      num_probes: probes per point (all in one reverse pass over the stacked batch).
      seed: int seed of the probes.
      unconnected: ``"error"`` or ``"zero"``.

    Returns:
      :class:`Estimate` with value and stderr of shape ``(N,)``.

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
    with tf.GradientTape() as tape:
        tape.watch(points)
        values = v(points)
        _validate.check_vector_field(values, points, caller)
        directional = tf.reduce_sum(values * tf.cast(probes, values.dtype))
    jacobian_probes = _validate.gradient(tape, directional, [points], ["x"], unconnected, caller)[0]
    return _per_point(tf.reduce_sum(probes * jacobian_probes, axis=1), num_probes, tf.shape(x)[0])
