"""Domains and point sampling: intervals, rectangles and boxes, a time axis, and their product.

A :class:`Box` is an axis-aligned domain with named coordinates, one of which may be time.
Interior, boundary (spatial faces, at all times) and initial (the first time) point sets are
sampled with numpy's generator (``"random"``) or ``scipy.stats.qmc`` (``"lhs"``, ``"sobol"``).

Example:
  ```python
  from hodiff.pinn.geometry import Interval, TimeDomain

  domain = Interval("x", -1.0, 1.0) * TimeDomain("t", 0.0, 1.0)
  interior = domain.sample_interior(1024, method="sobol", seed=0)     # (1024, 2): columns x, t
  boundary, normals = domain.sample_boundary(80, seed=1)             # x = -1 or 1
  initial = domain.sample_initial(160, seed=2)                        # t = 0
  ```
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from scipy.stats import qmc

__all__ = ["SAMPLING_METHODS", "Box", "Interval", "Rectangle", "TimeDomain", "unit_samples"]

SAMPLING_METHODS = ("random", "lhs", "sobol")


def unit_samples(count: int, dimension: int, method: str, seed: int) -> np.ndarray:
    """``count`` points in the unit cube ``[0, 1]^dimension``.

    Args:
      count: number of points, >= 1.
      dimension: number of coordinates (0 gives an empty ``(count, 0)`` array).
      method: ``"random"`` (uniform), ``"lhs"`` (Latin hypercube) or ``"sobol"`` (scrambled
        Sobol; a power of two keeps its balance properties).
      seed: an int; the same seed gives the same points.

    Returns:
      Array of shape ``(count, dimension)``, float64.
    """
    if method not in SAMPLING_METHODS:
        raise ValueError(
            f"sampling method {method!r} is not one of {SAMPLING_METHODS}; use 'sobol' or 'lhs' for even "
            f"coverage, 'random' for i.i.d. points."
        )
    if not isinstance(count, (int, np.integer)) or count < 1:
        raise ValueError(
            f"the number of points must be an int >= 1, got {count!r}; a condition or domain with no points has "
            f"nothing to train on."
        )
    if dimension == 0:
        return np.zeros((count, 0))
    if method == "random":
        return np.random.default_rng(seed).uniform(size=(count, dimension))
    if method == "lhs":
        return qmc.LatinHypercube(d=dimension, seed=seed).random(count)
    sampler = qmc.Sobol(d=dimension, scramble=True, seed=seed)
    exponent = int(np.ceil(np.log2(count)))
    return sampler.random_base2(exponent)[:count]


class Box:
    """An axis-aligned box with named coordinates; ``time`` names the time coordinate, if any.

    Args:
      bounds: ``{name: (low, high)}`` in column order, e.g. ``{"x": (-1, 1), "t": (0, 1)}``.
      time: the name of the time coordinate, or ``None`` for a steady problem.
    """

    def __init__(self, bounds: dict[str, tuple[float, float]], time: str | None = None):
        self.bounds = {name: (float(low), float(high)) for name, (low, high) in bounds.items()}
        for name, (low, high) in self.bounds.items():
            if not high > low:
                raise ValueError(
                    f"Box: coordinate {name!r} has bounds ({low}, {high}); the upper bound must be larger than "
                    f"the lower."
                )
        if time is not None and time not in self.bounds:
            raise ValueError(f"Box: time coordinate {time!r} is not one of the coordinates {tuple(self.bounds)}.")
        self.time = time

    @property
    def coords(self) -> tuple[str, ...]:
        return tuple(self.bounds)

    @property
    def space(self) -> tuple[str, ...]:
        return tuple(name for name in self.bounds if name != self.time)

    @property
    def low(self) -> np.ndarray:
        return np.array([low for low, _ in self.bounds.values()])

    @property
    def high(self) -> np.ndarray:
        return np.array([high for _, high in self.bounds.values()])

    def __mul__(self, other: Box) -> Box:
        overlap = set(self.bounds) & set(other.bounds)
        if overlap:
            raise ValueError(f"Box product: coordinate names {sorted(overlap)} appear in both factors; rename one.")
        if self.time and other.time:
            raise ValueError("Box product: both factors have a time coordinate; a domain has at most one.")
        return Box({**self.bounds, **other.bounds}, time=self.time or other.time)

    def __repr__(self) -> str:
        return f"Box({self.bounds}, time={self.time!r})"

    def _scale(self, unit: np.ndarray, names: Sequence[str]) -> np.ndarray:
        low = np.array([self.bounds[n][0] for n in names])
        high = np.array([self.bounds[n][1] for n in names])
        return low + unit * (high - low)

    def sample_interior(self, count: int, method: str = "sobol", seed: int = 0) -> np.ndarray:
        """``count`` points inside the box (all coordinates, time included): ``(count, d)``."""
        return self._scale(unit_samples(count, len(self.coords), method, seed), self.coords)

    def sample_boundary(self, count: int, method: str = "sobol", seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
        """``count`` points on the spatial faces (at all times) and their outward unit normals.

        Faces are chosen with probability proportional to their measure (a point for a 1-D
        interval's end, the time span for ``Interval * TimeDomain``).

        Returns:
          ``(points, normals)``, both ``(count, d)``; normals are zero in the time column.
        """
        if not self.space:
            raise ValueError(
                "sample_boundary: the domain has no spatial coordinate, so no boundary; use sample_initial for t = t0."
            )
        faces = [(name, side) for name in self.space for side in (0, 1)]
        others = lambda name: [n for n in self.coords if n != name]
        measures = np.array([np.prod([np.subtract(*self.bounds[n][::-1]) for n in others(name)]) for name, _ in faces])
        choice = np.random.default_rng(seed).choice(len(faces), size=count, p=measures / measures.sum())
        points = self._scale(unit_samples(count, len(self.coords), method, seed + 1), self.coords)
        normals = np.zeros_like(points)
        for index, (name, side) in enumerate(faces):
            rows = choice == index
            column = self.coords.index(name)
            points[rows, column] = self.bounds[name][side]
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

    def grid(
        self, counts: dict[str, int] | None = None, **arrays: np.ndarray
    ) -> tuple[dict[str, np.ndarray], np.ndarray]:
        """A tensor-product grid: named 1-D arrays and the flattened points ``(prod, d)``.

        Args:
          counts: points per coordinate (evenly spaced, ends included).
          **arrays: explicit 1-D coordinate arrays, which take precedence over ``counts``.

        Returns:
          ``(axes, points)``: ``axes[name]`` is the 1-D array of that coordinate; ``points``
          lists the grid with the first coordinate varying slowest (``indexing="ij"``).
        """
        axes = {}
        for name, (low, high) in self.bounds.items():
            axes[name] = (
                np.asarray(arrays[name], dtype=float)
                if name in arrays
                else np.linspace(low, high, (counts or {}).get(name, 64))
            )
        mesh = np.meshgrid(*axes.values(), indexing="ij")
        return axes, np.stack([m.ravel() for m in mesh], axis=1)


def Interval(name: str, low: float, high: float) -> Box:
    """A 1-D spatial interval ``[low, high]`` named ``name``."""
    return Box({name: (low, high)})


def Rectangle(names: tuple[str, str], low: tuple[float, float], high: tuple[float, float]) -> Box:
    """A 2-D spatial rectangle, e.g. ``Rectangle(("x", "y"), (0, 0), (1, 1))``."""
    return Box({names[0]: (low[0], high[0]), names[1]: (low[1], high[1])})


def TimeDomain(name: str, start: float, end: float) -> Box:
    """A time interval; multiply a spatial box by it for a time-dependent problem."""
    return Box({name: (start, end)}, time=name)
