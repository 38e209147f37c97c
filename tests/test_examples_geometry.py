"""laplace_holes and poisson_lshape: hard conditions on CSG/polygon domains hold, fast presets train."""

import json

import numpy as np
import pytest
import tensorflow as tf

from pinn_examples import laplace_holes, poisson_lshape
from pinn_examples.__main__ import main

EXAMPLES = {"laplace_holes": laplace_holes, "poisson_lshape": poisson_lshape}


def untrained_solution(module):
    problem, model = module.build(module.EXAMPLE.presets["fast"])
    solution = problem.solution(model)
    return problem, lambda points: solution(tf.constant(points, dtype=model.dtype)).numpy()[:, 0]


def test_laplace_holes_output_is_one_on_the_square_and_zero_on_the_circles():
    problem, solution = untrained_solution(laplace_holes)
    square, _ = problem.domain.sample_boundary(64, where="outer", seed=3)
    circles, _ = problem.domain.sample_boundary(64, where="hole", seed=4)
    assert np.all(np.isclose(np.abs(square), 0.5).any(axis=1))
    np.testing.assert_allclose(solution(square), 1.0, atol=1e-5)
    np.testing.assert_allclose(solution(circles), 0.0, atol=1e-5)
    inside = solution(problem.domain.sample_interior(64, seed=5))
    assert np.abs(inside - np.round(inside)).max() > 1e-2, "inside, the network's output counts"


def test_poisson_lshape_output_is_zero_on_every_edge():
    problem, solution = untrained_solution(poisson_lshape)
    edges, _ = problem.domain.sample_boundary(128, seed=3)
    np.testing.assert_allclose(solution(edges), 0.0, atol=1e-5)
    assert np.abs(solution(problem.domain.sample_interior(64, seed=5))).max() > 1e-3


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_reference_is_nan_exactly_outside_the_domain(name):
    module = EXAMPLES[name]
    axes, values = module.reference()
    problem, _ = module.build(module.EXAMPLE.presets["fast"])
    mesh = np.meshgrid(*axes.values(), indexing="ij")
    inside = problem.domain.contains(np.stack([m.ravel() for m in mesh], axis=1)).reshape(values.shape)
    np.testing.assert_array_equal(np.isfinite(values), inside)
    assert 0.1 < inside.mean() < 0.95


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_fast_preset_lowers_loss_and_error(name, tmp_path):
    output = tmp_path / name
    assert main([name, "--preset", "fast", "--output", str(output), "--no-progress"]) == 0
    metrics = json.loads((output / "metrics.json").read_text())
    history = [line.split(",") for line in (output / "history.csv").read_text().splitlines()]
    loss = [float(row[history[0].index("loss")]) for row in history[1:]]
    assert loss[-1] < 0.5 * loss[0]
    assert metrics["relative_l2_error"] < 0.7 * metrics["initial_relative_l2_error"]
    with np.load(output / "prediction.npz") as saved:
        np.testing.assert_array_equal(np.isnan(saved["prediction"]), np.isnan(saved["reference"]))
