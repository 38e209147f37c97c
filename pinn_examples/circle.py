"""Training-loop example: an MLP on a synthetic circle dataset, with and without clipping.

Points are uniform in [-1.5, 1.5]^2; the target is +1 inside the unit circle and -1 outside
(squared-error loss). Both runs use the same seed, SGD with momentum at a learning rate that is
too large, gradient accumulation over micro-batches, and skip_nonfinite. Without clipping the
loss overflows and every later step is skipped (the run stops after a streak of skips); with
global-norm clipping the same learning rate trains. Writes both loss curves as a PNG.
"""

from __future__ import annotations

import argparse
import json
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras
import numpy as np
import tensorflow as tf

from pinn_examples.runner import SEED_MAX, number


def circle_data(count: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    x = np.random.default_rng(seed).uniform(-1.5, 1.5, size=(count, 2)).astype("float32")
    y = np.where(np.sum(x**2, axis=1) < 1.0, 1.0, -1.0)[:, None].astype("float32")
    return x, y


def train(args: argparse.Namespace, clip: bool) -> dict:
    from hodiff.training import transforms  # imported on use: --help does not import TensorFlow
    from hodiff.training.step import TrainStep

    """One run; returns its loss curve, skip record and accuracy."""
    keras.utils.set_random_seed(args.seed)
    model = keras.Sequential(
        [
            keras.Input((2,)),
            keras.layers.Dense(64, activation="tanh"),
            keras.layers.Dense(64, activation="tanh"),
            keras.layers.Dense(1),
        ]
    )
    chain = [transforms.skip_nonfinite(), transforms.accumulate(args.accumulate)]
    if clip:
        chain.append(transforms.clip_by_global_norm(args.max_norm))
    step = TrainStep(
        lambda x, y: tf.reduce_mean((model(x) - y) ** 2),
        model,
        keras.optimizers.SGD(args.lr, momentum=0.9),
        transform=transforms.chain(*chain),
    )
    x, y = circle_data(args.points, args.seed)
    batches = len(x) // args.micro_batch
    losses, first_skip, outputs = [], None, {}
    for index in range(args.steps):
        start = (index % batches) * args.micro_batch
        outputs = step(x[start : start + args.micro_batch], y[start : start + args.micro_batch])
        losses.append(float(outputs["loss"]))
        if bool(outputs["skipped"]) and first_skip is None:
            first_skip = index
            print(
                f"  {'clipped' if clip else 'unclipped'}: non-finite gradients at micro-step {index} "
                f"(loss {losses[-1]:.3g}); the step was skipped, weights and optimizer untouched"
            )
        if int(outputs["consecutive_skips"]) >= args.stop_after_skips:
            print(
                f"  {'clipped' if clip else 'unclipped'}: {args.stop_after_skips} consecutive skipped steps; "
                "the run has diverged, stopping"
            )
            break
    accuracy = float(np.mean(np.sign(model(x).numpy()) == y))
    return {
        "losses": losses,
        "first_skip": first_skip,
        "total_skips": int(outputs["total_skips"]),
        "updates": int(step.optimizer.iterations.numpy()),
        "accuracy": accuracy,
    }


def plot(runs: dict, path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axis = plt.subplots(figsize=(7, 4))
    for name, run in runs.items():
        losses = np.array(run["losses"])
        axis.semilogy(np.where(np.isfinite(losses), losses, np.nan), label=f"{name} (accuracy {run['accuracy']:.1%})")
        if run["first_skip"] is not None:
            axis.axvline(
                run["first_skip"], color="red", linestyle=":", label=f"{name}: first skipped step ({run['first_skip']})"
            )
    axis.set_xlabel("micro-step")
    axis.set_ylabel("loss (micro-batch)")
    axis.set_title("Circle dataset, SGD with a too-large learning rate")
    axis.legend()
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m pinn_examples circle", description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=800, help="micro-batch steps per run")
    parser.add_argument(
        "--lr", type=number(float, positive=True), default=0.5, help="SGD learning rate (large on purpose)"
    )
    parser.add_argument(
        "--max-norm", type=number(float, positive=True), default=0.25, help="global-norm clipping bound"
    )
    parser.add_argument("--accumulate", type=int, default=4, help="micro-batches per update")
    parser.add_argument("--micro-batch", type=int, default=64)
    parser.add_argument("--points", type=int, default=1024)
    parser.add_argument("--stop-after-skips", type=int, default=50)
    parser.add_argument("--seed", type=number(int, maximum=SEED_MAX), default=0)
    parser.add_argument("--output", default=os.path.join("results", "circle"))
    args = parser.parse_args(argv)
    for name in ("steps", "accumulate", "micro_batch", "points", "stop_after_skips"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be >= 1, got {getattr(args, name)}")

    print(f"circle: SGD(lr={args.lr}, momentum=0.9), {args.accumulate} micro-batches of {args.micro_batch} per update")
    runs = {"unclipped": train(args, clip=False), "clipped": train(args, clip=True)}
    os.makedirs(args.output, exist_ok=True)
    plot(runs, os.path.join(args.output, "loss.png"))
    summary = {name: {key: value for key, value in run.items() if key != "losses"} for name, run in runs.items()}
    with open(os.path.join(args.output, "metrics.json"), "w") as file:
        json.dump(summary, file, indent=2)
    for name, run in summary.items():
        skip = "never" if run["first_skip"] is None else f"first at micro-step {run['first_skip']}"
        print(
            f"{name:>9}: {run['updates']} updates, accuracy {run['accuracy']:.1%}, "
            f"skipped steps: {run['total_skips']} ({skip})"
        )
    print(f"wrote {args.output}/loss.png and metrics.json")
    return 0


if __name__ == "__main__":  # python FILE runs it as python -m pinn_examples NAME does
    raise SystemExit(main())
