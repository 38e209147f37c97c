"""hodiff.pinn.PINNModel: Keras fit on the problem's points, with Keras's own callbacks.

A tiny inverse problem, u'' + k = 0 on [0, 1] with u(0) = u(1) = 0 and a few observations of
u = k x (1 - x) / 2 for k = 2; k starts at 1 and is learned. float64 throughout, so that
"the same as the Trainer" and "the same as an uninterrupted run" are checked to 1e-10.
"""

import csv
import subprocess
import sys

import keras
import numpy as np
import pytest
import tensorflow as tf

from hodiff import pinn
from hodiff.pinn.keras_model import ReferenceErrorMetric

DOMAIN = pinn.Interval("x", 0.0, 1.0)
OBSERVED = np.array([[0.25], [0.5], [0.75]])
EXACT = lambda x: x * (1.0 - x)  # noqa: E731 - k = 2
PROBLEM = pinn.Problem(
    DOMAIN,
    needs=("u_xx",),
    residual=lambda d, x, p: d["u_xx"] + p["k"],
    conditions=[pinn.Dirichlet(0.0, count=2), pinn.Data(OBSERVED, EXACT(OBSERVED)[:, 0], name="data")],
    parameters={"k": 1.0},
    weights={"data": 10.0},
)
REFERENCE = (np.linspace(0.0, 1.0, 21)[:, None], EXACT(np.linspace(0.0, 1.0, 21)))


def model_of(seed=0, interior=16, learning_rate=1e-2, jit_compile=False, steps_per_execution=1):
    model = pinn.PINNModel(PROBLEM, pinn.mlp(DOMAIN, width=8, depth=2, seed=seed), interior=interior)
    model.compile(
        optimizer=keras.optimizers.Adam(learning_rate),
        jit_compile=jit_compile,
        steps_per_execution=steps_per_execution,
    )
    return model


def test_fit_lowers_the_loss_and_logs_terms_parameters_and_reference_error():
    seen = []

    class Record(keras.callbacks.Callback):  # a user callback sees the same logs as History
        def on_epoch_end(self, epoch, logs=None):
            seen.append(dict(logs))

    model = model_of(learning_rate=2e-2)
    history = model.fit(epochs=4, steps_per_epoch=25, validation_data=REFERENCE, callbacks=[Record()], verbose=0)
    logs = history.history
    assert set(logs) == {"loss", "residual", "boundary", "data", "k", "val_reference_error"}
    assert logs["loss"][-1] < 0.2 * logs["loss"][0]
    assert logs["val_reference_error"][-1] < logs["val_reference_error"][0]
    assert len(set(logs["k"])) == 4, "k is trained"
    assert logs["k"][-1] == pytest.approx(float(model.parameters["k"].numpy()))
    assert [row["loss"] for row in seen] == logs["loss"]
    # the epoch's loss is the mean of its steps' weighted sums of the terms
    for epoch in range(4):
        weighted = logs["residual"][epoch] + logs["boundary"][epoch] + 10.0 * logs["data"][epoch]
        assert logs["loss"][epoch] == pytest.approx(weighted, rel=1e-12)
    # the reference error is the relative L2 error of the prediction over all the points
    prediction = model.predict(REFERENCE[0], verbose=0)[:, 0]
    error = np.linalg.norm(prediction - REFERENCE[1]) / np.linalg.norm(REFERENCE[1])
    assert logs["val_reference_error"][-1] == pytest.approx(error, rel=1e-10)
    assert model.evaluate(*REFERENCE, batch_size=4, verbose=0) == pytest.approx(error, rel=1e-10)


def test_same_loss_and_same_adam_steps_as_the_trainer():
    network = pinn.mlp(DOMAIN, width=8, depth=2, seed=3)
    model = pinn.PINNModel(PROBLEM, network, interior=16, seed=5)
    twin = pinn.mlp(DOMAIN, width=8, depth=2, seed=4)
    twin.set_weights(network.get_weights())
    trainer = pinn.Trainer(PROBLEM, twin, interior=16, seed=5, learning_rate=1e-2, steps_per_call=10, log_every=10,
                           progress=False)  # fmt: skip
    model.compile(optimizer=keras.optimizers.Adam(1e-2), jit_compile=False)
    start = model.evaluate(verbose=0, return_dict=True)
    assert start["loss"] == pytest.approx(trainer.final_loss, rel=1e-12)
    for term, value in trainer._term_values().items():
        assert start[term] == pytest.approx(value, rel=1e-12)
    trainer.adam(20)
    model.fit(epochs=2, steps_per_epoch=10, verbose=0)
    for ours, theirs in zip(network.get_weights(), twin.get_weights()):
        np.testing.assert_allclose(ours, theirs, rtol=1e-9, atol=1e-12)
    assert float(model.parameters["k"].numpy()) == pytest.approx(trainer.parameter_values()["k"], rel=1e-10)
    assert model.evaluate(verbose=0, return_dict=True)["loss"] == pytest.approx(trainer.final_loss, rel=1e-8)


