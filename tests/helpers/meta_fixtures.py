"""One small regression task and a tiny float64 MLP, flattened, shared by the meta-learning tests."""

import keras
import numpy as np
import tensorflow as tf

from hodiff.meta import FunctionalModel

RNG = np.random.default_rng(0)
SUPPORT = (tf.constant(RNG.uniform(-2, 2, (6, 1))), tf.constant(RNG.normal(size=(6, 1))))
QUERY = (tf.constant(RNG.uniform(-2, 2, (5, 1))), tf.constant(RNG.normal(size=(5, 1))))
mse = lambda prediction, target: tf.reduce_mean((prediction - target) ** 2)


def small_model(dtype="float64", seed=0):
    keras.utils.set_random_seed(seed)
    return keras.Sequential(
        [
            keras.Input((1,), dtype=dtype),
            keras.layers.Dense(4, activation="tanh", dtype=dtype),
            keras.layers.Dense(1, dtype=dtype),
        ]
    )


FUNCTIONAL = FunctionalModel(small_model())
SHAPES = [tuple(v.shape) for v in FUNCTIONAL.variables]
SIZES = [int(np.prod(s)) for s in SHAPES]
THETA = tf.constant(np.concatenate([v.numpy().ravel() for v in FUNCTIONAL.variables]))


def unflatten(theta):
    return [tf.reshape(part, shape) for part, shape in zip(tf.split(theta, SIZES), SHAPES)]
