"""Domains and point sampling: boxes, disks, polygons, balls, their CSG combinations, point clouds,
and products with a time axis or parameter axes.

Every domain is a :class:`Geometry`. Its spatial part (the coordinates with a boundary) is a
primitive (:class:`Box`, :class:`Disk`, :class:`Ellipse`, :class:`Polygon`, :class:`Ball`,
:class:`Hypersphere`, ...), a CSG combination of them (``a | b``, ``a - b``, ``a & b``) or a
:class:`PointCloud`; ``* TimeDomain(...)`` and ``* Parameter(...)`` add axes without boundary.
Interior, boundary (with outward unit normals, uniform in arc length / area, at all times and
parameter values) and initial point sets are sampled with numpy's generator (``"random"``) or
``scipy.stats.qmc`` (``"lhs"``, ``"sobol"``). :meth:`Geometry.distance` is an approximate distance
function of the boundary (TensorFlow ops) for hard Dirichlet constraints.

Example:
  ```python
  from hodiff.pinn.geometry import Disk, Interval, Rectangle, TimeDomain

  domain = Interval("x", -1.0, 1.0) * TimeDomain("t", 0.0, 1.0)
  interior = domain.sample_interior(1024, method="sobol", seed=0)     # (1024, 2): columns x, t
  boundary, normals = domain.sample_boundary(80, seed=1)             # x = -1 or 1
  initial = domain.sample_initial(160, seed=2)                        # t = 0
  plate = Rectangle(("x", "y"), (-1, -1), (1, 1), name="outer") - Disk((0, 0), 0.3, name="hole")
  hole, normals = plate.sample_boundary(64, where="hole")            # normals point into the hole
  ```

References:
  N. Sukumar and A. Srivastava, "Exact imposition of boundary conditions with distance functions
  in physics-informed deep neural networks", CMAME 389 (2022) 114333.

The package, one concept per module: :mod:`~hodiff.pinn.geometry.sampling` (unit samples),
:mod:`~hodiff.pinn.geometry.base` (:class:`Geometry`), :mod:`~hodiff.pinn.geometry.distance`
(distance functions), :mod:`~hodiff.pinn.geometry.primitives` (boxes, balls, ellipses),
:mod:`~hodiff.pinn.geometry.polygon`, :mod:`~hodiff.pinn.geometry.csg`,
:mod:`~hodiff.pinn.geometry.axes` (time and parameter axes) and :mod:`~hodiff.pinn.geometry.point_cloud`.
"""

from hodiff.pinn.geometry.axes import Parameter, TimeDomain
from hodiff.pinn.geometry.base import Geometry, inside_domain, warn_outside
from hodiff.pinn.geometry.csg import CSG
from hodiff.pinn.geometry.point_cloud import PointCloud
from hodiff.pinn.geometry.polygon import Polygon, Triangle
from hodiff.pinn.geometry.primitives import (
    Ball,
    Box,
    Disk,
    Ellipse,
    Hypercube,
    Hypersphere,
    Interval,
    Rectangle,
    Sphere,
)
from hodiff.pinn.geometry.sampling import SAMPLING_METHODS, unit_samples

__all__ = [
    "SAMPLING_METHODS",
    "CSG",
    "Ball",
    "Box",
    "Disk",
    "Ellipse",
    "Geometry",
    "Hypercube",
    "Hypersphere",
    "Interval",
    "Parameter",
    "PointCloud",
    "Polygon",
    "Rectangle",
    "Sphere",
    "TimeDomain",
    "Triangle",
    "inside_domain",
    "unit_samples",
    "warn_outside",
]
