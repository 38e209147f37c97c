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
from pinn_examples.runner import Settings

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
    _, normals = square.sample_boundary(3000, seed=1)
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
    solution = poisson_problem.solution(
        lambda x: exact_poisson(x) / (x[:, :1] * (1 - x[:, :1]) * x[:, 1:] * (1 - x[:, 1:]))
    )
    y = tf.constant(poisson_problem.domain.sample_interior(64, seed=4) * 0.8 + 0.1)
    assert_close(run(lambda y: poisson_problem.pde_residuals(solution, y, {})[0], y), np.zeros(64), rtol=0, atol=1e-8)


def test_condition_residuals_vanish_for_a_solution_that_satisfies_them():
    u = lambda x: (tf.cos(np.pi * x[:, 0]) * (1 + x[:, 1]))[:, None]  # periodic in x on [-1, 1]
    arrays = lambda condition: {k: tf.constant(v) for k, v in condition.sample(DOMAIN, "sobol", 0).items()}
    periodic = pinn.Periodic("x", count=16, derivatives=2)
    assert_close(periodic.residual(u, 0, arrays(periodic), DOMAIN.coords), np.zeros(48), rtol=0, atol=1e-12)
    neumann = pinn.Neumann(0.0, count=16)  # u_x = 0 at x = +-1
    assert_close(neumann.residual(u, 0, arrays(neumann), DOMAIN.coords), np.zeros(16), rtol=0, atol=1e-12)
    initial = pinn.Initial(lambda x: tf.cos(np.pi * x["x"]), count=16)
    assert_close(initial.residual(u, 0, arrays(initial), DOMAIN.coords), np.zeros(16), rtol=0, atol=1e-15)
    dirichlet = pinn.Dirichlet(lambda x: -(1 + x["t"]), count=16)
    assert_close(dirichlet.residual(u, 0, arrays(dirichlet), DOMAIN.coords), np.zeros(16), rtol=0, atol=1e-15)


def small_problem(**kwargs):
    problem = pinn.Problem(
        DOMAIN,
        needs=("u_t", "u_xx"),
        residual=lambda d, x, p: d["u_t"] - 0.1 * d["u_xx"],
        conditions=[pinn.Dirichlet(0.0, count=32), pinn.Initial(lambda x: tf.sin(np.pi * x["x"]), count=32)],
        **kwargs,
    )
    return problem, pinn.mlp(DOMAIN, width=8, depth=2, dtype="float64")


def trainer(output=None, resume=False, **kwargs):
    problem, model = small_problem()
    options = {
        "interior": 128,
        "steps_per_call": 10,
        "log_every": 10,
        "checkpoint_every": 20,
        "progress": False,
        "seed": 1,
    }
    return pinn.Trainer(problem, model, output_dir=output, resume=resume, **{**options, **kwargs})


def test_training_lowers_the_loss_and_lbfgs_reports_why_it_stopped(caplog, tmp_path):
    caplog.set_level(logging.INFO, logger="hodiff")
    run = trainer(
        str(tmp_path),
        tensorboard=True,
        adaptive_weights=pinn.AdaptiveWeights(every=20),
        resampling=pinn.ResidualResampling(every=20, candidates=2000),
    )
    run.adam(60)
    result = run.lbfgs(30)
    losses = [row["loss"] for row in run.history]
    assert losses[-1] < 0.5 * losses[0]
    assert run.history[-1]["phase"] == "lbfgs" and result.nit <= 30
    assert "L-BFGS stopped after" in caplog.text
    assert run.weights["boundary"].numpy() != 1.0, "adaptive weights moved"
    assert os.listdir(tmp_path / "tensorboard") and (tmp_path / "history.csv").exists()


def test_dense_bfgs_phase_reaches_a_lower_loss_than_lbfgs_and_resumes_as_done(tmp_path, caplog):
    """Trainer.lbfgs(method="bfgs"): the same phase (history rows, the stored result on resume) through
    minimize_bfgs; on this small heat problem it ends below L-BFGS's loss after as many iterations."""
    caplog.set_level(logging.INFO, logger="hodiff")
    losses = {}
    for method in ("lbfgs", "bfgs"):
        run = trainer(str(tmp_path / method))
        run.adam(20)
        result = run.lbfgs(200, method=method)
        losses[method] = result.fun
        assert run.history[-1]["phase"] == "lbfgs" and run.history[-1]["loss"] == pytest.approx(result.fun, rel=1e-9)
    assert "BFGS stopped after" in caplog.text
    assert losses["bfgs"] < 0.5 * losses["lbfgs"], losses
    again = trainer(str(tmp_path / "bfgs"), resume=True)
    weights = [w.numpy().copy() for w in again.model.weights]
    assert again.lbfgs(200, method="bfgs").nit == result.nit  # the stored result; nothing trained
    for before, after in zip(weights, again.model.weights):
        np.testing.assert_array_equal(before, after.numpy())
    with pytest.raises(ValueError, match="method must be 'lbfgs' or 'bfgs', got 'newton'"):
        again.lbfgs(10, method="newton")


