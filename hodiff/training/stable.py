"""Ops with hand-chosen gradients whose first AND second derivatives are right.

``tf.custom_gradient`` runs the forward function with the tape paused, so a gradient function
that reuses the forward's intermediates is a constant to any outer tape: a nested tape through
it silently gets a wrong (or no) second derivative (tensorflow issues 34503 and 36168). The
rule followed here: a gradient function only uses the op's *inputs* and the upstream gradient,
and recomputes what it needs from them with differentiable, stable TensorFlow ops. The outer
tape then sees the full dependence and differentiates the gradient correctly. Ops whose
gradient is a surrogate (straight-through estimators, gradient clipping and scaling) are
written with ``tf.stop_gradient`` so that every order of derivative is the documented one.
"""

from __future__ import annotations

from collections.abc import Sequence

import tensorflow as tf

from hodiff import _validate

__all__ = [
    "stable_softmax",
    "stable_log_softmax",
    "stable_softmax_cross_entropy",
    "clip_gradient_by_norm",
    "scale_gradient",
    "straight_through_round",
    "straight_through_sign",
    "safe_norm",
    "safe_sqrt",
]


def _log_softmax(logits: tf.Tensor, axis: int) -> tf.Tensor:
    shifted = logits - tf.stop_gradient(tf.reduce_max(logits, axis=axis, keepdims=True))
    return shifted - tf.math.log(tf.reduce_sum(tf.exp(shifted), axis=axis, keepdims=True))


def stable_softmax(logits: tf.Tensor, axis: int = -1) -> tf.Tensor:
    """Softmax that stays finite for logits of any magnitude, at every derivative order.

    The forward subtracts the maximum before exponentiating; the gradient
    ``p * (dy - sum(dy * p))`` is recomputed from the logits, so nested tapes get the true
    Hessian.

    Args:
      logits: float tensor.
      axis: the axis to normalise over.

    Returns:
      Probabilities shaped like ``logits``.

    References:
      Bridle (1990), "Probabilistic interpretation of feedforward classification network
      outputs".

    Example:
      ```python
      import tensorflow as tf
      from hodiff.training.stable import stable_softmax

      p = stable_softmax(tf.constant([1e4, 0.0, -1e4]))   # exp(1e4) overflows float32
      assert p.numpy().tolist() == [1.0, 0.0, 0.0]
      ```
    """
    logits = _validate.as_float_tensor(logits, "logits", "stable_softmax")

    @tf.custom_gradient
    def softmax(z):
        def backward(dy):
            p = tf.exp(_log_softmax(z, axis))  # from the input: differentiable by outer tapes
            return p * (dy - tf.reduce_sum(dy * p, axis=axis, keepdims=True))

        return tf.exp(_log_softmax(z, axis)), backward

    return softmax(logits)


def stable_log_softmax(logits: tf.Tensor, axis: int = -1) -> tf.Tensor:
    """Log-softmax ``z - logsumexp(z)``, finite for logits of any magnitude, at every order.

    Args:
      logits: float tensor.
      axis: the axis to normalise over.

    Returns:
      Log-probabilities shaped like ``logits``.

    References:
      Blanchard, Higham & Higham (2021), "Accurately computing the log-sum-exp and softmax
      functions", IMA J. Numer. Anal.

    Example:
      ```python
      import tensorflow as tf
      from hodiff.training.stable import stable_log_softmax

      logp = stable_log_softmax(tf.constant([1e4, 0.0]))
      assert logp.numpy().tolist() == [0.0, -1e4]
      ```
    """
    logits = _validate.as_float_tensor(logits, "logits", "stable_log_softmax")

    @tf.custom_gradient
    def log_softmax(z):
        def backward(dy):
            p = tf.exp(_log_softmax(z, axis))
            return dy - p * tf.reduce_sum(dy, axis=axis, keepdims=True)

        return _log_softmax(z, axis), backward

    return log_softmax(logits)


