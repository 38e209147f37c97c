"""pinn.Trainer under tf.distribute: 2 replicas (logical CPU devices, one process) and 2 worker
processes (MultiWorkerMirroredStrategy on localhost) train to the same weights as one device, after
Adam and after L-BFGS, with uneven shards, an unknown parameter, adaptive weights, resampling and a
resumed run. Logical devices need a fresh process, so the replicated runs are subprocesses
(tests/helpers/pinn_distributed.py); the one-device reference runs here."""

import contextlib
import json
import os
import socket
import subprocess
import sys

import keras
import numpy as np
import pytest
import tensorflow as tf
from helpers.pinn_distributed import ADAM_STEPS, LBFGS_ITERATIONS, train

from hodiff import operators, pinn

HELPER = os.path.join(os.path.dirname(__file__), "helpers", "pinn_distributed.py")
TOLERANCE = 1e-10


@pytest.fixture(scope="module")
def reference():
    return train(None)


def start(kind, *arguments, env=None):
    return subprocess.Popen(
        [sys.executable, HELPER, kind, *map(str, arguments)],
        env={**os.environ, **(env or {})},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def finish(process, timeout=300):
    log, _ = process.communicate(timeout=timeout)
    assert process.returncode == 0, log[-3000:]


def max_difference(a, b):
    return max(float(np.max(np.abs(x - y))) for x, y in zip(a, b))


def check_same(saved, reference, prefix=""):
    count = len(reference["adam"])
    for phase in ("adam", "lbfgs"):
        weights = [saved[f"{prefix}{phase}_{i}"] for i in range(count)]
        assert max_difference(weights, reference[phase]) <= TOLERANCE, phase
    assert int(saved[f"{prefix}nit"]) == reference["nit"] == LBFGS_ITERATIONS
    assert len(saved[f"{prefix}losses"]) == len(reference["losses"]) == ADAM_STEPS // 10 + 2
    np.testing.assert_allclose(saved[f"{prefix}losses"], reference["losses"], rtol=TOLERANCE, atol=0)
    np.testing.assert_allclose(saved[f"{prefix}loss_weights"], reference["loss_weights"], rtol=TOLERANCE)
    np.testing.assert_array_equal(saved[f"{prefix}interior"], reference["interior"])  # the same resampled points
    # the stall diagnostic's gradient norms (over all points, cross-replica) equal one device's
    np.testing.assert_allclose(saved[f"{prefix}gradient_norms"], reference["gradient_norms"], rtol=1e-8)


def test_two_replicas_train_as_one_device_after_adam_and_lbfgs_and_after_a_resume(tmp_path, reference):
    finish(start("mirrored", tmp_path / "out.npz", tmp_path / "run"))
    with np.load(tmp_path / "out.npz") as saved:
        assert int(saved["replicas"]) == int(saved["resumed_replicas"]) == 2
        check_same(saved, reference)
        check_same(saved, reference, "resumed_")
    assert max(reference["loss_weights"]) != 1.0, "adaptive weights moved"


def free_ports(count):
    sockets = [socket.socket() for _ in range(count)]
    for s in sockets:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in sockets]
    for s in sockets:
        s.close()
    return ports


def test_two_worker_processes_train_as_one_device(tmp_path, reference):
    workers = [f"127.0.0.1:{port}" for port in free_ports(2)]
    processes = [
        start(
            "multiworker",
            tmp_path / f"worker{index}.npz",
            env={"TF_CONFIG": json.dumps({"cluster": {"worker": workers}, "task": {"type": "worker", "index": index}})},
        )
        for index in range(2)
    ]
    for process in processes:
        finish(process)
    for index in range(2):
        with np.load(tmp_path / f"worker{index}.npz") as saved:
            assert int(saved["replicas"]) == 2
            check_same(saved, reference)


def one_device_strategy():
    return tf.distribute.MirroredStrategy(["/cpu:0"])


def test_one_replica_strategy_equals_no_strategy_with_stochastic_needs():
    """Replica 0 draws what one device draws (XLA both ways), so one replica reproduces the plain run."""
    domain = pinn.Box({"x1": (0.0, 1.0), "x2": (0.0, 1.0), "x3": (0.0, 1.0)})
    problem = pinn.Problem(
        domain,
        needs=(pinn.Stochastic("lap_u", operators.Laplacian(), num_samples=2),),
        residual=lambda d, x, p: d["lap_u"] + 1.0,
        conditions=[pinn.Dirichlet(0.0, count=12)],
    )
    results = []
    for strategy in (None, one_device_strategy()):
        with strategy.scope() if strategy else contextlib.nullcontext():
            keras.utils.set_random_seed(1)
            model = pinn.mlp(domain, width=6, depth=1, dtype="float64")
        run = pinn.Trainer(
            problem, model, interior=16, steps_per_call=5, log_every=5, progress=False, strategy=strategy
        )
        run.adam(10)
        run.lbfgs(3)
        results.append(([v.numpy() for v in run.variables], [row["loss"] for row in run.history]))
    assert max_difference(results[0][0], results[1][0]) <= TOLERANCE
    np.testing.assert_allclose(results[1][1], results[0][1], rtol=TOLERANCE)


def test_bad_strategy_arguments_say_how_to_fix_them():
    strategy = one_device_strategy()
    domain = pinn.Interval("x", 0.0, 1.0) * pinn.TimeDomain("t", 0.0, 1.0)
    problem = pinn.Problem(domain, needs=("u_t",), residual=lambda d, x, p: d["u_t"])
    outside = pinn.mlp(domain, width=4, depth=1)
    with pytest.raises(TypeError, match="strategy must be a tf.distribute strategy"):
        pinn.Trainer(problem, outside, interior=8, progress=False, strategy="mirrored")
    with pytest.raises(ValueError, match="not created under strategy.scope"):
        pinn.Trainer(problem, outside, interior=8, progress=False, strategy=strategy)
    with strategy.scope():
        model = pinn.mlp(domain, width=4, depth=1)
    with pytest.raises(ValueError, match="the optimizer was not created under strategy.scope"):
        optimizer = keras.optimizers.SGD(0.1)
        pinn.Trainer(problem, model, interior=8, progress=False, strategy=strategy, optimizer=optimizer)
    causal = problem.replace(causal=pinn.CausalWeights(epsilon=1.0, bins=4))
    with pytest.raises(ValueError, match="causal weights need the residuals of all points"):
        pinn.Trainer(causal, model, interior=8, progress=False, strategy=strategy)
