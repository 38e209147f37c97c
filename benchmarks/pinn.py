"""``python -m benchmarks pinn``: milliseconds per Adam step on DeepXDE's Burgers configuration.

DeepXDE's own Burgers example: a 3 x 20 tanh network, 2540 interior + 80 boundary + 160 initial
points, Adam with learning rate 1e-3, float32. Timed side by side in one run:

- **plain TF**: the nested-tape step a TensorFlow user writes (``u_t``, ``u_x``, ``u_xx`` by
  nested ``GradientTape``s, ``apply_gradients``), one ``tf.function`` call per step, with and
  without ``jit_compile=True``;
- **hodiff**: :class:`hodiff.pinn.Trainer`'s compiled loop (XLA, 100 steps per call);
- **DeepXDE** (when installed, in a child process with its TensorFlow backend):
  ``model.train`` per iteration;
- **JAX** (when installed, with optax): a ``jax.jit`` step with nested ``jax.grad``, one call per
  step.

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

from benchmarks.timing import interleaved_median_seconds, machine, report, suite_arguments
from hodiff import pinn
from pinn_examples import burgers

RESULTS = Path(__file__).parent / "results" / "pinn.json"
STEPS_PER_CALL = 100
INTERIOR, BOUNDARY, INITIAL = 2540, 80, 160


def hodiff_trainer() -> pinn.Trainer:
    problem = burgers.problem(conditions_count=(BOUNDARY, INITIAL))
    model = pinn.mlp(problem.domain, width=20, depth=3, dtype="float32")
    return pinn.Trainer(
        problem, model, interior=INTERIOR, steps_per_call=STEPS_PER_CALL, log_every=STEPS_PER_CALL, progress=False
    )


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


def jax_step(trainer: pinn.Trainer):
    """The same step in JAX: nested jax.grad per point under vmap, optax Adam, one jit call."""
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
    state = {"params": params, "opt": optimizer.init(params)}

    def u(params, point):  # inputs already scaled like hodiff's Rescaling layer: x in [-1,1], t -> 2t-1
        h = point * jnp.array([1.0, 2.0]) + jnp.array([0.0, -1.0])
        for kernel, bias in params[:-1]:
            h = jnp.tanh(h @ kernel + bias)
        return (h @ params[-1][0] + params[-1][1])[0]

    def loss(params):
        u_fn = lambda p: u(params, p)
        du = jax.vmap(jax.grad(u_fn))(interior)
        u_xx = jax.vmap(lambda p: jax.grad(lambda q: jax.grad(u_fn)(q)[0])(p)[0])(interior)
        values = jax.vmap(u_fn)(interior)
        residual = du[:, 1] + values * du[:, 0] - burgers.NU * u_xx
        return (
            jnp.mean(residual**2)
            + jnp.mean(jax.vmap(u_fn)(boundary) ** 2)
            + jnp.mean((jax.vmap(u_fn)(initial) + jnp.sin(jnp.pi * initial[:, 0])) ** 2)
        )

    @jax.jit
    def step(params, opt_state):
        value, grads = jax.value_and_grad(loss)(params)
        updates, opt_state = optimizer.update(grads, opt_state)
        return optax.apply_updates(params, updates), opt_state, value

    def call():
        state["params"], state["opt"], value = step(state["params"], state["opt"])
        return value

    return call, jax.__version__


def main(argv=None) -> int:
    args = suite_arguments("pinn", __doc__.splitlines()[0], 9, RESULTS, argv)
    repeats = args.repeats
    trainer = hodiff_trainer()
    candidates = {
        "plain TF (tf.function)": (plain_tf_step(trainer, jit_compile=False), 1),
        "plain TF (tf.function, XLA)": (plain_tf_step(trainer, jit_compile=True), 1),
        f"hodiff Trainer (XLA, {STEPS_PER_CALL} steps per call)": (lambda: trainer.step()["loss"], STEPS_PER_CALL),
    }
    peers = {}
    if not args.quick:
        jax_candidate = jax_step(trainer)
        if jax_candidate is not None:
            candidates["JAX (jax.jit, optax)"] = (jax_candidate[0], 1)
            peers["jax"] = jax_candidate[1]
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
            print(f"DeepXDE failed: {deepxde_result['error']}")
    hodiff_name = next(name for name in per_step if name.startswith("hodiff"))
    results = {
        "machine": machine(**peers),
        "problem": f"Burgers, 3x20 tanh, {INTERIOR} interior + {BOUNDARY} boundary + {INITIAL} initial points, "
        "Adam, float32",
        "ms_per_step": {name: 1e3 * s for name, s in per_step.items()},
        "ratio_to_hodiff": {name: s / per_step[hodiff_name] for name, s in per_step.items()},
    }
    lines = ["| route | ms per Adam step | time relative to hodiff |", "|---|---|---|"]
    lines += [
        f"| {name} | {results['ms_per_step'][name]:.3f} | {results['ratio_to_hodiff'][name]:.2f}x |"
        for name in per_step
    ]
    report(results, "\n".join(lines), args.output)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
