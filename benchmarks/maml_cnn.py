"""Finn et al. (2017)'s 4-block CNN under second- and first-order MAML in JAX:
the peer for ``python -m benchmarks meta`` and the tests.

The JAX model is the same network written directly: ``jax.lax.conv_general_dilated`` (NHWC,
HWIO kernels as Keras stores them), batch statistics over the evaluated batch (Keras'
``BatchNormalization(epsilon=1e-3)`` in training mode), ReLU, 2x2 max-pooling, a dense head;
``vmap`` over tasks, ``jit``, optax Adam. It starts from a Keras model's trainable weights, so
both sides compute the same meta-gradient.
"""

from __future__ import annotations

import keras
import numpy as np

EPSILON = 1e-3  # Keras BatchNormalization's default


def jax_cnn_maml(
    model: keras.Model,
    inner_steps: int,
    learning_rate: float,
    first_order: bool = False,
    outer_learning_rate: float = 1e-3,
    exact_variance: bool = True,
):
    """JAX's MAML for the CNN: ``(meta_gradient, step, params, convert)`` or ``None`` without JAX.

    ``meta_gradient(params, *batch) -> (loss, grads)`` is jitted; ``step(*batch)`` is one
    jitted meta-iteration (``vmap`` over tasks, optax Adam) that updates its own copy of the
    parameters, which start as ``model``'s trainable weights; ``convert(batch)`` puts a batch on
    JAX's device. ``exact_variance=False`` takes the batch variance's derivative as
    ``tf.nn.moments`` (and so Keras) does: through ``x`` only, with the mean held constant.
    """
    try:
        import jax
        import jax.numpy as jnp
        import optax
    except ImportError:
        return None
    jax.config.update("jax_enable_x64", model.trainable_variables[0].dtype == "float64")
    blocks = (len(model.trainable_variables) - 2) // 4

    def forward(p, x):
        h = x
        for b in range(blocks):
            kernel, bias, gamma, beta = p[4 * b : 4 * b + 4]
            h = jax.lax.conv_general_dilated(h, kernel, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"))
            h = h + bias
            mean = jnp.mean(h, axis=(0, 1, 2))
            centre = mean if exact_variance else jax.lax.stop_gradient(mean)
            variance = jnp.mean(jnp.square(h - centre), axis=(0, 1, 2))
            h = (h - mean) * jax.lax.rsqrt(variance + EPSILON) * gamma + beta
            h = jax.nn.relu(h)
            h = jax.lax.reduce_window(h, -jnp.inf, jax.lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")
        return h.reshape(h.shape[0], -1) @ p[-2] + p[-1]

    def loss(p, x, y):
        logits = forward(p, x)
        return jnp.mean(optax.softmax_cross_entropy_with_integer_labels(logits, y))

    def task_loss(p, xs, ys, xq, yq):
        for _ in range(inner_steps):
            grads = jax.grad(loss)(p, xs, ys)
            if first_order:
                grads = jax.lax.stop_gradient(grads)
            p = [a - learning_rate * g for a, g in zip(p, grads)]
        return loss(p, xq, yq)

    def meta_loss(p, *batch):
        return jnp.mean(jax.vmap(task_loss, (None, 0, 0, 0, 0))(p, *batch))

    meta_gradient = jax.jit(jax.value_and_grad(meta_loss))
    optimizer = optax.adam(outer_learning_rate)

    @jax.jit
    def update(p, opt_state, *batch):
        value, grads = jax.value_and_grad(meta_loss)(p, *batch)
        updates, opt_state = optimizer.update(grads, opt_state)
        return optax.apply_updates(p, updates), opt_state, value

    params = [jnp.asarray(v.numpy()) for v in model.trainable_variables]
    state = {"params": params, "opt": optimizer.init(params)}

    def step(*batch):
        state["params"], state["opt"], value = update(state["params"], state["opt"], *batch)
        return value

    def convert(batch):
        return [jnp.asarray(np.asarray(a)) for a in batch]

    return meta_gradient, step, params, convert
