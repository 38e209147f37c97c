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
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import tensorflow as tf
from scipy.spatial import cKDTree
from scipy.special import gamma
from scipy.stats import norm, qmc

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
    "unit_samples",
]

SAMPLING_METHODS = ("random", "lhs", "sobol")
_EPS = 1e-6  # relative step across the boundary used to tell inside from outside
_TOL = 1e-9  # relative membership tolerance
_MAX_CANDIDATES = 4_000_000  # rejection sampling gives up after this many candidates


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


def _batches(dimension: int, method: str, seed: int, first: int):
    """Successive batches of unit samples (a continuing Sobol sequence for ``"sobol"``)."""
    unit_samples(1, 0, method, seed)  # validates method
    size = 1 << int(np.ceil(np.log2(max(first, 2))))
    rng = np.random.default_rng(seed)
    sobol = qmc.Sobol(d=max(dimension, 1), scramble=True, seed=seed) if method == "sobol" else None
    round_ = 0
    while True:
        if dimension == 0:
            batch = np.zeros((size, 0))
        elif sobol is not None:
            batch = sobol.random(size)
        elif method == "lhs":
            batch = qmc.LatinHypercube(d=dimension, seed=seed + 7919 * round_).random(size)
        else:
            batch = rng.uniform(size=(size, dimension))
        yield batch
        round_ += 1
        size = min(size * 2, 1 << 18)


def _piece_choice(measures: np.ndarray, start: int, size: int) -> np.ndarray:
    """Which piece each of candidates ``start .. start + size - 1`` lies on, in proportion to ``measures``.

    Deterministic and stratified: candidate ``i`` takes the piece whose share of the total measure
    holds ``frac(1/2 + i (sqrt(5) - 1) / 2)`` (a golden-ratio sequence), so every run of candidates
    splits between the pieces within a point or two of their shares (two points on an interval: one
    per end), whatever the sampling method.
    """
    shares = np.cumsum(measures) / np.sum(measures)
    u = np.mod(0.5 + np.arange(start, start + size) * ((math.sqrt(5.0) - 1.0) / 2.0), 1.0)
    return np.minimum(np.searchsorted(shares, u, side="right"), len(measures) - 1)


@dataclass
class _Piece:
    """One smooth piece of a spatial boundary (a face, an edge, a circle)."""

    names: tuple[str, ...]
    measure: float  # length / area of the piece
    dimension: int  # unit-cube dimension its map takes
    map: Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]]  # unit -> (points, outward normals)
    adf: Callable[[list], Any]  # spatial tf columns -> (N,) distance, zero on the piece
    signed: bool  # adf positive inside the owning primitive, negative outside
    leaf: Any = None  # the primitive the piece belongs to
    sign: float = 1.0  # -1 when the piece bounds a subtracted operand (normals flipped)


def _column_getter(coords: Sequence[str], names: Sequence[str]) -> Callable[[Any], list]:
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


def _r_equivalence(values: list) -> Any:
    """Join distances with the R-equivalence ``a b / sqrt(a^2 + b^2)`` (m = 2): zero where any is zero."""
    result = values[0]
    for value in values[1:]:
        result = result * value / tf.sqrt(tf.square(result) + tf.square(value))
    return result


def _segment_adf(a: np.ndarray, b: np.ndarray) -> Callable[[list], Any]:
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


def _plane_adf(index: int, value: float, direction: float) -> Callable[[list], Any]:
    """Signed distance ``direction * (x_index - value)`` to a face plane (positive inside the box)."""
    return lambda cols: direction * (cols[index] - value)


def _check_points(geometry: Geometry, points: Any, caller: str) -> np.ndarray:
    points = np.asarray(points, dtype=float)
    if points.ndim != 2 or points.shape[1] != len(geometry.coords):
        raise ValueError(
            f"{caller}: points must have shape (N, {len(geometry.coords)}) with columns {geometry.coords}, got "
            f"shape {points.shape}; give one column per coordinate."
        )
    return points


