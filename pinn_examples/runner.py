"""The command line shared by the PDE examples: presets, flags, checks, training, error, files.

Each example module defines an :class:`Example`; ``python -m pinn_examples NAME [flags]``
trains it and writes ``results/NAME/``: ``metrics.json`` (error, steps, wall time),
``prediction.npz`` (the test-grid axes as named 1-D arrays and the predicted field),
``field.png``, ``history.png``, ``history.csv`` and ``checkpoints/``, each written to a
temporary file and renamed, so a killed run leaves whole files. Flags, memory and ``--output``
are checked before any work; a directory that holds a run is continued with ``--resume`` (which
reproduces the uninterrupted run's results) or replaced with ``--overwrite``, never silently.
The last line says whether the preset's target was met; the exit status is ``TARGET_MISSED``
when it was not. ``--evaluate POINTS.npy`` trains nothing: it restores the run in ``--output``
and writes ``evaluation.npz`` (``points`` and one array per field) beside it.

A reference may hold several fields and NaN at grid points outside the domain; the prediction
is NaN there too, the error leaves those points out and the plots leave them blank.

``--replicas N`` trains on N replicas of this machine (``tf.distribute.MirroredStrategy``): N
GPUs, or without GPUs N logical CPU devices (set up before TensorFlow starts its devices; they
share the machine's cores). ``--multi-worker`` trains on the cluster in ``TF_CONFIG``
(``MultiWorkerMirroredStrategy``); every worker runs the same command, and workers other than
the chief (worker 0) write under ``OUTPUT/worker-<index>``. See ``docs/distributed.md``.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import logging
import math
import numbers
import os
import shutil
import tempfile
from collections.abc import Callable
from typing import Any

import numpy as np

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")


TARGET_MISSED = 3  # exit status of a run that missed its preset's target
SEED_MAX = 2**32 - 1  # keras.utils.set_random_seed (numpy's legacy seed) takes 0 .. 2**32 - 1
# written by the runner, and by the study it runs (hodiff.pinn.Solution.save)
RESULT_FILES = ("metrics.json", "prediction.npz", "field.png", "history.png", "solution.json", "solution.npz")
RUN_FILES = (*RESULT_FILES, "history.csv", "checkpoints", "tensorboard", "window-0")  # any: the directory holds a run


MAX_TIME_WINDOWS = 1000  # more windows than this are a typo: each trains --adam-steps and --lbfgs-iterations
MAX_CAUSAL_EPSILON = 1e4  # exp(-epsilon * loss) underflows for every slice but the first well before this


def _setting(
    default: Any,
    description: str,
    positive: bool = False,
    maximum: float | None = None,
    choices: tuple = (),
    off_or_least: int | None = None,
) -> Any:
    """A :class:`Settings` field and how its flag parses: numbers are >= 0, or > 0 when ``positive``, and 0 (off)
    or at least ``off_or_least`` when that is given (e.g. a restart grid's points a side)."""
    metadata = {
        "help": description,
        "positive": positive,
        "maximum": maximum,
        "choices": choices,
        "off_or_least": off_or_least,
    }
    return dataclasses.field(default=default, metadata=metadata)


@dataclasses.dataclass
class Settings:
    """Training settings; every field is also a command-line flag (``--adam-steps 500``)."""

    interior: int = _setting(4096, "interior (collocation) points", positive=True)
    adam_steps: int = _setting(2000, "Adam steps, a multiple of --steps-per-call")
    lbfgs_iterations: int = _setting(5000, "L-BFGS iterations after Adam at most; 0 skips L-BFGS")
    quasi_newton: str = _setting(
        "lbfgs",
        "the phase after Adam: L-BFGS, or self-scaled BFGS with a dense inverse Hessian (small networks: lower "
        "losses per iteration); --lbfgs-iterations counts its iterations",
        choices=("lbfgs", "bfgs"),
    )
    learning_rate: float = _setting(1e-3, "Adam learning rate", positive=True)
    width: int = _setting(20, "units per hidden layer", positive=True)
    depth: int = _setting(8, "hidden layers", positive=True)
    dtype: str = _setting("float32", "floating type of the network and the points", choices=("float32", "float64"))
    sampling: str = _setting("sobol", "how the points are drawn", choices=("sobol", "lhs", "random"))
    steps_per_call: int = _setting(100, "Adam steps per compiled call", positive=True)
    log_every: int = _setting(100, "Adam steps (and L-BFGS iterations) between history rows", positive=True)
    checkpoint_every: int = _setting(500, "Adam steps between checkpoints", positive=True)
    adaptive_weights: bool = _setting(False, "learning-rate annealing of the loss weights (--loss-weighting annealing)")
    loss_weighting: str = _setting(
        "none",
        "loss weights moved every 10 compiled calls: learning-rate annealing, or gradient-norm weighting",
        choices=("none", "annealing", "grad_norm"),
    )
    resample_every: int = _setting(0, "Adam steps between residual-based resamplings of the points; 0 is off")
    causal_epsilon: float = _setting(
        0.0,
        f"causal training strength (time-dependent problems), 0 .. {MAX_CAUSAL_EPSILON}; 0 is off",
        maximum=MAX_CAUSAL_EPSILON,
    )
    time_windows: int = _setting(
        1,
        f"time-marching windows, each trained in turn (--adam-steps and --lbfgs-iterations per window), 1 .. "
        f"{MAX_TIME_WINDOWS}",
        positive=True,
        maximum=MAX_TIME_WINDOWS,
    )
    seed: int = _setting(0, f"seed of the points and the initial weights, 0 .. {SEED_MAX}", maximum=SEED_MAX)
    xla: bool = _setting(True, "compile the training steps with XLA; --no-xla starts seconds sooner (short runs)")

    def __post_init__(self):
        """Settings built in Python (``dataclasses.replace(preset, ...)``) obey the rules their flags parse by."""
        for field in dataclasses.fields(self):
            value, meta, kind = getattr(self, field.name), field.metadata, type(field.default)
            if kind in (bool, str):
                wrong = not isinstance(value, kind) or (meta["choices"] and value not in meta["choices"])
                wanted = f"one of {', '.join(map(repr, meta['choices']))}" if meta["choices"] else f"a {kind.__name__}"
            else:
                numeric = numbers.Integral if kind is int else numbers.Real
                bounds = (meta["positive"], meta["maximum"], meta["off_or_least"])
                wrong = isinstance(value, bool) or not isinstance(value, numeric) or not _in_range(value, *bounds)
                wanted = _wanted(kind, *bounds)
            if wrong:
                raise ValueError(
                    f"{type(self).__name__}: {field.name}={value!r} is not allowed; give {wanted} "
                    f"(the flag --{field.name.replace('_', '-')}: {meta['help']})"
                )
            if kind not in (bool, str):
                setattr(self, field.name, kind(value))  # a numpy scalar or an int for a float: stored as its flag's


@dataclasses.dataclass(kw_only=True)
class Example:
    """A runnable PDE example.

    Attributes:
      name: the command name, its name in the registry ``pinn_examples.EXAMPLES``.
      description: one line for the help text; leave it out: the registry gives the first line of
        the example module's docstring (:func:`pinn_examples.describe`).
      build: ``build(settings) -> (problem, model)``; cheap (no points, no compilation).
      reference: ``reference() -> (axes, values)``: the test grid as named 1-D arrays (ij
        indexing) and the reference on it, shape ``(len(axis0), len(axis1), ...)``: an array (the
        problem's first field) or a dict ``{field: array}``. NaN entries mark grid points outside
        the domain: they are left out of the error and blank in the plots.
      presets: named :class:`Settings`; ``"default"`` is used without ``--preset``.
      target: the value of ``target_metric`` to reach, per preset name; a preset not named here
        (a smoke run such as ``fast``) has no target.
      target_metric: the metrics.json entry compared with the target.
      extra_metrics: ``extra_metrics(trainer) -> dict`` added to metrics.json and printed.
      error_fields: the fields in ``relative_l2_error`` (default: every field of the reference);
        over several fields it is ``sqrt(sum_f ||pred_f - ref_f||^2 / sum_f ||ref_f||^2)``.
        metrics.json also has ``relative_l2_error_<field>`` for every field of the reference.
      unsupported_flags: shared flags that the example's own ``run`` does not honour (of
        :data:`DISTRIBUTION_FLAGS`); :func:`parse_args` refuses them rather than ignore them.
      diagnose: the trainer's stall diagnostic (:mod:`hodiff.pinn.diagnostics`); off for a loss whose
        minimum is not zero (an energy).
      training: the hook of an example that does not train a ``Problem`` with ``Trainer``
        (operator learning): ``training(args, settings) -> exit status`` replaces ``build`` and
        ``reference``. It is called once the shared command line has parsed the flags and, unless
        ``--evaluate`` is given, checked ``--output``; it keeps its run in a
        :class:`hodiff.pinn.runlog.RunLog` and ends with :func:`verdict`.
      windows: ``windows(settings) -> hodiff.pinn.TimeWindows`` with ``settings.time_windows``
        windows: the hard initial condition of a time-dependent example, which ``--time-windows N``
        trains window after window (:func:`hodiff.pinn.time_marching`); the problem ``build``
        returns has no ``Initial`` condition (its output transform is the one window's).
      check: ``check(settings)`` raises ``ValueError`` naming the flag when the settings cannot work for this
        example (a count the problem cannot use, flags that contradict its loss): called when the flags are
        parsed, before anything is built or written, it ends the command with exit status 2 and the message.
      wall_seconds: the typical wall time of a preset's run on 2 CPU cores, ``{preset: seconds}``, as
        recorded in the docs (docs/examples.md, docs/benchmarks.md, the example's own page), not
        measured; a preset with none recorded is left out and shows nothing. A literal dict in the
        ``Example(...)`` call: ``python -m pinn_examples`` reads it from the source without importing
        the module (:func:`pinn_examples.wall_times`), and the ``--preset`` help shows it.
    """

    name: str
    build: Callable[[Settings], tuple[Any, Any]] | None = None
    reference: Callable[[], tuple[dict[str, np.ndarray], np.ndarray | dict[str, np.ndarray]]] | None = None
    presets: dict[str, Any]
    target: dict[str, float]
    target_metric: str = "relative_l2_error"
    extra_metrics: Callable[[Any], dict] | None = None
    error_fields: tuple[str, ...] | None = None
    unsupported_flags: tuple[str, ...] = ()
    description: str = ""
    training: Callable[[argparse.Namespace, Any], int] | None = None
    diagnose: bool = True
    windows: Callable[[Any], Any] | None = None
    check: Callable[[Any], None] | None = None
    wall_seconds: dict[str, float] = dataclasses.field(default_factory=dict)

    def __post_init__(self):
        unknown = [preset for preset in self.wall_seconds if preset not in self.presets]
        if unknown:
            raise ValueError(
                f"Example {self.name!r}: wall_seconds names {unknown}, which are not presets {sorted(self.presets)}; "
                "give the recorded wall time of existing presets only."
            )
        for preset, seconds in self.wall_seconds.items():
            if isinstance(seconds, bool) or not isinstance(seconds, numbers.Real) or not 0 < seconds < math.inf:
                raise ValueError(
                    f"Example {self.name!r}: wall_seconds[{preset!r}] = {seconds!r}; give the recorded wall time in "
                    "seconds, a finite number > 0 (leave a preset with none recorded out)."
                )


# the shared flags an example may refuse (Example.unsupported_flags)
DISTRIBUTION_FLAGS = ("--replicas", "--multi-worker")


def reference_fields(example: Example, values: Any, fields: tuple[str, ...], shape: tuple[int, ...]) -> dict:
    """The reference as ``{field: float64 array of the grid's shape}``; an array is the first field's."""
    values = dict(values) if isinstance(values, dict) else {fields[0]: values}
    unknown = [name for name in values if name not in fields]
    if unknown:
        raise ValueError(f"{example.name}: the reference has fields {unknown} that are not the problem's {fields}.")
    values = {name: np.asarray(array, dtype=np.float64) for name, array in values.items()}
    for name, array in values.items():
        if array.shape != shape:
            raise ValueError(
                f"{example.name}: the reference of {name!r} has shape {array.shape}, the grid of its axes {shape}."
            )
    missing = [name for name in example.error_fields or () if name not in values]
    if missing:
        raise ValueError(f"{example.name}: error_fields {missing} have no reference; give them in reference().")
    return values


def field_errors(prediction: dict, reference: dict, error_fields: tuple[str, ...] | None = None) -> dict:
    """Relative L2 errors over the finite reference entries (NaN marks points outside the domain):
    :func:`hodiff.pinn.metrics.relative_l2_errors`.

    Args:
      prediction: ``{field: array}``, every field of ``reference`` included.
      reference: ``{field: array}`` of the same shapes; NaN entries are left out.
      error_fields: the fields combined in ``relative_l2_error`` (default: all of ``reference``).

    Returns:
      ``{"relative_l2_error": sqrt(sum_f ||p_f - r_f||^2 / sum_f ||r_f||^2), "relative_l2_error_<f>": ...}``.

    Example:
      ```python
      import numpy as np
      from pinn_examples.runner import field_errors

      reference = {"u": np.array([1.0, np.nan]), "v": np.array([0.0, 2.0])}
      prediction = {"u": np.array([1.1, 5.0]), "v": np.array([0.0, 2.0])}
      errors = field_errors(prediction, reference)
      assert np.isclose(errors["relative_l2_error_u"], 0.1)
      assert np.isclose(errors["relative_l2_error"], 0.1 / np.sqrt(5.0))
      ```
    """
    from hodiff.pinn.metrics import relative_l2_errors

    return relative_l2_errors(prediction, reference, error_fields or None)


def grid_points(axes: dict[str, np.ndarray], coords: tuple[str, ...]) -> np.ndarray:
    """The grid of ``axes`` (ij indexing) as ``(N, d)`` points, columns in the domain's ``coords`` order."""
    mesh = dict(zip(axes, np.meshgrid(*axes.values(), indexing="ij")))
    order = list(coords) if set(coords) == set(axes) else list(axes)
    return np.stack([mesh[name].ravel() for name in order], axis=1)


def grouped_targets(example: Example, trainer: Any, targets: dict[tuple[str, ...], float]) -> dict:
    """The L2RE over each group of fields in ``targets`` and ``target_ratio``, the largest error over its target.

    For problems with a target per group of fields (``(u, v, p)`` and ``(u, v)`` for a flow): ``target_ratio``
    at most 1 means every group met its target.

    Args:
      example: the example; its ``reference()`` gives the grid and the reference fields.
      trainer: the trained :class:`hodiff.pinn.Trainer`; its outputs are the reference's fields in order.
      targets: ``{fields: target}``, e.g. ``{("u", "v", "p"): 2e-2, ("u", "v"): 1e-2}``.

    Returns:
      ``{"relative_l2_error_<fields joined>": ..., "target_ratio": ...}`` (the whole group of every field is
      left out: it is metrics.json's ``relative_l2_error``).
    """
    axes, values = example.reference()
    shape = tuple(len(axis) for axis in axes.values())
    predicted = trainer.predict(grid_points(axes, tuple(axes))).astype(np.float64)
    prediction = {name: predicted[:, i].reshape(shape) for i, name in enumerate(values)}
    errors = {fields: field_errors(prediction, values, fields)["relative_l2_error"] for fields in targets}
    scores = {"relative_l2_error_" + "".join(fields): e for fields, e in errors.items() if set(fields) != set(values)}
    return {**scores, "target_ratio": max(errors[fields] / target for fields, target in targets.items())}


def inside_domain(domain: Any, points: np.ndarray) -> np.ndarray:
    """``(N,)`` booleans: the points inside the domain (:func:`hodiff.pinn.geometry.inside_domain`)."""
    from hodiff.pinn.geometry import inside_domain as inside  # imported on use: --help does not import TensorFlow

    return inside(domain, points)


def _noun(kind: type) -> str:
    return "an integer" if kind is int else "a number"


def _wanted(kind: type, positive: bool, maximum: float | None, off_or_least: int | None) -> str:
    """What a numeric setting takes, for its messages: ``"an integer 0 (off) or >= 2 and <= 8"``."""
    wanted = f"0 (off) or >= {off_or_least}" if off_or_least is not None else "> 0" if positive else ">= 0"
    return f"{_noun(kind)} {wanted}" + (f" and <= {maximum}" if maximum is not None else "")


def _in_range(value: float, positive: bool, maximum: float | None, off_or_least: int | None) -> bool:
    below = off_or_least is not None and 0 < value < off_or_least
    too_large = maximum is not None and value > maximum
    return math.isfinite(value) and not (value < 0 or below or (positive and value == 0) or too_large)


def number(
    kind: type, positive: bool = False, maximum: float | None = None, off_or_least: int | None = None
) -> Callable[[str], Any]:
    """An argparse ``type``: a finite ``kind`` that is >= 0 (> 0 when ``positive``), at most ``maximum``, and 0 or
    at least ``off_or_least``."""
    wanted = _wanted(kind, positive, maximum, off_or_least)

    def parse(text: str):
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not {_noun(kind)}; give {wanted}") from None
        if not math.isfinite(value):
            raise argparse.ArgumentTypeError(f"{text!r} is not finite; give {wanted}")
        if not _in_range(value, positive, maximum, off_or_least):
            raise argparse.ArgumentTypeError(f"{text!r} is out of range; give {wanted}")
        return value

    return parse


def preset_values(presets: dict[str, Any], name: str) -> str:
    """The value of setting ``name`` in each preset, for ``--help``: ``"default: 2048, fast: 256"``
    (the default preset first), or ``"all presets: 0.001"`` when they agree."""
    order = ["default"] + sorted(p for p in presets if p != "default")
    values = {preset: getattr(presets[preset], name) for preset in order}
    if len({repr(v) for v in values.values()}) == 1:
        return f"{'all presets' if len(values) > 1 else 'default'}: {values['default']}"
    return ", ".join(f"{preset}: {value}" for preset, value in values.items())


def parse_args(example: Example, argv: list[str] | None) -> tuple[argparse.Namespace, Settings]:
    """The example's command line: ``--preset``, one flag per :class:`Settings` field, output options.

    An example whose presets are a subclass of :class:`Settings` gets one flag per field of that class too.
    """
    settings_type = type(example.presets["default"])
    from pinn_examples import EXAMPLES, describe, format_wall_times

    description = example.description or (describe(example.name) if example.name in EXAMPLES else None)
    parser = argparse.ArgumentParser(prog=f"python -m pinn_examples {example.name}", description=description)
    times = format_wall_times(example.wall_seconds)
    parser.add_argument(
        "--preset",
        choices=sorted(example.presets),
        default="default",
        help="a named group of settings that the flags below override (default: %(default)s); each flag's help "
        "gives its value in every preset"
        + (f"; typical wall time on 2 CPU cores, as recorded in the docs: {times}" if times else ""),
    )
    for field in dataclasses.fields(settings_type):
        flag, meta = "--" + field.name.replace("_", "-"), field.metadata
        described = f"{meta['help']} ({preset_values(example.presets, field.name)})".replace("%", "%%")
        if isinstance(field.default, bool):
            parser.add_argument(flag, action=argparse.BooleanOptionalAction, default=None, help=described)
        elif isinstance(field.default, str):
            parser.add_argument(flag, choices=meta["choices"], default=None, help=described)
        else:
            kind = type(field.default)
            parser.add_argument(
                flag,
                type=number(kind, meta["positive"], meta["maximum"], meta["off_or_least"]),
                default=None,
                metavar=kind.__name__.upper(),
                help=described,
            )
    parser.add_argument("--output", default=None, help="results directory (default: results/NAME)")
    existing = parser.add_mutually_exclusive_group()
    existing.add_argument("--resume", action="store_true", help="continue the run in --output from its last checkpoint")
    existing.add_argument("--overwrite", action="store_true", help="replace the run that --output holds")
    parser.add_argument(
        "--evaluate",
        metavar="POINTS.npy",
        default=None,
        help="no training: evaluate the trained run in --output at the (N, d) points of this .npy file "
        "(columns in the order of the domain's coordinates) and write evaluation.npz there; the run's "
        "stored settings are used, other flags are ignored",
    )
    parser.add_argument(
        "--outside",
        choices=("error", "nan"),
        default="error",
        help="with --evaluate: points outside the domain stop with an error, or get NaN with a warning "
        "(default: %(default)s)",
    )
    parser.add_argument(
        "--replicas",
        type=number(int, positive=True),
        default=1,
        metavar="N",
        help="train on N replicas of this machine: N GPUs, or N logical CPU devices sharing the cores (default 1)",
    )
    parser.add_argument(
        "--multi-worker",
        action="store_true",
        help="train on the cluster described by the TF_CONFIG environment variable, one process per worker",
    )
    parser.add_argument("--tensorboard", action="store_true", help="also write TensorBoard logs")
    parser.add_argument("--no-progress", action="store_true", help="no progress bars")
    parser.epilog = (
        f"Exit status: 0 when the preset's target is met or it has none, {TARGET_MISSED} when it is "
        "missed, 2 for bad flags, 1 for other errors."
    )
    args = parser.parse_args(argv)
    if args.evaluate is not None and (args.resume or args.overwrite):
        parser.error("--evaluate reads a finished run and trains nothing; leave out --resume and --overwrite")
    names = [f.name for f in dataclasses.fields(settings_type)]
    overrides = {name: getattr(args, name) for name in names if getattr(args, name) is not None}
    settings = dataclasses.replace(example.presets[args.preset], **overrides)
    for name in ("adam_steps", "log_every", "checkpoint_every", "resample_every"):
        if hasattr(settings, "steps_per_call") and getattr(settings, name) % settings.steps_per_call:
            parser.error(
                f"--{name.replace('_', '-')}={getattr(settings, name)} must be a multiple of "
                f"--steps-per-call={settings.steps_per_call}"
            )
    try:
        loss_weighting(settings)
        check_counts(settings, args.replicas)
        if example.check is not None:
            example.check(settings)
    except ValueError as error:
        parser.error(str(error))
    if getattr(settings, "time_windows", 1) > 1:
        if example.windows is None:
            parser.error(f"--time-windows: {example.name} has no time-marching windows (Example.windows); leave it out")
        if args.replicas != 1 or args.multi_worker:
            parser.error("--time-windows trains on one device for now; leave out --replicas and --multi-worker")
    unknown = [flag for flag in example.unsupported_flags if flag not in DISTRIBUTION_FLAGS]
    if unknown:
        raise ValueError(f"{example.name}: unsupported_flags {unknown} are not of {DISTRIBUTION_FLAGS}.")
    given = {"--replicas": args.replicas != 1, "--multi-worker": args.multi_worker}
    for flag in example.unsupported_flags:
        if given[flag]:
            parser.error(
                f"{flag}: {example.name} trains on one device and does not support {flag} (it would be ignored); "
                f"leave it out"
            )
    if args.multi_worker and args.replicas != 1:
        parser.error("--multi-worker runs one replica per worker (all its GPUs on a GPU machine); leave out --replicas")
    if getattr(args, "evaluate", None) is None:  # --evaluate trains nothing
        _check_memory(settings, 1, built=False)  # before anything is built: the smallest network the flags allow
    args.output = args.output or os.path.join("results", example.name)
    # who writes the run: stored with every checkpoint (through the run's lock), checked by --resume and --evaluate
    args.provenance = {"example": example.name, "replicas": args.replicas, "multi_worker": args.multi_worker}
    return args, settings


def check_counts(settings: Any, replicas: int = 1) -> None:
    """Raises ``ValueError`` naming the flag when ``--interior`` is below what the run can use: fewer points than
    ``--replicas`` (each replica takes an equal share, at least one point), or, with causal training, fewer than its
    time slices (each slice's mean residual weights the later ones). The examples' own limits are their
    ``Example.check``."""
    interior = getattr(settings, "interior", None)
    if interior is None:
        return
    if replicas > 1 and interior < replicas:
        raise ValueError(
            f"--interior {interior}: the interior points are split evenly over the {replicas} replicas (--replicas "
            f"{replicas}), at least one point each; give --interior >= {replicas}, or fewer --replicas"
        )
    epsilon = getattr(settings, "causal_epsilon", 0.0)
    if epsilon:
        from hodiff.pinn import CausalWeights

        bins = int(getattr(settings, "causal_bins", CausalWeights.bins))
        if interior < bins:
            raise ValueError(
                f"--interior {interior}: causal training (--causal-epsilon {epsilon:g}) weights the residual by "
                f"{bins} time slices, each the mean over its points, so fewer points than slices leave slices empty; "
                f"give --interior >= {bins} (several points per slice, e.g. {32 * bins}), or leave out "
                "--causal-epsilon"
            )


def make_strategy(replicas: int = 1, multi_worker: bool = False) -> Any:
    """The ``tf.distribute`` strategy for ``--replicas`` / ``--multi-worker``; ``None`` for one replica.

    N logical CPU devices must be configured before TensorFlow initialises its devices (before
    the first tensor); when they already are (a second run in one process), the existing ones
    are used if there are enough, else SystemExit says to start a fresh process.
    """
    import tensorflow as tf

    if multi_worker:
        if "TF_CONFIG" not in os.environ:
            raise SystemExit(
                "--multi-worker: TF_CONFIG is not set; set it on every worker to "
                '{"cluster": {"worker": ["host1:port", "host2:port"]}, "task": {"type": "worker", "index": I}}.'
            )
        return tf.distribute.MultiWorkerMirroredStrategy()
    if replicas == 1:
        return None
    gpus = tf.config.list_physical_devices("GPU")
    if gpus:
        if len(gpus) < replicas:
            raise SystemExit(f"--replicas {replicas}: this machine has {len(gpus)} GPUs; use --replicas {len(gpus)}.")
        return tf.distribute.MirroredStrategy([f"/gpu:{i}" for i in range(replicas)])
    cpu = tf.config.list_physical_devices("CPU")[0]
    try:
        tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * replicas)
    except RuntimeError:  # TensorFlow's devices are already initialised in this process
        existing = len(tf.config.list_logical_devices("CPU"))
        if existing < replicas:
            raise SystemExit(
                f"--replicas {replicas}: TensorFlow already started with {existing} CPU devices in this process; "
                f"run the example in a fresh process."
            ) from None
    return tf.distribute.MirroredStrategy([f"/cpu:{i}" for i in range(replicas)])


