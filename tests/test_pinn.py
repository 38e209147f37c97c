"""PINN library: sampling, conditions, exact solutions with zero residual, training, resume, errors."""

import csv
import logging
import os

import keras
import numpy as np
import pytest
import tensorflow as tf

import hodiff
from hodiff import pinn
from hodiff.checks import assert_close
from pinn_examples import heat, poisson
from pinn_examples._runner import Settings

DOMAIN = pinn.Interval("x", -1.0, 1.0) * pinn.TimeDomain("t", 0.0, 2.0)


@pytest.mark.parametrize("method", ["random", "lhs", "sobol"])
def test_sampling_covers_the_domain(method):
    points = DOMAIN.sample_interior(1024, method=method, seed=0)
    assert points.shape == (1024, 2)
    assert points[:, 0].min() >= -1 and points[:, 0].max() <= 1 and points[:, 1].max() <= 2
    # each quarter of each coordinate gets about a quarter of the points
    for column, (low, high) in enumerate([(-1, 1), (0, 2)]):
        counts = np.histogram(points[:, column], bins=4, range=(low, high))[0]
        assert np.all(np.abs(counts - 256) < 60)
    if method != "random":  # stratified: much more even than i.i.d.
        assert np.all(np.abs(np.histogram(points[:, 0], bins=4, range=(-1, 1))[0] - 256) <= 2)
    np.testing.assert_array_equal(points, DOMAIN.sample_interior(1024, method=method, seed=0))


def test_boundary_initial_and_grid():
    boundary, normals = DOMAIN.sample_boundary(200, seed=0)
    assert set(np.unique(boundary[:, 0])) == {-1.0, 1.0}
    np.testing.assert_array_equal(normals[:, 0], boundary[:, 0])
    assert np.all(normals[:, 1] == 0)
    assert np.all(DOMAIN.sample_initial(50)[:, 1] == 0.0)
    square = pinn.Rectangle(("x", "y"), (0, 0), (2, 1))
    points, normals = square.sample_boundary(3000, seed=1)
    on_x_faces = np.mean(np.abs(normals[:, 0]) == 1)
    assert abs(on_x_faces - 1 / 3) < 0.05, "faces are chosen in proportion to their length"
    axes, grid = DOMAIN.grid({"x": 3, "t": 2})
    assert grid.shape == (6, 2) and axes["x"].tolist() == [-1.0, 0.0, 1.0]


def exact_heat(x):
    return (tf.exp(-heat.ALPHA * np.pi**2 * x[:, 1]) * tf.sin(np.pi * x[:, 0]))[:, None]


def test_exact_solutions_have_zero_residual_through_hodiff_partials(run):
    heat_problem, _ = heat.build(Settings(depth=1, width=2))
    x = tf.constant(heat_problem.domain.sample_interior(64, seed=3))
    residual = run(lambda x: heat_problem.pde_residuals(exact_heat, x, {})[0], x)
    assert_close(residual, np.zeros(64), rtol=0, atol=1e-8)
    poisson_problem, _ = poisson.build(Settings(depth=1, width=2))
    exact_poisson = lambda x: (tf.sin(np.pi * x[:, 0]) * tf.sin(np.pi * x[:, 1]))[:, None]
    solution = poisson_problem.solution(lambda x: exact_poisson(x) / (x[:, :1] * (1 - x[:, :1]) * x[:, 1:] * (1 - x[:, 1:])))
    y = tf.constant(poisson_problem.domain.sample_interior(64, seed=4) * 0.8 + 0.1)
    assert_close(run(lambda y: poisson_problem.pde_residuals(solution, y, {})[0], y), np.zeros(64), rtol=0, atol=1e-8)