def test_without_xla_the_trainer_trains_graphs_as_xla_does():
    """Schedule(jit_compile=False) reaches Adam's steps and L-BFGS: a residual with an op XLA cannot compile
    (a numpy function) trains, and in float64 its run equals the XLA-compiled one of the same residual."""
    zero = lambda t: tf.reshape(tf.numpy_function(np.zeros_like, [t], tf.float64), tf.shape(t))
    residuals = {
        "plain": lambda d, x, p: d["u_t"] - 0.1 * d["u_xx"],
        "numpy": lambda d, x, p: d["u_t"] - 0.1 * d["u_xx"] + zero(x["t"]),
    }

    def run(residual, jit_compile):
        problem = pinn.Problem(
            DOMAIN,
            needs=("u_t", "u_xx"),
            residual=residual,
            conditions=[pinn.Dirichlet(0.0, count=16), pinn.Initial(lambda x: tf.sin(np.pi * x["x"]), count=16)],
        )
        keras.utils.set_random_seed(3)
        model = pinn.mlp(DOMAIN, width=8, depth=2, dtype="float64")
        schedule = pinn.Schedule(steps_per_call=10, log_every=10, progress=False, jit_compile=jit_compile)
        trainer = pinn.Trainer(pinn.TrainingData(problem, interior=64), model, schedule=schedule)
        trainer.adam(10)
        trainer.lbfgs(3)
        return [row["loss"] for row in trainer.history]

    np.testing.assert_allclose(run(residuals["numpy"], False), run(residuals["plain"], True), rtol=1e-9)
    with pytest.raises(tf.errors.InvalidArgumentError, match="PyFunc"):
        run(residuals["numpy"], True)


def test_resume_after_interruption_reproduces_the_uninterrupted_run(tmp_path):
    straight = trainer(str(tmp_path / "straight"), resampling=pinn.ResidualResampling(every=20, candidates=1000))
    straight.adam(60)
    straight.lbfgs(20)
    interrupted = trainer(str(tmp_path / "resumed"), resampling=pinn.ResidualResampling(every=20, candidates=1000))
    interrupted.adam(40)  # "killed" after the checkpoint at 40
    resumed = trainer(
        str(tmp_path / "resumed"), resume=True, resampling=pinn.ResidualResampling(every=20, candidates=1000)
    )
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
        DOMAIN,
        needs=("u_t", "u_xx"),
        residual=lambda d, x, p: d["u_t"] - p["kappa"] * d["u_xx"],
        conditions=[pinn.Data(DOMAIN.sample_interior(64, seed=5), np.zeros(64))],
        parameters={"kappa": 0.3},
    )
    run = pinn.Trainer(
        problem, pinn.mlp(DOMAIN, width=8, depth=2), interior=64, steps_per_call=10, log_every=10, progress=False
    )
    run.adam(20)
    assert run.parameter_values()["kappa"] != 0.3 and "kappa" in run.history[-1]


def test_bad_input():
    problem, model = small_problem()
    with pytest.raises(ValueError, match="count must be an int >= 1, got 0"):
        pinn.Trainer(
            pinn.Problem(
                DOMAIN, needs=("u",), residual=lambda d, x, p: d["u"], conditions=[pinn.Dirichlet(0.0, count=0)]
            ),
            model,
        )
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
        pinn.Trainer(
            pinn.Problem(
                DOMAIN,
                needs=("u",),
                residual=lambda d, x, p: d["u"],
                conditions=[pinn.Dirichlet(0.0, count=4)],
                weights={"boundry": 2.0},
            ),
            model,
        )
    with pytest.raises(ValueError, match="no weights yet"):
        pinn.Trainer(problem, keras.Sequential([keras.layers.Dense(1)]))


