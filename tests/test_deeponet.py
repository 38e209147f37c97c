"""DeepONet (hodiff.pinn.DeepONet), the deeponet example and its method-of-lines reference."""

import json
import os

import keras
import numpy as np
import pytest
import tensorflow as tf

from hodiff.pinn import DeepONet
from hodiff.pinn.runlog import read_history
from pinn_examples import deeponet, deeponet_reference

WANTED = ("", "x", "t", "xx", "tt")


@pytest.fixture(scope="module")
def net():
    return DeepONet.mlp(sensors=6, dimension=2, width=12, depth=2, basis=5, dtype="float64", seed=3)


def _inputs(functions=3, points=4):
    rng = np.random.default_rng(0)
    return tf.constant(rng.normal(size=(functions, 6))), tf.constant(rng.uniform(size=(points, 2)))


def _tape_partials(net, f, y):
    """The partials of each function's field one by one, with plain nested GradientTapes."""
    rows = {name: [] for name in WANTED}
    for b in range(f.shape[0]):
        with tf.GradientTape(persistent=True) as outer:
            outer.watch(y)
            with tf.GradientTape() as inner:
                inner.watch(y)
                u = net.grid(f[b : b + 1], y)[0]
            first = inner.gradient(u, y)
        second = outer.batch_jacobian(first, y)
        rows[""].append(u)
        rows["x"].append(first[:, 0])
        rows["t"].append(first[:, 1])
        rows["xx"].append(second[:, 0, 0])
        rows["tt"].append(second[:, 1, 1])
    return {name: tf.stack(values) for name, values in rows.items()}


def test_shapes_and_pairing(net):
    f, y = _inputs()
    grid = net.grid(f, y)
    assert grid.shape == (3, 4)
    paired = net([tf.repeat(f, 4, axis=0), tf.tile(y, [3, 1])])  # row b * 4 + j is (f_b, y_j)
    assert paired.shape == (12, 1)
    np.testing.assert_allclose(paired.numpy().reshape(3, 4), grid.numpy(), rtol=1e-12)


@pytest.mark.parametrize("method", ["forward", "nested"])
def test_partials_match_nested_tapes(net, run, method):
    f, y = _inputs()
    expected = _tape_partials(net, f, y)
    got = run(lambda f, y: net.partials(f, y, ("x", "t"), WANTED, method=method), f, y)
    for name in WANTED:
        assert got[name].shape == (3, 4)
        np.testing.assert_allclose(got[name].numpy(), expected[name].numpy(), rtol=1e-9, atol=1e-11, err_msg=name)


def test_mixed_partial_nested_only(net):
    f, y = _inputs()
    with tf.GradientTape() as outer:
        outer.watch(y)
        with tf.GradientTape() as inner:
            inner.watch(y)
            u = net.grid(f[:1], y)[0]
        u_x = inner.gradient(u, y)[:, 0]
    expected = outer.gradient(u_x, y)[:, 1]
    got = net.partials(f, y, ("x", "t"), ("xt",), method="nested")["xt"]
    np.testing.assert_allclose(got[0].numpy(), expected.numpy(), rtol=1e-9)
    with pytest.raises(ValueError, match="mixed.*method='nested'"):
        net.partials(f, y, ("x", "t"), ("xt",), method="forward")


def test_training_gradient_through_forward_partials(net):
    """The weights' gradient of a loss on forward partials equals that on nested partials."""
    f, y = _inputs()

    def gradient(method):
        with tf.GradientTape() as tape:
            d = net.partials(f, y, ("x", "t"), ("t", "xx"), method=method)
            loss = tf.reduce_mean(tf.square(d["t"] - 0.1 * d["xx"]))
        return tape.gradient(loss, net.trainable_variables)

    forward, nested = gradient("forward"), gradient("nested")
    assert [g is None for g in forward] == [g is None for g in nested]  # biases without effect on partials
    assert sum(g is not None for g in forward) > len(forward) // 2
    for a, b in zip(forward, nested):
        if a is not None:
            np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-8, atol=1e-12)


