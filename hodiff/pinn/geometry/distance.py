"""Approximate distance functions of boundary pieces (TensorFlow ops) and their R-equivalence join.

A piece's function is zero on the piece and positive off it; :meth:`Geometry.distance
<hodiff.pinn.geometry.Geometry.distance>` joins the pieces' functions with :func:`r_equivalence`
for hard Dirichlet constraints.

References:
  N. Sukumar and A. Srivastava, "Exact imposition of boundary conditions with distance functions
  in physics-informed deep neural networks", CMAME 389 (2022) 114333.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import tensorflow as tf


def column_getter(coords: Sequence[str], names: Sequence[str]) -> Callable[[Any], list]:
    """``x (N, d) -> [column (N,)]`` for ``names``, by matmul with one-hot vectors (XLA-safe)."""
    selection = np.zeros((len(coords), len(names)))
    for j, name in enumerate(names):
        selection[coords.index(name), j] = 1.0

    def columns(x):
        x = tf.convert_to_tensor(x)
        if not x.dtype.is_floating:
            raise ValueError(f"distance: x must be a floating tensor, got dtype {x.dtype.name}; cast it first.")
        if x.shape.rank != 2 or (x.shape[1] is not None and x.shape[1] != len(coords)):
            raise ValueError(
                f"distance: x must have shape (N, {len(coords)}) with columns {tuple(coords)}, got {tuple(x.shape)}."
            )
        picked = tf.matmul(x, tf.constant(selection, x.dtype))
        return [tf.reshape(picked[:, j : j + 1], [-1]) for j in range(len(names))]

    return columns


def r_equivalence(values: list) -> Any:
    """Join distances with the R-equivalence ``a b / sqrt(a^2 + b^2)`` (m = 2): zero where any is zero."""
    result = values[0]
    for value in values[1:]:
        result = result * value / tf.sqrt(tf.square(result) + tf.square(value))
    return result


def segment_adf(a: np.ndarray, b: np.ndarray) -> Callable[[list], Any]:
    """Trimmed-segment distance (Sukumar & Srivastava 2022, eq. 7): zero only on the segment ``ab``."""
    length = float(np.hypot(*(b - a)))
    centre = (a + b) / 2

    def adf(cols):
        x, y = cols
        f = ((x - a[0]) * (b[1] - a[1]) - (y - a[1]) * (b[0] - a[0])) / length
        t = ((length / 2) ** 2 - tf.square(x - centre[0]) - tf.square(y - centre[1])) / length
        psi = tf.sqrt(tf.square(t) + tf.square(tf.square(f)))
        # a tiny floor keeps the derivatives finite exactly on the segment
        return tf.sqrt(tf.square(f) + tf.square((psi - t) / 2) + tf.constant(1e-24, x.dtype))

    return adf


def plane_adf(index: int, value: float, direction: float) -> Callable[[list], Any]:
    """Signed distance ``direction * (x_index - value)`` to a face plane (positive inside the box)."""
    return lambda cols: direction * (cols[index] - value)
