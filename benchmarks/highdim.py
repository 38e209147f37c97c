"""``python -m benchmarks highdim``: a Poisson training step in D = 100, 1,000, 10,000 dimensions.

One training step = the loss ``mean((Delta u - f)^2)`` at ``N`` points, its gradient with respect
to the weights and an SGD update, for a 4 x 128 tanh MLP in float32, every route compiled with
``tf.function(jit_compile=True)``. The Laplacian comes from, side by side in one run:

- **STDE sparse**: :func:`hodiff.jets.stde.estimate`, ``sampling="sparse"``: ``B`` random coordinates
  per point, their second-order jets in one forward pass (collapsed, ``with_stderr=False``);
- **STDE Rademacher**: the same with ``S`` dense Rademacher directions;
- **forward Laplacian**: ``hodiff.laplacian(model, method="forward")``, exact (all ``D`` directions);
- **SDGD (nested tapes)**: the same ``B`` random coordinates per point, each ``u_ii`` by a
  reverse pass over the gradient inside nested ``GradientTape``s (Hu et al. 2024);
- **Hutchinson (HVP)**: ``S`` Rademacher probes, ``v^T H v`` by reverse-over-reverse
  Hessian-vector products (:func:`hodiff.hvp`).

The stochastic routes draw exactly as :func:`hodiff.jets.stde.estimate` does, so STDE sparse and SDGD
(and STDE Rademacher and Hutchinson) compute the same estimator, sample for sample: equal
variance, and only the time differs. For each route it reports the median time per step, the
memory one step needs (resident-set growth of a fresh process over its first steps), and for the
stochastic ones the variance of the per-point Laplacian estimate over independent draws, and
variance x time (the variance at a matched time budget, up to a constant).

Order 4: the biharmonic by jets (``stde.exact(model, x, stde.biharmonic_terms())``, which is
``operators.Biharmonic()(model, "forward")``: one collapsed Taylor pass,
:func:`hodiff.jets.propagation.forward_biharmonic`) against four nested tapes (the Laplacian of
the Laplacian by nested tapes), against ``stde.exact(..., method="nested")`` (four nested tapes
along each of the ``d^2`` directions of the polarisation formula) and against those ``d^2``
order-4 jets in one stacked Taylor pass (the previous forward route), operator alone, at
d = 2, 8, 32; values checked to agree. Above d = 8 the Laplacian
of the Laplacian runs without XLA (its graph of about d^2 nested passes takes minutes to build).

Writes ``benchmarks/results/highdim.json`` and prints Markdown tables. Targets: STDE step >= 10x
faster than SDGD at D = 1,000 (equal variance), biharmonic by jets >= 3x faster than four
nested tapes at d = 8.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras
import numpy as np
import tensorflow as tf

import hodiff
from benchmarks.timing import interleaved_median_seconds, machine, on_device, report, run_in_child, suite_arguments
from hodiff.jets import stde
from hodiff.jets.taylor import weighted_jets

RESULTS = Path(__file__).parent / "results" / "highdim.json"
DIMS = (100, 1000, 10000)
BIHARMONIC_DIMS = (2, 8, 32)
WIDTH, DEPTH = 128, 4
POINTS = 100  # collocation points per step
SAMPLES = 16  # B sampled coordinates (STDE sparse, SDGD) and S probes (Rademacher, Hutchinson)
BIHARMONIC_POINTS = 64
LEARNING_RATE = 1e-4
MEMORY_BUDGET_BYTES = 4 * 2**30  # routes estimated to need more are skipped, with the estimate
ROUTES = ("stde_sparse", "stde_rademacher", "forward_laplacian", "sdgd_nested", "hutchinson_hvp")
TIMED_ONLY = ("sdgd_nested_sorted_draw",)  # timed beside the others; same estimator as sdgd_nested
STOCHASTIC = ("stde_sparse", "stde_rademacher", "sdgd_nested", "hutchinson_hvp")
LABELS = {
    "stde_sparse": "STDE sparse (jets)",
    "stde_rademacher": "STDE Rademacher (jets)",
    "forward_laplacian": "forward Laplacian (exact)",
    "sdgd_nested": "SDGD (nested tapes)",
    "sdgd_nested_sorted_draw": "SDGD, draw sorted by XLA (previous runs)",
    "hutchinson_hvp": "Hutchinson (HVP rev-over-rev)",
}


def mlp(d: int, width: int = WIDTH, depth: int = DEPTH, dtype: str = "float32", seed: int = 0) -> keras.Model:
    keras.utils.set_random_seed(seed)
    layers = [keras.Input((d,), dtype=dtype)] + [
        keras.layers.Dense(width, activation="tanh", dtype=dtype) for _ in range(depth)
    ]
    return keras.Sequential(layers + [keras.layers.Dense(1, dtype=dtype)])


def _seed(seed, stream: int) -> tf.Tensor:
    return tf.stack([tf.cast(seed, tf.int64), tf.constant(stream, tf.int64)])


def sampled_coordinates(x: tf.Tensor, num_samples: int, seed, sort_in_xla: bool = False) -> tf.Tensor:
    """``(N, B)`` distinct coordinates per point, drawn as ``stde.estimate(sampling="sparse")`` draws them.

    The indices pass through a gather (of ``0..d-1``, so unchanged), as in ``stde.estimate``: fed
    straight into the nested tapes' gathers, XLA compiled ``top_k`` as a full sort of the
    ``(N, d)`` noise (25 ms of CPU per step at ``d = 1000``, the time of the rest of the SDGD step)
    instead of its ``TopK`` kernel. ``sort_in_xla=True`` keeps that slower form (for comparison).
    """
    noise = tf.random.stateless_uniform(tf.shape(x), _seed(seed, 0), dtype=tf.float32, alg="philox")
    picked = tf.math.top_k(noise, num_samples).indices
    return picked if sort_in_xla else tf.gather(tf.range(x.shape[1]), picked)


def rademacher_probes(x: tf.Tensor, num_samples: int, seed) -> tf.Tensor:
    """``(N, S, d)`` signs, drawn as ``stde.estimate(sampling="rademacher")`` draws them."""
    shape = tf.stack([tf.shape(x)[0], num_samples, x.shape[1]])
    signs = tf.random.stateless_uniform(shape, _seed(seed, 1), dtype=tf.float32, alg="philox") < 0.5
    return tf.where(signs, tf.constant(1.0, x.dtype), tf.constant(-1.0, x.dtype))


def sdgd_laplacian(model: Callable, x: tf.Tensor, coordinates: tf.Tensor) -> tf.Tensor:
    """SDGD's estimate ``D / B sum_b u_{i_b i_b}`` by nested tapes: one reverse pass per sampled coordinate.

    ``coordinates`` is ``(N, B)``; pass ``b`` differentiates the gradient's entry
    ``coordinates[n, b]`` of every point ``n`` and keeps that coordinate of the result.
    """
    d = x.shape[1]
    num_samples = coordinates.shape[1]
    with tf.GradientTape(persistent=True) as outer:
        outer.watch(x)
        with tf.GradientTape() as inner:
            inner.watch(x)
            u = model(x)
        gradient = inner.gradient(u, x)
        chosen = tf.gather(gradient, coordinates, batch_dims=1)  # (N, B): u_i at the sampled i
        columns = [chosen[:, b] for b in range(num_samples)]
    total = 0.0
    for b in range(num_samples):
        hessian_row = outer.gradient(columns[b], x)  # (N, d): row i_b of each point's Hessian
        total += tf.gather(hessian_row, coordinates[:, b : b + 1], batch_dims=1)
    return (d / num_samples) * total


def hutchinson_laplacian(model: Callable, x: tf.Tensor, probes: tf.Tensor) -> tf.Tensor:
    """``mean_s v_s^T H v_s`` per point, ``H v`` by reverse-over-reverse HVPs; ``probes`` ``(N, S, d)``.

    The points are stacked ``S`` times, one probe per copy, so one HVP of ``sum u`` (block
    diagonal Hessian) gives every ``H(x_n) v_ns``.
    """
    num_points, num_samples, d = tf.shape(x)[0], probes.shape[1], x.shape[1]
    points = tf.reshape(tf.broadcast_to(x[:, None, :], tf.shape(probes)), [-1, d])
    flat = tf.reshape(probes, [-1, d])
    product = hodiff.hvp(lambda p: tf.reduce_sum(model(p)), points, flat, mode="reverse_over_reverse")
    samples = tf.reshape(tf.reduce_sum(flat * product, axis=1), tf.stack([num_points, num_samples]))
    return tf.reduce_mean(samples, axis=1, keepdims=True)


def laplacian_route(name: str, model: keras.Model, num_samples: int = SAMPLES) -> Callable:
    """A function ``(x, seed) -> (N, 1)``: route ``name``'s (estimate of the) Laplacian of ``model``."""
    if name in ("stde_sparse", "stde_rademacher"):
        sampling = name.removeprefix("stde_")
        return lambda x, seed: (
            stde.estimate(
                model, x, stde.laplacian_terms(), num_samples, seed=seed, sampling=sampling, with_stderr=False
            ).value
        )
    if name == "forward_laplacian":
        forward = hodiff.laplacian(model, method="forward")
        return lambda x, seed: forward(x)
    if name in ("sdgd_nested", "sdgd_nested_sorted_draw"):
        sort_in_xla = name == "sdgd_nested_sorted_draw"
        return lambda x, seed: sdgd_laplacian(model, x, sampled_coordinates(x, num_samples, seed, sort_in_xla))
    if name == "hutchinson_hvp":
        return lambda x, seed: hutchinson_laplacian(model, x, rademacher_probes(x, num_samples, seed))
    raise ValueError(f"laplacian_route: unknown route {name!r}; use one of {ROUTES}.")


