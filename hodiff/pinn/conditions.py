"""Conditions: a residual in the named partials of the fields, on a boundary piece or a point set.

A condition's residual is zero where the condition holds; the trainer minimises its mean
square. The general :class:`Condition` takes any expression ``residual(d, x, n)`` of the named
partials ``d`` (see :mod:`hodiff.pinn.names`), the coordinates ``x`` and the outward normal
``n``; :class:`Dirichlet`, :class:`Neumann`, :class:`Robin`, :class:`Initial`,
:class:`Periodic` and :class:`Data` are thin uses of it. Values are a number or a function of
the named coordinates, ``value(x)`` with ``x["t"]`` a tensor of shape ``(N,)``. A :class:`Refinement` is no
condition: it adds interior points for the residual in a region, drawn as a condition's ``where`` selects them.

Example:
  ```python
  import numpy as np
  import tensorflow as tf
  from hodiff.pinn import conditions

  boundary = conditions.Dirichlet(0.0, count=80)                                 # u = 0
  initial = conditions.Initial(lambda x: -tf.sin(np.pi * x["x"]), count=160)     # u(x, 0)
  wrap = conditions.Periodic("x", count=64)                                      # u and u_x
  at_rest = conditions.Condition(lambda d, x, n: d["u_t"], needs=("u_t",), on="initial", name="at_rest")
  ```
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np
import tensorflow as tf

from hodiff import _validate
from hodiff.pinn.names import NeededValues, named_partials, need_key, parse_needs

__all__ = ["Condition", "Data", "Dirichlet", "Initial", "Neumann", "Periodic", "Refinement", "Robin", "hard_initial"]

Value = float | Callable[[dict], tf.Tensor]
Partials = Callable[[Callable, tf.Tensor, tuple], dict]
PLACES = ("boundary", "initial", "interior")


class Columns(Mapping):
    """``{name: x[:, i]}`` for the named coordinates, each column sliced when it is read, and
    ``.points``, the whole ``(N, d)`` tensor: a residual in thousands of dimensions reads
    ``x.points`` instead of building (and compiling) one slice per coordinate."""

    def __init__(self, points: tf.Tensor, coords: tuple[str, ...]):
        self.points, self._index = points, {name: i for i, name in enumerate(coords)}

    def __getitem__(self, name: str) -> tf.Tensor:
        return self.points[:, self._index[name]]

    def __iter__(self) -> Iterator[str]:
        return iter(self._index)

    def __len__(self) -> int:
        return len(self._index)


def named_columns(x: tf.Tensor, coords: tuple[str, ...]) -> Columns:
    """``{name: x[:, i]}`` for the named coordinates (a :class:`Columns` mapping, with ``.points``)."""
    return Columns(x, tuple(coords))


def _checked(value: Value, kind: str, name: str, label: str = "value") -> Value:
    """``value`` if it is callable or a finite number; a clear error otherwise."""
    if callable(value):
        return value
    if isinstance(value, bool) or not isinstance(value, (int, float, np.number)) or not np.isfinite(value):
        raise ValueError(
            f"{kind} {name!r}: {label} must be a finite number or a function of the coordinates, got {value!r}."
        )
    return value


def _point_count(count: Any, kind: str) -> int:
    """``count`` as an int >= 1 (a numpy integer is accepted); a clear error for 0, a negative or a non-integer."""
    if isinstance(count, np.integer):
        count = int(count)
    _validate.check_count(
        count, "count", kind, fix=" It is the number of points drawn for the condition, e.g. count=100."
    )
    return count


def _per_point(result: Any, like: tf.Tensor, caller: str, what: str) -> tf.Tensor:
    """``result`` as a ``(N,)`` tensor of ``like``'s dtype; (N, 1) is flattened."""
    result = tf.convert_to_tensor(result)
    if result.shape.rank == 2 and result.shape[1] == 1:
        result = result[:, 0]
    if result.shape.rank != 1:
        raise ValueError(
            f"{caller}: {what} must return one value per point, shape (N,); it returned {tuple(result.shape)}. "
            "Build it from d[...] and x[...] entries, which are (N,)."
        )
    return tf.cast(result, like.dtype)


def _value(value: Value, x: dict[str, tf.Tensor], like: tf.Tensor, caller: str) -> tf.Tensor:
    """A number or ``value(x)`` as ``(N,)`` values shaped like ``like``."""
    if callable(value):
        return _per_point(value(x), like, caller, "the value function")
    return tf.fill(tf.shape(like)[:1], tf.constant(value, like.dtype))


