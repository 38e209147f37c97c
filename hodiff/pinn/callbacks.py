"""Callbacks on the :class:`~hodiff.pinn.Trainer` and :class:`~hodiff.pinn.PINNModel`: metrics, early stopping,
adaptive weights, resampling.

The trainer calls every callback at each history row (Adam and L-BFGS), in two steps: first
:meth:`Callback.metrics` of every callback, whose values become columns of the row (in
``history.csv`` and TensorBoard), then :meth:`Callback.on_log` with the finished row, which may
return ``"stop"`` (or set ``trainer.stop_training = True``) to end the Adam phase. At the end of
each phase the trainer calls :meth:`Callback.on_phase_end` (and :meth:`Callback.on_phase_begin`
at its start). Around every compiled call of
``steps_per_call`` Adam steps it calls :meth:`Callback.on_chunk_begin` and
:meth:`Callback.on_chunk_end`: :class:`ResidualResampling` redraws the points before a call
and :class:`AdaptiveWeights` / :class:`GradNormWeights` move the loss weights after one, each through the trainer's
:class:`~hodiff.pinn.TrainingData` (``trainer.data``), which owns the points and the weights.

The same callbacks work in :meth:`PINNModel.fit <hodiff.pinn.PINNModel.fit>` (one protocol): there a chunk is
an epoch of ``steps_per_epoch`` steps, ``trainer`` is the model (its ``data`` is the
:class:`~hodiff.pinn.TrainingData`), and ``fit`` is one ``"adam"`` phase. The resampling and weighting callbacks
(:class:`ResidualResampling`, :class:`UniformResampling`, :class:`AdaptiveWeights`, :class:`GradNormWeights`)
need only those hooks; a callback with :meth:`Callback.metrics` or :meth:`Callback.on_log` reads the trainer's
history rows, which ``fit`` does not keep (its Keras equivalents: ``keras.callbacks.EarlyStopping``,
``validation_data``), and ``fit`` refuses it.

A callback should decide from the trainer's history (``trainer.history``, restored on resume)
rather than from state of its own, so that a resumed run decides exactly as an uninterrupted
one; :class:`EarlyStopping` works that way.

Example:
  ```python
  import numpy as np
  from hodiff import pinn
  from hodiff.pinn.callbacks import Callback, EarlyStopping, RelativeL2Error

  domain = pinn.Interval("x", 0.0, 1.0)
  problem = pinn.Problem(
      domain,
      needs=("u_xx",),
      residual=lambda d, x, p: d["u_xx"] + 1.0,
      conditions=[pinn.Dirichlet(0.0, count=16)],
  )
  x = np.linspace(0.0, 1.0, 11)[:, None]
  exact = 0.5 * x * (1.0 - x)


  class Steps(Callback):
      def on_log(self, trainer, row):
          self.last = row["step"]


  steps = Steps()
  trainer = pinn.Trainer(
      problem,
      pinn.mlp(domain, width=8, depth=2),
      interior=32,
      steps_per_call=10,
      log_every=10,
      progress=False,
      callbacks=[RelativeL2Error(x, exact), EarlyStopping(patience=20, min_delta=1.0), steps],
  )
  result = trainer.adam(100)
  assert result.stop_reason.startswith("early stopping") and result.steps < 100
  assert "reference_error" in trainer.history[-1] and steps.last == result.steps
  ```
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from hodiff import _validate
from hodiff.pinn.metrics import relative_l2_errors

if TYPE_CHECKING:
    from hodiff.pinn.trainer import Trainer

__all__ = [
    "AdaptiveWeights",
    "Callback",
    "EarlyStopping",
    "GradNormWeights",
    "RelativeL2Error",
    "ResidualResampling",
    "UniformResampling",
]


class Callback:
    """Base class of the trainer's callbacks; override the hooks you need (each does nothing here)."""

    def metrics(self, trainer: Trainer, row: dict[str, Any]) -> dict[str, float]:
        """Extra columns for the history row being built (``phase``, ``step``, losses so far)."""
        return {}

    def on_log(self, trainer: Trainer, row: dict[str, Any]) -> str | None:
        """Called with each finished history row; return ``"stop"`` to end the Adam phase."""
        return None

    def on_phase_begin(self, trainer: Trainer, phase: str) -> None:
        """Called when a phase starts training: ``phase`` is ``"adam"`` or ``"lbfgs"``."""

    def on_phase_end(self, trainer: Trainer, phase: str, result: Any) -> None:
        """Called when a phase ends: ``phase`` is ``"adam"`` (``result`` an ``AdamResult``) or
        ``"lbfgs"`` (scipy's ``OptimizeResult``)."""

    def on_chunk_begin(self, trainer: Trainer, step: int) -> None:
        """Called before each compiled call of Adam steps, ``step`` steps done (after the checkpoint
        of the call before, so a run resumed from it acts alike)."""

    def on_chunk_end(self, trainer: Trainer, step: int) -> None:
        """Called after each compiled call of Adam steps, ``step`` steps done, before the history row."""