def training_step(name: str, model: keras.Model, num_samples: int = SAMPLES, jit_compile: bool = True) -> Callable:
    """A compiled step ``(x, f) -> loss``: loss ``mean((L u - f)^2)``, gradient, SGD update.

    The stochastic routes draw afresh every step (the step counter is the seed).
    """
    laplacian = laplacian_route(name, model, num_samples)
    counter = tf.Variable(0, dtype=tf.int64, trainable=False)
    weights = model.trainable_variables

    def step(x, f):
        seed = counter.read_value()
        loss = lambda _: tf.reduce_mean(tf.square(laplacian(x, seed) - f))
        # The output bias does not reach a Laplacian: its gradient is zero, not an error.
        value, gradients = hodiff.value_and_grad(loss, unconnected="zero")(weights)
        for variable, gradient in zip(weights, gradients):
            variable.assign_sub(LEARNING_RATE * gradient)
        counter.assign_add(1)
        return value

    return tf.function(step, jit_compile=jit_compile)


def problem_data(d: int, n: int = POINTS, dtype=tf.float32) -> tuple[tf.Tensor, tf.Tensor]:
    """Points uniform in the cube ``[-1, 1]^d`` and a forcing term ``f``, ``(N, 1)``."""
    x = tf.random.stateless_uniform((n, d), seed=[0, 1], minval=-1.0, maxval=1.0, dtype=dtype)
    f = tf.reduce_sum(tf.sin(x), axis=1, keepdims=True) / np.sqrt(d)
    return x, f


