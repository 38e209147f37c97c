"""A study as one call: fit a problem, score it against a reference, and get a result object back.

:func:`solve` trains a model on a problem, phase after phase (:class:`Phases`: Adam, then L-BFGS or BFGS),
in one trainer or window after window (:func:`~hodiff.pinn.time_marching` with ``windows=``), in
memory or in a run directory that a killed run resumes from, and returns a :class:`Solution`: the
fields at the reference points, ``evaluate(points)`` anywhere, PINNacle's relative L2 error over all
fields, per field and per group of fields, the history, why each phase stopped, the training time and
the peak memory, with :meth:`Solution.save` and :meth:`Solution.load`.

References:
  Hao et al. (2024), "PINNacle: a comprehensive benchmark of physics-informed neural networks for
  solving PDEs", NeurIPS Datasets and Benchmarks (arXiv:2306.08827): the relative L2 error.

Example:
  ```python
  import numpy as np
  import tensorflow as tf
  from hodiff import pinn

  domain = pinn.Interval("x", 0.0, 1.0)
  source = lambda d, x, p: d["u_xx"] + np.pi**2 * tf.sin(np.pi * x["x"])
  ends = pinn.hard_dirichlet(domain, {"left": 0.0, "right": 0.0})
  poisson = pinn.Problem(domain, needs=("u_xx",), residual=source, output_transform=ends)
  x = np.linspace(0.0, 1.0, 101)[:, None]
  phases = pinn.Phases(adam_steps=500, lbfgs_iterations=200)
  reference = pinn.Reference(x, {"u": np.sin(np.pi * x[:, 0])})
  solution = pinn.solve(poisson, pinn.mlp(domain, width=16, depth=2), phases, reference=reference)
  assert solution.errors["relative_l2_error"] < 1e-3
  assert solution.stops["adam"] == "reached 500 steps" and set(solution.values) == {"u"}
  ```
"""

from __future__ import annotations

import dataclasses
import json
import logging
import math
import os
import resource
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import keras
import numpy as np
import tensorflow as tf

from hodiff import _validate
from hodiff.pinn.data import TrainingData
from hodiff.pinn.geometry import inside_domain
from hodiff.pinn.metrics import relative_l2_errors
from hodiff.pinn.problem import Problem
from hodiff.pinn.runlog import atomic_write, checkpoint_files, restore_model, write_json
from hodiff.pinn.trainer import Trainer
from hodiff.pinn.trainer_options import Output
from hodiff.pinn.windows import TimeWindows, restore_marching, time_marching

__all__ = ["Phases", "Reference", "Solution", "read_points", "solve"]

logger = logging.getLogger(__name__)


@dataclasses.dataclass(frozen=True)
class Phases:
    """The training phases of a study (of each window in a marched one): Adam, then a quasi-Newton method.

    Args:
      adam_steps: Adam steps, a multiple of the trainer's ``steps_per_call`` (0: none).
      lbfgs_iterations: quasi-Newton iterations after Adam (0: none).
      method: ``"lbfgs"`` (L-BFGS-B) or ``"bfgs"`` (self-scaled BFGS, small networks).
    """

    adam_steps: int = 1000
    lbfgs_iterations: int = 0
    method: str = "lbfgs"

    def __post_init__(self):
        _validate.check_finite_number(self.adam_steps, "adam_steps", "Phases", 0, integer=True)
        _validate.check_finite_number(self.lbfgs_iterations, "lbfgs_iterations", "Phases", 0, integer=True)
        if self.method not in ("lbfgs", "bfgs"):
            raise ValueError(f"Phases: method={self.method!r} must be 'lbfgs' or 'bfgs'.")

    def __call__(self, trainer: Trainer) -> dict[str, str]:
        """Runs the phases on ``trainer``; returns ``{phase: why it stopped}``."""
        return self.run(trainer)[0]

    def run(self, trainer: Trainer) -> tuple[dict[str, str], Any]:
        """Runs the phases on ``trainer``; returns ``{phase: why it stopped}`` and the quasi-Newton phase's scipy
        ``OptimizeResult`` (``None`` without that phase)."""
        stops = {"adam": trainer.adam(self.adam_steps).stop_reason}
        result = None
        if self.lbfgs_iterations:
            result = trainer.lbfgs(self.lbfgs_iterations, method=self.method)
            stops[self.method] = f"{result.message} after {result.nit} iterations"
        return stops, result


