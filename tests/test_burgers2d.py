"""burgers2d (PINNacle Burgers2d-C): the TensorFlow initial fields are the numpy ones, the residual vanishes on an exact
solution, the network's solution is periodic and starts at the drawn fields, and a tiny marched run scores against
the reference and answers --evaluate."""

import json

import numpy as np
import pytest
import tensorflow as tf

from hodiff.operators import partials
from pinn_examples import burgers2d, burgers2d_reference


@pytest.fixture
def coarse_reference(monkeypatch):
    """The reference at a few points from a coarse solve (a second, not minutes): the runner's path, not the values."""
    n, times, spacing = 64, np.array([0.0, 0.5, 1.0]), 0.25
    reference = burgers2d_reference
    u, v = reference.burgers2d_spectral(n, times)
    nodes = np.linspace(0.0, 4.0, 17)
    values = {
        "points": reference.grid_points(spacing, times), "u": reference.tile(u, n, spacing).ravel(),
        "v": reference.tile(v, n, spacing).ravel(), "x": nodes, "y": nodes,
        "picture_u": reference.tile(u[-1], n, spacing), "picture_v": reference.tile(v[-1], n, spacing),
    }  # fmt: skip
    monkeypatch.setattr(burgers2d, "burgers2d_reference", lambda: values)
    return values


def test_initial_is_initial_uv_and_the_residual_vanishes_on_cole_hopf(run):
    points = np.random.default_rng(2).uniform(0.0, 4.0, size=(40, 2))
    named = {"x": tf.constant(points[:, 0]), "y": tf.constant(points[:, 1])}
    got = run(lambda x, y: burgers2d.initial({"x": x, "y": y}), named["x"], named["y"]).numpy()
    u, v = burgers2d.initial_uv(points[:, 0], points[:, 1])
    np.testing.assert_allclose(got, np.column_stack([u, v]), rtol=1e-12, atol=1e-12)

    # u = v = w(x + y, t), w = -2 nu phi_s / phi, phi = 1 + c e^(-2 nu (2 pi)^2 t) cos(2 pi s): exact (Cole-Hopf)
    nu, c = burgers2d.NU, 0.8

    def w(p):
        s, t = p[:, 0] + p[:, 1], p[:, 2]
        decay = tf.exp(-2.0 * nu * (2.0 * np.pi) ** 2 * t)
        return 4.0 * np.pi * nu * c * decay * tf.sin(2.0 * np.pi * s) / (1.0 + c * decay * tf.cos(2.0 * np.pi * s))

    xyt = tf.constant(np.random.default_rng(4).uniform(size=(30, 3)) * [4.0, 4.0, 1.0])
    d = partials(w, xyt, ("x", "y", "t"), ("", "t", "x", "y", "xx", "yy"))
    derivatives = {f"{field}_{name}" if name else field: d[name] for field in ("u", "v") for name in d}
    for residual in burgers2d.residual(derivatives, {}, {}):
        scale = np.abs(d["t"].numpy()).max() / burgers2d.RESIDUAL_SCALE
        np.testing.assert_allclose(residual.numpy(), 0.0, atol=1e-12 * scale)
    assert np.abs(d["t"].numpy()).max() > 1e-4  # not a trivial check


def test_the_solution_is_periodic_and_starts_at_the_drawn_fields():
    problem, model = burgers2d.build(burgers2d.EXAMPLE.presets["fast"])
    assert problem.conditions == []  # periodicity and the start values are exact
    solution = problem.solution(model)
    points = np.random.default_rng(5).uniform(size=(20, 3)) * [1.0, 1.0, 1.0]
    values = solution(tf.constant(points)).numpy()
    for shift in ([1.0, 0.0, 0.0], [0.0, 3.0, 0.0], [2.0, 1.0, 0.0]):
        np.testing.assert_allclose(solution(tf.constant(points + shift)).numpy(), values, rtol=1e-10, atol=1e-10)
    points[:, 2] = 0.0
    u, v = burgers2d.initial_uv(points[:, 0], points[:, 1])
    np.testing.assert_allclose(solution(tf.constant(points)).numpy(), np.column_stack([u, v]), atol=1e-12)


def test_a_tiny_marched_run_scores_both_fields_and_answers_evaluate(tmp_path, coarse_reference):
    output = tmp_path / "run"
    flags = ["--preset", "fast", "--adam-steps", "10", "--lbfgs-iterations", "5", "--interior", "64", "--no-progress"]
    assert burgers2d.main([*flags, "--output", str(output)]) == 0
    metrics = json.loads((output / "metrics.json").read_text())
    assert [(w["start"], w["end"]) for w in metrics["windows"]] == [(0.0, 0.5), (0.5, 1.0)]
    assert metrics["error_points"] == len(coarse_reference["points"])
    assert {"relative_l2_error_u", "relative_l2_error_v"} <= set(metrics) and np.isfinite(metrics["relative_l2_error"])
    points = np.array([[0.3, 0.7, 0.0], [3.3, 1.7, 0.0], [0.5, 0.25, 0.75]])
    np.save(tmp_path / "points.npy", points)
    assert burgers2d.main(["--output", str(output), "--evaluate", str(tmp_path / "points.npy")]) == 0
    evaluated = np.load(output / "evaluation.npz")
    u, v = burgers2d.initial_uv(points[:2, 0], points[:2, 1])
    np.testing.assert_allclose(evaluated["u"][:2], u, atol=1e-12)  # hard start values
    np.testing.assert_allclose(evaluated["v"][:2], v, atol=1e-12)
    np.testing.assert_allclose(evaluated["u"][0], evaluated["u"][1], atol=1e-12)  # period 1
