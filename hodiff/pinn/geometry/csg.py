"""Constructive solid geometry: :class:`CSG`, the union, difference or intersection of two spatial
geometries (``a | b``, ``a - b``, ``a & b``).

Example:
  ```python
  from hodiff.pinn.geometry import Disk, Rectangle

  plate = Rectangle(("x", "y"), (-1, -1), (1, 1), name="outer") - Disk((0, 0), 0.3, name="hole")
  hole, normals = plate.sample_boundary(64, where="hole")  # normals point into the hole
  assert not plate.contains([[0.0, 0.0]]).any() and (hole[:, 0] * normals[:, 0] <= 1e-9).all()
  ```
"""

from __future__ import annotations

import numpy as np

from hodiff.pinn.geometry.axes import Product
from hodiff.pinn.geometry.base import EPS, Geometry, Piece
from hodiff.pinn.geometry.point_cloud import PointCloud
from hodiff.pinn.geometry.primitives import Box
from hodiff.pinn.geometry.sampling import unit_samples

__all__ = ["CSG"]


class CSG(Geometry):
    """A union, difference or intersection of two spatial geometries (built with ``|``, ``-``, ``&``).

    Membership is exact; interior points come by rejection from the bounding box; boundary points
    are drawn on every primitive's boundary in proportion to its measure and kept where they lie on
    the result's boundary (a point ``p`` with normal ``n`` is kept when ``p - eps n`` is inside and
    ``p + eps n`` outside), so they are uniform in arc length / area overall. The boundary of a
    subtracted operand carries flipped normals (pointing into the hole).
    """

    def __init__(self, operation: str, first: Geometry, second: Geometry):
        for operand in (first, second):
            if not isinstance(operand, Geometry) or isinstance(operand, (Product, PointCloud)) or operand.extras:
                raise ValueError(
                    f"CSG: operand {operand!r} must be a spatial geometry without time or parameter axes; combine "
                    "shapes first, then multiply by TimeDomain(...) / Parameter(...)."
                )
        if first.coords != second.coords:
            raise ValueError(
                f"CSG: operands have coordinates {first.coords} and {second.coords}; they must match (same names, "
                "same order). Pass names=... to the shapes."
            )
        self.operation, self.first, self.second, self.name = operation, first, second, None
        if operation == "union":
            low, high = np.minimum(first.low, second.low), np.maximum(first.high, second.high)
        elif operation == "intersection":
            low, high = np.maximum(first.low, second.low), np.minimum(first.high, second.high)
            if np.any(high <= low):
                raise ValueError(
                    f"CSG: the intersection of {first!r} and {second!r} is empty (their bounding boxes do not overlap)."
                )
        else:
            low, high = first.low, first.high
        self.bounds = {c: (float(lo), float(hi)) for c, lo, hi in zip(first.coords, low, high)}

    def __repr__(self) -> str:
        symbol = {"union": "|", "difference": "-", "intersection": "&"}[self.operation]
        return f"({self.first!r} {symbol} {self.second!r})"

    def _inside(self, xs, tol):
        a = self.first._inside(xs, tol)
        if self.operation == "union":
            return a | self.second._inside(xs, tol)
        if self.operation == "intersection":
            return a & self.second._inside(xs, tol)
        return a & ~self.second._inside(xs, -tol)

    def _leaves(self):
        return self.first._leaves() + self.second._leaves()

    def _pieces(self):
        flip = -1.0 if self.operation == "difference" else 1.0
        second = []
        for piece in self.second._pieces():
            if flip < 0:
                piece = Piece(
                    piece.names,
                    piece.measure,
                    piece.dimension,
                    _flipped(piece.map),
                    piece.adf,
                    piece.signed,
                    piece.leaf,
                    -piece.sign,
                )
            second.append(piece)
        return self.first._pieces() + second

    def _keep_boundary(self, xs, normals, piece, pieces):
        step = EPS * self._size
        keep = self._inside(xs - step * normals, 0.0) & ~self._inside(xs + step * normals, 0.0)
        # a piece lying on an earlier piece being sampled (coincident edges) is drawn once: by the earlier piece
        for index in np.unique(piece[keep]):
            rows = np.flatnonzero(keep & (piece == index))
            for earlier in pieces[:index]:
                if earlier.leaf is pieces[index].leaf:
                    continue
                inside = earlier.leaf._inside(xs[rows] - earlier.sign * step * normals[rows], 0.0)
                outside = ~earlier.leaf._inside(xs[rows] + earlier.sign * step * normals[rows], 0.0)
                keep[rows[inside & outside]] = False
        return keep

    def _distance_pieces(self, where):
        pieces = super()._distance_pieces(where)
        key = tuple(id(p.leaf) for p in pieces) + tuple(p.names for p in pieces)
        checked = self.__dict__.setdefault("_checked", set())
        if key in checked:
            return pieces
        # the R-equivalence vanishes on each piece's whole zero set, so no piece may cross the interior
        for piece in pieces:
            if isinstance(piece.leaf, Box) and len(piece.leaf.space) != 2:
                raise ValueError(
                    f"distance: {piece.leaf!r} is a {len(piece.leaf.space)}-D box operand of {self!r}; its faces' "
                    "distance functions are whole planes (points in 1-D), which cross the domain's interior or take "
                    "the wrong sign in a difference. Select the other operands' boundaries with where=..., and "
                    "impose the condition on this box's faces as a loss term (Dirichlet(..., where=...))."
                )
        step = EPS * self._size
        for piece in pieces:
            unit = unit_samples(256, max(piece.dimension, 1), "sobol", 0)[:, : piece.dimension]
            xs, ns = piece.map(unit)
            crossing = self._inside(xs - step * ns, 0.0) & self._inside(xs + step * ns, 0.0)
            if crossing.any():
                raise ValueError(
                    f"distance: the boundary of {piece.leaf!r} passes through the interior of {self!r} (as in a union "
                    "of overlapping shapes), where its distance function would vanish; build the domain as a Polygon "
                    "or from differences and intersections."
                )
        checked.add(key)
        return pieces


def _flipped(mapping):
    def flipped(unit):
        points, normals = mapping(unit)
        return points, -normals

    return flipped
