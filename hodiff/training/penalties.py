"""Penalties and helpers built on gradients with respect to the inputs.

The WGAN-GP penalty differentiates the critic w.r.t. its input inside the loss, so training
the critic takes a second derivative (through the critic's weights): :func:`gradient_penalty`
uses a nested tape and :func:`hodiff.training.stable.safe_norm`, so that derivative is right and finite.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import tensorflow as tf

from hodiff import _validate
from hodiff.training.stable import safe_norm

__all__ = ["input_gradient", "gradient_penalty", "saliency_map", "fgsm_step"]


def input_gradient(f: Callable[[tf.Tensor], tf.Tensor], x: Any) -> tf.Tensor:
    """Per-example gradient of ``f`` w.r.t. its batched input.

    Args:
      f: maps a batch ``(N, ...)`` to ``(N,)`` or ``(N, 1)`` (rows independent, as for a
        Keras model), or to a scalar loss.
      x: the batch.

    Returns:
      ``d f(x)[n] / d x[n]`` for every example (the gradient of the sum), shaped like ``x``.

    Example:
      ```python
      import tensorflow as tf
      from hodiff.training.penalties import input_gradient

      g = input_gradient(lambda x: tf.reduce_sum(x**2, axis=1), tf.constant([[1.0, 2.0]]))
      assert g.numpy().tolist() == [[2.0, 4.0]]
      ```
    """
    x = _validate.as_differentiable(x, "x", "input_gradient")
    with tf.GradientTape() as tape:
        tape.watch(x)
        total = tf.reduce_sum(f(x))
    return _validate.gradient(tape, total, [x], ["x"], "error", "input_gradient")[0]


def gradient_penalty(
    critic: Callable[[tf.Tensor], tf.Tensor],
    real: Any,
    fake: Any,
    epsilon: Any = None,
    seed: Any = 0,
    target: float = 1.0,
) -> tf.Tensor:
    """The WGAN-GP penalty ``mean_n (|grad critic(x_hat_n)| - target)^2``.

    ``x_hat = epsilon * real + (1 - epsilon) * fake`` with ``epsilon ~ U[0, 1]`` per example.

    Args:
      critic: maps a batch to one score per example, e.g. a Keras model.
      real: a batch of real examples, shape ``(N, ...)``.
      fake: generated examples, same shape.
      epsilon: interpolation weights, shape ``(N,)``; default drawn statelessly from ``seed``.
      seed: int or scalar int tensor (pass the step number to draw new weights each step).
      target: the gradient norm the penalty pulls towards.

    Returns:
      The scalar penalty; differentiate it w.r.t. the critic's weights for the critic update.

    References:
      Gulrajani, Ahmed, Arjovsky, Dumoulin & Courville (2017), "Improved training of
      Wasserstein GANs", NeurIPS, Algorithm 1.

    Example:
      ```python
      import keras, tensorflow as tf
      from hodiff import grad
      from hodiff.training.penalties import gradient_penalty

      critic = keras.Sequential([keras.Input((2,)), keras.layers.Dense(8, activation="tanh"), keras.layers.Dense(1)])
      real, fake = tf.random.normal((16, 2)), tf.random.normal((16, 2))
      # the output bias does not change input gradients: its derivative is zero, not missing
      penalty = lambda weights: gradient_penalty(critic, real, fake)
      penalty_grads = grad(penalty, unconnected="zero")(critic.trainable_variables)
      assert float(tf.reduce_max(tf.abs(penalty_grads[-1]))) == 0.0
      ```
    """
    caller = "gradient_penalty"
    real = _validate.as_float_tensor(real, "real", caller)
    fake = _validate.as_float_tensor(fake, "fake", caller)
    if real.shape != fake.shape or real.shape.rank is None or real.shape.rank < 1:
        raise ValueError(
            f"{caller}: `real` and `fake` must be batches of the same shape (N, ...); got {tuple(real.shape)} and "
            f"{tuple(fake.shape)}."
        )
    batch = tf.shape(real)[0]
    if epsilon is None:
        epsilon = tf.random.stateless_uniform(
            [batch], seed=tf.stack([tf.cast(seed, tf.int64), tf.constant(0x6E, tf.int64)]), dtype=real.dtype
        )
    epsilon = tf.reshape(tf.cast(epsilon, real.dtype), [-1] + [1] * (real.shape.rank - 1))
    interpolated = epsilon * real + (1.0 - epsilon) * fake
    gradients = input_gradient(critic, interpolated)
    norms = safe_norm(tf.reshape(gradients, [batch, -1]), axis=1)
    return tf.reduce_mean(tf.square(norms - _validate.constant(target, norms.dtype)))


def saliency_map(model: Callable[[tf.Tensor], tf.Tensor], x: Any, class_index: Any = None) -> tf.Tensor:
    """Vanilla saliency: ``|d score / d x|`` for one output score per example.

    Args:
      model: maps ``(N, ...)`` to class scores ``(N, classes)`` (or ``(N,)``).
      x: the batch of inputs.
      class_index: the class whose score to explain, an int or one int per example; default
        the highest-scoring class of each example.

    Returns:
      The absolute input gradient, shaped like ``x``.

    References:
      Simonyan, Vedaldi & Zisserman (2014), "Deep inside convolutional networks: visualising
      image classification models and saliency maps".
    """

    def score(inputs):
        scores = model(inputs)
        if scores.shape.rank == 1:
            return scores
        index = (
            tf.argmax(scores, axis=-1)
            if class_index is None
            else tf.broadcast_to(tf.cast(class_index, tf.int64), tf.shape(scores)[:1])
        )
        return tf.gather(scores, index, batch_dims=1)

    return tf.abs(input_gradient(score, x))


def fgsm_step(
    loss_fn: Callable[[tf.Tensor], tf.Tensor],
    x: Any,
    epsilon: float,
    clip_min: float | None = None,
    clip_max: float | None = None,
) -> tf.Tensor:
    """One fast-gradient-sign step: ``x + epsilon * sign(d loss / d x)``, optionally clipped.

    Args:
      loss_fn: maps the batch to a scalar loss to increase.
      x: the batch of inputs.
      epsilon: the step size (the L-infinity radius of the perturbation), >= 0.
      clip_min: lower bound of the valid input range, e.g. 0 for images.
      clip_max: upper bound of the valid input range.

    Returns:
      The adversarial batch (the gradient does not flow back through it).

    References:
      Goodfellow, Shlens & Szegedy (2015), "Explaining and harnessing adversarial examples".
    """
    if isinstance(epsilon, (int, float)) and epsilon < 0:
        raise ValueError(f"fgsm_step: epsilon must be >= 0 (a step size), got {epsilon!r}.")
    x = _validate.as_float_tensor(x, "x", "fgsm_step")
    step = _validate.constant(epsilon, x.dtype) * tf.sign(input_gradient(loss_fn, x))
    adversarial = x + step
    if clip_min is not None or clip_max is not None:
        low = x.dtype.min if clip_min is None else clip_min
        high = x.dtype.max if clip_max is None else clip_max
        adversarial = tf.clip_by_value(adversarial, _validate.constant(low, x.dtype), _validate.constant(high, x.dtype))
    return tf.stop_gradient(adversarial)