def test_xla_and_steps_per_execution_train_as_the_graph_does():
    graph, xla = model_of(), model_of(jit_compile=True, steps_per_execution=5)
    graph.fit(epochs=2, steps_per_epoch=10, verbose=0)
    history = xla.fit(epochs=2, steps_per_epoch=10, verbose=0)
    assert xla.jit_compile and len(history.history["loss"]) == 2
    for a, b in zip(graph.get_weights(), xla.get_weights()):
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-12)


def test_early_stopping_stops_and_restores_the_best_weights():
    model = model_of()
    stop = keras.callbacks.EarlyStopping(monitor="loss", min_delta=1e9, patience=2, restore_best_weights=True)
    best = []

    class AfterFirstEpoch(keras.callbacks.Callback):
        def on_epoch_end(self, epoch, logs=None):
            if epoch == 0:
                best.extend(self.model.network.get_weights())

    history = model.fit(epochs=20, steps_per_epoch=5, callbacks=[AfterFirstEpoch(), stop], verbose=0)
    assert len(history.history["loss"]) == 3 and stop.stopped_epoch == 2
    for restored, wanted in zip(model.network.get_weights(), best):
        np.testing.assert_array_equal(restored, wanted)


def test_reduce_lr_on_plateau_lowers_the_learning_rate():
    model = model_of(learning_rate=1e-2)
    plateau = keras.callbacks.ReduceLROnPlateau(monitor="loss", factor=0.5, patience=1, min_delta=1e9, min_lr=1e-6)
    history = model.fit(epochs=4, steps_per_epoch=5, callbacks=[plateau], verbose=0)
    # each epoch logs the rate it trained with; a plateau halves it after the epoch
    assert history.history["learning_rate"] == pytest.approx([1e-2, 1e-2, 5e-3, 2.5e-3])
    assert float(model.optimizer.learning_rate.numpy()) == pytest.approx(1.25e-3)


def test_csv_logger_and_tensorboard_write_every_log(tmp_path):
    model = model_of()
    callbacks = [
        keras.callbacks.CSVLogger(str(tmp_path / "log.csv")),
        keras.callbacks.TensorBoard(str(tmp_path / "tb"), write_graph=False),
    ]
    history = model.fit(epochs=3, steps_per_epoch=5, validation_data=REFERENCE, callbacks=callbacks, verbose=0)
    with open(tmp_path / "log.csv") as file:
        rows = list(csv.DictReader(file))
    assert [int(row["epoch"]) for row in rows] == [0, 1, 2]
    for key in ("loss", "residual", "boundary", "data", "k", "val_reference_error"):
        assert [float(row[key]) for row in rows] == pytest.approx(history.history[key], rel=1e-12)
    tags = set()
    for path in (tmp_path / "tb").rglob("events.out.tfevents.*"):
        for event in tf.compat.v1.train.summary_iterator(str(path)):
            tags.update(value.tag for value in event.summary.value)
    assert {"epoch_loss", "epoch_residual", "epoch_data", "epoch_k", "epoch_reference_error"} <= tags


def test_model_checkpoint_keeps_the_best_weights_by_reference_error(tmp_path):
    model = model_of(learning_rate=2e-2)
    path = str(tmp_path / "best.weights.h5")
    checkpoint = keras.callbacks.ModelCheckpoint(
        path, monitor="val_reference_error", mode="min", save_best_only=True, save_weights_only=True
    )
    history = model.fit(epochs=4, steps_per_epoch=10, validation_data=REFERENCE, callbacks=[checkpoint], verbose=0)
    best = float(np.min(history.history["val_reference_error"]))
    fresh = model_of(seed=9)
    assert fresh.evaluate(*REFERENCE, verbose=0) != pytest.approx(best)
    fresh.load_weights(path)
    assert fresh.evaluate(*REFERENCE, verbose=0) == pytest.approx(best, rel=1e-12)
    assert float(fresh.parameters["k"].numpy()) != 1.0, "the parameters are weights of the checkpoint"
    with pytest.raises(NotImplementedError, match="save_weights_only=True"):
        fresh.save(str(tmp_path / "whole.keras"))