def test_bad_inputs_name_the_problem(net):
    f, y = _inputs()
    with pytest.raises(ValueError, match=r"f must have shape \(functions, 6\)"):
        net.grid(tf.zeros((3, 5), tf.float64), y)
    with pytest.raises(ValueError, match=r"y must have shape \(points, 2\)"):
        net.grid(f, tf.zeros((4, 3), tf.float64))
    with pytest.raises(ValueError, match="coords must name each"):
        net.partials(f, y, ("x",), ("x",))
    with pytest.raises(ValueError, match="not one of coords"):
        net.partials(f, y, ("x", "t"), ("yy",))
    with pytest.raises(ValueError, match="method='sideways' is not an option"):
        net.partials(f, y, ("x", "t"), ("x",), method="sideways")
    with pytest.raises(TypeError, match="tuple of names"):
        net.partials(f, y, ("x", "t"), "xx")
    with pytest.raises(ValueError, match=r"call the model on \[f, y\]"):
        net(f)
    branch = keras.Sequential([keras.Input((6,)), keras.layers.Dense(5)])
    trunk = keras.Sequential([keras.Input((2,)), keras.layers.Dense(4)])
    with pytest.raises(ValueError, match="same number p"):
        DeepONet(branch, trunk)
    with pytest.raises(ValueError, match="trunk must be a built Keras model"):
        DeepONet(branch, lambda y: y)


def test_forward_refuses_a_trunk_that_is_not_a_dense_chain():
    branch = keras.Sequential([keras.Input((3,)), keras.layers.Dense(4)])
    inputs = keras.Input((2,))
    trunk = keras.Model(inputs, keras.layers.Dense(4)(keras.layers.Concatenate()([inputs, inputs])))
    net = DeepONet(branch, trunk)
    f, y = tf.ones((2, 3)), tf.ones((5, 2))
    with pytest.raises(ValueError, match="method='nested'"):
        net.partials(f, y, ("x", "t"), ("xx",), method="forward")
    assert net.partials(f, y, ("x", "t"), ("xx",), method="nested")["xx"].shape == (2, 5)


# --- the method-of-lines reference -------------------------------------------------------------


def test_reference_matches_the_linear_series_solution():
    """Without the reaction and with f = 1 the solution is a sine series (closed form)."""
    t = np.linspace(0.0, 1.0, 11)
    u = deeponet_reference.solve(np.ones(21), t, refinement=8, reaction=0.0)
    x = np.linspace(0.0, 1.0, 21)
    d = deeponet_reference.DIFFUSION
    n = np.arange(1, 400, 2)[:, None, None]
    lam = d * (n * np.pi) ** 2
    series = np.sum(4.0 / (n * np.pi) * (1.0 - np.exp(-lam * t)) / lam * np.sin(n * np.pi * x[None, :, None]), 0)
    assert np.abs(u - series).max() < 1e-4 * np.abs(series).max()


def test_reference_converges_at_second_order():
    f = deeponet.held_out_sources(1)[0][::9]  # 12 sensors, a rough source
    study = deeponet_reference.convergence(f, np.linspace(0.0, 1.0, 6), refinements=(1, 2, 4), finest=16)
    assert all(1.8 < order < 2.3 for order in study["orders"]), study
    assert study["errors"][-1] < study["errors"][0] / 10


def test_reference_on_the_example_grid_is_far_below_the_target():
    f = deeponet.held_out_sources(1)[0]
    t = np.linspace(0.0, 1.0, 11)
    used = deeponet_reference.solve(f, t)  # the refinement the example uses
    finer = deeponet_reference.solve(f, t, refinement=16)
    assert np.linalg.norm(used - finer) / np.linalg.norm(finer) < 2e-2 / 100


def test_sources_have_the_rbf_covariance():
    factor = deeponet.grf_factor()
    x = np.linspace(0.0, 1.0, deeponet.SENSORS)
    kernel = np.exp(-((x[:, None] - x[None]) ** 2) / (2 * 0.2**2))
    np.testing.assert_allclose(factor @ factor.T, kernel, atol=1e-10)
    np.testing.assert_array_equal(deeponet.held_out_sources(3), deeponet.held_out_sources(3))


