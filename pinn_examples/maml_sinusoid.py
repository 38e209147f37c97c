"""MAML, FOMAML and Meta-SGD on Finn et al. (2017)'s sinusoid regression benchmark.

Protocol (Finn, Abbeel & Levine 2017, Section 5.1; Li et al. 2017 for Meta-SGD):
- a task is y = A sin(x - phi), amplitude A ~ U[0.1, 5], phase phi ~ U[0, pi], x ~ U[-5, 5];
- network: MLP 1-40-40-1 with ReLU; loss: mean squared error;
- meta-training: K support and K query points per task, 25 tasks per meta-batch, one inner
  gradient step with alpha = 0.01 (Meta-SGD learns alpha per parameter from 0.01), Adam with
  meta learning rate 1e-3, ``--iterations`` meta-iterations (Finn et al. use 70,000);
- evaluation: 600 held-out tasks, K support points, 10 inner steps with the training inner
  learning rate, MSE on 100 query points per task after each step, reported with a 95%
  confidence interval (1.96 standard errors over tasks).

Writes ``results/maml_sinusoid/``: metrics.json (the table), curves.png (adapted curves on one
task and MSE against inner steps).
"""

from __future__ import annotations

import argparse
import json
import os
import time
from typing import TYPE_CHECKING

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras
import numpy as np
import tensorflow as tf

from pinn_examples.runner import SEED_MAX, number

if TYPE_CHECKING:
    from hodiff.meta import MetaLearner

VARIANTS = ("maml", "fomaml", "meta_sgd")


def sample_tasks(rng: np.random.Generator, tasks: int, support: int, query: int):
    amplitude = rng.uniform(0.1, 5.0, (tasks, 1, 1))
    phase = rng.uniform(0.0, np.pi, (tasks, 1, 1))
    xs, xq = rng.uniform(-5.0, 5.0, (tasks, support, 1)), rng.uniform(-5.0, 5.0, (tasks, query, 1))
    wave = lambda x: amplitude * np.sin(x - phase)
    as32 = lambda a: tf.constant(a, tf.float32)
    return as32(xs), as32(wave(xs)), as32(xq), as32(wave(xq)), (amplitude[:, 0, 0], phase[:, 0, 0])


def network(seed: int) -> keras.Model:
    keras.utils.set_random_seed(seed)
    return keras.Sequential(
        [
            keras.Input((1,)),
            keras.layers.Dense(40, activation="relu"),
            keras.layers.Dense(40, activation="relu"),
            keras.layers.Dense(1),
        ]
    )


def mse(prediction, target):
    return tf.reduce_mean(tf.square(prediction - target))


def evaluation_curve(learner: MetaLearner, steps: int):
    """A compiled function: per task, the query MSE before and after each of ``steps`` inner steps."""
    from hodiff.meta import inner_loop  # imported on use: --help does not import TensorFlow

    @tf.function(jit_compile=True)
    def curve(xs, ys, xq, yq):
        def one_task(index):
            params = learner.functional.parameters()
            support = lambda p: mse(learner.functional(p, xs[index]), ys[index])
            errors = [mse(learner.functional(params, xq[index]), yq[index])]
            rates = learner.rates()
            for step in range(steps):
                params, _ = inner_loop(support, params, 1, rates(step) if callable(rates) else rates, first_order=True)
                errors.append(mse(learner.functional(params, xq[index]), yq[index]))
            return tf.stack(errors)

        return tf.map_fn(one_task, tf.range(tf.shape(xs)[0]), fn_output_signature=tf.float32)

    return curve


def train_and_evaluate(variant: str, shots: int, args: argparse.Namespace) -> dict:
    from hodiff.meta import MetaLearner

    learner = MetaLearner(
        network(args.seed),
        mse,
        variant=variant,
        inner_steps=1,
        inner_learning_rate=0.01,
        outer_optimizer=keras.optimizers.Adam(1e-3),
    )
    rng = np.random.default_rng([args.seed, shots, VARIANTS.index(variant)])
    start = time.perf_counter()
    losses = []
    for iteration in range(args.iterations):
        outputs = learner.meta_step(*sample_tasks(rng, args.meta_batch, shots, shots)[:4])
        if iteration % 1000 == 0 or iteration == args.iterations - 1:
            losses.append((iteration, float(outputs["loss"])))
    seconds = time.perf_counter() - start
    evaluation = sample_tasks(np.random.default_rng([args.seed, 12345, shots]), args.eval_tasks, shots, 100)
    curve = evaluation_curve(learner, args.eval_steps)(*evaluation[:4]).numpy()  # (tasks, steps + 1)
    mean, half_width = curve.mean(axis=0), 1.96 * curve.std(axis=0, ddof=1) / np.sqrt(len(curve))
    return {
        "variant": variant,
        "shots": shots,
        "iterations": args.iterations,
        "train_seconds": round(seconds, 1),
        "mse_by_step": mean.tolist(),
        "ci95_by_step": half_width.tolist(),
        "mse_1_step": float(mean[1]),
        "ci95_1_step": float(half_width[1]),
        "mse_10_steps": float(mean[min(10, args.eval_steps)]),
        "ci95_10_steps": float(half_width[min(10, args.eval_steps)]),
        "meta_loss_history": losses,
        "learner": learner,
        "evaluation": evaluation,
    }


