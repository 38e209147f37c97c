"""The base class of every domain: :class:`Geometry` (sampling, membership, boundary pieces, distance).

A geometry's spatial part has a boundary made of smooth :class:`Piece` s (faces, edges, circles);
time and parameter axes (:mod:`hodiff.pinn.geometry.axes`) have none. Subclasses give the
membership test and the pieces; this class samples the interior by rejection, the boundary
uniformly in arc length / area, and joins the pieces' distance functions.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import tensorflow as tf

from hodiff.pinn.geometry.distance import column_getter, r_equivalence
from hodiff.pinn.geometry.sampling import MAX_CANDIDATES, batches, piece_choice, unit_samples

__all__ = ["Geometry", "inside_domain", "warn_outside"]


EPS = 1e-6  # relative step across the boundary used to tell inside from outside
TOL = 1e-9  # relative membership tolerance


@dataclass
class Piece:
    """One smooth piece of a spatial boundary (a face, an edge, a circle)."""

    names: tuple[str, ...]
    measure: float  # length / area of the piece
    dimension: int  # unit-cube dimension its map takes
    map: Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]]  # unit -> (points, outward normals)
    adf: Callable[[list], Any]  # spatial tf columns -> (N,) distance, zero on the piece
    signed: bool  # adf positive inside the owning primitive, negative outside
    leaf: Any = None  # the primitive the piece belongs to
    sign: float = 1.0  # -1 when the piece bounds a subtracted operand (normals flipped)


def check_points(geometry: Geometry, points: Any, caller: str) -> np.ndarray:
    """``points`` as a float array of shape ``(N, d)`` for ``geometry``'s ``d`` coordinates, or a clear error."""
    points = np.asarray(points, dtype=float)
    if points.ndim != 2 or points.shape[1] != len(geometry.coords):
        raise ValueError(
            f"{caller}: points must have shape (N, {len(geometry.coords)}) with columns {geometry.coords}, got "
            f"shape {points.shape}; give one column per coordinate."
        )
    return points


def inside_domain(domain: Any, points: np.ndarray) -> np.ndarray:
    """``(N,)`` booleans: ``domain.contains(points)`` when the domain has it, else its bounding box.

    Time and parameter columns count: a point outside the time span or a parameter's range is
    outside (the network was not trained there).
    """
    if hasattr(domain, "contains"):
        return np.asarray(domain.contains(points), dtype=bool)
    low, high = np.asarray(domain.low, dtype=np.float64), np.asarray(domain.high, dtype=np.float64)
    tolerance = 1e-9 * np.max(high - low)
    return np.all((points >= low - tolerance) & (points <= high + tolerance), axis=1)


def warn_outside(domain: Any, points: np.ndarray, caller: str) -> np.ndarray:
    """Warns (``UserWarning``) when some ``points`` lie outside ``domain``; returns :func:`inside_domain`'s mask.

    Example:
      ```python
      import pytest
      from hodiff.pinn.geometry import Interval, TimeDomain, warn_outside

      domain = Interval("x", 0.0, 1.0) * TimeDomain("t", 0.0, 1.0)
      with pytest.warns(UserWarning, match="1 of 2 points are outside.*row 1: x=2, t=0.5"):
          warn_outside(domain, [[0.5, 0.5], [2.0, 0.5]], "predict")
      ```
    """
    points = np.asarray(points, dtype=np.float64)
    inside = inside_domain(domain, points) if len(points) else np.ones(0, dtype=bool)
    if not inside.all():
        first = int(np.flatnonzero(~inside)[0])
        coords = tuple(domain.coords)
        at = ", ".join(f"{name}={value:.6g}" for name, value in zip(coords, points[first]))
        extras = " and the time span / parameter ranges" if len(coords) > len(getattr(domain, "space", coords)) else ""
        warnings.warn(
            f"{caller}: {int((~inside).sum())} of {len(points)} points are outside the domain the network was "
            f"trained on (the first is row {first}: {at}; bounds {domain.bounds}); the values there are "
            f"extrapolations, not solutions of the problem. Predict inside the domain{extras}.",
            UserWarning,
            stacklevel=3,
        )
    return inside


