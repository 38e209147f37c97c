"""Simple polygons (:class:`Polygon`, :class:`Triangle`): membership, boundary edges and their
trimmed-segment distance functions.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from hodiff.pinn.geometry.base import Piece
from hodiff.pinn.geometry.distance import segment_adf
from hodiff.pinn.geometry.primitives import Shape

__all__ = ["Polygon", "Triangle"]


def _segments_cross(p1, p2, q1, q2) -> bool:
    """Whether closed segments p1p2 and q1q2 intersect."""

    def orient(a, b, c):
        value = (b[0] - a[0]) * (c[1] - a[1]) - (b[1] - a[1]) * (c[0] - a[0])
        return 0 if abs(value) < 1e-12 else (1 if value > 0 else -1)

    def on(a, b, c):
        return (
            min(a[0], b[0]) - 1e-12 <= c[0] <= max(a[0], b[0]) + 1e-12
            and min(a[1], b[1]) - 1e-12 <= c[1] <= max(a[1], b[1]) + 1e-12
        )

    o1, o2, o3, o4 = orient(p1, p2, q1), orient(p1, p2, q2), orient(q1, q2, p1), orient(q1, q2, p2)
    if o1 != o2 and o3 != o4:
        return True
    return (
        (o1 == 0 and on(p1, p2, q1))
        or (o2 == 0 and on(p1, p2, q2))
        or (o3 == 0 and on(q1, q2, p1))
        or (o4 == 0 and on(q1, q2, p2))
    )


class Polygon(Shape):
    """A simple polygon (vertices in either orientation), e.g. an L-shape.

    Edge ``i`` runs from ``vertices[i]`` to ``vertices[i + 1]`` and is named ``"edge<i>"`` (and
    ``name``). A polygon that is not simple (fewer than 3 vertices, repeated vertices, zero area,
    crossing or overlapping edges) raises ``ValueError``.

    Args:
      vertices: ``(n, 2)`` corners in order around the boundary.
      names: the two coordinate names.
      name: a name for the whole boundary.

    Example:
      ```python
      from hodiff.pinn import Polygon

      lshape = Polygon([(0, 0), (1, 0), (1, -1), (-1, -1), (-1, 1), (0, 1)])
      assert lshape.area == 3.0 and lshape.contains([[-0.5, 0.5], [0.5, 0.5]]).tolist() == [True, False]
      ```
    """

    def __init__(self, vertices: Sequence[Sequence[float]], names: Sequence[str] = ("x", "y"), name: str | None = None):
        kind = type(self).__name__
        v = np.asarray(vertices, dtype=float)
        if v.ndim != 2 or v.shape[1] != 2 or len(v) < 3:
            raise ValueError(f"{kind}: vertices must be 3 or more (x, y) pairs, got shape {v.shape}.")
        n = len(v)
        scale = float(np.ptp(v, axis=0).max())
        for i in range(n):
            for j in range(i + 1, n):
                if np.linalg.norm(v[i] - v[j]) <= 1e-12 * max(scale, 1e-300):
                    raise ValueError(
                        f"{kind}: vertices {i} and {j} repeat {v[i].tolist()}; a simple polygon visits "
                        "each vertex once."
                    )
        for i in range(n):
            for j in range(i + 1, n):
                adjacent = j == i + 1 or (i == 0 and j == n - 1)
                a1, a2, b1, b2 = v[i], v[(i + 1) % n], v[j], v[(j + 1) % n]
                if adjacent:
                    # adjacent edges share one vertex; they must not fold back onto each other
                    shared = a2 if j == i + 1 else a1
                    u, w = (a1 if j == i + 1 else a2) - shared, (b2 if j == i + 1 else b1) - shared
                    if abs(u[0] * w[1] - u[1] * w[0]) < 1e-12 * scale**2 and np.dot(u, w) > 0:
                        raise ValueError(
                            f"{kind}: edges {i} and {j} overlap (the boundary folds back); the polygon is not simple."
                        )
                elif _segments_cross(a1, a2, b1, b2):
                    raise ValueError(
                        f"{kind}: edges {i} and {j} cross; the polygon is not simple (self-intersecting). "
                        "List the vertices in order around the boundary."
                    )
        area = 0.5 * float(np.sum(v[:, 0] * np.roll(v[:, 1], -1) - np.roll(v[:, 0], -1) * v[:, 1]))
        if abs(area) <= 1e-12 * scale**2:
            raise ValueError(f"{kind}: the vertices {v.tolist()} enclose zero area; give a polygon with an inside.")
        self.vertices, self.area = v, abs(area)
        self._orientation = 1.0 if area > 0 else -1.0
        super().__init__(names, v.min(axis=0), v.max(axis=0), name)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.vertices.tolist()}, names={self.coords})"

    def _inside(self, xs, tol):
        a, b = self.vertices, np.roll(self.vertices, -1, axis=0)
        x, y = xs[:, :1], xs[:, 1:2]
        crosses = ((a[:, 1] > y) != (b[:, 1] > y)) & (
            x < (b[:, 0] - a[:, 0]) * (y - a[:, 1]) / np.where(b[:, 1] == a[:, 1], 1, b[:, 1] - a[:, 1]) + a[:, 0]
        )
        inside = np.sum(crosses, axis=1) % 2 == 1
        edge = b - a
        t = np.clip(((x - a[:, 0]) * edge[:, 0] + (y - a[:, 1]) * edge[:, 1]) / np.sum(edge**2, axis=1), 0, 1)
        gap = np.min(np.hypot(x - a[:, 0] - t * edge[:, 0], y - a[:, 1] - t * edge[:, 1]), axis=1)
        return (inside | (gap <= tol)) if tol >= 0 else (inside & (gap > -tol))

    def _pieces(self):
        pieces, n = [], len(self.vertices)
        for i in range(n):
            a, b = self.vertices[i], self.vertices[(i + 1) % n]
            length = float(np.hypot(*(b - a)))
            normal = self._orientation * np.array([b[1] - a[1], a[0] - b[0]]) / length

            def edge_map(unit, a=a, b=b, normal=normal):
                return a + unit[:, :1] * (b - a), np.tile(normal, (len(unit), 1))

            ends = (a, b) if self._orientation > 0 else (b, a)
            pieces.append(Piece(self._named(f"edge{i}"), length, 1, edge_map, segment_adf(*ends), False, self))
        return pieces


class Triangle(Polygon):
    """The triangle with corners ``a``, ``b``, ``c`` (edges ``"edge0"`` ab, ``"edge1"`` bc, ``"edge2"`` ca)."""

    def __init__(self, a, b, c, names: Sequence[str] = ("x", "y"), name: str | None = None):
        super().__init__([a, b, c], names, name)
