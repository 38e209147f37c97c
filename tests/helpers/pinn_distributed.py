"""A small PINN trained under a tf.distribute strategy, in a fresh process (devices are set before TF starts).

python pinn_distributed.py mirrored OUT.npz [RUN_DIR]  # 2 logical CPU devices in one process
python pinn_distributed.py multiworker OUT.npz         # one worker of the TF_CONFIG cluster

The tests compare OUT.npz with :func:`train` on one device. With RUN_DIR the mirrored run is also
interrupted after 20 Adam steps and resumed from its checkpoint (``resumed_*`` arrays).
"""

import contextlib
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras
import numpy as np
import tensorflow as tf

from hodiff import pinn

ADAM_STEPS, LBFGS_ITERATIONS = 40, 15


def trainer(strategy=None, output_dir=None, resume=False):
    """Heat with an unknown diffusivity; 65 interior, 33 initial and 17 boundary points (uneven shards),
    adaptive weights and resampling every 20 steps."""
    domain = pinn.Interval("x", -1.0, 1.0) * pinn.TimeDomain("t", 0.0, 1.0)
    problem = pinn.Problem(
        domain,
        needs=("u_t", "u_xx"),
        residual=lambda d, x, p: d["u_t"] - p["k"] * d["u_xx"],
        conditions=[pinn.Initial(lambda x: tf.sin(np.pi * x["x"]), count=33), pinn.Dirichlet(0.0, count=17)],
        parameters={"k": 0.2},
    )
    with strategy.scope() if strategy is not None else contextlib.nullcontext():
        keras.utils.set_random_seed(0)
        model = pinn.mlp(domain, width=8, depth=2, dtype="float64")
    return pinn.Trainer(
        problem,
        model,
        interior=65,
        learning_rate=1e-2,
        steps_per_call=10,
        log_every=10,
        checkpoint_every=10,
        adaptive_weights=pinn.AdaptiveWeights(every=20),
        resampling=pinn.ResidualResampling(every=20, candidates=512),
        output_dir=output_dir,
        resume=resume,
        progress=False,
        strategy=strategy,
    )


def train(strategy=None, output_dir=None, interrupt=False):
    """``{"adam": weights after Adam, "lbfgs": weights after L-BFGS, "losses": history losses, "nit": ...}``."""
    if interrupt:
        trainer(strategy, output_dir).adam(ADAM_STEPS // 2)
    run = trainer(strategy, output_dir, resume=interrupt)
    run.adam(ADAM_STEPS)
    adam = [v.numpy() for v in run.variables]
    result = run.lbfgs(LBFGS_ITERATIONS)
    return {
        "adam": adam,
        "lbfgs": [v.numpy() for v in run.variables],
        "losses": np.array([row["loss"] for row in run.history]),
        "nit": result.nit,
        "replicas": run.replicas,
        "loss_weights": np.array([float(w.numpy()) for w in run.weights.values()]),
        "interior": run.interior.numpy(),
        "gradient_norms": np.array([v for k, v in run.data.gradients().items() if k != "cosines"]),  # diagnostic
    }


def flatten(results, prefix=""):
    arrays = {}
    for key, value in results.items():
        if isinstance(value, list):
            arrays.update({f"{prefix}{key}_{i}": v for i, v in enumerate(value)})
        else:
            arrays[f"{prefix}{key}"] = np.asarray(value)
    return arrays


if __name__ == "__main__":
    kind, output = sys.argv[1], sys.argv[2]
    if kind == "mirrored":
        cpu = tf.config.list_physical_devices("CPU")[0]
        tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
        strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
    else:
        strategy = tf.distribute.MultiWorkerMirroredStrategy()
    arrays = flatten(train(strategy))
    if len(sys.argv) > 3:
        arrays.update(flatten(train(strategy, sys.argv[3], interrupt=True), "resumed_"))
    np.savez(output, **arrays)
