"""wave2d_cg (PINNacle Wave2d-CG): the smoothed wave speed stays between 1 and 12, the walls and each window's start
values are exact in every mode, the first window starts from the Gaussian, and a tiny marched run scores against the
reference and answers --evaluate."""

import dataclasses
import json

import numpy as np
import pytest
import tensorflow as tf

from hodiff.operators import partials
from pinn_examples import wave2d_cg, wave2d_cg_reference


@pytest.fixture
def coarse_reference(monkeypatch):
    """The reference at a few points from a coarse solve (seconds, not minutes): the runner's path, not the values."""
    times = np.array([0.0, 2.5, 5.0])
    nodes, u = wave2d_cg_reference.wave2d_cg_fd(1, times)
    axis, values = nodes[::17], u[:, ::17, ::17]
    t, x, y = np.meshgrid(times, axis, axis, indexing="ij")
    reference = {
        "points": np.column_stack([x.ravel(), y.ravel(), t.ravel()]), "u": values.ravel(), "x": axis, "y": axis,
        "picture": values[-1],
    }  # fmt: skip
    monkeypatch.setattr(wave2d_cg, "wave2d_cg_reference", lambda: reference)
    return reference


def test_the_smoothed_wave_speed_stays_between_1_and_12_and_follows_the_table():
    nodes = np.linspace(-1.0, 1.0, 256)
    x, y = (g.ravel() for g in np.meshgrid(nodes, nodes, indexing="ij"))
    smooth = wave2d_cg.smoothed_speed_squared(1.0).numpy(np.column_stack([x, y])).reshape(256, 256)
    table = wave2d_cg_reference.coefficient_nodes()
    assert smooth.min() > 0.9 and smooth.max() < 12.1  # no overshoot below zero: the equation stays hyperbolic
    assert (np.abs(smooth - table) < 0.5).mean() > 0.6  # away from the interfaces the table's value
    d = {name: tf.constant([value], tf.float64) for name, value in [("u_tt", 3.0), ("u_xx", 0.5), ("u_yy", 0.25)]}
    d |= {"u_t": tf.constant([2.0], tf.float64), "v": tf.constant([1.5], tf.float64)}
    point = {"x": tf.constant([0.3], tf.float64), "y": tf.constant([-0.2], tf.float64)}
    c = wave2d_cg.smoothed_speed_squared(1.0).numpy(np.array([[0.3, -0.2]]))[0]
    wave, velocity = (r.numpy()[0] for r in wave2d_cg.wave_residual(1.0)(d, point, {}))
    assert wave == pytest.approx((3.0 - c * 0.75) / wave2d_cg.SPEED**2) and velocity == pytest.approx(0.05)


def test_the_walls_and_the_start_values_are_exact_and_the_first_window_starts_from_the_gaussian(run):
    settings = wave2d_cg.EXAMPLE.presets["fast"]
    problem, model = wave2d_cg.build(settings)
    solution = problem.solution(model)
    points = tf.constant([[-1.0, 0.2, 0.3], [1.0, -0.4, 1.7], [0.1, -1.0, 2.2], [0.4, 1.0, 4.1], [0.2, 0.3, 0.0]])
    points = tf.cast(points, tf.float64)

    def slopes(points):
        d = partials(lambda p: solution(p)[:, 0], points, ("x", "y", "t"), ("x", "y", "t"))
        return d["x"], d["y"], d["t"]

    u_x, u_y, u_t = (value.numpy() for value in run(slopes, points))  # eager, graph and XLA
    np.testing.assert_allclose(u_x[:2], 0.0, atol=1e-12)  # zero normal derivative on the x walls
    np.testing.assert_allclose(u_y[2:4], 0.0, atol=1e-12)  # and on the y walls
    assert u_t[4] == pytest.approx(0.0, abs=1e-12)  # at rest at t = 0
    # the first window starts from the Gaussian's cosine series: its even reflection across the walls
    grid = np.linspace(-0.9, 0.9, 7)
    x, y = (g.ravel() for g in np.meshgrid(grid, grid, indexing="ij"))
    start = solution(tf.constant(np.column_stack([x, y, np.zeros_like(x)]))).numpy()
    np.testing.assert_allclose(start[:, 0], wave2d_cg_reference.initial(x, y), atol=2e-2)
    fine = wave2d_cg.windows(dataclasses.replace(settings, restart_grid=64), 1.0).initial
    named = type("X", (), {"points": tf.constant(np.column_stack([x, y, np.zeros_like(x)]))})()
    np.testing.assert_allclose(fine(named).numpy()[:, 0], wave2d_cg_reference.initial(x, y), atol=2e-3)


