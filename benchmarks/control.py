"""``python -m benchmarks control``: cost of hodiff's compiled training step, side by side.

1. Overhead: hodiff's ``TrainStep`` with accumulation (4 micro-batches), global-norm clipping,
   non-finite skipping and gradient statistics, against the plain Keras step
   (``tape.gradient`` + ``optimizer.apply_gradients`` in a ``tf.function(jit_compile=True)``),
   per micro-batch on the same model and data. Target: at most 1.15x. Two more baselines: the
   Keras step called through its concrete function (``get_concrete_function``: no tf.function
   dispatch, which ``TrainStep`` skips the same way), and the Keras step with the same gradient
   statistics. The compiled programs' kernel counts (XLA fusions and dots: run on every call,
   and inside conditionals) say where the work is.
2. Dispatch: ``steps_per_call=100`` against ``steps_per_call=1`` for a small MLP, per step.

Writes ``benchmarks/results/control.json`` and prints a Markdown table.
"""

from __future__ import annotations

import os
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import re

import keras
import numpy as np
import tensorflow as tf

from benchmarks.timing import interleaved_median_seconds, machine, on_device, report, suite_arguments
from hodiff.training import transforms
from hodiff.training.monitor import gradient_stats
from hodiff.training.step import TrainStep

RESULTS = Path(__file__).parent / "results" / "control.json"


def mlp(d_in: int, width: int, depth: int, seed: int = 0) -> keras.Model:
    keras.utils.set_random_seed(seed)
    layers = [keras.Input((d_in,))] + [keras.layers.Dense(width, activation="relu") for _ in range(depth)]
    return keras.Sequential(layers + [keras.layers.Dense(1)])


def data(batch: int, d_in: int) -> tuple[tf.Tensor, tf.Tensor]:
    rng = np.random.default_rng(0)
    return tf.constant(rng.normal(size=(batch, d_in)), tf.float32), tf.constant(rng.normal(size=(batch, 1)), tf.float32)


def plain_keras_step(model: keras.Model, optimizer: keras.optimizers.Optimizer, stats: bool = False):
    """What a Keras user writes: one compiled step, gradient then apply_gradients (with ``stats``,
    also :func:`hodiff.training.monitor.gradient_stats` of the gradients, returned after the loss)."""

    @tf.function(jit_compile=True)
    def step(x, y):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean((model(x) - y) ** 2)
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
        return (loss, gradient_stats(grads)) if stats else loss

    return step


def kernels(compiled, *args) -> dict:
    """XLA kernels (fusions and dots) of a compiled function's optimized HLO: those every call
    runs, and per conditional those of its true and false branches (one of them runs)."""
    text = compiled.experimental_get_compiler_ir(*args)(stage="optimized_hlo")
    blocks = {block.split(" ", 1)[0].lstrip("%"): block for block in re.split(r"\n(?=\S)", text)}
    count = lambda block: len(re.findall(r" (?:fusion|dot)\(", block))
    entry = next(block for block in blocks.values() if block.startswith("ENTRY"))
    branches = re.findall(r"true_computation=%([\w.-]+), false_computation=%([\w.-]+)", text)
    return {
        "every_call": count(entry),
        "conditionals": [[count(blocks.get(true, "")), count(blocks.get(false, ""))] for true, false in branches],
    }


def hodiff_step(model: keras.Model, steps_per_call: int = 1, transform: bool = True, monitor: bool = True) -> TrainStep:
    chain = transforms.chain(transforms.skip_nonfinite(), transforms.accumulate(4), transforms.clip_by_global_norm(1.0))
    loss_fn = lambda x, y: tf.reduce_mean((model(x) - y) ** 2)
    return TrainStep(
        loss_fn,
        model,
        keras.optimizers.Adam(1e-4),
        transform=chain if transform else None,
        steps_per_call=steps_per_call,
        monitor=monitor,
    )


def bench_overhead(width: int, depth: int, batch: int, repeats: int) -> dict:
    x, y = data(batch, 32)
    plain = plain_keras_step(mlp(32, width, depth), keras.optimizers.Adam(1e-4))
    with_stats = plain_keras_step(mlp(32, width, depth), keras.optimizers.Adam(1e-4), stats=True)
    step = hodiff_step(mlp(32, width, depth))
    concrete = plain.get_concrete_function(x, y)
    times = interleaved_median_seconds(
        {
            "keras_apply_gradients": lambda: plain(x, y),
            "keras_apply_gradients_concrete": lambda: concrete(x, y),
            "keras_apply_gradients_with_stats": lambda: with_stats(x, y)[0],
            # the statistics read every call, as the Keras step computes them every call (a step whose statistics are
            # not read computes none: hodiff.training.monitor.GradientStats)
            "hodiff_train_step": lambda: step(x, y)["gradient_stats"]["global_norm"],
        },
        repeats=repeats,
        calls=20,
    )
    return {
        "width": width,
        "depth": depth,
        "batch": batch,
        "seconds": times,
        "ratio": times["hodiff_train_step"] / times["keras_apply_gradients"],
        "ratio_to_keras_concrete": times["hodiff_train_step"] / times["keras_apply_gradients_concrete"],
        "ratio_to_keras_with_stats": times["hodiff_train_step"] / times["keras_apply_gradients_with_stats"],
        "kernels": {
            "keras_apply_gradients": kernels(plain, x, y),
            "keras_apply_gradients_with_stats": kernels(with_stats, x, y),
            "hodiff_train_step": kernels(step._compiled, x, y),
        },
    }


