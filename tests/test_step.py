"""TrainStep: compiled multi-step loops, accumulation, skipping, and tf.distribute equality."""

import json
import os
import socket
import subprocess
import sys

import keras
import numpy as np
import pytest
import tensorflow as tf
from helpers.step_problem import train

from hodiff.checks import assert_close
from hodiff.training import transforms
from hodiff.training.monitor import GradientStats, gradient_stats
from hodiff.training.step import TrainStep

HELPER = os.path.join(os.path.dirname(__file__), "helpers", "distributed.py")


def max_difference(a, b):
    return max(float(np.max(np.abs(x - y))) for x, y in zip(a, b))


def mlp(dtype="float64", seed=0):
    keras.utils.set_random_seed(seed)
    return keras.Sequential(
        [
            keras.Input((2,), dtype=dtype),
            keras.layers.Dense(8, activation="tanh", dtype=dtype),
            keras.layers.Dense(1, dtype=dtype),
        ]
    )


@pytest.mark.parametrize("jit_compile", [False, True])
def test_accumulating_micro_batches_equals_one_large_batch(jit_compile):
    reference, iterations, _ = train(accumulate=1, jit_compile=jit_compile)
    accumulated, accumulated_iterations, outputs = train(accumulate=4, jit_compile=jit_compile)
    assert iterations == accumulated_iterations == 3, "the optimizer steps once per real update"
    assert max_difference(reference, accumulated) <= 1e-10
    assert bool(outputs["applied"]) and int(outputs["accumulated"]) == 4


def test_learning_rate_schedule_advances_once_per_real_update():
    model = mlp()
    schedule = keras.optimizers.schedules.ExponentialDecay(0.1, decay_steps=1, decay_rate=0.5)
    optimizer = keras.optimizers.SGD(schedule)
    x, y = np.ones((4, 2)), np.zeros((4, 1))
    step = TrainStep(
        lambda x, y: tf.reduce_mean((model(x) - y) ** 2), model, optimizer, transform=transforms.accumulate(3)
    )
    applied = [bool(step(x, y)["applied"]) for _ in range(6)]
    assert applied == [False, False, True, False, False, True]
    assert int(optimizer.iterations.numpy()) == 2
    assert_close(optimizer.learning_rate, 0.1 * 0.5**2, rtol=1e-6)


def test_nan_step_leaves_variables_and_optimizer_slots_bit_identical(mode):
    model = mlp()
    optimizer = keras.optimizers.Adam(0.01)
    scale = tf.Variable(1.0, dtype=tf.float64)
    loss_fn = lambda x, y: scale * tf.reduce_mean((model(x) - y) ** 2)
    transform = transforms.chain(transforms.skip_nonfinite(), transforms.clip_by_global_norm(1.0))
    step = TrainStep(loss_fn, model, optimizer, transform=transform, jit_compile=mode == "xla")
    x, y = np.ones((4, 2)), np.zeros((4, 1))
    step(x, y)
    before = [v.numpy().copy() for v in model.weights + optimizer.variables]
    scale.assign(np.nan)
    for _ in range(2):
        outputs = step(x, y)
    assert not bool(outputs["applied"]) and bool(outputs["skipped"])
    assert int(outputs["consecutive_skips"]) == 2 and int(outputs["total_skips"]) == 2
    assert int(outputs["gradient_stats"]["nan_count"]) > 0
    after = [v.numpy() for v in model.weights + optimizer.variables]
    assert all(np.array_equal(b, a) for b, a in zip(before, after)), "a skipped step must not touch any state"
    scale.assign(1.0)
    outputs = step(x, y)
    assert bool(outputs["applied"]) and int(outputs["consecutive_skips"]) == 0 and int(outputs["total_skips"]) == 2


def test_steps_per_call_equals_repeated_single_steps():
    x, y = np.random.default_rng(1).normal(size=(8, 2)), np.random.default_rng(2).normal(size=(8, 1))
    results = []
    for steps_per_call, calls in ((1, 5), (5, 1)):
        model = mlp()
        step = TrainStep(
            lambda x, y, model=model: tf.reduce_mean((model(x) - y) ** 2),
            model,
            keras.optimizers.Adam(0.05),
            steps_per_call=steps_per_call,
        )
        losses = np.concatenate([step(x, y)["losses"].numpy() for _ in range(calls)])
        results.append(([w.numpy() for w in model.weights], losses))
    assert max_difference(results[0][0], results[1][0]) <= 1e-12
    assert_close(results[1][1], results[0][1], rtol=1e-12)
    assert results[1][1][-1] < results[1][1][0]