def _outside(domain: Any, points: np.ndarray) -> np.ndarray:
    """Rows of ``points`` outside the (closed) domain."""
    if hasattr(domain, "contains"):
        return np.flatnonzero(~np.asarray(domain.contains(points), dtype=bool))
    slack = 1e-9 * (domain.high - domain.low)
    return np.flatnonzero(np.any((points < domain.low - slack) | (points > domain.high + slack), axis=1))


def select_points(
    domain: Any, draw: Callable[[int, int], np.ndarray], where: Callable, count: int, seed: int, kind: str, place: str
) -> np.ndarray:
    """``count`` rows of ``draw(n, seed)`` whose points ``where`` keeps, drawing 4, 16, 64, then 256 times
    ``count``; ``kind`` and ``place`` name the caller and the point set in errors."""
    width = len(domain.coords)
    for factor in (4, 16, 64, 256):
        rows = draw(factor * count, seed)
        keep = np.asarray(where({c: rows[:, i] for i, c in enumerate(domain.coords)}), dtype=bool)
        if keep.shape != (len(rows),):
            raise ValueError(
                f"{kind}: where(x) must return one bool per point, shape (N,); it returned shape {keep.shape}."
            )
        if keep.sum() >= count:
            return rows[keep][:count]
    if not keep.any():
        raise ValueError(
            f"{kind}: where={where!r} selects no points on {place!r} of the domain {domain.coords}; check the "
            "predicate (compare with a tolerance, not ==)."
        )
    raise ValueError(
        f"{kind}: where={where!r} keeps only {keep.mean():.2g} of the {place} points ({int(keep.sum())} of "
        f"{len(keep)} drawn, width {width}); widen the selection."
    )


class Refinement:
    """More interior points where the residual needs them: ``count`` points of the domain's interior where
    ``where(x)`` holds, added to the problem's interior points (``Problem(refinements=...)``).

    They are interior points like the others: the residual terms are means over all of them, so the selected
    region counts ``count`` points more in the loss, in the same pass (a :class:`Condition` on ``"interior"``
    with ``where`` would add a loss term of its own and a pass of its own). Drawn by the problem's sampling from
    seed ``seed + 1 + (number of conditions) + i`` for the ``i``-th refinement; residual-based resampling and
    ``fresh_points`` redraw every interior point, these included, uniformly or by the residual.

    Args:
      where: ``where(x) -> bool array``, ``x`` the coordinate columns as numpy arrays: the region.
      count: how many points, an int >= 1.

    Example:
      ```python
      import numpy as np
      from hodiff import pinn

      domain = pinn.Interval("x", 0.0, 1.0)
      near_wall = pinn.Refinement(lambda x: x["x"] < 0.1, count=32)
      problem = pinn.Problem(
          domain, needs=("u_xx",), residual=lambda d, x, p: d["u_xx"] + 1.0, refinements=[near_wall]
      )
      interior = problem.sample_points(64)["interior"]
      assert interior.shape == (96, 1) and np.all(interior[64:, 0] < 0.1)
      ```
    """

    def __init__(self, where: Callable[[dict], Any], count: int):
        if not callable(where):
            raise TypeError(f"Refinement: where must be a predicate where(x) -> bool array, got {where!r}.")
        _validate.check_count(count, "count", "Refinement")
        self.where, self.count = where, count

    def sample(self, domain: Any, method: str, seed: int) -> np.ndarray:
        """The ``(count, d)`` points, deterministic for a given ``seed``."""
        draw = lambda count, s: domain.sample_interior(count, method, s)  # noqa: E731
        return select_points(domain, draw, self.where, self.count, seed, "Refinement", "interior")


