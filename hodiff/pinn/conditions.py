"""Boundary, initial, periodic and data conditions: each samples its points and gives residuals.

A condition's residual is zero where the condition holds; the trainer minimises its mean
square. Values are a number or a function of the named coordinates, ``value(x)`` with
``x["t"]`` a tensor of shape ``(N,)``.

Example:
  ```python
  import numpy as np
  import tensorflow as tf
  from hodiff.pinn import conditions

  boundary = conditions.Dirichlet(0.0, count=80)                                 # u = 0
  initial = conditions.Initial(lambda x: -tf.sin(np.pi * x["x"]), count=160)     # u(x, 0)
  wrap = conditions.Periodic("x", count=64)                                      # u and u_x
  ```
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import tensorflow as tf

from hodiff.pinn.geometry import Box

__all__ = ["Condition", "Data", "Dirichlet", "Initial", "Neumann", "Periodic"]

Value = float | Callable[[dict], tf.Tensor]


def named_columns(x: tf.Tensor, coords: tuple[str, ...]) -> dict[str, tf.Tensor]:
    """``{name: x[:, i]}`` for the named coordinates."""
    return {name: x[:, i] for i, name in enumerate(coords)}


def _checked(value: Value, kind: str, name: str) -> Value:
    """``value`` if it is callable or a finite number; a clear error otherwise."""
    if callable(value):
        return value
    if isinstance(value, bool) or not isinstance(value, (int, float, np.number)) or not np.isfinite(value):
        raise ValueError(
            f"{kind} {name!r}: value must be a finite number or a function of the coordinates, got {value!r}."
        )
    return value


def _evaluate(value: Value, x: tf.Tensor, coords: tuple[str, ...], caller: str) -> tf.Tensor:
    if callable(value):
        result = tf.convert_to_tensor(value(named_columns(x, coords)))
        result = tf.reshape(result, [-1]) if result.shape.rank == 2 and result.shape[1] == 1 else result
        if result.shape.rank != 1:
            raise ValueError(
                f"{caller}: the value function must return one value per point, shape (N,); it returned "
                f"{tuple(result.shape)}."
            )
        return tf.cast(result, x.dtype)
    return tf.fill(tf.shape(x)[:1], tf.constant(value, x.dtype))


class Condition:
    """Base class. Subclasses set ``name``, ``field`` and ``count`` and implement
    :meth:`sample` (numpy arrays, at least ``"points"``) and :meth:`residual`."""

    name: str = "condition"
    field: str = "u"
    count: int = 0

    def validate(self, domain: Box) -> None:
        """Raises ``ValueError`` if the condition cannot apply to ``domain`` (checked by the Problem)."""

    def sample(self, domain: Box, method: str, seed: int) -> dict[str, np.ndarray]:
        raise NotImplementedError

    def residual(
        self,
        solution: Callable[[tf.Tensor], tf.Tensor],
        field_index: int,
        arrays: dict[str, tf.Tensor],
        coords: tuple[str, ...],
    ) -> tf.Tensor:
        raise NotImplementedError


class Dirichlet(Condition):
    """``u = value`` on the spatial boundary (all faces, all times).

    Args:
      value: a number or ``value(x) -> (N,)``.
      count: number of boundary points.
      field: which output field.
      name: the loss term's name (default ``"boundary"``).
    """

    def __init__(self, value: Value = 0.0, count: int = 100, field: str = "u", name: str = "boundary"):
        self.value, self.count, self.field, self.name = _checked(value, type(self).__name__, name), count, field, name

    def sample(self, domain, method, seed):
        points, _ = domain.sample_boundary(self.count, method, seed)
        return {"points": points}

    def residual(self, solution, field_index, arrays, coords):
        x = arrays["points"]
        return solution(x)[:, field_index] - _evaluate(self.value, x, coords, self.name)


class Initial(Dirichlet):
    """``u(x, t0) = value(x)`` at the first time (default name ``"initial"``)."""

    def __init__(self, value: Value, count: int = 100, field: str = "u", name: str = "initial"):
        super().__init__(value, count, field, name)

    def sample(self, domain, method, seed):
        return {"points": domain.sample_initial(self.count, method, seed)}


class Neumann(Condition):
    """``du/dn = value`` on the spatial boundary (outward normal derivative).

    Args:
      value: a number or ``value(x) -> (N,)``.
      count: number of boundary points.
      field: which output field.
      name: the loss term's name (default ``"neumann"``).
    """

    def __init__(self, value: Value = 0.0, count: int = 100, field: str = "u", name: str = "neumann"):
        self.value, self.count, self.field, self.name = _checked(value, "Neumann", name), count, field, name

    def sample(self, domain, method, seed):
        points, normals = domain.sample_boundary(self.count, method, seed)
        return {"points": points, "normals": normals}

    def residual(self, solution, field_index, arrays, coords):
        x = arrays["points"]
        with tf.GradientTape() as tape:
            tape.watch(x)
            u = solution(x)[:, field_index]
        normal_derivative = tf.reduce_sum(tape.gradient(u, x) * arrays["normals"], axis=1)
        return normal_derivative - _evaluate(self.value, x, coords, self.name)


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
        self.coord, self.count, self.field, self.derivatives, self.name = coord, count, field, derivatives, name

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
        return {"points": low, "partners": high}

    def residual(self, solution, field_index, arrays, coords):
        column = coords.index(self.coord)
        x = tf.concat([arrays["points"], arrays["partners"]], axis=0)
        count = tf.shape(arrays["points"])[0]
        values = [solution(x)[:, field_index]] if self.derivatives == 0 else []
        if self.derivatives > 0:
            with tf.GradientTape(persistent=True) as tape:
                tape.watch(x)
                u = solution(x)[:, field_index]
                values.append(u)
                for _ in range(self.derivatives):
                    u = tape.gradient(u, x)[:, column]
                    values.append(u)
            del tape
        return tf.concat([v[:count] - v[count:] for v in values], axis=0)


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
        for label, array in (("points", points), ("values", values)):
            bad = np.flatnonzero(~np.all(np.isfinite(array.reshape(len(array), -1)), axis=1))
            if bad.size:
                raise ValueError(
                    f"Data {name!r}: {label} hold NaN or Inf in {bad.size} rows (first: row {bad[0]}); remove "
                    f"or fill those observations."
                )
        self.points, self.values, self.count, self.field, self.name = points, values, len(values), field, name

    def validate(self, domain):
        if self.points.shape[1] != len(domain.coords):
            raise ValueError(
                f"Data {self.name!r}: points have {self.points.shape[1]} columns but the domain has coordinates "
                f"{domain.coords}."
            )
        slack = 1e-9 * (domain.high - domain.low)
        outside = np.flatnonzero(
            np.any((self.points < domain.low - slack) | (self.points > domain.high + slack), axis=1)
        )
        if outside.size:
            raise ValueError(
                f"Data {self.name!r}: {outside.size} points lie outside the domain {domain.bounds} (first: row "
                f"{outside[0]}, "
                f"{self.points[outside[0]].tolist()}); the network is only trained inside it, so drop or clip them."
            )

    def sample(self, domain, method, seed):
        self.validate(domain)
        return {"points": self.points, "values": self.values}

    def residual(self, solution, field_index, arrays, coords):
        return solution(arrays["points"])[:, field_index] - arrays["values"]
