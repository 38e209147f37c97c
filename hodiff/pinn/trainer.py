"""Trains a PINN: compiled Adam loops, then L-BFGS, with a crash-safe run log.

The :class:`~hodiff.pinn.TrainingData` owns the points, the draws, the loss weights and the
one weighted loss; the trainer only optimises it (problem -> data -> loss -> optimiser -> run
log). The Adam phase runs as :class:`hodiff.TrainStep` calls of ``steps_per_call`` steps each,
compiled with XLA (wrapped in a ``LossScaleOptimizer`` for a mixed precision model). The
L-BFGS phase is :func:`hodiff.training.lbfgs.minimize_lbfgs`. Adaptive loss weights
(:class:`~hodiff.pinn.AdaptiveWeights`) and residual-based resampling
(:class:`~hodiff.pinn.ResidualResampling`) plug in as callbacks.

With ``Output(directory)`` a :class:`~hodiff.pinn.runlog.RunLog` keeps ``history.csv``,
``checkpoints/`` and ``run_info.json`` there, and a :class:`~hodiff.pinn.runlog.RunClock` the
training time and the phases' state. ``resume=True`` continues from the latest readable
checkpoint, at any point (mid-Adam, between the phases, after L-BFGS), and ends with the
weights, history and results of an uninterrupted run.

Interface (what the command-line runner uses):

- ``Trainer(data, model, ..., output=Output(directory, resume, overwrite, settings=...))``: a
  directory that holds a run raises ``FileExistsError`` unless ``resume`` or ``overwrite``;
  resuming with different settings raises ``ValueError`` listing them.
- ``trainer.adam(steps)`` -> :class:`AdamResult` (``steps``, ``new_steps``, ``final_loss``,
  ``stop_reason``); ``trainer.lbfgs(iterations)`` -> scipy ``OptimizeResult`` (``nit``,
  ``message``, ``fun``, ...), the stored one on a resumed finished run.
- ``trainer.history`` (Adam and L-BFGS rows, each once), ``trainer.final_loss``,
  ``trainer.elapsed_seconds`` (training time summed over resumes), ``trainer.run_info`` (a
  dict saved with every checkpoint and by ``trainer.save_run_info()``), ``trainer.predict``,
  ``trainer.residual`` (the PDE residuals at any points), ``trainer.save_solution`` (one
  ``.keras`` file, output transform included; :func:`hodiff.pinn.saving.load_solution`).
- ``strategy=`` a ``tf.distribute`` strategy (``MirroredStrategy``,
  ``MultiWorkerMirroredStrategy``): the data splits every point set into contiguous shards,
  one per replica, and each replica's share of a loss term is its shard's mean times its
  shard's fraction of the points, so the sum over replicas is the mean over all points
  (exactly, for any split) and the all-reduced gradient is the one-replica gradient. See
  ``docs/distributed.md``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import math
from collections.abc import Sequence
from typing import Any, cast

import keras
import numpy as np
import scipy.optimize
import tensorflow as tf
from tqdm.auto import tqdm

from hodiff import _validate
from hodiff.pinn.callbacks import EVERY_CHUNKS, AdaptiveWeights, Callback, GradNormWeights, ResidualResampling
from hodiff.pinn.conditions import Initial, named_columns
from hodiff.pinn.data import TrainingData
from hodiff.pinn.diagnostics import StallDiagnostic
from hodiff.pinn.geometry import warn_outside
from hodiff.pinn.networks import is_mixed
from hodiff.pinn.problem import Problem
from hodiff.pinn.runlog import RunClock, RunLog
from hodiff.pinn.trainer_options import Output, Schedule, check_every, check_optimizer, check_strategy, from_keywords
from hodiff.training.bfgs import minimize_bfgs
from hodiff.training.lbfgs import minimize_lbfgs
from hodiff.training.step import TrainStep

__all__ = ["AdamResult", "AdaptiveWeights", "Output", "ResidualResampling", "Schedule", "Trainer"]

logger = logging.getLogger(__name__)


@dataclasses.dataclass
class AdamResult:
    """What :meth:`Trainer.adam` did: ``steps`` in total, ``new_steps`` in this call, the
    weighted ``final_loss`` at the weights it ended with, and ``stop_reason``."""

    steps: int
    new_steps: int
    final_loss: float
    stop_reason: str


TRIVIAL_RATIO = 0.1  # a field whose RMS is under this fraction of its initial values' is "near zero everywhere"
_LBFGS_FIELDS = ("fun", "nit", "nfev", "njev", "status", "success", "message")


class Trainer:
    """Fits a Keras model to a problem's :class:`~hodiff.pinn.TrainingData`.

    Args:
      data: a :class:`~hodiff.pinn.TrainingData` (its sizes, sampling, seed, fresh points), or
        a :class:`~hodiff.pinn.Problem` for ``TrainingData(problem)`` (8192 Sobol points, seed 0).
      model: a built Keras model mapping ``(N, d)`` points to ``(N, len(problem.fields))``.
      optimizer: a Keras optimizer for the first phase (default ``Adam(learning_rate)``), new
        (not yet used on other variables); wrapped in a ``LossScaleOptimizer`` for a mixed
        precision model unless it is one. Its class and configuration are settings of the run.
      learning_rate: Adam's learning rate (a float or a Keras schedule; default 1e-3). Leave it
        unset with ``optimizer``, whose learning rate is its own.
      schedule: a :class:`Schedule` (steps per compiled call, logging, checkpoints, progress bars).
      output: an :class:`Output` (the run's directory, resume, overwrite, TensorBoard, settings);
        ``None`` keeps the history in memory.
      callbacks: :class:`~hodiff.pinn.callbacks.Callback` objects: metrics in the history rows,
        early stopping, :class:`~hodiff.pinn.AdaptiveWeights`, :class:`~hodiff.pinn.GradNormWeights`,
        :class:`~hodiff.pinn.ResidualResampling`.
      strategy: a ``tf.distribute`` strategy (``MirroredStrategy``,
        ``MultiWorkerMirroredStrategy``) whose scope built the model (and any ``optimizer``);
        the points are split over its replicas and both phases all-reduce the loss and its
        gradient. The result equals one replica's (for a problem without stochastic needs):
        loss terms, gradients, history. Stochastic needs are drawn per replica (replica ``r``
        with a seed offset by ``r * 2**40``), so a run on several replicas draws differently
        from one on one replica. Causal weights are not supported with a strategy yet.
      **legacy: the former keywords (``interior``, ``sampling``, ``seed``, ``steps_per_call``,
        ``log_every``, ``checkpoint_every``, ``progress``, ``output_dir``, ``resume``,
        ``overwrite``, ``tensorboard``, ``settings``, ``adaptive_weights``, ``resampling``,
        ``causal``), deprecated: each maps onto the arguments above.

    Example:
      ```python
      import numpy as np
      import tensorflow as tf
      from hodiff import pinn

      domain = pinn.Interval("x", -1.0, 1.0) * pinn.TimeDomain("t", 0.0, 1.0)
      heat = pinn.Problem(domain, needs=("u_t", "u_xx"), residual=lambda d, x, p: d["u_t"] - 0.1 * d["u_xx"],
                          conditions=[pinn.Initial(lambda x: tf.sin(np.pi * x["x"]), count=32)])
      model = pinn.mlp(domain, width=8, depth=2)
      data = pinn.TrainingData(heat, interior=64)
      trainer = pinn.Trainer(data, model, schedule=pinn.Schedule(steps_per_call=10, log_every=10, progress=False))
      adam = trainer.adam(20)
      assert adam.steps == 20 and adam.final_loss == trainer.history[-1]["loss"]
      ```
    """

    def __init__(
        self,
        data: TrainingData | Problem,
        model: keras.Model,
        optimizer: keras.optimizers.Optimizer | None = None,
        learning_rate: Any = None,
        schedule: Schedule | None = None,
        output: Output | None = None,
        callbacks: Sequence[Callback] = (),
        strategy: tf.distribute.Strategy | None = None,
        **legacy: Any,
    ):
        data, schedule, output, callbacks = from_keywords(data, schedule, output, list(callbacks), legacy)
        schedule = schedule or Schedule()
        for callback in callbacks:
            if not isinstance(callback, Callback):
                raise TypeError(
                    f"Trainer: callbacks must be hodiff.pinn.callbacks.Callback objects (subclass Callback and "
                    f"override on_log / metrics), got {type(callback).__name__}."
                )
            if isinstance(callback, EVERY_CHUNKS):
                check_every(callback.every, schedule.steps_per_call, f"{type(callback).__name__}.every")
        if schedule.diagnose_every and not any(isinstance(c, StallDiagnostic) for c in callbacks):
            callbacks = [*callbacks, StallDiagnostic(every=schedule.diagnose_every)]
        learning_rate = check_optimizer(optimizer, learning_rate)
        if not model.built or not model.weights:
            raise ValueError(
                "Trainer: the model has no weights yet; give it a keras.Input(shape=(d,)) or call it once."
            )
        if strategy is not None:
            check_strategy(strategy, data.problem, model, optimizer)
        self.data, self.problem, self.model, self.strategy = data, data.problem, model, strategy
        self.schedule, self.callbacks, self.stop_training = schedule, callbacks, False
        self.log_every, self.checkpoint_every, self.progress = (
            schedule.log_every,
            schedule.checkpoint_every,
            schedule.progress,
        )
        self.mixed = is_mixed(model)
        data.build(model, strategy)
        self.replicas, self.dtype, self.solution = data.replicas, data.dtype, data.solution
        self.variables = list(model.trainable_variables) + list(data.parameters.values())
        with strategy.scope() if strategy is not None else contextlib.nullcontext():  # mirrored under a strategy
            first = optimizer if optimizer is not None else keras.optimizers.Adam(learning_rate)
            wrap = self.mixed and not isinstance(first, keras.optimizers.LossScaleOptimizer)
            self.adam_steps = tf.Variable(0, dtype=tf.int64, trainable=False, name="adam_steps")
            self.optimizer = keras.optimizers.LossScaleOptimizer(first) if wrap else first
        # The step's batch under a strategy is the draw number of every step and replica,
        # (steps_per_call, replicas): each replica gets its column and step i its row.
        self.step = TrainStep(
            self._total_loss if strategy is None else self._replica_loss,
            self.variables,
            self.optimizer,
            steps_per_call=schedule.steps_per_call,
            monitor=False,
            jit_compile=schedule.jit_compile,
            **({} if strategy is None else {"per_step_batches": True, "strategy": strategy}),
        )
        self._in_lbfgs = False
        self._warned_unconnected = False
        self._compiled_objectives: dict[str, dict] = {}
        self._predict = tf.function(self.solution, jit_compile=True, reduce_retracing=True, autograph=False)
        self._residuals = tf.function(self._named_residuals, jit_compile=True, reduce_retracing=True, autograph=False)
        self._finite = tf.function(self._finite_flags, autograph=False)
        with strategy.scope() if strategy is not None else contextlib.nullcontext():
            if not self.optimizer.built:  # its state variables exist now, so that a new run can reset them
                self.optimizer.build(self.variables)
        self._optimizer_start = [variable.numpy() for variable in self.optimizer.variables]
        self._own = self._own_settings(learning_rate, schedule.steps_per_call)
        self.run_log: RunLog | None = None
        self._initial_weights = {name: w.numpy() for name, w in data.weights.items()}
        self.start_run(output)

    def start_run(self, output: Output | None = None) -> None:
        """Starts a run of its own on this trainer's compiled steps: the optimizer's state, the step counters, the
        loss weights and the history start afresh (or resume from ``output``'s checkpoints), while the model's
        weights, the points and the traced steps carry over. The constructor starts the first run; a
        time-marching run starts one per window (:func:`~hodiff.pinn.time_marching`), so that every window trains
        with the same compiled step.

        Args:
          output: the run's :class:`Output` (its directory, resume, overwrite, settings); ``None`` keeps the
            history in memory.
        """
        if self.run_log is not None:
            self.run_log.close()
        for variable, value in zip(self.optimizer.variables, self._optimizer_start):  # moments, step count, scale
            variable.assign(value)
        self.adam_steps.assign(0)
        self.data.draw_step.assign(0)
        for name, value in self._initial_weights.items():
            self.data.weights[name].assign(value)
        self.stop_training = False
        self.settings = {**self._own, **((output.settings if output else None) or {})}
        self._history: list[dict[str, Any]] = []
        self._memory_run_info: dict[str, Any] = {}
        self.run_log = None
        if output is not None:
            objects = {
                "model": self.model,
                "optimizer": self.optimizer,
                "parameters": self.data.parameters,
                "weights": self.data.weights,
                "interior": self.data.interior,
                "conditions": self.data.condition_arrays,
                "adam_steps": self.adam_steps,
            }
            self.run_log = RunLog(
                output.directory,
                objects,
                self.settings,
                resume=output.resume,
                overwrite=output.overwrite,
                tensorboard=output.tensorboard,
            )
        self.clock = RunClock(self.run_log, self.adam_steps)
        if self.run_log is not None and self.run_log.restored:
            logger.info(
                "resumed from %s at Adam step %d%s",
                self.run_log.restored,
                int(self.adam_steps.numpy()),
                ", quasi-Newton phase done" if self.clock.lbfgs else "",
            )

    def _own_settings(self, learning_rate: Any, steps_per_call: int) -> dict[str, Any]:
        if learning_rate is not None and not isinstance(learning_rate, (int, float)):
            learning_rate = {
                "schedule": type(learning_rate).__name__,
                **keras.optimizers.schedules.serialize(learning_rate).get("config", {}),
            }
        option = lambda kind: next(  # noqa: E731
            (dataclasses.asdict(cast(Any, c)) for c in self.callbacks if type(c) is kind), None
        )
        grad_norm = option(GradNormWeights)
        inner = getattr(self.optimizer, "inner_optimizer", self.optimizer)
        config = {key: value for key, value in inner.get_config().items() if key != "name"}
        causal = self.problem.causal
        return {
            "optimizer": {"class_name": type(inner).__name__, "config": config},
            **self.data.settings(),
            "learning_rate": learning_rate,
            "steps_per_call": steps_per_call,
            "log_every": self.log_every,
            "dtype": "mixed_float16" if self.mixed else self.dtype.name,
            "adaptive_weights": option(AdaptiveWeights),
            **({"grad_norm_weights": grad_norm} if grad_norm is not None else {}),  # absent: older runs resume
            "resampling": option(ResidualResampling),
            "causal": dataclasses.asdict(causal) if causal is not None else None,
            "terms": list(self.problem.term_names),
            "loss_weights": self.problem.weights,
            "parameters": self.problem.parameters,
            "network_weights": int(sum(np.prod(v.shape) for v in self.model.weights)),
        }

    # ----------------------------------------------------------------------------- state
    @property
    def points(self) -> dict[str, Any]:
        """The data's point sets (``trainer.data.points``)."""
        return self.data.points

    @property
    def interior(self) -> Any:
        return self.data.interior

    @property
    def condition_arrays(self) -> list[dict[str, Any]]:
        return self.data.condition_arrays

    @property
    def parameters(self) -> dict[str, Any]:
        return self.data.parameters

    @property
    def weights(self) -> dict[str, Any]:
        """The loss-weight variables (``trainer.data.weights``)."""
        return self.data.weights

    @property
    def history(self) -> list[dict[str, Any]]:
        """The history rows: phase, step, seconds, loss, each term, loss weights, parameters."""
        return self.run_log.history if self.run_log else self._history

    @property
    def run_info(self) -> dict[str, Any]:
        """Free-form facts about the run, saved with every checkpoint (needs an output directory to persist)."""
        return self.run_log.run_info if self.run_log else self._memory_run_info

    def save_run_info(self) -> None:
        """Writes ``run_info.json`` now (atomically); it is also written with every checkpoint."""
        if self.run_log:
            self.run_log.save_run_info()

    @property
    def elapsed_seconds(self) -> float:
        """Wall time spent in :meth:`adam` and :meth:`lbfgs`, summed over resumes."""
        return self.clock.seconds

    @property
    def final_loss(self) -> float:
        """The weighted total loss at the current weights."""
        return self._weighted(self._term_values())

    def _resumed_loss(self) -> float:
        """:attr:`final_loss` of a run that trains nothing more: the last history row's loss when that row was
        logged at the weights the run holds now (the same points and loss weights, restored with them), so that
        restoring a finished run does not build and run the loss again; evaluated otherwise."""
        rows = self.history
        if rows and rows[-1]["step"] == self.clock.position() and not self.problem.stochastic:
            return float(rows[-1]["loss"])
        return self.final_loss

    def _term_values(self) -> dict[str, float]:
        return self.data.terms(self._in_lbfgs)

    def _weighted(self, terms: dict[str, float]) -> float:
        return sum(float(self.data.weights[name].numpy()) * value for name, value in terms.items())

    def _finite_flags(self) -> list[tf.Tensor]:
        return [tf.reduce_all(tf.math.is_finite(v)) for v in self.variables]

    def _total_loss(self) -> tf.Tensor:
        """The Adam loss: the data's loss at its draw step, which then moves on."""
        return self.data.loss(advance=True)[0]

    def _frozen_loss(self) -> tf.Tensor:
        """The L-BFGS objective: the stochastic draws held at the data's draw step, one draw squared."""
        return self.data.loss(frozen=True)[0]

    def _replica_loss(self, draw: tf.Tensor) -> tf.Tensor:
        """A replica's Adam loss; its mean over the replicas (TrainStep's all-reduce) is the weighted loss."""
        return self.replicas * self.data.loss(draw[0], sharded=True)[0]

    def _replica_frozen_loss(self) -> tf.Tensor:
        """A replica's L-BFGS loss (draws held); minimize_lbfgs averages it over the replicas."""
        return self.replicas * self.data.loss(self.data.draw_step, frozen=True, sharded=True)[0]

    def _guard(self, loss: float, where: str, terms: dict[str, float]) -> None:
        """Raises if the loss, any term or any weight is not finite (each checked on its own)."""
        bad_terms = [name for name, value in terms.items() if not math.isfinite(value)]
        bad_variables = [v.name for v, ok in zip(self.variables, self._finite()) if not bool(ok)]
        if math.isfinite(loss) and not bad_terms and not bad_variables:
            return
        raise FloatingPointError(
            f"Trainer: at {where} the loss is {loss}; non-finite loss terms: {bad_terms or 'none'}; non-finite "
            f"weights: "
            f"{bad_variables or 'none'}. Lower the learning rate, or check the residual, the conditions' values "
            f"and the loss weights."
        )

    # ----------------------------------------------------------------------------- Adam
    def adam(self, steps: int) -> AdamResult:
        """Runs the first-phase optimizer (Adam by default) until ``steps`` steps in total have
        been taken (resume-aware), or a callback stops it (``stop_reason`` says which)."""
        chunk = self.step.steps_per_call
        if not isinstance(steps, int) or steps < 0 or steps % chunk:
            raise ValueError(f"Trainer.adam: steps={steps!r} must be a multiple of steps_per_call={chunk}.")
        start = done = int(self.adam_steps.numpy())
        if self.clock.adam_stop is not None:
            return AdamResult(done, 0, self._resumed_loss(), f"already stopped: {self.clock.adam_stop['reason']}")
        if done >= steps:
            reason = f"already done: {done} steps taken (resumed run)" if steps else "no Adam steps asked (steps=0)"
            return AdamResult(done, 0, self._resumed_loss(), reason)
        self.stop_training = False
        for callback in self.callbacks:
            callback.on_phase_begin(self, "adam")
        stop_reason = f"reached {steps} steps"
        bar = tqdm(total=steps, initial=done, desc="Adam", disable=not self.progress, unit="step")
        self.clock.start()
        try:
            while done < steps:
                # before a chunk, after the checkpoint of the chunk before (resampling), so a run resumed
                # from that checkpoint acts exactly as the uninterrupted one
                for callback in self.callbacks:
                    callback.on_chunk_begin(self, done)
                self.data.draw_step.assign(done)
                if self.strategy is None:
                    outputs = self.step()
                else:
                    draws = np.arange(done, done + chunk, dtype=np.int64)[:, None].repeat(self.replicas, 1)
                    outputs = self.step(draws)
                    self.data.draw_step.assign(done + chunk)  # as the one-device loop leaves it
                done += chunk
                self.adam_steps.assign(done)
                terms = self._term_values()
                self._guard(float(outputs["loss"]), f"Adam step {done}", terms)
                for callback in self.callbacks:
                    callback.on_chunk_end(self, done)
                if done % self.log_every == 0:
                    row = self._log("adam", done, terms)
                    bar.set_postfix(loss=f"{row['loss']:.3e}")
                    if self._stop_requested(row):
                        stop_reason = self.clock.adam_stop["reason"] if self.clock.adam_stop else stop_reason
                bar.update(chunk)
                if done % self.checkpoint_every == 0 or self.clock.adam_stop:
                    self.clock.save()
                if self.clock.adam_stop:
                    break
            if self.clock.saved_at != self.clock.position():
                self.clock.save()
        finally:
            bar.close()
            self.clock.stop()
        result = AdamResult(done, done - start, self.final_loss, stop_reason)
        for callback in self.callbacks:
            callback.on_phase_end(self, "adam", result)
        self._warn_if_trivial("Adam")
        return result

    def _stop_requested(self, row: dict[str, Any]) -> bool:
        """Calls every callback's ``on_log``; records the first stop (saved with the checkpoints)."""
        reasons = []
        for callback in self.callbacks:
            answer = callback.on_log(self, row)
            if answer == "stop" or self.stop_training:
                default = f"stopped by {type(callback).__name__} at step {row['step']}"
                reasons.append(getattr(callback, "reason", None) or default)
                self.stop_training = False
        if reasons:
            self.clock.adam_stop = {"step": int(row["step"]), "reason": reasons[0]}
        return bool(reasons)

    # ----------------------------------------------------------------------------- L-BFGS
    def lbfgs(
        self,
        max_iterations: int,
        gtol: float = 1e-10,
        ftol: float = float(np.finfo(float).eps),
        max_corrections: int = 50,
        method: str = "lbfgs",
    ) -> scipy.optimize.OptimizeResult:
        """Runs the quasi-Newton phase on the weights; returns scipy's result.

        ``method="lbfgs"`` is L-BFGS-B (:func:`hodiff.training.lbfgs.minimize_lbfgs`); ``"bfgs"`` is
        self-scaled BFGS with a dense inverse Hessian (:func:`hodiff.training.bfgs.minimize_bfgs`:
        networks of at most 30,000 weights; ``ftol`` and ``max_corrections`` do not apply), which on
        small networks reaches much lower losses per iteration.

        The defaults stop only on ``max_iterations``, a tiny gradient or a line-search failure
        (scipy's default ``ftol`` stops PINN runs as soon as the loss is small). A resumed run
        whose L-BFGS phase had finished returns the stored result (``x`` is the current
        weights) and trains nothing; one killed during L-BFGS restarts the phase from the
        checkpoint taken before it, which reproduces the same iterates. The phase counts as
        done only when it took at least one iteration. A problem with stochastic needs
        (:class:`~hodiff.pinn.Stochastic`) is minimised over one frozen draw with its residual
        squared, ``mean(r^2)``; its logged losses are that objective's.

        Raises:
          FloatingPointError: a loss term is not finite at the start or the end, naming it.
        """
        if method not in ("lbfgs", "bfgs"):
            raise ValueError(f"Trainer.lbfgs: method must be 'lbfgs' or 'bfgs', got {method!r}.")
        name = "BFGS" if method == "bfgs" else "L-BFGS"  # for the messages
        if self.clock.lbfgs is not None:
            x = np.concatenate([np.ravel(v.numpy()).astype(np.float64) for v in self.variables])
            return scipy.optimize.OptimizeResult(x=x, **self.clock.lbfgs)
        terms = self._term_values()
        self._guard(self._weighted(terms), f"the start of {name}", terms)
        for hook in self.callbacks:
            hook.on_phase_begin(self, "lbfgs")
        base = int(self.adam_steps.numpy())
        if self.clock.saved_at != base:
            self.clock.save()
        # Stochastic needs: one draw (fixed by the step the phase starts at) for the whole phase, since a
        # quasi-Newton method needs the same objective at every evaluation, squared (mean(r^2)), since
        # the two-draw mean(r1 * r2) of a frozen draw is not bounded below. Resuming redraws it exactly.
        self.data.draw_step.assign(base)
        self._in_lbfgs = bool(self.problem.stochastic)
        iterations, logged = [0], [None]

        def callback(intermediate_result):
            iterations[0] += 1
            if iterations[0] % self.log_every == 0:
                self._log("lbfgs", base + iterations[0])
                logged[0] = base + iterations[0]

        loss_scale = float(self.optimizer.dynamic_scale.numpy()) if self.mixed else 1.0
        self.clock.start()
        try:
            shared: dict[str, Any] = dict(
                callback=callback,
                loss_scale=loss_scale,
                jit_compile=self.schedule.jit_compile,
                progress=self.progress,
                strategy=self.strategy,
                compiled=self._compiled_objectives.setdefault(method, {}),  # traced once for every run
                unconnected="zero",  # weights the loss does not reach (a pure-Neumann problem's bias) keep their values
            )
            loss = self._frozen_loss if self.strategy is None else self._replica_frozen_loss
            if method == "bfgs":
                result = minimize_bfgs(loss, self.variables, max_iterations, gtol=gtol, **shared)
            else:
                result = minimize_lbfgs(
                    loss,
                    self.variables,
                    max_iterations,
                    gtol=gtol,
                    ftol=ftol,
                    max_corrections=max_corrections,
                    **shared,
                )
            self._warn_unconnected(name, result.unconnected)
            terms = self._term_values()
            self._guard(float(result.fun), f"the end of {name} ({result.message})", terms)
            if result.nit == 0:
                logger.warning(
                    "%s stopped without taking an iteration (%s); it does not count as done.", name, result.message
                )
                return result
            if logged[0] != base + result.nit:
                self._log("lbfgs", base + result.nit, terms)
            self.clock.lbfgs = {
                key: (
                    str(result[key])
                    if key == "message"
                    else result[key].item()
                    if hasattr(result[key], "item")
                    else result[key]
                )
                for key in _LBFGS_FIELDS
                if key in result
            }
            self.clock.save()
        finally:
            self.clock.stop()
            self._in_lbfgs = False
        for hook in self.callbacks:
            hook.on_phase_end(self, "lbfgs", result)
        self._warn_if_trivial(name)
        return result

    def _initial_scales(self, interior: np.ndarray) -> dict[str, tuple[str, float, str | None]]:
        """``{field: (where its initial condition comes from, RMS of the initial values, its term's name when that
        term's loss weight is 0, else None)}``."""
        problem = self.problem
        scales: dict[str, tuple[str, float, str | None]] = {}
        for condition in problem.conditions:
            if isinstance(condition, Initial) and condition.field is not None:
                points = np.asarray(tf.convert_to_tensor(self.points[condition.name]["points"]))
                values = condition.target(points, problem.domain.coords)
                unweighted = condition.name if float(self.data.weights[condition.name].numpy()) == 0.0 else None
                scales[condition.field] = (
                    f"its Initial condition {condition.name!r}",
                    float(np.sqrt(np.mean(values**2))),
                    unweighted,
                )
        transform = problem.output_transform
        if transform is not None and getattr(transform, "initial", None) is not None and problem.domain.time:
            start = interior.copy()
            start[:, problem.domain.coords.index(problem.domain.time)] = problem.domain.bounds[problem.domain.time][0]
            x = tf.constant(start, self.dtype)
            zeros = tf.zeros((len(start), len(problem.fields)), self.dtype)
            values = np.asarray(transform(dict(named_columns(x, problem.domain.coords)), zeros), dtype=np.float64)
            for i, field in enumerate(problem.fields):
                scales[field] = ("its hard initial condition", float(np.sqrt(np.mean(values[:, i] ** 2))), None)
        return scales

    def _warn_unconnected(self, phase: str, names: list[str]) -> None:
        """Warns (once per trainer) that the loss does not reach the weights ``names``: they kept their values, and
        a field that the loss sees only through its derivatives is defined up to a constant."""
        if not names or self._warned_unconnected:
            return
        self._warned_unconnected = True
        logger.warning(
            "%s: the loss does not depend on the weights %s; they keep their values (a zero gradient). When these "
            "include the last layer's bias, every loss term sees the fields only through their derivatives (only "
            "Neumann or periodic conditions): the solution is defined up to a constant, and the one found is "
            "arbitrary. Pin it with a value: a Dirichlet condition on one piece or point (pinn.Dirichlet(value, "
            "count=1, where=...)) or a Data condition (pinn.Data(points, values)), or compare solutions after "
            "subtracting their means.",
            phase,
            names,
        )

    def _warn_if_trivial(self, phase: str) -> None:
        """Warns when a trained field is near zero everywhere (RMS under a tenth of its initial values')."""
        if self.problem.domain.time is None or not len(self.interior.shape) or self.interior.shape[0] == 0:
            return
        interior = np.asarray(tf.convert_to_tensor(self.interior), dtype=np.float64)
        scales = self._initial_scales(interior)
        if not scales:
            return
        values = self.predict(interior).astype(np.float64)
        for field, (source, scale, unweighted) in scales.items():
            size = float(np.sqrt(np.mean(values[:, self.problem.fields.index(field)] ** 2)))
            if scale > 0 and size < TRIVIAL_RATIO * scale:
                cause = (
                    "the run has likely settled on the trivial solution u = 0, a common failure of time-dependent "
                    "PINNs with a soft initial condition. Impose it exactly"
                )
                if unweighted is not None:
                    cause = (
                        f"the Initial term {unweighted!r} has loss weight 0 (weights={{{unweighted!r}: 0}}), so the "
                        "initial condition is not imposed at all and nothing keeps the field from the trivial solution "
                        "u = 0. Give the term a positive weight (leave it out of weights= for the default 1), or "
                        "impose it exactly"
                    )
                logger.warning(
                    "After %s, the field %r is near zero everywhere (RMS %.3g over the interior points) while %s is "
                    "not (RMS %.3g): %s: Problem(..., output_transform=pinn.hard_initial(u0, time=%r)) instead of the "
                    "Initial term (docs/conditions.md, 'Hard initial conditions'); causal weights (CausalWeights) help "
                    "too.",
                    phase,
                    field,
                    size,
                    source,
                    scale,
                    cause,
                    self.problem.domain.time,
                )

    # ----------------------------------------------------------------------------- logs
    def _log(self, phase: str, step: int, terms: dict[str, float] | None = None) -> dict[str, Any]:
        terms = terms if terms is not None else self._term_values()
        row = {
            "phase": phase,
            "step": step,
            "seconds": round(self.elapsed_seconds, 3),
            "loss": self._weighted(terms),
            **terms,
            **{f"weight_{n}": float(w.numpy()) for n, w in self.data.weights.items()},
            **{n: float(p.numpy()) for n, p in self.data.parameters.items()},
        }
        for callback in self.callbacks:
            row.update(callback.metrics(self, row))
        if self.run_log:
            self.run_log.append(row)
        else:
            self._history.append(row)
        if phase != "adam":
            for callback in self.callbacks:
                if callback.on_log(self, row) == "stop" or self.stop_training:
                    logger.info("%s asked to stop during the quasi-Newton phase; it runs on.", type(callback).__name__)
                    self.stop_training = False
        return row

    # ----------------------------------------------------------------------------- use
    def predict(self, points: Any, batch: int = 65536) -> np.ndarray:
        """The solution at ``points`` ``(N, d)``: ``(N, fields)`` numpy array.

        Warns when points lie outside the domain (space, time span, parameter ranges) the network
        was trained on (:func:`hodiff.pinn.geometry.warn_outside`).
        """
        points = _validate.check_point_array(points, self.problem.domain.coords, "Trainer.predict")
        warn_outside(self.data.domain, points, "Trainer.predict")
        parts = [
            self._predict(tf.constant(points[i : i + batch], self.dtype)).numpy()
            for i in range(0, max(len(points), 1), batch)  # no points: one empty batch, an empty (0, fields) result
        ]
        return np.concatenate(parts, axis=0)

    def _named_residuals(self, x: tf.Tensor) -> dict[str, tf.Tensor]:
        residuals = self.problem.pde_residuals(self.solution, x, self.data.parameters)
        if isinstance(residuals, dict):
            return dict(residuals)
        return dict(zip(self.problem.residual_names, residuals))

    def residual(self, points: Any, batch: int = 16384) -> dict[str, np.ndarray]:
        """The PDE residuals at ``points`` ``(N, d)`` (compiled with XLA), ``{residual name: (N,)}``."""
        points = np.asarray(points)
        width = len(self.problem.domain.coords)
        if points.ndim != 2 or points.shape[1] != width:
            raise ValueError(
                f"Trainer.residual: points must be (N, {width}), columns {self.problem.domain.coords}; got shape "
                f"{points.shape}."
            )
        parts = [
            {k: v.numpy() for k, v in self._residuals(tf.constant(points[i : i + batch], self.dtype)).items()}
            for i in range(0, len(points), batch)
        ]
        names = list(parts[0]) if parts else list(self.problem.residual_names)
        return {name: np.concatenate([part[name] for part in parts]) if parts else np.zeros(0) for name in names}

    def save_solution(self, path: str) -> None:
        """Writes the trained solution (network and output transform) as one ``.keras`` file
        (:func:`hodiff.pinn.saving.save_solution`); load it with :func:`hodiff.pinn.saving.load_solution`."""
        from hodiff.pinn.saving import save_solution

        save_solution(path, self.problem, self.model)

    def parameter_values(self) -> dict[str, float]:
        return {name: float(value.numpy()) for name, value in self.data.parameters.items()}
