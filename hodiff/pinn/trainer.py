"""Trains a PINN: compiled Adam loops, then L-BFGS, with a crash-safe run log.

The :class:`~hodiff.pinn.Problem` owns the points and the loss terms; the trainer only
optimises their weighted sum. The Adam phase runs as :class:`hodiff.TrainStep` calls of
``steps_per_call`` steps each, compiled with XLA (wrapped in a ``LossScaleOptimizer`` for a
mixed precision model). The L-BFGS phase is :func:`hodiff.lbfgs.minimize_lbfgs`. Options:
adaptive loss weights (learning-rate annealing) and residual-based adaptive resampling (RAD).

With ``output_dir`` a :class:`~hodiff.pinn.runlog.RunLog` keeps ``history.csv``,
``checkpoints/`` and ``run_info.json`` there. ``resume=True`` continues from the latest
readable checkpoint, at any point (mid-Adam, between the phases, after L-BFGS), and ends with
the weights, history and results of an uninterrupted run.

Interface (what the command-line runner uses):

- ``Trainer(problem, model, ..., output_dir, resume, overwrite, settings)``: a directory that
  holds a run raises ``FileExistsError`` unless ``resume`` or ``overwrite``; resuming with
  different settings raises ``ValueError`` listing them.
- ``trainer.adam(steps)`` -> :class:`AdamResult` (``steps``, ``new_steps``, ``final_loss``,
  ``stop_reason``); ``trainer.lbfgs(iterations)`` -> scipy ``OptimizeResult`` (``nit``,
  ``message``, ``fun``, ...), the stored one on a resumed finished run.
- ``trainer.history`` (Adam and L-BFGS rows, each once), ``trainer.final_loss``,
  ``trainer.elapsed_seconds`` (training time summed over resumes), ``trainer.run_info`` (a
  dict saved with every checkpoint and by ``trainer.save_run_info()``), ``trainer.predict``,
  ``trainer.residual`` (the PDE residuals at any points), ``trainer.save_solution`` (one
  ``.keras`` file, output transform included; :func:`hodiff.pinn.saving.load_solution`).
- ``optimizer=`` a Keras optimizer for the first phase; ``callbacks=`` objects from
  :mod:`hodiff.pinn.callbacks` (metrics in the history rows, early stopping).
- ``strategy=`` a ``tf.distribute`` strategy (``MirroredStrategy``,
  ``MultiWorkerMirroredStrategy``): every point set is split into contiguous shards, one per
  replica, and each replica's share of a loss term is its shard's mean times its shard's
  fraction of the points, so the sum over replicas is the mean over all points (exactly, for
  any split) and the all-reduced gradient is the one-replica gradient. See ``docs/distributed.md``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import math
import time
from collections.abc import Sequence
from typing import Any

import keras
import numpy as np
import scipy.optimize
import tensorflow as tf
from tqdm.auto import tqdm

from hodiff import _validate
from hodiff.lbfgs import minimize_lbfgs
from hodiff.pinn.callbacks import Callback
from hodiff.pinn.networks import is_mixed
from hodiff.pinn.problem import CausalWeights, Problem
from hodiff.pinn.runlog import RunLog
from hodiff.step import TrainStep, xla_reaches

__all__ = ["AdamResult", "AdaptiveWeights", "Resampling", "Trainer"]

logger = logging.getLogger(__name__)


@dataclasses.dataclass
class AdaptiveWeights:
    """Learning-rate annealing of the loss weights (Wang, Teng & Perdikaris 2021, Algorithm 1).

    Every ``every`` Adam steps, each condition term's weight moves towards
    ``max |grad residual loss| / mean |grad term loss|`` (gradients w.r.t. the network
    weights): ``w <- (1 - alpha) w + alpha * that``. The residual's weight stays 1.

    References:
      Wang, Teng & Perdikaris (2021), "Understanding and mitigating gradient flow pathologies
      in physics-informed neural networks", SIAM J. Sci. Comput.
    """

    every: int = 100
    alpha: float = 0.1

    def __post_init__(self):
        _validate.check_finite_number(self.every, "every", "AdaptiveWeights", 1, integer=True)
        _validate.check_finite_number(self.alpha, "alpha", "AdaptiveWeights", 0)


@dataclasses.dataclass
class Resampling:
    """Residual-based adaptive distribution (RAD) of the interior points (Wu et al. 2023).

    Every ``every`` Adam steps, ``candidates`` random points are scored with
    ``|r|^k / mean(|r|^k) + c`` and the interior points are redrawn from that density.

    References:
      Wu, Zhu, Tan, Kartha & Lu (2023), "A comprehensive study of non-adaptive and
      residual-based adaptive sampling for physics-informed neural networks", CMAME.
    """

    every: int = 1000
    candidates: int = 100_000
    k: float = 1.0
    c: float = 1.0

    def __post_init__(self):
        _validate.check_finite_number(self.every, "every", "Resampling", 1, integer=True)
        _validate.check_finite_number(self.candidates, "candidates", "Resampling", 1, integer=True)
        _validate.check_finite_number(self.k, "k", "Resampling", 0)
        _validate.check_finite_number(self.c, "c", "Resampling", 0)


@dataclasses.dataclass
class AdamResult:
    """What :meth:`Trainer.adam` did: ``steps`` in total, ``new_steps`` in this call, the
    weighted ``final_loss`` at the weights it ended with, and ``stop_reason``."""

    steps: int
    new_steps: int
    final_loss: float
    stop_reason: str


_LBFGS_FIELDS = ("fun", "nit", "nfev", "njev", "status", "success", "message")
# Added to the stochastic draw's seed per replica id, so replicas draw independent directions
# (replica 0 draws what one replica draws); far beyond any step count, so no two draws collide.
_REPLICA_SEED_STRIDE = 2**40


def _check_every(value: int, steps_per_call: int, name: str) -> None:
    if not isinstance(value, int) or value < 1 or value % steps_per_call:
        raise ValueError(
            f"Trainer: {name}={value!r} must be a positive multiple of steps_per_call={steps_per_call} (events "
            f"happen between compiled calls)."
        )


class Trainer:
    """Fits a Keras model to a :class:`~hodiff.pinn.Problem`.

    Args:
      problem: the PDE problem.
      model: a Keras model mapping ``(N, d)`` points to ``(N, len(problem.fields))``.
      interior: number of interior (collocation) points.
      sampling: ``"sobol"``, ``"lhs"`` or ``"random"`` for all point sets.
      seed: seeds the point sets and the resampling.
      learning_rate: Adam learning rate (a float or a Keras schedule; default 1e-3). Leave it
        unset with ``optimizer``, whose learning rate is its own.
      steps_per_call: Adam steps per compiled call.
      log_every: Adam steps (and L-BFGS iterations) between history rows.
      checkpoint_every: Adam steps between checkpoints (needs ``output_dir``).
      adaptive_weights: an :class:`AdaptiveWeights` or ``None``.
      resampling: a :class:`Resampling` or ``None``.
      causal: shorthand for ``problem.replace(causal=causal)`` (:class:`CausalWeights`).
      output_dir: where ``history.csv``, ``checkpoints/``, ``run_info.json`` and
        ``tensorboard/`` go (see :class:`~hodiff.pinn.runlog.RunLog`).
      resume: continue the run in ``output_dir`` from its latest readable checkpoint.
      tensorboard: also write the history as TensorBoard scalars.
      progress: show tqdm progress bars.
      settings: more settings that define the run (JSON-serialisable), stored with the
        checkpoints next to the trainer's own (learning rate, seed, sizes, sampling, dtype,
        steps per call, options, loss terms); resuming with any of them changed raises.
      overwrite: replace a run already held in ``output_dir``.
      optimizer: a Keras optimizer for the first phase (default ``Adam(learning_rate)``), new
        (not yet used on other variables); wrapped in a ``LossScaleOptimizer`` for a mixed
        precision model unless it is one. Its class and configuration are settings of the run.
      callbacks: :class:`~hodiff.pinn.callbacks.Callback` objects, called at every history
        row (see :mod:`hodiff.pinn.callbacks`).
      strategy: a ``tf.distribute`` strategy (``MirroredStrategy``,
        ``MultiWorkerMirroredStrategy``) whose scope built the model (and any ``optimizer``);
        the points are split over its replicas and both phases all-reduce the loss and its
        gradient. The result equals one replica's (for a problem without stochastic needs):
        loss terms, gradients, history. Stochastic needs are drawn per replica (replica ``r``
        with a seed offset by ``r * 2**40``), so a run on several replicas draws differently
        from one on one replica. Causal weights are not supported with a strategy yet.

    Example:
      ```python
      import numpy as np
      import tensorflow as tf
      from hodiff import pinn

      domain = pinn.Interval("x", -1.0, 1.0) * pinn.TimeDomain("t", 0.0, 1.0)
      heat = pinn.Problem(domain, needs=("u_t", "u_xx"), residual=lambda d, x, p: d["u_t"] - 0.1 * d["u_xx"],
                          conditions=[pinn.Initial(lambda x: tf.sin(np.pi * x["x"]), count=32)])
      model = pinn.mlp(domain, width=8, depth=2)
      trainer = pinn.Trainer(heat, model, interior=64, steps_per_call=10, log_every=10, progress=False)
      adam = trainer.adam(20)
      assert adam.steps == 20 and adam.final_loss == trainer.history[-1]["loss"]
      ```
    """

    def __init__(
        self,
        problem: Problem,
        model: keras.Model,
        interior: int = 8192,
        sampling: str = "sobol",
        seed: int = 0,
        learning_rate: Any = None,
        steps_per_call: int = 100,
        log_every: int = 100,
        checkpoint_every: int = 1000,
        adaptive_weights: AdaptiveWeights | None = None,
        resampling: Resampling | None = None,
        causal: CausalWeights | None = None,
        output_dir: str | None = None,
        resume: bool = False,
        tensorboard: bool = False,
        progress: bool = True,
        settings: dict[str, Any] | None = None,
        overwrite: bool = False,
        optimizer: keras.optimizers.Optimizer | None = None,
        callbacks: Sequence[Callback] = (),
        strategy: tf.distribute.Strategy | None = None,
    ):
        _check_every(log_every, steps_per_call, "log_every")
        _check_every(checkpoint_every, steps_per_call, "checkpoint_every")
        for option in (adaptive_weights, resampling):
            if option is not None:
                _check_every(option.every, steps_per_call, f"{type(option).__name__}.every")
        if optimizer is not None:
            if not isinstance(optimizer, keras.optimizers.Optimizer):
                raise TypeError(
                    f"Trainer: optimizer must be a Keras optimizer (e.g. keras.optimizers.SGD(1e-3)), got "
                    f"{type(optimizer).__name__}."
                )
            if learning_rate is not None:
                raise ValueError(
                    "Trainer: pass the learning rate to the optimizer (keras.optimizers.Adam(learning_rate=...)), "
                    "not learning_rate= as well."
                )
        learning_rate = 1e-3 if learning_rate is None and optimizer is None else learning_rate
        if isinstance(learning_rate, (int, float)):
            _validate.check_finite_number(learning_rate, "learning_rate", "Trainer", 0)
        callbacks = list(callbacks)
        for callback in callbacks:
            if not isinstance(callback, Callback):
                raise TypeError(
                    f"Trainer: callbacks must be hodiff.pinn.callbacks.Callback objects (subclass Callback and "
                    f"override on_log / metrics), got {type(callback).__name__}."
                )
        if causal is not None:
            if problem.causal is not None and problem.causal != causal:
                raise ValueError(
                    f"Trainer: causal={causal} differs from the problem's causal={problem.causal}; set it in one place."
                )
            problem = problem.replace(causal=causal)
        if (resume or overwrite or tensorboard) and output_dir is None:
            raise ValueError("Trainer: resume, overwrite and tensorboard need output_dir, where the run's files are.")
        if not model.built or not model.weights:
            raise ValueError(
                "Trainer: the model has no weights yet; give it a keras.Input(shape=(d,)) or call it once."
            )
        if strategy is not None:
            _check_strategy(strategy, problem, model, optimizer)
        self.strategy: Any = strategy  # None or a strategy; only the replicated paths use it
        self.replicas = strategy.num_replicas_in_sync if strategy is not None else 1
        self.problem, self.model, self.seed, self.sampling = problem, model, seed, sampling
        self.log_every, self.checkpoint_every, self.progress = log_every, checkpoint_every, progress
        self.adaptive_weights, self.resampling, self.output_dir = adaptive_weights, resampling, output_dir
        self.dtype = tf.as_dtype(model.weights[0].dtype)
        self.mixed = is_mixed(model)
        self.solution = problem.solution(model)

        scope = lambda: strategy.scope() if strategy is not None else contextlib.nullcontext()
        variable = lambda value, name: tf.Variable(tf.constant(value, self.dtype), name=name)
        sampled = problem.sample_points(interior, sampling, seed)
        with scope():  # mirrored under a strategy: every replica reads its own copy
            self.parameters = {name: variable(value, name) for name, value in problem.parameters.items()}
            self.interior = variable(sampled["interior"], "interior")
            self.condition_arrays = [
                {key: variable(array, f"{c.name}_{key}") for key, array in sampled[c.name].items()}
                for c in problem.conditions
            ]
        self.points = {
            "interior": self.interior,
            **{c.name: arrays for c, arrays in zip(problem.conditions, self.condition_arrays)},
        }
        # one eager evaluation on a few points: shape errors surface here, not inside XLA
        problem.loss_terms(self.solution, tf.nest.map_structure(lambda v: v[:4], self.points), self.parameters)
        with scope():
            self.weights = {
                name: tf.Variable(
                    tf.constant(problem.weights.get(name, 1.0), self.dtype), trainable=False, name=f"weight_{name}"
                )
                for name in problem.term_names
            }
            first = optimizer if optimizer is not None else keras.optimizers.Adam(learning_rate)
            self.adam_steps = tf.Variable(0, dtype=tf.int64, trainable=False, name="adam_steps")
            # The step whose stochastic residual draws the next loss evaluation (Stochastic needs): set to
            # adam_steps before each chunk and advanced inside the compiled loop, so the draws are a
            # function of (seed, step) only and a resumed run draws exactly as the uninterrupted one.
            self._draw_step = tf.Variable(0, dtype=tf.int64, trainable=False, name="draw_step")
        self.variables = list(model.trainable_variables) + list(self.parameters.values())
        self.callbacks = callbacks
        self.stop_training = False
        wrap = self.mixed and not isinstance(first, keras.optimizers.LossScaleOptimizer)
        with scope():  # the loss scale's variables, mirrored under a strategy
            self.optimizer = keras.optimizers.LossScaleOptimizer(first) if wrap else first
        if strategy is None:
            self.step = TrainStep(
                self._total_loss, self.variables, self.optimizer, steps_per_call=steps_per_call, monitor=False
            )
            # The guard's terms run without XLA: a compiled loss can drop a NaN term that the graph keeps.
            # Stochastic needs are drawn under XLA by the training step, and XLA's stateless random ops draw
            # differently from the graph's for the same seed (TF issue #121243): the terms use XLA too then.
            self._terms = tf.function(self._loss_terms, jit_compile=bool(self.problem.stochastic))
        else:
            self._shards = self._shard_plan()
            # The step's batch is the draw number of every step and replica, (steps_per_call, replicas):
            # each replica gets its column and step i its row, so nothing is assigned inside the replicas.
            self.step = TrainStep(
                self._replica_loss,
                self.variables,
                self.optimizer,
                steps_per_call=steps_per_call,
                per_step_batches=True,
                strategy=strategy,
                monitor=False,
            )
            jit = bool(self.problem.stochastic) and xla_reaches(strategy)
            self._replica_terms = tf.function(self._shard_terms, jit_compile=jit)
            self._terms = tf.function(self._distributed_terms)
        self._in_lbfgs = False
        self._weight_targets = tf.function(self._annealing_targets, jit_compile=True)
        self._residual_scores = tf.function(self._resampling_scores, jit_compile=True)
        self._predict = tf.function(self.solution, jit_compile=True, reduce_retracing=True)
        self._residuals = tf.function(self._named_residuals, jit_compile=True, reduce_retracing=True)
        self._finite = tf.function(self._finite_flags)

        self.settings = {**self._own_settings(interior, learning_rate, steps_per_call), **(settings or {})}
        self._history: list[dict[str, Any]] = []
        self._elapsed: float = 0.0
        self._clock: float | None = None
        self._saved_at: int | None = None
        self._lbfgs: dict[str, Any] | None = None
        self._adam_stop: dict[str, Any] | None = None
        self._memory_run_info: dict[str, Any] = {}
        self.run_log = None
        if output_dir is not None:
            objects = {
                "model": model,
                "optimizer": self.optimizer,
                "parameters": self.parameters,
                "weights": self.weights,
                "interior": self.interior,
                "conditions": self.condition_arrays,
                "adam_steps": self.adam_steps,
            }
            self.run_log = RunLog(
                output_dir, objects, self.settings, resume=resume, overwrite=overwrite, tensorboard=tensorboard
            )
            if self.run_log.restored:
                self._elapsed = float(self.run_log.state.get("elapsed_seconds", 0.0))
                self._lbfgs = self.run_log.state.get("lbfgs")
                self._adam_stop = self.run_log.state.get("adam_stop")
                self._saved_at = self._position()
                logger.info(
                    "resumed from %s at Adam step %d%s",
                    self.run_log.restored,
                    int(self.adam_steps.numpy()),
                    ", L-BFGS done" if self._lbfgs else "",
                )

    def _own_settings(self, interior: int, learning_rate: Any, steps_per_call: int) -> dict[str, Any]:
        if learning_rate is not None and not isinstance(learning_rate, (int, float)):
            learning_rate = {
                "schedule": type(learning_rate).__name__,
                **keras.optimizers.schedules.serialize(learning_rate).get("config", {}),
            }
        option = lambda value: dataclasses.asdict(value) if value is not None else None
        inner = getattr(self.optimizer, "inner_optimizer", self.optimizer)
        config = {key: value for key, value in inner.get_config().items() if key != "name"}
        return {
            "optimizer": {"class_name": type(inner).__name__, "config": config},
            "interior": interior,
            "sampling": self.sampling,
            "seed": self.seed,
            "learning_rate": learning_rate,
            "steps_per_call": steps_per_call,
            "log_every": self.log_every,
            "dtype": "mixed_float16" if self.mixed else self.dtype.name,
            "adaptive_weights": option(self.adaptive_weights),
            "resampling": option(self.resampling),
            "causal": option(self.problem.causal),
            "terms": list(self.problem.term_names),
            "loss_weights": self.problem.weights,
            "parameters": self.problem.parameters,
            "network_weights": int(sum(np.prod(v.shape) for v in self.model.weights)),
        }

    # ----------------------------------------------------------------------------- state
    @property
    def history(self) -> list[dict[str, Any]]:
        """The history rows: phase, step, seconds, loss, each term, loss weights, parameters."""
        return self.run_log.history if self.run_log else self._history

    @property
    def run_info(self) -> dict[str, Any]:
        """Free-form facts about the run, saved with every checkpoint (needs output_dir to persist)."""
        return self.run_log.run_info if self.run_log else self._memory_run_info

    def save_run_info(self) -> None:
        """Writes ``run_info.json`` now (atomically); it is also written with every checkpoint."""
        if self.run_log:
            self.run_log.save_run_info()

    @property
    def elapsed_seconds(self) -> float:
        """Wall time spent in :meth:`adam` and :meth:`lbfgs`, summed over resumes."""
        return self._elapsed + (time.perf_counter() - self._clock if self._clock is not None else 0.0)

    @property
    def final_loss(self) -> float:
        """The weighted total loss at the current weights."""
        return self._weighted(self._term_values())

    def _term_values(self) -> dict[str, float]:
        return {name: float(value) for name, value in self._terms(self._in_lbfgs).items()}

    def _weighted(self, terms: dict[str, float]) -> float:
        return sum(float(self.weights[name].numpy()) * value for name, value in terms.items())

    def _loss_terms(self, frozen: bool = False) -> dict[str, tf.Tensor]:
        """The loss terms at the current draw; ``frozen`` (L-BFGS) squares one draw (see :meth:`lbfgs`)."""
        seed = tf.constant(self.seed, tf.int64) * 1_000_003 + self._draw_step
        unbiased = False if frozen else None
        return self.problem.loss_terms(self.solution, self.points, self.parameters, seed, unbiased)

    def _finite_flags(self) -> list[tf.Tensor]:
        return [tf.reduce_all(tf.math.is_finite(v)) for v in self.variables]

    def _total_loss(self) -> tf.Tensor:
        terms = self._loss_terms()
        if self.problem.stochastic:
            self._draw_step.assign_add(1)
        return self._weighted_sum(terms)

    def _frozen_loss(self) -> tf.Tensor:
        """The L-BFGS objective: the stochastic draws held at ``_draw_step``, one draw squared."""
        return self._weighted_sum(self._loss_terms(frozen=True))

    # ----------------------------------------------------------------------------- replicas
    def _shard_plan(self) -> dict[str, list[tuple[int, int, float]]]:
        """Per point set (``"interior"`` and each condition), per replica: ``(start, stop, fraction)``.

        Contiguous shards whose sizes differ by at most one; ``fraction`` is the shard's share of
        the set's points, the factor that turns the shard's mean into its part of the global mean.
        """
        sizes = {"interior": int(self.interior.shape[0])}
        for condition, arrays in zip(self.problem.conditions, self.condition_arrays):
            lengths = {int(v.shape[0]) for v in arrays.values()}
            if len(lengths) != 1:
                raise ValueError(
                    f"Trainer: condition {condition.name!r} has arrays of different lengths {sorted(lengths)}; a "
                    f"strategy splits a condition's arrays row by row, so they must have one row per point."
                )
            sizes[condition.name] = lengths.pop()
        plan = {}
        for name, size in sizes.items():
            if size < self.replicas:
                raise ValueError(
                    f"Trainer: the point set {name!r} has {size} points, fewer than the strategy's {self.replicas} "
                    f"replicas; give every point set at least one point per replica."
                )
            bounds = [size * r // self.replicas for r in range(self.replicas + 1)]
            plan[name] = [(start, stop, (stop - start) / size) for start, stop in zip(bounds[:-1], bounds[1:])]
        return plan

    def _replica_id(self) -> int:
        context = tf.distribute.get_replica_context()
        replica = tf.get_static_value(context.replica_id_in_sync_group) if context is not None else None
        if replica is None:
            raise RuntimeError("Trainer: a replica's loss was evaluated outside strategy.run (no static replica id).")
        return int(replica)

    def _shard_terms(self, draw: tf.Tensor, frozen: bool = False) -> dict[str, tf.Tensor]:
        """This replica's part of every loss term: its shard's mean times the shard's fraction.

        Summed over the replicas, the parts are the means over all points (what one replica computes).
        """
        replica = self._replica_id()
        part = lambda name, v: v[self._shards[name][replica][0] : self._shards[name][replica][1]]
        points = {"interior": part("interior", self.interior)}
        for condition, arrays in zip(self.problem.conditions, self.condition_arrays):
            points[condition.name] = {key: part(condition.name, v) for key, v in arrays.items()}
        seed = tf.constant(self.seed, tf.int64) * 1_000_003 + tf.cast(draw, tf.int64) + replica * _REPLICA_SEED_STRIDE
        unbiased = False if frozen else None
        terms = self.problem.loss_terms(self.solution, points, self.parameters, seed, unbiased)
        fractions = {name: self._shards["interior"][replica][2] for name in self.problem.residual_names}
        fractions.update({c.name: self._shards[c.name][replica][2] for c in self.problem.conditions})
        return {name: value * tf.constant(fractions[name], value.dtype) for name, value in terms.items()}

    def _replica_loss(self, draw: tf.Tensor) -> tf.Tensor:
        """A replica's Adam loss; its mean over the replicas (TrainStep's all-reduce) is the weighted loss."""
        return self.replicas * self._weighted_sum(self._shard_terms(draw[0]))

    def _replica_frozen_loss(self) -> tf.Tensor:
        """A replica's L-BFGS loss (draws held at ``_draw_step``); minimize_lbfgs averages it over replicas."""
        return self.replicas * self._weighted_sum(self._shard_terms(self._draw_step, frozen=True))

    def _distributed_terms(self, frozen: bool = False) -> dict[str, tf.Tensor]:
        """The loss terms over all points: every replica's part, summed over the replicas."""
        parts = self.strategy.run(self._replica_terms, args=(tf.convert_to_tensor(self._draw_step), frozen))
        return {name: self.strategy.reduce(tf.distribute.ReduceOp.SUM, v, axis=None) for name, v in parts.items()}

    def _weighted_sum(self, terms: dict[str, tf.Tensor]) -> tf.Tensor:
        return tf.add_n([tf.cast(self.weights[name], value.dtype) * value for name, value in terms.items()])

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

    def _position(self) -> int:
        """Adam steps plus L-BFGS iterations so far: checkpoint numbers grow with the run."""
        return int(self.adam_steps.numpy()) + (self._lbfgs["nit"] if self._lbfgs else 0)

    def _save(self) -> None:
        if self.run_log is None:
            return
        number = self._position()
        self._tick()
        self.run_log.save(number, elapsed_seconds=self._elapsed, lbfgs=self._lbfgs, adam_stop=self._adam_stop)
        self._saved_at = number

    def _stop_clock(self) -> None:
        """Ends a phase's timing. When its last act was to checkpoint this state, the time saved
        with it stands (the milliseconds after are dropped), so a resumed run reports the same."""
        if self.run_log is None or self._saved_at != self._position():
            self._tick()
        self._clock = None

    def _tick(self) -> None:
        if self._clock is not None:
            now = time.perf_counter()
            self._elapsed += now - self._clock
            self._clock = now

    # ----------------------------------------------------------------------------- Adam
    def adam(self, steps: int) -> AdamResult:
        """Runs the first-phase optimizer (Adam by default) until ``steps`` steps in total have
        been taken (resume-aware), or a callback stops it (``stop_reason`` says which)."""
        chunk = self.step.steps_per_call
        if not isinstance(steps, int) or steps < 0 or steps % chunk:
            raise ValueError(f"Trainer.adam: steps={steps!r} must be a multiple of steps_per_call={chunk}.")
        start = done = int(self.adam_steps.numpy())
        if self._adam_stop is not None:
            return AdamResult(done, 0, self.final_loss, f"already stopped: {self._adam_stop['reason']}")
        if done >= steps:
            return AdamResult(done, 0, self.final_loss, f"already done: {done} steps taken (resumed run)")
        self.stop_training = False
        stop_reason = f"reached {steps} steps"
        bar = tqdm(total=steps, initial=done, desc="Adam", disable=not self.progress, unit="step")
        self._clock = time.perf_counter()
        try:
            while done < steps:
                # Resampling happens before a chunk, after the checkpoint of the chunk before, so a
                # run resumed from that checkpoint resamples exactly as the uninterrupted one.
                if self.resampling and done and done % self.resampling.every == 0:
                    self._resample(done, self.resampling)
                self._draw_step.assign(done)
                if self.strategy is None:
                    outputs = self.step()
                else:
                    draws = np.arange(done, done + chunk, dtype=np.int64)[:, None].repeat(self.replicas, 1)
                    outputs = self.step(draws)
                    self._draw_step.assign(done + chunk)  # as the one-device loop leaves it
                done += chunk
                self.adam_steps.assign(done)
                terms = self._term_values()
                self._guard(float(outputs["loss"]), f"Adam step {done}", terms)
                if self.adaptive_weights and done % self.adaptive_weights.every == 0:
                    self._update_weights(self.adaptive_weights.alpha)
                if done % self.log_every == 0:
                    row = self._log("adam", done, terms)
                    bar.set_postfix(loss=f"{row['loss']:.3e}")
                    if self._stop_requested(row):
                        stop_reason = self._adam_stop["reason"] if self._adam_stop else stop_reason
                bar.update(chunk)
                if done % self.checkpoint_every == 0 or self._adam_stop:
                    self._save()
                if self._adam_stop:
                    break
            if self._saved_at != self._position():
                self._save()
        finally:
            bar.close()
            self._stop_clock()
        result = AdamResult(done, done - start, self.final_loss, stop_reason)
        for callback in self.callbacks:
            callback.on_phase_end(self, "adam", result)
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
            self._adam_stop = {"step": int(row["step"]), "reason": reasons[0]}
        return bool(reasons)

    def _update_weights(self, alpha: float) -> None:
        targets = self._weight_targets()
        for name, target in targets.items():
            self.weights[name].assign((1.0 - alpha) * self.weights[name] + alpha * tf.cast(target, self.dtype))

    def _annealing_targets(self) -> dict[str, tf.Tensor]:
        with tf.GradientTape(persistent=True) as tape:
            terms = self._loss_terms()
        weights = self.model.trainable_variables
        flat = lambda grads: tf.concat([tf.reshape(tf.abs(g), [-1]) for g in grads if g is not None], 0)
        residual_max = tf.reduce_max(
            flat(tape.gradient(tf.add_n([terms[n] for n in self.problem.residual_names]), weights))
        )
        targets = {}
        for condition in self.problem.conditions:
            mean = tf.reduce_mean(flat(tape.gradient(terms[condition.name], weights)))
            targets[condition.name] = residual_max / tf.maximum(mean, tf.constant(1e-30, mean.dtype))
        del tape
        return targets

    def _resampling_scores(self, x: tf.Tensor) -> tf.Tensor:
        residuals = self.problem.pde_residuals(self.solution, x, self.parameters)
        k = self.resampling.k if self.resampling else 1.0
        return tf.add_n([tf.abs(r) ** k for r in residuals])

    def _resample(self, step: int, config: Resampling) -> None:
        candidates = self.problem.domain.sample_interior(config.candidates, "random", self.seed * 1_000_003 + step)
        score = np.concatenate(
            [
                self._residual_scores(tf.constant(part, self.dtype)).numpy()
                for part in np.array_split(candidates, max(1, config.candidates // 20_000))
            ]
        )
        density = score / score.mean() + config.c
        rng = np.random.default_rng([self.seed, step])
        chosen = rng.choice(len(candidates), size=int(self.interior.shape[0]), replace=False, p=density / density.sum())
        self.interior.assign(candidates[chosen])

    # ----------------------------------------------------------------------------- L-BFGS
    def lbfgs(
        self,
        max_iterations: int,
        gtol: float = 1e-10,
        ftol: float = float(np.finfo(float).eps),
        max_corrections: int = 50,
    ) -> scipy.optimize.OptimizeResult:
        """Runs L-BFGS-B (:func:`hodiff.lbfgs.minimize_lbfgs`) on the weights; returns scipy's result.

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
        if self._lbfgs is not None:
            x = np.concatenate([np.ravel(v.numpy()).astype(np.float64) for v in self.variables])
            return scipy.optimize.OptimizeResult(x=x, **self._lbfgs)
        terms = self._term_values()
        self._guard(self._weighted(terms), "the start of L-BFGS", terms)
        base = int(self.adam_steps.numpy())
        if self._saved_at != base:
            self._save()
        # Stochastic needs: one draw (fixed by the step the phase starts at) for the whole phase, since a
        # quasi-Newton method needs the same objective at every evaluation, squared (mean(r^2)), since
        # the two-draw mean(r1 * r2) of a frozen draw is not bounded below. Resuming redraws it exactly.
        self._draw_step.assign(base)
        self._in_lbfgs = bool(self.problem.stochastic)
        iterations, logged = [0], [None]

        def callback(intermediate_result):
            iterations[0] += 1
            if iterations[0] % self.log_every == 0:
                self._log("lbfgs", base + iterations[0])
                logged[0] = base + iterations[0]

        loss_scale = float(self.optimizer.dynamic_scale.numpy()) if self.mixed else 1.0
        self._clock = time.perf_counter()
        try:
            result = minimize_lbfgs(
                self._frozen_loss if self.strategy is None else self._replica_frozen_loss,
                self.variables,
                max_iterations,
                gtol=gtol,
                ftol=ftol,
                max_corrections=max_corrections,
                callback=callback,
                loss_scale=loss_scale,
                progress=self.progress,
                strategy=self.strategy,
            )
            terms = self._term_values()
            self._guard(float(result.fun), f"the end of L-BFGS ({result.message})", terms)
            if result.nit == 0:
                logger.warning(
                    "L-BFGS stopped without taking an iteration (%s); it does not count as done.", result.message
                )
                return result
            if logged[0] != base + result.nit:
                self._log("lbfgs", base + result.nit, terms)
            self._lbfgs = {
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
            self._save()
        finally:
            self._stop_clock()
            self._in_lbfgs = False
        for hook in self.callbacks:
            hook.on_phase_end(self, "lbfgs", result)
        return result

    # ----------------------------------------------------------------------------- logs
    def _log(self, phase: str, step: int, terms: dict[str, float] | None = None) -> dict[str, Any]:
        terms = terms if terms is not None else self._term_values()
        row = {
            "phase": phase,
            "step": step,
            "seconds": round(self.elapsed_seconds, 3),
            "loss": self._weighted(terms),
            **terms,
            **{f"weight_{n}": float(w.numpy()) for n, w in self.weights.items()},
            **{n: float(p.numpy()) for n, p in self.parameters.items()},
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
                    logger.info("%s asked to stop during L-BFGS; L-BFGS runs on.", type(callback).__name__)
                    self.stop_training = False
        return row

    # ----------------------------------------------------------------------------- use
    def predict(self, points: Any, batch: int = 65536) -> np.ndarray:
        """The solution at ``points`` ``(N, d)``: ``(N, fields)`` numpy array."""
        points = _validate.check_point_array(points, self.problem.domain.coords, "Trainer.predict")
        parts = [
            self._predict(tf.constant(points[i : i + batch], self.dtype)).numpy()
            for i in range(0, max(len(points), 1), batch)  # no points: one empty batch, an empty (0, fields) result
        ]
        return np.concatenate(parts, axis=0)

    def _named_residuals(self, x: tf.Tensor) -> dict[str, tf.Tensor]:
        residuals = self.problem.pde_residuals(self.solution, x, self.parameters)
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
        return {name: float(value.numpy()) for name, value in self.parameters.items()}


def _check_strategy(strategy: Any, problem: Problem, model: keras.Model, optimizer: Any) -> None:
    """Raises unless ``strategy`` is a tf.distribute strategy that built the model (and optimizer)."""
    if not isinstance(strategy, tf.distribute.Strategy):
        raise TypeError(
            f"Trainer: strategy must be a tf.distribute strategy (e.g. tf.distribute.MirroredStrategy()), got "
            f"{type(strategy).__name__}."
        )
    if problem.causal is not None:
        raise ValueError(
            "Trainer: causal weights need the residuals of all points at once (per time slice), which a strategy "
            "splits over replicas; train a causal problem without strategy=."
        )
    outside = [v.name for v in model.weights if not strategy.extended.variable_created_in_scope(_tf_variable(v))]
    if outside:
        raise ValueError(
            f"Trainer: the model's weights {outside[:3]} were not created under strategy.scope(); build the model "
            f"(and any optimizer) inside `with strategy.scope():`."
        )
    if optimizer is not None and not strategy.extended.variable_created_in_scope(_tf_variable(optimizer.iterations)):
        raise ValueError(
            "Trainer: the optimizer was not created under strategy.scope(); create it inside `with strategy.scope():`."
        )


def _tf_variable(variable: Any) -> Any:
    """The tf.Variable behind a Keras variable (the variable itself otherwise)."""
    return getattr(variable, "value", variable)


def relative_l2_error(prediction: Any, reference: Any) -> float:
    """``||prediction - reference||_2 / ||reference||_2`` over all entries."""
    prediction, reference = np.ravel(prediction), np.ravel(reference)
    return float(np.linalg.norm(prediction - reference) / np.linalg.norm(reference))
