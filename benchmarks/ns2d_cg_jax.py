"""``PYTHONPATH=. python benchmarks/ns2d_cg_jax.py --name NAME [flags]``: ns2d_cg's loss in JAX, for a GPU.

A mirror of :mod:`pinn_examples.ns2d_cg` (the same hard walls and inlet, the same residuals, the
two stress-free outlet terms at 256 points, Sobol points outside the solid block, float64, Glorot
uniform weights) trained by Adam and then L-BFGS (optax, 50 corrections), optionally with
Reynolds-number continuation (``--nus 0.05,0.02,0.01``: one stage per viscosity, each warm-started
from the one before). It prints the L2RE on (u, v), (u, v, p) and p against the reference every
1,000 L-BFGS iterations and writes ``OUTPUT/NAME.json``. docs/pinnacle.md's ns2d_cg section has the
variants it compared; the error it gives matches the example's at the same settings. Needs jax
and optax (the ``bench`` extra) but not TensorFlow, so it runs as a script (the ``benchmarks``
package imports hodiff); on a GPU a variant takes a few minutes.
"""

from __future__ import annotations

import argparse
import json
import os
import time

import jax
import jax.numpy as jnp
import numpy as np
import optax
from scipy.stats import qmc

from pinn_examples.cavity_reference import expanding_channel

jax.config.update("jax_enable_x64", True)