def stable_softmax_cross_entropy(labels: tf.Tensor, logits: tf.Tensor) -> tf.Tensor:
    """Mean softmax cross-entropy over a batch, finite for logits of any magnitude.

    Args:
      labels: one-hot rows or probability rows, shape ``(batch, classes)``, float.
      logits: shape ``(batch, classes)``.

    Returns:
      Scalar ``mean_b(-sum_c labels[b, c] * log_softmax(logits)[b, c])``. It is differentiable
      in both arguments to any order (the gradient in ``logits`` is
      ``(softmax(logits) * sum(labels) - labels) / batch``).

    Example:
      ```python
      import tensorflow as tf
      from hodiff.training.stable import stable_softmax_cross_entropy

      labels = tf.constant([[1.0, 0.0], [0.0, 1.0]])
      logits = tf.constant([[1e4, 0.0], [0.0, 1e4]])
      assert float(stable_softmax_cross_entropy(labels, logits)) == 0.0
      ```
    """
    caller = "stable_softmax_cross_entropy"
    labels = _validate.as_float_tensor(labels, "labels", caller)
    logits = _validate.as_float_tensor(logits, "logits", caller)
    if labels.shape.rank != 2 or not labels.shape.is_compatible_with(logits.shape):
        raise ValueError(
            f"{caller}: `labels` and `logits` must both have shape (batch, classes); got "
            f"{tuple(labels.shape)} and {tuple(logits.shape)}. For integer class ids use "
            f"tf.one_hot(ids, classes, dtype=logits.dtype) as labels."
        )
    labels = tf.cast(labels, logits.dtype)
    per_example = -tf.reduce_sum(labels * stable_log_softmax(logits, axis=-1), axis=-1)
    return tf.reduce_mean(per_example)


def clip_gradient_by_norm(x: tf.Tensor, max_norm: float) -> tf.Tensor:
    """Identity in the forward pass; the gradient flowing back through ``x`` is rescaled.

    The backward gradient ``g`` becomes ``g * min(1, max_norm / ||g||)``, so its norm is at
    most ``max_norm``. Higher derivatives differentiate that rescaling (the surrogate is the
    clipped gradient, as a function of everything it depends on).

    Args:
      x: float tensor.
      max_norm: positive float, the largest norm of the gradient w.r.t. ``x``.

    Returns:
      ``x``, unchanged.

    References:
      Pascanu, Mikolov & Bengio (2013), "On the difficulty of training recurrent neural
      networks".

    Example:
      ```python
      import tensorflow as tf
      from hodiff import grad
      from hodiff.training.stable import clip_gradient_by_norm

      f = lambda x: tf.reduce_sum(10.0 * clip_gradient_by_norm(x, 1.0))
      g = grad(f)(tf.constant([1.0, 2.0]))                  # unclipped: [10, 10]
      tf.debugging.assert_near(tf.norm(g), 1.0)
      ```
    """
    caller = "clip_gradient_by_norm"
    x = _validate.as_float_tensor(x, "x", caller)
    _validate.check_positive_bound(max_norm, "max_norm", caller)

    @tf.custom_gradient
    def clipped(z):
        def backward(dy):
            bound = _validate.constant(max_norm, dy.dtype)
            return dy * (bound / tf.maximum(safe_norm(dy), bound))

        return tf.identity(z), backward

    return clipped(x)


def scale_gradient(x: tf.Tensor, scale: float) -> tf.Tensor:
    """Identity in the forward pass; the gradient w.r.t. ``x`` is multiplied by ``scale``.

    Written as ``scale * x + stop_gradient((1 - scale) * x)``: every derivative order through
    ``x`` is scaled, and ``scale = 0`` is ``tf.stop_gradient``.

    Args:
      x: float tensor.
      scale: float or scalar tensor.

    Returns:
      ``x`` (up to rounding).

    References:
      Ganin & Lempitsky (2015), "Unsupervised domain adaptation by backpropagation"
      (``scale=-1`` is their gradient reversal layer).

    Example:
      ```python
      import tensorflow as tf
      from hodiff import grad
      from hodiff.training.stable import scale_gradient

      assert float(grad(lambda x: scale_gradient(x, -1.0) ** 2)(tf.constant(3.0))) == -6.0
      ```
    """
    x = _validate.as_float_tensor(x, "x", "scale_gradient")
    scale = _validate.constant(scale, x.dtype)
    return scale * x + tf.stop_gradient((1.0 - scale) * x)