@dataclasses.dataclass
class Reference:
    """Reference values of a study's fields at points.

    Args:
      points: ``(N, d)`` points, columns in the domain's coordinate order.
      values: ``{field: (N,) values}``; NaN entries (points outside the domain) are left out of the errors.
      groups: groups of fields scored together besides all of them, e.g. ``[("u", "v")]`` for a flow's velocity.
      error_fields: the fields combined in ``relative_l2_error`` (default: all of ``values``); each field of
        ``values`` is scored on its own too.
    """

    points: Any
    values: Mapping[str, Any]
    groups: Sequence[Sequence[str]] = ()
    error_fields: Sequence[str] | None = None

    def __post_init__(self):
        self.points = np.asarray(self.points, dtype=np.float64)
        if self.points.ndim != 2:
            raise ValueError(f"Reference: points must be an (N, d) array, got shape {self.points.shape}.")
        self.values = {name: np.asarray(value, dtype=np.float64).reshape(-1) for name, value in self.values.items()}
        for name, value in self.values.items():
            if value.shape != (len(self.points),):
                raise ValueError(
                    f"Reference: the values of {name!r} have {value.size} entries for {len(self.points)} points; "
                    "give one value per point."
                )
        self.groups = [tuple(group) for group in self.groups]
        if self.error_fields is not None:
            self.error_fields = tuple(self.error_fields)
        for group in [*self.groups, *([self.error_fields] if self.error_fields is not None else [])]:
            unknown = [name for name in group if name not in self.values]
            if unknown:
                raise ValueError(f"Reference: {group} names {unknown}, which have no values; name fields of values.")

    def errors(self, prediction: Mapping[str, Any]) -> dict[str, float]:
        """The relative L2 errors of ``prediction`` (``{field: (N,)}``): all fields, each, and each group
        (``relative_l2_error_<fields joined>``)."""
        errors = relative_l2_errors(prediction, self.values, self.error_fields)
        for group in self.groups:
            errors["relative_l2_error_" + "".join(group)] = relative_l2_errors(prediction, self.values, group)[
                "relative_l2_error"
            ]
        return errors