def test_backup_and_restore_resumes_to_the_uninterrupted_weights(tmp_path):
    """Killed after epoch 1 of 4 and restarted in a fresh model (other initial weights, a new
    optimizer): the run ends with the weights, Adam state, parameters and resampled points of
    the run that was never interrupted."""
    resample = lambda: pinn.UniformResampling(every=10)  # noqa: E731 - every other epoch of 5 steps
    uninterrupted = model_of()
    uninterrupted.fit(epochs=4, steps_per_epoch=5, callbacks=[resample()], verbose=0)

    class Kill(keras.callbacks.Callback):
        def on_epoch_end(self, epoch, logs=None):
            if epoch == 1:
                raise KeyboardInterrupt

    backup = lambda: keras.callbacks.BackupAndRestore(str(tmp_path / "backup"))  # noqa: E731
    first = model_of()
    with pytest.raises(KeyboardInterrupt):
        first.fit(epochs=4, steps_per_epoch=5, callbacks=[resample(), backup(), Kill()], verbose=0)
    resumed = model_of(seed=7)
    history = resumed.fit(epochs=4, steps_per_epoch=5, callbacks=[resample(), backup()], verbose=0)
    assert len(history.history["loss"]) == 2, "epochs 2 and 3 only"
    assert int(resumed.optimizer.iterations.numpy()) == 20
    for a, b in zip(uninterrupted.get_weights(), resumed.get_weights()):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-13)
    for a, b in zip(uninterrupted.optimizer.variables, resumed.optimizer.variables):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-10, atol=1e-13)


def test_uniform_resampling_draws_new_points_as_a_function_of_the_epoch():
    model = model_of()
    start = model.points["interior"].numpy().copy()
    model.fit(epochs=3, steps_per_epoch=1, callbacks=[pinn.UniformResampling(every=2)], verbose=0)
    drawn = model.points["interior"].numpy()
    assert not np.allclose(drawn, start)
    np.testing.assert_array_equal(drawn, PROBLEM.sample_points(16, "sobol", 7919 * 2)["interior"])
    np.testing.assert_array_equal(model.points["data"]["points"].numpy(), OBSERVED), "observations stay"


def test_the_trainers_resampling_and_weighting_callbacks_act_between_epochs():
    """One callback protocol: ResidualResampling and GradNormWeights in fit act at the optimizer's step, as they
    do in the Trainer; callbacks that read history rows, and an every that splits an epoch, are refused."""
    model = model_of()
    start = model.points["interior"].numpy().copy()
    weights = {term: float(w.numpy()) for term, w in model.term_weights.items()}
    callbacks = [pinn.ResidualResampling(every=10, candidates=64), pinn.GradNormWeights(every=10, alpha=0.5)]
    model.fit(epochs=2, steps_per_epoch=5, callbacks=callbacks, verbose=0)
    assert np.allclose(model.points["interior"].numpy(), start), "step 5 does not resample"
    moved = {term: float(w.numpy()) for term, w in model.term_weights.items()}
    assert moved != weights, "the weights moved after step 10"
    model.fit(epochs=3, initial_epoch=2, steps_per_epoch=5, callbacks=callbacks, verbose=0)
    drawn = model.points["interior"].numpy()
    assert not np.allclose(drawn, start), "step 10 resampled"
    assert drawn.min() >= 0.0 and drawn.max() <= 1.0
    with pytest.raises(ValueError, match="EarlyStopping reads the trainer's history rows"):
        model.fit(epochs=1, steps_per_epoch=5, callbacks=[pinn.EarlyStopping()], verbose=0)
    with pytest.raises(ValueError, match=r"UniformResampling.every=7 must be a multiple of steps_per_epoch=5"):
        model.fit(epochs=1, steps_per_epoch=5, callbacks=[pinn.UniformResampling(every=7)], verbose=0)


def test_uniform_resampling_works_with_the_trainer_too():
    model = pinn.mlp(DOMAIN, width=8, depth=2, seed=0)
    trainer = pinn.Trainer(
        pinn.TrainingData(PROBLEM, 16, "sobol", 0),
        model,
        schedule=pinn.Schedule(steps_per_call=5, log_every=5, progress=False),
        callbacks=[pinn.UniformResampling(every=10)],
    )
    trainer.adam(15)
    drawn_at_step_10 = PROBLEM.sample_points(16, "sobol", 7919 * 10)["interior"]
    np.testing.assert_array_equal(trainer.data.points["interior"].numpy(), drawn_at_step_10)


