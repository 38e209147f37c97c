"""The highdim example: closed-form forcing, the hard-constrained stochastic Laplacian, flags, a tiny run."""

import dataclasses
import json

import numpy as np
import pytest
import tensorflow as tf

from hodiff import pinn
from pinn_examples import highdim
from pinn_examples.__main__ import main


def tape_laplacian(u, x):
    """The exact Laplacian of ``u: (N, D) -> (N,)`` by nested tapes (the trace of the batch Hessian)."""
    with tf.GradientTape() as outer:
        outer.watch(x)
        with tf.GradientTape() as inner:
            inner.watch(x)
            value = u(x)
        gradient = inner.gradient(value, x)
    return tf.linalg.trace(outer.batch_jacobian(gradient, x))


def settings(**changes):
    return dataclasses.replace(highdim.EXAMPLE.presets["fast"], **changes)


@pytest.mark.parametrize("dim", [2, 7])
def test_closed_form_laplacian_and_forcing_match_nested_tapes(dim):
    c = highdim.coefficients(dim)
    x = tf.constant(highdim.ball_points(16, dim, 3))
    u, laplacian = highdim.exact_solution(x, c)
    exact_u = lambda p: (
        (1.0 - tf.reduce_sum(p**2, axis=1))
        * tf.reduce_sum(c * tf.sin(p[:, :-1] + tf.cos(p[:, 1:]) + p[:, 1:] * tf.cos(p[:, :-1])), axis=1)
    )
    np.testing.assert_allclose(u.numpy(), exact_u(x).numpy(), rtol=1e-12)
    np.testing.assert_allclose(laplacian.numpy(), tape_laplacian(exact_u, x).numpy(), rtol=1e-10, atol=1e-10)
    forcing = {pde: highdim.forcing(x, c, pde).numpy() for pde in highdim.PDES}
    np.testing.assert_allclose(forcing["poisson"], -laplacian.numpy())
    np.testing.assert_allclose(forcing["allen_cahn"], (laplacian + u - u**3).numpy())
    np.testing.assert_allclose(forcing["sine_gordon"], (laplacian + tf.sin(u)).numpy())
    # float32 gives the same forcing to float32 accuracy
    forcing32 = highdim.forcing(tf.cast(x, tf.float32), c, "allen_cahn")
    assert forcing32.dtype == tf.float32
    np.testing.assert_allclose(forcing32.numpy(), forcing["allen_cahn"], rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("pde", highdim.PDES)
def test_residual_with_exact_operator_is_the_pde_of_the_hard_constrained_network(pde):
    dim = 6
    problem, model = highdim.build(settings(dim=dim, pde=pde, dtype="float64", num_samples=3))
    solution = problem.solution(model)
    x = tf.constant(highdim.ball_points(8, dim, 5))
    u = solution(x)[:, 0]
    laplacian = tape_laplacian(lambda p: solution(p)[:, 0], x)
    f = highdim.forcing(x, highdim.coefficients(dim), pde)
    wanted = {
        "poisson": -laplacian - f,
        "allen_cahn": laplacian + u - u**3 - f,
        "sine_gordon": laplacian + tf.sin(u) - f,
    }
    (exact,) = problem.pde_residuals(solution, x, {})  # no seed: the exact Laplacian
    np.testing.assert_allclose(exact.numpy(), wanted[pde].numpy(), rtol=1e-9, atol=1e-9)
    # a draw of 3 of the 6 coordinates differs from the exact value; drawing all 6 is exact
    (draw,) = problem.pde_residuals(solution, x, {}, seed=7)
    assert np.max(np.abs(draw.numpy() - exact.numpy())) > 1e-6
    entry = problem.stochastic["lap_u"]
    full = dataclasses.replace(entry, num_samples=dim)
    np.testing.assert_allclose(full.evaluate(solution, x, 0, 7).numpy(), laplacian.numpy(), rtol=1e-9, atol=1e-9)
    # the hard condition: u = 0 on the sphere whatever the weights
    sphere = x / tf.norm(x, axis=1, keepdims=True)
    np.testing.assert_allclose(solution(sphere).numpy(), 0.0, atol=1e-12)


def test_ball_points_are_uniform_in_the_ball_and_cheap_in_high_dimension():
    points = highdim.ball_points(20000, 8, 0)
    radius = np.linalg.norm(points, axis=1)
    assert radius.max() <= 1.0
    for r in (0.5, 0.8, 0.95):  # P(|x| <= r) = r^D
        assert abs(np.mean(radius <= r) - r**8) < 0.015
    assert np.abs(points.mean(axis=0)).max() < 0.02  # no preferred direction
    big = highdim.ball_points(4, 100_000, 1)
    assert big.shape == (4, 100_000) and np.linalg.norm(big, axis=1).max() <= 1.0
    np.testing.assert_array_equal(highdim.ball_points(3, 5, [0, 1, 7]), highdim.ball_points(3, 5, [0, 1, 7]))


def test_training_points_are_drawn_afresh_every_step_uniformly_in_the_ball():
    for mode in ("eager", "xla"):
        draw = highdim.fresh_ball_points
        if mode == "xla":
            draw = tf.function(draw, jit_compile=True)
        points = draw(20000, 8, tf.constant(3, tf.int64)).numpy()
        radius = np.linalg.norm(points, axis=1)
        assert points.dtype == np.float32 and radius.max() <= 1.0 + 1e-6
        for r in (0.5, 0.8, 0.95):  # P(|x| <= r) = r^D
            assert abs(np.mean(radius <= r) - r**8) < 0.015, mode
        assert np.abs(points.mean(axis=0)).max() < 0.02, mode
        again = draw(20000, 8, tf.constant(3, tf.int64)).numpy()
        np.testing.assert_array_equal(points, again)  # a function of the seed
        other = draw(20000, 8, tf.constant(4, tf.int64)).numpy()
        assert np.abs(points - other).max() > 0.1
    # the loss of a step depends on the run's seed and the step only, not on the stored interior points: the
    # training data draws them (no Problem subclass)
    chosen = settings(dim=6, num_samples=3, interior=16)
    problem, model = highdim.build(chosen)
    assert type(problem) is pinn.Problem
    data = highdim.training_data(problem, chosen)
    data.build(model)
    loss = float(data.loss_terms(5)["residual"])
    data.interior.assign(highdim.ball_points(16, 6, 1).astype(np.float32))
    assert float(data.loss_terms(5)["residual"]) == loss
    assert float(data.loss_terms(6)["residual"]) != loss


@pytest.mark.parametrize(
    "flags, message",
    [(["--dim", "1"], "--dim 1"), (["--dim", "4", "--num-samples", "5"], "--num-samples 5")],
)
def test_bad_dimension_or_sample_count_stops_with_a_message_naming_the_flag(flags, message, tmp_path, capsys):
    with pytest.raises(SystemExit) as stop:
        main(["highdim", "--preset", "fast", *flags, "--output", str(tmp_path / "run")])
    assert stop.value.code == 2 and message in capsys.readouterr().err  # at the flag (Example.check)
    assert not (tmp_path / "run").exists()  # stopped before any work
    with pytest.raises(ValueError, match="--dim"):
        highdim.build(settings(dim=1))


def test_fast_run_writes_metrics_and_evaluate_reproduces_its_error(tmp_path):
    output = tmp_path / "run"
    assert main(["highdim", "--preset", "fast", "--pde", "allen_cahn", "--output", str(output), "--no-progress"]) == 0
    metrics = json.loads((output / "metrics.json").read_text())
    assert metrics["pde"] == "allen_cahn" and metrics["dim"] == 5 and metrics["adam_steps"] == 20
    assert metrics["peak_rss_mib"] > 100 and metrics["wall_seconds"] > 0
    assert 0 < metrics["relative_l2_error"] < 10 and np.isfinite(metrics["relative_l2_error_slice"])
    assert (output / "field.png").exists() and (output / "history.png").exists()
    with np.load(output / "prediction.npz") as slice_:
        assert slice_["prediction"].shape == (highdim.SLICE_POINTS, highdim.SLICE_POINTS)
    # --evaluate restores the trained network: at the error's own test points it gives the same error
    fast = highdim.EXAMPLE.presets["fast"]
    points = highdim.ball_points(fast.test_points, fast.dim, [fast.seed, 2, 0])
    np.save(tmp_path / "points.npy", points)
    assert main(["highdim", "--evaluate", str(tmp_path / "points.npy"), "--output", str(output)]) == 0
    with np.load(output / "evaluation.npz") as evaluation:
        predicted = evaluation["u"]
    exact = highdim.exact_solution(tf.constant(points), highdim.coefficients(fast.dim))[0].numpy()
    error = np.linalg.norm(predicted - exact) / np.linalg.norm(exact)
    np.testing.assert_allclose(error, metrics["relative_l2_error"], rtol=1e-5)
    np.save(tmp_path / "outside.npy", np.full((1, 5), 0.9))  # |x| > 1
    with pytest.raises(SystemExit, match="outside"):
        main(["highdim", "--evaluate", str(tmp_path / "outside.npy"), "--output", str(output)])


@pytest.mark.slow
def test_default_preset_reaches_one_percent_at_d_1000(tmp_path):
    output = tmp_path / "run"
    assert main(["highdim", "--output", str(output), "--no-progress"]) == 0
    metrics = json.loads((output / "metrics.json").read_text())
    assert metrics["dim"] == 1000 and metrics["relative_l2_error"] <= 1e-2
    assert metrics["total_seconds"] <= 600  # training and evaluation; measured 447 s under load (8.6e-3)
