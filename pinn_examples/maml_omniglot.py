"""MAML on Omniglot-shaped few-shot classification: Finn et al. (2017)'s 4-block CNN."""

from __future__ import annotations

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras
import tensorflow as tf


def conv_network(
    ways: int = 5, filters: int = 64, size: int = 28, seed: int = 0, dtype: str = "float32"
) -> keras.Model:
    """Finn et al. (2017)'s Omniglot network: 4 blocks of 3x3 convolution (``filters``), batch
    normalisation, ReLU and 2x2 max-pooling, then a dense ``ways``-way head (logits)."""
    keras.utils.set_random_seed(seed)
    layers: list = [keras.Input((size, size, 1), dtype=dtype)]
    for _ in range(4):
        layers += [
            keras.layers.Conv2D(filters, 3, padding="same", dtype=dtype),
            keras.layers.BatchNormalization(dtype=dtype),
            keras.layers.ReLU(dtype=dtype),
            keras.layers.MaxPooling2D(2, dtype=dtype),
        ]
    layers += [keras.layers.Flatten(dtype=dtype), keras.layers.Dense(ways, dtype=dtype)]
    return keras.Sequential(layers)


def cross_entropy(logits: tf.Tensor, labels: tf.Tensor) -> tf.Tensor:
    """Mean softmax cross-entropy of integer labels (half-precision logits in float32)."""
    logits = tf.cast(logits, tf.float32) if logits.dtype in (tf.float16, tf.bfloat16) else logits
    return tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(tf.cast(labels, tf.int32), logits))
