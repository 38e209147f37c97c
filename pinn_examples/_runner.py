"""The command line shared by the PDE examples: presets, flags, checks, training, error, files.

Each example module defines an :class:`Example`; ``python -m pinn_examples NAME [flags]``
trains it and writes ``results/NAME/``: ``metrics.json`` (error, steps, wall time),
``prediction.npz`` (the test-grid axes as named 1-D arrays and the predicted field),
``field.png``, ``history.png``, ``history.csv`` and ``checkpoints/``, each written to a
temporary file and renamed, so a killed run leaves whole files. Flags, memory and ``--output``
are checked before any work; a directory that holds a run is continued with ``--resume`` (which
reproduces the uninterrupted run's results) or replaced with ``--overwrite``, never silently.
The last line says whether the preset's target was met; the exit status is ``TARGET_MISSED``
when it was not.
"""

from __future__ import annotations

import argparse
import dataclasses
import logging
import math
import os
import tempfile
from collections.abc import Callable
from typing import Any

import numpy as np

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")


TARGET_MISSED = 3  # exit status of a run that missed its preset's target
SEED_MAX = 2**32 - 1  # keras.utils.set_random_seed (numpy's legacy seed) takes 0 .. 2**32 - 1
RESULT_FILES = ("metrics.json", "prediction.npz", "field.png", "history.png")  # written here, by the runner
RUN_FILES = (*RESULT_FILES, "history.csv", "checkpoints", "tensorboard")  # any of these: the directory holds a run


def _setting(
    default: Any, description: str, positive: bool = False, maximum: int | None = None, choices: tuple = ()
) -> Any:
    """A :class:`Settings` field and how its flag parses: numbers are >= 0, or > 0 when ``positive``."""
    metadata = {"help": description, "positive": positive, "maximum": maximum, "choices": choices}
    return dataclasses.field(default=default, metadata=metadata)


@dataclasses.dataclass
class Settings:
    """Training settings; every field is also a command-line flag (``--adam-steps 500``)."""

    interior: int = _setting(4096, "interior (collocation) points", positive=True)
    adam_steps: int = _setting(2000, "Adam steps, a multiple of --steps-per-call")
    lbfgs_iterations: int = _setting(5000, "L-BFGS iterations after Adam at most; 0 skips L-BFGS")
    learning_rate: float = _setting(1e-3, "Adam learning rate", positive=True)
    width: int = _setting(20, "units per hidden layer", positive=True)
    depth: int = _setting(8, "hidden layers", positive=True)
    dtype: str = _setting("float32", "floating type of the network and the points", choices=("float32", "float64"))
    sampling: str = _setting("sobol", "how the points are drawn", choices=("sobol", "lhs", "random"))
    steps_per_call: int = _setting(100, "Adam steps per compiled call", positive=True)
    log_every: int = _setting(100, "Adam steps (and L-BFGS iterations) between history rows", positive=True)
    checkpoint_every: int = _setting(500, "Adam steps between checkpoints", positive=True)
    adaptive_weights: bool = _setting(False, "learning-rate annealing of the loss weights")
    resample_every: int = _setting(0, "Adam steps between residual-based resamplings of the points; 0 is off")
    causal_epsilon: float = _setting(0.0, "causal training strength (time-dependent problems); 0 is off")
    seed: int = _setting(0, f"seed of the points and the initial weights, 0 .. {SEED_MAX}", maximum=SEED_MAX)


@dataclasses.dataclass
class Example:
    """A runnable PDE example.

    Attributes:
      name: the command name.
      description: one line for the help text.
      build: ``build(settings) -> (problem, model)``; cheap (no points, no compilation).
      reference: ``reference() -> (axes, values)``: the test grid as named 1-D arrays and the
        reference field on it, shape ``(len(axis0), len(axis1))``.
      presets: named :class:`Settings`; ``"default"`` is used without ``--preset``.
      target: the value of ``target_metric`` to reach, per preset name; a preset not named here
        (a smoke run such as ``fast``) has no target.
      target_metric: the metrics.json entry compared with the target.
      extra_metrics: ``extra_metrics(trainer) -> dict`` added to metrics.json and printed.
    """

    name: str
    description: str
    build: Callable[[Settings], tuple[Any, Any]]
    reference: Callable[[], tuple[dict[str, np.ndarray], np.ndarray]]
    presets: dict[str, Settings]
    target: dict[str, float]
    target_metric: str = "relative_l2_error"
    extra_metrics: Callable[[Any], dict] | None = None


def number(kind: type, positive: bool = False, maximum: int | None = None) -> Callable[[str], Any]:
    """An argparse ``type``: a finite ``kind`` that is >= 0 (> 0 when ``positive``) and at most ``maximum``."""
    wanted = ("> 0" if positive else ">= 0") + (f" and <= {maximum}" if maximum is not None else "")
    noun = "an integer" if kind is int else "a number"

    def parse(text: str):
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not {noun}; give {noun} {wanted}") from None
        if not math.isfinite(value):
            raise argparse.ArgumentTypeError(f"{text!r} is not finite; give {noun} {wanted}")
        if value < 0 or (positive and value == 0) or (maximum is not None and value > maximum):
            raise argparse.ArgumentTypeError(f"{text!r} is out of range; give {noun} {wanted}")
        return value

    return parse