class Condition:
    """A condition ``residual(d, x, n) = 0`` on a boundary piece, at the first time, inside, or at points.

    Args:
      residual: ``residual(d, x, n) -> (N,)`` (or ``(N, 1)``): ``d`` maps each entry of
        ``needs`` to its values ``(N,)``, ``x`` each coordinate name to its column ``(N,)``,
        ``n`` each coordinate name to the outward unit normal's component ``(N,)`` (zero where
        no normal is defined: time and parameter columns, ``on="initial"`` and ``"interior"``,
        points given without ``normals``).
      needs: the field values and partials used, e.g. ``("u", "u_x")`` or ``(("u_vel", "x1"),)``
        (see :mod:`hodiff.pinn.names`); any of the problem's fields.
      on: ``"boundary"`` (the spatial boundary at all times, or the part ``where`` selects),
        ``"initial"`` (t = t0), ``"interior"``, or an ``(N, d)`` array of points in the order of
        the domain's coordinates (then ``count`` is ignored).
      where: which part: a boundary piece name (``"right"``, ``"plate.left"`` on a CSG domain) or a
        list of them, a geometry operand, or a predicate
        ``where(x) -> bool array`` with ``x`` the coordinate columns as numpy arrays (the only
        choice for ``"initial"`` and ``"interior"``). ``None``: everywhere.
      count: number of points sampled (``on`` a place).
      name: the loss term's name.
      points: the points, as an alternative to ``on=array``.
      normals: ``(N, d)`` outward normals at ``points`` (optional).

    Example:
      ```python
      import numpy as np
      from hodiff.pinn import Condition, Interval, Problem, TimeDomain

      # the wave equation starts at rest: u_t(x, 0) = 0
      at_rest = Condition(lambda d, x, n: d["u_t"], needs=("u_t",), on="initial", count=64, name="at_rest")
      # u_x(0.5, t) = 0 along a line of points
      line = np.stack([np.full(9, 0.5), np.linspace(0, 1, 9)], axis=1)
      flat = Condition(lambda d, x, n: d["u_x"], needs=("u_x",), on=line, name="flat")
      problem = Problem(
          Interval("x", 0, 1) * TimeDomain("t", 0, 1), needs=("u_tt", "u_xx"),
          residual=lambda d, x, p: d["u_tt"] - 4 * d["u_xx"], conditions=[at_rest, flat],
      )
      assert problem.term_names == ("residual", "at_rest", "flat")
      ```
    """

    name: str = "condition"
    field: str | None = None
    count: int = 0
    needs: tuple = ()
    with_normals: bool = True

    def __init__(
        self,
        residual: Callable[[dict, Mapping, dict], Any],
        needs: Sequence[Any],
        on: Any = "boundary",
        where: Any = None,
        count: int = 100,
        name: str = "condition",
        points: Any = None,
        normals: Any = None,
    ):
        kind = type(self).__name__
        if not callable(residual):
            raise TypeError(f"{kind} {name!r}: residual must be a function residual(d, x, n), got {residual!r}.")
        if isinstance(needs, str) or not isinstance(needs, (tuple, list)):
            raise TypeError(f"{kind} {name!r}: needs must be a tuple of entries, e.g. ('u_x',), got {needs!r}.")
        if not isinstance(name, str) or not name:
            raise ValueError(f"{kind}: name must be a non-empty string, got {name!r}.")
        if not isinstance(on, str):
            if points is not None:
                raise ValueError(f"{kind} {name!r}: give the points once, as on=array or as points=, not both.")
            points, on = on, "points"
        elif points is not None:
            if on != "boundary":
                raise ValueError(f"{kind} {name!r}: points= replaces on={on!r}; pass one of them.")
            on = "points"
        elif on not in PLACES:
            raise ValueError(f"{kind} {name!r}: on={on!r} is not one of {PLACES} or an (N, d) array of points.")
        if where is not None and on in ("initial", "interior") and not callable(where):
            raise ValueError(
                f"{kind} {name!r}: on={on!r} takes where as a predicate where(x) -> bool array, got {where!r}; "
                "boundary pieces and geometry operands select parts of the boundary (on='boundary')."
            )
        if on == "points" and where is not None:
            raise ValueError(f"{kind} {name!r}: where does not apply to given points; select the rows yourself.")
        if on != "points":
            count = _point_count(count, f"{kind} {name!r}")
        self.function, self.needs = residual, tuple(need_key(entry) for entry in needs)
        self.on, self.where, self.name, self.count = on, where, name, count
        self.points: np.ndarray | None = None
        self.normals: np.ndarray | None = None
        if on == "points":
            self.points = self._array(points, "points")
            self.count = len(self.points)
            if normals is not None:
                self.normals = self._array(normals, "normals")
                if self.normals.shape != self.points.shape:
                    raise ValueError(
                        f"{kind} {name!r}: normals have shape {self.normals.shape} but points {self.points.shape}; "
                        "give one normal per point."
                    )
        elif normals is not None:
            raise ValueError(f"{kind} {name!r}: normals are given with points; on={on!r} samples its own.")

    def _array(self, values: Any, label: str) -> np.ndarray:
        array = np.asarray(values, dtype=float)
        if array.ndim != 2 or len(array) == 0:
            raise ValueError(
                f"{type(self).__name__} {self.name!r}: {label} must be an (N, d) array with N >= 1, got shape "
                f"{array.shape}."
            )
        bad = np.flatnonzero(~np.all(np.isfinite(array), axis=1))
        if bad.size:
            raise ValueError(
                f"{type(self).__name__} {self.name!r}: {label} hold NaN or Inf in {bad.size} rows (first: row "
                f"{bad[0]}); remove those rows."
            )
        return array

    def needs_for(self, coords: tuple[str, ...]) -> tuple:
        """The needs entries on a domain with coordinates ``coords`` (some conditions need every coordinate)."""
        return self.needs

    def validate(self, domain: Any) -> None:
        """Raises ``ValueError`` if the condition cannot apply to ``domain`` (checked by the Problem)."""
        kind = f"{type(self).__name__} {self.name!r}"
        if self.on == "initial" and domain.time is None:
            raise ValueError(f"{kind}: on='initial' needs a time coordinate; build the domain as space * TimeDomain.")
        if self.on == "boundary" and not domain.space:
            raise ValueError(f"{kind}: on='boundary', but the domain {domain.coords} has no spatial coordinate.")
        if self.on == "boundary" and self.where is not None:
            self._validate_where(domain, kind)
        if self.points is not None:
            if self.points.shape[1] != len(domain.coords):
                raise ValueError(
                    f"{kind}: points have {self.points.shape[1]} columns but the domain has coordinates "
                    f"{domain.coords}."
                )
            outside = _outside(domain, self.points)
            if outside.size:
                raise ValueError(
                    f"{kind}: {outside.size} points lie outside the domain {domain.bounds} (first: row "
                    f"{outside[0]}, {self.points[outside[0]].tolist()}); the network is only trained inside it, "
                    "so drop or clip them."
                )

    def _validate_where(self, domain: Any, kind: str) -> None:
        """Refuses, when the problem is built, a ``where`` that names no boundary piece of ``domain`` or an operand
        of other coordinates (a predicate can only be judged by the points it keeps, when they are drawn)."""
        where = self.where
        if isinstance(where, (str, list, tuple)):
            if "where" not in inspect.signature(domain.sample_boundary).parameters:
                raise ValueError(
                    f"{kind}: where={where!r} names a boundary piece, but this domain has no named pieces; pass a "
                    "predicate where(x) -> bool array."
                )
            names = [where] if isinstance(where, str) else list(where)
            known = tuple(getattr(domain, "boundary_names", ()))
            if names and all(isinstance(n, str) and n in known for n in names):
                return
            try:  # the domain's own message: an unknown name, an ambiguous one (with the qualified names), a non-str
                domain.sample_boundary(1, "random", 0, where=where)
            except ValueError as error:
                raise ValueError(f"{kind}: {error}") from None
            unknown = [n for n in names if n not in known]
            raise ValueError(
                f"{kind}: where={where!r}: {unknown} are not boundary pieces of {domain!r}; the pieces are {known}."
            )
        coords = getattr(where, "coords", None)
        if not callable(where) and coords is not None and tuple(coords) != tuple(domain.space):
            raise ValueError(
                f"{kind}: where={where!r} has coordinates {tuple(coords)}, but the domain's spatial coordinates are "
                f"{tuple(domain.space)}; pass an operand of this domain (or a piece name, or a predicate)."
            )

    def sample(self, domain: Any, method: str, seed: int) -> dict[str, np.ndarray]:
        """The condition's points (and normals), deterministic for a given ``seed``."""
        if self.points is not None:
            arrays = {"points": self.points}
            if self.normals is not None:
                arrays["normals"] = self.normals
            return arrays
        if self.on == "boundary":
            if self.where is None:
                points, normals = domain.sample_boundary(self.count, method, seed)
            elif "where" in inspect.signature(domain.sample_boundary).parameters:
                try:
                    points, normals = domain.sample_boundary(self.count, method, seed, where=self.where)
                except ValueError as error:
                    raise ValueError(f"{type(self).__name__} {self.name!r}: {error}") from error
            elif callable(self.where):
                draw = lambda count, s: np.concatenate(domain.sample_boundary(count, method, s), axis=1)
                both = self._selected(domain, draw, seed)
                points, normals = np.split(both, 2, axis=1)
            else:
                raise ValueError(
                    f"{type(self).__name__} {self.name!r}: where={self.where!r} names a boundary piece, but this "
                    "domain has no named pieces; pass a predicate where(x) -> bool array."
                )
            arrays = {"points": points}
            if self.with_normals:
                arrays["normals"] = normals
            return arrays
        sampler = domain.sample_initial if self.on == "initial" else domain.sample_interior
        if self.where is None:
            return {"points": sampler(self.count, method, seed)}
        return {"points": self._selected(domain, lambda count, s: sampler(count, method, s), seed)}

    def _selected(self, domain: Any, draw: Callable[[int, int], np.ndarray], seed: int) -> np.ndarray:
        """``count`` rows of ``draw`` whose points ``where`` keeps, oversampling as needed."""
        return select_points(
            domain, draw, self.where, self.count, seed, f"{type(self).__name__} {self.name!r}", self.on
        )

    def evaluate(self, d: dict, x: Mapping, n: dict, arrays: dict[str, tf.Tensor]) -> Any:
        """The raw residual from the named partials (subclasses may read more ``arrays``)."""
        return self.function(d, x, n)

    def residual(
        self,
        solution: Callable[[tf.Tensor], tf.Tensor],
        field_index: int,
        arrays: dict[str, tf.Tensor],
        coords: tuple[str, ...],
        fields: Sequence[str] | None = None,
        partials: Partials | None = None,
    ) -> tf.Tensor:
        """The residual ``(N,)`` at the sampled ``arrays``.

        Args:
          solution: ``(N, d) -> (N, fields)``.
          field_index: the output column of ``field`` (used when ``fields`` is not given).
          arrays: as :meth:`sample` returns them, as tensors.
          coords: the domain's coordinate names.
          fields: all field names in output order (the :class:`~hodiff.pinn.Problem` passes them).
          partials: ``partials(solution, x, needs) -> {entry: (N,)}``, how the named partials are
            computed: the :class:`~hodiff.pinn.Problem` passes its :meth:`named_partials
            <hodiff.pinn.Problem.named_partials>`, so its ``partials_method`` applies to the
            conditions as to the residual. Default: nested tapes (:func:`hodiff.pinn.names.named_partials`).
        """
        if fields is not None:
            columns = {f: i for i, f in enumerate(fields)}
        elif self.field is not None:
            columns = {self.field: field_index}
        else:
            raise ValueError(f"Condition {self.name!r}: pass fields=(...) to evaluate it outside a Problem.")
        caller = f"condition {self.name!r}"
        parsed = parse_needs(self.needs_for(tuple(coords)), tuple(columns), coords, caller)
        x = arrays["points"]
        d = NeededValues(
            _partials(partials, solution, x, coords, columns, parsed), f"{type(self).__name__} {self.name!r}"
        )
        columns_x = named_columns(x, tuple(coords))
        if "normals" in arrays:
            normals = tf.cast(arrays["normals"], x.dtype)
            n = {c: normals[:, i] for i, c in enumerate(coords)}
        else:
            n = {c: tf.zeros_like(x[:, 0]) for c in coords}
        return _per_point(self.evaluate(d, columns_x, n, arrays), x[:, 0], f"Condition {self.name!r}", "residual")


