"""The runner for examples scored at scattered points: domains of three or more coordinates.

``runner.run`` scores an example on a grid of at most two axes (the grid is also the picture).
A problem in the 5-D cube, the 5-D ball times time, or a plane times time is scored here instead
at a fixed set of points that covers the whole domain (uniform, from a fixed seed), with the
picture on a 2-D slice: :func:`scoring` gives :func:`pinn_examples.runner.study` the test set as
the :class:`hodiff.pinn.Reference` and the slice as the picture. Everything else is the runner's: the
flags and presets, ``--evaluate``, ``--resume`` and ``--overwrite``, the checkpoints, ``metrics.json``
(relative L2 error per field and combined over ``error_fields``), ``prediction.npz`` (the slice) and
the plots.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import numpy as np

from pinn_examples import runner
from pinn_examples.runner import Example, Scoring, parse_args


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


def scoring(scattered: ScatteredExample, problem: Any) -> Scoring:
    """The scoring of ``scattered``: its test set, and its picture's slice."""
    from hodiff import pinn

    example = scattered.example
    points, exact = scattered.test_set()
    if points.shape[1] != len(problem.domain.coords) or set(exact) - set(problem.fields):
        raise ValueError(f"{example.name}: the test set does not match the domain {problem.domain.coords}.")
    axes, slice_points, slice_exact = scattered.picture()
    outside = np.zeros(len(slice_points), dtype=bool)
    for values in slice_exact.values():
        outside |= ~np.isfinite(np.ravel(values))
    reference = pinn.Reference(points, exact, error_fields=example.error_fields)
    return Scoring(reference, axes, slice_points, slice_exact, outside, scattered=True)


def run(scattered: ScatteredExample, argv: list[str] | None = None) -> int:
    """Trains, scores and writes the results of ``scattered``; returns the exit status (as ``runner.run``)."""
    args, settings = parse_args(scattered.example, argv)
    return runner.study(scattered.example, args, settings, lambda example, problem: scoring(scattered, problem))