def worker_output(output: str) -> str:
    """``output`` for the chief of the TF_CONFIG cluster, ``output/<type>-<index>`` for every other task.

    The chief is the ``chief`` task, or worker 0 when the cluster has none.
    """
    config = json.loads(os.environ.get("TF_CONFIG", "{}"))
    kind, index = config.get("task", {}).get("type", "worker"), int(config.get("task", {}).get("index", 0))
    chief = kind == "chief" or (kind == "worker" and index == 0 and "chief" not in config.get("cluster", {}))
    return output if chief else os.path.join(output, f"{kind}-{index}")


def network_weights(settings: Any, inputs: int = 1, outputs: int = 1) -> int:
    """The weights of a ``settings.width`` x ``settings.depth`` MLP from ``inputs`` to ``outputs``: a lower bound for
    the examples' networks (Fourier features, a modified MLP's encoders or a second network add to it)."""
    width, depth = int(settings.width), int(settings.depth)
    return (inputs + 1) * width + (depth - 1) * (width + 1) * width + (width + 1) * outputs


def memory_needed(settings: Any, dimension: int, weights: int | None = None) -> int:
    """A rough lower estimate of the bytes a run holds at once: its network and its points' derivative work.

    Per weight (``weights``, default :func:`network_weights` of a ``dimension``-input network): the weight,
    its gradient and Adam's two slots, 4 numbers (L-BFGS's history holds more). Per interior point (settings
    with ``interior``): its ``dimension`` coordinates, and for every hidden layer the activations with their
    first and second derivatives in each input, kept by the nested tapes for the backward pass, about
    ``2 * width * (1 + dimension)**2`` numbers.
    """
    weights = network_weights(settings, dimension) if weights is None else weights
    per_point = dimension + 2 * settings.depth * settings.width * (1 + dimension) ** 2
    points = int(getattr(settings, "interior", 0)) * per_point
    return (4 * weights + points) * np.dtype(settings.dtype).itemsize


