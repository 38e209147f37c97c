"""Trainer callbacks (reference error, early stopping, user callbacks), custom optimizer, residual(), saving."""

import csv

import keras
import numpy as np
import pytest
import tensorflow as tf
from helpers.transforms import scaled_in_time, zero_at_the_ends

from hodiff import pinn
from hodiff.pinn.callbacks import Callback, EarlyStopping, RelativeL2Error
from hodiff.pinn.runlog import read_history
from hodiff.pinn.saving import load_solution, save_solution

LINE = pinn.Interval("x", 0.0, 1.0)
POINTS = np.linspace(0.0, 1.0, 21)[:, None]
EXACT = 0.5 * POINTS[:, 0] * (1.0 - POINTS[:, 0])  # -u_xx = 1, u(0) = u(1) = 0


def poisson(transform=None, conditions=True):
    return pinn.Problem(
        LINE,
        needs=("u_xx",),
        residual=lambda d, x, p: d["u_xx"] + 1.0,
        conditions=[pinn.Dirichlet(0.0, count=16)] if conditions else [],
        output_transform=transform,
    )


def trainer(problem=None, **options):
    options = {"interior": 32, "steps_per_call": 10, "log_every": 10, "progress": False, **options}
    return pinn.Trainer(problem or poisson(), pinn.mlp(LINE, width=8, depth=2, seed=1), **options)


def test_reference_error_is_logged_in_the_history_csv_and_tensorboard(tmp_path):
    reference = RelativeL2Error(POINTS, EXACT, every=20)
    run = trainer(callbacks=[reference], output_dir=str(tmp_path), tensorboard=True, learning_rate=1e-2)
    run.adam(60)
    run.lbfgs(20)
    adam = [row for row in run.history if row["phase"] == "adam"]
    assert [("reference_error" in row) for row in adam] == [False, True, False, True, False, True]
    assert 0 < adam[-1]["reference_error"] < adam[1]["reference_error"]  # training lowers it
    # the CSV reads back with the metric on exactly the rows that have it
    assert read_history(tmp_path / "history.csv") == run.history
    with open(tmp_path / "history.csv") as file:
        assert "reference_error" in next(csv.reader(file))
    events = list((tmp_path / "tensorboard").glob("events.*"))
    assert events and any(
        value.tag == "reference_error"
        for event in tf.compat.v1.train.summary_iterator(str(events[0]))
        for value in event.summary.value
    )


def test_reference_error_on_lbfgs_rows_equals_the_error_of_the_prediction():
    reference = RelativeL2Error(POINTS, EXACT)
    run = trainer(callbacks=[reference])
    run.lbfgs(10)
    assert run.history[-1]["phase"] == "lbfgs"
    expected = np.linalg.norm(run.predict(POINTS)[:, 0] - EXACT) / np.linalg.norm(EXACT)
    assert run.history[-1]["reference_error"] == pytest.approx(expected, rel=1e-12)


