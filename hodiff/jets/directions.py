"""Directions of univariate jets: dense ``(S, d)`` / ``(N, S, d)`` arrays or sparse coordinate lists."""

from __future__ import annotations

from typing import Any, NamedTuple

import tensorflow as tf

from hodiff import _validate

__all__ = ["SparseDirections", "per_point", "to_dense", "first_layer"]


class SparseDirections(NamedTuple):
    """Directions with few nonzero entries: ``v[indices[..., j]] = values[..., j]``.

    ``indices`` (ints) and ``values`` (floats) have the same shape ``(S, m)`` or ``(N, S, m)``;
    an index may repeat (the values add). A basis vector ``e_i`` is ``indices=[[i]], values=[[1.0]]``.
    The forward path then starts with a gather of ``m`` rows of the first kernel instead of a
    ``d``-wide matmul, which is what makes coordinate sampling cheap in thousands of dimensions.
    """

    indices: Any
    values: Any


def per_point(directions: Any, x: tf.Tensor, dtype: tf.DType, caller: str) -> tf.Tensor | SparseDirections:
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


def to_dense(directions: tf.Tensor | SparseDirections, d: int) -> tf.Tensor:
    """Per-point directions (see :func:`per_point`) as a dense ``(N, S, d)`` tensor."""
    if isinstance(directions, SparseDirections):
        one_hot = tf.one_hot(directions.indices, d, dtype=directions.values.dtype)  # (N, S, m, d)
        return tf.reduce_sum(directions.values[..., None] * one_hot, axis=-2)
    return directions


def first_layer(directions: tf.Tensor | SparseDirections, kernel: tf.Tensor) -> tf.Tensor:
    """``v W`` for every direction, ``(N, S, width)``; a gather of kernel rows for sparse directions."""
    if isinstance(directions, SparseDirections):
        rows = tf.gather(kernel, directions.indices)  # (N, S, m, width)
        return tf.reduce_sum(directions.values[..., None] * rows, axis=-2)
    return tf.einsum("nsd,dw->nsw", directions, kernel)
