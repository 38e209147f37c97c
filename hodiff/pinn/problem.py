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

import dataclasses
import inspect
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import keras
import tensorflow as tf

from hodiff import _validate, operators
from hodiff.jets import propagation, rules
from hodiff.pinn import names
from hodiff.pinn.conditions import Condition, Refinement, named_columns
from hodiff.pinn.geometry import Box

__all__ = ["CausalWeights", "Problem", "Stochastic"]

Residual = Callable[[dict, Mapping, dict], Any]


@dataclasses.dataclass
class CausalWeights:
    """Causal weighting of the residual terms of a time-dependent problem (Wang, Sankaran & Perdikaris 2024).

    The interior points are grouped into ``bins`` time slices; slice ``i``'s mean squared
    residual ``L_i`` is weighted by ``exp(-epsilon * sum_{k<i} L_k)`` (held constant in the
    gradient), so later times are fitted only once earlier times are. It keeps a PINN from
    settling on a solution that ignores the initial condition (Allen-Cahn's unstable u = 0).

    Args:
      epsilon: causality strength, finite and >= 0 (0 weighs every slice 1).
      bins: number of time slices, an int >= 1.

    References:
      Wang, Sankaran & Perdikaris (2024), "Respecting causality for training physics-informed
      neural networks", CMAME 421.
    """

    epsilon: float = 1.0
    bins: int = 32

    def __post_init__(self):
        _validate.check_finite_number(
            self.epsilon, "epsilon", "CausalWeights", 0, fix=" Pass causal=None to turn causal weighting off."
        )
        _validate.check_count(self.bins, "bins", "CausalWeights")

    def interval(self, domain: Box, dtype: Any) -> tuple[Any, Any]:
        """The time interval the bins divide: the domain's (a time window overrides it with variables)."""
        start, end = domain.bounds[str(domain.time)]
        return tf.constant(start, dtype), tf.constant(end, dtype)

    def weighted_mean(self, squares: tf.Tensor, points: tf.Tensor, domain: Box) -> tf.Tensor:
        """The causally weighted mean of per-point ``squares`` ``(N,)`` at ``points`` ``(N, d)``."""
        if domain.time is None:
            raise ValueError("CausalWeights: the domain has no time coordinate to order the residuals by.")
        start, end = self.interval(domain, squares.dtype)
        t = points[:, domain.coords.index(domain.time)]
        index = tf.clip_by_value(tf.cast((t - start) / (end - start) * self.bins, tf.int32), 0, self.bins - 1)
        per_bin = tf.math.unsorted_segment_mean(squares, index, self.bins)
        weights = tf.stop_gradient(
            tf.exp(-_validate.constant(self.epsilon, squares.dtype) * tf.cumsum(per_bin, exclusive=True))
        )
        return tf.reduce_mean(weights * per_bin)