def _check_memory(settings: Any, dimension: int, weights: int | None = None, built: bool = True) -> None:
    """Refuses (``SystemExit``) settings whose network and points need more than this machine's memory, naming the
    flags to lower; before the network is built (``built=False``) with the smallest network and problem the
    settings allow, after it with its own weights and the problem's dimension."""
    if not all(hasattr(settings, name) for name in ("width", "depth", "dtype")):
        return
    memory = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    weights = network_weights(settings, dimension) if weights is None else weights
    needed = memory_needed(settings, dimension, weights)
    if needed <= memory:
        return
    itemsize = np.dtype(settings.dtype).itemsize
    for_weights, interior = 4 * weights * itemsize, int(getattr(settings, "interior", 0))
    network = (
        f"the network's {weights:.3g} weights (width {settings.width}, depth {settings.depth}"
        f"{', at least' if not built else ''}) with their gradients and Adam's two slots"
    )
    points = f"the {interior} interior points' activations and their derivatives"
    if interior and needed - for_weights > for_weights:  # the points need the most
        flag, parts, lower = (
            f"--interior {interior}",
            [(points, needed - for_weights), (network, for_weights)],
            ("--interior (or --width, --depth)"),
        )
    else:
        flag, parts = f"--width {settings.width}", [(network, for_weights)]
        parts += [(points, needed - for_weights)] if interior else []
        lower = "--width or --depth" + (" (or --interior)" if interior else "")
    described = " need about ".join([parts[0][0], _bytes(parts[0][1])])
    described += "".join(f", and {part} about {_bytes(size)}" for part, size in parts[1:])
    raise SystemExit(
        f"{flag}: {described} ({settings.dtype}): more than this machine's {_bytes(memory)} of memory"
        f"{' before anything is built' if not built else ''}; lower {lower}."
    )


