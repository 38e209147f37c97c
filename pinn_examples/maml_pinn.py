"""Meta-learned PINN initialisation for a family of Poisson problems (MAML through a PDE residual).

Family: -u'' = f on [0, 1], u(0) = u(1) = 0 (hard: u = x (1 - x) N(x)), with exact solutions
u*(x) = sum_k a_k sin(k pi x), k = 1..3, a_k ~ U[-1, 1], so f = sum_k a_k (k pi)^2 sin(k pi x).
A task is one draw of a; its loss is the mean squared residual (u'' + f) / pi^2 at collocation
points. MAML differentiates that loss (second order in x) w.r.t. the weights in the inner step,
and the meta-gradient differentiates the inner step again: third-order derivatives and more
through nested tapes, compiled with XLA.

Evaluation: on held-out tasks, Adam (learning rate ``--adapt-lr``) adapts a copy of the
network from the meta-learned initialisation and from a random one; the number of steps until
the relative L2 error against u* drops below ``--target-error`` is reported for both.
"""

from __future__ import annotations

import argparse
import json
import os
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras
import numpy as np
import tensorflow as tf

from pinn_examples.runner import SEED_MAX, number

MODES = 3


def network(seed: int) -> keras.Model:
    keras.utils.set_random_seed(seed)
    return keras.Sequential(
        [
            keras.Input((1,)),
            keras.layers.Dense(32, activation="tanh"),
            keras.layers.Dense(32, activation="tanh"),
            keras.layers.Dense(1),
        ]
    )


def exact(coefficients: np.ndarray, x: np.ndarray) -> np.ndarray:
    k = np.arange(1, MODES + 1)
    return np.sum(np.sin(np.pi * x[..., None] * k) * coefficients[..., None, :], axis=-1)


def source(coefficients: np.ndarray, x: np.ndarray) -> np.ndarray:
    return exact(coefficients * (np.arange(1, MODES + 1) * np.pi) ** 2, x)


def residual_loss(field, x: tf.Tensor, f: tf.Tensor) -> tf.Tensor:
    """Mean squared (u'' + f) / pi^2 with u = x (1 - x) field(x)."""
    from hodiff import partials  # imported on use: --help does not import TensorFlow

    u = lambda z: z * (1.0 - z) * field(z)
    u_xx = partials(u, x, coords=("x",), wanted=("xx",))["xx"]
    return tf.reduce_mean(tf.square((u_xx + f) / np.pi**2))


def sample_tasks(rng: np.random.Generator, tasks: int, points: int):
    coefficients = rng.uniform(-1.0, 1.0, (tasks, MODES))
    xs, xq = rng.uniform(0.0, 1.0, (tasks, points, 1)), rng.uniform(0.0, 1.0, (tasks, points, 1))
    as32 = lambda a: tf.constant(a, tf.float32)
    return [
        as32(xs),
        as32(source(coefficients, xs[..., 0])[..., None]),
        as32(xq),
        as32(source(coefficients, xq[..., 0])[..., None]),
    ], coefficients