@dataclasses.dataclass(frozen=True)
class Stochastic:
    """A ``needs`` entry: a stochastic estimate of a differential operator on one field, resampled every step.

    ``d[name]`` in the residual is then ``operator(u, method="stochastic")``, an estimate of ``operator`` on ``field``
    (``num_samples`` random jets per point, without the standard error), drawn afresh at every
    training step from a seed that is a function of the run's seed and the step number only (so
    a resumed run draws exactly as the uninterrupted one). Evaluated without a seed (e.g.
    ``Trainer.residual``), the entry is the exact operator, ``operator(u, method)(x)``.

    A noisy residual ``r = r_true + e`` (``E[e] = 0``) squared is biased: ``E[r^2] = r_true^2 +
    Var(e)``, so minimising the plain mean squared residual also minimises the estimator's
    variance, which pulls the network towards functions the estimator sees as smooth rather than
    towards the solution (the bias vanishes only where ``Var(e) = 0``). With two independent
    draws ``r1``, ``r2`` of the residual, ``E[r1 r2] = r_true^2``: :meth:`Problem.loss_terms`
    uses ``mean(r1 * r2)`` for the residual terms of a problem with stochastic needs (its value
    and its gradient are unbiased; a single batch's value can be negative), unless the problem
    is built with ``unbiased=False`` (one draw, ``mean(r^2)``: half the cost, biased). Linear
    residuals (e.g. Poisson, ``-Delta u - f``) and nonlinear ones (``Delta u + u^3 - f``) are
    both fine: only the operator's samples are random, and the two draws share everything else.

    Args:
      name: the key of the estimate in the residual's ``d``, a str not naming a partial
        (e.g. ``"lap_u"``).
      operator: a :class:`hodiff.operators.Operator` (``operators.Laplacian()``, ``operators.Biharmonic()``, ...).
      field: the output field it applies to.
      num_samples: per point, sampled groups (``"sparse"``: at most the number of groups, ``d``
        for the Laplacian) or random directions (dense samplings).
      sampling: ``"sparse"``, ``"rademacher"`` or ``"gaussian"`` (see :meth:`hodiff.operators.Operator.estimate`).
      method: ``"nested"`` (nested tapes along each direction; any network, output transform
        included) or ``"forward"`` (Taylor mode, much faster; the problem must have no
        ``output_transform`` and the model must be a Keras chain of Dense / elementwise layers).

    References:
      Shi et al., "Stochastic Taylor Derivative Estimator", NeurIPS 2024 (arXiv:2412.00088).
      Hu et al., "Tackling the curse of dimensionality with physics-informed neural networks",
      2024 (arXiv:2307.12306) (SDGD; its two-draw unbiased residual loss).
    """

    name: str
    operator: operators.Operator
    field: str = "u"
    num_samples: int = 16
    sampling: str = "sparse"
    method: str = "nested"

    def __post_init__(self):
        if not isinstance(self.name, str) or not self.name:
            raise ValueError(f"Stochastic: name must be a non-empty str (the key in d), got {self.name!r}.")
        if not isinstance(self.operator, operators.Operator) or "stochastic" not in self.operator.methods:
            raise TypeError(
                f"Stochastic {self.name!r}: operator must be a hodiff.operators.Operator with a stochastic method "
                f"(e.g. operators.Laplacian()), got {type(self.operator).__name__}."
            )
        _validate.check_count(self.num_samples, "num_samples", f"Stochastic {self.name!r}")
        if self.sampling not in operators.SAMPLINGS:
            raise ValueError(
                f"Stochastic {self.name!r}: sampling={self.sampling!r} is not an option; "
                f"use one of {operators.SAMPLINGS}."
            )
        if self.method not in ("nested", "forward"):
            raise ValueError(f"Stochastic {self.name!r}: method={self.method!r}; use 'nested' or 'forward'.")

    @tf.autograph.experimental.do_not_convert  # plain Python; converting stde's lambdas only warns
    def evaluate(self, solution: Callable, x: tf.Tensor, column: int, seed: Any) -> tf.Tensor:
        """The estimate ``(N,)`` at ``x`` for draw ``seed`` (an int tensor), or the exact value for ``seed=None``."""
        if self.method == "forward":
            u = solution  # Problem.solution is the Keras model itself when there is no output transform
            if not isinstance(u, keras.layers.Layer):
                raise ValueError(
                    f"Stochastic {self.name!r}: method='forward' propagates jets through the Keras model itself, "
                    f"so the problem must have no output_transform (and the solution must come from "
                    f"Problem.solution); use method='nested' otherwise."
                )
        else:
            u = lambda points: solution(points)[:, column]
        if seed is None:
            value = self.operator(u, method=self.method)(x)
        else:
            options = dict(num_samples=self.num_samples, seed=seed, sampling=self.sampling, jets=self.method)
            value = self.operator(u, method="stochastic", **options)(x)
        return value[:, column] if value.shape.rank == 2 else value