def test_the_hard_transform_keeps_u_and_u_t_at_the_window_start(run):
    transform = wave2d_cg.hard_transform(length=0.25)
    start = tf.constant(1.0, tf.float64)
    previous = tf.constant([[1.0, 2.0], [3.0, 4.0]], tf.float64)
    outputs = tf.constant([[0.7, -0.4], [1.3, 0.9]], tf.float64)
    xy = {"x": tf.constant([0.0, 0.5], tf.float64), "y": tf.constant([0.5, -0.5], tf.float64)}

    def values_and_u_t(t):
        with tf.GradientTape() as tape:
            tape.watch(t)
            got = transform({**xy, "t": t}, outputs, start, previous)
            u = got[:, 0]
        return got, tape.gradient(u, t)

    got, u_t = (value.numpy() for value in run(values_and_u_t, tf.constant([1.0, 1.0], tf.float64)))
    np.testing.assert_allclose(got, previous.numpy())
    np.testing.assert_allclose(u_t, previous.numpy()[:, 1])
    later, _ = (value.numpy() for value in run(values_and_u_t, tf.constant([1.25, 1.25], tf.float64)))
    expected_u = previous.numpy()[:, 0] + 0.25 * previous.numpy()[:, 1] + outputs.numpy()[:, 0]
    np.testing.assert_allclose(later[:, 0], expected_u)
    np.testing.assert_allclose(later[:, 1], previous.numpy()[:, 1] + wave2d_cg.SPEED * outputs.numpy()[:, 1])


def test_a_tiny_marched_run_scores_against_the_reference_and_answers_evaluate(tmp_path, coarse_reference):
    output = tmp_path / "run"
    flags = ["--preset", "fast", "--adam-steps", "10", "--lbfgs-iterations", "5", "--interior", "64", "--no-progress"]
    assert wave2d_cg.main([*flags, "--output", str(output)]) == 0
    metrics = json.loads((output / "metrics.json").read_text())
    assert [(w["start"], w["end"]) for w in metrics["windows"]] == [(0.0, 2.5), (2.5, 5.0)]
    assert metrics["error_points"] == len(coarse_reference["points"]) and np.isfinite(metrics["relative_l2_error"])
    points = np.array([[-1.0, 0.5, 1.0], [0.5, 0.25, 4.0], [0.3, -0.2, 0.0]])
    np.save(tmp_path / "points.npy", points)
    assert wave2d_cg.main(["--output", str(output), "--evaluate", str(tmp_path / "points.npy")]) == 0
    evaluated = np.load(output / "evaluation.npz")
    assert evaluated["u"].shape == (3,) and str(evaluated["checkpoint"]).startswith("window-")
    fast = wave2d_cg.windows(wave2d_cg.EXAMPLE.presets["fast"]).initial  # the fast preset's 8-node series
    named = type("X", (), {"points": tf.constant(points[2:])})()
    assert evaluated["u"][2] == pytest.approx(fast(named).numpy()[0, 0], abs=1e-12)  # the start, exact


def test_an_odd_restart_filter_is_refused_when_the_flags_are_parsed(capsys):
    with pytest.raises(SystemExit) as info:
        wave2d_cg.main(["--preset", "fast", "--restart-filter", "3"])
    assert info.value.code == 2 and "--restart-filter 3: give an even order" in capsys.readouterr().err