def _partials(
    partials: Partials | None, solution: Callable, x: tf.Tensor, coords: Any, columns: dict, parsed: dict
) -> dict:
    """The named partials in ``parsed`` at ``x``: by ``partials`` (the problem's one path) or nested tapes."""
    if partials is None:
        return named_partials(solution, x, coords, columns, parsed)
    return partials(solution, x, tuple(parsed))


def _normal_derivative(d: dict, n: dict, field: str) -> tf.Tensor:
    return tf.add_n([d[(field, c)] * n[c] for c in n])


class Dirichlet(Condition):
    """``u = value`` on the spatial boundary (all pieces, all times), or the part ``where`` selects.

    Args:
      value: a number or ``value(x) -> (N,)``.
      count: number of boundary points.
      field: which output field.
      name: the loss term's name (default ``"boundary"``).
      where: a boundary piece name, geometry operand or predicate (see :class:`Condition`).
    """

    with_normals = False

    def __init__(
        self, value: Value = 0.0, count: int = 100, field: str = "u", name: str = "boundary", where: Any = None
    ):
        self.value = _checked(value, type(self).__name__, name)
        residual = lambda d, x, n: d[(field,)] - _value(self.value, x, d[(field,)], name)
        super().__init__(residual, ((field,),), on=self.place, where=where, count=count, name=name)
        self.field = field

    place = "boundary"

    def target(self, points: Any, coords: tuple[str, ...]) -> np.ndarray:
        """The values ``(N,)`` the field must take at ``points`` ``(N, d)`` (columns in ``coords`` order)."""
        x = tf.constant(np.asarray(points, dtype=np.float64))
        return _value(self.value, dict(named_columns(x, tuple(coords))), x[:, 0], self.name).numpy()


