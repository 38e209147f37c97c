"""A PDE problem: a residual written with named partials, conditions, fields, unknown parameters.

Example:
  ```python
  import numpy as np
  import tensorflow as tf
  from hodiff.pinn import Problem, conditions
  from hodiff.pinn.geometry import Interval, TimeDomain

  nu = 0.01 / np.pi
  burgers = Problem(
      domain=Interval("x", -1.0, 1.0) * TimeDomain("t", 0.0, 1.0),
      needs=("u", "u_t", "u_x", "u_xx"),
      residual=lambda d, x, p: d["u_t"] + d["u"] * d["u_x"] - nu * d["u_xx"],
      conditions=[conditions.Dirichlet(0.0, count=80),
                  conditions.Initial(lambda x: -tf.sin(np.pi * x["x"]), count=160)],
  )
  assert burgers.term_names == ("residual", "boundary", "initial")
  ```
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import tensorflow as tf

from hodiff.operators import partials
from hodiff.pinn.conditions import Condition, named_columns
from hodiff.pinn.geometry import Box

__all__ = ["Problem"]

Residual = Callable[[dict, dict, dict], Any]


class Problem:
    """A PDE on a domain, solved for one or more output fields.

    Args:
      domain: a :class:`~hodiff.pinn.geometry.Box` (e.g. ``Interval * TimeDomain``).
      residual: ``residual(d, x, p)``: ``d`` maps each name in ``needs`` to a tensor ``(N,)``,
        ``x`` maps each coordinate name to its column ``(N,)``, ``p`` maps each unknown
        parameter to a scalar tensor. Returns the residual ``(N,)``, or a tuple of them for a
        system of equations.
      needs: the field values and partials the residual uses: ``"u"``, ``"u_t"``, ``"u_xx"``,
        ``"v_xy"`` (field, underscore, one letter per differentiation).
      conditions: boundary, initial, periodic and data conditions.
      fields: names of the network's output columns, in order.
      parameters: unknown PDE parameters to learn, ``{name: initial value}`` (inverse problems).
      weights: loss weight per term name (default 1 each).
      output_transform: ``output_transform(x, outputs) -> outputs``, applied to the network's
        ``(N, fields)`` output to impose conditions exactly (hard constraints); ``x`` maps the
        coordinate names to columns.
    """

    def __init__(
        self,
        domain: Box,
        residual: Residual,
        needs: Sequence[str],
        conditions: Sequence[Condition] = (),
        fields: Sequence[str] = ("u",),
        parameters: dict[str, float] | None = None,
        weights: dict[str, float] | None = None,
        output_transform: Callable[[dict, tf.Tensor], tf.Tensor] | None = None,
    ):
        self.domain, self.residual, self.fields = domain, residual, tuple(fields)
        self.conditions, self.parameters = list(conditions), dict(parameters or {})
        self.output_transform = output_transform
        self.needs = {name: self._parse_need(name) for name in needs}
        for condition in self.conditions:
            if not isinstance(condition, Condition):
                raise TypeError(f"Problem: conditions must be hodiff.pinn.conditions objects (Dirichlet, Initial, ...), got {type(condition).__name__}.")
            if condition.field not in self.fields:
                raise ValueError(f"Problem: condition {condition.name!r} is on field {condition.field!r}, which is not one of fields {self.fields}.")
        names = [c.name for c in self.conditions]
        if len(set(names)) != len(names):
            raise ValueError(f"Problem: condition names must be unique, got {names}; pass name=... to tell them apart.")
        self.weights = dict(weights or {})
        self._residual_count = None

    def _parse_need(self, name: str) -> tuple[str, str]:
        field, _, partial = name.partition("_")
        if field not in self.fields:
            raise ValueError(f"Problem: needs entry {name!r} starts with {field!r}, which is not one of fields {self.fields}; write needs as 'u', 'u_t', 'u_xx'.")
        for letter in partial:
            if letter not in self.domain.coords:
                raise ValueError(f"Problem: needs entry {name!r} differentiates by {letter!r}, which is not a coordinate of the domain {self.domain.coords}.")
        return field, partial

    @property
    def residual_names(self) -> tuple[str, ...]:
        count = self._residual_count or 1
        return ("residual",) if count == 1 else tuple(f"residual_{i}" for i in range(count))

    @property
    def term_names(self) -> tuple[str, ...]:
        """Names of the loss terms: the residual(s), then each condition."""
        return self.residual_names + tuple(c.name for c in self.conditions)

    def solution(self, model: Callable[[tf.Tensor], tf.Tensor]) -> Callable[[tf.Tensor], tf.Tensor]:
        """The solution as a function of points ``(N, d) -> (N, fields)`` (transform applied)."""

        def solution(x):
            outputs = model(x)
            if self.output_transform is not None:
                outputs = self.output_transform(named_columns(x, self.domain.coords), outputs)
            return outputs

        return solution

    def pde_residuals(self, solution: Callable, x: tf.Tensor, parameters: dict[str, tf.Tensor]) -> list[tf.Tensor]:
        """The residual(s) at interior points ``x``, each of shape ``(N,)``."""
        values = {}
        for field_index, field in enumerate(self.fields):
            wanted = {name: partial for name, (f, partial) in self.needs.items() if f == field}
            if wanted:
                computed = partials(lambda x, k=field_index: solution(x)[:, k], x, self.domain.coords, tuple(set(wanted.values())))
                values.update({name: computed[partial] for name, partial in wanted.items()})
        result = self.residual(values, named_columns(x, self.domain.coords), parameters)
        residuals = list(result) if isinstance(result, (tuple, list)) else [result]
        checked = []
        for index, r in enumerate(residuals):
            r = tf.convert_to_tensor(r)
            if r.shape.rank == 2 and r.shape[1] == 1:
                r = r[:, 0]
            if r.shape.rank != 1 or (r.shape[0] is not None and x.shape[0] is not None and r.shape[0] != x.shape[0]):
                raise ValueError(
                    f"Problem: the residual function returned shape {tuple(r.shape)} (output {index}) for "
                    f"{x.shape[0]} points; it must return one value per point, shape (N,), or a tuple of "
                    f"such tensors for a system. Build it from d[...] entries, which are (N,)."
                )
            checked.append(r)
        if self._residual_count not in (None, len(checked)):
            raise ValueError(f"Problem: the residual function returned {len(checked)} outputs now and {self._residual_count} before.")
        self._residual_count = len(checked)
        return checked

    def condition_residual(self, condition: Condition, solution: Callable, arrays: dict[str, tf.Tensor]) -> tf.Tensor:
        return condition.residual(solution, self.fields.index(condition.field), arrays, self.domain.coords)