def test_causal_weights_follow_the_paper_formula():
    run = trainer(causal=pinn.CausalWeights(epsilon=2.0, bins=4))
    points = tf.constant([[0.0, 0.1], [0.0, 0.6], [0.0, 1.2], [0.0, 1.3], [0.0, 1.9]], tf.float64)
    squares = tf.constant([1.0, 2.0, 3.0, 5.0, 4.0], tf.float64)
    per_bin = np.array([1.0, 2.0, 4.0, 4.0])  # t in [0, 2): bins of width 0.5
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
    # third-order derivatives through the embedding work under XLA
    x = tf.constant(DOMAIN.sample_interior(8, seed=2))
    third = run(lambda x: hodiff.partials(model, x, ("x", "t"), ("xxx",))["xxx"], x)
    assert np.all(np.isfinite(third))


def comparable(history):
    return [{k: v for k, v in row.items() if k != "seconds"} for row in history]


def test_resume_at_any_point_reproduces_the_uninterrupted_run(tmp_path, monkeypatch):
    options = {"checkpoint_every": 20}
    straight = trainer(str(tmp_path / "straight"), **options)
    straight.run_info["initial_error"] = 0.5
    straight.save_run_info()
    assert straight.adam(40).steps == 40
    result = straight.lbfgs(25)
    assert result.nit > 10 and [row["step"] for row in straight.history] == [10, 20, 30, 40, 50, 60, 40 + result.nit]

    # after the run finished: the same result, history, wall time and run info; nothing is trained
    done = trainer(str(tmp_path / "straight"), resume=True, **options)
    again = done.lbfgs(25)
    assert (again.nit, again.message, again.fun) == (result.nit, result.message, result.fun)
    with monkeypatch.context() as patched:  # its loss read from the log: restoring builds and runs no loss
        patched.setattr(done.data, "terms", lambda *args: pytest.fail("the loss was evaluated"))
        finished = done.adam(40)
    assert finished.stop_reason.startswith("already done")
    assert trainer(str(tmp_path / "none")).adam(0).stop_reason == "no Adam steps asked (steps=0)"
    assert finished.final_loss == pytest.approx(done.final_loss, rel=1e-12)
    assert comparable(done.history) == comparable(straight.history) and done.run_info == {"initial_error": 0.5}
    assert 0 < done.elapsed_seconds == straight.elapsed_seconds and done.final_loss == pytest.approx(
        result.fun, rel=1e-9
    )

    # mid-Adam (killed after the checkpoint at 20), then between the phases, then during L-BFGS
    first = trainer(str(tmp_path / "resumed"), **options)

    class KilledAtTheThirdCall:
        steps_per_call, calls, step = 10, 0, first.step

        def __call__(self):
            self.calls += 1
            if self.calls == 3:
                raise KeyboardInterrupt
            return self.step()

    first.step = KilledAtTheThirdCall()
    with pytest.raises(KeyboardInterrupt):
        first.adam(40)
    part = trainer(str(tmp_path / "resumed"), resume=True, **options)
    assert int(part.adam_steps.numpy()) == 20 and [row["step"] for row in part.history] == [10, 20]
    restored_seconds = part.elapsed_seconds
    assert restored_seconds > 0, "the wall time of the killed session is kept"
    part.adam(40)
    real = hodiff.pinn.trainer.minimize_lbfgs

    def killed_after_12(loss_fn, variables, max_iterations, callback, **kwargs):
        def dying(intermediate_result):
            callback(intermediate_result)
            if callback_count.append(1) or len(callback_count) == 12:
                raise KeyboardInterrupt

        return real(loss_fn, variables, max_iterations, callback=dying, **kwargs)

    callback_count = []
    monkeypatch.setattr(hodiff.pinn.trainer, "minimize_lbfgs", killed_after_12)
    with pytest.raises(KeyboardInterrupt):
        trainer(str(tmp_path / "resumed"), resume=True, **options).lbfgs(25)
    monkeypatch.setattr(hodiff.pinn.trainer, "minimize_lbfgs", real)
    last = trainer(str(tmp_path / "resumed"), resume=True, **options)
    assert [row["phase"] for row in last.history] == ["adam"] * 4, "the killed L-BFGS rows are not kept"
    resumed = last.lbfgs(25)
    assert last.elapsed_seconds > restored_seconds, "wall time accumulates over sessions"
    assert (resumed.nit, resumed.fun) == (result.nit, result.fun)
    assert comparable(last.history) == comparable(straight.history)
    assert [row["step"] for row in pinn.runlog.read_history(tmp_path / "resumed" / "history.csv")] == [
        r["step"] for r in straight.history
    ]
    for a, b in zip(straight.model.weights, last.model.weights):
        np.testing.assert_array_equal(a.numpy(), b.numpy())