def straight_through_round(x: tf.Tensor) -> tf.Tensor:
    """``tf.round`` forward, identity backward (gradient 1, second derivative 0).

    Args:
      x: float tensor.

    Returns:
      ``round(x)`` (half to even), with the straight-through gradient.

    References:
      Bengio, Léonard & Courville (2013), "Estimating or propagating gradients through
      stochastic neurons for conditional computation".

    Example:
      ```python
      import tensorflow as tf
      from hodiff import grad
      from hodiff.training.stable import straight_through_round

      assert float(grad(lambda x: 3.0 * straight_through_round(x))(tf.constant(0.4))) == 3.0
      ```
    """
    x = _validate.as_float_tensor(x, "x", "straight_through_round")
    return x + tf.stop_gradient(tf.round(x) - x)


def straight_through_sign(x: tf.Tensor) -> tf.Tensor:
    """``tf.sign`` forward; backward the gradient of ``clip(x, -1, 1)`` (1 inside, 0 outside).

    Args:
      x: float tensor.

    Returns:
      ``sign(x)`` with the hard-tanh straight-through gradient; second derivative 0.

    References:
      Hubara, Courbariaux, Soudry, El-Yaniv & Bengio (2016), "Binarized neural networks".

    Example:
      ```python
      import tensorflow as tf
      from hodiff import grad
      from hodiff.training.stable import straight_through_sign

      g = grad(lambda x: tf.reduce_sum(straight_through_sign(x)))(tf.constant([0.5, 2.0]))
      assert g.numpy().tolist() == [1.0, 0.0]
      ```
    """
    x = _validate.as_float_tensor(x, "x", "straight_through_sign")
    hard_tanh = tf.clip_by_value(x, -1.0, 1.0)
    return hard_tanh + tf.stop_gradient(tf.sign(x) - hard_tanh)


def safe_norm(x: tf.Tensor, axis: int | Sequence[int] | None = None, keepdims: bool = False) -> tf.Tensor:
    """Euclidean norm whose derivatives of every order are finite; they are 0 at ``x = 0``.

    ``tf.norm`` has a NaN gradient at 0 (0/0). Away from 0 this is exactly the norm, with
    gradient ``x / ||x||`` and Hessian ``(I - x x^T / ||x||^2) / ||x||``.

    Args:
      x: float tensor.
      axis: axis or axes to reduce; ``None`` reduces everything.
      keepdims: keep the reduced axes with size 1.

    Returns:
      The norm.

    Example:
      ```python
      import tensorflow as tf
      from hodiff import grad
      from hodiff.training.stable import safe_norm

      assert grad(safe_norm)(tf.zeros(3)).numpy().tolist() == [0.0, 0.0, 0.0]
      ```
    """
    x = _validate.as_float_tensor(x, "x", "safe_norm")
    return safe_sqrt(tf.reduce_sum(tf.square(x), axis=axis, keepdims=keepdims))


def safe_sqrt(x: tf.Tensor) -> tf.Tensor:
    """``sqrt(max(x, 0))`` whose derivatives of every order are finite; they are 0 for ``x <= 0``.

    The double ``tf.where`` keeps the untaken branch finite, so no NaN leaks into gradients
    (``0 * inf`` would).

    Args:
      x: float tensor.

    Returns:
      The square root, 0 where ``x <= 0``.

    Example:
      ```python
      import tensorflow as tf
      from hodiff import grad
      from hodiff.training.stable import safe_sqrt

      assert float(grad(safe_sqrt)(tf.constant(0.0))) == 0.0
      assert float(grad(safe_sqrt)(tf.constant(4.0))) == 0.25
      ```
    """
    x = _validate.as_float_tensor(x, "x", "safe_sqrt")
    positive = x > 0
    return tf.where(positive, tf.sqrt(tf.where(positive, x, tf.ones_like(x))), tf.zeros_like(x))