class Problem:
    """A PDE on a domain, solved for one or more output fields; it owns its points and loss terms.

    Args:
      domain: a :class:`~hodiff.pinn.geometry.Box` (e.g. ``Interval * TimeDomain``).
      residual: ``residual(d, x, p)``: ``d`` maps each name in ``needs`` to a tensor ``(N,)``,
        ``x`` maps each coordinate name to its column ``(N,)``, ``p`` maps each unknown
        parameter to a scalar tensor. Returns the residual ``(N,)``; for a system of equations
        a dict ``{term name: (N,)}`` (e.g. ``"momentum_x"``) or a tuple named by ``residual_names``.
      needs: the field values and partials the residual uses: ``"u"``, ``"u_t"``, ``"u_xx"``,
        ``"v_xy"`` (field, underscore, coordinates), ``"u_vel_x1_x1"`` or the tuple
        ``("u_vel", "x1", "x1")`` for longer names (see :mod:`hodiff.pinn.names`); a
        :class:`Stochastic` entry for a stochastic operator estimate (e.g. a Laplacian in high
        dimension), resampled every step.
      conditions: :class:`~hodiff.pinn.conditions.Condition` objects (boundary, initial,
        periodic, data, or general conditions on any field).
      fields: names of the network's output columns, in order.
      parameters: unknown PDE parameters to learn, ``{name: initial value}`` (inverse problems).
      weights: loss weight per term name (default 1 each; finite, >= 0).
      output_transform: ``output_transform(x, outputs) -> outputs``, applied to the network's
        ``(N, fields)`` output to impose conditions exactly (hard constraints); ``x`` maps the
        coordinate names to columns.
      input_transform: ``input_transform(points) -> points``, ``(N, d) -> (N, d)``: the network is
        evaluated there instead of at the points themselves (e.g. a time window's local time,
        :class:`~hodiff.pinn.TimeWindows`); the residual, the conditions and ``output_transform``
        still see the points. Derivatives go through it (chain rule). ``None`` (default): none.
      refinements: :class:`~hodiff.pinn.Refinement` objects: more interior points in the regions they select,
        added to the uniform ones (the residual terms are means over all of them). Default: none.
      residual_names: the loss-term names of the residuals, one per equation. ``None``
        (default): the keys of a dict residual (found by calling the residual once on dummy
        values at construction), else ``("residual",)``; a tuple of several equations must be
        named here.
      causal: :class:`CausalWeights` for the residual terms of a time-dependent problem.
      unbiased: with :class:`Stochastic` needs, the residual terms are ``mean(r1 * r2)`` over two
        independent draws (``True``, default: an unbiased loss and gradient) or ``mean(r^2)`` over
        one (``False``: biased upwards by the estimator's variance). No effect without them.
      partials_method: how :meth:`named_partials` differentiates: ``"nested"`` (default) uses
        nested tapes; ``"forward"`` one Taylor-mode pass (:func:`hodiff.jets.propagation.forward_partials`)
        when the solution is a supported Keras chain (no output transform) and every need is a
        value, a first or a pure second partial, and nested tapes otherwise. On DeepXDE's Burgers
        network (3 x 20 tanh, 2540 points, XLA) a training step measured 1.13x faster with it
        (docs/benchmarks.md).

    Attributes:
      term_names: the loss terms, residuals then conditions, fixed at construction.
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
        residual_names: Sequence[str] | None = None,
        causal: CausalWeights | None = None,
        unbiased: bool = True,
        partials_method: str = "nested",
        input_transform: Callable[[tf.Tensor], tf.Tensor] | None = None,
        refinements: Sequence[Refinement] = (),
    ):
        for refinement in refinements:
            if not isinstance(refinement, Refinement):
                raise TypeError(
                    f"Problem: refinements must be hodiff.pinn.Refinement objects, got {type(refinement).__name__}."
                )
        self.refinements = tuple(refinements)
        if input_transform is not None and not callable(input_transform):
            raise TypeError(
                f"Problem: input_transform must be a function (N, d) points -> (N, d) points, or None; got "
                f"{type(input_transform).__name__}."
            )
        self.input_transform = input_transform
        if partials_method not in ("nested", "forward"):
            raise ValueError(
                f"Problem: partials_method={partials_method!r} is not an option; use 'nested' (tapes) or "
                "'forward' (one forward pass for Keras chains, tapes otherwise)."
            )
        self.partials_method = partials_method
        self.domain, self.residual, self.fields = domain, residual, tuple(fields)
        self.conditions, self.parameters = list(conditions), dict(parameters or {})
        self.output_transform, self.unbiased = output_transform, bool(unbiased)
        if isinstance(needs, str):
            raise TypeError(f"Problem: needs must be a tuple of entries, e.g. ({needs!r},), not the string {needs!r}.")
        self.stochastic = {entry.name: entry for entry in needs if isinstance(entry, Stochastic)}
        self.needs = names.parse_needs(
            [entry for entry in needs if not isinstance(entry, Stochastic)], self.fields, domain.coords
        )
        self._check_stochastic([entry for entry in needs if isinstance(entry, Stochastic)])
        probed = self._probe_residual()
        if residual_names is None:
            residual_names = self._names_of(probed)
        if isinstance(residual_names, str) or not residual_names or len(set(residual_names)) != len(residual_names):
            raise ValueError(
                f"Problem: residual_names must be a tuple of distinct names, one per equation, got {residual_names!r}."
            )
        self.residual_names = tuple(residual_names)
        for condition in self.conditions:
            if not isinstance(condition, Condition):
                raise TypeError(
                    "Problem: conditions must be hodiff.pinn.conditions objects (Dirichlet, Initial, Condition, "
                    f"...), got {type(condition).__name__}."
                )
            if condition.field is not None and condition.field not in self.fields:
                raise ValueError(
                    f"Problem: condition {condition.name!r} is on field {condition.field!r}, which is not one "
                    f"of fields {self.fields}."
                )
            condition.validate(domain)
            if condition.needs:
                caller = f"Problem: condition {condition.name!r}"
                names.parse_needs(condition.needs_for(domain.coords), self.fields, domain.coords, caller)
                self._probe_condition(condition)
        condition_names = [c.name for c in self.conditions]
        if len(set(condition_names)) != len(condition_names) or set(condition_names) & set(self.residual_names):
            raise ValueError(
                f"Problem: loss term names must be unique, got residuals {self.residual_names} and conditions "
                f"{condition_names}; pass name=... to a condition (or residual_names=...) to tell them apart."
            )
        self.term_names: tuple[str, ...] = self.residual_names + tuple(condition_names)
        self.weights = dict(weights or {})
        unknown = set(self.weights) - set(self.term_names)
        if unknown:
            raise ValueError(
                f"Problem: weights given for {sorted(unknown)}, which are not loss terms; the terms are "
                f"{self.term_names}."
            )
        for name, weight in self.weights.items():
            _validate.check_finite_number(weight, f"weights[{name!r}] = {weight!r}; a loss weight", "Problem", 0)
        if causal is not None:
            if not isinstance(causal, CausalWeights):
                raise TypeError(f"Problem: causal must be a CausalWeights or None, got {type(causal).__name__}.")
            if domain.time is None:
                raise ValueError("Problem: causal weights need a time coordinate; the domain has none.")
        self.causal = causal

    def _check_stochastic(self, entries: list[Stochastic]) -> None:
        if len(self.stochastic) != len(entries) or set(self.stochastic) & set(self.needs):
            raise ValueError(
                f"Problem: Stochastic needs must have distinct names, none equal to another entry of needs; got "
                f"{[e.name for e in entries]} and {list(self.needs)}."
            )
        for entry in entries:
            if entry.field not in self.fields:
                raise ValueError(
                    f"Problem: Stochastic {entry.name!r} is on field {entry.field!r}, which is not one of fields "
                    f"{self.fields}."
                )
            d = len(self.domain.coords)
            groups = entry.operator.terms(d).indices.shape[0]
            if entry.sampling == "sparse" and entry.num_samples > groups:
                raise ValueError(
                    f"Problem: Stochastic {entry.name!r} samples num_samples={entry.num_samples} groups, but "
                    f"{entry.operator.name} in d={d} dimensions has only {groups}; use num_samples <= {groups} "
                    f"(num_samples = {groups} is exact)."
                )

    def _dummies(self, dtype: tf.DType) -> tuple[tf.Tensor, Any]:
        """Two dummy points' values ``(2,)`` and their coordinate columns, for a probing call."""
        dummy = tf.fill([2], tf.constant(0.5, dtype))
        return dummy, named_columns(tf.fill([2, len(self.domain.coords)], tf.constant(0.5, dtype)), self.domain.coords)

    def _probe_residual(self) -> Any:
        """One call of the residual on dummy values (``None`` when it fails on them), at construction.

        A residual that reads ``d[entry]`` for an entry not in ``needs`` raises :class:`~hodiff.pinn.names.MissingNeed`
        here, when the problem is built, rather than at the first training step; any other failure on dummy values is
        left to the first real evaluation, which reports what is wrong.
        """
        for dtype in (tf.float64, tf.float32):
            dummy, x = self._dummies(dtype)
            values = names.NeededValues({key: dummy for key in (*self.needs, *self.stochastic)}, "Problem")
            try:
                return self.residual(values, x, {name: tf.constant(v, dtype) for name, v in self.parameters.items()})
            except names.MissingNeed:
                raise
            except Exception:  # noqa: BLE001 - any other failure is reported by the first real evaluation
                continue
        return None

    @staticmethod
    def _names_of(result: Any) -> tuple[str, ...]:
        """The residual names a probing call's result implies: a dict's keys, else ("residual",)."""
        if isinstance(result, dict) and result and all(isinstance(k, str) for k in result):
            return tuple(result)
        return ("residual",)

    def _probe_condition(self, condition: Condition) -> None:
        """Calls a condition's residual once on dummy values, so that one reading ``d[entry]`` for an entry not in
        its ``needs`` raises :class:`~hodiff.pinn.names.MissingNeed` when the problem is built."""
        owner = f"{type(condition).__name__} {condition.name!r}"
        needs = names.parse_needs(condition.needs_for(self.domain.coords), self.fields, self.domain.coords)
        for dtype in (tf.float64, tf.float32):
            dummy, x = self._dummies(dtype)
            d = names.NeededValues({key: dummy for key in needs}, owner)
            n = {c: tf.zeros_like(dummy) for c in self.domain.coords}
            try:
                condition.evaluate(d, x, n, {"points": x.points})
                return
            except names.MissingNeed:
                raise
            except Exception:  # noqa: BLE001 - any other failure is reported by the first real evaluation
                continue

    def replace(self, **changes: Any) -> Problem:
        """A copy with some attributes changed (e.g. ``problem.replace(causal=CausalWeights())``; ``domain``
        for the same problem on another domain, e.g. a time window)."""
        allowed = (
            "causal", "weights", "output_transform", "unbiased", "partials_method", "domain", "input_transform",
            "refinements",
        )  # fmt: skip
        unknown = set(changes) - set(allowed)
        if unknown:
            raise ValueError(
                f"Problem.replace: can change {', '.join(allowed)}, not {sorted(unknown)}; build a new Problem."
            )
        arguments = {
            "domain": self.domain,
            "residual": self.residual,
            "needs": (*self.needs, *self.stochastic.values()),
            "conditions": self.conditions,
            "fields": self.fields,
            "parameters": self.parameters,
            "weights": self.weights,
            "output_transform": self.output_transform,
            "residual_names": self.residual_names,
            "causal": self.causal,
            "unbiased": self.unbiased,
            "partials_method": self.partials_method,
            "input_transform": self.input_transform,
            "refinements": self.refinements,
        }
        return Problem(**{**arguments, **changes})

    def solution(self, model: Callable[[tf.Tensor], tf.Tensor]) -> Callable[[tf.Tensor], tf.Tensor]:
        """The solution as a function of points ``(N, d) -> (N, fields)`` (transform applied).

        Without an output transform it is ``model`` itself, so that operators evaluated with
        ``method="forward"`` (:class:`Stochastic`, ``partials_method="forward"``) see the Keras chain.
        """

        if self.output_transform is None and self.input_transform is None:
            return model  # the model itself: method="forward" propagates jets through it

        def solution(x):
            outputs = model(x if self.input_transform is None else self.input_transform(x))
            if self.output_transform is None:
                return outputs
            return self._checked_outputs(self.output_transform(named_columns(x, self.domain.coords), outputs), x)

        return solution

    def _checked_outputs(self, outputs: Any, x: tf.Tensor) -> tf.Tensor:
        """The output transform's result, refused unless it is ``(N, fields)`` (checked on static shapes)."""
        outputs = tf.convert_to_tensor(outputs)
        count = len(self.fields)
        shape = outputs.shape
        wrong_rank = shape.rank is not None and shape.rank != 2
        wrong = wrong_rank or (shape.rank == 2 and shape[1] is not None and shape[1] != count)
        if wrong or (shape.rank == 2 and None not in (shape[0], x.shape[0]) and shape[0] != x.shape[0]):
            one = " For one field, return u[:, None] (or tf.reshape(u, (-1, 1)))." if shape.rank == 1 else ""
            raise ValueError(
                f"Problem: output_transform returned shape {tuple(shape)} for {x.shape[0]} points; it must return "
                f"(N, {count}), one column per field {self.fields} (e.g. tf.stack([...], axis=1)).{one}"
            )
        return outputs

    def sample_points(self, interior: int, method: str = "sobol", seed: int = 0) -> dict[str, Any]:
        """The training points: ``{"interior": (interior, d), condition name: {"points": ..., ...}}``.

        The interior is drawn with ``seed``, condition ``i`` with ``seed + 1 + i``; the :attr:`refinements`' points
        follow the uniform ones in ``"interior"``
        (:func:`hodiff.pinn.data.sample_points`, where the training data draws its points).
        """
        from hodiff.pinn.data import sample_points  # data builds on the problem

        return sample_points(self, interior, method, seed)

    def named_partials(self, solution: Callable, x: tf.Tensor, needs: Sequence[Any]) -> dict:
        """The values and partials named in ``needs`` at points ``x`` ``(N, d)``, each ``(N,)``.

        With :attr:`partials_method` ``"forward"`` and a Keras chain of Dense/elementwise layers
        (what :func:`hodiff.pinn.mlp` builds without Fourier features or periodic embedding)
        whose needs are values, first and pure second partials (``u``, ``u_t``, ``u_xx``), one
        stacked forward pass computes them all (value, one tangent per coordinate
        differentiated, one channel per pure second partial). Otherwise one set of tapes per
        field serves every entry of that field (see :mod:`hodiff.pinn.names`).

        Args:
          solution: ``solution(x) -> (N, fields)`` (see :meth:`solution`).
          x: the points, a tensor ``(N, d)`` in the order of the domain's coordinates.
          needs: entries such as ``"u_xx"`` or ``("u_vel", "x1", "x1")``.

        Returns:
          ``{entry: (N,)}`` keyed by the entries as written (lists become tuples).
        """
        parsed = names.parse_needs(needs, self.fields, self.domain.coords)
        model = solution if isinstance(solution, keras.layers.Layer) else None
        if self.partials_method == "forward" and model is not None and parsed and self._forward_ready(model, parsed):
            return self._forward_partials(model, x, parsed)
        columns = {field: i for i, field in enumerate(self.fields)}
        return names.named_partials(solution, x, self.domain.coords, columns, parsed)

    @staticmethod
    def _forward_ready(model: Any, parsed: dict) -> bool:
        """Whether the forward pass serves these needs: pure partials of order <= 2 of a chain."""
        if any(len(partial) > 2 or len(set(partial)) > 1 for _, partial in parsed.values()):
            return False
        try:
            rules.supported_layers(model, "Problem")
        except ValueError:
            return False
        return True

    def _forward_partials(self, model: Any, x: tf.Tensor, parsed: dict) -> dict:
        index = {name: i for i, name in enumerate(self.domain.coords)}
        first = sorted({index[p[0]] for _, p in parsed.values() if len(p) == 1})
        second = sorted({index[p[0]] for _, p in parsed.values() if len(p) == 2})
        value, firsts, seconds = propagation.forward_partials(model, x, first, second, caller="Problem")
        result = {}
        for key, (field, partial) in parsed.items():
            if not partial:
                tensor = value
            else:
                tensor = (firsts if len(partial) == 1 else seconds)[index[partial[0]]]
            result[key] = tensor[:, self.fields.index(field)]
        return result

    def pde_residuals(
        self, solution: Callable, x: tf.Tensor, parameters: dict[str, tf.Tensor], seed: Any = None
    ) -> list[tf.Tensor]:
        """The residuals at interior points ``x``, each ``(N,)``, in the order of ``residual_names``.

        ``seed`` (an int or int tensor) draws the :class:`Stochastic` needs (entry ``i`` from
        ``seed * 64 + i``); ``None`` evaluates them exactly.
        """
        return self._residuals(solution, x, parameters, self.named_partials(solution, x, tuple(self.needs)), seed)

    def _residuals(self, solution: Callable, x: tf.Tensor, parameters: dict, partials: dict, seed: Any) -> list:
        values = names.NeededValues(partials, "Problem")
        for i, (name, entry) in enumerate(self.stochastic.items()):
            draw = None if seed is None else tf.cast(seed, tf.int64) * 64 + i
            values[name] = entry.evaluate(solution, x, self.fields.index(entry.field), draw)
        result = self.residual(values, named_columns(x, self.domain.coords), parameters)
        residuals = self._as_list(result)
        checked = []
        for name, r in zip(self.residual_names, residuals):
            r = tf.convert_to_tensor(r)
            if r.shape.rank == 2 and r.shape[1] == 1:
                r = r[:, 0]
            if r.shape.rank != 1 or (r.shape[0] is not None and x.shape[0] is not None and r.shape[0] != x.shape[0]):
                raise ValueError(
                    f"Problem: the residual function returned shape {tuple(r.shape)} (residual {name!r}) for "
                    f"{x.shape[0]} points; it must return one value per point, shape (N,), or a tuple of "
                    f"such tensors for a system. Build it from d[...] entries, which are (N,)."
                )
            checked.append(r)
        return checked

    def _as_list(self, result: Any) -> list:
        count = len(self.residual_names)
        if isinstance(result, dict):
            if set(result) != set(self.residual_names):
                raise ValueError(
                    f"Problem: the residual function returned a dict with keys {sorted(result)}; pass "
                    f"residual_names={tuple(sorted(result))} (now {self.residual_names}) so the loss terms are "
                    f"known up front."
                )
            return [result[name] for name in self.residual_names]
        residuals = list(result) if isinstance(result, (tuple, list)) else [result]
        if len(residuals) != count:
            raise ValueError(
                f"Problem: the residual function returned {len(residuals)} residuals but residual_names has {count} "
                f"({self.residual_names}); name one loss term per equation: "
                'residual_names=("momentum", "continuity", ...).'
            )
        return residuals

    def condition_residual(self, condition: Condition, solution: Callable, arrays: dict[str, tf.Tensor]) -> tf.Tensor:
        """The residual ``(N,)`` of one condition at its sampled ``arrays``, its partials by :meth:`named_partials`
        (the one path of the residuals and the conditions, so ``partials_method`` applies to both)."""
        if condition.needs:
            one_path = "partials" in inspect.signature(condition.residual).parameters  # not in a subclass's older one
            partials = {"partials": self.named_partials} if one_path else {}
            residual = condition.residual(solution, 0, arrays, self.domain.coords, fields=self.fields, **partials)
        else:  # a subclass written for the older interface
            index = self.fields.index(condition.field) if condition.field in self.fields else 0
            residual = condition.residual(solution, index, arrays, self.domain.coords)
        if residual.shape.rank != 1:
            raise ValueError(
                f"Problem: condition {condition.name!r} gave residuals of shape {tuple(residual.shape)}; expected (N,)."
            )
        return residual

    def loss_terms(
        self,
        solution: Callable,
        points: dict[str, Any],
        parameters: dict[str, tf.Tensor],
        seed: Any = 0,
        unbiased: bool | None = None,
    ) -> dict[str, tf.Tensor]:
        """The mean squared residual of every term, keyed by :attr:`term_names`.

        Args:
          solution: ``solution(x) -> (N, fields)`` (see :meth:`solution`).
          points: as :meth:`sample_points` returns them (arrays, tensors or variables).
          parameters: ``{name: scalar}`` for the unknown parameters.
          seed: with :class:`Stochastic` needs, an int or int tensor that picks the draw (the
            trainer passes one per step); two draws ``2 seed`` and ``2 seed + 1`` give
            ``mean(r1 * r2)`` when ``unbiased`` (see :class:`Stochastic`). Unused otherwise.
          unbiased: overrides the problem's ``unbiased`` for this call (``None`` keeps it); L-BFGS
            uses ``False``, since ``mean(r1 * r2)`` of a frozen draw is not bounded below.

        Returns:
          ``{name: scalar}``; the residual terms are causally weighted when ``causal`` is set.
        """
        interior = tf.convert_to_tensor(points["interior"])
        if self.causal is not None:
            mean_of = lambda squares: self.causal.weighted_mean(squares, interior, self.domain)
        else:
            mean_of = tf.reduce_mean
        if self.stochastic:
            seed = tf.cast(seed, tf.int64) * 2
            partials = self.named_partials(solution, interior, tuple(self.needs))
            first = self._residuals(solution, interior, parameters, partials, seed)
            if self.unbiased if unbiased is None else unbiased:
                second = self._residuals(solution, interior, parameters, partials, seed + 1)
                squares = [r1 * r2 for r1, r2 in zip(first, second)]
            else:
                squares = [tf.square(r) for r in first]
        else:
            squares = [tf.square(r) for r in self.pde_residuals(solution, interior, parameters)]
        terms = {name: mean_of(s) for name, s in zip(self.residual_names, squares)}
        for condition in self.conditions:
            arrays = {key: tf.convert_to_tensor(value) for key, value in points[condition.name].items()}
            terms[condition.name] = tf.reduce_mean(tf.square(self.condition_residual(condition, solution, arrays)))
        return terms
