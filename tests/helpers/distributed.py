"""Runs the step problem under a strategy in a fresh process (devices must be set before TF starts).

python distributed.py mirrored OUT.npz ACCUMULATE     # 2 logical CPU devices, 1 process
python distributed.py multiworker OUT.npz ACCUMULATE  # one worker; TF_CONFIG set by the caller
"""

import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np
import tensorflow as tf

from helpers.step_problem import train

if __name__ == "__main__":
    kind, output, accumulate = sys.argv[1], sys.argv[2], int(sys.argv[3])
    if kind == "mirrored":
        cpu = tf.config.list_physical_devices("CPU")[0]
        tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
        strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
    else:
        strategy = tf.distribute.MultiWorkerMirroredStrategy()
    weights, iterations, _ = train(strategy, accumulate=accumulate)
    np.savez(output, *weights, replicas=strategy.num_replicas_in_sync, iterations=iterations)
