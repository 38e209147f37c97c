"""Need names: which field value or partial derivative a residual or a condition reads.

An entry is a string or a tuple. ``"u"`` is the field ``u``; ``"u_xx"``, ``"v_xt"`` are its
partials (field, underscore, the coordinates differentiated by). Field and coordinate names
may be longer than a letter: ``"u_vel_x1_x1"`` and ``"u_vel_x1x1"`` both mean the second
derivative of the field ``u_vel`` by ``x1``. The field is the one whose name (followed by
``"_"``) starts the entry; the rest is split into coordinate names, optionally separated by
``"_"``. An entry that can be read in two ways is refused; the tuple form
``("u_vel", "x1", "x1")`` always works. The key of each value is the entry as written.

Example:
  ```python
  from hodiff.pinn.names import parse_need

  fields, coords = ("u", "u_vel"), ("x1", "x2", "t")
  assert parse_need("u_t", fields, coords) == ("u", ("t",))
  assert parse_need("u_vel_x1x1", fields, coords) == ("u_vel", ("x1", "x1"))
  assert parse_need(("u_vel", "x1", "x2"), fields, coords) == ("u_vel", ("x1", "x2"))
  ```
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import tensorflow as tf

from hodiff.operators import partials

__all__ = ["MissingNeed", "Need", "NeededValues", "named_partials", "need_key", "parse_need", "parse_needs"]

Need = str | tuple[str, ...]


class MissingNeed(KeyError):
    """A residual read ``d[entry]`` for an entry its ``needs`` does not list (a ``KeyError`` that explains)."""

    def __str__(self) -> str:
        return str(self.args[0])


class NeededValues(dict):
    r"""The ``d`` a residual reads: ``{entry: (N,)}``; reading an entry not in ``needs`` raises :class:`MissingNeed`.

    Args:
      values: the computed entries.
      owner: who declared the needs, e.g. ``"Problem"`` or ``"Condition 'wall'"`` (for the message).

    Example:
      ```python
      import pytest
      from hodiff.pinn.names import MissingNeed, NeededValues

      d = NeededValues({"u_xx": 1.0}, "Problem")
      with pytest.raises(MissingNeed, match=r"reads d\['u_yy'\].*needs=\('u_xx', 'u_yy'\)"):
          d["u_yy"]
      ```
    """

    def __init__(self, values: dict, owner: str):
        super().__init__(values)
        self.owner = owner

    def __missing__(self, key: Any) -> Any:
        listed = tuple(self)
        raise MissingNeed(
            f"{self.owner}: the residual reads d[{key!r}], which is not in its needs {listed}; needs must list "
            f"every value and partial the residual reads: needs={(*listed, key)!r}."
        )


def need_key(entry: Any) -> Need:
    """The dict key of a needs entry: the string itself, or the tuple (lists become tuples)."""
    return entry if isinstance(entry, str) else tuple(entry)


def _splits(text: str, coords: Sequence[str], start: int = 0) -> list[tuple[str, ...]]:
    """Every way to read ``text[start:]`` as coordinate names, optionally separated by ``"_"`` (at most 2)."""
    if start == len(text):
        return [()]
    found: list[tuple[str, ...]] = []
    for name in sorted(coords, key=len, reverse=True):
        if text.startswith(name, start):
            end = start + len(name)
            if end < len(text) and text[end] == "_":
                end += 1
                if end == len(text):
                    continue
            found += [(name, *rest) for rest in _splits(text, coords, end)]
            if len(found) > 1:
                break
    return found[:2]


def _furthest(text: str, coords: Sequence[str]) -> int:
    """How far ``text`` reads as coordinate names (where the first unknown one starts)."""
    best, stack = 0, [0]
    while stack:
        start = stack.pop()
        best = max(best, start)
        for name in coords:
            if text.startswith(name, start):
                end = start + len(name)
                stack.append(end + 1 if end < len(text) and text[end] == "_" else end)
    return min(best, len(text))


def parse_need(entry: Any, fields: Sequence[str], coords: Sequence[str], caller: str = "Problem") -> tuple:
    """The field and the coordinates differentiated by, for one needs entry.

    Args:
      entry: ``"u"``, ``"u_xx"``, ``"u_vel_x1_x1"`` or a tuple ``("u_vel", "x1", "x1")``.
      fields: the field names.
      coords: the coordinate names.
      caller: who asks, for the error message (e.g. ``"Problem: condition 'wall'"``).

    Returns:
      ``(field, (coord, ...))``; an empty tuple for the field value.

    Raises:
      ValueError: unknown field or coordinate, or an entry that reads two ways; the message
        names the entry, the fields and the coordinates.
    """
    fields, coords = tuple(fields), tuple(coords)
    choices = f"fields {fields}, coordinates {coords}"
    if not isinstance(entry, str):
        parts = tuple(entry) if isinstance(entry, (tuple, list)) else ()
        if not parts or not all(isinstance(p, str) for p in parts):
            raise ValueError(
                f"{caller}: needs entry {entry!r} must be a string such as 'u_xx' or a tuple of strings "
                f"(field, coordinate, ...) such as ('u', 'x', 'x'); {choices}."
            )
        if parts[0] not in fields:
            raise ValueError(
                f"{caller}: needs entry {entry!r} starts with {parts[0]!r}, which is not one of fields {fields}; "
                f"the coordinates are {coords}."
            )
        unknown = [p for p in parts[1:] if p not in coords]
        if unknown:
            raise ValueError(
                f"{caller}: needs entry {entry!r} differentiates by {unknown[0]!r}, which is not a coordinate of "
                f"the domain {coords}; the fields are {fields}."
            )
        return parts[0], parts[1:]
    if entry in fields:
        return entry, ()
    readings = []
    candidates = [f for f in fields if entry.startswith(f + "_")]
    for field in candidates:
        readings += [(field, split) for split in _splits(entry[len(field) + 1 :], coords)]
    if not candidates:
        raise ValueError(
            f"{caller}: needs entry {entry!r} starts with {entry.partition('_')[0]!r}, which is not one of fields "
            f"{fields}; write needs as 'u', 'u_t', 'u_xx' (field, underscore, coordinates), or as a tuple "
            f"('u', 'x', 'x'); the coordinates are {coords}."
        )
    if not readings:
        field = max(candidates, key=len)
        rest = entry[len(field) + 1 :]
        piece = rest[_furthest(rest, coords) :]
        if all(len(c) == 1 for c in coords):
            piece = piece[0]
        raise ValueError(
            f"{caller}: needs entry {entry!r} differentiates by {piece!r}, which is not a coordinate of the "
            f"domain {coords}; the fields are {fields}. Name partials as field, underscore, coordinates "
            f"('u_xt', 'u_x1_x2'), or as a tuple ('u', 'x1', 'x2')."
        )
    if len(readings) > 1:
        shown = " or ".join(repr((f, *s)) for f, s in readings[:2])
        raise ValueError(
            f"{caller}: needs entry {entry!r} can be read as {shown} ({choices}); write it as one of these tuples."
        )
    return readings[0]


def parse_needs(needs: Sequence[Any], fields: Sequence[str], coords: Sequence[str], caller: str = "Problem") -> dict:
    """``{key: (field, coords)}`` for each entry of ``needs`` (see :func:`parse_need`)."""
    if isinstance(needs, str):
        raise TypeError(f"{caller}: needs must be a tuple of entries, e.g. ({needs!r},), not the string {needs!r}.")
    return {need_key(entry): parse_need(entry, fields, coords, caller) for entry in needs}


def named_partials(
    solution: Callable[[tf.Tensor], tf.Tensor],
    x: tf.Tensor,
    coords: Sequence[str],
    columns: dict[str, int],
    parsed: dict[Any, tuple],
) -> dict[Any, tf.Tensor]:
    """The named values and partials of the solution's fields at ``x``, one shared tape set per field.

    Args:
      solution: ``(N, d) -> (N, fields)``.
      x: points ``(N, d)``, columns in ``coords`` order.
      coords: the coordinate names.
      columns: ``{field: output column}``.
      parsed: ``{key: (field, coords)}`` as :func:`parse_needs` returns.

    Returns:
      ``{key: (N,)}``.
    """
    values: dict[Any, tf.Tensor] = {}
    for field, column in columns.items():
        wanted = {key: partial for key, (f, partial) in parsed.items() if f == field}
        if wanted:
            scalar = lambda x, k=column: solution(x)[:, k]
            computed = partials(scalar, x, tuple(coords), tuple(set(wanted.values())))
            values.update({key: computed[partial] for key, partial in wanted.items()})
    return values