def test_condition_residuals_vanish_for_a_solution_that_satisfies_them():
    u = lambda x: (tf.cos(np.pi * x[:, 0]) * (1 + x[:, 1]))[:, None]         # periodic in x on [-1, 1]
    arrays = lambda condition: {k: tf.constant(v) for k, v in condition.sample(DOMAIN, "sobol", 0).items()}
    periodic = pinn.Periodic("x", count=16, derivatives=2)
    assert_close(periodic.residual(u, 0, arrays(periodic), DOMAIN.coords), np.zeros(48), rtol=0, atol=1e-12)
    neumann = pinn.Neumann(0.0, count=16)                                     # u_x = 0 at x = +-1
    assert_close(neumann.residual(u, 0, arrays(neumann), DOMAIN.coords), np.zeros(16), rtol=0, atol=1e-12)
    initial = pinn.Initial(lambda x: tf.cos(np.pi * x["x"]), count=16)
    assert_close(initial.residual(u, 0, arrays(initial), DOMAIN.coords), np.zeros(16), rtol=0, atol=1e-15)
    dirichlet = pinn.Dirichlet(lambda x: -(1 + x["t"]), count=16)
    assert_close(dirichlet.residual(u, 0, arrays(dirichlet), DOMAIN.coords), np.zeros(16), rtol=0, atol=1e-15)


def small_problem(**kwargs):
    problem = pinn.Problem(
        DOMAIN, needs=("u_t", "u_xx"), residual=lambda d, x, p: d["u_t"] - 0.1 * d["u_xx"],
        conditions=[pinn.Dirichlet(0.0, count=32), pinn.Initial(lambda x: tf.sin(np.pi * x["x"]), count=32)], **kwargs,
    )
    return problem, pinn.mlp(DOMAIN, width=8, depth=2, dtype="float64")


def trainer(output=None, resume=False, **kwargs):
    problem, model = small_problem()
    options = dict(interior=128, steps_per_call=10, log_every=10, checkpoint_every=20, progress=False, seed=1)
    return pinn.Trainer(problem, model, output_dir=output, resume=resume, **{**options, **kwargs})


def test_training_lowers_the_loss_and_lbfgs_reports_why_it_stopped(caplog, tmp_path):
    caplog.set_level(logging.INFO, logger="hodiff")
    run = trainer(str(tmp_path), tensorboard=True, adaptive_weights=pinn.AdaptiveWeights(every=20), resampling=pinn.Resampling(every=20, candidates=2000))
    run.adam(60)
    result = run.lbfgs(30)
    losses = [row["loss"] for row in run.history]
    assert losses[-1] < 0.5 * losses[0]
    assert run.history[-1]["phase"] == "lbfgs" and result.nit <= 30
    assert "L-BFGS stopped after" in caplog.text
    assert run.weights["boundary"].numpy() != 1.0, "adaptive weights moved"
    assert os.listdir(tmp_path / "tensorboard") and (tmp_path / "history.csv").exists()


def test_resume_after_interruption_reproduces_the_uninterrupted_run(tmp_path):
    straight = trainer(str(tmp_path / "straight"), resampling=pinn.Resampling(every=20, candidates=1000))
    straight.adam(60)
    straight.lbfgs(20)
    interrupted = trainer(str(tmp_path / "resumed"), resampling=pinn.Resampling(every=20, candidates=1000))
    interrupted.adam(40)                                    # "killed" after the checkpoint at 40
    resumed = trainer(str(tmp_path / "resumed"), resume=True, resampling=pinn.Resampling(every=20, candidates=1000))
    assert int(resumed.adam_steps.numpy()) == 40
    resumed.adam(60)
    resumed.lbfgs(20)
    for a, b in zip(straight.model.weights, resumed.model.weights):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    with open(tmp_path / "resumed" / "history.csv") as file:
        steps = [int(row["step"]) for row in csv.DictReader(file) if row["phase"] == "adam"]
    assert steps == [10, 20, 30, 40, 50, 60], "the history has each step once"


def test_inverse_parameter_is_trained():
    problem = pinn.Problem(
        DOMAIN, needs=("u_t", "u_xx"), residual=lambda d, x, p: d["u_t"] - p["kappa"] * d["u_xx"],
        conditions=[pinn.Data(DOMAIN.sample_interior(64, seed=5), np.zeros(64))], parameters={"kappa": 0.3},
    )
    run = pinn.Trainer(problem, pinn.mlp(DOMAIN, width=8, depth=2), interior=64, steps_per_call=10, log_every=10, progress=False)
    run.adam(20)
    assert run.parameter_values()["kappa"] != 0.3 and "kappa" in run.history[-1]


