"""Functions given by a table of values on a regular grid, and interfaces where a coefficient jumps.

A coefficient field of a PDE often comes as a table (measured, or drawn once and stored). A
network's residual needs it at arbitrary points and, for its derivatives, as a smooth function:

- :class:`Tabulated`: the cubic B-spline interpolating the table (twice continuously
  differentiable), evaluated in TensorFlow ops (a gather of the 4^d nearest coefficients and
  polynomial weights), so that tapes differentiate through it in eager, graph and XLA modes;
  ``numpy`` evaluates it with scipy for checks.
- A coefficient that jumps (``a = 2`` where ``g > 0``, ``1`` elsewhere) makes the solution's
  derivatives jump across ``g = 0`` while its values stay continuous; a smooth network cannot draw
  that kink. :class:`LevelSetFeature` gives the network ``|g(x)|`` as one more input (a
  cusp-capturing network, Tseng et al. 2023): its derivatives can jump across ``g = 0``, its values
  cannot. :meth:`Tabulated.zero_set` draws points and normals on the interface ``g = 0``, where
  an :class:`~hodiff.pinn.Interface` condition asks for the flux's continuity.

References:
  Unser (1999), "Splines: a perfect fit for signal and image processing", IEEE Signal Process. Mag. 16
  (cubic B-spline interpolation); Tseng, Lin, Hu & Lai (2023), "A cusp-capturing PINN for elliptic
  interface problems", J. Comput. Phys. 491, 112359.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from typing import Any

import keras
import numpy as np
import tensorflow as tf

__all__ = ["LevelSetFeature", "Tabulated", "spline_values"]


def _weights(fraction: tf.Tensor) -> tf.Tensor:
    """The cubic B-spline's four weights ``(N, 4)`` at the fractional positions ``(N,)``, nodes ``i - 1 .. i + 2``."""
    f = fraction
    return tf.stack(
        [(1.0 - f) ** 3 / 6.0, (3.0 * f**3 - 6.0 * f**2 + 4.0) / 6.0, (-3.0 * f**3 + 3.0 * f**2 + 3.0 * f + 1.0) / 6.0,
         f**3 / 6.0],
        axis=1,
    )  # fmt: skip


def spline_values(
    coefficients: tf.Tensor,
    columns: Sequence[tf.Tensor],
    low: Sequence[float] | np.ndarray,
    spacing: Sequence[float] | np.ndarray,
    periodic: bool,
) -> tf.Tensor:
    """The cubic B-spline with ``coefficients`` (one axis per column) at ``columns`` ``(N,)`` each: ``(N,)``.

    Args:
      coefficients: the B-spline coefficients, as :class:`Tabulated` computes them.
      columns: the coordinates, one ``(N,)`` tensor per axis of ``coefficients``.
      low: the coordinates of the first node, per axis.
      spacing: the nodes' spacing, per axis.
      periodic: the table repeats with period ``shape * spacing``; else mirrored about its first and last nodes.
    """
    shape = coefficients.shape
    indices, weights = [], []
    for axis, column in enumerate(columns):
        position = (column - tf.cast(low[axis], column.dtype)) / tf.cast(spacing[axis], column.dtype)
        node = tf.stop_gradient(tf.floor(position))
        weights.append(_weights(position - node))
        index = tf.cast(node, tf.int32)[:, None] + tf.range(-1, 3)[None, :]
        size = shape[axis]
        if periodic:
            index = tf.math.floormod(index, size)
        else:  # mirror about the end nodes (no repeat), as scipy.ndimage's mode "mirror"
            period = 2 * (size - 1)
            index = tf.math.floormod(index, period)
            index = tf.where(index >= size, period - index, index)
        indices.append(index)
    total = tf.zeros_like(columns[0])
    for offsets in itertools.product(range(4), repeat=len(columns)):
        gathered = tf.gather_nd(coefficients, tf.stack([index[:, k] for index, k in zip(indices, offsets)], axis=1))
        weight = tf.math.reduce_prod(tf.stack([w[:, k] for w, k in zip(weights, offsets)], axis=1), axis=1)
        total += tf.cast(gathered, total.dtype) * weight
    return total