def _bytes(count: float) -> str:
    """``count`` bytes in GiB, MiB or KiB, whichever reads best."""
    for unit, size in (("GiB", 2**30), ("MiB", 2**20)):
        if count >= size:
            return f"{count / size:.3g} {unit}"
    return f"{count / 2**10:.3g} KiB"


def check_output(
    args: argparse.Namespace, run_files: tuple[str, ...] = RUN_FILES, replaced: tuple[str, ...] = RESULT_FILES
) -> None:
    """Before any work: --output is writable, no other live process writes it (this process takes its
    lock, :func:`hodiff.pinn.runlog.lock_run`, kept in ``args.run_lock`` for the run), and it holds a run
    (any of ``run_files``) only with --resume or --overwrite; --overwrite removes ``replaced`` (files or
    directories)."""
    output = args.output
    place = os.path.realpath(output)
    if place.count(os.sep) < 2 or place == os.path.realpath(os.path.expanduser("~")):
        raise SystemExit(
            f"--output {output}: that is {place}, a top-level or home directory, where a run's files would mix with "
            "the system's or yours; give a directory of its own, e.g. --output results/NAME."
        )
    trained = [os.path.join(output, name) for name in ("checkpoints", "window-0")]  # window-0: a marched run
    if args.resume and not any(os.path.isdir(path) for path in trained):
        raise SystemExit(f"--resume: no checkpoints in {output}/checkpoints; run without --resume first.")
    try:
        os.makedirs(output, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=output, prefix=".write-test-"):
            pass
    except OSError as error:
        raise SystemExit(
            f"--output {output}: cannot write there ({error.strerror or error}); choose another --output."
        ) from None
    from hodiff.pinn.runlog import RunInUseError, lock_run

    try:  # held for the run (as long as args lives): one writer per --output, before anything is removed
        args.run_lock = lock_run(output, "--output", getattr(args, "provenance", None))
    except RunInUseError as error:
        raise SystemExit(str(error)) from None
    held = [name for name in run_files if os.path.lexists(os.path.join(output, name))]
    if held and not (args.resume or args.overwrite):
        raise SystemExit(
            f"--output {output} already holds a run ({', '.join(held)}); continue it with --resume, "
            "replace it with --overwrite, or choose another --output."
        )
    if args.overwrite:
        for name in replaced:  # by default the trainer replaces its own files (history, checkpoints, logs)
            if os.path.isdir(path := os.path.join(output, name)) and not os.path.islink(path):
                shutil.rmtree(path)
            elif os.path.lexists(path):
                os.remove(path)