@dataclasses.dataclass
class AdaptiveWeights(Callback):
    """Learning-rate annealing of the loss weights (Wang, Teng & Perdikaris 2021, Algorithm 1).

    Every ``every`` Adam steps, each condition term's weight moves towards
    ``max |grad residual loss| / mean |grad term loss|`` (gradients w.r.t. the network
    weights): ``w <- (1 - alpha) w + alpha * that`` (:meth:`TrainingData.anneal
    <hodiff.pinn.TrainingData.anneal>`). The residual's weight stays 1.

    References:
      Wang, Teng & Perdikaris (2021), "Understanding and mitigating gradient flow pathologies
      in physics-informed neural networks", SIAM J. Sci. Comput.
    """

    every: int = 100
    alpha: float = 0.1
    method: ClassVar[str] = "annealing"  # the rule of TrainingData.move_weights

    def __post_init__(self):
        name = type(self).__name__
        _validate.check_finite_number(self.every, "every", name, 1, integer=True)
        _validate.check_finite_number(self.alpha, "alpha", name, 0)

    def on_chunk_end(self, trainer: Trainer, step: int) -> None:
        if step % self.every == 0:
            trainer.data.move_weights(self.method, self.alpha)


@dataclasses.dataclass
class GradNormWeights(AdaptiveWeights):
    """Gradient-norm loss weighting (Wang et al. 2023, "An expert's guide", Algorithm 1).

    Every ``every`` Adam steps, every loss term's weight (residuals included) moves towards
    ``sum_j ||grad L_j|| / ||grad L_i||`` (gradients w.r.t. the network weights), so that the
    weighted terms pull with gradients of equal norm: ``w <- (1 - alpha) w + alpha * that``
    (:meth:`TrainingData.move_weights <hodiff.pinn.TrainingData.move_weights>`); the paper's
    moving-average factor 0.9 is ``alpha = 0.1``. The weights are variables of the data, so they
    are in every history row (``weight_<term>``) and in the checkpoints: a resumed run goes on
    exactly as the uninterrupted one.

    References:
      Wang, Wang, Bhartari & Perdikaris (2023), "An expert's guide to training physics-informed
      neural networks", arXiv:2308.08468.
    """

    every: int = 1000
    alpha: float = 0.1
    method: ClassVar[str] = "grad_norm"


@dataclasses.dataclass
class ResidualResampling(Callback):
    """Residual-based adaptive distribution (RAD) of the interior points (Wu et al. 2023).

    Every ``every`` Adam steps, ``candidates`` random points are scored with
    ``|r|^k / mean(|r|^k) + c`` and the interior points are redrawn from that density
    (:meth:`TrainingData.resample_by_residual <hodiff.pinn.TrainingData.resample_by_residual>`).
    For uniform redraws of a :class:`~hodiff.pinn.PINNModel` see
    :class:`~hodiff.pinn.UniformResampling`.

    References:
      Wu, Zhu, Tan, Kartha & Lu (2023), "A comprehensive study of non-adaptive and
      residual-based adaptive sampling for physics-informed neural networks", CMAME.
    """

    every: int = 1000
    candidates: int = 100_000
    k: float = 1.0
    c: float = 1.0

    def __post_init__(self):
        name = type(self).__name__
        _validate.check_finite_number(self.every, "every", name, 1, integer=True)
        _validate.check_finite_number(self.candidates, "candidates", name, 1, integer=True)
        _validate.check_finite_number(self.k, "k", name, 0)
        _validate.check_finite_number(self.c, "c", name, 0)

    def on_chunk_begin(self, trainer: Trainer, step: int) -> None:
        if step and step % self.every == 0:
            trainer.data.resample_by_residual(step, self.candidates, self.k, self.c)