class Tabulated:
    """A function of some coordinates, given by its values on a regular grid: their cubic B-spline interpolant.

    Args:
      values: the table, one axis per name in ``coords``: ``values[i, j]`` at
        ``(low[0] + i * spacing[0], low[1] + j * spacing[1])``.
      low: the coordinates of the first node per axis.
      high: the coordinates of the last node per axis (``spacing = (high - low) / (n - 1)``).
      coords: the coordinate names the axes stand for, e.g. ``("x", "y")``.
      periodic: the table is one period of a periodic function (its next node, one spacing past ``high``, is the
        first again), as a field drawn by FFT is; else the spline is mirrored about the end nodes.

    The spline passes through every value and is twice continuously differentiable; ``tf`` evaluation and its
    tape derivatives work in eager, graph and XLA modes.

    Example:
      ```python
      import numpy as np
      import tensorflow as tf
      from hodiff.pinn import Tabulated

      x = np.linspace(0.0, 1.0, 11)
      field = Tabulated(np.sin(3 * x)[:, None] * np.cos(2 * x)[None, :], (0.0, 0.0), (1.0, 1.0), ("x", "y"))
      points = tf.constant([[0.3, 0.7], [0.55, 0.25]], tf.float64)
      values = field({"x": points[:, 0], "y": points[:, 1]}).numpy()
      assert np.allclose(values, np.sin(3 * points[:, 0]) * np.cos(2 * points[:, 1]), atol=2e-3)
      assert np.allclose(values, field.numpy(points.numpy()), atol=1e-12)  # scipy's spline, the same one
      ```
    """

    def __init__(
        self, values: Any, low: Sequence[float], high: Sequence[float], coords: Sequence[str], periodic: bool = False
    ):
        import scipy.ndimage

        table = np.asarray(values, dtype=float)
        coords = tuple(coords)
        if table.ndim != len(coords) or table.ndim == 0 or min(table.shape) < 2:
            raise ValueError(
                f"Tabulated: values of shape {table.shape} need one axis of at least 2 nodes per coordinate in "
                f"coords={coords}."
            )
        if not np.all(np.isfinite(table)):
            raise ValueError("Tabulated: values hold NaN or Inf; fill them before tabulating.")
        first, last = np.asarray(low, dtype=float), np.asarray(high, dtype=float)
        if first.shape != (table.ndim,) or last.shape != (table.ndim,) or not np.all(last > first):
            raise ValueError(
                f"Tabulated: low={first.tolist()} and high={last.tolist()} must give one bound per coordinate "
                f"{coords}, with high > low."
            )
        self.values, self.low, self.high, self.coords, self.periodic = table, first, last, coords, bool(periodic)
        self.spacing = (last - first) / (np.asarray(table.shape) - 1)
        self.mode = "grid-wrap" if periodic else "mirror"
        self.coefficients = scipy.ndimage.spline_filter(table, order=3, mode=self.mode)

    def __call__(self, x: Mapping[str, tf.Tensor]) -> tf.Tensor:
        """The spline at the points whose columns ``x[name]`` ``(N,)`` are given for each name in ``coords``."""
        columns = [x[name] for name in self.coords]
        coefficients = tf.constant(self.coefficients, dtype=columns[0].dtype)
        return spline_values(coefficients, columns, self.low, self.spacing, self.periodic)

    def numpy(self, points: Any) -> np.ndarray:
        """The same spline by scipy at ``points`` ``(N, d)`` (columns in the order of ``coords``): ``(N,)``."""
        import scipy.ndimage

        positions = ((np.asarray(points, dtype=float) - self.low) / self.spacing).T
        return scipy.ndimage.map_coordinates(self.coefficients, positions, order=3, mode=self.mode, prefilter=False)

    def zero_set(self, count: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
        """``count`` points on the curves where the (two-dimensional) spline is 0, uniform in arc length, and the unit
        normals there, pointing to where it is positive.

        The table's contour lines (linear between nodes) are drawn at a seeded random arc length, then each point
        is moved onto the spline's zero by Newton steps along the gradient.

        Returns:
          ``(points, normals)``, each ``(count, 2)``, columns in the order of ``coords``.
        """
        import contourpy

        if len(self.coords) != 2:
            raise ValueError(f"Tabulated.zero_set: zero sets are drawn in two dimensions; the table has {self.coords}.")
        if not isinstance(count, (int, np.integer)) or count < 1:
            raise ValueError(f"Tabulated.zero_set: count={count!r} must be an int >= 1.")
        axes = [self.low[k] + self.spacing[k] * np.arange(self.values.shape[k]) for k in range(2)]
        lines: list[Any] = list(contourpy.contour_generator(axes[0], axes[1], self.values.T).lines(0.0))
        lines = [line for line in lines if len(line) > 1]
        if not lines:
            raise ValueError("Tabulated.zero_set: the table never changes sign, so it has no zero set.")
        pieces = np.concatenate([np.stack([line[:-1], line[1:]], axis=1) for line in lines])  # (segments, 2, 2)
        lengths = np.linalg.norm(pieces[:, 1] - pieces[:, 0], axis=1)
        rng = np.random.default_rng(seed)
        cumulative = np.cumsum(lengths)
        at = rng.uniform(0.0, cumulative[-1], size=count)
        segment = np.minimum(np.searchsorted(cumulative, at), len(pieces) - 1)
        fraction = np.clip(1.0 - (cumulative[segment] - at) / np.maximum(lengths[segment], 1e-300), 0.0, 1.0)
        points = pieces[segment, 0] + fraction[:, None] * (pieces[segment, 1] - pieces[segment, 0])
        for _ in range(6):
            value, gradient = self._value_and_gradient(points)
            points = points - (value / np.maximum(np.sum(gradient**2, axis=1), 1e-300))[:, None] * gradient
            points = np.clip(points, self.low, self.high)
        _, gradient = self._value_and_gradient(points)
        return points, gradient / np.linalg.norm(gradient, axis=1, keepdims=True)

    def _value_and_gradient(self, points: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        columns = [tf.constant(points[:, k]) for k in range(points.shape[1])]
        with tf.GradientTape() as tape:
            tape.watch(columns)
            value = self(dict(zip(self.coords, columns)))
        return value.numpy(), np.stack([g.numpy() for g in tape.gradient(value, columns)], axis=1)


@keras.saving.register_keras_serializable(package="hodiff")
class LevelSetFeature(keras.layers.Layer):
    """The inputs ``(N, d)`` and one more column, ``|g|`` of a :class:`Tabulated` ``g`` of some of them: ``(N, d + 1)``.

    A network after this layer is continuous everywhere, while its derivatives may jump across ``g = 0``
    (those of ``|g|`` do): the cusp-capturing network of Tseng et al. (2023) for a coefficient that jumps there.
    The spline's coefficients are a non-trainable weight, so the layer saves and loads with its model. Built from
    matrix products and elementwise functions after the spline (no concatenation).

    Args:
      columns: the input columns the table's axes stand for, in its order.
      shape: the table's shape (from :class:`Tabulated`).
      low: the table's first node per axis.
      spacing: the table's spacing per axis.
      periodic: whether the table is periodic.
      coefficients: its B-spline coefficients (``None`` when loading: the saved weight fills them).
    """

    def __init__(
        self,
        columns: Sequence[int],
        shape: Sequence[int],
        low: Sequence[float] | np.ndarray,
        spacing: Sequence[float] | np.ndarray,
        periodic: bool,
        coefficients: Any = None,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.columns, self.shape = [int(c) for c in columns], [int(s) for s in shape]
        self.low, self.spacing, self.periodic = [float(v) for v in low], [float(v) for v in spacing], bool(periodic)
        self.initial = None if coefficients is None else np.asarray(coefficients, dtype=float)

    @classmethod
    def of(cls, table: Tabulated, coords: Sequence[str], **kwargs) -> LevelSetFeature:
        """The feature ``|table|`` for a network whose inputs are ``coords``."""
        missing = [name for name in table.coords if name not in coords]
        if missing:
            raise ValueError(f"LevelSetFeature: the table's coordinates {missing} are not among the inputs {coords}.")
        columns = [list(coords).index(name) for name in table.coords]
        return cls(columns, table.values.shape, table.low, table.spacing, table.periodic, table.coefficients, **kwargs)

    def build(self, input_shape):
        initializer = "zeros" if self.initial is None else keras.initializers.Constant(self.initial)
        self.coefficients = self.add_weight(
            shape=tuple(self.shape), initializer=initializer, trainable=False, name="coefficients"
        )
        d = int(input_shape[-1])
        self.spread = keras.ops.convert_to_tensor(np.eye(d, d + 1), dtype=self.compute_dtype)
        self.last = keras.ops.convert_to_tensor(np.eye(d + 1)[-1:], dtype=self.compute_dtype)

    def call(self, x):
        columns = [x[:, c] for c in self.columns]
        level = spline_values(keras.ops.convert_to_tensor(self.coefficients), columns, self.low, self.spacing,
                              self.periodic)  # fmt: skip
        return keras.ops.matmul(x, self.spread) + keras.ops.abs(level)[:, None] * self.last

    def compute_output_shape(self, input_shape):
        return (*input_shape[:-1], input_shape[-1] + 1)

    def get_config(self):
        return {**super().get_config(), "columns": self.columns, "shape": self.shape, "low": self.low,
                "spacing": self.spacing, "periodic": self.periodic}  # fmt: skip
