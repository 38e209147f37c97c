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
from hodiff import transforms
from hodiff.checks import assert_close
from hodiff.step import TrainStep

HELPER = os.path.join(os.path.dirname(__file__), "helpers", "distributed.py")


def max_difference(a, b):
    return max(float(np.max(np.abs(x - y))) for x, y in zip(a, b))


def mlp(dtype="float64", seed=0):
    keras.utils.set_random_seed(seed)
    return keras.Sequential([keras.Input((2,), dtype=dtype), keras.layers.Dense(8, activation="tanh", dtype=dtype), keras.layers.Dense(1, dtype=dtype)])


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
    step = TrainStep(lambda x, y: tf.reduce_mean((model(x) - y) ** 2), model, optimizer, transform=transforms.accumulate(3))
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
    assert int(outputs["nan_count"]) > 0
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
        step = TrainStep(lambda x, y: tf.reduce_mean((model(x) - y) ** 2), model, keras.optimizers.Adam(0.05), steps_per_call=steps_per_call)
        losses = np.concatenate([step(x, y)["losses"].numpy() for _ in range(calls)])
        results.append(([w.numpy() for w in model.weights], losses))
    assert max_difference(results[0][0], results[1][0]) <= 1e-12
    assert_close(results[1][1], results[0][1], rtol=1e-12)
    assert results[1][1][-1] < results[1][1][0]


def test_per_step_batches_use_one_slice_per_step():
    variable = tf.Variable(0.0, dtype=tf.float64)
    step = TrainStep(lambda t: tf.reduce_sum((variable - t) ** 2), [variable], keras.optimizers.SGD(0.5), steps_per_call=3, per_step_batches=True)
    outputs = step(np.array([[1.0], [2.0], [3.0]]))
    # SGD with lr 0.5 on (v - t)^2 jumps to t each step: losses (0-1)^2, (1-2)^2, (2-3)^2
    assert_close(outputs["losses"], [1.0, 1.0, 1.0], rtol=1e-15)
    assert float(variable.numpy()) == 3.0


def test_plain_variable_list_and_gradient_statistics(tmp_path):
    w, unused = tf.Variable([1.0, -2.0]), tf.Variable(5.0)
    writer = tf.summary.create_file_writer(str(tmp_path))
    step = TrainStep(lambda: tf.reduce_sum(w**2), [w, unused], keras.optimizers.SGD(0.1), summary_writer=writer)
    outputs = step()
    assert outputs["missing"].numpy().tolist() == [False, True]
    assert_close(outputs["global_norm"], np.hypot(2.0, 4.0), rtol=1e-6)
    assert_close(w, [0.8, -1.6], rtol=1e-6)
    assert float(unused.numpy()) == 5.0
    assert any(name.startswith("events") for name in os.listdir(tmp_path))


def run_helper(kind, output, accumulate, env=None, wait=True):
    command = [sys.executable, HELPER, kind, str(output), str(accumulate)]
    process = subprocess.Popen(command, env={**os.environ, **(env or {})}, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    return process


def finish(process, timeout=240):
    log, _ = process.communicate(timeout=timeout)
    assert process.returncode == 0, log[-3000:]


def load(path):
    with np.load(path) as saved:
        return int(saved["replicas"]), int(saved["iterations"]), [saved[f"arr_{i}"] for i in range(len(saved.files) - 2)]


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
        processes.append(run_helper("multiworker", tmp_path / f"worker{index}.npz", 2, env={"TF_CONFIG": json.dumps(config)}))
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
    with pytest.raises(TypeError, match="transform must be a hodiff.transforms transform"):
        TrainStep(loss_fn, model, keras.optimizers.SGD(), transform=lambda g: g)
    with pytest.raises(ValueError, match="no variables to train.*keras.Input"):
        TrainStep(loss_fn, keras.Sequential([keras.layers.Dense(1)]), keras.optimizers.SGD())
    step = TrainStep(lambda x: model(x), model, keras.optimizers.SGD())
    with pytest.raises(ValueError, match="loss_fn: the function must return a scalar"):
        step(np.ones((3, 2)))
    step = TrainStep(loss_fn, model, keras.optimizers.SGD(), steps_per_call=2, per_step_batches=True)
    with pytest.raises(ValueError, match="leading axis of length steps_per_call=2"):
        step(np.ones((3, 2)))