def test_per_step_batches_use_one_slice_per_step():
    variable = tf.Variable(0.0, dtype=tf.float64)
    step = TrainStep(
        lambda t: tf.reduce_sum((variable - t) ** 2),
        [variable],
        keras.optimizers.SGD(0.5),
        steps_per_call=3,
        per_step_batches=True,
    )
    outputs = step(np.array([[1.0], [2.0], [3.0]]))
    # SGD with lr 0.5 on (v - t)^2 jumps to t each step: losses (0-1)^2, (1-2)^2, (2-3)^2
    assert_close(outputs["losses"], [1.0, 1.0, 1.0], rtol=1e-15)
    assert float(variable.numpy()) == 3.0


def test_plain_variable_list_and_gradient_statistics(tmp_path):
    w, unused = tf.Variable([1.0, -2.0]), tf.Variable(5.0)
    writer = tf.summary.create_file_writer(str(tmp_path))
    step = TrainStep(lambda: tf.reduce_sum(w**2), [w, unused], keras.optimizers.SGD(0.1), summary_writer=writer)
    outputs = step()
    assert outputs["gradient_stats"]["missing"].numpy().tolist() == [False, True]
    assert_close(outputs["gradient_stats"]["global_norm"], np.hypot(2.0, 4.0), rtol=1e-6)
    assert_close(w, [0.8, -1.6], rtol=1e-6)
    assert float(unused.numpy()) == 5.0
    assert any(name.startswith("events") for name in os.listdir(tmp_path))


def run_helper(kind, output, accumulate, env=None, wait=True):
    command = [sys.executable, HELPER, kind, str(output), str(accumulate)]
    process = subprocess.Popen(
        command, env={**os.environ, **(env or {})}, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    return process


def finish(process, timeout=240):
    log, _ = process.communicate(timeout=timeout)
    assert process.returncode == 0, log[-3000:]


def load(path):
    with np.load(path) as saved:
        return (
            int(saved["replicas"]),
            int(saved["iterations"]),
            [saved[f"arr_{i}"] for i in range(len(saved.files) - 2)],
        )


@pytest.mark.parametrize("accumulate", [1, 2])
def test_mirrored_strategy_on_two_cpus_equals_one_replica(tmp_path, accumulate):
    finish(run_helper("mirrored", tmp_path / "out.npz", accumulate))
    replicas, iterations, weights = load(tmp_path / "out.npz")
    reference, reference_iterations, _ = train(accumulate=accumulate)
    assert replicas == 2 and iterations == reference_iterations
    assert max_difference(weights, reference) <= 1e-12


def free_ports(count):
    sockets = [socket.socket() for _ in range(count)]
    for s in sockets:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in sockets]
    for s in sockets:
        s.close()
    return ports


def test_multi_worker_mirrored_strategy_with_two_processes_equals_one_replica(tmp_path):
    workers = [f"127.0.0.1:{port}" for port in free_ports(2)]
    processes = []
    for index in range(2):
        config = {"cluster": {"worker": workers}, "task": {"type": "worker", "index": index}}
        processes.append(
            run_helper("multiworker", tmp_path / f"worker{index}.npz", 2, env={"TF_CONFIG": json.dumps(config)})
        )
    for process in processes:
        finish(process)
    reference, reference_iterations, _ = train(accumulate=2)
    for index in range(2):
        replicas, iterations, weights = load(tmp_path / f"worker{index}.npz")
        assert replicas == 2 and iterations == reference_iterations
        assert max_difference(weights, reference) <= 1e-12


def test_bad_input():
    model = mlp()
    loss_fn = lambda x: tf.reduce_mean(model(x))
    with pytest.raises(ValueError, match="steps_per_call must be an int >= 1"):
        TrainStep(loss_fn, model, keras.optimizers.SGD(), steps_per_call=0)
    with pytest.raises(TypeError, match="transform must be a hodiff.training.transforms transform"):
        TrainStep(loss_fn, model, keras.optimizers.SGD(), transform=lambda g: g)
    with pytest.raises(ValueError, match="no variables to train.*keras.Input"):
        TrainStep(loss_fn, keras.Sequential([keras.layers.Dense(1)]), keras.optimizers.SGD())
    step = TrainStep(lambda x: model(x), model, keras.optimizers.SGD())
    with pytest.raises(ValueError, match="loss_fn: the function must return a scalar"):
        step(np.ones((3, 2)))
    step = TrainStep(loss_fn, model, keras.optimizers.SGD(), steps_per_call=2, per_step_batches=True)
    with pytest.raises(ValueError, match="leading axis of length steps_per_call=2"):
        step(np.ones((3, 2)))


