"""``python -m benchmarks derivatives``: Laplacian paths and HVP cost, all compiled with XLA.

For a tanh MLP with 4 hidden layers it times, side by side in one run:
- the Laplacian by hodiff's nested tapes, hodiff's forward (Taylor) path, and TensorFlow's own
  route (``batch_jacobian`` of the gradient, then the trace), for the operator alone and for a
  training step through it (loss = mean Laplacian^2, gradient w.r.t. the weights, SGD update);
- a Hessian-vector product (both modes) against a plain gradient of the same loss;
- the same in JAX (``benchmarks/peers.py``, two recipes) when JAX is installed.
Writes ``benchmarks/results/derivatives.json`` and prints a Markdown table.
"""

import os
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras
import numpy as np
import tensorflow as tf

import hodiff
from benchmarks import peers
from benchmarks.timing import interleaved_median_seconds, machine, on_device, report, run_in_child, suite_arguments

CONFIGS = [(2, 20, 2540), (3, 64, 4096), (10, 128, 1024), (100, 128, 256)]  # (d, width, N)
RESULTS = Path(__file__).parent / "results" / "derivatives.json"


def mlp(d: int, width: int, seed: int = 0) -> keras.Model:
    keras.utils.set_random_seed(seed)
    layers = [keras.Input((d,))] + [keras.layers.Dense(width, activation="tanh") for _ in range(4)]
    return keras.Sequential(layers + [keras.layers.Dense(1)])


def tf_batch_jacobian_laplacian(model):
    """The plain-TF way: Hessian per point with tape.batch_jacobian, then its trace."""

    def laplacian(x):
        with tf.GradientTape() as outer:
            outer.watch(x)
            with tf.GradientTape() as inner:
                inner.watch(x)
                u = model(x)
            gradient = inner.gradient(u, x)
        return tf.linalg.trace(outer.batch_jacobian(gradient, x))[:, None]

    return laplacian


def laplacian_routes(model):
    return {
        "nested": hodiff.laplacian(model, method="nested"),
        "forward": hodiff.laplacian(model, method="forward"),
        "tf_batch_jacobian": tf_batch_jacobian_laplacian(model),
    }


def training_step(model, laplacian, learning_rate=1e-4):
    def step(x):
        loss = lambda weights: tf.reduce_mean(tf.square(laplacian(x)))
        # hodiff.grad, not tape.gradient(..., unconnected_gradients="zero"), which fails on Keras 3
        # variables (their dtype is a string); the output bias has no effect on a Laplacian.
        value, gradients = hodiff.value_and_grad(loss, unconnected="zero")(model.trainable_variables)
        for variable, gradient in zip(model.trainable_variables, gradients):
            variable.assign_sub(learning_rate * gradient)
        return value

    return step


def points(d, n):
    return tf.random.stateless_uniform((n, d), seed=[0, 1], minval=-1.0, maxval=1.0)


def compiled_route(d, width, n, route_name, what):
    """A zero-argument XLA-compiled callable: the operator or a training step through it."""
    model = mlp(d, width)
    x = points(d, n)
    route = laplacian_routes(model)[route_name]
    fn = route if what == "operator" else training_step(model, route)
    compiled = tf.function(fn, jit_compile=True)
    return lambda: compiled(x)


def _time_in_child(queue, d, width, n, route_name, what, repeats, device):
    with on_device(device):
        route = compiled_route(d, width, n, route_name, what)
        queue.put(interleaved_median_seconds({route_name: route}, repeats=repeats)[route_name])


def time_with_compile_budget(d, width, n, route_name, what, repeats, budget_seconds, device=None):
    """Times one route in a child process; None when compiling and timing exceed the budget.

    TensorFlow's own batch_jacobian route can spend many minutes in XLA's constant folding
    (pfor-expanded graphs); a child process can be stopped, a compiling thread cannot.
    """
    return run_in_child(_time_in_child, (d, width, n, route_name, what, repeats, device), budget_seconds)


def bench_laplacian(d, width, n, repeats, tf_budget_seconds, device=None, with_peers=True):
    operators = {name: compiled_route(d, width, n, name, "operator") for name in ("nested", "forward")}
    steps = {name: compiled_route(d, width, n, name, "step") for name in ("nested", "forward")}
    if with_peers and peers.jax_installed():
        for name, (operator, step) in peers.jax_laplacian_routes(mlp(d, width), points(d, n)).items():
            if name == "jax_hessian_trace" and d > 10:  # a d x d Hessian per point, seconds per step: not timed
                continue
            operators[name], steps[name] = operator, step
    operator_seconds = interleaved_median_seconds(operators, repeats=repeats)
    step_seconds = interleaved_median_seconds(steps, repeats=repeats)
    for what, seconds in (("operator", operator_seconds), ("step", step_seconds)):
        if tf_budget_seconds <= 0:
            continue
        tf_seconds = time_with_compile_budget(
            d, width, n, "tf_batch_jacobian", what, repeats, tf_budget_seconds, device
        )
        if tf_seconds is not None:
            seconds["tf_batch_jacobian"] = tf_seconds
    # Agreement with nested, from the operators already compiled above (TF's route compiles
    # quickly for the operator alone, so it is checked here when it was timed).
    outputs = dict(operators)
    if "tf_batch_jacobian" in operator_seconds:
        outputs["tf_batch_jacobian"] = compiled_route(d, width, n, "tf_batch_jacobian", "operator")
    reference = np.reshape(np.asarray(operators["nested"]()), -1)
    agreement = {
        name: float(np.max(np.abs(np.reshape(np.asarray(run()), -1) - reference))) for name, run in outputs.items()
    }
    return {
        "d": d,
        "width": width,
        "N": n,
        "operator_seconds": operator_seconds,
        "step_seconds": step_seconds,
        "tf_batch_jacobian_budget_seconds": tf_budget_seconds,
        "max_abs_difference_vs_nested": agreement,
    }