def shape_kind(shape: Geometry) -> str:
    """The default label of an unnamed shape: ``"interval"``, ``"rectangle"``, ``"box"``, ``"disk"``..."""
    kind = type(shape).__name__.lower()
    if kind == "box":
        return {1: "interval", 2: "rectangle"}.get(len(shape.space), "box")
    return kind


def shape_labels(leaves: list[Geometry]) -> dict[int, str]:
    """A unique label per shape (keyed by ``id``): its ``name`` or kind, numbered from 1 when it repeats."""
    bases = [leaf.name or shape_kind(leaf) for leaf in leaves]
    labels: dict[int, str] = {}
    taken: set[str] = set()
    for leaf, base in zip(leaves, bases):
        if bases.count(base) == 1 and base not in taken:
            label = base
        else:
            number = 1
            while f"{base}{number}" in taken or f"{base}{number}" in bases:
                number += 1
            label = f"{base}{number}"
        labels[id(leaf)] = label
        taken.add(label)
    return labels


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

    def _pieces(self) -> list[Piece]:
        raise NotImplementedError

    def _space_interior(self, count: int, method: str, seed: int) -> np.ndarray:
        """Spatial interior points, by rejection from the bounding box."""
        low = np.array([self.bounds[c][0] for c in self.space])
        high = np.array([self.bounds[c][1] for c in self.space])
        kept, tried = [], 0
        for batch in batches(len(self.space), method, seed, 2 * count):
            points = low + batch * (high - low)
            kept.append(points[self._inside(points, 0.0)])
            tried += len(batch)
            total = sum(len(k) for k in kept)
            if total >= count:
                return np.concatenate(kept)[:count]
            if tried >= MAX_CANDIDATES or (tried >= 200_000 and total == 0):
                raise ValueError(
                    f"{self!r}: {total} of {tried} candidate points in the bounding box fell inside, so the domain "
                    f"is empty or too small to sample (check the CSG operands: a difference that removes "
                    f"everything or an intersection of shapes that do not overlap)."
                )
        raise AssertionError  # pragma: no cover

    def _keep_boundary(self, xs: np.ndarray, normals: np.ndarray, piece: np.ndarray, pieces: list[Piece]) -> np.ndarray:
        """Which candidate boundary points lie on the boundary (all, for a primitive).

        ``piece`` gives each point's index in ``pieces``, the pieces being sampled.
        """
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
            slack = TOL * (high - low)
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

    def _named_pieces(self) -> list[Piece]:
        """The boundary pieces, with qualified names (``"plate.left"``) when they come from several shapes.

        Each shape (leaf) is labelled by its ``name=``, or by its kind (``"rectangle"``, ``"disk"``,
        ``"polygon"``...) when unnamed, numbered in operand order when a label repeats
        (``"rectangle1"``, ``"rectangle2"``). A piece is then also named ``"<label>"`` and
        ``"<label>.<piece>"`` for each of its own names.
        """
        pieces = self._pieces()
        leaves = self._leaves()
        if len(leaves) < 2:
            return pieces
        labels = shape_labels(leaves)
        named = []
        for piece in pieces:
            label = labels[id(piece.leaf)]
            qualified = [label] + [f"{label}.{n}" for n in piece.names if n != piece.leaf.name]
            names = piece.names + tuple(n for n in qualified if n not in piece.names)
            named.append(replace(piece, names=names))
        return named

    def _selected_pieces(self, where: Any, caller: str) -> list[Piece]:
        """The pieces ``where`` names (all for ``None``, a predicate or an operand), in boundary order."""
        pieces = self._named_pieces()
        if where is None or not isinstance(where, (str, list, tuple)):
            return pieces
        names = [where] if isinstance(where, str) else list(where)
        if not names or not all(isinstance(n, str) for n in names):
            raise ValueError(
                f"{caller}: where={where!r} must be a piece name or a non-empty list of piece names (str); the "
                f"names are {self.boundary_names}."
            )
        chosen: set[int] = set()
        for name in names:
            matches = [i for i, p in enumerate(pieces) if name in p.names]
            if not matches:
                raise ValueError(
                    f"{caller}: where={name!r} is not a boundary piece of {self!r}; the pieces are "
                    f"{self.boundary_names}."
                )
            shapes = list({id(pieces[i].leaf): pieces[i].leaf for i in matches}.values())
            if len(shapes) > 1 and not all(shape.name == name for shape in shapes):
                labels = shape_labels(self._leaves())
                qualified = list(dict.fromkeys(f"{labels[id(pieces[i].leaf)]}.{name}" for i in matches))
                raise ValueError(
                    f"{caller}: where={name!r} is ambiguous: it names boundary pieces of {len(shapes)} shapes of "
                    f"{self!r}: {qualified}. Name the one you mean (where={qualified[0]!r}, qualified by the shape's "
                    f"name= or its default label), or pass a list for several (where={qualified!r})."
                )
            chosen.update(matches)
        return [p for i, p in enumerate(pieces) if i in chosen]

    def _where_mask(self, where: Any, points: np.ndarray, normals: np.ndarray) -> np.ndarray:
        if where is None or isinstance(where, (str, list, tuple)):
            return np.ones(len(points), dtype=bool)
        if isinstance(where, Geometry):
            operand = where
            if operand.coords != self.space:
                raise ValueError(
                    f"sample_boundary: where={operand!r} has coordinates {operand.coords}, but the spatial "
                    f"coordinates are {self.space}; pass an operand of this domain."
                )
            xs, ns = self._split(points), self._split(normals)
            step = EPS * self._size
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
        """The names ``where=`` accepts (a name may cover several pieces).

        On a CSG domain these include the qualified names ``"<shape>.<piece>"`` (see
        ``where`` in :meth:`sample_boundary`); a bare face name shared by several shapes is left out.
        """
        pieces = self._named_pieces()
        names: list[str] = []
        for piece in pieces:
            names += [n for n in piece.names if n not in names]
        if len(self._leaves()) < 2:
            return tuple(names)
        owners: dict[str, set[int]] = {}
        for piece in pieces:
            for n in piece.names:
                owners.setdefault(n, set()).add(id(piece.leaf))
        shared = {leaf.name for leaf in self._leaves()}
        return tuple(n for n in names if len(owners[n]) == 1 or n in shared)

    def contains(self, points: Any) -> np.ndarray:
        """Membership of the closed domain, ``(N,)`` bool (tolerance 1e-9 of the domain's size).

        Args:
          points: ``(N, d)`` array, columns in ``coords`` order.
        """
        points = check_points(self, points, f"{type(self).__name__}.contains")
        return self._inside(self._split(points), TOL * self._size) & self._extras_inside(points)

    def measure(self, count: int = 1 << 16, seed: int = 0) -> float:
        """The length / area / volume of the spatial part (time and parameter ranges left out).

        The bounding box's measure times the share of ``count`` scrambled Sobol points in it that
        lie inside: exact for a box, within about ``1 / count`` of the box's measure for other shapes.

        Example:
          ```python
          from hodiff.pinn.geometry import Disk, Rectangle

          assert Rectangle(("x", "y"), (0, 0), (2, 3)).measure() == 6.0
          assert abs(Disk((0, 0), 1.0).measure() - 3.14159) < 1e-3
          ```
        """
        low = np.array([self.bounds[c][0] for c in self.space])
        high = np.array([self.bounds[c][1] for c in self.space])
        points = low + unit_samples(count, len(self.space), "sobol", seed) * (high - low)
        return float(np.prod(high - low) * np.mean(self._inside(points, 0.0)))

    def boundary_measure(self, where: Any = None, count: int = 1 << 16, seed: int = 0) -> float:
        """The length / area of the spatial boundary, or of the part ``where`` selects (as in :meth:`sample_boundary`).

        A point counts 1 (the ends of an interval). The selected pieces' measures, times the share of ``count``
        points drawn on them that the domain keeps (a CSG domain keeps the parts of its operands' pieces on its
        boundary) and ``where`` selects (a predicate or an operand): exact for a primitive's named pieces.

        Example:
          ```python
          from hodiff.pinn.geometry import Disk, Rectangle

          plate = Rectangle(("x", "y"), (0, 0), (2, 1))
          assert plate.boundary_measure() == 6.0 and plate.boundary_measure(where="left") == 1.0
          assert abs((plate - Disk((1, 0.5), 0.25)).boundary_measure() - (6.0 + 0.5 * 3.14159)) < 1e-3
          ```
        """
        caller = f"{type(self).__name__}.boundary_measure"
        if not self.space:
            raise ValueError(f"{caller}: the domain has no spatial coordinate, so no boundary.")
        pieces = self._selected_pieces(where, caller)
        measures = np.array([p.measure for p in pieces])
        dimension = max(p.dimension for p in pieces)
        batch = unit_samples(count, dimension, "sobol", seed)
        choice = piece_choice(measures, 0, count)
        xs = np.zeros((count, len(self.space)))
        ns = np.zeros_like(xs)
        for index, piece in enumerate(pieces):
            rows = choice == index
            if rows.any():
                xs[rows], ns[rows] = piece.map(batch[rows, : piece.dimension])
        points = self._assemble(xs, np.full((count, len(self.extras)), 0.5))
        normals = self._assemble(ns, np.zeros((count, len(self.extras))))
        for name in self.extras:
            normals[:, self.coords.index(name)] = 0.0
        kept = self._keep_boundary(xs, ns, choice, pieces) & self._where_mask(where, points, normals)
        return float(np.sum(measures) * np.mean(kept))

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
          where: ``None`` (the whole boundary), a piece name (see ``boundary_names``) or a list of
            them, a predicate ``where(x) -> bool array`` (``x`` maps coordinate names to numpy
            columns), or a geometry operand (the points on that operand's boundary). On a CSG domain
            a name may be qualified by the shape, ``"plate.left"`` (the shape's ``name=``, or its kind
            when unnamed: ``"rectangle1"``, ``"disk"``); a bare name such as ``"left"`` that names
            faces of several shapes is refused with the qualified names listed.

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
        for batch in batches(dimension + len(self.extras), method, seed + 1, 2 * count):
            choice = piece_choice(measures, tried, len(batch))
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
            mask = self._keep_boundary(xs, ns, choice, pieces) & self._where_mask(where, points, normals)
            kept_points.append(points[mask])
            kept_normals.append(normals[mask])
            tried += len(batch)
            total = sum(len(k) for k in kept_points)
            if total >= count:
                return np.concatenate(kept_points)[:count], np.concatenate(kept_normals)[:count]
            if tried >= MAX_CANDIDATES or (tried >= 100_000 and total == 0):
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
          where: ``None`` (the whole boundary), a piece name or a list of them (as in
            :meth:`sample_boundary`), or a geometry operand of a CSG domain.

        Returns:
          ``(N,)`` tensor of x's dtype.

        References:
          Sukumar & Srivastava (2022), CMAME 389, 114333, sections 3-4.
        """
        pieces = self._distance_pieces(where)
        columns = column_getter(self.coords, self.space)(x)
        value = r_equivalence([p.adf(columns) * (p.sign if p.signed else 1.0) for p in pieces])
        return value if self._distance_sign(pieces) > 0 else -value

    def _distance_sign(self, pieces: list[Piece]) -> float:
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
                values = r_equivalence([p.adf(columns) * (p.sign if p.signed else 1.0) for p in pieces]).numpy()
            values = values[values != 0]
            if np.all(values > 0) or np.all(values < 0):
                signs[key] = 1.0 if np.all(values > 0) else -1.0
            else:
                raise ValueError(
                    f"distance: the distance function of {self!r} is positive in some parts of the domain and "
                    "negative in others; select the boundary pieces of one part with where=... ."
                )
        return signs[key]

    def _distance_pieces(self, where: Any) -> list[Piece]:
        if where is None or isinstance(where, (str, list, tuple)):
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
    # (imported on use: the product and CSG classes are subclasses of Geometry, defined after it)
    def __mul__(self, other: Geometry) -> Geometry:
        from hodiff.pinn.geometry.axes import product

        return product(self, other)

    def __rmul__(self, other: Geometry) -> Geometry:
        from hodiff.pinn.geometry.axes import product

        return product(other, self)

    def __or__(self, other: Geometry) -> Geometry:
        from hodiff.pinn.geometry.csg import CSG

        return CSG("union", self, other)

    def __sub__(self, other: Geometry) -> Geometry:
        from hodiff.pinn.geometry.csg import CSG

        return CSG("difference", self, other)

    def __and__(self, other: Geometry) -> Geometry:
        from hodiff.pinn.geometry.csg import CSG

        return CSG("intersection", self, other)