def plot(results: list[dict], path: str, shots: int) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    chosen = [r for r in results if r["shots"] == shots] or results
    figure, (left, right) = plt.subplots(1, 2, figsize=(13, 4.5), constrained_layout=True)
    xs, ys, _, _, (amplitude, phase) = chosen[0]["evaluation"]
    grid = np.linspace(-5, 5, 200, dtype=np.float32)[:, None]
    left.plot(grid, amplitude[0] * np.sin(grid - phase[0]), "k", linewidth=2, label="true sinusoid")
    left.plot(xs[0], ys[0], "k^", markersize=8, label=f"{chosen[0]['shots']} support points")
    for result, color in zip(chosen, ("C0", "C1", "C2")):
        learner = result["learner"]
        left.plot(
            grid, learner.functional(learner.functional.parameters(), grid), color=color, linestyle=":", alpha=0.6
        )
        # Meta-SGD's learned rates are meant for one step (Li et al. 2017); repeated, they diverge.
        one_step_only = result["variant"] == "meta_sgd"
        for steps, style in ((1, "--"),) if one_step_only else ((1, "--"), (10, "-")):
            params, _ = learner.adapt_parameters(xs[0], ys[0], steps=steps, first_order=True)
            left.plot(
                grid,
                learner.functional(params, grid),
                color=color,
                linestyle=style,
                label=f"{result['variant']}, {steps} step{'s' * (steps > 1)}",
            )
        shown = 2 if one_step_only else len(result["mse_by_step"])
        right.errorbar(
            np.arange(shown),
            result["mse_by_step"][:shown],
            yerr=result["ci95_by_step"][:shown],
            color=color,
            capsize=3,
            label=f"{result['variant']} (learned rates: 1 step)" if one_step_only else result["variant"],
        )
    left.set_title("adapted curves on a held-out task (dotted: before adaptation)")
    left.legend(fontsize=8)
    right.set_xlabel("inner gradient steps")
    right.set_ylabel(f"query MSE, {chosen[0]['shots']}-shot (mean and 95% CI over tasks)")
    right.set_yscale("log")
    right.legend()
    figure.savefig(path, dpi=110)
    plt.close(figure)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m pinn_examples maml_sinusoid", description=__doc__.splitlines()[0])
    parser.add_argument("--variants", default=",".join(VARIANTS), help="comma-separated subset of maml,fomaml,meta_sgd")
    parser.add_argument("--shots", default="5,10,20", help="comma-separated K values")
    parser.add_argument("--iterations", type=int, default=20000, help="meta-iterations per variant and K")
    parser.add_argument("--meta-batch", type=int, default=25)
    parser.add_argument("--eval-tasks", type=int, default=600)
    parser.add_argument("--eval-steps", type=int, default=10)
    parser.add_argument("--seed", type=number(int, maximum=SEED_MAX), default=0)
    parser.add_argument("--output", default=os.path.join("results", "maml_sinusoid"))
    args = parser.parse_args(argv)
    variants = [v.strip() for v in args.variants.split(",") if v.strip()]
    unknown = [v for v in variants if v not in VARIANTS]
    if unknown or not variants:
        parser.error(f"--variants: {unknown or variants} not among {VARIANTS}")
    try:
        shots = [int(k) for k in args.shots.split(",")]
    except ValueError:
        parser.error(f"--shots must be comma-separated integers, got {args.shots!r}")
    for name in ("iterations", "meta_batch", "eval_tasks", "eval_steps"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be >= 1")
    if any(k < 1 for k in shots):
        parser.error("--shots must be >= 1")

    results = []
    for k in shots:
        for variant in variants:
            result = train_and_evaluate(variant, k, args)
            results.append(result)
            print(
                f"{variant:>8} {k:2d}-shot: {args.iterations} meta-iterations in {result['train_seconds']:.0f} s; "
                f"MSE after 1 step {result['mse_1_step']:.3f} +- {result['ci95_1_step']:.3f}, "
                f"after {args.eval_steps} steps {result['mse_10_steps']:.3f} +- {result['ci95_10_steps']:.3f}",
                flush=True,
            )
    os.makedirs(args.output, exist_ok=True)
    plot(results, os.path.join(args.output, "curves.png"), shots=10 if 10 in shots else shots[0])
    table = [{key: value for key, value in r.items() if key not in ("learner", "evaluation")} for r in results]
    with open(os.path.join(args.output, "metrics.json"), "w") as file:
        json.dump({"protocol": __doc__, "results": table}, file, indent=2)
    print(f"wrote {args.output}/metrics.json and curves.png")
    return 0


if __name__ == "__main__":  # python FILE runs it as python -m pinn_examples NAME does
    raise SystemExit(main())