class Geometry:
    """A domain: a spatial part with a boundary, times optional time and parameter axes.

    Subclasses describe their spatial part (membership, boundary pieces, interior sampling);
    this class turns that into points over all coordinates. Attributes: ``coords`` (column
    order), ``space``, ``time``, ``parameters``, ``bounds`` (bounding box of every coordinate),
    ``low``, ``high``.
    """

    bounds: dict[str, tuple[float, float]]
    time: str | None = None
    parameters: tuple[str, ...] = ()
    name: str | None = None

    # ----- coordinates -------------------------------------------------------------------------
    @property
    def coords(self) -> tuple[str, ...]:
        return tuple(self.bounds)

    @property
    def space(self) -> tuple[str, ...]:
        return tuple(c for c in self.coords if c != self.time and c not in self.parameters)

    @property
    def extras(self) -> tuple[str, ...]:
        """The coordinates without boundary: time and parameters, in column order."""
        space = set(self.space)  # a set: in D = 100,000 dimensions a tuple lookup per coordinate is O(D^2)
        return tuple(c for c in self.coords if c not in space)

    @property
    def low(self) -> np.ndarray:
        return np.array([low for low, _ in self.bounds.values()])

    @property
    def high(self) -> np.ndarray:
        return np.array([high for _, high in self.bounds.values()])

    @property
    def _size(self) -> float:
        spans = [self.bounds[c][1] - self.bounds[c][0] for c in self.space] or [1.0]
        return float(np.linalg.norm(spans))

    # ----- the spatial part (overridden by primitives; spatial columns in `space` order) --------
    def _inside(self, xs: np.ndarray, tol: float) -> np.ndarray:
        """Membership of the spatial part, enlarged by ``tol`` (shrunk when negative)."""
        raise NotImplementedError

    def _pieces(self) -> list[_Piece]:
        raise NotImplementedError

    def _space_interior(self, count: int, method: str, seed: int) -> np.ndarray:
        """Spatial interior points, by rejection from the bounding box."""
        low = np.array([self.bounds[c][0] for c in self.space])
        high = np.array([self.bounds[c][1] for c in self.space])
        kept, tried = [], 0
        for batch in _batches(len(self.space), method, seed, 2 * count):
            points = low + batch * (high - low)
            kept.append(points[self._inside(points, 0.0)])
            tried += len(batch)
            total = sum(len(k) for k in kept)
            if total >= count:
                return np.concatenate(kept)[:count]
            if tried >= _MAX_CANDIDATES or (tried >= 200_000 and total == 0):
                raise ValueError(
                    f"{self!r}: {total} of {tried} candidate points in the bounding box fell inside, so the domain "
                    f"is empty or too small to sample (check the CSG operands: a difference that removes "
                    f"everything or an intersection of shapes that do not overlap)."
                )
        raise AssertionError  # pragma: no cover

    def _keep_boundary(self, xs: np.ndarray, normals: np.ndarray, piece: np.ndarray) -> np.ndarray:
        """Which candidate boundary points lie on the boundary (all, for a primitive)."""
        return np.ones(len(xs), dtype=bool)

    # ----- helpers --------------------------------------------------------------------------------
    def _columns(self, names: tuple[str, ...]) -> list[int]:
        """The column of each name (a dict lookup: ``coords.index`` per name is O(D^2) in D dimensions)."""
        column = {name: j for j, name in enumerate(self.coords)}
        return [column[name] for name in names]

    def _split(self, points: np.ndarray) -> np.ndarray:
        return points[:, self._columns(self.space)]

    def _extras_inside(self, points: np.ndarray) -> np.ndarray:
        inside = np.ones(len(points), dtype=bool)
        for name in self.extras:
            low, high = self.bounds[name]
            slack = _TOL * (high - low)
            column = points[:, self.coords.index(name)]
            inside &= (column >= low - slack) & (column <= high + slack)
        return inside

    def _assemble(self, space: np.ndarray, unit_extras: np.ndarray) -> np.ndarray:
        points = np.zeros((len(space), len(self.coords)))
        points[:, self._columns(self.space)] = space
        for j, name in enumerate(self.extras):
            low, high = self.bounds[name]
            points[:, self.coords.index(name)] = low + unit_extras[:, j] * (high - low)
        return points

    def _selected_pieces(self, where: Any, caller: str) -> list[_Piece]:
        pieces = self._pieces()
        if isinstance(where, str):
            chosen = [p for p in pieces if where in p.names]
            if not chosen:
                raise ValueError(
                    f"{caller}: where={where!r} is not a boundary piece of {self!r}; the pieces are "
                    f"{self.boundary_names}."
                )
            return chosen
        return pieces

    def _where_mask(self, where: Any, points: np.ndarray, normals: np.ndarray) -> np.ndarray:
        if where is None or isinstance(where, str):
            return np.ones(len(points), dtype=bool)
        if isinstance(where, Geometry):
            operand = where
            if operand.coords != self.space:
                raise ValueError(
                    f"sample_boundary: where={operand!r} has coordinates {operand.coords}, but the spatial "
                    f"coordinates are {self.space}; pass an operand of this domain."
                )
            xs, ns = self._split(points), self._split(normals)
            step = _EPS * self._size
            return operand._inside(xs + step * ns, 0.0) != operand._inside(xs - step * ns, 0.0)
        if callable(where):
            mask = np.asarray(where({c: points[:, i] for i, c in enumerate(self.coords)}), dtype=bool)
            if mask.shape != (len(points),):
                raise ValueError(
                    f"sample_boundary: where(x) must return one bool per point, shape ({len(points)},); it returned "
                    f"shape {mask.shape}."
                )
            return mask
        raise ValueError(
            f"sample_boundary: where={where!r} is not a piece name (str), a predicate where(x) -> bool array or a "
            f"geometry operand; the piece names are {self.boundary_names}."
        )

    # ----- public API -----------------------------------------------------------------------------
    @property
    def boundary_names(self) -> tuple[str, ...]:
        """The named boundary pieces (a name may cover several pieces)."""
        names: list[str] = []
        for piece in self._pieces():
            names += [n for n in piece.names if n not in names]
        return tuple(names)

    def contains(self, points: Any) -> np.ndarray:
        """Membership of the closed domain, ``(N,)`` bool (tolerance 1e-9 of the domain's size).

        Args:
          points: ``(N, d)`` array, columns in ``coords`` order.
        """
        points = _check_points(self, points, f"{type(self).__name__}.contains")
        return self._inside(self._split(points), _TOL * self._size) & self._extras_inside(points)

    def sample_interior(self, count: int, method: str = "sobol", seed: int = 0) -> np.ndarray:
        """``count`` points inside the domain (all coordinates, time and parameters included).

        Args:
          count: number of points.
          method: ``"random"``, ``"lhs"`` or ``"sobol"``.
          seed: an int; the same seed gives the same points.

        Returns:
          ``(count, d)`` array, columns in ``coords`` order.
        """
        unit_samples(count, 0, method, seed)
        space = self._space_interior(count, method, seed)
        # The extras take Sobol dimensions the spatial part does not use (it uses at most len(space) + 1):
        # the same dimension of two scrambled Sobol sequences is one digital map of the other, which would tie
        # time to position (e.g. a disk's upper half only at early times).
        skip = len(self.space) + 1
        return self._assemble(space, unit_samples(count, skip + len(self.extras), method, seed + 1)[:, skip:])

    def sample_boundary(
        self, count: int, method: str = "sobol", seed: int = 0, where: Any = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """``count`` points on the spatial boundary (at all times and parameter values) and outward normals.

        Points are uniform in arc length / area over the selected part of the boundary.

        Args:
          count: number of points.
          method: ``"random"``, ``"lhs"`` or ``"sobol"``.
          seed: an int.
          where: ``None`` (the whole boundary), a piece name (see ``boundary_names``), a predicate
            ``where(x) -> bool array`` (``x`` maps coordinate names to numpy columns), or a geometry
            operand (the points on that operand's boundary).

        Returns:
          ``(points, normals)``, both ``(count, d)``; normals are outward unit vectors, zero in the
          time and parameter columns.
        """
        caller = f"{type(self).__name__}.sample_boundary"
        unit_samples(count, 0, method, seed)
        if not self.space:
            raise ValueError(f"{caller}: the domain has no spatial coordinate, so no boundary.")
        pieces = self._selected_pieces(where, caller)
        measures = np.array([p.measure for p in pieces])
        dimension = max(p.dimension for p in pieces)
        kept_points, kept_normals, tried = [], [], 0
        for batch in _batches(dimension + len(self.extras), method, seed + 1, 2 * count):
            choice = _piece_choice(measures, tried, len(batch))
            xs = np.zeros((len(batch), len(self.space)))
            ns = np.zeros_like(xs)
            for index, piece in enumerate(pieces):
                rows = choice == index
                if rows.any():
                    xs[rows], ns[rows] = piece.map(batch[rows, : piece.dimension])
            points = self._assemble(xs, batch[:, dimension:])
            normals = self._assemble(ns, np.zeros((len(batch), len(self.extras))))
            for name in self.extras:
                normals[:, self.coords.index(name)] = 0.0
            mask = self._keep_boundary(xs, ns, choice) & self._where_mask(where, points, normals)
            kept_points.append(points[mask])
            kept_normals.append(normals[mask])
            tried += len(batch)
            total = sum(len(k) for k in kept_points)
            if total >= count:
                return np.concatenate(kept_points)[:count], np.concatenate(kept_normals)[:count]
            if tried >= _MAX_CANDIDATES or (tried >= 100_000 and total == 0):
                selected = "the boundary" if where is None else f"where={where!r}"
                raise ValueError(
                    f"{caller}: {selected} has no points ({total} of {tried} candidates kept) on {self!r}; "
                    f"choose a piece from {self.boundary_names} or a predicate that holds somewhere on the boundary."
                )
        raise AssertionError  # pragma: no cover

    def sample_initial(self, count: int, method: str = "sobol", seed: int = 0) -> np.ndarray:
        """``count`` points at the first time (``t = t0``), spread over space: ``(count, d)``."""
        if self.time is None:
            raise ValueError(
                "sample_initial: the domain has no time coordinate; build it as space * TimeDomain(...) for an "
                "initial condition."
            )
        points = self.sample_interior(count, method, seed)
        points[:, self.coords.index(self.time)] = self.bounds[self.time][0]
        return points

    def grid(
        self, counts: dict[str, int] | None = None, **arrays: np.ndarray
    ) -> tuple[dict[str, np.ndarray], np.ndarray]:
        """A tensor-product grid over the bounding box: named 1-D arrays and the points ``(prod, d)``.

        Args:
          counts: points per coordinate (evenly spaced, ends included; default 64).
          **arrays: explicit 1-D coordinate arrays, which take precedence over ``counts``.

        Returns:
          ``(axes, points)``: ``axes[name]`` is the 1-D array of that coordinate; ``points``
          lists the grid with the first coordinate varying slowest (``indexing="ij"``). Use
          :meth:`contains` to mask points outside a non-box domain.
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

    def distance(self, x: Any, where: Any = None) -> Any:
        """Approximate distance function of the spatial boundary (or the pieces ``where`` names).

        Each piece has a distance normalised to first order (a disk's ``(r^2 - |x - c|^2) / (2 r)``,
        a trimmed segment's function for polygon edges and 2-D box faces, the face planes of a box
        in other dimensions), joined by the R-equivalence ``a b / sqrt(a^2 + b^2)``. The result is
        zero on the selected boundary, positive inside, has unit gradient at the boundary and is
        smooth inside (TensorFlow ops only: eager, graph, XLA, nested tapes), so
        ``u = g + distance(x) * N(x)`` satisfies ``u = g`` exactly there. On the boundary the value is
        about 1e-12 (a floor that keeps derivatives finite there, except exactly at corners).

        Args:
          x: ``(N, d)`` tensor, columns in ``coords`` order (time and parameters are ignored).
          where: ``None`` (the whole boundary), a piece name, or a geometry operand of a CSG domain.

        Returns:
          ``(N,)`` tensor of x's dtype.

        References:
          Sukumar & Srivastava (2022), CMAME 389, 114333, sections 3-4.
        """
        pieces = self._distance_pieces(where)
        columns = _column_getter(self.coords, self.space)(x)
        value = _r_equivalence([p.adf(columns) * (p.sign if p.signed else 1.0) for p in pieces])
        return value if self._distance_sign(pieces) > 0 else -value

    def _distance_sign(self, pieces: list[_Piece]) -> float:
        """+1 or -1: the sign that makes the joined distance positive inside (checked once per selection).

        The R-equivalence's sign is the product of its signed factors' signs, so a point inside the
        domain but outside a primitive (a union of disjoint disks, a hole in a hole) comes out negative.
        """
        if not any(p.signed for p in pieces):
            return 1.0
        key = tuple((id(p.leaf), p.names, p.sign) for p in pieces)
        signs = self.__dict__.setdefault("_distance_signs", {})
        if key not in signs:
            with tf.init_scope():  # plain numbers, also while a tf.function traces
                xs = self._space_interior(256, "sobol", 0)
                columns = [tf.constant(xs[:, j], tf.float64) for j in range(xs.shape[1])]
                values = _r_equivalence([p.adf(columns) * (p.sign if p.signed else 1.0) for p in pieces]).numpy()
            values = values[values != 0]
            if np.all(values > 0) or np.all(values < 0):
                signs[key] = 1.0 if np.all(values > 0) else -1.0
            else:
                raise ValueError(
                    f"distance: the distance function of {self!r} is positive in some parts of the domain and "
                    "negative in others; select the boundary pieces of one part with where=... ."
                )
        return signs[key]

    def _distance_pieces(self, where: Any) -> list[_Piece]:
        if where is None or isinstance(where, str):
            return self._selected_pieces(where, "distance")
        if isinstance(where, Geometry):
            chosen = [p for p in self._pieces() if any(p.leaf is leaf for leaf in where._leaves())]
            if not chosen:
                raise ValueError(f"distance: where={where!r} is not an operand of {self!r}; pass one of its operands.")
            return chosen
        raise ValueError(
            f"distance: where={where!r} must be None, a piece name from {self.boundary_names} or a CSG operand; "
            "a predicate cannot give an analytic distance."
        )

    def _leaves(self) -> list[Geometry]:
        return [self]

    # ----- composition -------------------------------------------------------------------------
    def __mul__(self, other: Geometry) -> Geometry:
        return _product(self, other)

    def __rmul__(self, other: Geometry) -> Geometry:
        return _product(other, self)

    def __or__(self, other: Geometry) -> Geometry:
        return CSG("union", self, other)

    def __sub__(self, other: Geometry) -> Geometry:
        return CSG("difference", self, other)

    def __and__(self, other: Geometry) -> Geometry:
        return CSG("intersection", self, other)


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
            return _product(self, other)
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

    def _pieces(self) -> list[_Piece]:
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
                    adf, signed = _segment_adf(corners[0], corners[1]), False
                else:
                    adf, signed = _plane_adf(index, value, 1.0 if side == 0 else -1.0), True
                measure = float(np.prod([spans[c] for c in others])) if others else 1.0
                pieces.append(_Piece(self._face_names(index, side), measure, len(others), face_map, adf, signed, self))
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
        choice = _piece_choice(measures, 0, count)
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


def _product(first: Geometry, second: Geometry) -> Geometry:
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
    return _Product(spatial, extra, order=first.coords + second.coords)


class _Product(Geometry):
    """A spatial geometry times time / parameter axes."""

    def __init__(self, spatial: Geometry, extra: Box, order: tuple[str, ...]):
        self.inner: Geometry = spatial.inner if isinstance(spatial, _Product) else spatial
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
        if not isinstance(self.inner, PointCloud) or where is not None and not isinstance(where, str):
            return super().sample_boundary(count, method, seed, where)
        xs, ns = self.inner.sample_boundary(count, method, seed, where)
        unit = unit_samples(count, len(self.extras), method, seed + 1)
        return self._assemble(xs, unit), self._assemble(ns, np.zeros_like(unit))

    def _pieces(self):
        return self.inner._pieces()

    def _space_interior(self, count, method, seed):
        return self.inner._space_interior(count, method, seed)

    def _keep_boundary(self, xs, normals, piece):
        return self.inner._keep_boundary(xs, normals, piece)

    def _distance_pieces(self, where):
        return self.inner._distance_pieces(where)

    def _leaves(self):
        return self.inner._leaves()


class _Shape(Geometry):
    """A primitive spatial shape (no time or parameter axes)."""

    def __init__(self, names: Sequence[str], low: np.ndarray, high: np.ndarray, name: str | None):
        names = tuple(names)
        if len(set(names)) != len(names):
            raise ValueError(f"{type(self).__name__}: coordinate names {names} repeat; give distinct names.")
        self.bounds = {c: (float(lo), float(hi)) for c, lo, hi in zip(names, low, high)}
        self.name = name

    def _named(self, *names: str) -> tuple[str, ...]:
        return names + ((self.name,) if self.name else ())


class Hypersphere(_Shape):
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

        return [_Piece(self._named(), float(area), self._direction_dimension(), sphere_map, adf, True, self)]

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


class Ellipse(_Shape):
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

        return [_Piece(self._named(), float(self._arc[-1]), 1, ellipse_map, adf, True, self)]


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


class Polygon(_Shape):
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
            pieces.append(_Piece(self._named(f"edge{i}"), length, 1, edge_map, _segment_adf(*ends), False, self))
        return pieces


class Triangle(Polygon):
    """The triangle with corners ``a``, ``b``, ``c`` (edges ``"edge0"`` ab, ``"edge1"`` bc, ``"edge2"`` ca)."""

    def __init__(self, a, b, c, names: Sequence[str] = ("x", "y"), name: str | None = None):
        super().__init__([a, b, c], names, name)


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
            if not isinstance(operand, Geometry) or isinstance(operand, (_Product, PointCloud)) or operand.extras:
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
                piece = _Piece(
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

    def _keep_boundary(self, xs, normals, piece):
        step = _EPS * self._size
        keep = self._inside(xs - step * normals, 0.0) & ~self._inside(xs + step * normals, 0.0)
        # a piece lying on an earlier piece (coincident edges) is drawn once: by the earlier piece
        pieces = self._pieces()
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
        step = _EPS * self._size
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
        elif isinstance(where, str):
            if where not in self.boundary_names:
                raise ValueError(
                    f"PointCloud.sample_boundary: where={where!r} is not a boundary label; the labels "
                    f"are {self.boundary_names}."
                )
            mask = np.asarray(self.labels == where, dtype=bool)
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

    def _space_interior(self, count, method, seed):
        return self.sample_interior(count, method, seed)
