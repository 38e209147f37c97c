"""The :class:`~hodiff.pinn.Trainer`'s options: :class:`Schedule`, :class:`Output`, and the checks of its arguments.

Also maps the trainer's former keywords (``interior=``, ``steps_per_call=``, ``output_dir=``,
``adaptive_weights=``, ...) onto the data, the schedule, the output and the callbacks, with a
``DeprecationWarning``.

Example:
  ```python
  import pytest
  from hodiff.pinn import Output, Schedule

  schedule = Schedule(steps_per_call=10, log_every=20)
  assert schedule.checkpoint_every == 1000 and schedule.progress
  with pytest.raises(ValueError, match="log_every=15 must be a positive multiple of steps_per_call=10"):
      Schedule(steps_per_call=10, log_every=15)
  assert Output("runs/heat", resume=True).settings is None
  ```
"""

from __future__ import annotations

import dataclasses
import warnings
from typing import Any

import keras
import tensorflow as tf

from hodiff import _validate
from hodiff.pinn.callbacks import AdaptiveWeights, ResidualResampling
from hodiff.pinn.data import TrainingData
from hodiff.pinn.problem import Problem

__all__ = ["Output", "Schedule", "check_every", "check_optimizer", "check_strategy", "from_keywords"]


@dataclasses.dataclass
class Schedule:
    """When things happen during training.

    Args:
      steps_per_call: Adam steps per compiled call.
      log_every: Adam steps (and L-BFGS iterations) between history rows, a multiple of ``steps_per_call``.
      checkpoint_every: Adam steps between checkpoints (with an output directory), a multiple of
        ``steps_per_call``.
      progress: show tqdm progress bars.
      diagnose_every: the trainer's :class:`~hodiff.pinn.diagnostics.StallDiagnostic` (added unless
        the callbacks hold one) adds gradient norms to the history rows whose step is a multiple of
        it, and warns when a phase ends stalled; 0 turns the diagnostic off.
      jit_compile: compile the Adam steps and L-BFGS's loss and gradient with XLA (fastest per
        step); ``False`` runs them as TensorFlow graphs, which start seconds sooner since nothing
        is XLA-compiled: the better choice for runs of a few hundred steps.
    """

    steps_per_call: int = 100
    log_every: int = 100
    checkpoint_every: int = 1000
    progress: bool = True
    diagnose_every: int = 1000
    jit_compile: bool = True

    def __post_init__(self):
        _validate.check_count(self.steps_per_call, "steps_per_call", "Schedule")
        _validate.check_finite_number(self.diagnose_every, "diagnose_every", "Schedule", 0, integer=True)
        check_every(self.log_every, self.steps_per_call, "log_every")
        check_every(self.checkpoint_every, self.steps_per_call, "checkpoint_every")
        if not isinstance(self.jit_compile, bool):  # tf.function would take any truthy value as True
            raise TypeError(
                f"Schedule: jit_compile must be True (XLA) or False (TensorFlow graphs), got {self.jit_compile!r}."
            )


@dataclasses.dataclass
class Output:
    """Where a run's files go and how an existing run there is treated.

    Args:
      directory: where ``history.csv``, ``checkpoints/``, ``run_info.json`` and ``tensorboard/``
        go (see :class:`~hodiff.pinn.runlog.RunLog`).
      resume: continue the run in ``directory`` from its latest readable checkpoint.
      overwrite: replace a run already held in ``directory``.
      tensorboard: also write the history as TensorBoard scalars.
      settings: more settings that define the run (JSON-serialisable), stored with the
        checkpoints next to the trainer's own (learning rate, seed, sizes, sampling, dtype,
        steps per call, options, loss terms); resuming with any of them changed raises.
    """

    directory: str
    resume: bool = False
    overwrite: bool = False
    tensorboard: bool = False
    settings: dict[str, Any] | None = None