class Initial(Dirichlet):
    """``u(x, t0) = value(x)`` at the first time (default name ``"initial"``); ``where`` a predicate."""

    place = "initial"

    def __init__(self, value: Value, count: int = 100, field: str = "u", name: str = "initial", where: Any = None):
        super().__init__(value, count, field, name, where)


def hard_initial(
    u0: Value | Callable[[dict], Any],
    time: str = "t",
    start: float = 0.0,
    factor: Callable[[tf.Tensor], tf.Tensor] | None = None,
    inner: Callable[[dict, tf.Tensor], tf.Tensor] | None = None,
) -> Callable[[dict, tf.Tensor], tf.Tensor]:
    """An ``output_transform`` that imposes the initial condition exactly: ``u = u0(x) + factor(t - t0) N(x, t)``.

    The recommended way to give a time-dependent problem its initial condition: with the soft
    ``Initial`` loss term a PINN often settles on a wrong solution near ``u = 0`` at a small loss
    (Allen-Cahn, Burgers-like problems); with this transform ``u(x, t0) = u0(x)`` holds whatever the
    network ``N`` is, and the loss has no initial term to balance.

    Args:
      u0: the initial value: a number, or ``u0(x)`` with ``x`` mapping coordinate names to
        columns ``(N,)``, returning ``(N,)`` for one field or ``(N, fields)``.
      time: the time coordinate's name.
      start: the first time ``t0``.
      factor: ``factor(s)`` of ``s = t - t0``, ``(N,)``, zero at ``s = 0``; default ``s`` itself.
        A smooth saturating factor such as ``lambda s: 1 - tf.exp(-s / 0.1)`` keeps late times'
        outputs of order one.
      inner: another output transform applied to the network's outputs first, e.g. a hard
        boundary condition ``lambda x, n: d(x)[:, None] * n`` (``u0`` should then satisfy it
        too): ``u = u0 + factor(t - t0) inner(x, N)``.

    Returns:
      ``transform(x, outputs) -> (N, fields)``, for ``Problem(..., output_transform=...)``; its
      ``initial`` attribute is ``u0`` (the trainer's check for a near-zero field reads it). It is
      a closure, which :func:`~hodiff.pinn.saving.save_solution` cannot store by reference; to
      save the solution, call it from a module-level function (``def transform(x, outputs):
      return HARD(x, outputs)``).

    Example:
      ```python
      import numpy as np
      import tensorflow as tf
      from hodiff import pinn

      transform = pinn.hard_initial(lambda x: tf.sin(np.pi * x["x"]), time="t")
      x = {"x": tf.constant([0.5, 0.5]), "t": tf.constant([0.0, 1.0])}
      u = transform(x, tf.constant([[7.0], [7.0]]))
      np.testing.assert_allclose(u.numpy()[:, 0], [1.0, 8.0])  # u0 at t = 0, whatever the network says
      ```
    """
    if not isinstance(time, str):
        raise TypeError(f"hard_initial: time must be the time coordinate's name (a str), got {time!r}.")
    if not callable(u0):
        _checked(u0, "hard_initial", "u0")

    def transform(x: dict, outputs: tf.Tensor) -> tf.Tensor:
        if time not in x:
            raise ValueError(
                f"hard_initial: time={time!r} is not a coordinate of the domain ({tuple(x)}); pass the name of "
                "its time coordinate, e.g. hard_initial(u0, time='t')."
            )
        if inner is not None:
            outputs = inner(x, outputs)
        outputs = tf.convert_to_tensor(outputs)
        s = x[time] if start == 0 else x[time] - tf.cast(start, x[time].dtype)
        weight = s if factor is None else factor(s)
        initial = u0(x) if callable(u0) else tf.fill(tf.shape(s), tf.constant(u0, s.dtype))
        initial = tf.convert_to_tensor(initial)
        if initial.shape.rank == 1:
            initial = initial[:, None]
        return initial + weight[:, None] * outputs

    transform.initial = u0  # type: ignore[attr-defined]
    return transform


