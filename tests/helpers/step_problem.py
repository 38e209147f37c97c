"""A small regression problem trained by TrainStep, shared by the distributed tests and workers."""

import contextlib

import keras
import numpy as np
import tensorflow as tf

from hodiff.training import transforms
from hodiff.training.step import TrainStep

GLOBAL_BATCH = 16


def data(seed=0):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(GLOBAL_BATCH, 2)), rng.normal(size=(GLOBAL_BATCH, 1))


def train(strategy=None, accumulate=1, calls=3, jit_compile=True):
    """Trains a float64 MLP; with accumulate=k each update sees k micro-batches of the batch."""
    with strategy.scope() if strategy else contextlib.nullcontext():
        keras.utils.set_random_seed(0)
        model = keras.Sequential(
            [
                keras.Input((2,), dtype="float64"),
                keras.layers.Dense(8, activation="tanh", dtype="float64"),
                keras.layers.Dense(1, dtype="float64"),
            ]
        )
        optimizer = keras.optimizers.Adam(0.1)
    transform = transforms.chain(
        transforms.skip_nonfinite(), transforms.accumulate(accumulate), transforms.clip_by_global_norm(0.5)
    )
    loss_fn = lambda x, y: tf.reduce_mean((model(x) - y) ** 2)
    step = TrainStep(loss_fn, model, optimizer, transform=transform, strategy=strategy, jit_compile=jit_compile)
    x, y = data()
    for _ in range(calls):
        for part in range(accumulate):
            outputs = step(x[part::accumulate], y[part::accumulate])
    return [w.numpy() for w in model.weights], int(optimizer.iterations.numpy()), outputs
