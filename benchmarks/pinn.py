"""``python -m benchmarks pinn``: milliseconds per Adam step on DeepXDE's Burgers configuration.

DeepXDE's own Burgers example: a 3 x 20 tanh network, 2540 interior + 80 boundary + 160 initial
points, Adam with learning rate 1e-3, float32. Timed side by side in one run:

- **plain TF**: the nested-tape step a TensorFlow user writes (``u_t``, ``u_x``, ``u_xx`` by
  nested ``GradientTape``s, ``apply_gradients``), one ``tf.function`` call per step, with and
  without ``jit_compile=True``;
- **hodiff**: :class:`hodiff.pinn.Trainer`'s compiled loop (XLA, 100 steps per call), with the
  partials by nested tapes (the default) and by one Taylor-mode forward pass
  (``partials_method='forward'``);
- **DeepXDE** (when installed, in a child process with its TensorFlow backend):
  ``model.train`` per iteration;
- **JAX** (when installed, with optax): ``jax.jit`` over a ``lax.scan`` of 100 steps (JAX's fastest
  recipe, one dispatch per 100 steps like hodiff), with ``vmap`` of nested ``jax.grad`` and with
  batched forward-over-reverse partials.

A roofline line gives the hodiff step's matmul FLOPs (counted from its HLO after XLA's
optimisations) and the achieved FLOP/s against this machine's measured matmul peak.

Writes ``benchmarks/results/pinn.json`` and prints a Markdown table.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras
import numpy as np
import tensorflow as tf

from benchmarks.timing import (
    interleaved_median_seconds,
    machine,
    matmul_flops,
    matmul_peak_flops,
    on_device,
    report,
    suite_arguments,
)
from hodiff import pinn
from pinn_examples import burgers

RESULTS = Path(__file__).parent / "results" / "pinn.json"
STEPS_PER_CALL = 100
INTERIOR, BOUNDARY, INITIAL = 2540, 80, 160


def hodiff_trainer(partials_method: str = "nested") -> pinn.Trainer:
    problem = burgers.problem(conditions_count=(BOUNDARY, INITIAL)).replace(partials_method=partials_method)
    model = pinn.mlp(problem.domain, width=20, depth=3, dtype="float32")
    schedule = pinn.Schedule(steps_per_call=STEPS_PER_CALL, log_every=STEPS_PER_CALL, progress=False)
    return pinn.Trainer(pinn.TrainingData(problem, interior=INTERIOR), model, schedule=schedule)


def plain_tf_step(trainer: pinn.Trainer, jit_compile: bool):
    """The hand-written nested-tape step on the same points and a model with the same weights."""
    model = keras.models.clone_model(trainer.model)
    model.set_weights(trainer.model.get_weights())
    optimizer = keras.optimizers.Adam(1e-3)
    interior = tf.constant(trainer.interior.numpy())
    boundary, initial = (tf.constant(arrays["points"].numpy()) for arrays in trainer.condition_arrays)

    @tf.function(jit_compile=jit_compile)
    def step():
        with tf.GradientTape() as tape:
            with tf.GradientTape() as outer:
                outer.watch(interior)
                with tf.GradientTape() as inner:
                    inner.watch(interior)
                    u = model(interior)[:, 0]
                du = inner.gradient(u, interior)
                u_x, u_t = du[:, 0], du[:, 1]
            u_xx = outer.gradient(u_x, interior)[:, 0]
            residual = u_t + u * u_x - burgers.NU * u_xx
            loss = (
                tf.reduce_mean(residual**2)
                + tf.reduce_mean(model(boundary) ** 2)
                + tf.reduce_mean((model(initial)[:, 0] + tf.sin(np.pi * initial[:, 0])) ** 2)
            )
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
        return loss

    return step


DEEPXDE_SCRIPT = textwrap.dedent(
    """
    import os, sys, time, json
    os.environ["DDE_BACKEND"] = "tensorflow"
    os.environ["TF_CPP_MIN_LOG_LEVEL"] = "2"
    import deepxde as dde, numpy as np
    def pde(x, y):
        dy_x = dde.grad.jacobian(y, x, i=0, j=0)
        dy_t = dde.grad.jacobian(y, x, i=0, j=1)
        dy_xx = dde.grad.hessian(y, x, i=0, j=0)
        return dy_t + y * dy_x - 0.01 / np.pi * dy_xx
    geomtime = dde.geometry.GeometryXTime(dde.geometry.Interval(-1, 1), dde.geometry.TimeDomain(0, 0.99))
    bc = dde.icbc.DirichletBC(geomtime, lambda x: 0, lambda _, on_boundary: on_boundary)
    ic = dde.icbc.IC(geomtime, lambda x: -np.sin(np.pi * x[:, 0:1]), lambda _, on_initial: on_initial)
    data = dde.data.TimePDE(geomtime, pde, [bc, ic], num_domain=2540, num_boundary=80, num_initial=160)
    model = dde.Model(data, dde.nn.FNN([2] + [20] * 3 + [1], "tanh", "Glorot normal"))
    model.compile("adam", lr=1e-3)
    model.train(iterations=200, display_every=10**9, verbose=0)
    samples = []
    for _ in range(int(sys.argv[1])):
        start = time.perf_counter()
        model.train(iterations=500, display_every=10**9, verbose=0)
        samples.append((time.perf_counter() - start) / 500)
    print("RESULT", json.dumps({"version": dde.__version__, "seconds": sorted(samples)[len(samples) // 2]}))
    """
)


def time_deepxde(repeats: int) -> dict | None:
    try:
        import deepxde  # noqa: F401
    except Exception:
        return None
    done = subprocess.run(
        [sys.executable, "-c", DEEPXDE_SCRIPT, str(repeats)], capture_output=True, text=True, timeout=1800
    )
    lines = [line for line in done.stdout.splitlines() if line.startswith("RESULT")]
    if not lines:
        return {"error": done.stderr[-500:]}
    return json.loads(lines[-1][len("RESULT ") :])


def jax_steps(trainer: pinn.Trainer) -> tuple[dict, str, dict] | None:
    """The same training in JAX with optax Adam, as JAX users write it for speed.

    Two loss recipes, each as ``jax.jit`` over a ``lax.scan`` of ``STEPS_PER_CALL`` steps (like
    hodiff's compiled loop: one dispatch per 100 steps):

    - **vmap of nested jax.grad**: the per-point recipe of JAX's PINN examples;
    - **batched forward-over-reverse**: the network on the whole batch, ``u_x, u_t`` from one
      ``jax.grad`` of the summed output, ``u_xx`` by one ``jax.jvp`` of it (plain 2-D matmuls; on
      XLA CPU ``vmap``'s per-point batched small dots are slow).

    Returns:
      ``({name: call}, jax version, {name: XLA cost analysis of one step})``, or ``None``
      without JAX/optax. A call runs ``STEPS_PER_CALL`` steps and returns the last loss.
    """
    try:
        import jax
        import jax.numpy as jnp
        import optax
    except ImportError:
        return None
    params = [
        (jnp.asarray(layer.kernel.numpy()), jnp.asarray(layer.bias.numpy()))
        for layer in trainer.model.layers
        if isinstance(layer, keras.layers.Dense)
    ]
    interior = jnp.asarray(trainer.interior.numpy())
    boundary, initial = (jnp.asarray(arrays["points"].numpy()) for arrays in trainer.condition_arrays)
    optimizer = optax.adam(1e-3)
    scale, shift = jnp.array([1.0, 2.0]), jnp.array([0.0, -1.0])  # hodiff's Rescaling: x in [-1,1], t -> 2t-1

    def network(params, points):  # (N, 2) -> (N,)
        h = points * scale + shift
        for kernel, bias in params[:-1]:
            h = jnp.tanh(h @ kernel + bias)
        return (h @ params[-1][0] + params[-1][1])[:, 0]

    def conditions(params):
        return jnp.mean(network(params, boundary) ** 2) + jnp.mean(
            (network(params, initial) + jnp.sin(jnp.pi * initial[:, 0])) ** 2
        )

    def vmap_loss(params):
        u_fn = lambda p: network(params, p[None])[0]
        du = jax.vmap(jax.grad(u_fn))(interior)
        u_xx = jax.vmap(lambda p: jax.grad(lambda q: jax.grad(u_fn)(q)[0])(p)[0])(interior)
        values = jax.vmap(u_fn)(interior)
        residual = du[:, 1] + values * du[:, 0] - burgers.NU * u_xx
        return jnp.mean(residual**2) + conditions(params)

    def batched_loss(params):
        gradient = jax.grad(lambda points: jnp.sum(network(params, points)))
        direction = jnp.zeros_like(interior).at[:, 0].set(1.0)
        du, ddu = jax.jvp(gradient, (interior,), (direction,))
        residual = du[:, 1] + network(params, interior) * du[:, 0] - burgers.NU * ddu[:, 0]
        return jnp.mean(residual**2) + conditions(params)

    def scanned(loss):
        def one_step(carry, _):
            params, opt_state = carry
            value, grads = jax.value_and_grad(loss)(params)
            updates, opt_state = optimizer.update(grads, opt_state, params)
            return (optax.apply_updates(params, updates), opt_state), value

        @jax.jit
        def run(params, opt_state):
            (params, opt_state), values = jax.lax.scan(one_step, (params, opt_state), None, length=STEPS_PER_CALL)
            return params, opt_state, values[-1]

        state = {"params": params, "opt": optimizer.init(params)}

        def call():
            state["params"], state["opt"], value = run(state["params"], state["opt"])
            return value

        single = jax.jit(lambda p, s: one_step((p, s), None))
        cost = single.lower(params, optimizer.init(params)).compile().cost_analysis()
        cost = cost[0] if isinstance(cost, (list, tuple)) else cost
        return call, {key: float(cost[key]) for key in ("flops", "transcendentals") if key in cost}

    routes, costs = {}, {}
    for name, loss in (("vmap of nested jax.grad", vmap_loss), ("batched forward-over-reverse", batched_loss)):
        label = f"JAX (jit + lax.scan of {STEPS_PER_CALL} steps, {name})"
        routes[label], costs[label] = scanned(loss)
    return routes, jax.__version__, costs


def hodiff_step_flops(trainer: pinn.Trainer) -> int:
    """Matmul FLOPs of one hodiff training step (loss and gradient; the Adam update has none)."""

    def loss_and_gradients():
        with tf.GradientTape() as tape:
            loss = trainer._total_loss()
        return loss, tape.gradient(loss, trainer.variables)

    return matmul_flops(loss_and_gradients, optimized=True)


def main(argv=None) -> int:
    args = suite_arguments("pinn", __doc__.splitlines()[0], 9, RESULTS, argv)
    with on_device(args.device):
        return run(args)


def run(args) -> int:
    repeats = args.repeats
    trainer = hodiff_trainer()
    forward = hodiff_trainer("forward")
    forward.model.set_weights(trainer.model.get_weights())
    hodiff_name = f"hodiff Trainer (XLA, {STEPS_PER_CALL} steps per call)"
    candidates = {
        f"hodiff Trainer, one forward pass (partials_method='forward', {STEPS_PER_CALL} steps per call)": (
            lambda: forward.step()["loss"],
            STEPS_PER_CALL,
        ),
        "plain TF (tf.function)": (plain_tf_step(trainer, jit_compile=False), 1),
        "plain TF (tf.function, XLA)": (plain_tf_step(trainer, jit_compile=True), 1),
        hodiff_name: (lambda: trainer.step()["loss"], STEPS_PER_CALL),
    }
    peers, notes, jax_costs = {}, [], {}
    jax_candidates = None if args.quick else jax_steps(trainer)
    if jax_candidates is not None:
        routes, peers["jax"], jax_costs = jax_candidates
        candidates.update({name: (call, STEPS_PER_CALL) for name, call in routes.items()})
    else:
        notes.append("JAX: skipped (" + ("--quick" if args.quick else "jax/optax not installed") + ")")
    seconds = interleaved_median_seconds(
        {name: fn for name, (fn, _) in candidates.items()}, repeats=repeats, calls=STEPS_PER_CALL // 10
    )
    per_step = {name: seconds[name] / steps for name, (_, steps) in candidates.items()}
    if not args.quick:
        print("DeepXDE ...", flush=True)
        deepxde_result = time_deepxde(max(3, repeats // 2))
        if deepxde_result and "seconds" in deepxde_result:
            per_step[f"DeepXDE {deepxde_result['version']} (TensorFlow backend)"] = deepxde_result["seconds"]
            peers["deepxde"] = deepxde_result["version"]
        elif deepxde_result:
            notes.append(f"DeepXDE: failed ({deepxde_result['error'][-200:]!r})")
        else:
            notes.append("DeepXDE: skipped (not installed)")
    else:
        notes.append("DeepXDE: skipped (--quick)")
    flops = hodiff_step_flops(trainer)
    peak = matmul_peak_flops()
    achieved = flops / per_step[hodiff_name]
    results = {
        "machine": machine(**peers),
        "device": args.device,
        "problem": f"Burgers, 3x20 tanh, {INTERIOR} interior + {BOUNDARY} boundary + {INITIAL} initial points, "
        "Adam, float32",
        "ms_per_step": {name: 1e3 * s for name, s in per_step.items()},
        "ratio_to_hodiff": {name: s / per_step[hodiff_name] for name, s in per_step.items()},
        "hodiff_to_peer": {name: per_step[hodiff_name] / s for name, s in per_step.items()},
        "roofline": {
            "hodiff_step_matmul_flops": flops,
            "hodiff_achieved_matmul_flops_per_second": achieved,
            "matmul_peak_flops_per_second": peak,
            "fraction_of_peak": achieved / peak,
            "jax_xla_cost_analysis_per_step": jax_costs,
        },
        "notes": notes,
    }
    lines = ["| route | ms per Adam step | hodiff / route |", "|---|---|---|"]
    lines += [
        f"| {name} | {results['ms_per_step'][name]:.3f} | {results['hodiff_to_peer'][name]:.2f}x |" for name in per_step
    ]
    lines += [
        "",
        f"Roofline: one hodiff step is {flops / 1e6:.2f} MFLOP of matmuls (counted from its HLO after XLA's "
        f"optimisations); at "
        f"{1e3 * per_step[hodiff_name]:.3f} ms that is {achieved / 1e9:.2f} GFLOP/s, "
        f"{100 * achieved / peak:.1f}% of this machine's measured float32 matmul peak "
        f"({peak / 1e9:.0f} GFLOP/s, a 2048 x 2048 matmul).",
    ]
    for name, cost in jax_costs.items():
        if "flops" in cost:
            lines.append(f"XLA's cost analysis of one step of {name}: {cost['flops'] / 1e6:.2f} MFLOP (all ops).")
    lines += [f"Note: {note}." for note in notes]
    report(results, "\n".join(lines), args.output)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