def test_bad_input():
    problem, model = small_problem()
    with pytest.raises(ValueError, match="number of points must be an int >= 1"):
        pinn.Trainer(pinn.Problem(DOMAIN, needs=("u",), residual=lambda d, x, p: d["u"], conditions=[pinn.Dirichlet(0.0, count=0)]), model)
    wrong_shape = pinn.Problem(DOMAIN, needs=("u",), residual=lambda d, x, p: tf.stack([d["u"], d["u"]], 1))
    with pytest.raises(ValueError, match=r"returned shape \(4, 2\).*one value per point"):
        pinn.Trainer(wrong_shape, model)
    with pytest.raises(ValueError, match="starts with 'v', which is not one of fields"):
        pinn.Problem(DOMAIN, needs=("v_x",), residual=lambda d, x, p: d["v_x"])
    with pytest.raises(ValueError, match="differentiates by 'y'"):
        pinn.Problem(DOMAIN, needs=("u_yy",), residual=lambda d, x, p: d["u_yy"])
    with pytest.raises(ValueError, match="log_every=15 must be a positive multiple of steps_per_call=10"):
        pinn.Trainer(problem, model, steps_per_call=10, log_every=15)
    with pytest.raises(ValueError, match="sampling method 'grid'"):
        DOMAIN.sample_interior(10, method="grid")
    with pytest.raises(ValueError, match="weights given for \\['boundry'\\]"):
        pinn.Trainer(pinn.Problem(DOMAIN, needs=("u",), residual=lambda d, x, p: d["u"], conditions=[pinn.Dirichlet(0.0, count=4)], weights={"boundry": 2.0}), model)
    with pytest.raises(ValueError, match="no weights yet"):
        pinn.Trainer(problem, keras.Sequential([keras.layers.Dense(1)]))


def test_causal_weights_follow_the_paper_formula():
    run = trainer(causal=pinn.CausalWeights(epsilon=2.0, bins=4))
    points = tf.constant([[0.0, 0.1], [0.0, 0.6], [0.0, 1.2], [0.0, 1.3], [0.0, 1.9]], tf.float64)
    squares = tf.constant([1.0, 2.0, 3.0, 5.0, 4.0], tf.float64)
    per_bin = np.array([1.0, 2.0, 4.0, 4.0])                         # t in [0, 2): bins of width 0.5
    weights = np.exp(-2.0 * np.concatenate([[0.0], np.cumsum(per_bin)[:-1]]))
    assert_close(run.problem.causal.weighted_mean(squares, points, DOMAIN), np.mean(weights * per_bin), rtol=1e-12)
    with pytest.raises(ValueError, match="causal weights need a time coordinate"):
        steady = pinn.Problem(pinn.Interval("x", 0, 1), needs=("u",), residual=lambda d, x, p: d["u"])
        pinn.Trainer(steady, pinn.mlp(pinn.Interval("x", 0, 1), width=4, depth=1), causal=pinn.CausalWeights())


def test_periodic_embedding_makes_the_network_exactly_periodic(run):
    model = pinn.mlp(DOMAIN, width=8, depth=2, periodic={"x": 2.0})
    t = np.linspace(0.0, 2.0, 7)
    left, right = np.stack([-np.ones(7), t], 1), np.stack([np.ones(7), t], 1)
    np.testing.assert_allclose(model(left).numpy(), model(right).numpy(), rtol=0, atol=1e-12)
    assert not np.allclose(model(left).numpy(), model(np.stack([np.zeros(7), t], 1)).numpy())
    # third-order derivatives through the embedding work under XLA (slices would not)
    x = tf.constant(DOMAIN.sample_interior(8, seed=2))
    third = run(lambda x: hodiff.partials(model, x, ("x", "t"), ("xxx",))["xxx"], x)
    assert np.all(np.isfinite(third))