def test_early_stopping_stops_adam_and_a_resumed_run_stops_at_the_same_step(tmp_path):
    stop = lambda: EarlyStopping(patience=30, min_delta=1e-3)
    options = dict(learning_rate=1e-2, checkpoint_every=20)
    full = trainer(callbacks=[stop()], output_dir=str(tmp_path / "full"), **options)
    result = full.adam(500)
    assert result.stop_reason.startswith("early stopping: loss has not improved") and result.steps < 500
    assert result.steps == full.history[-1]["step"]
    # the decision follows from the history: the best row is >= patience steps before the last
    best = next(r for r in full.history if f"best {r['loss']:.6g} at step {r['step']})" in result.stop_reason)
    later = [r["loss"] for r in full.history if r["step"] > best["step"]]
    assert result.steps - best["step"] >= 30 and min(later) > best["loss"] - 1e-3
    # a later call, and a resumed finished run, stay stopped
    assert full.adam(500).stop_reason.startswith("already stopped: early stopping")
    again = trainer(callbacks=[stop()], output_dir=str(tmp_path / "full"), resume=True, **options)
    assert again.adam(500).steps == result.steps and again.history == full.history

    # interrupted before the stop: the resumed run decides from the restored history alone
    part = trainer(callbacks=[stop()], output_dir=str(tmp_path / "part"), **options)
    part.adam((result.steps - 10) // 20 * 20)  # a checkpoint before the stop
    resumed = trainer(callbacks=[stop()], output_dir=str(tmp_path / "part"), resume=True, **options)
    ended = resumed.adam(500)
    assert ended.steps == result.steps and ended.stop_reason == result.stop_reason
    assert [r["loss"] for r in resumed.history] == [r["loss"] for r in full.history]


def test_early_stopping_on_the_reference_error_and_user_callbacks():
    class Recorder(Callback):
        def __init__(self):
            self.rows, self.phases = [], []

        def metrics(self, trainer, row):
            return {"twice_loss": 2 * row["loss"]}

        def on_log(self, trainer, row):
            self.rows.append(row["step"])
            if row["step"] == 40:
                trainer.stop_training = True

        def on_phase_end(self, trainer, phase, result):
            self.phases.append((phase, result.steps))

    recorder = Recorder()
    run = trainer(callbacks=[recorder])
    result = run.adam(100)
    assert recorder.rows == [10, 20, 30, 40] and recorder.phases == [("adam", 40)]
    assert result.stop_reason == "stopped by Recorder at step 40"
    assert run.history[-1]["twice_loss"] == 2 * run.history[-1]["loss"]

    monitor = EarlyStopping("reference_error", patience=10, min_delta=10.0)
    run = trainer(callbacks=[RelativeL2Error(POINTS, EXACT), monitor])
    result = run.adam(100)
    assert result.steps == 20 and "reference_error has not improved" in result.stop_reason

    with pytest.raises(ValueError, match="monitor='typo' is not a history column"):
        trainer(callbacks=[EarlyStopping("typo")]).adam(10)


def test_a_custom_optimizer_runs_the_first_phase_and_is_a_setting(tmp_path):
    run = trainer(optimizer=keras.optimizers.SGD(0.05), steps_per_call=1, log_every=1)
    before = [v.numpy().copy() for v in run.variables]
    with tf.GradientTape() as tape:
        loss = run._total_loss()
    grads = tape.gradient(loss, run.variables)
    run.adam(1)
    for old, grad, new in zip(before, grads, run.variables):
        # (Keras keeps the learning rate as a float32 variable: 0.05 to ~1e-9)
        np.testing.assert_allclose(new.numpy(), old - 0.05 * grad.numpy(), rtol=0, atol=1e-8)
    assert run.settings["optimizer"]["class_name"] == "SGD"
    assert trainer().settings["optimizer"]["class_name"] == "Adam"

    trainer(optimizer=keras.optimizers.SGD(0.05), output_dir=str(tmp_path)).adam(10)
    with pytest.raises(ValueError, match="settings differ.*optimizer"):
        trainer(optimizer=keras.optimizers.Adam(0.05), output_dir=str(tmp_path), resume=True)
    with pytest.raises(ValueError, match="pass the learning rate to the optimizer"):
        trainer(optimizer=keras.optimizers.SGD(0.05), learning_rate=1e-3)
    with pytest.raises(TypeError, match="optimizer must be a Keras optimizer"):
        trainer(optimizer="adam")
    with pytest.raises(TypeError, match="callbacks must be hodiff.pinn.callbacks.Callback"):
        trainer(callbacks=[lambda trainer, row: None])


def test_residual_gives_named_residuals_at_any_points():
    run = trainer()
    model = run.model
    x = tf.constant(POINTS)
    with tf.GradientTape() as outer:
        outer.watch(x)
        with tf.GradientTape() as inner:
            inner.watch(x)
            u = model(x)[:, 0]
        u_x = inner.gradient(u, x)[:, 0]
    u_xx = outer.gradient(u_x, x)[:, 0].numpy()
    residual = run.residual(POINTS)
    assert list(residual) == ["residual"] and residual["residual"].shape == (21,)
    np.testing.assert_allclose(residual["residual"], u_xx + 1.0, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(run.residual(POINTS, batch=4)["residual"], residual["residual"], rtol=0, atol=1e-13)
    with pytest.raises(ValueError, match=r"points must be \(N, 1\)"):
        run.residual(np.zeros((3, 2)))


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_a_saved_solution_predicts_exactly_what_the_trainer_predicts(dtype, tmp_path):
    domain = pinn.Interval("x", -1.0, 1.0) * pinn.TimeDomain("t", 0.0, 1.0)
    heat = pinn.Problem(
        domain,
        needs=("u_t", "u_xx"),
        residual=lambda d, x, p: d["u_t"] - 0.1 * d["u_xx"],
        output_transform=scaled_in_time,
    )
    run = pinn.Trainer(
        heat,
        pinn.mlp(domain, width=8, depth=2, dtype=dtype, architecture="modified"),
        interior=32,
        steps_per_call=10,
        log_every=10,
        progress=False,
    )
    run.adam(10)
    path = tmp_path / "solution.keras"
    run.save_solution(str(path))
    loaded = load_solution(path, safe_mode=False)  # a function of a module of ours (tests.helpers)
    x = domain.sample_interior(50, seed=3)
    difference = np.abs(loaded(x).numpy() - run.predict(x)).max()
    assert difference <= (1e-14 if dtype == "float64" else 2e-7)
    np.testing.assert_allclose(loaded(x[:3] * [1.0, 0.0]).numpy()[:, 0], np.sin(x[:3, 0]), rtol=1e-6)  # u(x, 0)
    assert [p.name for p in tmp_path.iterdir()] == ["solution.keras"]  # written atomically, nothing left over


def test_a_solution_without_transform_and_a_registered_transform_round_trip(tmp_path):
    @keras.saving.register_keras_serializable(package="tests")
    def doubled(x, outputs):
        return 2.0 * outputs

    model = pinn.mlp(LINE, width=4, depth=1)
    for transform, factor in ((None, 1.0), (doubled, 2.0), (zero_at_the_ends, POINTS * (1 - POINTS))):
        path = str(tmp_path / "solution.keras")
        save_solution(path, poisson(transform), model)
        np.testing.assert_allclose(
            load_solution(path, safe_mode=False)(POINTS).numpy(), factor * model(POINTS).numpy(), rtol=1e-14
        )


def test_transforms_that_cannot_be_reloaded_are_refused_at_save_time(tmp_path):
    model = pinn.mlp(LINE, width=4, depth=1)
    path = tmp_path / "solution.keras"

    def closure(x, outputs):
        return outputs

    for transform, reason in ((lambda x, outputs: outputs, "it is a lambda"), (closure, "defined inside a function")):
        with pytest.raises(
            ValueError, match=f"cannot be saved \\(.*{reason}.*module level.*register_keras_serializable"
        ):
            save_solution(path, poisson(transform), model)
    assert not path.exists()
    with pytest.raises(ValueError, match="must end in '.keras'"):
        save_solution(tmp_path / "solution.h5", poisson(), model)


def _heat_data(dtype, seed=0, order=2):
    domain = pinn.Interval("x", -1.0, 1.0) * pinn.TimeDomain("t", 0.0, 1.0)
    problem = pinn.Problem(
        domain,
        needs=("u_t", "u_xx") if order == 2 else ("u_t", "u_x"),
        residual=(lambda d, x, p: d["u_t"] - 0.1 * d["u_xx"]) if order == 2 else lambda d, x, p: d["u_t"] + d["u_x"],
        conditions=[pinn.Initial(lambda x: tf.sin(np.pi * x["x"]), count=16), pinn.Dirichlet(0.0, count=8)],
    )
    return pinn.TrainingData(problem, interior=32, seed=seed), pinn.mlp(domain, width=8, depth=2, dtype=dtype, seed=2)


def test_grad_norm_targets_are_the_ratios_of_the_term_gradient_norms_in_eager_and_xla(dtype):
    data, model = _heat_data(dtype.name)
    data.build(model)
    with tf.GradientTape(persistent=True) as tape:  # an independent computation: one gradient per term
        terms = data.problem.loss_terms(data.solution, data.points, {})
    squares = lambda grads: sum(np.sum(np.float64(g) ** 2) for g in grads if g is not None)  # noqa: E731
    norms = {name: np.sqrt(squares(tape.gradient(v, model.trainable_variables))) for name, v in terms.items()}
    expected = {name: sum(norms.values()) / norm for name, norm in norms.items()}
    assert set(expected) == {"residual", "initial", "boundary"} and len({round(v, 3) for v in expected.values()}) == 3
    rtol = 1e-10 if dtype == tf.float64 else 1e-4
    eager = {name: float(v) for name, v in data.grad_norm_targets().items()}
    np.testing.assert_allclose([eager[n] for n in expected], list(expected.values()), rtol=rtol)
    compiled = data.move_weights("grad_norm", 0.25)  # compiled with XLA
    np.testing.assert_allclose([compiled[n] for n in expected], list(expected.values()), rtol=max(rtol, 1e-6))
    for name, target in compiled.items():  # w <- (1 - alpha) w + alpha target, from w = 1
        np.testing.assert_allclose(float(data.weights[name].numpy()), 0.75 + 0.25 * target, rtol=1e-6)
    with pytest.raises(ValueError, match="method='ntk' is not one of"):
        data.move_weights("ntk", 0.1)


def test_grad_norm_weights_are_in_the_history_and_a_resumed_run_goes_on_exactly(tmp_path):
    def run(directory, steps, resume=False):
        data, model = _heat_data("float64", seed=1, order=1)  # first order: quick to compile
        trainer = pinn.Trainer(
            data,
            model,
            learning_rate=1e-2,
            schedule=pinn.Schedule(steps_per_call=10, log_every=10, checkpoint_every=20, progress=False),
            output=pinn.Output(str(tmp_path / directory), resume=resume),
            callbacks=[pinn.GradNormWeights(every=20, alpha=0.5)],
        )
        trainer.adam(steps)
        return trainer

    full = run("full", 60)
    run("part", 40)
    resumed = run("part", 60, resume=True)
    strip = lambda history: [{k: v for k, v in row.items() if k != "seconds"} for row in history]  # noqa: E731
    assert strip(resumed.history) == strip(full.history)
    for name in ("residual", "initial", "boundary"):
        assert resumed.weights[name].numpy() == full.weights[name].numpy()
    weights = [row["weight_residual"] for row in full.history]
    assert weights[0] == 1.0 and weights[1] != 1.0 and weights[1] == weights[2] != weights[3]  # moved every 20 steps
    assert full.settings["grad_norm_weights"] == {"every": 20, "alpha": 0.5}
    assert full.settings["adaptive_weights"] is None
    with pytest.raises(ValueError, match="GradNormWeights.every=15 must be a positive multiple of steps_per_call=10"):
        pinn.Trainer(*_heat_data("float64"), schedule=pinn.Schedule(10, 10), callbacks=[pinn.GradNormWeights(every=15)])