def loss_scaled(optimizer, **kwargs):
    return keras.optimizers.LossScaleOptimizer(optimizer, **kwargs)


def regression_step(optimizer, transform=None, jit_compile=True, dtype="float32"):
    model = mlp(dtype)
    loss_fn = lambda x, y: keras.ops.mean((model(x) - y) ** 2)
    return model, TrainStep(loss_fn, model, optimizer, transform=transform, jit_compile=jit_compile)


XY = (
    np.random.default_rng(3).normal(size=(16, 2)).astype("float32"),
    np.random.default_rng(4).normal(size=(16, 1)).astype("float32"),
)


@pytest.mark.parametrize("jit_compile", [False, True])
def test_loss_scale_optimizer_applies_the_unscaled_update_and_clips_true_gradients(jit_compile):
    results = []
    for optimizer in (keras.optimizers.SGD(0.1, momentum=0.9), loss_scaled(keras.optimizers.SGD(0.1, momentum=0.9))):
        model, step = regression_step(optimizer, transforms.clip_by_global_norm(0.3), jit_compile)
        outputs = [step(*XY) for _ in range(3)]
        results.append(([w.numpy() for w in model.weights], outputs))
    (plain, plain_outputs), (scaled, scaled_outputs) = results
    assert max_difference(plain, scaled) <= 1e-6
    for a, b in zip(plain_outputs, scaled_outputs):
        assert float(a["global_norm"]) > 0.3, "clipping is active"
        assert_close(b["global_norm"], a["global_norm"], rtol=1e-5)  # the transform saw true gradients
        assert_close(b["gradient_stats"]["global_norm"], a["gradient_stats"]["global_norm"], rtol=1e-5)
        assert float(b["loss_scale"]) == 2.0**15 and bool(b["applied"])


def test_float16_loss_that_underflows_trains_with_loss_scaling():
    def run(optimizer):
        keras.utils.set_random_seed(0)
        model = keras.Sequential(
            [
                keras.Input((2,)),
                keras.layers.Dense(8, activation="tanh", dtype="mixed_float16"),
                keras.layers.Dense(1, dtype="mixed_float16"),
            ]
        )
        x = XY[0]
        y = 0.5 * x[:, :1] - x[:, 1:]
        mse = lambda: float(np.mean((model(x).numpy().astype(np.float64) - y) ** 2))
        # a float16 loss so small that its gradient underflows to zero in the float16 backward pass
        loss_fn = lambda x, y: 1e-7 * keras.ops.mean((model(x) - keras.ops.cast(y, "float16")) ** 2)
        step = TrainStep(loss_fn, model, optimizer, steps_per_call=50)
        before, error = [w.numpy().copy() for w in model.trainable_variables], mse()
        outputs = step(x, y)
        assert all(w.dtype == "float32" for w in model.trainable_variables) and outputs["loss"].dtype == tf.float32
        return max_difference(before, [w.numpy() for w in model.trainable_variables]), mse() / error

    moved, _ = run(keras.optimizers.Adam(1e-2))
    assert moved == 0.0, "without loss scaling every gradient underflows"
    moved, reduction = run(loss_scaled(keras.optimizers.Adam(1e-2)))
    assert moved > 1e-2 and reduction < 0.8, "it trains (without scaling it cannot move at all)"


