"""Differentiable inner optimisers for :func:`hodiff.meta.inner_loop`: SGD, momentum and Adam.

An inner optimiser turns each inner gradient into an update *direction* with state carried as
plain tensors (never variables), so the outer tape differentiates through the state as through
the parameters: the meta-gradient sees every momentum buffer and Adam moment. The inner update
is ``p - rate * direction``, where ``rate`` is the inner learning rate, a learned per-weight rate
(Meta-SGD) or a learned per-step rate (MAML++), so every optimiser combines with every variant.

Each optimiser is a pair of pure functions, ``init(params) -> state`` and
``update(grads, state, step) -> (directions, state)``, with ``state`` a flat list of tensors.

References:
  Grefenstette, Amos, Yarats, Htut, Molchanov, Meier, Kiela, Cho & Chintala (2019), "Generalized
  inner loop meta-learning" (the ``higher`` library's differentiable optimisers); Kingma & Ba
  (2015), "Adam: a method for stochastic optimization"; Polyak (1964) for momentum.

Example:
  ```python
  import tensorflow as tf
  from hodiff.meta.optimizers import InnerAdam

  adam = InnerAdam()
  params = [tf.constant([1.0, -2.0])]
  state = adam.init(params)
  directions, state = adam.update([tf.constant([0.5, -4.0])], state, step=0)
  assert abs(float(directions[0][1]) + 1.0) < 1e-6  # the first Adam step is about sign(g)
  ```
"""

from __future__ import annotations

from collections.abc import Sequence

import tensorflow as tf

__all__ = ["InnerOptimizer", "InnerSGD", "InnerMomentum", "InnerAdam", "INNER_OPTIMIZERS", "inner_optimizer"]


class InnerOptimizer:
    """Base of the differentiable inner optimisers: plain gradient descent (no state)."""

    name = "sgd"

    def init(self, params: Sequence[tf.Tensor]) -> list[tf.Tensor]:
        """The initial state for ``params``: a flat list of tensors."""
        return []

    def update(
        self, grads: Sequence[tf.Tensor], state: Sequence[tf.Tensor], step: int
    ) -> tuple[list[tf.Tensor], list[tf.Tensor]]:
        """Directions (``p - rate * direction`` is the new parameter) and the new state.

        Args:
          grads: one gradient per parameter.
          state: the state from :meth:`init` or the previous update.
          step: the 0-based inner step index (a Python int; inner loops are unrolled).
        """
        return list(grads), list(state)

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class InnerSGD(InnerOptimizer):
    """Plain gradient descent: the direction is the gradient (MAML's inner step)."""


class InnerMomentum(InnerOptimizer):
    """Heavy-ball momentum, as ``torch.optim.SGD(momentum=...)`` and ``higher``'s differentiable SGD.

    ``buffer = momentum * buffer + g`` (the buffer starts at zero, so the first step is plain
    SGD); the direction is ``buffer``, or ``g + momentum * buffer`` with ``nesterov=True``.

    Args:
      momentum: the decay of the buffer, in [0, 1).
      nesterov: use Nesterov's look-ahead direction.
    """

    name = "momentum"

    def __init__(self, momentum: float = 0.9, nesterov: bool = False):
        if not 0.0 <= float(momentum) < 1.0:
            raise ValueError(f"InnerMomentum: momentum must be in [0, 1), got {momentum!r}.")
        self.momentum, self.nesterov = float(momentum), bool(nesterov)

    def init(self, params):
        return [tf.zeros_like(p) for p in params]

    def update(self, grads, state, step):
        buffers = [tf.constant(self.momentum, g.dtype) * b + g for g, b in zip(grads, state)]
        if self.nesterov:
            return [g + tf.constant(self.momentum, g.dtype) * b for g, b in zip(grads, buffers)], buffers
        return buffers, buffers

    def __repr__(self) -> str:
        return f"InnerMomentum(momentum={self.momentum}, nesterov={self.nesterov})"