def test_reference_error_metric_is_exact_over_batches():
    metric = ReferenceErrorMetric(dtype="float64")
    truth, guess = np.arange(1.0, 7.0), np.arange(1.0, 7.0) + np.array([0.1, 0, 0, -0.3, 0, 0.2])
    for part in range(3):
        metric.update_state(truth[2 * part : 2 * part + 2], guess[2 * part : 2 * part + 2, None])
    assert float(metric.result()) == pytest.approx(np.linalg.norm(guess - truth) / np.linalg.norm(truth), rel=1e-14)


def test_bad_arguments_are_named():
    model = model_of()
    with pytest.raises(ValueError, match="x and y must be None"):
        model.fit(np.zeros((4, 1)), epochs=1)
    with pytest.raises(ValueError, match="batch_size does not apply"):
        model.fit(epochs=1, batch_size=4)
    with pytest.raises(ValueError, match="the reference must be"):
        model.fit(epochs=1, validation_data=(np.zeros(4), np.zeros(4)))
    with pytest.raises(ValueError, match="built Keras model"):
        pinn.PINNModel(PROBLEM, keras.Sequential([keras.layers.Dense(1)]))
    with pytest.raises(TypeError, match="hodiff.pinn.Problem"):
        pinn.PINNModel("burgers", pinn.mlp(DOMAIN, width=4, depth=1))


CLIPPING_REPLICAS = """
import contextlib
import keras, numpy as np, tensorflow as tf
cpu = tf.config.list_physical_devices("CPU")[0]
tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
from hodiff import TrainStep
from hodiff.training import transforms

x, y = np.array([[20.0, 0.0], [0.0, 20.0]], "float32"), np.zeros((2, 1), "float32")  # loss -mean(w . x)

def keras_fit(strategy):
    with strategy.scope():
        model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1, use_bias=False, kernel_initializer="zeros")])
        model.compile(optimizer=keras.optimizers.SGD(1.0, global_clipnorm=1.0), loss=lambda y, p: -keras.ops.mean(p))
    model.fit(x, y, batch_size=2, epochs=1, verbose=0, shuffle=False)
    return model.get_weights()[0].ravel()

def hodiff_step(strategy):
    with strategy.scope() if strategy else contextlib.nullcontext():
        w, optimizer = tf.Variable(tf.zeros((2,))), keras.optimizers.SGD(1.0)
    loss = lambda x: -tf.reduce_mean(tf.linalg.matvec(x, w))
    TrainStep(loss, [w], optimizer, transform=transforms.clip_by_global_norm(1.0), strategy=strategy, monitor=False)(x)
    return w.numpy()

two = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
np.testing.assert_allclose(keras_fit(tf.distribute.OneDeviceStrategy("/cpu:0")), [0.5**0.5] * 2, rtol=1e-6)
np.testing.assert_allclose(keras_fit(two), [1.0, 1.0], rtol=1e-6)  # each replica clipped before the sum
np.testing.assert_allclose(hodiff_step(None), [0.5**0.5] * 2, rtol=1e-6)
np.testing.assert_allclose(hodiff_step(two), [0.5**0.5] * 2, rtol=1e-6)  # the mean clipped once
"""


def test_keras_clips_per_replica_hodiff_after_the_mean():
    """docs/keras.md's claim: under MirroredStrategy Keras 3 clips each replica's gradient
    (global_clipnorm) before the all-reduce; hodiff.TrainStep clips the mean over replicas."""
    process = subprocess.run([sys.executable, "-c", CLIPPING_REPLICAS], capture_output=True, text=True, timeout=240)
    assert process.returncode == 0, (process.stdout + process.stderr)[-3000:]


def test_stochastic_needs_draw_by_the_optimizer_step():
    """A Stochastic Laplacian is drawn from (seed, optimizer step): fit's step k uses physics_loss(k)'s draw."""
    from hodiff import operators

    square = pinn.Interval("x", -1.0, 1.0) * pinn.Interval("y", -1.0, 1.0)
    problem = pinn.Problem(
        square,
        needs=(pinn.Stochastic("lap_u", operators.Laplacian(), num_samples=1),),
        residual=lambda d, x, p: d["lap_u"] + 1.0,
        conditions=[pinn.Dirichlet(0.0, count=8)],
    )
    model = pinn.PINNModel(problem, pinn.mlp(square, width=8, depth=1), interior=8)
    model.compile(optimizer=keras.optimizers.Adam(1e-2), jit_compile=False)
    for step in range(2):
        drawn = float(model.physics_loss(step)[0])
        assert drawn == float(model.physics_loss(step)[0]) != float(model.physics_loss(step + 1)[0])
        history = model.fit(epochs=1, steps_per_epoch=1, verbose=0)
        assert history.history["loss"] == [pytest.approx(drawn, rel=1e-12)]