@pytest.mark.parametrize("jit_compile", [False, True])
def test_overflowing_scaled_gradient_skips_the_step_and_halves_the_scale(jit_compile):
    w, factor = tf.Variable([1.0, 2.0]), tf.Variable(1.0)
    optimizer = loss_scaled(keras.optimizers.SGD(0.1), dynamic_growth_steps=2)
    transform = transforms.chain(transforms.skip_nonfinite(), transforms.accumulate(1))
    step = TrainStep(lambda: factor * tf.reduce_sum(w**2), [w], optimizer, transform=transform, jit_compile=jit_compile)
    factor.assign(1e35)  # true gradient 4e35 is finite in float32, scaled by 2^15 it is not
    outputs = step()
    assert not bool(outputs["applied"]) and float(optimizer.dynamic_scale) == 2.0**14
    assert int(optimizer.iterations) == 0 and w.numpy().tolist() == [1.0, 2.0]
    assert int(outputs["total_skips"]) == 0 and int(outputs["accumulated"]) == 0, "an overflow is not a divergence"
    factor.assign(1.0)
    for scale in (2.0**14, 2.0**15):  # two finite steps in a row double the scale
        outputs = step()
        assert bool(outputs["applied"]) and float(optimizer.dynamic_scale) == scale
    assert int(optimizer.iterations) == 2
    assert_close(w, np.array([1.0, 2.0]) * 0.8**2, rtol=1e-6)


@pytest.mark.parametrize("jit_compile", [False, True])
def test_empty_batch_is_not_a_step(jit_compile):
    transform = transforms.chain(transforms.skip_nonfinite(), transforms.accumulate(2))
    model, step = regression_step(
        loss_scaled(keras.optimizers.Adam(0.1), dynamic_growth_steps=1), transform, jit_compile
    )
    before = [v.numpy().copy() for v in model.weights + step.optimizer.variables]
    x, y = XY
    dynamic = tf.function(step, input_signature=[tf.TensorSpec((None, 2)), tf.TensorSpec((None, 1))])
    for call in (step, dynamic):
        outputs = call(x[:0], y[:0])
        assert not bool(outputs["applied"]) and int(outputs["accumulated"]) == 0 and int(outputs["total_skips"]) == 0
    assert all(np.array_equal(b, v.numpy()) for b, v in zip(before, model.weights + step.optimizer.variables))
    assert int(step.optimizer.iterations) == 0
    for _ in range(2):
        outputs = dynamic(x, y)
    assert bool(outputs["applied"]) and int(step.optimizer.iterations) == 1


LOSS_SCALED_REPLICAS = """
import contextlib
import keras, numpy as np, tensorflow as tf
from hodiff.training import transforms
from hodiff.training.step import TrainStep
cpu = tf.config.list_physical_devices("CPU")[0]
tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)

def train(strategy):
    with strategy.scope() if strategy else contextlib.nullcontext():
        keras.utils.set_random_seed(0)
        model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(8, activation="tanh"), keras.layers.Dense(1)])
        optimizer = keras.optimizers.LossScaleOptimizer(keras.optimizers.SGD(0.1), dynamic_growth_steps=2)
        factor = tf.Variable(1.0)
    loss_fn = lambda x, y: factor * tf.reduce_mean((model(x) - y) ** 2)
    step = TrainStep(loss_fn, model, optimizer, transform=transforms.clip_by_global_norm(0.5), strategy=strategy)
    rng = np.random.default_rng(0)
    x, y = rng.normal(size=(16, 2)).astype("float32"), rng.normal(size=(16, 1)).astype("float32")
    applied = []
    for value in (1.0, 1e35, 1.0, 1.0):
        factor.assign(value)
        applied.append(bool(step(x, y)["applied"]))
    scale, iterations = float(optimizer.dynamic_scale.numpy()), int(optimizer.iterations.numpy())
    return [w.numpy() for w in model.weights], applied, scale, iterations

weights, applied, scale, iterations = train(tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"]))
reference, reference_applied, reference_scale, reference_iterations = train(None)
assert applied == reference_applied == [True, False, True, True], (applied, reference_applied)
assert scale == reference_scale == 2.0**15 and iterations == reference_iterations == 3, (scale, iterations)
assert max(float(np.max(np.abs(a - b))) for a, b in zip(weights, reference)) <= 1e-6
"""


def test_loss_scaling_under_mirrored_strategy_equals_one_replica():
    process = subprocess.run([sys.executable, "-c", LOSS_SCALED_REPLICAS], capture_output=True, text=True, timeout=240)
    assert process.returncode == 0, (process.stdout + process.stderr)[-3000:]


