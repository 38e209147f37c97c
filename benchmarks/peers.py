"""Peer implementations timed beside hodiff when they are installed (JAX; DeepXDE in ``pinn``).

Nothing here is imported unless the peer is: the benchmark reports "not installed" otherwise.
"""

import importlib.util

import numpy as np


def jax_installed() -> bool:
    return importlib.util.find_spec("jax") is not None


def jax_laplacian_routes(model, x, learning_rate=1e-4):
    """JAX's Laplacian of the same tanh MLP (same weights), the operator and an SGD training step
    through it, all ``jax.jit``-compiled, by two recipes:

    - ``jax_hessian_trace``: the trace of ``jax.hessian`` per point under ``vmap`` (the usual one);
    - ``jax_forward_over_reverse``: the network on the whole batch, ``jax.grad`` of its sum (the
      per-point gradients) and one ``jax.jvp`` of that per coordinate (``d`` Hessian diagonals),
      all plain 2-D matmuls.

    A training step through the first recipe costs 20x its operator on XLA CPU. That is not a
    harness artifact: the jit cache holds one entry (no recompilation), the step is one dispatch,
    and the second recipe's step costs 5x its operator; the time goes into the reverse pass over
    ``vmap``'s per-point batched small dots.

    Returns:
      ``{recipe: (operator, step)}``: zero-argument callables returning JAX arrays.
    """
    import jax
    import jax.numpy as jnp

    weights = [jnp.asarray(w) for w in model.get_weights()]
    params = [(weights[i], weights[i + 1]) for i in range(0, len(weights), 2)]
    points = jnp.asarray(np.asarray(x))
    d = points.shape[1]

    def network(params, points):  # (N, d) -> (N,)
        h = points
        for kernel, bias in params[:-1]:
            h = jnp.tanh(h @ kernel + bias)
        kernel, bias = params[-1]
        return (h @ kernel + bias)[:, 0]

    def hessian_trace(params, points):
        u = lambda params, point: network(params, point[None])[0]
        return jax.vmap(lambda p: jnp.trace(jax.hessian(u, argnums=1)(params, p)))(points)

    def forward_over_reverse(params, points):
        gradient = jax.grad(lambda y: jnp.sum(network(params, y)))
        basis = jnp.eye(d, dtype=points.dtype)
        return sum(jax.jvp(gradient, (points,), (jnp.broadcast_to(basis[i], points.shape),))[1][:, i] for i in range(d))

    routes = {}
    for name, laplacian in (("jax_hessian_trace", hessian_trace), ("jax_forward_over_reverse", forward_over_reverse)):

        @jax.jit
        def step(params, points, laplacian=laplacian):
            loss, gradients = jax.value_and_grad(lambda q: jnp.mean(laplacian(q, points) ** 2))(params)
            return jax.tree_util.tree_map(lambda w, g: w - learning_rate * g, params, gradients), loss

        operator = jax.jit(laplacian)
        state = {"params": params}

        def run_step(step=step, state=state):
            state["params"], loss = step(state["params"], points)
            return loss

        routes[name] = ((lambda operator=operator: operator(params, points)), run_step)
    return routes


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
