"""Finn et al. (2017)'s 4-block CNN under second- and first-order MAML in JAX:
the peer for ``python -m benchmarks meta`` and the tests.

The JAX model is the same network written directly: ``jax.lax.conv_general_dilated`` (NHWC,
HWIO kernels as Keras stores them), batch statistics over the evaluated batch (Keras'
``BatchNormalization(epsilon=1e-3)`` in training mode), ReLU, 2x2 max-pooling, a dense head;
``vmap`` over tasks, ``jit``, optax Adam. It starts from a Keras model's trainable weights, so
both sides compute the same meta-gradient.
"""

from __future__ import annotations

import keras
import numpy as np

EPSILON = 1e-3  # Keras BatchNormalization's default


def jax_cnn_maml(
    model: keras.Model,
    inner_steps: int,
    learning_rate: float,
    first_order: bool = False,
    outer_learning_rate: float = 1e-3,
    exact_variance: bool = True,
):
    """JAX's MAML for the CNN: ``(meta_gradient, step, params, convert)`` or ``None`` without JAX.

    ``meta_gradient(params, *batch) -> (loss, grads)`` is jitted; ``step(*batch)`` is one
    jitted meta-iteration (``vmap`` over tasks, optax Adam) that updates its own copy of the
    parameters, which start as ``model``'s trainable weights; ``convert(batch)`` puts a batch on
    JAX's device. ``exact_variance=False`` takes the batch variance's derivative as
    ``tf.nn.moments`` (and so Keras) does: through ``x`` only, with the mean held constant.
    """
    try:
        import jax
        import jax.numpy as jnp
        import optax
    except ImportError:
        return None
    jax.config.update("jax_enable_x64", model.trainable_variables[0].dtype == "float64")
    blocks = (len(model.trainable_variables) - 2) // 4

    def forward(p, x):
        h = x
        for b in range(blocks):
            kernel, bias, gamma, beta = p[4 * b : 4 * b + 4]
            h = jax.lax.conv_general_dilated(h, kernel, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"))
            h = h + bias
            mean = jnp.mean(h, axis=(0, 1, 2))
            centre = mean if exact_variance else jax.lax.stop_gradient(mean)
            variance = jnp.mean(jnp.square(h - centre), axis=(0, 1, 2))
            h = (h - mean) * jax.lax.rsqrt(variance + EPSILON) * gamma + beta
            h = jax.nn.relu(h)
            h = jax.lax.reduce_window(h, -jnp.inf, jax.lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")
        return h.reshape(h.shape[0], -1) @ p[-2] + p[-1]

    def loss(p, x, y):
        logits = forward(p, x)
        return jnp.mean(optax.softmax_cross_entropy_with_integer_labels(logits, y))

    def task_loss(p, xs, ys, xq, yq):
        for _ in range(inner_steps):
            grads = jax.grad(loss)(p, xs, ys)
            if first_order:
                grads = jax.lax.stop_gradient(grads)
            p = [a - learning_rate * g for a, g in zip(p, grads)]
        return loss(p, xq, yq)

    def meta_loss(p, *batch):
        return jnp.mean(jax.vmap(task_loss, (None, 0, 0, 0, 0))(p, *batch))

    meta_gradient = jax.jit(jax.value_and_grad(meta_loss))
    optimizer = optax.adam(outer_learning_rate)

    @jax.jit
    def update(p, opt_state, *batch):
        value, grads = jax.value_and_grad(meta_loss)(p, *batch)
        updates, opt_state = optimizer.update(grads, opt_state)
        return optax.apply_updates(p, updates), opt_state, value

    params = [jnp.asarray(v.numpy()) for v in model.trainable_variables]
    state = {"params": params, "opt": optimizer.init(params)}

    def step(*batch):
        state["params"], state["opt"], value = update(state["params"], state["opt"], *batch)
        return value

    def convert(batch):
        return [jnp.asarray(np.asarray(a)) for a in batch]

    return meta_gradient, step, params, convert


CONFIGS = [  # (shots, inner steps, first order), Finn et al.'s 5-way Omniglot settings
    (shots, steps, first_order) for shots in (1, 5) for steps in (1, 5) for first_order in (False, True)
]
WAYS, QUERIES, ALPHA = 5, 15, 0.4


def config_name(shots: int, steps: int, first_order: bool) -> str:
    return f"5-way {shots}-shot, {steps} step{'s' * (steps > 1)}, {'first' if first_order else 'second'} order"


def hodiff_learner(model: keras.Model, steps: int, first_order: bool, xla: bool = False):
    """hodiff's MetaLearner on the unmodified Keras CNN, as a plain ``tf.function`` (oneDNN
    convolutions; on 2 CPU cores TensorFlow's XLA convolutions were 20-30x slower) or with XLA."""
    from hodiff.meta import FunctionalModel, MetaLearner
    from pinn_examples.maml_omniglot import cross_entropy

    return MetaLearner(
        FunctionalModel(model, batch_statistics=True),
        cross_entropy,
        variant="fomaml" if first_order else "maml",
        inner_steps=steps,
        inner_learning_rate=ALPHA,
        outer_optimizer=keras.optimizers.Adam(1e-3),
        jit_compile=xla,
    )


def task_batch(shots: int, tasks: int, size: int, seed: int = 0) -> list[np.ndarray]:
    from hodiff.meta.tasks import FewShotTasks, synthetic_characters

    images = synthetic_characters(classes=50, size=size, seed=seed)
    return list(FewShotTasks(images, WAYS, shots, QUERIES).sample(tasks, seed=seed))


def candidates(config: tuple, tasks: int, filters: int, size: int, peers: bool, xla: bool = False) -> dict:
    """``{route: call}`` for one configuration: hodiff's meta_step and, with ``peers``, JAX's."""
    import tensorflow as tf

    from pinn_examples.maml_omniglot import conv_network

    shots, steps, first_order = config
    batch = task_batch(shots, tasks, size)
    learner = hodiff_learner(conv_network(WAYS, filters, size, seed=0), steps, first_order, xla)
    tensors = [tf.constant(a) for a in batch]
    routes = {"hodiff": lambda: learner.meta_step(*tensors)["loss"]}
    if peers:
        peer = jax_cnn_maml(conv_network(WAYS, filters, size, seed=0), steps, ALPHA, first_order)
        if peer is not None:
            _, step, _, convert = peer
            jax_batch = convert(batch)
            routes["JAX"] = lambda: step(*jax_batch)
    return routes


def peak_memory(queue, route: str, config: tuple, tasks: int, filters: int, size: int, device: str | None) -> None:
    """In a fresh process: the peak memory of two meta-iterations of ``route`` after a warm-up
    (compilation) call, in bytes: the accelerator's peak allocation on a GPU, else the growth of
    the process's peak resident memory (reset after the warm-up through ``/proc/self/clear_refs``)."""
    import os

    os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
    import tensorflow as tf

    from benchmarks.timing import on_device

    for gpu in tf.config.list_physical_devices("GPU"):
        tf.config.experimental.set_memory_growth(gpu, True)
    with on_device(device):
        call = candidates(config, tasks, filters, size, peers=route != "hodiff")[route]
        force = lambda out: getattr(out, "block_until_ready", getattr(out, "numpy", lambda: None))()
        force(call())
        on_gpu = bool(device and "GPU" in device.upper())
        if on_gpu and route == "hodiff":
            tf.config.experimental.reset_memory_stats("GPU:0")
        elif not on_gpu:
            with open("/proc/self/clear_refs", "w") as file:
                file.write("5")  # resets VmHWM to the current resident size
        before = _status_bytes("VmRSS")
        for _ in range(2):
            force(call())
        if on_gpu and route == "hodiff":
            queue.put(int(tf.config.experimental.get_memory_info("GPU:0")["peak"]))
        elif on_gpu:
            import jax

            queue.put(int(jax.devices()[0].memory_stats()["peak_bytes_in_use"]))
        else:
            queue.put(_status_bytes("VmHWM") - before)


def _status_bytes(field: str) -> int:
    for line in open("/proc/self/status").read().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
    return 0


def run_cnn(args, peers: bool) -> tuple[dict, list[str]]:
    """Meta-iterations per second of hodiff and JAX in every configuration (interleaved, one
    call per iteration each), and peak memory of the configurations ``--cnn-memory`` names;
    returns the results and the Markdown table's lines."""
    from benchmarks.timing import interleaved_median_seconds, run_in_child

    tasks, filters, size = args.cnn_tasks, args.cnn_filters, 28
    configs = CONFIGS[args.cnn_first : args.cnn_first + args.cnn_configs]
    results: dict = {"tasks": tasks, "filters": filters, "queries_per_class": QUERIES, "configurations": {}}
    lines = [
        f"| configuration ({tasks} tasks, {filters} filters) | hodiff it/s | JAX it/s | hodiff / JAX "
        "| hodiff peak memory (MB) | JAX peak memory (MB) |",
        "|---|---|---|---|---|---|",
    ]
    for config in configs:
        name = config_name(*config)
        print(f"== {name}", flush=True)
        routes = candidates(config, tasks, filters, size, peers, args.cnn_xla)
        seconds = interleaved_median_seconds(routes, args.cnn_repeats, 1)
        entry: dict = {"iterations_per_second": {route: 1.0 / s for route, s in seconds.items()}}
        if "JAX" in seconds:
            entry["hodiff_over_jax"] = seconds["JAX"] / seconds["hodiff"]
        steps, first_order = config[1], config[2]
        if (steps, first_order) in args.cnn_memory and (not args.quick or args.cnn_peers):
            entry["peak_memory_bytes"] = {
                route: run_in_child(peak_memory, (route, config, tasks, filters, size, args.device), 1200)
                for route in seconds
            }
        results["configurations"][name] = entry
        rate = entry["iterations_per_second"]
        memory = entry.get("peak_memory_bytes", {})
        megabytes = lambda route, memory=memory: f"{memory[route] / 2**20:.0f}" if memory.get(route) else "-"
        jax_rate = f"{rate['JAX']:.3f}" if "JAX" in rate else "-"
        ratio = f"{entry['hodiff_over_jax']:.2f}x" if "hodiff_over_jax" in entry else "-"
        lines.append(
            f"| {name} | {rate['hodiff']:.3f} | {jax_rate} | {ratio} | {megabytes('hodiff')} | {megabytes('JAX')} |"
        )
        print(lines[-1], flush=True)
    return results, lines