class Neumann(Condition):
    """``du/dn = value`` on the spatial boundary (outward normal derivative).

    Args:
      value: a number or ``value(x) -> (N,)``.
      count: number of boundary points.
      field: which output field.
      name: the loss term's name (default ``"neumann"``).
      where: a boundary piece name, geometry operand or predicate (see :class:`Condition`).
    """

    def __init__(
        self, value: Value = 0.0, count: int = 100, field: str = "u", name: str = "neumann", where: Any = None
    ):
        self.value = _checked(value, "Neumann", name)
        residual = lambda d, x, n: _normal_derivative(d, n, field) - _value(self.value, x, d[(field,)], name)
        super().__init__(residual, ((field,),), where=where, count=count, name=name)
        self.field = field

    def needs_for(self, coords):
        return ((self.field,), *((self.field, c) for c in coords))


class Robin(Neumann):
    """``alpha u + beta du/dn = value`` on the spatial boundary (outward normal derivative).

    Args:
      alpha: a number or ``alpha(x) -> (N,)``.
      beta: a number or ``beta(x) -> (N,)``.
      value: a number or ``value(x) -> (N,)``.
      count: number of boundary points.
      field: which output field.
      name: the loss term's name (default ``"robin"``).
      where: a boundary piece name, geometry operand or predicate (see :class:`Condition`).
    """

    def __init__(
        self,
        alpha: Value,
        beta: Value,
        value: Value = 0.0,
        count: int = 100,
        field: str = "u",
        name: str = "robin",
        where: Any = None,
    ):
        super().__init__(value, count, field, name, where)
        self.alpha, self.beta = _checked(alpha, "Robin", name, "alpha"), _checked(beta, "Robin", name, "beta")

    def evaluate(self, d, x, n, arrays):
        u = d[(self.field,)]
        alpha, beta = (_value(c, x, u, self.name) for c in (self.alpha, self.beta))
        return alpha * u + beta * _normal_derivative(d, n, self.field) - _value(self.value, x, u, self.name)