def memory_estimate_bytes(name: str, d: int, n: int = POINTS, width: int = WIDTH, depth: int = DEPTH) -> int:
    """A lower bound on the memory of one training step (float32), from the tensors it must hold.

    The forward Laplacian starts from a ``(d, N, d)`` identity (the Jacobian of ``x``) and keeps a
    ``(d + 2, N, width)`` jet per layer, of which a training step stores about four per layer
    for the backward pass. The other routes hold ``O(N (B + S) d + N (B + S) width)`` numbers.
    """
    if name == "forward_laplacian":
        return 4 * (d * n * d + 4 * depth * (d + 2) * n * width)
    return 4 * 8 * n * SAMPLES * (d + width)


# ---------------------------------------------------------------------------------------------
# Memory: resident-set growth of a fresh process over its first steps.


def _resident_mib() -> dict[str, float]:
    """``VmRSS`` (now) and ``VmHWM`` (peak) of this process, in MiB (Linux)."""
    status = {}
    for line in Path("/proc/self/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            status[key] = int(value.split()[0]) / 1024
    return status


def _memory_in_child(queue, name: str, d: int, steps: int, device: str | None) -> None:
    with on_device(device):
        warm = training_step(name, mlp(SAMPLES))  # initialises TensorFlow's and XLA's runtimes
        warm(*problem_data(SAMPLES)).numpy()
        model = mlp(d)
        x, f = problem_data(d)
        step = training_step(name, model)
        step.get_concrete_function(x, f)  # traced, not yet compiled
        before = _resident_mib()["VmRSS"]
        Path("/proc/self/clear_refs").write_text("5")  # restart the peak (VmHWM) from now
        for _ in range(steps):
            step(x, f).numpy()
        queue.put(_resident_mib()["VmHWM"] - before)


def step_memory_mib(name: str, d: int, steps: int = 2, device: str | None = None, budget_seconds: float = 300.0):
    """Peak resident memory a fresh process gains over its first ``steps`` steps (MiB), or None.

    TensorFlow's CPU allocator keeps freed memory for reuse, so in one process the second route
    would reuse the first one's memory; each route therefore runs in its own process, which first
    runs the same route at ``d = B`` (so that the runtimes' own start-up is not counted). The
    figure includes XLA's compilation of the step.
    """
    if not Path("/proc/self/clear_refs").exists():
        return None
    return run_in_child(_memory_in_child, (name, d, steps, device), budget_seconds)


# ---------------------------------------------------------------------------------------------
# Variance of the stochastic estimates.


def estimator_statistics(
    model: keras.Model,
    x: tf.Tensor,
    num_samples: int = SAMPLES,
    routes=STOCHASTIC,
    replicas: int = 128,
    chunk: int = 32,
) -> dict[str, dict[str, float]]:
    """Per-point variance of each route's Laplacian estimate over ``replicas`` independent draws.

    The points ``x`` (a few) are repeated ``chunk`` times per call (every row draws
    independently), with a new seed per call, under ``tf.function`` (no XLA). Returns, per route,
    the mean over the points of the sample variance, the largest ``|mean - exact| / stderr`` over
    the points (an unbiasedness check: about 3 or less expected), and the exact Laplacian's mean
    square (for scale).
    """
    num_points = x.shape[0]
    exact = stde.exact(model, x, stde.laplacian_terms()).numpy()[:, 0]  # sparse basis jets: no (d, N, d) identity
    repeated = tf.repeat(x, chunk, axis=0)
    results = {}
    for name in routes:
        laplacian = tf.function(laplacian_route(name, model, num_samples))
        draws = np.concatenate(
            [
                laplacian(repeated, tf.constant(1000 + call, tf.int64)).numpy().reshape(num_points, chunk)
                for call in range(max(1, replicas // chunk))
            ],
            axis=1,
        )
        variance = draws.var(axis=1, ddof=1)
        deviation = np.abs(draws.mean(axis=1) - exact) / np.sqrt(variance / draws.shape[1])
        results[name] = {
            "variance": float(variance.mean()),
            "max_deviation_in_stderr": float(deviation.max()),
            "draws_per_point": int(draws.shape[1]),
        }
    results["exact_mean_square"] = {"value": float(np.mean(exact**2))}
    return results


# ---------------------------------------------------------------------------------------------
# The suite.


def bench_dimension(d: int, repeats: int, calls: int, replicas: int, device: str | None) -> dict:
    print(f"D={d}: compiling and timing the training steps ...", flush=True)
    x, f = problem_data(d)
    skipped = {}
    candidates = {}
    for name in ROUTES:
        estimate = memory_estimate_bytes(name, d)
        if estimate > MEMORY_BUDGET_BYTES:
            skipped[name] = (
                f"needs at least {estimate / 2**30:.0f} GiB (estimated: the (d, N, d) identity that starts the "
                f"jet and the (d + 2, N, {WIDTH}) jets kept for the backward pass); budget "
                f"{MEMORY_BUDGET_BYTES / 2**30:.0f} GiB"
            )
            continue
        step = training_step(name, mlp(d))
        candidates[name] = lambda step=step: step(x, f)
    for name in TIMED_ONLY:
        step = training_step(name, mlp(d))
        candidates[name] = lambda step=step: step(x, f)
    compile_seconds = {}
    for name, fn in candidates.items():
        start = time.perf_counter()
        fn().numpy()
        compile_seconds[name] = time.perf_counter() - start
    seconds = interleaved_median_seconds(candidates, repeats=repeats, calls=calls)
    print(f"D={d}: memory per step, one process per route ...", flush=True)
    memory = {name: step_memory_mib(name, d, device=device) for name in candidates if name not in TIMED_ONLY}
    print(f"D={d}: variance of the estimates ...", flush=True)
    statistics = estimator_statistics(mlp(d), x[:4], replicas=replicas)
    return {
        "D": d,
        "N": POINTS,
        "samples": SAMPLES,
        "step_seconds": seconds,
        "first_call_seconds": compile_seconds,
        "step_memory_mib": memory,
        "memory_estimate_mib": {name: memory_estimate_bytes(name, d) / 2**20 for name in ROUTES},
        "skipped": skipped,
        "estimator": statistics,
    }


def polarisation_jets(model: keras.Model, x: tf.Tensor) -> tf.Tensor:
    """The biharmonic as the ``d^2`` order-4 jets of the polarisation formula, one stacked pass
    (what ``stde.exact`` ran before the collapsed pass)."""
    terms = stde.biharmonic_terms().exact_terms(x.shape[1])
    directions = hodiff.SparseDirections(terms.indices.reshape(-1, 2), terms.values.reshape(-1, 2))
    return weighted_jets(model, x, directions, terms.weights.reshape(1, -1), 4)[:, 0]


def biharmonic_routes(model: keras.Model) -> dict[str, Callable]:
    return {
        "jets": lambda x: stde.exact(model, x, stde.biharmonic_terms(), method="forward"),
        "polarisation_jets": lambda x: polarisation_jets(model, x),
        "nested_laplacian_of_laplacian": hodiff.laplacian(hodiff.laplacian(model, method="nested"), method="nested"),
        "nested_jets": lambda x: stde.exact(model, x, stde.biharmonic_terms(), method="nested"),
    }


def bench_biharmonic(d: int, repeats: int, calls: int) -> dict:
    print(f"biharmonic d={d} ...", flush=True)
    model = mlp(d)
    x = problem_data(d, BIHARMONIC_POINTS)[0]
    # XLA's compilation of the Laplacian of the Laplacian grows like d^2 reverse passes (27 s at
    # d = 8 here); above d = 8 that route runs as a plain tf.function.
    modes = {name: "XLA" for name in biharmonic_routes(model)}
    if d > 8:
        modes["nested_laplacian_of_laplacian"] = "tf.function (XLA compile too slow)"
    routes = {name: tf.function(fn, jit_compile=modes[name] == "XLA") for name, fn in biharmonic_routes(model).items()}
    compile_seconds, values = {}, {}
    for name, fn in routes.items():
        start = time.perf_counter()
        values[name] = np.reshape(fn(x).numpy(), -1)
        compile_seconds[name] = time.perf_counter() - start
    seconds = interleaved_median_seconds({name: (lambda fn=fn: fn(x)) for name, fn in routes.items()}, repeats, calls)
    scale = float(np.max(np.abs(values["jets"])))
    return {
        "d": d,
        "N": BIHARMONIC_POINTS,
        "operator_seconds": seconds,
        "compiled": modes,
        "first_call_seconds": compile_seconds,
        "max_abs_value": scale,
        "max_relative_difference_vs_jets": {
            name: float(np.max(np.abs(value - values["jets"])) / scale) for name, value in values.items()
        },
    }


def _ms(seconds: float) -> str:
    return f"{1e3 * seconds:.1f}" if seconds < 10 else f"{seconds:.0f} s"


def markdown(results: dict) -> str:
    lines = [
        f"Training step (loss, gradient, SGD update), {DEPTH} x {WIDTH} tanh MLP, float32, N = {POINTS} points, "
        f"B = S = {SAMPLES}, XLA:",
        "",
        "| D | route | ms / step | vs STDE sparse | memory (MiB) | variance | variance x time (rel. to STDE sparse) |",
        "|---|---|---|---|---|---|---|",
    ]
    for row in results["highdim"]:
        t, stats = row["step_seconds"], row["estimator"]
        base = t.get("stde_sparse")
        base_cost = stats["stde_sparse"]["variance"] * base if base else None
        for name in ROUTES + TIMED_ONLY:
            if name not in t and name not in row["skipped"]:
                continue
            if name in row["skipped"]:
                lines.append(f"| {row['D']} | {LABELS[name]} | skipped: {row['skipped'][name]} | | | | |")
                continue
            memory = row["step_memory_mib"].get(name)
            memory_text = f"{memory:.0f}" if memory is not None else "-"
            if name in TIMED_ONLY:
                variance_text, cost = "(as SDGD)", "-"
            elif name in stats:
                variance = stats[name]["variance"]
                cost = f"{variance * t[name] / base_cost:.2g}x" if base_cost else "-"
                variance_text = f"{variance:.3g}"
            else:
                variance_text, cost = "0 (exact)", "-"
            ratio = f"{t[name] / base:.1f}x" if base else "-"
            lines.append(
                f"| {row['D']} | {LABELS[name]} | {_ms(t[name])} | {ratio} | {memory_text} | {variance_text} | {cost} |"
            )
    lines += [
        "",
        f"Biharmonic (operator alone, N = {BIHARMONIC_POINTS}, XLA):",
        "",
        "| d | collapsed jets (ms) | d^2 polarisation jets (ms) | nested Laplacian of Laplacian (ms) "
        "| nested jets (ms) | LoL / jets | nested jets / jets | d^2 jets / jets | max rel. difference |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for row in results["biharmonic"]:
        t = row["operator_seconds"]
        difference = max(row["max_relative_difference_vs_jets"].values())
        if row.get("compiled", {}).get("nested_laplacian_of_laplacian", "XLA") != "XLA":
            lol = f"{_ms(t['nested_laplacian_of_laplacian'])} (no XLA)"
        else:
            lol = _ms(t["nested_laplacian_of_laplacian"])
        polarisation = t.get("polarisation_jets")
        polarisation_ms, polarisation_ratio = "-", "-"
        if polarisation:
            polarisation_ms, polarisation_ratio = _ms(polarisation), f"{polarisation / t['jets']:.1f}x"
        lines.append(
            f"| {row['d']} | {_ms(t['jets'])} | {polarisation_ms} | {lol} | {_ms(t['nested_jets'])} "
            f"| {t['nested_laplacian_of_laplacian'] / t['jets']:.1f}x | {t['nested_jets'] / t['jets']:.1f}x "
            f"| {polarisation_ratio} | {difference:.1e} |"
        )
    lines += ["", "Targets: " + "; ".join(f"{k}: {v}" for k, v in results["targets"].items())]
    return "\n".join(lines)


def targets(results: dict) -> dict[str, str]:
    out = {}
    for row in results["highdim"]:
        if row["D"] == 1000:
            t = row["step_seconds"]
            speedup = t["sdgd_nested"] / t["stde_sparse"]
            out["STDE >= 10x SDGD at D=1000"] = f"{speedup:.1f}x ({'met' if speedup >= 10 else 'not met'})"
            if "sdgd_nested_sorted_draw" in t:
                slower = t["sdgd_nested_sorted_draw"] / t["stde_sparse"]
                out["(for comparison) STDE vs SDGD with the draw sorted by XLA, at D=1000"] = f"{slower:.1f}x"
    for row in results["biharmonic"]:
        if row["d"] == 8:
            t = row["operator_seconds"]
            for name, label in (("nested_laplacian_of_laplacian", "Laplacian of Laplacian"), ("nested_jets", "jets")):
                speedup = t[name] / t["jets"]
                verdict = "met" if speedup >= 3 else "not met"
                out[f"biharmonic jets >= 3x four nested tapes ({label}) at d=8"] = f"{speedup:.1f}x ({verdict})"
    return out


def _save_partial(results: dict, output: Path, start: float) -> None:
    """Writes what is measured so far (a run stopped by a timeout keeps it)."""
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(json.dumps({**results, "partial_after_seconds": time.perf_counter() - start}, indent=2) + "\n")
    print(f"  ({time.perf_counter() - start:.0f} s so far)", flush=True)


def main(argv=None) -> int:
    def extra(parser):
        parser.add_argument("--dims", type=int, nargs="+", help=f"dimensions D (default {DIMS}; quick: 100)")
        parser.add_argument("--biharmonic-dims", type=int, nargs="+", help=f"default {BIHARMONIC_DIMS}; quick: 2 8")

    try:
        args = suite_arguments("highdim", __doc__.splitlines()[0], 5, RESULTS, argv, extra=extra)
    except TypeError:  # an older suite_arguments without extra options
        args = suite_arguments("highdim", __doc__.splitlines()[0], 5, RESULTS, argv)
    dims = getattr(args, "dims", None) or ((100,) if args.quick else DIMS)
    biharmonic_dims = getattr(args, "biharmonic_dims", None) or ((2, 8) if args.quick else BIHARMONIC_DIMS)
    device = getattr(args, "device", None)
    replicas = 32 if args.quick else 128
    results: dict = {"machine": machine(), "load_average_before": list(os.getloadavg())}
    results["setting"] = (
        f"Poisson residual Delta u - f at N={POINTS} points, loss mean(r^2), gradient w.r.t. the weights, SGD; "
        f"MLP {DEPTH} x {WIDTH} tanh, float32; B = S = {SAMPLES}; tf.function(jit_compile=True) for every route"
    )
    start = time.perf_counter()
    results["highdim"], results["biharmonic"] = [], []
    with on_device(device):
        for d in dims:
            calls = 10 if d <= 100 else 3 if d <= 1000 else 1
            results["highdim"].append(bench_dimension(d, args.repeats, calls, replicas, device))
            _save_partial(results, args.output, start)
        for d in biharmonic_dims:
            results["biharmonic"].append(bench_biharmonic(d, args.repeats, 3))
            _save_partial(results, args.output, start)
    results["targets"] = targets(results)
    results["load_average_after"] = list(os.getloadavg())
    results["total_seconds"] = time.perf_counter() - start
    report(results, markdown(results), args.output)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
