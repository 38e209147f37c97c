"""The wave and kovasznay examples: fast presets train; exact solutions solve the PDEs; hard conditions hold."""

import json

import numpy as np
import pytest
import tensorflow as tf

from pinn_examples import kovasznay, wave
from pinn_examples.__main__ import main


def _hard_points(name):
    """Points where the example's hard constraints fix the answer, and the exact values there."""
    if name == "wave":
        x = np.linspace(0.0, 1.0, 9)
        points = np.concatenate([np.stack([x, 0 * x], axis=1), [[0.0, 0.3], [1.0, 0.7]]])  # t = 0, the walls
        return points, {"u": wave.exact(points[:, 0], points[:, 1])}
    points = np.array([[-0.5, 0.2], [1.0, -0.1], [0.3, -0.5], [0.6, 1.5], [-0.5, 1.5]])
    exact = kovasznay.exact(points[:, 0], points[:, 1])
    return points, {"u": exact["u"], "v": exact["v"]}


@pytest.mark.parametrize("name, fields", [("wave", ["u"]), ("kovasznay", ["u", "v", "p"])])
def test_fast_preset_lowers_loss_and_error_and_evaluates(name, fields, tmp_path):
    output = tmp_path / name
    assert main([name, "--preset", "fast", "--output", str(output), "--no-progress"]) == 0
    metrics = json.loads((output / "metrics.json").read_text())
    history = [line.split(",") for line in (output / "history.csv").read_text().splitlines()]
    loss = [float(row[history[0].index("loss")]) for row in history[1:]]
    assert loss[-1] < 0.5 * loss[0]
    assert metrics["relative_l2_error"] < metrics["initial_relative_l2_error"]
    assert all(f"relative_l2_error_{field}" in metrics for field in fields)
    # --evaluate restores the run with its hard constraints: exact values where they fix the answer
    points, wanted = _hard_points(name)
    np.save(tmp_path / "points.npy", points)
    assert main([name, "--evaluate", str(tmp_path / "points.npy"), "--output", str(output)]) == 0
    with np.load(output / "evaluation.npz") as evaluation:
        assert set(evaluation.files) == {"points", "checkpoint", "step", *fields}
        for field, values in wanted.items():
            np.testing.assert_allclose(evaluation[field], values, atol=1e-10)


def test_wave_exact_solution_solves_the_equation():
    problem, _ = wave.build(wave.EXAMPLE.presets["fast"])
    exact = lambda x: (
        tf.sin(np.pi * x[:, 0]) * tf.cos(2 * np.pi * x[:, 1])
        + 0.5 * tf.sin(4 * np.pi * x[:, 0]) * tf.cos(8 * np.pi * x[:, 1])
    )[:, None]
    x = tf.constant(problem.domain.sample_interior(200, "random", 1), tf.float64)
    (residual,) = problem.pde_residuals(exact, x, {})
    assert np.max(np.abs(residual.numpy())) < 1e-8
    slower = lambda x: (tf.sin(np.pi * x[:, 0]) * tf.cos(np.pi * x[:, 1]))[:, None]  # speed 1, not 2
    assert np.max(np.abs(problem.pde_residuals(slower, x, {})[0].numpy())) > 1.0
    np.testing.assert_allclose(exact(x).numpy()[:, 0], wave.exact(x.numpy()[:, 0], x.numpy()[:, 1]), atol=1e-12)
    axes, values = wave.reference()
    assert values.shape == (len(axes["x"]), len(axes["t"]))


def test_wave_hard_constraints_hold_for_any_network():
    problem, model = wave.build(wave.EXAMPLE.presets["fast"])
    solution = problem.solution(model)
    x = np.linspace(0.0, 1.0, 33)
    initial = tf.constant(np.stack([x, np.zeros_like(x)], axis=1))
    with tf.GradientTape() as tape:
        tape.watch(initial)
        u = solution(initial)[:, 0]
    np.testing.assert_allclose(u.numpy(), wave.exact(x, 0.0), atol=1e-12)  # u(x, 0) = u0(x)
    np.testing.assert_allclose(tape.gradient(u, initial).numpy()[:, 1], 0.0, atol=1e-12)  # u_t(x, 0) = 0
    t = np.linspace(0.0, 1.0, 17)
    sides = np.concatenate([np.stack([np.full_like(t, end), t], axis=1) for end in (0.0, 1.0)])
    np.testing.assert_allclose(solution(tf.constant(sides)).numpy()[:, 0], 0.0, atol=1e-12)  # u = 0 at x = 0, 1
    inside = tf.constant([[0.3, 0.5], [0.7, 0.9]], tf.float64)
    assert np.all(np.abs(solution(inside).numpy()[:, 0] - wave.exact(inside.numpy()[:, 0], inside.numpy()[:, 1])) > 0)


def test_kovasznay_exact_solution_solves_the_equations():
    problem, _ = kovasznay.build(kovasznay.EXAMPLE.presets["fast"])
    exact = lambda x: tf.stack(list(kovasznay.exact(x[:, 0], x[:, 1]).values()), axis=1)
    x = tf.constant(problem.domain.sample_interior(200, "random", 1), tf.float64)
    residuals = problem.pde_residuals(exact, x, {})
    assert problem.residual_names == ("momentum_x", "momentum_y", "continuity")
    for name, residual in zip(problem.residual_names, residuals):
        assert np.max(np.abs(residual.numpy())) < 1e-8, name
    wrong_pressure = lambda x: exact(x) * tf.constant([1.0, 1.0, 2.0], tf.float64)
    assert np.max(np.abs(problem.pde_residuals(wrong_pressure, x, {})[0].numpy())) > 0.1
    axes, values = kovasznay.reference()
    assert set(values) == {"u", "v", "p"} and kovasznay.EXAMPLE.error_fields == ("u", "v")
    assert all(array.shape == (len(axes["x"]), len(axes["y"])) for array in values.values())
    # the reference is the textbook formula, not the module's own
    lam = 10 - np.sqrt(100 + 4 * np.pi**2)  # Re / 2 - sqrt(Re^2 / 4 + 4 pi^2) at Re = 20
    x0, y0 = axes["x"][7], axes["y"][11]
    assert np.isclose(values["u"][7, 11], 1 - np.exp(lam * x0) * np.cos(2 * np.pi * y0))
    assert np.isclose(values["v"][7, 11], lam / (2 * np.pi) * np.exp(lam * x0) * np.sin(2 * np.pi * y0))
    assert np.isclose(values["p"][7, 11], (1 - np.exp(2 * lam * x0)) / 2)


def test_kovasznay_boundary_values_hold_for_any_network():
    problem, model = kovasznay.build(kovasznay.EXAMPLE.presets["fast"])
    solution = problem.solution(model)
    points, _ = problem.domain.sample_boundary(64, "random", 2)
    predicted = solution(tf.constant(points)).numpy()
    wanted = kovasznay.exact(points[:, 0], points[:, 1])
    np.testing.assert_allclose(predicted[:, 0], wanted["u"], atol=1e-12)
    np.testing.assert_allclose(predicted[:, 1], wanted["v"], atol=1e-12)
    inside = problem.domain.sample_interior(16, "random", 3)
    assert np.all(np.abs(solution(tf.constant(inside)).numpy()[:, 0] - kovasznay.exact(*inside.T)["u"]) > 0)
    assert problem.term_names == ("momentum_x", "momentum_y", "continuity", "pressure")