class Periodic(Condition):
    """``u`` (and its first ``derivatives`` derivatives in ``coord``) equal at both ends of ``coord``.

    Args:
      coord: the periodic coordinate.
      count: number of point pairs.
      field: which output field.
      derivatives: highest derivative order matched (0: values only; default 1).
      name: the loss term's name (default ``"periodic"``).
    """

    def __init__(self, coord: str, count: int = 100, field: str = "u", derivatives: int = 1, name: str = "periodic"):
        _validate.check_count(
            derivatives, "derivatives", f"Periodic {name!r}", 0, fix=" It is the highest derivative order matched."
        )
        orders = tuple((field, *(coord,) * k) for k in range(derivatives + 1))
        super().__init__(lambda d, x, n: None, orders, on="interior", count=count, name=name)
        self.coord, self.field, self.derivatives = coord, field, derivatives

    def validate(self, domain):
        if self.coord not in domain.space:
            raise ValueError(
                f"Periodic: coord {self.coord!r} is not a spatial coordinate of the domain {domain.space}."
            )

    def sample(self, domain, method, seed):
        self.validate(domain)
        low = domain.sample_interior(self.count, method, seed)
        column = domain.coords.index(self.coord)
        low[:, column] = domain.bounds[self.coord][0]
        high = low.copy()
        high[:, column] = domain.bounds[self.coord][1]
        outside = _outside(domain, np.concatenate([low, high]))
        if outside.size:
            raise ValueError(
                f"Periodic {self.name!r}: {outside.size} of the {2 * len(low)} paired points at {self.coord} = "
                f"{domain.bounds[self.coord]} lie outside the domain {domain!r}; periodicity in {self.coord!r} "
                f"needs a domain whose {self.coord}-extent is the same everywhere (a box in {self.coord})."
            )
        return {"points": low, "partners": high}

    def residual(self, solution, field_index, arrays, coords, fields=None, partials=None):
        columns = {f: i for i, f in enumerate(fields)} if fields is not None else {self.field: field_index}
        parsed = parse_needs(self.needs, tuple(columns), coords, f"condition {self.name!r}")
        x = tf.concat([arrays["points"], arrays["partners"]], axis=0)
        count = tf.shape(arrays["points"])[0]
        d = NeededValues(
            _partials(partials, solution, x, coords, columns, parsed), f"{type(self).__name__} {self.name!r}"
        )
        values = [_per_point(d[key], x[:, 0], f"Periodic {self.name!r}", "the solution") for key in self.needs]
        return tf.concat([v[:count] - v[count:] for v in values], axis=0)