def make_trainer(
    problem: Any,
    model: Any,
    settings: Settings,
    output: str | None = None,
    resume: bool = False,
    overwrite: bool = False,
    tensorboard: bool = False,
    progress: bool = True,
    strategy: Any = None,
    diagnose: bool = True,
):
    """A :class:`hodiff.pinn.Trainer` for ``settings``, which it stores with its checkpoints; ``problem`` is a
    problem or its :class:`hodiff.pinn.TrainingData` (the sizes, sampling and seed of ``settings``);
    ``strategy`` (from :func:`make_strategy`) must have built the model."""
    from hodiff import pinn

    if not isinstance(problem, pinn.TrainingData):
        if settings.causal_epsilon:
            problem = problem.replace(causal=pinn.CausalWeights(epsilon=settings.causal_epsilon))
        problem = pinn.TrainingData(problem, settings.interior, settings.sampling, settings.seed)
    callbacks: list[Any] = []
    if settings.resample_every:
        callbacks.append(pinn.ResidualResampling(every=settings.resample_every))
    weighting = loss_weighting(settings)
    if weighting == "annealing":
        callbacks.append(pinn.AdaptiveWeights(every=10 * settings.steps_per_call))
    elif weighting == "grad_norm":
        callbacks.append(pinn.GradNormWeights(every=10 * settings.steps_per_call))
    schedule = pinn.Schedule(
        settings.steps_per_call,
        settings.log_every,
        settings.checkpoint_every,
        progress,
        1000 if diagnose else 0,
        jit_compile=settings.xla,
    )
    run = pinn.Output(output, resume, overwrite, tensorboard, stored_settings(settings)) if output else None
    return pinn.Trainer(problem, model, None, settings.learning_rate, schedule, run, callbacks, strategy)


def stored_settings(settings: Settings) -> dict:
    """``settings`` as a run stores them with its checkpoints."""
    # --no-xla changes how the steps run, not what they compute: a run resumes with either
    return {key: value for key, value in dataclasses.asdict(settings).items() if key != "xla"}


