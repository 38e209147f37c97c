"""The command line shared by the PDE examples: presets, flags, training, error, files.

Each example module defines an :class:`Example`; ``python -m pinn_examples NAME [flags]``
trains it and writes ``results/NAME/``: ``metrics.json`` (error, steps, wall time),
``prediction.npz`` (the test-grid axes as named 1-D arrays and the predicted field),
``field.png``, ``history.png``, ``history.csv`` and ``checkpoints/``.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import time
from typing import Any, Callable

import numpy as np

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")


@dataclasses.dataclass
class Settings:
    """Training settings; every field is also a command-line flag (``--adam-steps 500``)."""

    interior: int = 4096
    adam_steps: int = 2000
    lbfgs_iterations: int = 5000
    learning_rate: float = 1e-3
    width: int = 20
    depth: int = 8
    dtype: str = "float32"
    sampling: str = "sobol"
    steps_per_call: int = 100
    log_every: int = 100
    checkpoint_every: int = 500
    adaptive_weights: bool = False
    resample_every: int = 0
    causal_epsilon: float = 0.0
    seed: int = 0


@dataclasses.dataclass
class Example:
    """A runnable PDE example.

    Attributes:
      name: the command name.
      description: one line for the help text.
      build: ``build(settings) -> (problem, model)``.
      reference: ``reference() -> (axes, values)``: the test grid as named 1-D arrays and the
        reference field on it, shape ``(len(axis0), len(axis1))``.
      presets: named :class:`Settings`; ``"default"`` is used without ``--preset``.
      target: the relative L2 error to reach: one number, or one per preset name.
      extra_metrics: ``extra_metrics(trainer) -> dict`` added to metrics.json and printed.
    """

    name: str
    description: str
    build: Callable[[Settings], tuple[Any, Any]]
    reference: Callable[[], tuple[dict[str, np.ndarray], np.ndarray]]
    presets: dict[str, Settings]
    target: float | dict[str, float]
    extra_metrics: Callable[[Any], dict] | None = None


def _positive(kind: type) -> Callable[[str], Any]:
    def parse(text: str):
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a {kind.__name__}") from None
        if value < 0 or (kind is float and value == 0):
            raise argparse.ArgumentTypeError(f"{text!r} must be positive")
        return value

    return parse


def parse_args(example: Example, argv: list[str] | None) -> tuple[argparse.Namespace, Settings]:
    parser = argparse.ArgumentParser(prog=f"python -m pinn_examples {example.name}", description=example.description)
    parser.add_argument("--preset", choices=sorted(example.presets), default="default", help="a named group of settings (default: %(default)s)")
    for field in dataclasses.fields(Settings):
        flag = "--" + field.name.replace("_", "-")
        if field.type in ("bool", bool):
            parser.add_argument(flag, action=argparse.BooleanOptionalAction, default=None)
        elif field.name == "dtype":
            parser.add_argument(flag, choices=("float32", "float64"), default=None)
        elif field.name == "sampling":
            parser.add_argument(flag, choices=("sobol", "lhs", "random"), default=None)
        else:
            kind = float if field.type in ("float", float) else int
            parser.add_argument(flag, type=_positive(kind), default=None, metavar=kind.__name__.upper())
    parser.add_argument("--output", default=None, help="results directory (default results/NAME)")
    parser.add_argument("--resume", action="store_true", help="continue the run in --output from its latest checkpoint")
    parser.add_argument("--tensorboard", action="store_true", help="also write TensorBoard logs")
    parser.add_argument("--no-progress", action="store_true", help="no progress bars")
    args = parser.parse_args(argv)
    overrides = {f.name: getattr(args, f.name) for f in dataclasses.fields(Settings) if getattr(args, f.name) is not None}
    settings = dataclasses.replace(example.presets[args.preset], **overrides)
    for name in ("interior", "steps_per_call", "log_every", "checkpoint_every", "width", "depth"):
        if getattr(settings, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be >= 1")
    for name in ("adam_steps", "log_every", "checkpoint_every", "resample_every"):
        if getattr(settings, name) % settings.steps_per_call:
            parser.error(f"--{name.replace('_', '-')}={getattr(settings, name)} must be a multiple of --steps-per-call={settings.steps_per_call}")
    args.output = args.output or os.path.join("results", example.name)
    return args, settings


def make_trainer(example: Example, settings: Settings, output: str | None, resume: bool = False, tensorboard: bool = False, progress: bool = True):
    from hodiff import pinn

    problem, model = example.build(settings)
    return pinn.Trainer(
        problem, model, interior=settings.interior, sampling=settings.sampling, seed=settings.seed,
        learning_rate=settings.learning_rate, steps_per_call=settings.steps_per_call, log_every=settings.log_every,
        checkpoint_every=settings.checkpoint_every,
        adaptive_weights=pinn.AdaptiveWeights(every=settings.steps_per_call * 10) if settings.adaptive_weights else None,
        resampling=pinn.Resampling(every=settings.resample_every) if settings.resample_every else None,
        causal=pinn.CausalWeights(epsilon=settings.causal_epsilon) if settings.causal_epsilon else None,
        output_dir=output, resume=resume, tensorboard=tensorboard, progress=progress,
    )


def run(example: Example, argv: list[str] | None = None) -> int:
    """Trains, evaluates and writes the results of ``example``; returns the exit code."""
    args, settings = parse_args(example, argv)
    from hodiff.pinn import plotting, relative_l2_error

    if args.resume and not os.path.isdir(os.path.join(args.output, "checkpoints")):
        raise SystemExit(f"--resume: no checkpoints in {args.output}/checkpoints; run without --resume first.")
    axes, reference = example.reference()
    trainer = make_trainer(example, settings, args.output, args.resume, args.tensorboard, not args.no_progress)
    print(f"{example.name}: {dataclasses.asdict(settings)}")
    mesh = np.meshgrid(*axes.values(), indexing="ij")
    grid = np.stack([m.ravel() for m in mesh], axis=1)
    initial_error = relative_l2_error(trainer.predict(grid)[:, 0], reference)
    start = time.perf_counter()
    trainer.adam(settings.adam_steps)
    result = trainer.lbfgs(settings.lbfgs_iterations) if settings.lbfgs_iterations else None
    seconds = time.perf_counter() - start
    prediction = trainer.predict(grid)[:, 0].reshape(reference.shape)
    error = relative_l2_error(prediction, reference)
    target = example.target.get(args.preset, example.target["default"]) if isinstance(example.target, dict) else example.target
    extra_metrics = example.extra_metrics(trainer) if example.extra_metrics else {}
    metrics = {
        "example": example.name, "relative_l2_error": error, "target": target, "initial_relative_l2_error": initial_error,
        "adam_steps": settings.adam_steps, "lbfgs_iterations": int(result.nit) if result is not None else None,
        "lbfgs_message": str(result.message) if result is not None else None, "wall_seconds": round(seconds, 1),
        "final_loss": trainer.history[-1]["loss"] if trainer.history else None, "settings": dataclasses.asdict(settings),
        **extra_metrics,
    }
    os.makedirs(args.output, exist_ok=True)
    with open(os.path.join(args.output, "metrics.json"), "w") as file:
        json.dump(metrics, file, indent=2)
    np.savez(os.path.join(args.output, "prediction.npz"), **axes, prediction=prediction, reference=reference)
    plotting.plot_field(axes, prediction, reference, os.path.join(args.output, "field.png"), f"{example.name}: relative L2 error {error:.2e}")
    if trainer.history:
        plotting.plot_history(trainer.history, os.path.join(args.output, "history.png"), trainer.problem.term_names)
    extra = "".join(f", {k} {v:.6g}" for k, v in extra_metrics.items())
    print(f"{example.name}: relative L2 error {error:.3e} (target {target:.0e}){extra}, {seconds:.0f} s of solving; wrote {args.output}/")
    return 0