def test_settings_overwrite_and_resume_rules(tmp_path):
    trainer(str(tmp_path), settings={"preset": "fast"}).adam(10)
    with pytest.raises(FileExistsError, match="--resume.*--overwrite"):
        trainer(str(tmp_path))
    with pytest.raises(
        ValueError,
        match=r"learning_rate: 0.001 in the run, 0.01 now.*preset: 'fast' in the run, 'paper' now.*seed: 1 in "
        "the run, 2 now",
    ):
        trainer(str(tmp_path), resume=True, learning_rate=1e-2, seed=2, settings={"preset": "paper"})
    fresh = trainer(str(tmp_path), overwrite=True)
    assert fresh.history == [] and int(fresh.adam_steps.numpy()) == 0


def test_a_truncated_latest_checkpoint_resumes_from_the_previous(tmp_path, caplog):
    trainer(str(tmp_path), checkpoint_every=10).adam(30)
    data = tmp_path / "checkpoints" / "ckpt-30.data-00000-of-00001"
    with open(data, "r+b") as file:
        file.truncate(os.path.getsize(data) - 100)
    with caplog.at_level(logging.WARNING):
        resumed = trainer(str(tmp_path), resume=True, checkpoint_every=10)
    assert "ckpt-30" in caplog.text and int(resumed.adam_steps.numpy()) == 20 and len(resumed.history) == 2


def test_non_finite_terms_are_named_even_when_the_compiled_loss_is_finite():
    problem = pinn.Problem(
        DOMAIN,
        needs=("u_t",),
        residual=lambda d, x, p: d["u_t"],
        conditions=[pinn.Dirichlet(lambda x: x["x"] * np.nan, count=8, name="wall"), pinn.Initial(0.0, count=8)],
    )
    nan_run = pinn.Trainer(
        problem, pinn.mlp(DOMAIN, width=4, depth=1), interior=16, steps_per_call=10, log_every=10, progress=False
    )
    with pytest.raises(FloatingPointError, match=r"non-finite loss terms: \['wall'\]"):
        nan_run.lbfgs(5)
    assert nan_run.clock.lbfgs is None, "L-BFGS does not count as done"

    class DroppedNaN:  # as if XLA had dropped the NaN term
        steps_per_call = 10

        def __call__(self):
            return {"loss": tf.constant(0.5)}

    run = trainer()
    run.step = DroppedNaN()
    points = run.condition_arrays[1]["points"]
    points.assign(tf.tensor_scatter_nd_update(points, [[0, 0]], [np.nan]))
    with pytest.raises(
        FloatingPointError, match=r"at Adam step 10 the loss is 0.5; non-finite loss terms: \['initial'\]"
    ):
        run.adam(10)


def test_bad_configuration_is_refused_up_front():
    with pytest.raises(ValueError, match="CausalWeights: epsilon must be a finite number >= 0, got nan"):
        pinn.CausalWeights(epsilon=float("nan"))
    with pytest.raises(ValueError, match=r"weights\['boundary'\] = inf"):
        small_problem(weights={"boundary": float("inf")})
    with pytest.raises(ValueError, match="ResidualResampling: every must be a finite int >= 1"):
        pinn.ResidualResampling(every=0)
    with pytest.raises(ValueError, match="Initial 'initial': value must be a finite number or a function"):
        pinn.Initial(float("inf"))
    with pytest.raises(ValueError, match="Neumann 'flux': value must be a finite number"):
        pinn.Neumann(float("nan"), name="flux")
    with pytest.raises(ValueError, match="learning_rate must be a finite number"):
        trainer(learning_rate=float("nan"))
    with pytest.raises(TypeError, match=r"Schedule: jit_compile must be True \(XLA\) or False .*got 'no'"):
        pinn.Schedule(jit_compile="no")


def test_bad_data_names_the_condition():
    points = DOMAIN.sample_interior(8, seed=0)
    with pytest.raises(ValueError, match="Data 'probe': values hold NaN or Inf in 1 rows"):
        pinn.Data(points, np.where(np.arange(8) == 3, np.inf, 0.0), name="probe")
    with pytest.raises(ValueError, match="Data 'probe': points hold NaN or Inf"):
        pinn.Data(np.where(points == points[2, 0], np.nan, points), np.zeros(8), name="probe")
    outside = pinn.Data(points + [0.0, 5.0], np.zeros(8), name="probe")
    with pytest.raises(ValueError, match="Data 'probe': 8 points lie outside the domain"):
        pinn.Problem(DOMAIN, needs=("u",), residual=lambda d, x, p: d["u"], conditions=[outside])