@pytest.mark.parametrize("jit_compile", [False, True])
def test_monitor_and_clipping_norms_are_reported_apart(jit_compile):
    w = tf.Variable([0.0, 0.0])
    transform = transforms.chain(transforms.accumulate(2), transforms.clip_by_global_norm(1.0))
    step = TrainStep(
        lambda t: tf.reduce_sum(w * t), [w], keras.optimizers.SGD(1.0), transform=transform, jit_compile=jit_compile
    )
    step(np.array([3.0, 4.0], "float32"))
    outputs = step(np.array([0.0, 0.0], "float32"))
    assert float(outputs["gradient_stats"]["global_norm"]) == 0.0  # this micro-batch's raw gradient
    assert_close(outputs["global_norm"], 2.5, rtol=1e-6)  # the accumulated mean [1.5, 2] that was clipped
    assert_close(w, [-0.6, -0.8], rtol=1e-6)


@pytest.mark.parametrize("monitor", [True, False])
@pytest.mark.parametrize("jit_compile", [False, True])
def test_non_finite_micro_batch_is_dropped_and_the_update_waits_for_a_finite_one(jit_compile, monitor):
    w, scale = tf.Variable([0.0, 0.0]), tf.Variable(1.0)
    transform = transforms.chain(
        transforms.skip_nonfinite(), transforms.accumulate(2), transforms.clip_by_global_norm(10.0)
    )
    step = TrainStep(
        lambda t: scale * tf.reduce_sum(w * t),  # gradient scale * t
        [w],
        keras.optimizers.SGD(1.0),
        transform=transform,
        jit_compile=jit_compile,
        monitor=monitor,  # the skip test reuses the monitor's NaN/Inf counts, or makes its own pass
    )
    outputs = []
    for value, t in ((1.0, [1.0, 2.0]), (np.nan, [5.0, 5.0]), (1.0, [3.0, 4.0]), (1.0, [1.0, 1.0]), (1.0, [1.0, 1.0])):
        scale.assign(value)
        outputs.append(step(np.array(t, "float32")))
    assert [bool(o["applied"]) for o in outputs] == [False, False, True, False, True]
    assert [bool(o["skipped"]) for o in outputs] == [False, True, False, False, False]
    assert [int(o["accumulated"]) for o in outputs] == [1, 1, 2, 1, 2]
    # clipping runs only on updates; on the other calls it reports its value for zero gradients
    assert_close(
        [float(o["global_norm"]) for o in outputs], [0.0, 0.0, np.hypot(2.0, 3.0), 0.0, np.sqrt(2.0)], rtol=1e-6
    )
    assert_close(w, [-3.0, -4.0], rtol=1e-6)  # means [2, 3] and [1, 1]: the NaN never reached the sums
    assert int(outputs[-1]["total_skips"]) == 1 and int(step.optimizer.iterations) == 2
    assert step._compiled.experimental_get_tracing_count() == 1, "one trace for every call of the same shapes"
    assert len(step._signatures) == 1


def test_functions_run_eagerly_for_debugging_still_train():
    w = tf.Variable([1.0, -2.0])
    step = TrainStep(lambda: tf.reduce_sum(w**2), [w], keras.optimizers.SGD(0.1), transform=transforms.accumulate(1))
    tf.config.run_functions_eagerly(True)
    try:
        outputs = step()
    finally:
        tf.config.run_functions_eagerly(False)
    assert bool(outputs["applied"]) and not step._signatures, "no concrete function: the step ran eagerly"
    assert_close(w, [0.8, -1.6], rtol=1e-6)