def parse_args(example: Example, argv: list[str] | None) -> tuple[argparse.Namespace, Settings]:
    """The example's command line: ``--preset``, one flag per :class:`Settings` field, output options."""
    parser = argparse.ArgumentParser(prog=f"python -m pinn_examples {example.name}", description=example.description)
    parser.add_argument(
        "--preset",
        choices=sorted(example.presets),
        default="default",
        help="a named group of settings that the flags below override (default: %(default)s)",
    )
    for field in dataclasses.fields(Settings):
        flag, meta = "--" + field.name.replace("_", "-"), field.metadata
        if isinstance(field.default, bool):
            parser.add_argument(flag, action=argparse.BooleanOptionalAction, default=None, help=meta["help"])
        elif isinstance(field.default, str):
            parser.add_argument(flag, choices=meta["choices"], default=None, help=meta["help"])
        else:
            kind = type(field.default)
            parser.add_argument(
                flag,
                type=number(kind, meta["positive"], meta["maximum"]),
                default=None,
                metavar=kind.__name__.upper(),
                help=meta["help"],
            )
    parser.add_argument("--output", default=None, help="results directory (default: results/NAME)")
    existing = parser.add_mutually_exclusive_group()
    existing.add_argument("--resume", action="store_true", help="continue the run in --output from its last checkpoint")
    existing.add_argument("--overwrite", action="store_true", help="replace the run that --output holds")
    parser.add_argument("--tensorboard", action="store_true", help="also write TensorBoard logs")
    parser.add_argument("--no-progress", action="store_true", help="no progress bars")
    parser.epilog = (
        f"Exit status: 0 when the preset's target is met or it has none, {TARGET_MISSED} when it is "
        "missed, 2 for bad flags, 1 for other errors."
    )
    args = parser.parse_args(argv)
    names = [f.name for f in dataclasses.fields(Settings)]
    overrides = {name: getattr(args, name) for name in names if getattr(args, name) is not None}
    settings = dataclasses.replace(example.presets[args.preset], **overrides)
    for name in ("adam_steps", "log_every", "checkpoint_every", "resample_every"):
        if getattr(settings, name) % settings.steps_per_call:
            parser.error(
                f"--{name.replace('_', '-')}={getattr(settings, name)} must be a multiple of "
                f"--steps-per-call={settings.steps_per_call}"
            )
    args.output = args.output or os.path.join("results", example.name)
    return args, settings


def memory_needed(settings: Settings, dimension: int) -> int:
    """A rough lower estimate of the bytes a run holds at once, in points and derivative work.

    Per interior point: its ``dimension`` coordinates, and for every hidden layer the activations
    with their first and second derivatives in each input, kept by the nested tapes for the
    backward pass, about ``2 * width * (1 + dimension)**2`` numbers.
    """
    per_point = dimension + 2 * settings.depth * settings.width * (1 + dimension) ** 2
    return settings.interior * per_point * np.dtype(settings.dtype).itemsize


def _check_memory(settings: Settings, dimension: int) -> None:
    needed, memory = memory_needed(settings, dimension), os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    if needed > memory:
        raise SystemExit(
            f"--interior {settings.interior}: the points and their derivatives need about {needed / 2**30:.3g} GiB "
            f"(width {settings.width}, depth {settings.depth}, {settings.dtype}), more than this machine's "
            f"{memory / 2**30:.3g} GiB of memory; lower --interior (or --width, --depth)."
        )


def _check_output(args: argparse.Namespace) -> None:
    """Before any work: --output is writable, and holds a run only with --resume or --overwrite."""
    output = args.output
    if args.resume and not os.path.isdir(os.path.join(output, "checkpoints")):
        raise SystemExit(f"--resume: no checkpoints in {output}/checkpoints; run without --resume first.")
    try:
        os.makedirs(output, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=output, prefix=".write-test-"):
            pass
    except OSError as error:
        raise SystemExit(
            f"--output {output}: cannot write there ({error.strerror or error}); choose another --output."
        ) from None
    held = [name for name in RUN_FILES if os.path.lexists(os.path.join(output, name))]
    if held and not (args.resume or args.overwrite):
        raise SystemExit(
            f"--output {output} already holds a run ({', '.join(held)}); continue it with --resume, "
            "replace it with --overwrite, or choose another --output."
        )
    if args.overwrite:
        for name in RESULT_FILES:  # the trainer replaces its own files (history, checkpoints, logs)
            if os.path.lexists(path := os.path.join(output, name)):
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
):
    """A :class:`hodiff.pinn.Trainer` for ``settings``, which it stores with its checkpoints."""
    from hodiff import pinn

    annealing = pinn.AdaptiveWeights(every=10 * settings.steps_per_call) if settings.adaptive_weights else None
    return pinn.Trainer(
        problem,
        model,
        interior=settings.interior,
        sampling=settings.sampling,
        seed=settings.seed,
        learning_rate=settings.learning_rate,
        steps_per_call=settings.steps_per_call,
        log_every=settings.log_every,
        checkpoint_every=settings.checkpoint_every,
        adaptive_weights=annealing,
        resampling=pinn.Resampling(every=settings.resample_every) if settings.resample_every else None,
        causal=pinn.CausalWeights(epsilon=settings.causal_epsilon) if settings.causal_epsilon else None,
        output_dir=output,
        resume=resume,
        overwrite=overwrite,
        settings=dataclasses.asdict(settings),
        tensorboard=tensorboard,
        progress=progress,
    )


