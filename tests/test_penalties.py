"""Gradient penalty (second order through the critic) and input-gradient helpers."""

import keras
import numpy as np
import pytest
import tensorflow as tf

import hodiff
from hodiff.checks import assert_close, check_grads, in_mode
from hodiff.training import penalties

RNG = np.random.default_rng(0)
REAL, FAKE = RNG.normal(size=(6, 3)), RNG.normal(size=(6, 3))
EPSILON = RNG.uniform(size=6)


def critic(x, w1, w2):
    return tf.tanh(x @ w1) @ w2


def penalty_of_weights(w1, w2):
    return penalties.gradient_penalty(
        lambda x: critic(x, w1, w2),
        REAL.astype(w1.dtype.as_numpy_dtype),
        FAKE.astype(w1.dtype.as_numpy_dtype),
        epsilon=EPSILON,
    )


def test_penalty_gradient_wrt_critic_weights_matches_scipy():
    w1, w2 = tf.constant(RNG.normal(size=(3, 4))), tf.constant(RNG.normal(size=(4, 1)))
    check_grads(penalty_of_weights, (w1, w2), order=1)


def test_penalty_value_matches_closed_form(run):
    w1, w2 = RNG.normal(size=(3, 4)), RNG.normal(size=(4, 1))
    x_hat = EPSILON[:, None] * REAL + (1 - EPSILON[:, None]) * FAKE
    gradients = ((1 - np.tanh(x_hat @ w1) ** 2) * w2[:, 0]) @ w1.T
    expected = np.mean((np.linalg.norm(gradients, axis=1) - 1.0) ** 2)
    assert_close(run(penalty_of_weights, tf.constant(w1), tf.constant(w2)), expected, rtol=1e-12)


def test_penalty_trains_a_keras_critic_towards_unit_input_gradients_in_every_mode(mode):
    keras.utils.set_random_seed(0)
    model = keras.Sequential(
        [
            keras.Input((3,), dtype="float64"),
            keras.layers.Dense(8, activation="tanh", dtype="float64"),
            keras.layers.Dense(1, dtype="float64"),
        ]
    )
    model.layers[-1].kernel.assign(4.0 * model.layers[-1].kernel)  # input gradients far from norm 1
    real, fake = tf.constant(RNG.normal(size=(64, 3))), tf.constant(RNG.normal(2.0, 1.0, size=(64, 3)))
    held_out = tf.constant(RNG.uniform(size=(64, 1))) * real + (1.0 - tf.constant(RNG.uniform(size=(64, 1)))) * fake

    def distance_from_unit_norm():
        norms = np.linalg.norm(penalties.input_gradient(model, held_out).numpy(), axis=1)
        return float(np.mean(np.abs(norms - 1.0)))

    penalty = lambda w, r, f, seed: penalties.gradient_penalty(model, r, f, seed=seed)
    gradients = in_mode(
        lambda r, f, seed: hodiff.grad(penalty, unconnected="zero")(model.trainable_variables, r, f, seed), mode
    )
    optimizer = keras.optimizers.Adam(0.02)
    before = distance_from_unit_norm()
    for step in range(150):
        grads = gradients(real, fake, tf.constant(step))
        assert np.all(grads[3].numpy() == 0), "the output bias does not change the input gradient"
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
    assert before > 1.0 and distance_from_unit_norm() < 0.1


def test_input_gradient_saliency_and_fgsm(run):
    x = tf.constant([[1.0, -2.0], [0.5, 0.0]], tf.float64)
    w = tf.constant([[1.0, -3.0], [2.0, 0.5]], tf.float64)
    scores = lambda x: x @ w  # class scores
    saliency = run(lambda x: penalties.saliency_map(scores, x), x)
    # example 0 scores [-3, -4] -> class 0 (column [1, 2]); example 1 [0.5, -1.5] -> class 0
    assert_close(saliency, [[1.0, 2.0], [1.0, 2.0]], rtol=1e-15)
    assert_close(
        run(lambda x: penalties.saliency_map(scores, x, class_index=1), x), [[3.0, 0.5], [3.0, 0.5]], rtol=1e-15
    )
    loss = lambda x: tf.reduce_sum(x * tf.constant([1.0, -1.0], tf.float64))
    assert_close(
        run(lambda x: penalties.fgsm_step(loss, x, 0.1), x), x.numpy() + 0.1 * np.array([1.0, -1.0]), rtol=1e-15
    )
    assert_close(
        run(lambda x: penalties.fgsm_step(loss, x, 0.1, clip_min=0.0, clip_max=1.0), x),
        [[1.0, 0.0], [0.6, 0.0]],
        rtol=1e-15,
    )


def test_bad_input():
    with pytest.raises(ValueError, match="same shape"):
        penalties.gradient_penalty(lambda x: x[:, 0], tf.ones((2, 3)), tf.ones((3, 3)))
    with pytest.raises(TypeError, match="`real` has dtype int32"):
        penalties.gradient_penalty(lambda x: x[:, 0], tf.ones((2, 3), tf.int32), tf.ones((2, 3)))
    with pytest.raises(ValueError, match="epsilon must be >= 0"):
        penalties.fgsm_step(tf.reduce_sum, tf.ones(2), -0.1)
