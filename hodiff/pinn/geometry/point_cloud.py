"""Domains given by points: :class:`PointCloud` (interior points, boundary points and normals
from a mesh made elsewhere).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from scipy.spatial import cKDTree

from hodiff.pinn.geometry.base import Geometry
from hodiff.pinn.geometry.sampling import unit_samples

__all__ = ["PointCloud"]


class PointCloud(Geometry):
    """A geometry given by points (a mesh made elsewhere): interior points, boundary points, normals.

    Sampling draws distinct rows at random (``method`` is ignored; ``seed`` picks them); asking for
    more points than the cloud has is a ``ValueError``. ``contains`` is true within the cloud's
    resolution (the largest nearest-neighbour spacing) of a cloud point; ``distance`` is not
    available (no analytic boundary).

    Args:
      interior: ``(N, d)`` interior points.
      boundary: ``(M, d)`` boundary points, or ``None``.
      normals: ``(M, d)`` outward unit normals at ``boundary`` (zeros when omitted).
      names: the coordinate names (default ``x``, ``y``, ``z`` up to 3-D, else ``x1 .. xd``).
      labels: ``(M,)`` piece names of the boundary points (for ``where="name"``), or ``None``.
    """

    def __init__(
        self,
        interior: Any,
        boundary: Any = None,
        normals: Any = None,
        names: Sequence[str] | None = None,
        labels: Any = None,
    ):
        interior = np.asarray(interior, dtype=float)
        if interior.ndim != 2 or len(interior) == 0:
            raise ValueError(f"PointCloud: interior must be a non-empty (N, d) array, got shape {interior.shape}.")
        d = interior.shape[1]
        names = (
            tuple(names)
            if names is not None
            else (("x", "y", "z")[:d] if d <= 3 else tuple(f"x{i + 1}" for i in range(d)))
        )
        if len(names) != d:
            raise ValueError(f"PointCloud: {len(names)} names {names} for {d}-column points.")
        self.interior = interior
        self.boundary = np.zeros((0, d)) if boundary is None else np.asarray(boundary, dtype=float)
        if self.boundary.ndim != 2 or self.boundary.shape[1] != d:
            raise ValueError(f"PointCloud: boundary must be (M, {d}), got shape {self.boundary.shape}.")
        self.normals = np.zeros_like(self.boundary) if normals is None else np.asarray(normals, dtype=float)
        if self.normals.shape != self.boundary.shape:
            raise ValueError(
                f"PointCloud: normals must have the boundary's shape {self.boundary.shape}, got {self.normals.shape}."
            )
        self.labels = None if labels is None else np.asarray(labels, dtype=str)
        if self.labels is not None and self.labels.shape != (len(self.boundary),):
            raise ValueError(f"PointCloud: labels must have one name per boundary point, ({len(self.boundary)},).")
        everything = np.concatenate([self.interior, self.boundary])
        self.bounds = {c: (float(lo), float(hi)) for c, lo, hi in zip(names, everything.min(0), everything.max(0))}
        self.name = None
        self._tree = cKDTree(everything)
        spacing = self._tree.query(everything, k=2)[0][:, 1] if len(everything) > 1 else np.ones(1)
        self.resolution = float(spacing.max())

    def __repr__(self) -> str:
        return f"PointCloud({len(self.interior)} interior, {len(self.boundary)} boundary, names={self.coords})"

    @property
    def boundary_names(self) -> tuple[str, ...]:
        return () if self.labels is None else tuple(dict.fromkeys(self.labels.tolist()))

    def _inside(self, xs, tol):
        return self._tree.query(xs)[0] <= self.resolution + max(tol, 0.0)

    def _rows(self, available: int, count: int, seed: int, what: str) -> np.ndarray:
        unit_samples(count, 0, "random", seed)
        if count > available:
            raise ValueError(
                f"PointCloud: {count} {what} points asked for, but the cloud has {available}; ask for at "
                "most that many or give a denser cloud."
            )
        return np.random.default_rng(seed).permutation(available)[:count]

    def sample_interior(self, count: int, method: str = "sobol", seed: int = 0) -> np.ndarray:
        """``count`` distinct interior rows, drawn at random."""
        return self.interior[self._rows(len(self.interior), count, seed, "interior")]

    def sample_boundary(self, count: int, method: str = "sobol", seed: int = 0, where: Any = None):
        """``count`` distinct boundary rows (and their normals) of the part ``where`` selects."""
        if where is None:
            mask = np.ones(len(self.boundary), dtype=bool)
        elif isinstance(where, (str, list, tuple)):
            names = [where] if isinstance(where, str) else list(where)
            unknown = [n for n in names if n not in self.boundary_names]
            if unknown or not names:
                raise ValueError(
                    f"PointCloud.sample_boundary: where={where!r} is not a boundary label or a list of them; the "
                    f"labels are {self.boundary_names}."
                )
            mask = np.isin(np.asarray(self.labels), names)
        else:
            mask = self._where_mask(where, self.boundary, self.normals)
        if not mask.any():
            raise ValueError(f"PointCloud.sample_boundary: where={where!r} selects no boundary points.")
        rows = np.flatnonzero(mask)[self._rows(int(mask.sum()), count, seed, "boundary")]
        return self.boundary[rows], self.normals[rows]

    def _distance_pieces(self, where):
        raise ValueError(
            "PointCloud.distance: a point cloud has no analytic boundary, so no distance function; impose the "
            "boundary condition as a loss term instead."
        )

    def _pieces(self):
        return []

    def boundary_measure(self, where: Any = None, count: int = 1 << 16, seed: int = 0) -> float:
        """Refused: a point cloud's boundary is a set of points, with no length or area."""
        raise ValueError(
            "PointCloud.boundary_measure: a point cloud has no analytic boundary, so no length or area; integrate "
            "over a geometry built from shapes (Polygon, CSG) instead."
        )

    def _space_interior(self, count, method, seed):
        return self.sample_interior(count, method, seed)