def test_interpolation_is_the_references_source():
    f = deeponet.held_out_sources(2)
    x = np.random.default_rng(1).uniform(size=7)
    got = deeponet.interpolate(tf.constant(f), tf.constant(x)).numpy()
    sensors = np.linspace(0.0, 1.0, deeponet.SENSORS)
    np.testing.assert_allclose(got, [np.interp(x, sensors, row) for row in f], rtol=1e-12)


# --- the example end to end ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    output = str(tmp_path_factory.mktemp("deeponet"))
    status = deeponet.main(["--preset", "fast", "--output", output, "--steps", "10", "--test-functions", "2"])
    return output, status


def test_fast_run_writes_its_results(trained):
    output, status = trained
    assert status == 0
    for name in ("metrics.json", "prediction.npz", "field.png", "history.png", "history.csv", "checkpoints"):
        assert os.path.exists(os.path.join(output, name)), name
    with open(os.path.join(output, "metrics.json")) as file:
        metrics = json.load(file)
    assert metrics["steps"] == 10 and metrics["test_functions"] == 2 and metrics["target"] is None
    assert np.isfinite(metrics["mean_relative_l2_error"])
    saved = np.load(os.path.join(output, "prediction.npz"))
    assert saved["prediction"].shape == saved["reference"].shape == (2, 100, 101)
    np.testing.assert_allclose(saved["prediction"][:, 0], 0.0, atol=1e-12)  # hard boundary and initial values
    np.testing.assert_allclose(saved["prediction"][:, :, 0], 0.0, atol=1e-12)


def test_existing_output_needs_resume_or_overwrite(trained):
    output, _ = trained
    with pytest.raises(SystemExit, match="already holds a run"):
        deeponet.main(["--preset", "fast", "--output", output])
    with pytest.raises(SystemExit, match="settings differ.*steps: 10 in the run, 30 now"):
        deeponet.main(["--preset", "fast", "--output", output, "--resume", "--steps", "30", "--test-functions", "2"])


def test_resume_of_a_finished_run_restores_its_weights(trained):
    output, _ = trained
    with open(os.path.join(output, "metrics.json")) as file:
        before = json.load(file)
    argv = ["--preset", "fast", "--output", output, "--resume", "--steps", "10", "--test-functions", "2"]
    assert deeponet.main(argv) == 0
    with open(os.path.join(output, "metrics.json")) as file:
        after = json.load(file)
    assert after["mean_relative_l2_error"] == pytest.approx(before["mean_relative_l2_error"], rel=1e-6)
    assert len(read_history(os.path.join(output, "history.csv"))) == 1


def test_evaluate_writes_predictions(trained, tmp_path):
    output, _ = trained
    saved = np.load(os.path.join(output, "prediction.npz"))
    x, t = saved["x"], saved["t"]
    points = np.array([[x[5], t[7]], [x[50], t[100]]])
    path = str(tmp_path / "query.npz")
    np.savez(path, f=saved["f"], points=points)
    assert deeponet.main(["--output", output, "--evaluate", path]) == 0
    result = np.load(os.path.join(output, "evaluation.npz"))
    assert result["u"].shape == (2, 2)
    expected = saved["prediction"][:, [5, 50], [7, 100]]
    np.testing.assert_allclose(result["u"], expected, rtol=1e-5, atol=1e-7)


def test_evaluate_points_npy_for_the_held_out_sources(trained, tmp_path):
    """Like every example: --evaluate POINTS.npy; the sources are the run's held-out ones; --outside nan."""
    output, _ = trained
    saved = np.load(os.path.join(output, "prediction.npz"))
    x, t = saved["x"], saved["t"]
    points = np.array([[x[5], t[7]], [x[50], t[100]], [1.5, 0.5]])
    path = str(tmp_path / "points.npy")
    np.save(path, points)
    with pytest.raises(SystemExit, match=r"1 of 3 points are outside .* row 2: x=1.5, t=0.5.*--outside nan"):
        deeponet.main(["--output", output, "--evaluate", path])
    assert deeponet.main(["--output", output, "--evaluate", path, "--outside", "nan"]) == 0
    result = np.load(os.path.join(output, "evaluation.npz"))
    np.testing.assert_array_equal(result["f"], saved["f"])
    np.testing.assert_allclose(result["u"][:, :2], saved["prediction"][:, [5, 50], [7, 100]], rtol=1e-5, atol=1e-7)
    assert np.isnan(result["u"][:, 2]).all()
    np.save(path, np.zeros((3, 3)))
    with pytest.raises(SystemExit, match="3 columns; deeponet's points have 2, x and t"):
        deeponet.main(["--output", output, "--evaluate", path])
    np.save(path, points[:2])
    with pytest.raises(SystemExit, match="no trained run"):
        deeponet.main(["--output", str(tmp_path / "empty"), "--evaluate", path])


