"""Shared fixtures: the three execution modes, dtypes, and float32/float64 twin Keras MLPs."""

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras
import numpy as np
import pytest
import tensorflow as tf

from hodiff.checks import MODES, in_mode


@pytest.fixture(params=MODES)
def mode(request):
    """The execution mode: "eager", "graph" (tf.function) or "xla" (jit_compile=True)."""
    return request.param


@pytest.fixture
def run(mode):
    """run(fn, *args): calls fn in the current execution mode."""
    return lambda fn, *args: in_mode(fn, mode)(*args)


@pytest.fixture(params=["float32", "float64"])
def dtype(request):
    return tf.as_dtype(request.param)


def make_mlp(d_in, d_out=1, width=16, depth=2, activation="tanh", dtype="float64", seed=0):
    """A small Keras MLP with deterministic weights."""
    keras.utils.set_random_seed(seed)
    layers = [keras.Input((d_in,), dtype=dtype)]
    layers += [keras.layers.Dense(width, activation=activation, dtype=dtype) for _ in range(depth)]
    layers += [keras.layers.Dense(d_out, dtype=dtype)]
    return keras.Sequential(layers)


def mlp_twins(d_in, d_out=1, **kwargs):
    """(model in float64, same weights in float32): hodiff runs on either, scipy on the first."""
    model64 = make_mlp(d_in, d_out, dtype="float64", **kwargs)
    model32 = make_mlp(d_in, d_out, dtype="float32", **kwargs)
    model32.set_weights([w.astype(np.float32) for w in model64.get_weights()])
    return model64, model32


def points(n, d, dtype=tf.float64, seed=0):
    return tf.constant(np.random.default_rng(seed).uniform(-1.0, 1.0, size=(n, d)), dtype=dtype)
