"""insulated_plate: the exact conditions hold for any network, the fast preset trains, writes the flux
checks and diagnostics, and --evaluate reproduces it."""

import json

import numpy as np
import tensorflow as tf
from test_examples import assert_evaluate_reproduces_the_prediction

from pinn_examples import insulated_plate
from pinn_examples.__main__ import main


def test_conditions_hold_exactly_for_an_untrained_network():
    problem, model = insulated_plate.build(insulated_plate.EXAMPLE.presets["fast"])
    solution = problem.solution(model)
    u = lambda points: solution(tf.constant(points, model.dtype)).numpy()[:, 0]  # noqa: E731
    y = np.linspace(0.0, 1.0, 11)
    np.testing.assert_allclose(u(np.stack([0 * y, y], 1)), 1.0, atol=1e-12)
    np.testing.assert_allclose(u(np.stack([0 * y + 2, y], 1)), 0.0, atol=1e-12)
    points, normals = problem.domain.sample_boundary(256, seed=2, where=lambda x: (x["x"] > 1e-9) & (x["x"] < 2 - 1e-9))
    step = 1e-6
    slope = (u(points + step * normals) - u(points - step * normals)) / (2 * step)
    assert np.abs(slope).max() < 1e-5, "zero normal derivative on the top, the bottom, the disk and the square"
    far = u(problem.domain.sample_interior(64, seed=5))
    x = problem.domain.sample_interior(64, seed=5)[:, 0]
    assert np.abs(far - (1 - x / 2)).max() > 1e-2, "inside, the network's output counts"


def test_fast_preset_trains_reports_the_fluxes_and_evaluates(tmp_path):
    output = tmp_path / "plate"
    assert main(["insulated_plate", "--preset", "fast", "--output", str(output), "--no-progress"]) == 0
    metrics = json.loads((output / "metrics.json").read_text())
    assert metrics["relative_l2_error"] < metrics["initial_relative_l2_error"]
    cuts = [metrics[f"flux_x{cut}"] for cut in insulated_plate.CUTS]
    assert 0.41 < metrics["flux_reference"] < 0.43 and all(np.isfinite(cuts))
    assert (
        metrics["flux_deviation"] == max(abs(c - metrics["flux_reference"]) for c in cuts) / metrics["flux_reference"]
    )
    assert isinstance(metrics["diagnostics"], list)
    assert_evaluate_reproduces_the_prediction("insulated_plate", output)
