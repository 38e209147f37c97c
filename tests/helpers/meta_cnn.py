"""Hand-written references for the MAML CNN: its forward pass in plain TensorFlow ops and the
meta-gradient with nested ``GradientTape``s, task by task (no hodiff, no Keras layers)."""

import numpy as np
import tensorflow as tf

from hodiff.meta.tasks import FewShotTasks, synthetic_characters
from pinn_examples.maml_omniglot import conv_network

EPSILON = 1e-3  # Keras BatchNormalization's default


def forward(params, x):
    """The 4-block CNN on ``params`` (Keras' order: per block kernel, bias, gamma, beta; then the head)."""
    h = x
    for block in range((len(params) - 2) // 4):
        kernel, bias, gamma, beta = params[4 * block : 4 * block + 4]
        h = tf.nn.conv2d(h, kernel, 1, "SAME") + bias
        mean = tf.reduce_mean(h, [0, 1, 2])
        variance = tf.reduce_mean(tf.square(h - mean), [0, 1, 2])  # the mean differentiated too
        h = tf.nn.relu((h - mean) * tf.math.rsqrt(variance + EPSILON) * gamma + beta)
        h = tf.nn.max_pool2d(h, 2, 2, "VALID")
    return tf.reshape(h, [tf.shape(h)[0], -1]) @ params[-2] + params[-1]


def loss(params, x, y):
    return tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(tf.cast(y, tf.int32), forward(params, x)))


def meta_loss(params, batch, steps, learning_rate, first_order=False):
    xs, ys, xq, yq = batch
    total = 0.0
    for task in range(xs.shape[0]):
        adapted = [tf.convert_to_tensor(p) for p in params]
        for _ in range(steps):
            with tf.GradientTape() as inner:
                inner.watch(adapted)
                support = loss(adapted, xs[task], ys[task])
            grads = inner.gradient(support, adapted)
            if first_order:
                grads = [tf.stop_gradient(g) for g in grads]
            adapted = [p - learning_rate * g for p, g in zip(adapted, grads)]
        total += loss(adapted, xq[task], yq[task])
    return total / xs.shape[0]


def meta_gradient(params, batch, steps, learning_rate, first_order=False):
    params = [tf.convert_to_tensor(p) for p in params]
    with tf.GradientTape() as outer:
        outer.watch(params)
        value = meta_loss(params, batch, steps, learning_rate, first_order)
    return value, outer.gradient(value, params)


def small_case(dtype="float64", ways=3, tasks=2, seed=0):
    """A small CNN (4 filters, 16x16 images) and a task batch: 3-way 1-shot, 2 queries per class."""
    model = conv_network(ways=ways, filters=4, size=16, seed=seed, dtype=dtype)
    images = synthetic_characters(classes=8, size=16, seed=seed)  # binary: max-pooling would meet exact ties
    images = images + 0.1 * np.random.default_rng(seed).standard_normal(images.shape).astype(np.float32)
    batch = FewShotTasks(images, ways=ways, shots=1, queries=2).sample(tasks, seed=seed)
    batch = [tf.constant(a.astype(dtype)) if a.dtype.kind == "f" else tf.constant(a) for a in batch]
    return model, batch


def relative_error(values, reference):
    """The largest difference over all parameters, relative to the largest reference entry
    (the convolutions' biases have zero gradients under batch normalisation, up to rounding)."""
    scale = max(float(np.abs(np.asarray(b)).max()) for b in reference)
    return max(float(np.abs(np.asarray(a) - np.asarray(b)).max()) for a, b in zip(values, reference)) / scale