LOW, HIGH = np.array([0.0, 0.0]), np.array([4.0, 2.0])
CHUNK = 100  # optimiser steps per compiled call


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="benchmarks/ns2d_cg_jax.py", description=__doc__.splitlines()[0])
    parser.add_argument("--name", required=True, help="the run's name (NAME.json)")
    parser.add_argument("--nus", default="0.01", help="viscosities of the stages, comma-separated; the last is scored")
    parser.add_argument("--adam", default="1000", help="Adam steps per stage (one number, or one per stage)")
    parser.add_argument("--lbfgs", default="2000", help="L-BFGS iterations per stage (one number, or one per stage)")
    parser.add_argument("--interior", type=int, default=2048)
    parser.add_argument("--width", type=int, default=40)
    parser.add_argument("--depth", type=int, default=4)
    parser.add_argument("--outlet-weight", type=float, default=1.0, help="weight of both outlet terms")
    parser.add_argument("--corner", type=float, default=0.0, help="no interior points this close to the corner (2, 1)")
    parser.add_argument("--learning-rate", type=float, default=1e-3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--cells", type=int, default=64, help="reference cells per unit length")
    parser.add_argument("--output", default=".")
    return parser.parse_args(argv)


def per_stage(text: str, stages: int) -> list[int]:
    counts = [int(value) for value in text.split(",")]
    return counts * stages if len(counts) == 1 else counts


def interior_points(count: int, corner: float, seed: int) -> jnp.ndarray:
    """Sobol points of the box, those in the solid block (and within ``corner`` of (2, 1)) left out."""
    sobol, points = qmc.Sobol(2, seed=seed), np.zeros((0, 2))
    while len(points) < count:
        box = LOW + (HIGH - LOW) * sobol.random(1024)
        keep = ~((box[:, 0] < 2.0) & (box[:, 1] > 1.0)) & (np.hypot(box[:, 0] - 2.0, box[:, 1] - 1.0) >= corner)
        points = np.concatenate([points, box[keep]])
    return jnp.asarray(points[:count])


def initial_weights(width: int, depth: int, seed: int) -> list:
    sizes, key, weights = [2] + [width] * depth + [3], jax.random.PRNGKey(seed), []
    for fan_in, fan_out in zip(sizes[:-1], sizes[1:]):
        key, draw = jax.random.split(key)
        limit = np.sqrt(6.0 / (fan_in + fan_out))
        weights.append((jax.random.uniform(draw, (fan_in, fan_out), jnp.float64, -limit, limit), jnp.zeros(fan_out)))
    return weights


def solution(weights: list, point: jnp.ndarray) -> jnp.ndarray:
    """(u, v, p) at one point: ns2d_cg's ``walls`` applied to the network's outputs."""
    hidden = 2.0 * (point - LOW) / (HIGH - LOW) - 1.0
    for matrix, bias in weights[:-1]:
        hidden = jnp.tanh(hidden @ matrix + bias)
    outputs = hidden @ weights[-1][0] + weights[-1][1]
    x, y = point[0], point[1]
    a, b = 1.0 - y, x - 2.0
    distance = jnp.tanh(2.0 * x) * y * (2.0 - y) * (a + b + jnp.sqrt(a * a + b * b + 1e-12))
    lift = 4.0 * y * (1.0 - y) * jax.nn.relu(1.0 - 0.5 * x) ** 3
    return jnp.array([lift + distance * outputs[0], distance * outputs[1], outputs[2]])


def loss_terms(weights: list, points: jnp.ndarray, outlet: jnp.ndarray, nu: float) -> jnp.ndarray:
    """Mean squares of momentum x, momentum y, continuity, the outlet's normal and shear stress."""

    def partials(point):
        field = lambda z: solution(weights, z)  # noqa: E731
        return field(point), jax.jacfwd(field)(point), jax.hessian(field)(point)

    value, first, second = jax.vmap(partials)(points)
    u, v = value[:, 0], value[:, 1]
    laplacian = second[:, :, 0, 0] + second[:, :, 1, 1]
    momentum_x = u * first[:, 0, 0] + v * first[:, 0, 1] + first[:, 2, 0] - nu * laplacian[:, 0]
    momentum_y = u * first[:, 1, 0] + v * first[:, 1, 1] + first[:, 2, 1] - nu * laplacian[:, 1]
    continuity = first[:, 0, 0] + first[:, 1, 1]
    value, first, _ = jax.vmap(partials)(outlet)
    normal = -value[:, 2] + 2.0 * nu * first[:, 0, 0]
    shear = first[:, 0, 1] + first[:, 1, 0]
    return jnp.stack([jnp.mean(r**2) for r in (momentum_x, momentum_y, continuity, normal, shear)])


def scorer(cells: int):
    """``score(weights) -> {"uv", "uvp", "u", "v", "p"}``: L2RE on the example's 201 x 101 grid."""
    x, y = np.linspace(0.0, 4.0, 201), np.linspace(0.0, 2.0, 101)
    reference = expanding_channel(x, y, cells=cells, cache=None)  # the cache writer imports hodiff (TensorFlow)
    mesh = np.stack([array.ravel() for array in np.meshgrid(x, y, indexing="ij")], axis=1)
    inside = np.isfinite(reference["u"]).ravel()
    exact = np.stack([reference[name].ravel()[inside] for name in "uvp"], axis=1)
    predict = jax.jit(lambda weights: jax.vmap(lambda z: solution(weights, z))(jnp.asarray(mesh[inside])))

    def score(weights: list) -> dict[str, float]:
        squares, norms = ((np.asarray(predict(weights)) - exact) ** 2).sum(0), (exact**2).sum(0)
        errors = {"uv": np.sqrt(squares[:2].sum() / norms[:2].sum()), "uvp": np.sqrt(squares.sum() / norms.sum())}
        errors.update({name: np.sqrt(squares[i] / norms[i]) for i, name in enumerate("uvp")})
        return {name: float(value) for name, value in errors.items()}

    return score


def train_stage(weights: list, loss, adam_steps: int, lbfgs_iterations: int, learning_rate: float, report) -> list:
    """Adam, then L-BFGS; ``report(iterations, loss, weights)`` after every 1,000 L-BFGS iterations."""
    adam = optax.adam(learning_rate)

    @jax.jit
    def adam_chunk(weights, state):
        def step(carry, _):
            value, gradient = jax.value_and_grad(loss)(carry[0])
            updates, state = adam.update(gradient, carry[1], carry[0])
            return (optax.apply_updates(carry[0], updates), state), value

        (weights, state), _ = jax.lax.scan(step, (weights, state), None, length=CHUNK)
        return weights, state

    state = adam.init(weights)
    for _ in range(adam_steps // CHUNK):
        weights, state = adam_chunk(weights, state)
    lbfgs = optax.lbfgs(memory_size=50)
    value_and_grad = optax.value_and_grad_from_state(loss)

    @jax.jit
    def lbfgs_chunk(weights, state):
        def step(carry, _):
            value, gradient = value_and_grad(carry[0], state=carry[1])
            updates, state = lbfgs.update(gradient, carry[1], carry[0], value=value, grad=gradient, value_fn=loss)
            return (optax.apply_updates(carry[0], updates), state), value

        (weights, state), values = jax.lax.scan(step, (weights, state), None, length=CHUNK)
        return weights, state, values[-1]

    state = lbfgs.init(weights)
    for chunk in range(1, lbfgs_iterations // CHUNK + 1):
        weights, state, value = lbfgs_chunk(weights, state)
        if chunk % 10 == 0:
            report(chunk * CHUNK, float(value), weights)
    return weights


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    nus = [float(value) for value in args.nus.split(",")]
    adam_steps, lbfgs_iterations = per_stage(args.adam, len(nus)), per_stage(args.lbfgs, len(nus))
    points = interior_points(args.interior, args.corner, args.seed)
    outlet = jnp.asarray(np.stack([np.full(256, 4.0), (np.arange(256) + 0.5) * 2.0 / 256], axis=1))
    term_weights = jnp.array([1.0, 1.0, 1.0, args.outlet_weight, args.outlet_weight])
    score, weights, start = scorer(args.cells), initial_weights(args.width, args.depth, args.seed), time.time()
    stages = []
    for nu, adam, lbfgs in zip(nus, adam_steps, lbfgs_iterations):
        loss = jax.jit(lambda w, nu=nu: jnp.sum(term_weights * loss_terms(w, points, outlet, nu)))
        history = []

        def report(iterations, value, current, nu=nu, history=history):
            history.append({"lbfgs": iterations, "loss": value, "seconds": round(time.time() - start, 1)})
            history[-1].update(score(current))
            print(args.name, nu, json.dumps(history[-1]), flush=True)

        weights = train_stage(weights, loss, adam, lbfgs, args.learning_rate, report)
        terms = np.asarray(jax.jit(lambda w, nu=nu: loss_terms(w, points, outlet, nu))(weights)).tolist()
        stages.append({"nu": nu, "adam": adam, "lbfgs": lbfgs, "history": history, "terms": terms, **score(weights)})
        print(args.name, json.dumps(stages[-1]), flush=True)
    os.makedirs(args.output, exist_ok=True)
    with open(os.path.join(args.output, f"{args.name}.json"), "w") as file:
        json.dump({"settings": vars(args), "stages": stages, "seconds": round(time.time() - start, 1)}, file, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
