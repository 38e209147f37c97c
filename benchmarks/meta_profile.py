"""``python -m benchmarks meta --part profile``: where one call of the sinusoid MAML step spends its time.

Times, side by side (rotated, median), the layers of one meta-iteration call: ``meta_step``,
``TrainStep``, ``ConcreteFunction.__call__`` and the bare function op of the same compiled step,
with and without the gradient statistics, the step without XLA, JAX's step, and the cost of
calling an XLA function that does almost nothing (with and without 20 variables) in TensorFlow
and in JAX. Uses TensorFlow's private ``context.call_function`` to time the bare op.
"""

from __future__ import annotations

import numpy as np
import tensorflow as tf

from benchmarks.meta import jax_meta_steps, learner, rotated_median_seconds
from pinn_examples.maml_sinusoid import network, sample_tasks


def run_profile(repeats: int) -> tuple[dict, list[str]]:
    from tensorflow.python.eager import context

    batch = [tf.constant(a) for a in sample_tasks(np.random.default_rng(0), 25, 10, 10)[:4]]
    default, quiet = learner(), learner(monitor=False)
    graph = learner(monitor=True)
    graph.step._compiled = tf.function(graph.step._local_steps)  # the same step without XLA
    for one in (default, quiet, graph):
        one.meta_step(*batch)
    concrete = default.step._compiled.get_concrete_function(*batch)
    op = concrete._inference_function
    outputs = len(op.function_type.flat_outputs)
    call = context.context().call_function
    state = default.step.variables_ + default.step.optimizer.variables
    variables = [tf.Variable(tf.zeros(v.shape)) for v in state][:20]
    floor = tf.function(lambda x: x[0] + tf.add_n([tf.reduce_sum(v) for v in variables]), jit_compile=True)
    floor = floor.get_concrete_function(batch[0])
    bare = tf.function(lambda x: x[0], jit_compile=True).get_concrete_function(batch[0])
    candidates = {
        "meta_step": lambda: default.meta_step(*batch)["loss"],
        "TrainStep call (no meta_step checks)": lambda: default.step(*batch)["loss"],
        "ConcreteFunction.__call__ (the path before)": lambda: concrete(*batch)["loss"],
        "the function op alone": lambda: call(op.name, [*batch, *concrete.captured_inputs], outputs)[0],
        "meta_step, monitor=False": lambda: quiet.meta_step(*batch)["loss"],
        "meta_step, plain tf.function (no XLA)": lambda: graph.meta_step(*batch)["loss"],
        "XLA function of 20 variables, ConcreteFunction.__call__": lambda: floor(batch[0]),
        "XLA function of 20 variables, function op": lambda: floor._inference_function.call_preflattened(
            [batch[0], *floor.captured_inputs]
        ),
        "XLA function without variables, function op": lambda: bare._inference_function.call_preflattened([batch[0]]),
    }
    peer = jax_meta_steps(network(0))
    if peer is not None:
        import jax
        import jax.numpy as jnp

        step, _, _, convert = peer
        jax_batch = convert(batch)
        arrays = [jnp.zeros(v.shape) for v in variables]
        of_arrays = jax.jit(lambda ps, x: x[0] + sum(jnp.sum(p) for p in ps))
        of_one = jax.jit(lambda x: x[0])
        candidates["JAX step"] = lambda: step(*jax_batch)
        candidates["JAX function of 20 arrays"] = lambda: of_arrays(arrays, jax_batch[0])
        candidates["JAX function of one array"] = lambda: of_one(jax_batch[0])
    seconds = rotated_median_seconds(candidates, repeats=repeats, calls=10)
    milliseconds = {name: 1e3 * s for name, s in seconds.items()}
    lines = ["| call (sinusoid MAML, one meta-iteration) | ms |", "|---|---|"]
    lines += [f"| {name} | {ms:.3f} |" for name, ms in milliseconds.items()]
    return {"milliseconds": milliseconds, "graph_ops": len(concrete.graph.get_operations())}, lines