def bench_breakdown(repeats: int) -> dict:
    """Where the 64 x 2 step's time goes: TrainStep with and without its transforms and its
    statistics (read after every call, which computes them), each called as usual (its concrete
    function) and the full and bare ones also through ``tf.function``'s dispatch (the compiled step
    alone: the statistics are not computed there), beside the Keras step."""
    x, y = data(64, 32)
    plain = plain_keras_step(mlp(32, 64, 2), keras.optimizers.Adam(1e-4))
    steps = {
        "full": hodiff_step(mlp(32, 64, 2)),
        "transforms_only": hodiff_step(mlp(32, 64, 2), monitor=False),
        "statistics_only": hodiff_step(mlp(32, 64, 2), transform=False),
        "bare": hodiff_step(mlp(32, 64, 2), transform=False, monitor=False),
    }
    candidates = {"keras_apply_gradients": lambda: plain(x, y)}
    for name, step in steps.items():
        if step.monitor:  # the statistics read every call: computed when read
            candidates[name] = lambda step=step: step(x, y)["gradient_stats"]["global_norm"]
        else:
            candidates[name] = lambda step=step: step(x, y)["loss"]
        if name in ("full", "bare"):  # the compiled step alone: with the monitor, it returns the raw gradients
            candidates[f"{name}_through_dispatch"] = lambda step=step: step._compiled(x, y)["loss"]
    times = interleaved_median_seconds(candidates, repeats=repeats, calls=20)
    counts = {"keras_apply_gradients": kernels(plain, x, y)}
    counts.update({name: kernels(step._compiled, x, y) for name, step in steps.items()})
    return {"seconds": times, "kernels": counts}


def bench_dispatch(steps_per_call: int, repeats: int) -> dict:
    x, y = data(32, 2)
    single = hodiff_step(mlp(2, 16, 2), 1, transform=False, monitor=False)
    looped = hodiff_step(mlp(2, 16, 2), steps_per_call, transform=False, monitor=False)
    times = interleaved_median_seconds(
        {
            "steps_per_call_1": lambda: single(x, y)["loss"],
            f"steps_per_call_{steps_per_call}": lambda: looped(x, y)["loss"],
        },
        repeats=repeats,
        calls=3,
    )
    per_step = {
        "steps_per_call_1": times["steps_per_call_1"],
        f"steps_per_call_{steps_per_call}": times[f"steps_per_call_{steps_per_call}"] / steps_per_call,
    }
    return {
        "model": "2-16-16-1 relu MLP, batch 32",
        "seconds_per_step": per_step,
        "speedup": per_step["steps_per_call_1"] / per_step[f"steps_per_call_{steps_per_call}"],
    }


def markdown(results: dict) -> str:
    lines = [
        "| MLP (width x depth, batch) | Keras apply_gradients (ms/micro-batch) | Keras, concrete function (ms) "
        "| Keras + gradient_stats (ms) | hodiff TrainStep, accumulate 4 + clip + skip + stats (ms) | ratio "
        "| ratio to Keras concrete | ratio to Keras + stats |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for case in results["overhead"]:
        ms = {name: f"{1e3 * seconds:.3f}" for name, seconds in case["seconds"].items()}
        lines.append(
            f"| {case['width']} x {case['depth']}, {case['batch']} | {ms['keras_apply_gradients']} "
            f"| {ms['keras_apply_gradients_concrete']} | {ms['keras_apply_gradients_with_stats']} "
            f"| {ms['hodiff_train_step']} | {case['ratio']:.2f}x | {case['ratio_to_keras_concrete']:.2f}x "
            f"| {case['ratio_to_keras_with_stats']:.2f}x |"
        )
    first = results["overhead"][0]
    lines += [
        "",
        f"XLA kernels (fusions and dots) on the {first['width']} x {first['depth']} model, run on every call "
        "(and in the true / false branches of each conditional): "
        + ", ".join(
            f"{name} {k['every_call']}" + "".join(f" ({t} / {f})" for t, f in k["conditionals"])
            for name, k in first["kernels"].items()
        ),
    ]
    breakdown = results["breakdown"]
    keras_seconds = breakdown["seconds"]["keras_apply_gradients"]
    lines += [
        "",
        "| 64 x 2 model, batch 64 | ms/micro-batch | vs Keras | XLA kernels every call (branches) |",
        "|---|---|---|---|",
    ]
    for name, seconds in breakdown["seconds"].items():
        counts = breakdown["kernels"].get(name)
        kernel_text = (
            f"{counts['every_call']}" + "".join(f" ({t} / {f})" for t, f in counts["conditionals"]) if counts else ""
        )
        lines.append(f"| {name} | {1e3 * seconds:.3f} | {seconds / keras_seconds:.2f}x | {kernel_text} |")
    dispatch = results["dispatch"]
    (one, many) = dispatch["seconds_per_step"].items()
    lines += [
        "",
        f"| {dispatch['model']} | {one[0]} (ms/step) | {many[0]} (ms/step) | speedup |",
        "|---|---|---|---|",
        f"| | {1e3 * one[1]:.4f} | {1e3 * many[1]:.4f} | {dispatch['speedup']:.1f}x |",
    ]
    return "\n".join(lines)


def main(argv=None) -> int:
    args = suite_arguments("control", __doc__.splitlines()[0], 15, RESULTS, argv)
    repeats = args.repeats
    cases = [(64, 2, 64)] if args.quick else [(64, 2, 64), (256, 3, 256), (512, 4, 1024)]
    results = {"machine": machine(), "device": args.device, "overhead": []}
    with on_device(args.device):
        for width, depth, batch in cases:
            print(f"step overhead: width {width}, depth {depth}, batch {batch} ...", flush=True)
            results["overhead"].append(bench_overhead(width, depth, batch, repeats))
        print("breakdown ...", flush=True)
        results["breakdown"] = bench_breakdown(repeats)
        print("steps_per_call ...", flush=True)
        results["dispatch"] = bench_dispatch(100, repeats)
    report(results, markdown(results), args.output)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
