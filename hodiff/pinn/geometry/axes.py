"""Axes without boundary: :func:`TimeDomain` and :func:`Parameter`, and the product of a spatial
geometry with them (``space * TimeDomain(...) * Parameter(...)``).

Example:
  ```python
  from hodiff.pinn.geometry import Disk, TimeDomain

  domain = Disk((0, 0), 1.0) * TimeDomain("t", 0.0, 2.0)
  assert domain.coords == ("x", "y", "t") and domain.time == "t"
  ```
"""

from __future__ import annotations

from typing import Any

import numpy as np

from hodiff.pinn.geometry.base import Geometry
from hodiff.pinn.geometry.point_cloud import PointCloud
from hodiff.pinn.geometry.primitives import Box
from hodiff.pinn.geometry.sampling import unit_samples

__all__ = ["TimeDomain", "Parameter"]


def TimeDomain(name: str, start: float, end: float) -> Box:
    """A time interval; multiply a spatial domain by it for a time-dependent problem."""
    return Box({name: (start, end)}, time=name)


def Parameter(name: str, low: float, high: float) -> Box:
    """A parameter axis ``[low, high]``: a network input without boundary (parametric PDEs).

    Boundary points are sampled at all parameter values (like time), with zero normal there.

    Example:
      ```python
      from hodiff.pinn import Disk, Parameter

      domain = Disk((0, 0), 1.0) * Parameter("k", 1.0, 4.0)
      points, normals = domain.sample_boundary(16)
      assert domain.parameters == ("k",) and (normals[:, 2] == 0).all()
      ```
    """
    return Box({name: (low, high)}, parameters=(name,))


def product(first: Geometry, second: Geometry) -> Geometry:
    """``space * TimeDomain`` / ``space * Parameter`` for any spatial geometry."""
    if isinstance(first, Box) and isinstance(second, Box):
        return first * second
    spatial, extra = (first, second) if isinstance(second, Box) and not second.space else (second, first)
    if not (isinstance(extra, Box) and not extra.space):
        raise ValueError(
            f"product: {first!r} * {second!r}: a non-box geometry can only be multiplied by TimeDomain(...) or "
            "Parameter(...) factors; combine spatial shapes with |, - and &."
        )
    overlap = set(spatial.coords) & set(extra.coords)
    if overlap:
        raise ValueError(f"product: coordinate names {sorted(overlap)} appear in both factors; rename one.")
    if spatial.time and extra.time:
        raise ValueError("product: both factors have a time coordinate; a domain has at most one.")
    return Product(spatial, extra, order=first.coords + second.coords)


class Product(Geometry):
    """A spatial geometry times time / parameter axes."""

    def __init__(self, spatial: Geometry, extra: Box, order: tuple[str, ...]):
        self.inner: Geometry = spatial.inner if isinstance(spatial, Product) else spatial
        known = {**spatial.bounds, **extra.bounds}
        self.bounds = {c: known[c] for c in order}
        self.time = spatial.time or extra.time
        self.parameters = spatial.parameters + extra.parameters
        self.name = spatial.name

    def __repr__(self) -> str:
        extras = ", ".join(f"{c}: {self.bounds[c]}" for c in self.extras)
        return f"{self.inner!r} * ({extras})"

    def _inside(self, xs, tol):
        return self.inner._inside(xs, tol)

    def sample_boundary(self, count: int, method: str = "sobol", seed: int = 0, where: Any = None):
        """Boundary points at all times and parameter values (see :meth:`Geometry.sample_boundary`)."""
        if not isinstance(self.inner, PointCloud) or where is not None and not isinstance(where, (str, list, tuple)):
            return super().sample_boundary(count, method, seed, where)
        xs, ns = self.inner.sample_boundary(count, method, seed, where)
        unit = unit_samples(count, len(self.extras), method, seed + 1)
        return self._assemble(xs, unit), self._assemble(ns, np.zeros_like(unit))

    def _pieces(self):
        return self.inner._pieces()

    def _space_interior(self, count, method, seed):
        return self.inner._space_interior(count, method, seed)

    def _keep_boundary(self, xs, normals, piece, pieces):
        return self.inner._keep_boundary(xs, normals, piece, pieces)

    def _distance_pieces(self, where):
        return self.inner._distance_pieces(where)

    def _leaves(self):
        return self.inner._leaves()