_DATA_KEYS = ("interior", "sampling", "seed")
_SCHEDULE_KEYS = ("steps_per_call", "log_every", "checkpoint_every", "progress")
_OUTPUT_KEYS = {"output_dir": "directory", "resume": "resume", "overwrite": "overwrite", "tensorboard": "tensorboard"}
_LEGACY = (*_DATA_KEYS, *_SCHEDULE_KEYS, *_OUTPUT_KEYS, "settings", "adaptive_weights", "resampling", "causal")


def check_every(value: int, steps_per_call: int, name: str) -> None:
    if not isinstance(value, int) or value < 1 or value % steps_per_call:
        raise ValueError(
            f"Trainer: {name}={value!r} must be a positive multiple of steps_per_call={steps_per_call} (events "
            f"happen between compiled calls)."
        )


def check_strategy(strategy: Any, problem: Problem, model: keras.Model, optimizer: Any) -> None:
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


def check_optimizer(optimizer: Any, learning_rate: Any) -> Any:
    """The learning rate to use (1e-3 without optimizer and learning rate); raises on a bad pair."""
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
    return learning_rate


def from_keywords(
    data: Any, schedule: Schedule | None, output: Output | None, callbacks: list, legacy: dict[str, Any]
) -> tuple[TrainingData, Schedule | None, Output | None, list]:
    """The data, schedule, output and callbacks from the former keywords (deprecated), checked."""
    unknown = set(legacy) - set(_LEGACY)
    if unknown:
        raise TypeError(f"Trainer: unexpected keyword arguments {sorted(unknown)}.")
    if legacy:
        warnings.warn(
            f"Trainer({', '.join(f'{k}=' for k in legacy)}) is deprecated: pass TrainingData(problem, interior, "
            "sampling, seed), schedule=Schedule(...), output=Output(...), and AdaptiveWeights / ResidualResampling "
            "in callbacks=.",
            DeprecationWarning,
            stacklevel=3,
        )
    if isinstance(data, Problem):
        causal = legacy.get("causal")
        if causal is not None:
            if data.causal is not None and data.causal != causal:
                raise ValueError(
                    f"Trainer: causal={causal} differs from the problem's causal={data.causal}; set it in one place."
                )
            data = data.replace(causal=causal)
        data = TrainingData(data, **{k: legacy[k] for k in _DATA_KEYS if k in legacy})
    elif isinstance(data, TrainingData):
        given = [k for k in (*_DATA_KEYS, "causal") if k in legacy]
        if given:
            raise ValueError(f"Trainer: {given} belong to the TrainingData (or its problem); set them there.")
    else:
        raise TypeError(f"Trainer: data must be a hodiff.pinn.TrainingData or Problem, got {type(data).__name__}.")
    if any(k in legacy for k in _SCHEDULE_KEYS):
        if schedule is not None:
            raise ValueError("Trainer: give the steps per call, logging and progress in schedule= only.")
        schedule = Schedule(**{k: legacy[k] for k in _SCHEDULE_KEYS if k in legacy})
    if legacy.get("output_dir") is not None:
        if output is not None:
            raise ValueError("Trainer: give the run's directory in output= only.")
        output = Output(**{new: legacy[old] for old, new in _OUTPUT_KEYS.items() if old in legacy})
        output.settings = legacy.get("settings")
    elif any(legacy.get(k) for k in ("resume", "overwrite", "tensorboard")):
        raise ValueError("Trainer: resume, overwrite and tensorboard need output_dir, where the run's files are.")
    plugins = [legacy.get("resampling"), legacy.get("adaptive_weights")]
    for plugin, kind in zip(plugins, (ResidualResampling, AdaptiveWeights)):
        if plugin is not None and not isinstance(plugin, kind):
            raise TypeError(f"Trainer: expected a {kind.__name__}, got {type(plugin).__name__}.")
    return data, schedule, output, [p for p in plugins if p is not None] + callbacks