class InnerAdam(InnerOptimizer):
    """Adam with bias correction, differentiable through its moments.

    ``m = b1 m + (1 - b1) g``, ``v = b2 v + (1 - b2) g^2``; the direction is
    ``m_hat / (sqrt(v_hat) + epsilon)`` with the bias-corrected moments. The square root has
    derivative zero where ``v_hat`` is exactly zero (a parameter whose gradients have all been
    zero, e.g. a dead ReLU unit), where ``sqrt``'s infinite slope would turn the meta-gradient
    into NaN.

    Args:
      beta_1: decay of the first moment, in [0, 1).
      beta_2: decay of the second moment, in [0, 1).
      epsilon: added to ``sqrt(v_hat)``, > 0.
    """

    name = "adam"

    def __init__(self, beta_1: float = 0.9, beta_2: float = 0.999, epsilon: float = 1e-8):
        for name, value in (("beta_1", beta_1), ("beta_2", beta_2)):
            if not 0.0 <= float(value) < 1.0:
                raise ValueError(f"InnerAdam: {name} must be in [0, 1), got {value!r}.")
        if not float(epsilon) > 0.0:
            raise ValueError(f"InnerAdam: epsilon must be > 0, got {epsilon!r}.")
        self.beta_1, self.beta_2, self.epsilon = float(beta_1), float(beta_2), float(epsilon)

    def init(self, params):
        return [tf.zeros_like(p) for p in params] + [tf.zeros_like(p) for p in params]

    def update(self, grads, state, step):
        count = len(grads)
        first, second = list(state[:count]), list(state[count:])
        correction_1, correction_2 = 1.0 - self.beta_1 ** (step + 1), 1.0 - self.beta_2 ** (step + 1)
        directions, new_first, new_second = [], [], []
        for g, m, v in zip(grads, first, second):
            cast = lambda value, dtype=g.dtype: tf.constant(value, dtype)  # not via float32
            m = cast(self.beta_1) * m + cast(1.0 - self.beta_1) * g
            v = cast(self.beta_2) * v + cast(1.0 - self.beta_2) * tf.square(g)
            directions.append((m / cast(correction_1)) / (_safe_sqrt(v / cast(correction_2)) + cast(self.epsilon)))
            new_first.append(m)
            new_second.append(v)
        return directions, new_first + new_second

    def __repr__(self) -> str:
        return f"InnerAdam(beta_1={self.beta_1}, beta_2={self.beta_2}, epsilon={self.epsilon})"


def _safe_sqrt(x: tf.Tensor) -> tf.Tensor:
    """``sqrt(x)`` for ``x >= 0`` with derivative 0 (not infinity) at ``x == 0``."""
    positive = x > 0
    return tf.where(positive, tf.sqrt(tf.where(positive, x, tf.ones_like(x))), tf.zeros_like(x))


INNER_OPTIMIZERS = {"sgd": InnerSGD, "momentum": InnerMomentum, "adam": InnerAdam}


def inner_optimizer(spec: str | InnerOptimizer | None, caller: str = "inner_loop") -> InnerOptimizer:
    """The optimiser for ``spec``: a name in :data:`INNER_OPTIMIZERS` (default settings), an
    :class:`InnerOptimizer` instance, or ``None`` (plain SGD).

    Example:
      ```python
      from hodiff.meta.optimizers import InnerMomentum, inner_optimizer

      assert inner_optimizer("momentum").momentum == 0.9
      assert inner_optimizer(InnerMomentum(0.5, nesterov=True)).nesterov
      ```
    """
    if spec is None:
        return InnerSGD()
    if isinstance(spec, InnerOptimizer):
        return spec
    if isinstance(spec, str) and spec in INNER_OPTIMIZERS:
        return INNER_OPTIMIZERS[spec]()
    raise ValueError(
        f"{caller}: inner_optimizer must be one of {tuple(INNER_OPTIMIZERS)} or an InnerOptimizer instance "
        f"(e.g. hodiff.meta.InnerAdam(beta_1=0.5) for other settings), got {spec!r}."
    )
