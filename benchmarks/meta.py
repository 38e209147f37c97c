"""``python -m benchmarks meta``: meta-iterations per second of second-order MAML, side by side.

The sinusoid setting of Finn et al. (2017): MLP 1-40-40-1 ReLU, 25 tasks of 10 support and 10
query points, one inner step with alpha = 0.01, Adam meta-optimizer. Routes:

- **hodiff MetaLearner, vectorised**: the compiled (XLA) meta-step with the task axis vectorised
  (batched matmuls over the tasks; the default for a Sequential of Dense layers);
- **hodiff MetaLearner, task loop**: the same with ``vectorize=False`` (the path for other models);
- **plain eager**: the same algorithm as a TensorFlow user writes it with nested
  ``GradientTape``s and ``model.stateless_call``, a Python loop over tasks, eager mode;
- **plain tf.function**: that code inside one ``tf.function`` (no XLA);
- **JAX** (when installed, with optax): ``jax.jit`` of the meta-step with ``vmap`` over tasks,
  one call per meta-step like hodiff's, on a batch already on the device.

Writes ``benchmarks/results/meta.json`` and prints a Markdown table. Targets: hodiff at least 3x
the iterations per second of plain eager, and (issue 12) the vectorised step at least 1.5x JAX.
"""

from __future__ import annotations

import os
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras
import numpy as np
import tensorflow as tf

from benchmarks.timing import interleaved_median_seconds, machine, on_device, report, suite_arguments
from hodiff.meta import MetaLearner
from pinn_examples.maml_sinusoid import mse, network, sample_tasks

RESULTS = Path(__file__).parent / "results" / "meta.json"
ALPHA = 0.01


def plain_meta_step(model: keras.Model, optimizer: keras.optimizers.Optimizer):
    """Second-order MAML with nested tapes, one task at a time."""

    def step(xs, ys, xq, yq):
        weights = model.trainable_variables
        with tf.GradientTape() as outer:
            total = 0.0
            for task in range(xs.shape[0]):
                params = [tf.convert_to_tensor(w) for w in weights]
                with tf.GradientTape() as inner:
                    inner.watch(params)
                    support_loss = mse(model.stateless_call(params, [], xs[task])[0], ys[task])
                grads = inner.gradient(support_loss, params)
                adapted = [p - ALPHA * g for p, g in zip(params, grads)]
                total += mse(model.stateless_call(adapted, [], xq[task])[0], yq[task])
            loss = total / xs.shape[0]
        optimizer.apply_gradients(zip(outer.gradient(loss, weights), weights))
        return loss

    return step


def jax_meta_step(model: keras.Model):
    try:
        import jax
        import jax.numpy as jnp
        import optax
    except ImportError:
        return None
    params = [jnp.asarray(w) for w in model.get_weights()]
    optimizer = optax.adam(1e-3)
    state = {"params": params, "opt": optimizer.init(params)}

    def forward(p, x):
        h = jax.nn.relu(x @ p[0] + p[1])
        h = jax.nn.relu(h @ p[2] + p[3])
        return h @ p[4] + p[5]

    def task_loss(p, xs, ys, xq, yq):
        grads = jax.grad(lambda q: jnp.mean((forward(q, xs) - ys) ** 2))(p)
        adapted = [a - ALPHA * g for a, g in zip(p, grads)]
        return jnp.mean((forward(adapted, xq) - yq) ** 2)

    @jax.jit
    def step(p, opt_state, xs, ys, xq, yq):
        loss, grads = jax.value_and_grad(
            lambda q: jnp.mean(jax.vmap(task_loss, (None, 0, 0, 0, 0))(q, xs, ys, xq, yq))
        )(p)
        updates, opt_state = optimizer.update(grads, opt_state)
        return optax.apply_updates(p, updates), opt_state, loss

    def call(*batch):
        state["params"], state["opt"], loss = step(state["params"], state["opt"], *batch)
        return loss

    return call, jax.__version__, lambda batch: [jnp.asarray(a.numpy()) for a in batch]


HODIFF = "hodiff MetaLearner, vectorised (XLA)"
LOOP = "hodiff MetaLearner, task loop (XLA)"
JAX = "JAX (jax.jit, vmap over tasks)"


def main(argv=None) -> int:
    args = suite_arguments("meta", __doc__.splitlines()[0], 7, RESULTS, argv)
    with on_device(args.device):
        return run(args)


def run(args) -> int:
    batch = sample_tasks(np.random.default_rng(0), 25, 10, 10)[:4]
    learners = {
        name: MetaLearner(
            network(0),
            mse,
            inner_steps=1,
            inner_learning_rate=ALPHA,
            outer_optimizer=keras.optimizers.Adam(1e-3),
            vectorize=vectorize,
        )
        for name, vectorize in ((HODIFF, True), (LOOP, False))
    }
    eager_model, graph_model = network(0), network(0)
    eager = plain_meta_step(eager_model, keras.optimizers.Adam(1e-3))
    graph = tf.function(plain_meta_step(graph_model, keras.optimizers.Adam(1e-3)))
    candidates = {
        HODIFF: lambda: learners[HODIFF].meta_step(*batch)["loss"],
        LOOP: lambda: learners[LOOP].meta_step(*batch)["loss"],
        "plain eager nested tapes": lambda: eager(*batch),
        "plain tf.function nested tapes": lambda: graph(*batch),
    }
    versions = {}
    if not args.quick:
        peer = jax_meta_step(network(0))
        if peer is not None:
            jax_batch = peer[2](batch)
            candidates[JAX] = lambda: peer[0](*jax_batch)
            versions["jax"] = peer[1]
    seconds = interleaved_median_seconds(candidates, repeats=args.repeats, calls=5)
    hodiff_seconds = seconds[HODIFF]
    results = {
        "machine": machine(**versions),
        "setting": "second-order MAML, MLP 1-40-40-1 ReLU, 25 tasks x (10 support + 10 query), 1 inner step, Adam",
        "iterations_per_second": {name: 1.0 / s for name, s in seconds.items()},
        "hodiff_speedup": {name: s / hodiff_seconds for name, s in seconds.items()},
    }
    if JAX in seconds:
        results["vectorised_over_jax"] = seconds[JAX] / hodiff_seconds
        results["task_loop_over_jax"] = seconds[JAX] / seconds[LOOP]
    lines = ["| route | meta-iterations / s | vectorised hodiff speedup |", "|---|---|---|"]
    lines += [
        f"| {name} | {results['iterations_per_second'][name]:.1f} | {results['hodiff_speedup'][name]:.2f}x |"
        for name in seconds
    ]
    report(results, "\n".join(lines), args.output)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
