"""wave2d_ms (PINNacle Wave2d-MS, consistent): the closed form solves the first-order system the example trains,
the hard transform holds the walls and each window's start values, and a tiny marched run goes end to end."""

import json

import numpy as np
import tensorflow as tf

from hodiff.operators import partials
from pinn_examples import wave2d_ms


def test_exact_solution_solves_the_system_and_its_conditions():
    points = tf.constant(np.random.default_rng(1).uniform(size=(50, 3)) * [1.0, 1.0, wave2d_ms.END])
    exact = wave2d_ms.exact(points.numpy())

    def field(p, name):  # the closed form in TensorFlow ops, for the tapes
        x, y, t = p[:, 0], p[:, 1], p[:, 2]
        u = v = 0.0
        for m, n, amplitude in wave2d_ms.MODES:
            shape, omega = amplitude * tf.sin(m * np.pi * x) * tf.sin(n * np.pi * y), wave2d_ms.frequency(m, n)
            u, v = u + shape * tf.cos(omega * t), v - shape * omega * tf.sin(omega * t)
        return {"u": u, "v": v}[name]

    du = partials(lambda p: field(p, "u"), points, ("x", "y", "t"), ("t", "tt", "xx", "yy"))
    dv = partials(lambda p: field(p, "v"), points, ("x", "y", "t"), ("t",))
    np.testing.assert_allclose(field(points, "u").numpy(), exact["u"], rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(du["t"].numpy(), exact["v"], rtol=1e-10, atol=1e-10)  # v = u_t
    named = {"u_t": du["t"], "u_tt": du["tt"], "v": field(points, "v"), "u_xx": du["xx"], "u_yy": du["yy"]}
    np.testing.assert_allclose(dv["t"].numpy(), du["tt"].numpy(), rtol=1e-10, atol=1e-8)
    for residual in wave2d_ms.residual(named, {}, {}):
        np.testing.assert_allclose(residual.numpy(), 0.0, atol=1e-9)
    assert wave2d_ms.frequency(3, 2) == np.sqrt(17.0) * np.pi  # the fast mode: about 206 periods in 100
    walls = np.array([[0.0, 0.3, 7.0], [1.0, 0.3, 7.0], [0.4, 0.0, 7.0], [0.4, 1.0, 7.0]])
    np.testing.assert_allclose(wave2d_ms.exact(walls)["u"], 0.0, atol=1e-14)
    start = np.array([[0.3, 0.6, 0.0], [0.7, 0.2, 0.0]])
    named_start = {"x": tf.constant(start[:, 0]), "y": tf.constant(start[:, 1])}
    np.testing.assert_allclose(wave2d_ms.initial(named_start).numpy()[:, 0], wave2d_ms.exact(start)["u"], rtol=1e-13)
    np.testing.assert_allclose(wave2d_ms.initial(named_start).numpy()[:, 1], 0.0)


def test_hard_transform_keeps_u_and_u_t_at_the_window_start_and_the_walls(run):
    transform = wave2d_ms.hard_transform(length=2.0)
    start = tf.constant(3.0, tf.float64)
    previous = tf.constant([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], tf.float64)  # (u_k, v_k) at each point
    outputs = tf.constant([[0.7, -0.4], [1.3, 0.9], [-2.0, 0.5]], tf.float64)
    xy = {"x": tf.constant([0.0, 0.5, 0.5], tf.float64), "y": tf.constant([0.5, 0.5, 0.5], tf.float64)}
    t = tf.constant([3.0, 3.0, 4.0], tf.float64)

    def values_and_u_t(t):
        with tf.GradientTape() as tape:
            tape.watch(t)
            got = transform({**xy, "t": t}, outputs, start, previous)
            u = got[:, 0]
        return got, tape.gradient(u, t)

    got, u_t = (value.numpy() for value in run(values_and_u_t, t))  # eager, graph and XLA
    np.testing.assert_allclose(got[:2], previous.numpy()[:2])  # at t = start
    np.testing.assert_allclose(u_t[:2], previous.numpy()[:2, 1])  # u_t = v_k there
    # on the wall x = 0 the bubble vanishes: u = u_k + (t - t_k) v_k (the sine series of v_k is 0 there)
    on_wall = transform({**xy, "t": tf.constant([4.0, 4.0, 4.0], tf.float64)}, outputs, start, previous).numpy()
    np.testing.assert_allclose(on_wall[0], [1.0 + 2.0, 2.0])
    s = 0.5  # (4 - 3) / 2, the bubble 1 at the centre
    np.testing.assert_allclose(got[2], [5.0 + 6.0 + s**2 * -2.0, 6.0 + s * wave2d_ms.SPEED * 0.5])


def test_tiny_marched_run_and_evaluate(tmp_path):
    output = tmp_path / "run"
    flags = ["--preset", "fast", "--adam-steps", "10", "--lbfgs-iterations", "5", "--interior", "64"]
    assert wave2d_ms.main([*flags, "--output", str(output)]) == 0
    metrics = json.loads((output / "metrics.json").read_text())
    assert [(w["start"], w["end"]) for w in metrics["windows"]] == [(0.0, 50.0), (50.0, 100.0)]
    assert {"relative_l2_error_u", "relative_l2_error_v"} <= set(metrics)
    assert metrics["relative_l2_error"] == metrics["relative_l2_error_u"]  # scored on u, as PINNacle does
    points = np.array([[0.25, 0.5, 10.0], [0.5, 0.25, 75.0], [0.0, 0.5, 60.0]])
    np.save(tmp_path / "points.npy", points)
    assert wave2d_ms.main(["--output", str(output), "--evaluate", str(tmp_path / "points.npy")]) == 0
    evaluated = np.load(output / "evaluation.npz")
    np.testing.assert_allclose(evaluated["u"][2], 0.0, atol=1e-12)  # on the wall x = 0, hard
    assert str(evaluated["checkpoint"]).startswith("window-")