def test_resume_after_a_kill_ends_as_the_uninterrupted_run(tmp_path):
    """A run killed after its step-10 checkpoint (mid history window) and resumed ends bit-identical."""
    flags = [
        "--preset",
        "fast",
        "--steps",
        "20",
        "--log-every",
        "4",
        "--checkpoint-every",
        "10",
        "--test-functions",
        "2",
    ]
    whole, killed = str(tmp_path / "whole"), str(tmp_path / "killed")
    assert deeponet.main([*flags, "--output", whole, "--no-progress"]) == 0
    assert deeponet.main([*flags, "--output", killed, "--no-progress"]) == 0
    for name in os.listdir(os.path.join(killed, "checkpoints")):  # the kill: step 20's checkpoint never written
        if name.startswith("ckpt-20"):
            os.remove(os.path.join(killed, "checkpoints", name))
    os.remove(os.path.join(killed, "metrics.json"))
    assert deeponet.main([*flags, "--output", killed, "--resume", "--no-progress"]) == 0
    assert read_history(os.path.join(killed, "history.csv")) == read_history(os.path.join(whole, "history.csv"))
    with open(os.path.join(whole, "metrics.json")) as a, open(os.path.join(killed, "metrics.json")) as b:
        first, second = json.load(a), json.load(b)
    assert first["mean_relative_l2_error"] == second["mean_relative_l2_error"]
    assert first["final_loss"] == second["final_loss"]
    assert [row["step"] for row in read_history(os.path.join(whole, "history.csv"))] == [4, 8, 12, 16, 20]


def test_shared_command_line(capsys, tmp_path):
    with pytest.raises(SystemExit) as info:
        deeponet.main(["--help"])
    help_text = capsys.readouterr().out
    assert info.value.code == 0 and help_text.startswith("usage: python -m pinn_examples deeponet")
    assert all(flag in help_text for flag in ("--steps", "--method", "--resume", "--overwrite", "--evaluate", "fast"))
    with pytest.raises(SystemExit):
        deeponet.main(["--preset", "fast", "--replicas", "2", "--output", str(tmp_path)])
    assert "deeponet trains on one device" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        deeponet.main(["--steps", "-3", "--output", str(tmp_path)])
    assert "give an integer > 0" in capsys.readouterr().err


@pytest.mark.parametrize(
    "arrays, message",
    [
        ({"f": np.zeros((2, 99)), "points": np.zeros((3, 2))}, r"f must have shape \(B, 100\)"),
        ({"f": np.zeros((2, 100)), "points": np.zeros((3, 3))}, r"points must have shape \(P, 2\)"),
        ({"f": np.zeros((2, 100))}, "no array 'points'"),
        ({"f": np.zeros((2, 100)), "points": np.full((3, 2), 1.5)}, "outside"),
        ({"f": np.full((2, 100), np.nan), "points": np.zeros((3, 2))}, "finite"),
    ],
)
def test_evaluate_refuses_bad_files(trained, tmp_path, arrays, message):
    output, _ = trained
    path = str(tmp_path / "bad.npz")
    np.savez(path, **arrays)
    with pytest.raises(SystemExit, match=message):
        deeponet.main(["--output", output, "--evaluate", path])


@pytest.mark.slow
def test_default_run_meets_the_target(tmp_path):
    """The full run (7 to 14 minutes on 2 cores, as loaded): mean relative L2 error <= 2e-2 on 100 held-out sources."""
    assert deeponet.main(["--output", str(tmp_path)]) == 0
    with open(tmp_path / "metrics.json") as file:
        assert json.load(file)["mean_relative_l2_error"] <= 2e-2