class Adaptation:
    """Adam on one task from a given initialisation, in compiled chunks; counts steps to an error."""

    def __init__(self, chunk: int, learning_rate: float):
        from hodiff.training.step import TrainStep

        self.model = network(0)
        self.x = tf.Variable(tf.zeros((128, 1)), trainable=False)
        self.f = tf.Variable(tf.zeros((128, 1)), trainable=False)
        self.optimizer = keras.optimizers.Adam(learning_rate)
        self.step = TrainStep(
            lambda: residual_loss(self.model, self.x, self.f),
            self.model,
            self.optimizer,
            steps_per_call=chunk,
            monitor=False,
        )
        self.chunk = chunk
        self.grid = np.linspace(0.0, 1.0, 201, dtype=np.float32)[:, None]

    def steps_to(self, weights, coefficients, target: float, max_steps: int, seed: int) -> tuple[int | None, float]:
        self.model.set_weights(weights)
        for variable in self.optimizer.variables:  # a fresh Adam: zero moments and step count
            if "learning_rate" not in variable.name:
                variable.assign(tf.zeros_like(variable))
        x = np.random.default_rng(seed).uniform(0.0, 1.0, (128, 1))
        self.x.assign(x.astype(np.float32))
        self.f.assign(source(coefficients, x[:, 0])[:, None].astype(np.float32))
        truth = exact(coefficients, self.grid[:, 0])
        error = np.inf
        for done in range(0, max_steps + 1, self.chunk):
            prediction = (self.grid * (1 - self.grid) * self.model(self.grid).numpy())[:, 0]
            error = float(np.linalg.norm(prediction - truth) / np.linalg.norm(truth))
            if error <= target:
                return done, error
            self.step()
        return None, error


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m pinn_examples maml_pinn", description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=10000, help="meta-iterations")
    parser.add_argument("--meta-batch", type=int, default=8)
    parser.add_argument("--inner-steps", type=int, default=5)
    parser.add_argument("--inner-lr", type=number(float, positive=True), default=0.01)
    parser.add_argument("--points", type=int, default=64, help="collocation points per support and query set")
    parser.add_argument("--held-out", type=int, default=20, help="held-out tasks for the evaluation")
    parser.add_argument("--target-error", type=number(float, positive=True), default=0.01)
    parser.add_argument("--max-steps", type=int, default=5000)
    parser.add_argument("--chunk", type=int, default=10, help="Adam steps between error checks")
    parser.add_argument(
        "--adapt-lr", type=number(float, positive=True), default=1e-2, help="Adam learning rate of the adaptation"
    )
    parser.add_argument("--seed", type=number(int, maximum=SEED_MAX), default=0)
    parser.add_argument("--output", default=os.path.join("results", "maml_pinn"))
    args = parser.parse_args(argv)
    for name in ("iterations", "meta_batch", "inner_steps", "points", "held_out", "max_steps", "chunk"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be >= 1")
    if args.target_error >= 1:
        parser.error(f"--target-error {args.target_error} must be < 1 (a relative L2 error)")

    objective = lambda model, params, x, f: residual_loss(lambda z: model(params, z), x, f)
    from hodiff.meta import MetaLearner

    learner = MetaLearner(
        network(args.seed),
        variant="maml",
        task_objective=objective,
        inner_steps=args.inner_steps,
        inner_learning_rate=args.inner_lr,
        outer_optimizer=keras.optimizers.Adam(1e-3),
    )
    rng = np.random.default_rng(args.seed)
    start = time.perf_counter()
    history = []
    for iteration in range(args.iterations):
        outputs = learner.meta_step(*sample_tasks(rng, args.meta_batch, args.points)[0])
        if iteration % 100 == 0 or iteration == args.iterations - 1:
            history.append((iteration, float(outputs["support_loss"]), float(outputs["loss"])))
            print(
                f"meta-iteration {iteration}: support loss before adaptation {history[-1][1]:.4f}, "
                f"query loss after {args.inner_steps} steps {history[-1][2]:.4f}",
                flush=True,
            )
    meta_seconds = time.perf_counter() - start

    adaptation = Adaptation(args.chunk, args.adapt_lr)
    meta_weights = [v.numpy() for v in learner.functional.variables]
    held_out = np.random.default_rng([args.seed, 999]).uniform(-1.0, 1.0, (args.held_out, MODES))
    rows = []
    for index, coefficients in enumerate(held_out):
        random_weights = network(1000 + index).get_weights()
        meta_steps, meta_error = adaptation.steps_to(
            meta_weights, coefficients, args.target_error, args.max_steps, seed=index
        )
        random_steps, random_error = adaptation.steps_to(
            random_weights, coefficients, args.target_error, args.max_steps, seed=index
        )
        rows.append(
            {
                "coefficients": coefficients.tolist(),
                "meta_steps": meta_steps,
                "random_steps": random_steps,
                "meta_error": meta_error,
                "random_error": random_error,
            }
        )
        print(
            f"task {index}: steps to error {args.target_error}: meta-learned init {meta_steps}, "
            f"random init {random_steps}",
            flush=True,
        )
    cap = lambda steps: args.max_steps if steps is None else steps
    meta_mean = float(np.mean([cap(r["meta_steps"]) for r in rows]))
    random_mean = float(np.mean([cap(r["random_steps"]) for r in rows]))
    meta_median = float(np.median([cap(r["meta_steps"]) for r in rows]))
    random_median = float(np.median([cap(r["random_steps"]) for r in rows]))
    summary = {
        "meta_iterations": args.iterations,
        "meta_seconds": round(meta_seconds, 1),
        "target_error": args.target_error,
        "mean_steps_meta_init": meta_mean,
        "mean_steps_random_init": random_mean,
        "speedup": random_mean / max(meta_mean, args.chunk),
        "median_steps_meta_init": meta_median,
        "median_steps_random_init": random_median,
        "median_speedup": random_median / max(meta_median, args.chunk),
        "unreached_meta": sum(r["meta_steps"] is None for r in rows),
        "unreached_random": sum(r["random_steps"] is None for r in rows),
        "settings": vars(args),
        "tasks": rows,
        "meta_history": history,
    }
    os.makedirs(args.output, exist_ok=True)
    with open(os.path.join(args.output, "metrics.json"), "w") as file:
        json.dump(summary, file, indent=2)
    print(
        f"maml_pinn: {args.iterations} meta-iterations in {meta_seconds:.0f} s; mean Adam steps to relative L2 error "
        f"{args.target_error}: {meta_mean:.0f} from the meta-learned init vs {random_mean:.0f} from random "
        f"({summary['speedup']:.1f}x fewer; unreached counted as {args.max_steps}); medians {meta_median:.0f} vs "
        f"{random_median:.0f} ({summary['median_speedup']:.1f}x); wrote {args.output}/metrics.json"
    )
    return 0


if __name__ == "__main__":  # python FILE runs it as python -m pinn_examples NAME does
    raise SystemExit(main())