def bench_hvp(d, width, n, repeats, with_peers=True):
    model = mlp(d, width)
    x = tf.random.stateless_uniform((n, d), seed=[0, 2], minval=-1.0, maxval=1.0)
    target = tf.sin(tf.reduce_sum(x, axis=1, keepdims=True))
    weights = model.trainable_variables
    loss = lambda _: tf.reduce_mean(tf.square(model(x) - target))
    directions = [tf.random.stateless_normal(w.shape, seed=[i, 3]) for i, w in enumerate(weights)]
    candidates = {
        "gradient": tf.function(lambda: hodiff.grad(loss)(weights), jit_compile=True),
        "hvp_forward_over_reverse": tf.function(lambda: hodiff.hvp(loss, weights, directions), jit_compile=True),
        "hvp_reverse_over_reverse": tf.function(
            lambda: hodiff.hvp(loss, weights, directions, mode="reverse_over_reverse"), jit_compile=True
        ),
    }
    if with_peers and peers.jax_installed():
        candidates.update(peers.jax_hvp_routes(model, x, target, directions))
    return {"d": d, "width": width, "N": n, "seconds": interleaved_median_seconds(candidates, repeats=repeats)}


def markdown(results) -> str:
    lines = [
        "| d | width | N | what | nested (ms) | forward (ms) | TF batch_jacobian (ms) "
        "| JAX hessian trace (ms) | JAX forward-over-reverse (ms) | nested / forward | TF / forward "
        "| fastest JAX / forward |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for row in results["laplacian"]:
        for what, key in (("operator", "operator_seconds"), ("training step", "step_seconds")):
            t = row[key]
            budget = row["tf_batch_jacobian_budget_seconds"]
            done = "tf_batch_jacobian" in t
            tf_ms = (
                f"{1e3 * t['tf_batch_jacobian']:.2f}"
                if done
                else (f"not done in {budget:.0f} s" if budget > 0 else "not timed")
            )
            tf_ratio = f"{t['tf_batch_jacobian'] / t['forward']:.2f}x" if done else "-"
            jax = {name: t[name] for name in ("jax_hessian_trace", "jax_forward_over_reverse") if name in t}
            jax_ms = [
                f"{1e3 * jax[name]:.2f}" if name in jax else ("not installed" if not jax else "not timed")
                for name in ("jax_hessian_trace", "jax_forward_over_reverse")
            ]
            jax_ratio = f"{min(jax.values()) / t['forward']:.2f}x" if jax else "-"
            lines.append(
                f"| {row['d']} | {row['width']} | {row['N']} | {what} | {1e3 * t['nested']:.2f} "
                f"| {1e3 * t['forward']:.2f} | {tf_ms} | {jax_ms[0]} | {jax_ms[1]} "
                f"| {t['nested'] / t['forward']:.2f}x | {tf_ratio} | {jax_ratio} |"
            )
    h = results["hvp"]["seconds"]
    lines += [
        "",
        "| HVP (d={d}, width {width}, N={N}, w.r.t. weights) | ms | / gradient |".format(**results["hvp"]),
        "|---|---|---|",
    ]
    for name, seconds in h.items():
        gradient = h["jax_gradient"] if name.startswith("jax_") else h["gradient"]  # each library vs its own gradient
        lines.append(f"| {name} | {1e3 * seconds:.2f} | {seconds / gradient:.2f}x |")
    return "\n".join(lines)


def main(argv=None) -> int:
    def extra(parser):
        parser.add_argument(
            "--config", action="append", metavar="D,WIDTH,N", help="run only these configs (repeatable)"
        )
        parser.add_argument(
            "--tf-budget",
            type=float,
            default=180.0,
            help="seconds allowed to compile and time TF's own route, per case (0: skip it)",
        )

    args = suite_arguments("derivatives", __doc__.splitlines()[0], 7, RESULTS, argv, extra=extra)
    configs = CONFIGS[:1] if args.quick else CONFIGS
    if args.config:
        configs = [tuple(int(v) for v in config.split(",")) for config in args.config]
    budget = 0.0 if args.quick else args.tf_budget
    results = {"machine": machine(), "device": args.device, "laplacian": []}
    with on_device(args.device):
        for d, width, n in configs:
            print(f"Laplacian d={d} width={width} N={n} ...", flush=True)
            results["laplacian"].append(
                bench_laplacian(d, width, n, args.repeats, budget, args.device, with_peers=not args.quick)
            )
        print("HVP vs gradient ...", flush=True)
        results["hvp"] = bench_hvp(3, 64, 4096, args.repeats, with_peers=not args.quick)
    report(results, markdown(results), args.output)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