def _write_results(
    output: str, metrics: dict, axes: dict, prediction: np.ndarray, reference: np.ndarray, trainer: Any, title: str
) -> None:
    """metrics.json, prediction.npz and the plots, each written to a temporary file and renamed."""
    from hodiff.pinn import plotting
    from hodiff.pinn.runlog import atomic_write, write_json

    write_json(os.path.join(output, "metrics.json"), metrics)
    with atomic_write(os.path.join(output, "prediction.npz")) as temporary, open(temporary, "wb") as file:
        np.savez(file, **axes, prediction=prediction, reference=reference)  # a file object: savez adds no suffix
    plotting.plot_field(axes, prediction, reference, os.path.join(output, "field.png"), title)
    if trainer.history:
        plotting.plot_history(trainer.history, os.path.join(output, "history.png"), trainer.problem.term_names)


def _verdict(example: Example, preset: str, metrics: dict) -> tuple[str, int]:
    """The last line of a run, and its exit status."""
    target = example.target.get(preset)
    if target is None:
        return f"{example.name}: preset {preset!r} has no target (a smoke run)", 0
    value, metric = metrics[example.target_metric], example.target_metric.replace("_", " ").replace("l2", "L2")
    if value <= target:
        return f"{example.name}: target met: {metric} {value:.3e} <= {target:.0e}", 0
    return (
        f"{example.name}: target MISSED: {metric} {value:.3e} > {target:.0e} (exit status {TARGET_MISSED})",
        TARGET_MISSED,
    )


def run(example: Example, argv: list[str] | None = None) -> int:
    """Trains, evaluates and writes the results of ``example``; returns the exit status."""
    args, settings = parse_args(example, argv)
    problem, model = example.build(settings)
    _check_memory(settings, len(problem.domain.coords))
    _check_output(args)
    from hodiff.pinn import relative_l2_error

    axes, reference = example.reference()
    logging.basicConfig(format="%(message)s")  # the library logs where it resumed from, and recoveries
    logging.getLogger("hodiff").setLevel(logging.INFO)
    try:
        trainer = make_trainer(
            problem, model, settings, args.output, args.resume, args.overwrite, args.tensorboard, not args.no_progress
        )
    except (FileExistsError, FileNotFoundError, ValueError) as error:  # e.g. --resume with other settings
        raise SystemExit(f"{example.name}: {error}") from None
    print(f"{example.name}: {dataclasses.asdict(settings)}")
    mesh = np.meshgrid(*axes.values(), indexing="ij")
    grid = np.stack([m.ravel() for m in mesh], axis=1)
    if "initial_relative_l2_error" not in trainer.run_info:  # stored once, so that a resumed run reports it too
        untrained = trainer.run_log is None or trainer.run_log.restored is None
        trainer.run_info["initial_relative_l2_error"] = (
            relative_l2_error(trainer.predict(grid)[:, 0], reference) if untrained else None
        )
        trainer.save_run_info()
    trainer.adam(settings.adam_steps)
    result = trainer.lbfgs(settings.lbfgs_iterations) if settings.lbfgs_iterations else None
    if result is not None:
        print(f"{example.name}: L-BFGS stopped after {result.nit} iterations, loss {result.fun:.4e}: {result.message}")
    prediction = trainer.predict(grid)[:, 0].reshape(reference.shape)
    error = relative_l2_error(prediction, reference)
    extra_metrics = example.extra_metrics(trainer) if example.extra_metrics else {}
    metrics = {
        "example": example.name,
        "preset": args.preset,
        "relative_l2_error": error,
        "target": example.target.get(args.preset),
        "target_metric": example.target_metric,
        "initial_relative_l2_error": trainer.run_info["initial_relative_l2_error"],
        "adam_steps": settings.adam_steps,
        "lbfgs_iterations": int(result.nit) if result is not None else None,
        "lbfgs_message": str(result.message) if result is not None else None,
        "wall_seconds": round(trainer.elapsed_seconds, 1),
        "final_loss": trainer.final_loss,
        "settings": dataclasses.asdict(settings),
        **extra_metrics,
    }
    line, status = _verdict(example, args.preset, metrics)
    metrics["target_met"] = None if example.target.get(args.preset) is None else status == 0
    _write_results(
        args.output, metrics, axes, prediction, reference, trainer, f"{example.name}: relative L2 error {error:.2e}"
    )
    extra = "".join(f", {k} {v:.6g}" for k, v in extra_metrics.items())
    print(
        f"{example.name}: relative L2 error {error:.3e}{extra}, {trainer.elapsed_seconds:.0f} s of solving; "
        f"wrote {args.output}/"
    )
    print(line)
    return status
