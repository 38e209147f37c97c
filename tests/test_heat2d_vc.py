"""heat2d_vc (PINNacle Heat2d-VC): the smoothed coefficient follows the table, the residual is the divergence
form, the boundary and initial conditions are exact, a tiny run scores against the reference and answers
--evaluate."""

import json

import numpy as np
import pytest
import tensorflow as tf

from pinn_examples import heat2d_vc, heat2d_vc_reference

TINY = [
    "--preset", "fast", "--interior", "64", "--adam-steps", "10", "--lbfgs-iterations", "0",
    "--width", "8", "--depth", "2", "--steps-per-call", "10", "--log-every", "10", "--checkpoint-every", "10",
    "--no-progress",
]  # fmt: skip


@pytest.fixture
def coarse_reference(monkeypatch):
    """The reference at a few points from a coarse solve (seconds, not minutes): the runner's path, not the values."""
    table = heat2d_vc_reference.coefficient_table()[::17, ::17]
    times = np.array([0.0, 1.0, 2.5])
    values = heat2d_vc_reference.at_nodes(heat2d_vc_reference.heat2d_vc_fv(2, times, table=table), 2)
    nodes = np.linspace(0.0, 1.0, 16)
    t, y, x = np.meshgrid(times, nodes, nodes, indexing="ij")
    reference = {
        "points": np.column_stack([x.ravel(), y.ravel(), t.ravel()]), "u": values.ravel(), "x": nodes, "y": nodes,
        "picture": values[-1].T,
    }  # fmt: skip
    monkeypatch.setattr(heat2d_vc, "heat2d_vc_reference", lambda: reference)
    return reference


def test_the_smoothed_coefficient_follows_the_table_and_the_residual_is_the_divergence_form():
    table = heat2d_vc_reference.coefficient_table()
    smooth = heat2d_vc.smoothed_coefficient(2.0)
    nodes = np.linspace(0.0, 1.0, 256)
    x, y = np.meshgrid(nodes, nodes, indexing="xy")  # [iy, ix] as the table
    values = smooth.numpy(np.column_stack([x.ravel(), y.ravel()])).reshape(256, 256)
    assert values.min() > 0.99 and values.max() < 2.01
    inner = (np.abs(values - table) < 0.05).mean()
    assert inner > 0.6  # away from the interfaces the table's value
    # u = sin(pi x) sin(pi y) t: the residual's divergence form against finite differences of a_s grad u
    c = lambda values: tf.constant(values, tf.float64)  # noqa: E731
    px, py, pt, h = 0.37, 0.61, 0.8, 1e-4
    u = lambda x, y: np.sin(np.pi * x) * np.sin(np.pi * y) * pt  # noqa: E731
    a = lambda x, y: smooth.numpy(np.array([[x, y]]))[0]  # noqa: E731
    flux_x = lambda x, y: a(x, y) * (u(x + h, y) - u(x - h, y)) / (2 * h)  # noqa: E731
    flux_y = lambda x, y: a(x, y) * (u(x, y + h) - u(x, y - h)) / (2 * h)  # noqa: E731
    divergence = (flux_x(px + h, py) - flux_x(px - h, py) + flux_y(px, py + h) - flux_y(px, py - h)) / (2 * h)
    s, q = np.sin, np.cos
    d = {
        "u_t": c([s(np.pi * px) * s(np.pi * py)]), "u_x": c([np.pi * q(np.pi * px) * s(np.pi * py) * pt]),
        "u_y": c([np.pi * s(np.pi * px) * q(np.pi * py) * pt]), "u_xx": c([-(np.pi**2) * u(px, py)]),
        "u_yy": c([-(np.pi**2) * u(px, py)]),
    }  # fmt: skip
    x = {"x": c([px]), "y": c([py]), "t": c([pt])}
    f = 200 * s(np.pi * px) * s(5 * np.pi * py) * s(np.pi * pt)
    expected = (s(np.pi * px) * s(np.pi * py) - divergence - f) / heat2d_vc.RESIDUAL_SCALE
    np.testing.assert_allclose(heat2d_vc.smoothed_residual(2.0)(d, x, {}).numpy(), [expected], rtol=1e-5)


def test_the_boundary_and_initial_values_are_exact():
    problem, model = heat2d_vc.build(heat2d_vc.EXAMPLE.presets["fast"])
    edges = np.array([[0.0, 0.3, 1.0], [1.0, 0.6, 2.0], [0.2, 0.0, 3.0], [0.7, 1.0, 4.0], [0.5, 0.5, 0.0]])
    np.testing.assert_allclose(problem.solution(model)(tf.constant(edges)).numpy(), 0.0, atol=1e-14)
    assert problem.conditions == []


def test_a_tiny_run_scores_against_the_reference_and_answers_evaluate(tmp_path, coarse_reference):
    output = tmp_path / "run"
    assert heat2d_vc.main([*TINY, "--output", str(output)]) == 0
    metrics = json.loads((output / "metrics.json").read_text())
    assert metrics["error_points"] == len(coarse_reference["points"]) and np.isfinite(metrics["relative_l2_error"])
    points = coarse_reference["points"][:7]
    np.save(tmp_path / "points.npy", points)
    assert heat2d_vc.main(["--output", str(output), "--evaluate", str(tmp_path / "points.npy")]) == 0
    evaluated = np.load(output / "evaluation.npz")
    assert evaluated["u"].shape == (7,)
    np.testing.assert_allclose(evaluated["u"][points[:, 2] == 0.0], 0.0, atol=1e-14)
