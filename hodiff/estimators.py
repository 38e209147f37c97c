"""Stochastic estimators in parameter space: Hutchinson and Hutch++ traces, Hessian diagonal.

Every estimate is reproducible (stateless random probes drawn from ``seed``) and reports its
own standard error, so a caller can tell whether more probes are needed. The per-point
estimators of fields (stochastic Laplacian and divergence) live with the other field
operators in :mod:`hodiff.operators`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import tensorflow as tf

from hodiff import _validate
from hodiff.derivatives import grad, vjp

__all__ = [
    "Estimate",
    "rademacher",
    "hutchinson_trace",
    "hutchpp_trace",
    "hessian_diagonal",
    "mean_and_stderr",
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
    bits = tf.random.stateless_uniform(
        shape, seed=tf.stack([tf.cast(seed, tf.int64), tf.cast(stream, tf.int64)]), minval=0, maxval=2, dtype=tf.int64
    )
    return tf.cast(2 * bits - 1, dtype)


def mean_and_stderr(samples: tf.Tensor) -> Estimate:
    """The mean over axis 0 of independent samples and its standard error (unbiased variance).

    Args:
      samples: tensor whose axis 0 indexes the samples.

    Returns:
      :class:`Estimate` shaped like one sample.
    """
    count = tf.cast(tf.shape(samples)[0], samples.dtype)
    mean = tf.reduce_mean(samples, axis=0)
    variance = tf.reduce_sum(tf.square(samples - mean), axis=0) / tf.maximum(count - 1.0, 1.0)
    return Estimate(mean, tf.sqrt(variance / count))


def _hessian_products(f: Callable, x: Any, directions: list, unconnected: str) -> list:
    """H @ v for several directions: pullbacks of ``grad(f)`` sharing one forward pass."""
    _, pullback = vjp(grad(f, unconnected=unconnected), x, unconnected=unconnected)
    return [pullback(v)[0] for v in directions]


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
    _validate.check_count(num_probes, "num_probes", caller)
    x = _validate.as_differentiable(x, "x", caller)
    probes = [_probes_like(x, seed, k) for k in range(num_probes)]
    products = _hessian_products(f, x, probes, unconnected)
    return mean_and_stderr(tf.stack([_dot(v, hv) for v, hv in zip(probes, products)]))


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
    _validate.check_count(num_probes, "num_probes", caller)
    x = _validate.as_differentiable(x, "x", caller)
    probes = [_probes_like(x, seed, k) for k in range(num_probes)]
    products = _hessian_products(f, x, probes, unconnected)
    samples = [
        [vi * hvi for vi, hvi in zip(tf.nest.flatten(v), tf.nest.flatten(hv))] for v, hv in zip(probes, products)
    ]
    per_leaf = [mean_and_stderr(tf.stack(leaf_samples)) for leaf_samples in zip(*samples)]
    return Estimate(
        tf.nest.pack_sequence_as(x, [e.value for e in per_leaf]),
        tf.nest.pack_sequence_as(x, [e.stderr for e in per_leaf]),
    )


def hutchpp_trace(
    f: Callable, x: tf.Tensor, num_matvecs: int = 30, seed: int = 0, unconnected: str = "error"
) -> Estimate:
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
    _validate.check_count(num_matvecs, "num_matvecs", caller, minimum=3)
    if num_matvecs % 3:
        raise ValueError(
            f"{caller}: num_matvecs must be a multiple of 3 (sketch, projection, residual); got {num_matvecs}."
        )
    x = _validate.as_differentiable(x, "x", caller)
    if not isinstance(x, (tf.Tensor, tf.Variable)):
        raise TypeError(f"{caller}: x must be one tensor or Variable; for a list of variables use hutchinson_trace.")
    k = num_matvecs // 3
    n = x.shape.num_elements()
    sketch = rademacher((n, k), seed, x.dtype, stream=0)
    residual_probes = rademacher((n, k), seed, x.dtype, stream=1)

    def products(columns):  # H @ columns, columns of shape (n, k)
        directions = [tf.reshape(columns[:, i], x.shape) for i in range(columns.shape[1])]
        return tf.stack([tf.reshape(p, [-1]) for p in _hessian_products(f, x, directions, unconnected)], axis=1)

    basis, _ = tf.linalg.qr(products(sketch))
    top_part = tf.linalg.trace(tf.matmul(basis, products(basis), transpose_a=True))
    projected = residual_probes - tf.matmul(basis, tf.matmul(basis, residual_probes, transpose_a=True))
    residual_samples = tf.reduce_sum(projected * products(projected), axis=0)
    residual = mean_and_stderr(residual_samples)
    return Estimate(top_part + residual.value, residual.stderr)
