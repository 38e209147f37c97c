"""insulated_plate: the Dirichlet conditions hold for any network, the loss is the energy, the fast preset
trains, writes the flux checks, and --evaluate reproduces it."""

import json

import numpy as np
import tensorflow as tf
from test_examples import assert_evaluate_reproduces_the_prediction

from pinn_examples import insulated_plate
from pinn_examples.__main__ import main


def test_dirichlet_conditions_are_exact_and_the_loss_is_the_energy():
    problem, model = insulated_plate.build(insulated_plate.EXAMPLE.presets["fast"])
    solution = problem.solution(model)
    u = lambda points: solution(tf.constant(points, model.weights[0].dtype)).numpy()[:, 0]  # noqa: E731
    y = np.linspace(0.0, 1.0, 11)
    np.testing.assert_allclose(u(np.stack([0 * y, y], 1)), 1.0, atol=1e-12)
    np.testing.assert_allclose(u(np.stack([0 * y + 2, y], 1)), 0.0, atol=1e-12)
    points = problem.domain.sample_interior(64, seed=5)
    assert np.abs(u(points) - (1 - points[:, 0] / 2)).max() > 1e-2, "inside, the network's output counts"
    last = model.layers[-1]
    last.kernel.assign(tf.zeros_like(last.kernel))
    last.bias.assign(tf.zeros_like(last.bias))
    (density,) = problem.pde_residuals(solution, tf.constant(points, model.weights[0].dtype), {})
    np.testing.assert_allclose(density.numpy(), 0.5, atol=1e-12)  # |grad (1 - x / 2)|


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
    assert metrics["diagnostics"] == []  # the diagnostic is off: an energy's minimum is not zero
    assert_evaluate_reproduces_the_prediction("insulated_plate", output)