@dataclasses.dataclass
class Scoring:
    """Where a run is scored and pictured.

    Attributes:
      reference: the :class:`hodiff.pinn.Reference` the errors are taken against (points inside the domain).
      axes: the picture's two named 1-D axes (an ij grid).
      points: the picture's ``(n1 * n2, d)`` points, columns in the domain's coordinate order.
      values: ``{field: (n1, n2)}``: the reference on the picture, NaN outside the domain.
      outside: ``(n1 * n2,)``: the picture's points outside the domain (blank in the plots).
      scattered: scored at scattered points (:mod:`pinn_examples.scattered`), the picture a slice.
    """

    reference: Any
    axes: dict[str, np.ndarray]
    points: np.ndarray
    values: dict[str, np.ndarray]
    outside: np.ndarray
    scattered: bool = False


def grid_scoring(example: Example, problem: Any) -> Scoring:
    """The scoring of an example by its grid reference (``Example.reference``): the errors are taken at the grid's
    points inside the domain (and where the reference is finite), and the grid is the picture."""
    from hodiff import pinn

    axes, values = example.reference()
    shape = tuple(len(axis) for axis in axes.values())
    reference = reference_fields(example, values, tuple(problem.fields), shape)
    grid = grid_points(axes, tuple(problem.domain.coords))
    outside = ~inside_domain(problem.domain, grid)
    for array in reference.values():
        outside |= ~np.isfinite(array.ravel())
    pictured = {name: np.where(outside.reshape(shape), np.nan, array) for name, array in reference.items()}
    scored = {name: array.ravel()[~outside] for name, array in reference.items()}
    return Scoring(
        pinn.Reference(grid[~outside], scored, error_fields=example.error_fields), axes, grid, pictured, outside
    )


@dataclasses.dataclass
class Fitted:
    """What :func:`fit` trained: the study's :class:`hodiff.pinn.Solution`, the trainer that trained it (the last
    window's in a marched run) and its quasi-Newton phase's scipy result (``None`` without one)."""

    problem: Any = None
    solution: Any = None
    trainer: Any = None
    quasi_newton: Any = None


class WholeHorizon:
    """A marched run's last trainer answering over the whole horizon (``predict``, ``problem``): what the
    example's ``extra_metrics`` get."""

    def __init__(self, trainer: Any, problem: Any, solution: Any):
        self._trainer, self.problem, self.predict = trainer, problem, solution.predict

    def __getattr__(self, name: str) -> Any:
        return getattr(self._trainer, name)


def fit(
    example: Example, problem: Any, model: Any, settings: Settings, args: argparse.Namespace, strategy: Any,
    reference: Any,
) -> Fitted:  # fmt: skip
    """Trains as ``settings`` say, with :func:`hodiff.pinn.solve` scoring against ``reference``.

    One :class:`hodiff.pinn.Trainer` (its untrained error stored once in its run info), or with
    ``--time-windows N > 1`` every window of ``example.windows(settings)`` in this process, each a run in
    ``OUTPUT/window-<k>`` trained with the same settings; with a series restart one set of compiled steps serves
    them all, so the memory stays that of one window.
    """
    from hodiff import pinn
    from hodiff.pinn.runlog import write_csv

    count = getattr(settings, "time_windows", 1)
    if args.overwrite:  # the windows of a replaced marched run beyond this run's (--evaluate reads window-0 first)
        for name in os.listdir(args.output):
            if name.startswith("window-") and name[7:].isdigit() and int(name[7:]) >= (count if count > 1 else 0):
                shutil.rmtree(os.path.join(args.output, name))
    windows = example.windows(settings) if count > 1 and example.windows is not None else None
    phases = pinn.Phases(settings.adam_steps, settings.lbfgs_iterations, settings.quasi_newton)
    fitted = Fitted(problem)

    def trainer(problem: Any, model: Any) -> Any:
        progress = not args.no_progress
        return make_trainer(problem, model, settings, progress=progress, strategy=strategy, diagnose=example.diagnose)

    def train(trainer: Any) -> dict[str, str]:
        fitted.trainer = trainer
        if windows is not None:
            index = int(trainer.settings["time_window"]["index"])
            start, end = windows.bounds(problem.domain)[index]
            print(f"{example.name}: window {index + 1} of {windows.count}, t in [{start:g}, {end:g}]", flush=True)
        elif "initial_relative_l2_error" not in trainer.run_info:  # stored once: a resumed run reports it too
            untrained = trainer.run_log is None or trainer.run_log.restored is None
            values = trainer.predict(reference.points).astype(np.float64)
            errors = reference.errors({name: values[:, i] for i, name in enumerate(problem.fields)})
            trainer.run_info["initial_relative_l2_error"] = errors["relative_l2_error"] if untrained else None
            trainer.save_run_info()
        stops, fitted.quasi_newton = phases.run(trainer)
        return stops

    print(f"{example.name}: {dataclasses.asdict(settings)}")
    output = pinn.Output(args.output, args.resume, args.overwrite, args.tensorboard, stored_settings(settings))
    try:
        fitted.solution = pinn.solve(
            problem, model, train, trainer=trainer, windows=windows, output=output, reference=reference
        )
    except (FileExistsError, FileNotFoundError, ValueError, RuntimeError) as error:  # other settings, no readable
        raise SystemExit(f"{example.name}: {error}") from None  # checkpoint (RuntimeError), another writer
    if windows is not None:
        write_csv(os.path.join(args.output, "history.csv"), fitted.solution.history)  # every window's rows
    return fitted


def run_metrics(
    example: Example, args: argparse.Namespace, settings: Settings, fitted: Fitted, fields: list
) -> tuple[dict, list]:
    """metrics.json's entries of a finished run (the errors, the phases, the costs: training seconds and peak resident
    memory, the trainer's diagnostics) and the names of the example's extra metrics."""
    solution, trainer, result = fitted.solution, fitted.trainer, fitted.quasi_newton
    answering = WholeHorizon(trainer, fitted.problem, solution) if solution.windows else trainer
    extra_metrics = example.extra_metrics(answering) if example.extra_metrics else {}
    metrics = {
        "example": example.name,
        "preset": args.preset,
        **solution.errors,
        "error_fields": list(example.error_fields or fields),
        "target": example.target.get(args.preset),
        "target_metric": example.target_metric,
        "initial_relative_l2_error": trainer.run_info.get("initial_relative_l2_error"),  # none: marched
        "adam_steps": settings.adam_steps,
        "lbfgs_iterations": int(result.nit) if result is not None else None,
        "lbfgs_message": str(result.message) if result is not None else None,
        "wall_seconds": round(solution.wall_seconds, 1),
        "peak_rss_mib": round(solution.peak_memory_mib, 1),
        "replicas": trainer.replicas,
        "final_loss": trainer.final_loss,
        "settings": dataclasses.asdict(settings),
        "diagnostics": trainer.run_info.get("diagnostics", []),  # stalls and conflicts the trainer noticed
        "error_points": len(solution.points),
        **extra_metrics,
        **({"windows": solution.windows} if solution.windows else {}),
    }
    return metrics, list(extra_metrics)