@dataclasses.dataclass
class Solution:
    """What a study found: the fields where the reference is, how far off they are, and how it got there.

    Attributes:
      fields: the problem's fields.
      points: the reference's points (``None`` without a reference).
      values: ``{field: (N,)}`` at ``points`` (empty without a reference).
      errors: relative L2 errors (:meth:`Reference.errors`; empty without a reference).
      history: the history rows (every window's, with ``window``, in a marched study).
      stops: ``{phase: why it stopped}`` (a list, one per window, in a marched study).
      windows: per window of a marched study, ``{"start", "end", "adam_steps", "final_loss", "seconds"}`` and its
        stops (empty for one trainer).
      wall_seconds: training time, summed over resumes (and windows).
      peak_memory_mib: the process's peak resident memory when the study ended.
      checkpoint: the checkpoint that :meth:`evaluate` answers from, ``window-<k>/ckpt-<n>`` for a marched run
        (:meth:`load` with a problem and a model; ``None`` otherwise).
    """

    fields: tuple[str, ...]
    points: np.ndarray | None
    values: dict[str, np.ndarray]
    errors: dict[str, float]
    history: list[dict[str, Any]]
    stops: dict[str, Any]
    wall_seconds: float
    peak_memory_mib: float
    predict: Callable[[np.ndarray], np.ndarray] | None = dataclasses.field(default=None, repr=False)
    domain: Any = dataclasses.field(default=None, repr=False)
    checkpoint: str | None = None
    windows: list[dict[str, Any]] = dataclasses.field(default_factory=list)

    def evaluate(self, points: Any, outside: str = "error") -> dict[str, np.ndarray]:
        """``{field: (N,)}`` at ``points`` ``(N, d)``, columns in the domain's coordinate order.

        Args:
          points: the points.
          outside: what points outside the domain the network was trained on get: ``"error"`` (default) refuses
            them, naming the first; ``"nan"`` gives them NaN, with a warning.

        Raises:
          ValueError: the points have the wrong number of columns, or some are outside and ``outside="error"``.
        """
        if self.predict is None:
            raise RuntimeError(
                "Solution.evaluate: this solution was loaded without its problem and model; "
                "use Solution.load(directory, problem, model) to evaluate it."
            )
        if outside not in ("error", "nan"):
            raise ValueError(f"Solution.evaluate: outside={outside!r}; give 'error' (refuse such points) or 'nan'.")
        points = np.asarray(points, dtype=np.float64)
        inside = np.ones(len(points), dtype=bool)
        if self.domain is not None:
            coords = tuple(self.domain.coords)
            if points.ndim != 2 or points.shape[1] != len(coords):
                columns = points.shape[1] if points.ndim == 2 else f"shape {points.shape}, not"
                raise ValueError(
                    f"Solution.evaluate: the points have {columns} columns; the domain has coordinates {coords}, so "
                    f"give {len(coords)} columns in that order."
                )
            inside = inside_domain(self.domain, points)
        if not inside.all():
            first = int(np.flatnonzero(~inside)[0])
            where = ", ".join(f"{name}={value:.6g}" for name, value in zip(self.domain.coords, points[first]))
            count = int((~inside).sum())
            message = f"{count} of {len(points)} points are outside the domain (the first is row {first}: {where})"
            if outside == "error":
                raise ValueError(f"Solution.evaluate: {message}; remove them, or pass outside='nan' to get NaN there.")
            logger.warning("Solution.evaluate: %s; their values are NaN (outside='nan').", message)
        values = np.full((len(points), len(self.fields)), np.nan)
        if inside.any():
            values[inside] = np.asarray(self.predict(points[inside]), dtype=np.float64)
        return {name: values[:, i] for i, name in enumerate(self.fields)}

    def summary(self) -> dict[str, Any]:
        """The JSON-able part: fields, errors, stops, wall seconds and peak memory."""
        return {
            "fields": list(self.fields),
            "errors": self.errors,
            "stops": self.stops,
            "windows": self.windows,
            "wall_seconds": round(self.wall_seconds, 3),
            "peak_memory_mib": round(self.peak_memory_mib, 1),
        }

    def save(self, directory: str) -> None:
        """Writes ``solution.json`` (the summary and the history) and ``solution.npz`` (points and values) into
        ``directory``, each replaced atomically."""
        os.makedirs(directory, exist_ok=True)
        write_json(os.path.join(directory, "solution.json"), {**self.summary(), "history": self.history})
        arrays: dict[str, Any] = {"points": self.points if self.points is not None else np.zeros((0, 0))}
        arrays.update({f"value_{name}": value for name, value in self.values.items()})
        with atomic_write(os.path.join(directory, "solution.npz")) as temporary, open(temporary, "wb") as file:
            np.savez(file, **arrays)

    @classmethod
    def load(
        cls,
        directory: str,
        problem: Problem | None = None,
        model: keras.Model | None = None,
        windows: TimeWindows | None = None,
    ) -> Solution:
        """The solution :meth:`save` wrote in ``directory``; with the ``problem`` and a ``model`` of the run's
        architecture (and its ``windows``), its weights are restored from the run's newest readable checkpoint
        in ``directory`` (each window's), so that :meth:`evaluate` answers anywhere. A run that has checkpoints
        but no saved solution yet (killed before its end) loads too, with the problem and the model: it answers
        from its newest checkpoint, with no errors, history or stops (and NaN seconds and memory).

        Raises:
          FileNotFoundError: ``directory`` holds no saved solution (nor, with a problem and a model, a
            checkpoint).
        """
        restore = problem is not None and model is not None
        try:
            with open(os.path.join(directory, "solution.json")) as file:
                saved = json.load(file)
            arrays = dict(np.load(os.path.join(directory, "solution.npz")))
        except FileNotFoundError:
            if not restore:
                raise FileNotFoundError(
                    f"Solution.load: {directory} holds no saved solution (solution.json and solution.npz); give "
                    "the directory a study saved with output= or Solution.save, or the problem and the model to "
                    "restore its checkpoints."
                ) from None
            fields = tuple(problem.fields)  # type: ignore[union-attr]
            saved = {"fields": fields, "errors": {}, "history": [], "stops": {}}
            saved.update(wall_seconds=math.nan, peak_memory_mib=math.nan)
            arrays = {"points": np.zeros((0, 0))}
        fields = tuple(saved["fields"])
        points = arrays["points"] if arrays["points"].size else None
        values = {name: arrays[f"value_{name}"] for name in fields if f"value_{name}" in arrays}
        predict, domain, checkpoint = None, None, None
        if restore:
            predict, checkpoint = _restored(problem, model, windows, directory)  # type: ignore[arg-type]
            domain = problem.domain  # type: ignore[union-attr]
        return cls(
            fields, points, values, saved["errors"], saved["history"], saved["stops"], saved["wall_seconds"],
            saved["peak_memory_mib"], predict, domain, checkpoint, saved.get("windows", []),
        )  # fmt: skip