class Interface(Condition):
    """A condition across an interface inside the domain: ``residual(plus, minus, x, n) = 0`` at its points.

    ``plus`` holds the ``needs`` just on the side the normals point to (at ``points + offset * normals``),
    ``minus`` just on the other side: one-sided values of a network whose derivatives jump at the interface
    (e.g. :func:`~hodiff.pinn.mlp` with ``level_set=``). Continuity of the flux ``a grad u . n`` across a jump
    of ``a`` from ``a_minus`` to ``a_plus`` is
    ``lambda p, m, x, n: a_plus * (p["u_x"] * n["x"] + p["u_y"] * n["y"]) - a_minus * (...)``.

    Args:
      residual: ``residual(plus, minus, x, n) -> (N,)``; ``x`` the interface points' columns, ``n`` the normals'.
      needs: the field values and partials used on each side, e.g. ``("u_x", "u_y")``.
      points: ``(N, d)`` points on the interface (e.g. :meth:`hodiff.pinn.Tabulated.zero_set`, with time columns
        added).
      normals: ``(N, d)`` unit normals there (zero in time columns), pointing to the side ``plus``.
      offset: how far off the interface each side is evaluated: small against the scales of the solution.
      name: the loss term's name.

    Example:
      ```python
      import numpy as np
      import tensorflow as tf
      from hodiff.pinn import Interface, Interval, Problem

      # u_x may jump at x = 0.5 (a from 1 to 3): the flux must not, a u_x continuous
      flux = Interface(lambda p, m, x, n: 3.0 * p["u_x"] - 1.0 * m["u_x"], ("u_x",), points=[[0.5]], normals=[[1.0]])
      problem = Problem(Interval("x", 0, 1), needs=("u_xx",), residual=lambda d, x, p: d["u_xx"], conditions=[flux])
      kink = lambda x: tf.where(x < 0.5, 3.0 * x, x + 1.0)  # u_x = 3 then 1: a u_x = 3 on both sides
      residual = flux.residual(kink, 0, {"points": tf.constant([[0.5]]), "normals": tf.constant([[1.0]])}, ("x",),
                               fields=("u",))
      assert abs(float(residual[0])) < 1e-6
      ```
    """

    def __init__(
        self,
        residual: Callable[[dict, dict, Mapping, dict], Any],
        needs: Sequence[Any],
        points: Any,
        normals: Any,
        offset: float = 1e-4,
        name: str = "interface",
    ):
        if not (isinstance(offset, (int, float)) and np.isfinite(offset) and offset > 0):
            raise ValueError(f"Interface {name!r}: offset={offset!r} must be a small positive distance, e.g. 1e-4.")
        super().__init__(residual, needs, points=points, normals=normals, name=name)  # type: ignore[arg-type]
        if self.normals is None:
            raise ValueError(f"Interface {name!r}: give the unit normals at the points (normals=), pointing to 'plus'.")
        self.offset = float(offset)

    def residual(self, solution, field_index, arrays, coords, fields=None, partials=None):
        columns = {f: i for i, f in enumerate(fields)} if fields is not None else {"u": field_index}
        caller = f"Interface {self.name!r}"
        parsed = parse_needs(self.needs_for(tuple(coords)), tuple(columns), coords, caller)
        x = arrays["points"]
        normals = tf.cast(arrays["normals"], x.dtype)
        sides = [
            NeededValues(_partials(partials, solution, x + shift, coords, columns, parsed), caller)
            for shift in (self.offset * normals, -self.offset * normals)
        ]
        n = {c: normals[:, i] for i, c in enumerate(coords)}
        value = self.function(sides[0], sides[1], named_columns(x, tuple(coords)), n)
        return _per_point(value, x[:, 0], caller, "residual")


class Data(Condition):
    """Observations: ``u(points) = values`` (for inverse problems and data assimilation).

    Args:
      points: ``(N, d)`` array of coordinates.
      values: ``(N,)`` observed values.
      field: which output field.
      name: the loss term's name (default ``"data"``).
    """

    def __init__(self, points: Any, values: Any, field: str = "u", name: str = "data"):
        points, values = np.asarray(points, dtype=float), np.asarray(values, dtype=float).reshape(-1)
        if points.ndim != 2 or len(points) != len(values) or len(values) == 0:
            raise ValueError(
                f"Data {name!r}: points must be (N, d) with one value each and N >= 1; got points "
                f"{points.shape} and values {values.shape}."
            )
        bad = np.flatnonzero(~np.isfinite(values))
        if bad.size:
            raise ValueError(
                f"Data {name!r}: values hold NaN or Inf in {bad.size} rows (first: row {bad[0]}); remove "
                f"or fill those observations."
            )
        super().__init__(lambda d, x, n: None, ((field,),), on=points, name=name)
        self.values, self.field = values, field

    def sample(self, domain, method, seed):
        self.validate(domain)
        return {"points": self.points, "values": self.values}

    def evaluate(self, d, x, n, arrays):
        u = d[(self.field,)]
        return u - tf.cast(arrays["values"], u.dtype)