def test_eager_calls_skip_the_concrete_functions_binding_except_under_a_tape(monkeypatch):
    """Called eagerly, the step runs its concrete function from the flat inputs (no argument
    binding): the same updates as the tf.function, one trace; under a tape it goes through
    ``ConcreteFunction.__call__`` as before, which records the call."""
    weights = [tf.Variable([1.0, -2.0]), tf.Variable([1.0, -2.0])]
    steps = [TrainStep(lambda x, w=w: tf.reduce_sum(w * x) ** 2, [w], keras.optimizers.Adam(0.1)) for w in weights]
    concrete_type = type(steps[0]._compiled.get_concrete_function(tf.constant([0.0, 0.0])))
    bound = []
    original = concrete_type.__call__
    monkeypatch.setattr(concrete_type, "__call__", lambda self, *a, **k: bound.append(1) or original(self, *a, **k))
    for values in ([1.0, 2.0], [0.5, -1.0], [2.0, 2.0]):
        x = tf.constant(values)
        fast, reference = steps[0]._call_local((x,)), steps[1]._compiled(x)  # what __call__ gets from each path
        tf.nest.assert_same_structure(fast, reference)
        for index, (a, b) in enumerate(zip(tf.nest.flatten(fast), tf.nest.flatten(reference))):
            assert a.dtype == b.dtype and a.shape == b.shape, index
            assert_close(tf.cast(a, tf.float64), tf.cast(b, tf.float64), rtol=1e-6, what=f"output {index}")
    assert_close(weights[0], weights[1], rtol=1e-6)
    assert not bound, "ConcreteFunction.__call__ was used for plain eager calls"
    assert steps[0]._compiled.experimental_get_tracing_count() == 1 and len(steps[0]._signatures) == 1
    objective = lambda x: tf.reduce_sum(weights[0] * x) ** 2
    graph = TrainStep(objective, [weights[0]], keras.optimizers.SGD(0.1), jit_compile=False)
    expected = float(graph(x)["loss"])  # XLA cannot compile the recorded call's forward function, hence a graph step
    assert not bound
    with tf.GradientTape():  # an active tape, even one that watches nothing yet
        loss = graph(x)["loss"]
    assert bound, "under a tape the call goes through ConcreteFunction.__call__, which records it"
    assert float(loss) < expected and graph._compiled.experimental_get_tracing_count() == 1


def op_types(step, *batch):
    """The op types of the step's traced graph and the functions it calls (the XLA cluster's body included)."""
    graph = step._compiled.get_concrete_function(*batch).graph
    types = {op.type for op in graph.get_operations()}
    for function in graph.as_graph_def().library.function:
        types |= {node.op for node in function.node_def}
    return types


@pytest.mark.parametrize("steps_per_call", [1, 3])
def test_the_monitor_costs_no_kernel_of_the_step_and_its_statistics_are_computed_when_read(steps_per_call):
    """The default monitor (issue 46 item 7): the compiled step only returns its gradients, so a call whose
    statistics are not read runs what monitor=False runs; reading them gives gradient_stats of the step's own
    gradients (checked against a tape's), in eager mode, inside a tf.function, through tf.nest."""
    x = tf.constant(np.random.default_rng(0).normal(size=(8, 2)))
    y = tf.constant(np.random.default_rng(1).normal(size=(8, 1)))
    steps = []
    for monitor in (True, False):
        model = mlp()
        loss = lambda x, y, model=model: tf.reduce_mean((model(x) - y) ** 2)
        steps.append(
            (
                model,
                loss,
                TrainStep(loss, model, keras.optimizers.SGD(0.0), monitor=monitor, steps_per_call=steps_per_call),
            )
        )
    (model, loss, monitored), (_, _, quiet) = steps
    extra = op_types(monitored, x, y) - op_types(quiet, x, y)
    assert not extra & {"Abs", "IsNan", "IsInf", "IsFinite", "Max", "If", "StatelessIf", "Sqrt"}, extra
    with tf.GradientTape() as tape:
        expected = gradient_stats(tape.gradient(loss(x, y), model.trainable_variables))
    out = monitored(x, y)  # SGD(0): the weights do not move, so every step of the call has these gradients
    stats = out["gradient_stats"]
    assert isinstance(stats, GradientStats) and not stats.computed
    assert sorted(stats) == sorted(expected) and not stats.computed  # the keys, without computing
    for key in ("global_norm", "norms", "mean_abs", "max_abs"):
        assert_close(stats[key], expected[key], rtol=1e-12, what=key)
    assert stats.computed and int(stats["nan_count"]) == 0 and stats["missing"].numpy().tolist() == [False] * 4
    assert "gradient_stats" not in quiet(x, y)
    inside = tf.function(lambda x, y: monitored(x, y)["gradient_stats"]["global_norm"])(x, y)
    assert_close(inside, expected["global_norm"], rtol=1e-12)
    copied = tf.nest.map_structure(lambda t: t, monitored(x, y))  # rebuilt by tf.nest: computed, same values
    assert_close(copied["gradient_stats"]["global_norm"], expected["global_norm"], rtol=1e-12)
    returned = tf.function(lambda x, y: monitored(x, y))(x, y)  # returned from a tf.function: computed in it
    assert_close(returned["gradient_stats"]["norms"], expected["norms"], rtol=1e-12)