def _restored(
    problem: Problem, model: keras.Model, windows: TimeWindows | None, directory: str
) -> tuple[Callable, str]:
    """``(predict, checkpoint)``: the run in ``directory`` restored into ``model``, and which checkpoint answers."""
    try:
        if windows is not None:
            marching = restore_marching(problem, model, windows, directory)
            last = f"window-{windows.count - 1}"
            return marching.predict, f"{last}/{os.path.basename(checkpoint_files(os.path.join(directory, last))[0][1])}"
        prefix = restore_model(model, directory)
    except FileNotFoundError as error:
        raise FileNotFoundError(f"Solution.load: {error}; give the run's directory.") from None
    solution = tf.function(problem.solution(model), jit_compile=True, reduce_retracing=True, autograph=False)
    dtype, batch = model.weights[0].dtype, 65536

    def predict(points: np.ndarray) -> np.ndarray:
        parts = [solution(tf.constant(points[i : i + batch], dtype)).numpy() for i in range(0, len(points), batch)]
        return np.concatenate(parts or [np.zeros((0, len(problem.fields)))])

    return predict, os.path.basename(prefix)


def _default_trainer(problem: Problem, model: keras.Model) -> Trainer:
    return Trainer(TrainingData(problem), model)


def peak_memory_mib() -> float:
    """The peak resident memory of this process, in MiB (``ru_maxrss``: KiB on Linux, bytes on macOS)."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / (2**20 if sys.platform == "darwin" else 2**10)


def solve(
    problem: Problem,
    model: keras.Model,
    phases: Phases | Callable[[Trainer], dict[str, Any]] = Phases(),
    *,
    trainer: Callable[[Problem, keras.Model], Trainer] = _default_trainer,
    windows: TimeWindows | None = None,
    output: Output | None = None,
    reference: Reference | None = None,
) -> Solution:
    """Trains ``model`` on ``problem`` and scores it; returns the :class:`Solution`.

    Args:
      problem: the problem (without :class:`~hodiff.pinn.Initial` conditions when marched).
      model: the network.
      phases: :class:`Phases`, or ``phases(trainer) -> {phase: why it stopped}`` running phases of your own.
      trainer: ``trainer(problem, model) -> Trainer`` (its data, schedule, callbacks; no output), default
        ``Trainer(TrainingData(problem), model)``.
      windows: :class:`~hodiff.pinn.TimeWindows` to march in (:func:`~hodiff.pinn.time_marching`); ``None``:
        one trainer over the whole domain.
      output: the run's :class:`~hodiff.pinn.Output` (its directory, resume, overwrite, settings): checkpoints,
        history, and the solution saved there (:meth:`Solution.save`); ``None`` keeps everything in memory.
      reference: :class:`Reference` values to score the solution against.

    Raises:
      TypeError: ``phases`` or ``trainer`` is not a function.
    """
    if not callable(phases) or not callable(trainer):
        raise TypeError(
            "solve: phases must be a pinn.Phases or a function phases(trainer) -> {phase: reason}, and trainer a "
            f"function trainer(problem, model) -> Trainer; got {phases!r} and {trainer!r}."
        )
    if windows is not None:
        marching = time_marching(
            problem, model, windows, trainer, phases,
            None if output is None else output.directory,
            False if output is None else output.resume,
            False if output is None else output.overwrite,
            None if output is None else output.settings,
            False if output is None else output.tensorboard,
        )  # fmt: skip
        predict, history, seconds = marching.predict, marching.history, marching.elapsed_seconds
        keys = dict.fromkeys(key for run in marching.runs for key in run.result)
        stops: dict[str, Any] = {key: [run.result.get(key) for run in marching.runs] for key in keys}
        windows_run = [
            {
                "start": start, "end": end, "adam_steps": run.adam_steps, "final_loss": run.final_loss,
                "seconds": round(run.seconds, 1), **run.result,
            }
            for (start, end), run in zip(windows.bounds(problem.domain), marching.runs)
        ]  # fmt: skip
    else:
        built = trainer(problem, model)
        if not isinstance(built, Trainer):
            raise TypeError(f"solve: trainer(problem, model) must return a pinn.Trainer, got {type(built).__name__}.")
        if output is not None:
            built.start_run(output)
        stops = phases(built)
        predict, history, seconds, windows_run = built.predict, list(built.history), built.elapsed_seconds, []
    values: dict[str, np.ndarray] = {}
    errors: dict[str, float] = {}
    if reference is not None:
        predicted = np.asarray(predict(reference.points), dtype=np.float64)
        values = {name: predicted[:, i] for i, name in enumerate(problem.fields)}
        errors = reference.errors(values)
    points = None if reference is None else reference.points
    fields = tuple(problem.fields)
    solution = Solution(
        fields,
        points,
        values,
        errors,
        history,
        stops,
        seconds,
        peak_memory_mib(),
        predict,
        problem.domain,
        None,
        windows_run,
    )
    if output is not None:
        solution.save(output.directory)
    return solution


def read_points(path: str | os.PathLike) -> np.ndarray:
    """The points in an ``.npy`` file, checked: a finite ``(N, d)`` float64 array, one row per point.

    The header's shape is checked against the file's size and the machine's memory before any data is read, so a
    truncated file or a header claiming terabytes is refused at once.

    Args:
      path: an ``.npy`` file written by ``numpy.save(path, points)``.

    Returns:
      The ``(N, d)`` float64 points, e.g. for :meth:`Solution.evaluate`.

    Raises:
      FileNotFoundError: there is no such file.
      ValueError: the file is not a readable ``.npy`` array, is truncated, is not 2-D, is not of real numbers,
        holds NaN or Inf, or needs more memory than the machine has; the message names the file and the fix.
    """
    path = os.fspath(path)
    missing = f"{path}: no such file; give an .npy file of (N, d) points."
    unreadable = "{path}: not a readable .npy array ({error}); write it with numpy.save(path, points)."
    try:
        with open(path, "rb") as file:
            version = np.lib.format.read_magic(file)
            read = np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
            shape, _, dtype = read(file)
            offset = file.tell()
        rows = int(np.prod(shape, dtype=object))  # exact: a Python int, whatever the header claims
        claimed, size = rows * dtype.itemsize, os.path.getsize(path)
    except FileNotFoundError:
        raise FileNotFoundError(missing) from None
    except (OSError, ValueError, EOFError, TypeError) as error:
        raise ValueError(unreadable.format(path=path, error=error)) from None
    if not dtype.hasobject and offset + claimed > size:
        raise ValueError(
            f"{path}: the header claims shape {shape} of {dtype} ({claimed:.3g} bytes), but the file holds "
            f"{size - offset} bytes of data; it is truncated or corrupt. Write it again with numpy.save(path, points)."
        )
    needed, memory = 3 * rows * 8, os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    if needed > memory:  # the points in float64, and the predicted values beside them
        raise ValueError(
            f"{path}: {rows} numbers of shape {shape} need about {needed / 2**30:.3g} GiB, more than this machine's "
            f"{memory / 2**30:.3g} GiB of memory; evaluate them in parts (several smaller .npy files)."
        )
    try:
        points = np.load(path, allow_pickle=False)
    except FileNotFoundError:
        raise FileNotFoundError(missing) from None
    except (OSError, ValueError, EOFError) as error:
        raise ValueError(unreadable.format(path=path, error=error)) from None
    if not isinstance(points, np.ndarray) or points.ndim != 2:
        raise ValueError(
            f"{path}: the points must be a 2-D array (N, d), got shape {np.shape(points)}; reshape it to one row "
            "per point."
        )
    if not np.issubdtype(points.dtype, np.number) or np.issubdtype(points.dtype, np.complexfloating):
        raise ValueError(f"{path}: the points have dtype {points.dtype}; give real numbers.")
    points = points.astype(np.float64)
    bad = np.flatnonzero(~np.all(np.isfinite(points), axis=1))
    if bad.size:
        raise ValueError(
            f"{path}: {bad.size} rows hold NaN or Inf (the first is row {bad[0]}: {points[bad[0]]}); give finite "
            "coordinates."
        )
    return points