def test_loss_terms_are_named_at_construction():
    two = lambda d, x, p: (d["u_t"] - d["v"], d["v"] - d["u_xx"])
    system = pinn.Problem(
        DOMAIN,
        fields=("u", "v"),
        needs=("u_t", "u_xx", "v"),
        residual=two,
        residual_names=("evolution", "flux"),
        conditions=[pinn.Initial(0.0, count=4)],
    )
    assert system.term_names == ("evolution", "flux", "initial"), "known before any evaluation"
    model = pinn.mlp(DOMAIN, outputs=2, width=4, depth=1)
    points = system.sample_points(16, seed=0)
    terms = system.loss_terms(system.solution(model), points, {})
    assert list(terms) == ["evolution", "flux", "initial"] and all(t.shape == () for t in terms.values())
    as_dict = pinn.Problem(
        DOMAIN,
        fields=("u", "v"),
        needs=("u_t", "u_xx", "v"),
        residual_names=("flux", "evolution"),
        residual=lambda d, x, p: dict(zip(("evolution", "flux"), two(d, x, p))),
    )
    np.testing.assert_array_equal(
        as_dict.loss_terms(as_dict.solution(model), {"interior": points["interior"]}, {})["flux"], terms["flux"]
    )
    unnamed = pinn.Problem(DOMAIN, fields=("u", "v"), needs=("u_t", "u_xx", "v"), residual=two)
    with pytest.raises(ValueError, match=r"returned 2 residuals but residual_names has 1.*residual_names=\("):
        pinn.Trainer(unnamed, model, interior=16, progress=False)


@pytest.mark.parametrize("dtype", ["float64", "mixed_float16"])
def test_fourier_features_and_mixed_precision_train_a_second_order_problem_under_xla(dtype):
    problem, _ = small_problem()
    model = pinn.mlp(DOMAIN, width=16, depth=2, fourier_features=8, dtype=dtype)
    run = pinn.Trainer(
        problem, model, interior=128, steps_per_call=10, log_every=10, progress=False, learning_rate=1e-2
    )
    adam = run.adam(60)
    assert np.isfinite(adam.final_loss) and adam.final_loss < 0.7 * run.history[0]["loss"]
    result = run.lbfgs(20)
    assert result.nit > 0 and np.isfinite(result.fun) and result.fun < adam.final_loss
    assert run.predict(DOMAIN.sample_interior(4)).dtype == (np.float64 if dtype == "float64" else np.float32)


def test_fourier_features_are_cosines_and_sines_of_the_projection():
    model = pinn.mlp(DOMAIN, width=4, depth=1, fourier_features=3, fourier_scale=2.0)
    scaled = model.layers[0](DOMAIN.sample_interior(5, seed=1)).numpy()
    features = model.layers[1]
    z = 2 * np.pi * scaled @ features.matrix.numpy()
    np.testing.assert_allclose(features(scaled).numpy(), np.concatenate([np.cos(z), np.sin(z)], 1), rtol=0, atol=1e-13)


def test_the_library_has_no_side_effects(tmp_path, capsys):
    import random
    import subprocess
    import sys

    state, numpy_state = random.getstate(), np.random.get_state()
    pinn.mlp(DOMAIN, width=4, depth=1, seed=3)
    assert random.getstate() == state and all(np.array_equal(a, b) for a, b in zip(np.random.get_state(), numpy_state))
    first, second = pinn.mlp(DOMAIN, width=4, depth=1, seed=3), pinn.mlp(DOMAIN, width=4, depth=1, seed=3)
    np.testing.assert_array_equal(first.weights[0].numpy(), second.weights[0].numpy())
    run = trainer(str(tmp_path))
    run.adam(10)
    run.lbfgs(2)
    trainer(str(tmp_path), resume=True).lbfgs(2)
    assert capsys.readouterr().out == ""
    # Keras itself imports matplotlib.pyplot when it is installed; hodiff adds no plotting import of its own.
    code = (
        "import sys, keras, tensorflow; before = set(sys.modules); import hodiff, hodiff.pinn; "
        "assert not [m for m in set(sys.modules) - before if m.startswith('matplotlib')]"
    )
    subprocess.run([sys.executable, "-c", code], check=True, capture_output=True)
