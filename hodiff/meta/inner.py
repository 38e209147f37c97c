"""Differentiable MAML-family inner loops: ``steps`` optimiser steps unrolled in Python.

:func:`inner_loop` unrolls the k inner steps in Python, so the second-order terms are never
lost inside a ``tf.while_loop``; :func:`unroll` is the same loop for :class:`hodiff.meta.MetaLearner`,
which also needs each intermediate step (MAML++'s multi-step loss) and batched tasks.

References:
  Finn, Abbeel & Levine (2017), "Model-agnostic meta-learning for fast adaptation of deep
  networks" (MAML and its first-order variant FOMAML).

Example:
  ```python
  import keras, tensorflow as tf
  from hodiff.meta import FunctionalModel, inner_loop

  model = keras.Sequential([keras.Input((1,)), keras.layers.Dense(16, activation="relu"), keras.layers.Dense(1)])
  f = FunctionalModel(model)
  x, y = tf.random.normal((10, 1)), tf.random.normal((10, 1))
  mse = lambda prediction, target: tf.reduce_mean((prediction - target) ** 2)
  adapted, losses = inner_loop(lambda p: mse(f(p, x), y), f.parameters(), steps=5, learning_rate=0.01)
  assert losses.shape == (5,) and len(adapted) == len(model.trainable_variables)
  ```
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import tensorflow as tf

from hodiff import _validate
from hodiff.meta.optimizers import InnerOptimizer, inner_optimizer
from hodiff.training.step import full_precision, unscale

__all__ = ["inner_loop"]


def inner_loop(
    objective: Callable[[list[tf.Tensor]], tf.Tensor],
    params: Sequence[tf.Tensor],
    steps: int,
    learning_rate: Any,
    first_order: bool = False,
    adapt: Sequence[bool] | None = None,
    recompute: bool = False,
    loss_scale: Any = None,
    optimizer: str | InnerOptimizer | None = None,
) -> tuple[list[tf.Tensor], tf.Tensor]:
    """``steps`` steps of a differentiable optimiser on one task's objective (its support loss).

    Args:
      objective: ``objective(params) -> scalar``, e.g.
        ``lambda p: mse(model(p, x_support), y_support)`` with a :class:`FunctionalModel`, or a
        PINN residual loss of ``p``.
      params: the starting parameters (tensors; differentiate w.r.t. them for MAML).
      steps: number of inner steps, >= 0 (unrolled in Python).
      learning_rate: a scalar, a list with one tensor per parameter (Meta-SGD), or a function
        of the step index returning either (MAML++'s per-step rates).
      first_order: drop the second-order terms (FOMAML): inner gradients are constants to
        outer tapes.
      adapt: one bool per parameter; ``False`` keeps it fixed (ANIL adapts only the head).
      recompute: recompute each inner step's activations in the backward pass instead of
        storing them (memory for many steps).
      loss_scale: for models that compute in float16 (``mixed_float16``): the objective is
        multiplied by this before differentiating and each gradient divided by it in float32
        after, so small inner gradients do not underflow in the float16 backward pass. A
        half-precision objective is cast to float32 either way.
      optimizer: the inner optimiser: ``"sgd"`` (default), ``"momentum"``, ``"adam"`` or an
        :class:`InnerOptimizer` such as ``InnerAdam(beta_1=0.5)``; its state (momentum buffer,
        Adam moments) is differentiated through like the parameters. The update is
        ``p - learning_rate * direction``.

    Returns:
      ``(adapted_params, losses)``: the parameters after the last step and the (unscaled)
      objective before each step, shape ``(steps,)``.
    """
    trajectory, losses = unroll(
        objective,
        params,
        steps,
        learning_rate,
        inner_optimizer(optimizer, "inner_loop"),
        first_order,
        adapt,
        recompute,
        loss_scale,
        batched=False,
    )
    final = trajectory[-1] if trajectory else list(params)
    return final, tf.stack(losses) if losses else tf.zeros((0,))


def check_steps(steps: int, caller: str) -> None:
    """Raise a clear error unless ``steps`` is an int >= 0."""
    if not isinstance(steps, int) or isinstance(steps, bool) or steps < 0:
        raise ValueError(f"{caller}: steps must be an int >= 0 (number of inner gradient steps), got {steps!r}.")


def unroll(
    objective: Callable[[list[tf.Tensor]], tf.Tensor],
    params: Sequence[tf.Tensor],
    steps: int,
    learning_rate: Any,
    optimizer: InnerOptimizer,
    first_order: bool,
    adapt: Sequence[bool] | None,
    recompute: bool,
    loss_scale: Any,
    batched: bool,
) -> tuple[list[list[tf.Tensor]], list[tf.Tensor]]:
    """The parameters after each of ``steps`` inner steps and the objective before each.

    With ``batched=True`` the objective returns one loss per task (parameters with a leading
    task axis) and each step differentiates their sum, which gives every task its own gradient.
    """
    caller = "inner_loop"
    check_steps(steps, caller)
    params = list(params)
    adapt = [True] * len(params) if adapt is None else list(adapt)
    if len(adapt) != len(params):
        raise ValueError(f"{caller}: adapt has {len(adapt)} entries for {len(params)} parameters.")
    count = len(params)
    state = list(optimizer.init(params)) if steps else []
    trajectory, losses = [], []
    for step in range(steps):
        rate = learning_rate(step) if callable(learning_rate) else learning_rate
        rates = list(rate) if isinstance(rate, (list, tuple)) else [rate] * count
        if len(rates) != count:
            raise ValueError(
                f"{caller}: got {len(rates)} learning rates for {count} parameters; pass a scalar or one rate "
                "tensor per parameter."
            )

        def one_step(*flat, rates=rates, step=step):
            current, current_state = list(flat[:count]), list(flat[count:])
            with tf.GradientTape() as tape:
                tape.watch(current)
                loss = full_precision(objective(current))
                if batched:
                    total = tf.reduce_sum(loss)
                else:
                    _validate.check_scalar(loss, f"{caller}: objective")
                    total = loss
                scaled = total if loss_scale is None else total * tf.cast(loss_scale, total.dtype)
            grads = tape.gradient(scaled, current, unconnected_gradients=tf.UnconnectedGradients.ZERO)
            if loss_scale is not None:
                grads = unscale(grads, loss_scale)
            if first_order:
                grads = [tf.stop_gradient(g) for g in grads]
            directions, new_state = optimizer.update(grads, current_state, step)
            updated = [
                p - _validate.constant(r, p.dtype) * d if keep else p
                for p, d, r, keep in zip(current, directions, rates, adapt)
            ]
            return [loss] + updated + list(new_state)

        result = _recomputed(one_step)(*params, *state) if recompute else one_step(*params, *state)
        losses.append(result[0])
        params, state = list(result[1 : 1 + count]), list(result[1 + count :])
        trajectory.append(params)
    return trajectory, losses


def _recomputed(fn: Callable[..., list]) -> Callable[..., list]:
    """``fn`` whose activations are recomputed from its inputs in the backward pass.

    ``tf.recompute_grad`` gives wrong gradients for a function that itself takes a gradient (an
    inner step), so this is the same idea written for it: the forward runs without recording,
    the backward reruns ``fn`` under a tape from the inputs and the upstream gradients only.
    """

    @tf.custom_gradient
    def wrapped(*inputs):
        outputs = fn(*inputs)  # custom_gradient keeps outer tapes from recording this

        def backward(*upstream):
            with tf.GradientTape() as tape:
                tape.watch(inputs)
                again = fn(*inputs)
            return tape.gradient(
                again, list(inputs), output_gradients=list(upstream), unconnected_gradients=tf.UnconnectedGradients.ZERO
            )

        return outputs, backward

    return wrapped