def summary_line(example: Example, metrics: dict, fields: list, extra: list, where: str, output: str) -> str:
    """The run's summary: its errors (each field's too), ``extra`` metrics, solving time and peak memory."""
    each = "" if len(fields) == 1 else "".join(f", {f} {metrics[f'relative_l2_error_{f}']:.3e}" for f in fields)
    extra = "".join(f", {k} {metrics[k]:.6g}" for k in extra)
    return (
        f"{example.name}: relative L2 error {metrics['relative_l2_error']:.3e}{each}{extra}{where}, "
        f"{metrics['wall_seconds']:.0f} s of solving, peak RSS {metrics['peak_rss_mib']:.0f} MiB; wrote {output}/"
    )


def loss_weighting(settings: Settings) -> str:
    """The loss weighting of ``settings``: ``--loss-weighting``, or ``"annealing"`` for ``--adaptive-weights``."""
    weighting = getattr(settings, "loss_weighting", "none")
    if getattr(settings, "adaptive_weights", False):
        if weighting not in ("none", "annealing"):
            raise ValueError(
                f"--adaptive-weights is --loss-weighting annealing, but --loss-weighting is {weighting!r}; give one."
            )
        return "annealing"
    return weighting


def write_results(
    output: str, metrics: dict, axes: dict, prediction: Any, reference: Any, history: list, problem: Any, title: str
) -> None:
    """metrics.json, prediction.npz and the plots, each written to a temporary file and renamed.

    ``prediction`` and ``reference`` are arrays (one field) or ``{field: array}``; prediction.npz
    holds the axes, ``prediction`` and ``reference`` (the first field) and, with several fields,
    ``prediction_<field>`` and ``reference_<field>`` for each.
    """
    from hodiff.pinn import plotting
    from hodiff.pinn.runlog import atomic_write, write_json

    write_json(os.path.join(output, "metrics.json"), metrics)
    arrays = dict(axes)
    if isinstance(prediction, dict):
        first = next(iter(prediction))
        arrays["prediction"] = prediction[first]
        if first in reference:
            arrays["reference"] = reference[first]
        if len(prediction) > 1:
            arrays.update({f"prediction_{name}": values for name, values in prediction.items()})
            arrays.update({f"reference_{name}": values for name, values in reference.items()})
    else:
        arrays.update(prediction=prediction, reference=reference)
    with atomic_write(os.path.join(output, "prediction.npz")) as temporary, open(temporary, "wb") as file:
        np.savez(file, **arrays)  # a file object: savez adds no suffix
    # x across and y up for a spatial domain; the usual x-t layout (time across) otherwise
    vertical = list(axes)[1] if problem.domain.time is None else None
    plotting.plot_field(axes, prediction, reference, os.path.join(output, "field.png"), title, vertical=vertical)
    if history:
        plotting.plot_history(history, os.path.join(output, "history.png"), problem.term_names)


def _verdict(example: Example, preset: str, metrics: dict) -> tuple[str, int]:
    """The last line of a run, and its exit status."""
    target = example.target.get(preset)
    if target is None:
        return f"{example.name}: preset {preset!r} has no target (a smoke run)", 0
    value, metric = metrics[example.target_metric], example.target_metric.replace("_", " ").replace("l2", "L2")
    shown = f"{target:.0e}" if float(f"{target:.0e}") == target else f"{target:.3g}"  # 1e-03, but 1.1 stays 1.1
    if value <= target:
        return f"{example.name}: target met: {metric} {value:.3e} <= {shown}", 0
    return (
        f"{example.name}: target MISSED: {metric} {value:.3e} > {shown} (exit status {TARGET_MISSED})",
        TARGET_MISSED,
    )


def load_points(path: str) -> np.ndarray:
    """The POINTS file of ``--evaluate`` (:func:`hodiff.pinn.read_points`), else SystemExit naming the problem."""
    from hodiff.pinn import read_points

    try:
        return read_points(path)
    except (OSError, ValueError) as error:
        raise SystemExit(f"--evaluate {error}") from None


def _stored_settings(example: Example, output: str) -> Settings:
    """The settings stored with the newest readable checkpoint of the run in ``output`` (its first window's, for a
    marched run); SystemExit when there is none, or when another example wrote the run."""
    from hodiff.pinn.runlog import CHECKPOINTS, checkpoint_files, read_checkpoint_state

    marched = os.path.isdir(os.path.join(output, "window-0"))
    directory = os.path.join(output, "window-0") if marched else output
    prefixes = [prefix for _, prefix in checkpoint_files(directory)]
    if not prefixes:
        raise SystemExit(
            f"--evaluate: no trained run in {output} (no checkpoints in {os.path.join(directory, CHECKPOINTS)}); "
            "train it first with the same --output, or point --output at a run's directory."
        )
    failures = []
    for prefix in prefixes:
        try:
            state = read_checkpoint_state(prefix)
        except Exception as error:  # noqa: BLE001 - an unreadable checkpoint: try the previous one
            failures.append(f"{os.path.basename(prefix)}: {type(error).__name__}: {error}")
            continue
        writer = state.get("provenance", {}).get("example", example.name)  # runs before provenance: unchecked
        if writer != example.name:
            raise SystemExit(
                f"--evaluate: the run in {output} was written by the example {writer!r}, not {example.name!r}; "
                f"evaluate it with python -m pinn_examples {writer} --evaluate ..."
            )
        settings_type = type(example.presets["default"])  # the example's Settings class (a subclass may add fields)
        names = {field.name for field in dataclasses.fields(settings_type)}
        return settings_type(**{key: value for key, value in state.get("settings", {}).items() if key in names})
    raise SystemExit(f"--evaluate: no checkpoint of the run could be read: {'; '.join(failures)}")


def trained_solution(example: Example, output: str) -> Any:
    """The trained run in ``output`` as a :class:`hodiff.pinn.Solution` (:meth:`~hodiff.pinn.Solution.load`).

    Builds the example with the settings stored in its newest readable checkpoint and restores the trained weights
    (no training, no file of the run is changed); an unreadable newest checkpoint is skipped for the one before,
    with a warning; a time-marching run answers each point from the window its time falls in. A run written by
    another example is refused (SystemExit). ``solution.checkpoint`` names the checkpoint that answers
    (``window-<k>/ckpt-<n>`` for a marched run).
    """
    from hodiff import pinn

    settings = _stored_settings(example, output)
    problem, model = example.build(settings)
    windows = None
    if os.path.isdir(os.path.join(output, "window-0")):
        if example.windows is None:
            raise SystemExit(f"--evaluate: {example.name} has no time-marching windows, but {output} holds some.")
        windows = example.windows(settings)
    try:
        return pinn.Solution.load(output, problem, model, windows)
    except FileNotFoundError as error:
        raise SystemExit(f"--evaluate: {error}") from None


