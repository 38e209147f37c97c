"""Peer implementations timed beside hodiff when they are installed (JAX today).

Nothing here is imported unless the peer is: the benchmark reports "not installed" otherwise.
"""

import importlib.util

import numpy as np


def jax_installed() -> bool:
    return importlib.util.find_spec("jax") is not None


def jax_laplacian_routes(model, x, learning_rate=1e-4):
    """JAX's usual Laplacian of the same tanh MLP (same weights): the trace of ``jax.hessian``
    per point under ``vmap``, and an SGD training step through it, both ``jax.jit``-compiled.

    Returns:
      ``(operator, step)``: zero-argument callables returning JAX arrays.
    """
    import jax
    import jax.numpy as jnp

    weights = [jnp.asarray(w) for w in model.get_weights()]
    params = [(weights[i], weights[i + 1]) for i in range(0, len(weights), 2)]
    points = jnp.asarray(np.asarray(x))

    def u(params, point):
        h = point
        for kernel, bias in params[:-1]:
            h = jnp.tanh(h @ kernel + bias)
        kernel, bias = params[-1]
        return (h @ kernel + bias)[0]

    def laplacian(params, points):
        return jax.vmap(lambda p: jnp.trace(jax.hessian(u, argnums=1)(params, p)))(points)

    @jax.jit
    def step(params, points):
        loss, gradients = jax.value_and_grad(lambda q: jnp.mean(laplacian(q, points) ** 2))(params)
        return jax.tree_util.tree_map(lambda w, g: w - learning_rate * g, params, gradients), loss

    operator = jax.jit(laplacian)
    state = {"params": params}

    def run_step():
        state["params"], loss = step(state["params"], points)
        return loss

    return (lambda: operator(params, points)), run_step


def jax_hvp_routes(model, x, target, directions):
    """JAX's gradient and forward-over-reverse HVP of the same MSE loss w.r.t. the weights."""
    import jax
    import jax.numpy as jnp

    weights = [jnp.asarray(w) for w in model.get_weights()]
    tangents = [jnp.asarray(np.asarray(v)) for v in directions]
    points, targets = jnp.asarray(np.asarray(x)), jnp.asarray(np.asarray(target))

    def loss(weights):
        h = points
        for i in range(0, len(weights) - 2, 2):
            h = jnp.tanh(h @ weights[i] + weights[i + 1])
        return jnp.mean((h @ weights[-2] + weights[-1] - targets) ** 2)

    gradient = jax.jit(jax.grad(loss))
    hvp = jax.jit(lambda w, v: jax.jvp(jax.grad(loss), (w,), (v,))[1])
    return {"jax_gradient": lambda: gradient(weights), "jax_hvp_forward_over_reverse": lambda: hvp(weights, tangents)}
