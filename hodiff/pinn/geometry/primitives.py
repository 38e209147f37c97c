"""Primitive spatial shapes: boxes (:class:`Box`, :func:`Interval`, :func:`Rectangle`,
:func:`Hypercube`), balls (:class:`Hypersphere`, :class:`Disk`, :class:`Ball`) and :class:`Ellipse`.

Example:
  ```python
  from hodiff.pinn.geometry import Disk, Rectangle

  plate = Rectangle(("x", "y"), (-1, -1), (1, 1))
  assert plate.contains([[0.5, 0.5]]).all() and not Disk((0, 0), 0.3).contains([[0.5, 0.5]]).any()
  ```
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import tensorflow as tf
from scipy.special import gamma
from scipy.stats import norm

from hodiff.pinn.geometry.base import Geometry, Piece
from hodiff.pinn.geometry.distance import plane_adf, segment_adf
from hodiff.pinn.geometry.sampling import piece_choice, unit_samples

__all__ = ["Box", "Interval", "Rectangle", "Hypercube", "Hypersphere", "Disk", "Ball", "Sphere", "Ellipse"]


class Box(Geometry):
    """An axis-aligned box with named coordinates; ``time`` names the time coordinate, if any.

    Boundary pieces (faces) are named ``"<coord>_low"`` / ``"<coord>_high"``, and also ``"left"`` /
    ``"right"`` (first spatial coordinate), ``"bottom"`` / ``"top"`` (the second, in 2-D; the
    third in 3-D, where the second's are ``"front"`` / ``"back"``).

    Args:
      bounds: ``{name: (low, high)}`` in column order, e.g. ``{"x": (-1, 1), "t": (0, 1)}``.
      time: the name of the time coordinate, or ``None`` for a steady problem.
      parameters: names of parameter coordinates (network inputs without boundary).
      name: a name for the whole boundary.
    """

    def __init__(
        self,
        bounds: dict[str, tuple[float, float]],
        time: str | None = None,
        parameters: Sequence[str] = (),
        name: str | None = None,
    ):
        self.bounds = {n: (float(low), float(high)) for n, (low, high) in bounds.items()}
        for coord, (low, high) in self.bounds.items():
            if not high > low:
                raise ValueError(
                    f"Box: coordinate {coord!r} has bounds ({low}, {high}); the upper bound must be larger than "
                    f"the lower."
                )
        if time is not None and time not in self.bounds:
            raise ValueError(f"Box: time coordinate {time!r} is not one of the coordinates {tuple(self.bounds)}.")
        unknown = [p for p in parameters if p not in self.bounds or p == time]
        if unknown:
            raise ValueError(f"Box: parameters {unknown} are not non-time coordinates of {tuple(self.bounds)}.")
        self.time, self.parameters, self.name = time, tuple(parameters), name

    def __mul__(self, other: Geometry) -> Geometry:
        if not isinstance(other, Box):
            return super().__mul__(other)
        overlap = set(self.bounds) & set(other.bounds)
        if overlap:
            raise ValueError(f"Box product: coordinate names {sorted(overlap)} appear in both factors; rename one.")
        if self.time and other.time:
            raise ValueError("Box product: both factors have a time coordinate; a domain has at most one.")
        return Box(
            {**self.bounds, **other.bounds}, time=self.time or other.time, parameters=self.parameters + other.parameters
        )

    def __repr__(self) -> str:
        extra = f", parameters={self.parameters}" if self.parameters else ""
        return f"Box({self.bounds}, time={self.time!r}{extra})"

    def _scale(self, unit: np.ndarray, names: Sequence[str]) -> np.ndarray:
        low = np.array([self.bounds[n][0] for n in names])
        high = np.array([self.bounds[n][1] for n in names])
        return low + unit * (high - low)

    def _inside(self, xs: np.ndarray, tol: float) -> np.ndarray:
        low = np.array([self.bounds[c][0] for c in self.space])
        high = np.array([self.bounds[c][1] for c in self.space])
        return np.all((xs >= low - tol) & (xs <= high + tol), axis=1)

    def _face_names(self, index: int, side: int) -> tuple[str, ...]:
        coord = self.space[index]
        aliases = {1: [("left", "right")], 2: [("left", "right"), ("bottom", "top")]}
        aliases[3] = [("left", "right"), ("front", "back"), ("bottom", "top")]
        names = [f"{coord}_{('low', 'high')[side]}"]
        if len(self.space) in aliases:
            names.insert(0, aliases[len(self.space)][index][side])
        return tuple(names) + ((self.name,) if self.name else ())

    def _pieces(self) -> list[Piece]:
        space, pieces = self.space, []
        spans = {c: self.bounds[c][1] - self.bounds[c][0] for c in space}
        for index, coord in enumerate(space):
            others = [c for c in space if c != coord]
            for side in (0, 1):
                value = self.bounds[coord][side]

                def face_map(unit, index=index, value=value, side=side, others=others):
                    points = np.zeros((len(unit), len(space)))
                    normals = np.zeros_like(points)
                    for j, c in enumerate(others):
                        points[:, space.index(c)] = self.bounds[c][0] + unit[:, j] * spans[c]
                    points[:, index] = value
                    normals[:, index] = 1.0 if side else -1.0
                    return points, normals

                if len(space) == 2:
                    corners = np.zeros((2, 2))
                    corners[:, index] = value
                    other = 1 - index
                    corners[:, other] = self.bounds[space[other]]
                    adf, signed = segment_adf(corners[0], corners[1]), False
                else:
                    adf, signed = plane_adf(index, value, 1.0 if side == 0 else -1.0), True
                measure = float(np.prod([spans[c] for c in others])) if others else 1.0
                pieces.append(Piece(self._face_names(index, side), measure, len(others), face_map, adf, signed, self))
        return pieces

    def _space_interior(self, count: int, method: str, seed: int) -> np.ndarray:
        return self._scale(unit_samples(count, len(self.space), method, seed), self.space)

    def sample_interior(self, count: int, method: str = "sobol", seed: int = 0) -> np.ndarray:
        """``count`` points inside the box (all coordinates, time included): ``(count, d)``."""
        return self._scale(unit_samples(count, len(self.coords), method, seed), self.coords)

    def sample_boundary(
        self, count: int, method: str = "sobol", seed: int = 0, where: Any = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """``count`` points on the spatial faces (at all times) and their outward unit normals.

        Each face gets a share of the points proportional to its measure (a point for a 1-D
        interval's end, the time span for ``Interval * TimeDomain``), spread deterministically over
        the faces (two points on an interval: one at each end). ``where`` selects part of the
        boundary as in :meth:`Geometry.sample_boundary`.

        Returns:
          ``(points, normals)``, both ``(count, d)``; normals are zero in the time column.
        """
        if where is not None:
            return super().sample_boundary(count, method, seed, where)
        if not self.space:
            raise ValueError(
                "sample_boundary: the domain has no spatial coordinate, so no boundary; use sample_initial for t = t0."
            )
        faces = [(n, side) for n in self.space for side in (0, 1)]
        others = lambda name: [n for n in self.coords if n != name]
        measures = np.array([np.prod([np.subtract(*self.bounds[n][::-1]) for n in others(name)]) for name, _ in faces])
        choice = piece_choice(measures, 0, count)
        points = self._scale(unit_samples(count, len(self.coords), method, seed + 1), self.coords)
        normals = np.zeros_like(points)
        for index, (n, side) in enumerate(faces):
            rows = choice == index
            column = self.coords.index(n)
            points[rows, column] = self.bounds[n][side]
            normals[rows, column] = 1.0 if side else -1.0
        return points, normals

    def sample_initial(self, count: int, method: str = "sobol", seed: int = 0) -> np.ndarray:
        """``count`` points at the first time (``t = t0``), spread over space: ``(count, d)``."""
        if self.time is None:
            raise ValueError(
                "sample_initial: the domain has no time coordinate; build it as space * TimeDomain(...) for an "
                "initial condition."
            )
        points = self._scale(unit_samples(count, len(self.coords), method, seed), self.coords)
        points[:, self.coords.index(self.time)] = self.bounds[self.time][0]
        return points


def Interval(name: str, low: float, high: float) -> Box:
    """A 1-D spatial interval ``[low, high]`` named ``name`` (pieces ``"left"``, ``"right"``)."""
    return Box({name: (low, high)})


def Rectangle(
    names: tuple[str, str], low: tuple[float, float], high: tuple[float, float], name: str | None = None
) -> Box:
    """A 2-D spatial rectangle, e.g. ``Rectangle(("x", "y"), (0, 0), (1, 1))`` (pieces left/right/bottom/top)."""
    return Box({names[0]: (low[0], high[0]), names[1]: (low[1], high[1])}, name=name)


def Hypercube(
    low: Sequence[float], high: Sequence[float], names: Sequence[str] | None = None, name: str | None = None
) -> Box:
    """An axis-aligned box in any dimension; ``names`` default ``x1 .. xd``."""
    names = tuple(names) if names is not None else tuple(f"x{i + 1}" for i in range(len(low)))
    if not len(names) == len(low) == len(high):
        raise ValueError(
            f"Hypercube: low, high and names must have the same length, got {len(low)}, {len(high)}, {len(names)}."
        )
    return Box({n: (lo, hi) for n, lo, hi in zip(names, low, high)}, name=name)


class Shape(Geometry):
    """A primitive spatial shape (no time or parameter axes)."""

    def __init__(self, names: Sequence[str], low: np.ndarray, high: np.ndarray, name: str | None):
        names = tuple(names)
        if len(set(names)) != len(names):
            raise ValueError(f"{type(self).__name__}: coordinate names {names} repeat; give distinct names.")
        self.bounds = {c: (float(lo), float(hi)) for c, lo, hi in zip(names, low, high)}
        self.name = name

    def _named(self, *names: str) -> tuple[str, ...]:
        return names + ((self.name,) if self.name else ())


class Hypersphere(Shape):
    """A ball ``|x - center| <= radius`` in any dimension (names default ``x1 .. xd``).

    Interior and boundary points are exact maps of the unit cube (uniform in volume / area).
    Its boundary is one piece, named ``name``.

    Args:
      center: the centre, one number per coordinate.
      radius: > 0.
      names: the coordinate names (default ``x1 .. xd``).
      name: a name for the boundary sphere (for ``where=``).
    """

    def __init__(
        self, center: Sequence[float], radius: float, names: Sequence[str] | None = None, name: str | None = None
    ):
        self.center = np.asarray(center, dtype=float).reshape(-1)
        self.radius = float(radius)
        if not self.radius > 0:
            raise ValueError(f"{type(self).__name__}: radius must be > 0, got {radius}.")
        names = tuple(names) if names is not None else tuple(f"x{i + 1}" for i in range(len(self.center)))
        if len(names) != len(self.center):
            raise ValueError(
                f"{type(self).__name__}: {len(names)} coordinate names {names} for a {len(self.center)}-D center; "
                "give one name per coordinate."
            )
        super().__init__(names, self.center - self.radius, self.center + self.radius, name)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.center.tolist()}, {self.radius}, names={self.coords})"

    def _inside(self, xs, tol):
        return np.linalg.norm(xs - self.center, axis=1) <= self.radius + tol

    def _directions(self, unit: np.ndarray) -> np.ndarray:
        d = len(self.center)
        if d == 1:
            return np.where(unit[:, :1] < 0.5, -1.0, 1.0)
        if d == 2:
            angle = 2 * np.pi * unit[:, 0]
            return np.stack([np.cos(angle), np.sin(angle)], axis=1)
        if d == 3:
            z, angle = 1 - 2 * unit[:, 0], 2 * np.pi * unit[:, 1]
            rho = np.sqrt(np.clip(1 - z**2, 0, None))
            return np.stack([rho * np.cos(angle), rho * np.sin(angle), z], axis=1)
        gauss = norm.ppf(np.clip(unit[:, :d], 1e-12, 1 - 1e-12))
        return gauss / np.linalg.norm(gauss, axis=1, keepdims=True)

    def _direction_dimension(self) -> int:
        d = len(self.center)
        return d - 1 if d in (2, 3) else d

    def _pieces(self):
        d, r = len(self.center), self.radius
        area = 2 * math.pi ** (d / 2) / gamma(d / 2) * r ** (d - 1)

        def sphere_map(unit):
            directions = self._directions(unit)
            return self.center + r * directions, directions

        def adf(cols):
            square = sum(tf.square(c - centre) for c, centre in zip(cols, self.center))
            return (r**2 - square) / (2 * r)

        return [Piece(self._named(), float(area), self._direction_dimension(), sphere_map, adf, True, self)]

    def _space_interior(self, count, method, seed):
        d = len(self.center)
        unit = unit_samples(count, self._direction_dimension() + 1, method, seed)
        radius = self.radius * unit[:, -1] ** (1 / d)
        return self.center + radius[:, None] * self._directions(unit[:, :-1])


class Disk(Hypersphere):
    """The disk ``|(x, y) - center| <= radius`` (boundary piece named ``name``).

    Args:
      center: ``(cx, cy)``.
      radius: > 0.
      names: the two coordinate names.
      name: a name for the boundary circle (for ``where=``).

    Example:
      ```python
      from hodiff.pinn import Disk

      disk = Disk((0.0, 0.0), 2.0, name="rim")
      points, normals = disk.sample_boundary(8)
      assert disk.boundary_names == ("rim",) and abs((points * normals).sum(axis=1) - 2.0).max() < 1e-12
      ```
    """

    def __init__(
        self, center: Sequence[float], radius: float, names: Sequence[str] = ("x", "y"), name: str | None = None
    ):
        super().__init__(center, radius, names, name)


class Ball(Hypersphere):
    """The 3-D ball ``|(x, y, z) - center| <= radius``; its boundary is the sphere (one piece, ``name``)."""

    def __init__(
        self, center: Sequence[float], radius: float, names: Sequence[str] = ("x", "y", "z"), name: str | None = None
    ):
        super().__init__(center, radius, names, name)


Sphere = Ball
"""Another name for :class:`Ball`: the solid 3-D ball, whose boundary is the sphere surface."""


class Ellipse(Shape):
    """The axis-aligned ellipse ``((x - cx) / a)^2 + ((y - cy) / b)^2 <= 1``; ``semi_axes = (a, b)``.

    Boundary points are uniform in arc length (a tabulated arc-length map); the distance function
    is ``f / sqrt(f^2 + |grad f|^2)`` with ``f = 1 - ((x - cx) / a)^2 - ((y - cy) / b)^2``.

    Args:
      center: ``(cx, cy)``.
      semi_axes: ``(a, b)``, both > 0.
      names: the two coordinate names.
      name: a name for the boundary (for ``where=``).
    """

    def __init__(
        self,
        center: Sequence[float],
        semi_axes: Sequence[float],
        names: Sequence[str] = ("x", "y"),
        name: str | None = None,
    ):
        self.center = np.asarray(center, dtype=float)
        self.axes = np.asarray(semi_axes, dtype=float)
        if self.center.shape != (2,) or self.axes.shape != (2,) or not np.all(self.axes > 0):
            raise ValueError(
                f"Ellipse: center must be 2 numbers and semi_axes 2 positive numbers, got {center}, {semi_axes}."
            )
        super().__init__(names, self.center - self.axes, self.center + self.axes, name)
        theta = np.linspace(0, 2 * np.pi, 4097)
        speed = np.hypot(self.axes[0] * np.sin(theta), self.axes[1] * np.cos(theta))
        self._arc = np.concatenate([[0.0], np.cumsum((speed[1:] + speed[:-1]) / 2 * np.diff(theta))])
        self._theta = theta

    def __repr__(self) -> str:
        return f"Ellipse({self.center.tolist()}, {self.axes.tolist()}, names={self.coords})"

    def _inside(self, xs, tol):
        scaled = (xs - self.center) / (self.axes + tol)
        return np.sum(scaled**2, axis=1) <= 1.0

    def _pieces(self):
        (a, b), c = self.axes, self.center

        def ellipse_map(unit):
            theta = np.interp(unit[:, 0] * self._arc[-1], self._arc, self._theta)
            points = c + np.stack([a * np.cos(theta), b * np.sin(theta)], axis=1)
            normals = np.stack([np.cos(theta) / a, np.sin(theta) / b], axis=1)
            return points, normals / np.linalg.norm(normals, axis=1, keepdims=True)

        def adf(cols):
            u, v = (cols[0] - c[0]) / a, (cols[1] - c[1]) / b
            f = 1 - tf.square(u) - tf.square(v)
            grad_square = tf.square(2 * u / a) + tf.square(2 * v / b)
            return f / tf.sqrt(tf.square(f) + grad_square)

        return [Piece(self._named(), float(self._arc[-1]), 1, ellipse_map, adf, True, self)]