def evaluate_points(example: Example, output: str, points: np.ndarray, outside: str = "error") -> dict[str, Any]:
    """The trained run in ``output`` at ``points``: what ``--evaluate`` writes, as a function call.

    Args:
      example: the example that wrote the run.
      output: the run's directory (``--output``).
      points: ``(N, d)`` float array, columns in the domain's coordinate order.
      outside: ``"error"`` (default): points outside the domain are refused, naming the first; ``"nan"``: their
        values are NaN, with a warning (:meth:`hodiff.pinn.Solution.evaluate`).

    Returns:
      ``{"points": points, <field>: (N,) float64 for each field, "checkpoint": its name, "step": its step}``.

    Raises:
      ValueError: the points do not fit the domain (:meth:`hodiff.pinn.Solution.evaluate`).
    """
    from hodiff.pinn.runlog import checkpoint_files

    solution = trained_solution(example, output)
    fields = solution.evaluate(points, outside)
    step = int(solution.checkpoint.rsplit("-", 1)[1])  # ckpt-<Adam steps + quasi-Newton iterations>
    newest = checkpoint_files(output)[:1]  # a marched run's are its windows'
    if newest and os.path.basename(newest[0][1]) != solution.checkpoint:
        logging.getLogger(__name__).warning(
            "--evaluate: the newest checkpoint %s is unreadable; evaluated the older %s (step %d) instead.",
            os.path.basename(newest[0][1]), solution.checkpoint, step,
        )  # fmt: skip
    return {"points": points, **fields, "checkpoint": solution.checkpoint, "step": step}


def evaluate(example: Example, args: argparse.Namespace) -> int:
    """``--evaluate POINTS.npy``: :func:`evaluate_points` of the run in ``--output`` at the points in the file,
    written atomically to ``<output>/evaluation.npz``: ``points``, one ``(N,)`` array per field, and which
    ``checkpoint`` (its name) and ``step`` answered."""
    from hodiff.pinn.runlog import atomic_write

    logging.basicConfig(format="%(message)s")
    try:
        evaluated = evaluate_points(example, args.output, load_points(args.evaluate), args.outside)
    except ValueError as error:
        raise SystemExit(f"--evaluate: {example.name}: {error}".replace("outside='nan'", "--outside nan")) from None
    path = os.path.join(args.output, "evaluation.npz")
    with atomic_write(path) as temporary, open(temporary, "wb") as file:
        np.savez(file, **evaluated)
    fields = [name for name in evaluated if name not in ("points", "checkpoint", "step")]
    print(
        f"{example.name}: evaluated {', '.join(fields)} of the run in {args.output} ({evaluated['checkpoint']}) "
        f"at {len(evaluated['points'])} points; wrote {path}"
    )
    return 0


# For an example with its own training loop (the ``training`` hook): its settings' fields, its last line, its POINTS.
setting, verdict = _setting, _verdict


def run(example: Example, argv: list[str] | None = None) -> int:
    """Trains, evaluates and writes the results of ``example``; returns the exit status.

    A full disk stops the run with a message naming the file and the space it needs (the files
    already written stay whole: resume once there is room).
    """
    try:
        return _run(example, argv)
    except OSError as error:
        from hodiff.pinn.runlog import DiskFullError  # imported here: --help does not import TensorFlow

        if isinstance(error, DiskFullError):
            raise SystemExit(f"{example.name}: {error.strerror}.") from None
        raise


def _run(example: Example, argv: list[str] | None) -> int:
    args, settings = parse_args(example, argv)
    if example.training is not None:  # its own training loop (operator learning); --evaluate is its own too
        if args.evaluate is None:
            check_output(args)
        return example.training(args, settings)
    return study(example, args, settings, grid_scoring)


def study(
    example: Example, args: argparse.Namespace, settings: Settings, scoring: Callable[[Example, Any], Scoring]
) -> int:
    """Trains ``example`` as the flags say, scores it (``scoring(example, problem)``), writes the results and says
    whether the target was met; ``--evaluate`` answers instead. Returns the exit status."""
    if args.evaluate is not None:
        return evaluate(example, args)
    strategy = make_strategy(args.replicas, args.multi_worker)  # first: before TensorFlow starts its devices
    if args.multi_worker:
        args.output = worker_output(args.output)
    with strategy.scope() if strategy is not None else contextlib.nullcontext():
        problem, model = example.build(settings)
    _check_memory(settings, len(problem.domain.coords), model.count_params())
    check_output(args)
    scored = scoring(example, problem)
    logging.basicConfig(format="%(message)s")  # the library logs where it resumed from, and recoveries
    logging.getLogger("hodiff").setLevel(logging.INFO)
    fitted = fit(example, problem, model, settings, args, strategy, scored.reference)
    solution, result = fitted.solution, fitted.quasi_newton
    if result is not None:
        print(f"{example.name}: L-BFGS stopped after {result.nit} iterations, loss {result.fun:.4e}: {result.message}")
    reference = scored.reference
    lost = lost_solution(problem, solution.values, reference, solution.windows, example.error_fields)
    if lost:
        print(f"{example.name}: WARNING: {lost}")
    metrics, extra = run_metrics(example, args, settings, fitted, list(reference.values))
    metrics["worse_than_zero"] = lost is not None
    line, status = _verdict(example, args.preset, metrics)
    metrics["target_met"] = None if example.target.get(args.preset) is None else status == 0
    shape = tuple(len(axis) for axis in scored.axes.values())
    predicted = np.full((len(scored.points), len(problem.fields)), np.nan)
    predicted[~scored.outside] = solution.predict(scored.points[~scored.outside])
    picture = {name: predicted[:, i].reshape(shape) for i, name in enumerate(problem.fields)}
    first, single = problem.fields[0], len(problem.fields) == 1
    where = f" at {len(reference.points)} points" if scored.scattered else ""
    title = f"{example.name}: relative L2 error {metrics['relative_l2_error']:.2e}"
    write_results(
        args.output, metrics, scored.axes, picture[first] if single else picture,
        scored.values[first] if single and first in scored.values else scored.values, solution.history, problem,
        title + (f" ({len(reference.points)} points; picture: a slice)" if scored.scattered else ""),
    )  # fmt: skip
    print(summary_line(example, metrics, list(reference.values), extra, where, args.output))
    print(line)
    return status


def lost_solution(problem: Any, predicted: dict, reference: Any, windows: list[dict], fields: Any) -> str | None:
    """:func:`hodiff.pinn.metrics.worse_than_zero` of ``predicted`` at the ``reference``'s points, over the run's time
    windows (ten equal slices of the time axis for a run of one window; none for a steady problem)."""
    from hodiff.pinn.metrics import worse_than_zero

    domain = problem.domain
    if domain.time is None:
        return worse_than_zero(predicted, reference.values, fields=fields)
    if windows:
        edges = [window["start"] for window in windows] + [windows[-1]["end"]]
    else:
        edges = list(np.linspace(*domain.bounds[domain.time], 11))
    times = reference.points[:, domain.coords.index(domain.time)]
    return worse_than_zero(predicted, reference.values, times, edges, fields, marched=bool(windows))