@dataclasses.dataclass
class UniformResampling(Callback):
    """Uniform redraws of every point set every ``every`` Adam steps (conditions with fixed points keep theirs).

    The draw at step ``s`` has seed ``seed + 7919 s`` (:meth:`TrainingData.redraw_for_step
    <hodiff.pinn.TrainingData.redraw_for_step>`), a function of the step only, so a resumed run (a
    :class:`~hodiff.pinn.Trainer` checkpoint, or Keras's ``BackupAndRestore`` in
    :meth:`PINNModel.fit <hodiff.pinn.PINNModel.fit>`) trains on the same points as the uninterrupted one.
    ``every`` is a multiple of the trainer's ``steps_per_call`` (of ``fit``'s ``steps_per_epoch``).
    """

    every: int = 1000

    def __post_init__(self):
        _validate.check_finite_number(self.every, "every", type(self).__name__, 1, integer=True)

    def on_chunk_begin(self, trainer: Trainer, step: int) -> None:
        if step and step % self.every == 0:
            trainer.data.redraw_for_step(step)


# the callbacks that redraw points or move weights every `every` steps: `every` counts whole chunks
EVERY_CHUNKS = (AdaptiveWeights, ResidualResampling, UniformResampling)


class RelativeL2Error(Callback):
    """Logs the relative L2 error of the trained solution against reference values.

    ``sqrt(sum_f ||pred_f - ref_f||^2 / sum_f ||ref_f||^2)`` over the chosen fields, added as
    the column ``name`` to the history rows (and TensorBoard) during Adam and L-BFGS.

    Args:
      points: ``(N, d)`` points, columns in the domain's coordinate order.
      values: reference values at ``points``: ``(N,)`` for one field, ``(N, len(fields))``.
      fields: the fields ``values`` holds, in its column order (default: the problem's fields,
        or its first field when ``values`` is one column).
      every: compute it on rows whose step is a multiple of ``every`` (default: every row).
      name: the column name.
    """

    def __init__(
        self,
        points: Any,
        values: Any,
        fields: Sequence[str] | None = None,
        every: int | None = None,
        name: str = "reference_error",
    ):
        self.points = np.asarray(points, dtype=np.float64)
        values = np.asarray(values, dtype=np.float64)
        self.values = values[:, None] if values.ndim == 1 else values
        if self.points.ndim != 2 or self.values.ndim != 2 or len(self.values) != len(self.points):
            raise ValueError(
                f"RelativeL2Error: points {self.points.shape} and values {np.shape(values)} must be (N, d) and (N,) "
                "or (N, fields) with the same N."
            )
        if not np.all(np.isfinite(self.values)) or not np.any(self.values):
            raise ValueError(
                "RelativeL2Error: values must be finite and not all zero (the error is relative to their norm); "
                "leave out the points without a reference."
            )
        if every is not None and (isinstance(every, bool) or not isinstance(every, int) or every < 1):
            raise ValueError(f"RelativeL2Error: every={every!r} must be a positive int or None (every history row).")
        self.fields = None if fields is None else tuple(fields)
        if self.fields is not None and len(self.fields) != self.values.shape[1]:
            raise ValueError(
                f"RelativeL2Error: fields={self.fields} names {len(self.fields)} columns but values has "
                f"{self.values.shape[1]}."
            )
        self.every, self.name = every, name

    def _columns(self, trainer: Trainer) -> list[int]:
        fields = trainer.problem.fields
        chosen = self.fields or (fields[:1] if self.values.shape[1] == 1 else fields)
        unknown = [f for f in chosen if f not in fields]
        if unknown or len(chosen) != self.values.shape[1]:
            raise ValueError(
                f"RelativeL2Error: fields {chosen} do not match the problem's fields {fields} and the "
                f"{self.values.shape[1]} value columns; pass fields=... naming the value columns."
            )
        return [fields.index(f) for f in chosen]

    def error(self, trainer: Trainer) -> float:
        """The relative L2 error now (:func:`hodiff.pinn.metrics.relative_l2_errors`, all chosen fields together)."""
        prediction = trainer.predict(self.points)[:, self._columns(trainer)]
        columns = range(self.values.shape[1])
        return relative_l2_errors(
            {str(i): prediction[:, i] for i in columns}, {str(i): self.values[:, i] for i in columns}
        )["relative_l2_error"]

    def metrics(self, trainer: Trainer, row: dict[str, Any]) -> dict[str, float]:
        if self.every is not None and row["step"] % self.every:
            return {}
        return {self.name: self.error(trainer)}


