"""The runner for examples scored at scattered points: domains of three or more coordinates.

``runner.run`` scores an example on a grid of at most two axes (the grid is also the picture).
A problem in the 5-D cube, the 5-D ball times time, or a plane times time is scored here instead
at a fixed set of points that covers the whole domain (uniform, from a fixed seed), with the
picture on a 2-D slice. Everything else is the runner's: the flags and presets, ``--evaluate``,
``--resume`` and ``--overwrite``, the checkpoints, ``metrics.json`` (relative L2 error per field
and combined over ``error_fields``, as :func:`pinn_examples.runner.field_errors` computes it),
``prediction.npz`` (the slice) and the plots.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
from collections.abc import Callable
from typing import Any

import numpy as np

from pinn_examples import runner
from pinn_examples.runner import Example, field_errors, make_strategy, parse_args


@dataclasses.dataclass
class ScatteredExample:
    """An :class:`~pinn_examples.runner.Example` scored at fixed points rather than on a grid.

    Attributes:
      example: the example (name, build, presets, target, error_fields, extra_metrics); leave its
        ``reference`` out: it becomes the slice below (:meth:`slice_reference`), for tools that want a grid.
      test_set: ``test_set() -> (points (N, d), {field: (N,)})``: the scoring points, columns in
        the domain's coordinate order, and the exact values there.
      picture: ``picture() -> (axes, points, {field: (n1, n2)})``: a 2-D slice for ``field.png``:
        two named 1-D axes, the ``(n1 * n2, d)`` points of their ij grid in the domain and the
        exact values on it (NaN outside the domain).
    """

    example: Example
    test_set: Callable[[], tuple[np.ndarray, dict[str, np.ndarray]]]
    picture: Callable[[], tuple[dict[str, np.ndarray], np.ndarray, dict[str, np.ndarray]]]

    def __post_init__(self):
        if self.example.reference is not None:
            raise ValueError(
                f"ScatteredExample {self.example.name!r}: the example's reference is the picture's slice; "
                "leave Example(reference=...) out."
            )
        self.example.reference = self.slice_reference

    def slice_reference(self) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
        """The picture's slice as an :class:`~pinn_examples.runner.Example` reference: ``(axes, {field: (n1, n2)})``."""
        axes, _, values = self.picture()
        return axes, values


def predict(trainer: Any, points: np.ndarray) -> dict[str, np.ndarray]:
    """``{field: (N,)}`` float64 predictions of the trained model at ``points``."""
    values = trainer.predict(points).astype(np.float64)
    return {name: values[:, i] for i, name in enumerate(trainer.problem.fields)}


def lost_solution(
    problem: Any,
    predicted: dict[str, np.ndarray],
    exact: dict[str, np.ndarray],
    points: np.ndarray,
    marching: Any,
    fields: Any,
) -> str | None:
    """:func:`hodiff.pinn.metrics.worse_than_zero` over the run's time windows (ten equal slices of the time
    axis for a run of one window; none for a steady problem)."""
    from hodiff.pinn.metrics import worse_than_zero

    domain = problem.domain
    if domain.time is None:
        return worse_than_zero(predicted, exact, fields=fields)
    windows = (marching or {}).get("windows") or []
    if windows:
        edges = [window["start"] for window in windows] + [windows[-1]["end"]]
    else:
        edges = list(np.linspace(*domain.bounds[domain.time], 11))
    times = points[:, domain.coords.index(domain.time)]
    return worse_than_zero(predicted, exact, times, edges, fields, marched=bool(windows))


def evaluate_run(scattered: ScatteredExample, output: str, points: np.ndarray) -> dict[str, np.ndarray]:
    """The trained run in ``output`` at ``points``, as ``--evaluate`` answers.

    Args:
      scattered: the example the run belongs to.
      output: the run's ``--output`` directory.
      points: ``(N, d)``, columns in the domain's coordinate order.

    Returns:
      :func:`pinn_examples.runner.evaluate_points`' arrays: ``points``, one ``(N,)`` per field, ``checkpoint`` and
      ``step``; nothing is written.
    """
    return runner.evaluate_points(scattered.example, output, np.asarray(points, dtype=np.float64))


def run(scattered: ScatteredExample, argv: list[str] | None = None) -> int:
    """Trains, scores and writes the results of ``scattered``; returns the exit status (as ``runner.run``)."""
    example = scattered.example
    args, settings = parse_args(example, argv)
    if args.evaluate is not None:
        return runner.evaluate(example, args)
    strategy = make_strategy(args.replicas, args.multi_worker)
    if args.multi_worker:
        args.output = runner.worker_output(args.output)
    with strategy.scope() if strategy is not None else contextlib.nullcontext():
        problem, model = example.build(settings)
    runner.check_output(args)
    points, exact = scattered.test_set()
    if points.shape[1] != len(problem.domain.coords) or set(exact) - set(problem.fields):
        raise ValueError(f"{example.name}: the test set does not match the domain {problem.domain.coords}.")
    logging.basicConfig(format="%(message)s")
    logging.getLogger("hodiff").setLevel(logging.INFO)
    initial = lambda trainer: field_errors(  # noqa: E731
        predict(trainer, points), exact, example.error_fields
    )["relative_l2_error"]
    trainer, result, marching_metrics = runner.fit(example, problem, model, settings, args, strategy, initial)
    if result is not None:
        print(f"{example.name}: L-BFGS stopped after {result.nit} iterations, loss {result.fun:.4e}: {result.message}")
    predicted = predict(trainer, points)
    errors = field_errors(predicted, exact, example.error_fields)
    lost = lost_solution(problem, predicted, exact, points, marching_metrics, example.error_fields)
    if lost:
        print(f"{example.name}: WARNING: {lost}")
    axes, slice_points, slice_exact = scattered.picture()
    shape = tuple(len(axis) for axis in axes.values())
    slice_prediction = {name: values.reshape(shape) for name, values in predict(trainer, slice_points).items()}
    for name, values in slice_prediction.items():
        values[~np.isfinite(slice_exact.get(name, np.zeros(shape)))] = np.nan
    fitted = (trainer, result, marching_metrics)
    metrics, extra = runner.run_metrics(example, args, settings, fitted, errors, list(exact))
    metrics["error_points"] = len(points)
    metrics["worse_than_zero"] = lost is not None
    line, status = runner.verdict(example, args.preset, metrics)
    metrics["target_met"] = None if example.target.get(args.preset) is None else status == 0
    single = len(problem.fields) == 1
    first = problem.fields[0]
    error = errors["relative_l2_error"]
    runner.write_results(
        args.output,
        metrics,
        axes,
        slice_prediction[first] if single else slice_prediction,
        slice_exact[first] if single else slice_exact,
        trainer,
        f"{example.name}: relative L2 error {error:.2e} ({len(points)} points; picture: a slice)",
    )
    print(runner.summary_line(example, metrics, list(exact), extra, f" at {len(points)} points", args.output))
    print(line)
    return status