class EarlyStopping(Callback):
    """Ends the Adam phase when ``monitor`` has not improved for ``patience`` steps.

    An improvement is a value below the best so far by more than ``min_delta`` (above it for
    ``mode="max"``). The decision is made from the Adam rows of ``trainer.history`` alone, so
    a resumed run stops at the same step as an uninterrupted one. The trainer reports it in
    ``AdamResult.stop_reason``; a stopped Adam phase stays stopped (later ``adam()`` calls and
    resumed runs return at once).

    Args:
      monitor: a history column: ``"loss"`` (the weighted total), a term name, or a metric
        such as :class:`RelativeL2Error`'s ``"reference_error"``.
      patience: Adam steps without improvement before stopping (a multiple of ``log_every``
        makes it exact).
      min_delta: the smallest change that counts as an improvement, >= 0.
      mode: ``"min"`` or ``"max"``.
    """

    def __init__(self, monitor: str = "loss", patience: int = 1000, min_delta: float = 0.0, mode: str = "min"):
        if isinstance(patience, bool) or not isinstance(patience, int) or patience < 1:
            raise ValueError(f"EarlyStopping: patience={patience!r} must be a positive int (Adam steps).")
        if isinstance(min_delta, bool) or not isinstance(min_delta, (int, float)) or not min_delta >= 0:
            raise ValueError(f"EarlyStopping: min_delta={min_delta!r} must be a finite number >= 0.")
        if mode not in ("min", "max"):
            raise ValueError(f"EarlyStopping: mode={mode!r} must be 'min' or 'max'.")
        self.monitor, self.patience, self.min_delta, self.mode = monitor, patience, float(min_delta), mode

    def best(self, history: Sequence[dict[str, Any]]) -> tuple[float, int] | None:
        """``(best value, step where it was reached)`` over the Adam rows that hold ``monitor``."""
        sign = 1.0 if self.mode == "min" else -1.0
        best: tuple[float, int] | None = None
        for row in history:
            value = row.get(self.monitor)
            if row.get("phase") != "adam" or value is None or not math.isfinite(value):
                continue
            if best is None or sign * value < sign * best[0] - self.min_delta:
                best = (value, int(row["step"]))
        return best

    def on_log(self, trainer: Trainer, row: dict[str, Any]) -> str | None:
        if row["phase"] != "adam":
            return None
        if self.monitor not in row and not any(self.monitor in r for r in trainer.history):
            raise ValueError(
                f"EarlyStopping: monitor={self.monitor!r} is not a history column; the columns are "
                f"{sorted(k for k in row if k not in ('phase', 'step', 'seconds'))}."
            )
        best = self.best(trainer.history)
        if best is not None and row["step"] - best[1] >= self.patience:
            self.reason = (
                f"early stopping: {self.monitor} has not improved by more than {self.min_delta:g} for "
                f"{row['step'] - best[1]} steps (best {best[0]:.6g} at step {best[1]})"
            )
            return "stop"
        return None
