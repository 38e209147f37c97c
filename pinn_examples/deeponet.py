"""Physics-informed DeepONet: the solution operator f -> u of u_t = 0.01 u_xx + 0.01 u^2 + f(x).

On ``[0, 1] x [0, 1]`` with ``u(x, 0) = 0`` and ``u(0, t) = u(1, t) = 0``, for sources ``f`` drawn
from a Gaussian random field (RBF kernel, length scale 0.2, unit variance) on 100 sensors
``x_j = j / 99`` and taken as their piecewise-linear interpolant between sensors. No solution data
is used: every step draws fresh sources and collocation points (shared by the sources of the
step) and minimises the mean squared PDE residual. The conditions are hard:
``u = x (1 - x) t N(f)(x, t)`` with ``N`` a :class:`hodiff.pinn.DeepONet`, whose partials in
``(x, t)`` come from :meth:`~hodiff.pinn.DeepONet.partials`. The error is measured on 100
held-out sources against a method-of-lines solution (``pinn_examples.deeponet_reference``) on the
sensor grid by 101 times. Target: mean relative L2 error <= 2e-2.

Runs on the shared command line of the examples (``pinn_examples.runner``), with its own
training loop (the ``training`` hook): the run is kept by a :class:`hodiff.pinn.runlog.RunLog`
(crash-safe checkpoints with the history, ``--resume`` exact, ``--overwrite``) and writes
``results/deeponet/``: ``metrics.json``, ``prediction.npz`` (held-out sources, grid axes,
predictions, references, errors), ``field.png`` (the held-out source with the largest error),
``history.png``, ``history.csv`` and ``checkpoints/``. ``--evaluate POINTS.npy`` (``(P, 2)``,
columns ``x, t``) restores the trained run and writes ``evaluation.npz`` with ``u`` of shape
``(B, P)`` for the run's ``B`` held-out sources; ``--evaluate QUERY.npz`` (arrays ``f``,
``(B, 100)``, and ``points``) does so for the sources ``f``.
"""

from __future__ import annotations

import argparse
import dataclasses
import logging
import os
import time

import numpy as np

from pinn_examples import deeponet_reference
from pinn_examples.runner import (
    DISTRIBUTION_FLAGS,
    SEED_MAX,
    Example,
    field_errors,
    load_points,
    run,
    setting,
    verdict,
)

SENSORS = 100
LENGTH_SCALE = 0.2
TEST_SEED = 20260000  # held-out sources; training draws use --seed and the step number
COORDS = ("x", "t")


@dataclasses.dataclass
class Settings:
    """Training settings; every field is also a flag (``--steps 2000``)."""

    steps: int = setting(20000, "Adam steps", positive=True)
    functions: int = setting(100, "sources per step (fresh Gaussian-random-field draws)", positive=True)
    points: int = setting(1000, "collocation points per step, shared by the step's sources", positive=True)
    learning_rate: float = setting(1e-3, "initial Adam learning rate", positive=True)
    final_learning_rate: float = setting(5e-5, "learning rate at the last step (exponential decay)", positive=True)
    width: int = setting(100, "units per hidden layer of the branch and the trunk", positive=True)
    depth: int = setting(4, "hidden layers of the branch and of the trunk", positive=True)
    basis: int = setting(100, "outputs p of the branch and the trunk", positive=True)
    method: str = setting(
        "forward",
        "how the trunk's partials are taken: forward (Taylor mode) or nested (tapes)",
        choices=("forward", "nested"),
    )
    dtype: str = setting("float32", "floating type of the networks", choices=("float32", "float64"))
    log_every: int = setting(500, "steps between history rows", positive=True)
    checkpoint_every: int = setting(5000, "steps between checkpoints", positive=True)
    test_functions: int = setting(100, "held-out sources the error is measured on", positive=True)
    seed: int = setting(0, f"seed of the initial weights and of the training draws, 0 .. {SEED_MAX}", maximum=SEED_MAX)


PRESETS = {
    "default": Settings(),
    "fast": Settings(
        steps=20,
        functions=8,
        points=64,
        width=16,
        depth=2,
        basis=16,
        log_every=10,
        checkpoint_every=10,
        test_functions=4,
    ),
}


def grf_factor(sensors: int = SENSORS, length_scale: float = LENGTH_SCALE) -> np.ndarray:
    """A matrix ``L`` with ``L L^T = K``, the RBF covariance on the sensor grid: ``f = L z``, ``z ~ N(0, I)``.

    ``K_ij = exp(-(x_i - x_j)^2 / (2 l^2))`` is numerically singular; ``L = V sqrt(max(w, 0))`` from
    its eigendecomposition is exact to rounding.
    """
    x = np.linspace(0.0, 1.0, sensors)
    kernel = np.exp(-((x[:, None] - x[None, :]) ** 2) / (2.0 * length_scale**2))
    eigenvalues, vectors = np.linalg.eigh(kernel)
    return vectors * np.sqrt(np.clip(eigenvalues, 0.0, None))


def held_out_sources(count: int) -> np.ndarray:
    """``count`` held-out sources at the sensors, ``(count, 100)``, from a fixed seed."""
    z = np.random.default_rng(TEST_SEED).standard_normal((SENSORS, count))
    return (grf_factor() @ z).T


def test_grid() -> tuple[np.ndarray, np.ndarray]:
    """The error grid: the sensors in ``x`` by 101 times in ``t``."""
    return np.linspace(0.0, 1.0, SENSORS), np.linspace(0.0, 1.0, 101)


def interpolate(f, x):
    """The piecewise-linear interpolants of sources ``f`` (``(B, m)``) at ``x`` (``(P,)``): ``(B, P)``."""
    import tensorflow as tf

    m = f.shape[-1]
    s = x * (m - 1)
    left = tf.clip_by_value(tf.cast(tf.floor(s), tf.int32), 0, m - 2)
    w = s - tf.cast(left, s.dtype)
    return tf.gather(f, left, axis=1) * (1.0 - w) + tf.gather(f, left + 1, axis=1) * w


def solution_and_residual(net, f, points, method: str):
    """``u = x (1 - x) t N(f)`` and the residual ``u_t - D u_xx - K u^2 - f`` at shared points, ``(B, P)`` each."""
    d = net.partials(f, points, COORDS, ("", "x", "t", "xx"), method=method)
    x, t = points[None, :, 0], points[None, :, 1]
    g, g_x, g_xx, g_t = x * (1.0 - x) * t, (1.0 - 2.0 * x) * t, -2.0 * t, x * (1.0 - x)
    v = d[""]
    u = g * v
    u_t = g_t * v + g * d["t"]
    u_xx = g_xx * v + 2.0 * g_x * d["x"] + g * d["xx"]
    reaction = deeponet_reference.REACTION
    residual = u_t - deeponet_reference.DIFFUSION * u_xx - reaction * u * u - interpolate(f, points[:, 0])
    return u, residual


def predict(net, f: np.ndarray, points: np.ndarray, batch: int = 20000) -> np.ndarray:
    """``u`` for sources ``f`` (``(B, m)``) at ``points`` (``(P, 2)``), ``(B, P)`` float64."""
    import tensorflow as tf

    dtype = net.trunk.weights[0].dtype
    fn = tf.constant(f, dtype)
    chunks = []
    for start in range(0, len(points), batch):
        p = points[start : start + batch]
        g = p[:, 0] * (1.0 - p[:, 0]) * p[:, 1]
        chunks.append(g[None, :] * net.grid(fn, tf.constant(p, dtype)).numpy().astype(np.float64))
    return np.concatenate(chunks, axis=1) if chunks else np.zeros((len(f), 0))


def build(settings: Settings):
    from hodiff.pinn import DeepONet

    return DeepONet.mlp(
        SENSORS, 2, settings.width, settings.depth, settings.basis, dtype=settings.dtype, seed=settings.seed
    )


def train(net, settings: Settings, run_log=None, log=print) -> dict:
    """Physics-informed training; returns ``{"history", "seconds", "steps"}``.

    With a :class:`hodiff.pinn.runlog.RunLog` (whose objects are ``net`` and ``make_optimizer``'s
    optimizer, restored when it resumed), the history goes to it and a checkpoint every
    ``checkpoint_every`` steps and at the end; a resumed run continues at its optimizer's step
    with the draws, loss window and clock it had, so it ends as the uninterrupted run does.
    """
    import tensorflow as tf

    optimizer = run_log.checkpoint.optimizer if run_log is not None else make_optimizer(net, settings)
    dtype = net.trunk.weights[0].dtype
    factor = tf.constant(grf_factor().T, dtype)
    history = run_log.history if run_log is not None else []
    state = run_log.state if run_log is not None else {}

    @tf.function(jit_compile=True)
    def step(number):
        z = tf.random.stateless_normal((settings.functions, SENSORS), tf.stack([settings.seed, number]), dtype=dtype)
        points = tf.random.stateless_uniform((settings.points, 2), tf.stack([settings.seed + 1, number]), dtype=dtype)
        f = tf.matmul(z, factor)
        with tf.GradientTape() as tape:
            _, residual = solution_and_residual(net, f, points, settings.method)
            loss = tf.reduce_mean(tf.square(residual))
        optimizer.apply(tape.gradient(loss, net.trainable_variables), net.trainable_variables)
        return loss

    start = time.perf_counter()
    before = float(state.get("seconds", 0.0))  # training time of the earlier parts of a resumed run
    done = int(optimizer.iterations.numpy())
    if done:
        log(f"deeponet: resumed at step {done}")
    total = float(state.get("window_loss", 0.0))  # losses summed since the last history row
    for index in range(done, settings.steps):
        total += float(step(tf.constant(index, tf.int64)))
        completed = index + 1
        if completed % settings.log_every == 0 or completed == settings.steps:
            count = completed % settings.log_every or settings.log_every
            row = {"step": completed, "phase": "adam", "loss": total / count}
            total = 0.0
            if run_log is not None:
                run_log.append(row)
            else:
                history.append(row)
            log(f"deeponet: step {completed}, mean loss {row['loss']:.3e}, {time.perf_counter() - start:.0f} s")
        if run_log is not None and (completed % settings.checkpoint_every == 0 or completed == settings.steps):
            run_log.save(completed, window_loss=total, seconds=before + time.perf_counter() - start)
    return {"history": history, "seconds": before + time.perf_counter() - start, "steps": settings.steps}


def make_optimizer(net, settings: Settings):
    """Adam with the learning rate decaying exponentially from ``learning_rate`` to ``final_learning_rate``, built."""
    import keras

    decay = settings.final_learning_rate / settings.learning_rate
    schedule = keras.optimizers.schedules.ExponentialDecay(settings.learning_rate, settings.steps, decay)
    optimizer = keras.optimizers.Adam(schedule)
    optimizer.build(net.trainable_variables)  # its variables exist before a checkpoint is restored into them
    return optimizer


def _query(args: argparse.Namespace) -> tuple[np.ndarray | None, np.ndarray]:
    """``(f, points)`` of ``--evaluate``: an .npz holds both, POINTS.npy the points (f None: the held-out ones)."""
    path = args.evaluate
    if not path.endswith(".npz"):
        points = load_points(path)
        if points.shape[1] != 2:
            raise SystemExit(
                f"--evaluate {path}: the points have {points.shape[1]} columns; deeponet's points have 2, x and t."
            )
        return None, points
    try:
        with np.load(path, allow_pickle=False) as data:
            arrays = {key: data[key] for key in data.files}
    except FileNotFoundError:
        raise SystemExit(f"--evaluate {path}: no such file; give an .npz file with arrays f and points.") from None
    except (OSError, ValueError, EOFError) as error:
        raise SystemExit(
            f"--evaluate {path}: not a readable .npz file ({error}); write it with numpy.savez(path, f=f, points=p)"
        ) from None
    missing = [key for key in ("f", "points") if key not in arrays]
    if missing:
        raise SystemExit(
            f"--evaluate {path}: the file has no array {missing[0]!r} (it has {sorted(arrays)}); give f, the sources "
            f"at the {SENSORS} sensors (B, {SENSORS}), and points, (P, 2) columns x, t."
        )
    f, points = arrays["f"], arrays["points"]
    for name, array, columns in (("f", f, SENSORS), ("points", points, 2)):
        if array.ndim != 2 or array.shape[1] != columns:
            what = f"the sources at the {SENSORS} sensors x_j = j/99" if name == "f" else "columns x, t"
            raise SystemExit(
                f"--evaluate {path}: {name} must have shape ({'B' if name == 'f' else 'P'}, {columns}), {what}; "
                f"got shape {array.shape}."
            )
        if not np.issubdtype(array.dtype, np.number) or not np.all(np.isfinite(array)):
            raise SystemExit(f"--evaluate {path}: {name} must hold finite real numbers.")
    return f.astype(np.float64), points.astype(np.float64)


def _restore(output: str):
    """The network of the newest readable checkpoint in ``output`` and its settings; reads only."""
    import tensorflow as tf

    from hodiff.pinn.runlog import CHECKPOINTS, checkpoint_files, read_checkpoint_state

    failures = []
    names = {field.name for field in dataclasses.fields(Settings)}
    for _, prefix in checkpoint_files(output):
        try:
            stored = read_checkpoint_state(prefix).get("settings", {})
            settings = Settings(**{key: value for key, value in stored.items() if key in names})
            net = build(settings)
            tf.train.Checkpoint(model=net).restore(prefix).expect_partial().assert_existing_objects_matched()
        except Exception as error:  # noqa: BLE001 - unreadable or mismatched: try the previous checkpoint
            failures.append(f"{os.path.basename(prefix)}: {type(error).__name__}: {error}")
            continue
        return net, settings, prefix
    if not failures:
        raise SystemExit(
            f"--evaluate: no trained run in {output} (no checkpoints in {os.path.join(output, CHECKPOINTS)}); "
            "train it first with the same --output, or point --output at a run's directory."
        )
    raise SystemExit(f"--evaluate: no checkpoint of the run could be read: {'; '.join(failures)}")


def evaluate(args: argparse.Namespace) -> int:
    """``--evaluate``: the trained run for the query's sources (or its held-out ones) at its points."""
    from hodiff.pinn.runlog import atomic_write

    f, points = _query(args)
    net, settings, prefix = _restore(args.output)
    if f is None:
        f = held_out_sources(settings.test_functions)
    outside = np.any((points < 0.0) | (points > 1.0), axis=1)
    if outside.any():
        first = int(np.flatnonzero(outside)[0])
        message = (
            f"--evaluate {args.evaluate}: {int(outside.sum())} of {len(points)} points are outside [0, 1] x [0, 1], "
            f"where the operator is defined (the first is row {first}: "
            f"x={points[first, 0]:.6g}, t={points[first, 1]:.6g})"
        )
        if args.outside == "error":
            raise SystemExit(f"{message}; remove them, or pass --outside nan to get NaN there.")
        logging.getLogger(__name__).warning("%s; their values are NaN (--outside nan).", message)
    u = predict(net, f, np.clip(points, 0.0, 1.0))
    u[:, outside] = np.nan
    path = os.path.join(args.output, "evaluation.npz")
    with atomic_write(path) as temporary, open(temporary, "wb") as file:
        np.savez(file, f=f, points=points, u=u)
    print(f"deeponet: evaluated {len(f)} sources at {len(points)} points ({os.path.basename(prefix)}); wrote {path}")
    return 0


def training(args: argparse.Namespace, settings: Settings) -> int:
    """The example's run on the shared command line (its ``training`` hook): train, measure, write."""
    logging.basicConfig(format="%(message)s")
    if args.evaluate is not None:
        return evaluate(args)
    from hodiff.pinn.plotting import plot_field, plot_history
    from hodiff.pinn.runlog import RunLog, atomic_write, write_json

    print(f"deeponet: {dataclasses.asdict(settings)}")
    started = time.perf_counter()
    sources = held_out_sources(settings.test_functions)
    x, t = test_grid()
    reference = np.stack([deeponet_reference.solve(f, t) for f in sources])  # (n, 100, 101)
    reference_seconds = time.perf_counter() - started
    net = build(settings)
    objects = {"model": net, "optimizer": make_optimizer(net, settings)}
    try:
        run_log = RunLog(
            args.output,
            objects,
            dataclasses.asdict(settings),
            args.resume,
            args.overwrite,
            tensorboard=args.tensorboard,
        )
    except (FileExistsError, FileNotFoundError, ValueError) as error:  # e.g. --resume with other settings
        raise SystemExit(f"deeponet: {error}") from None
    result = train(net, settings, run_log, log=(lambda line: None) if args.no_progress else print)
    grid = np.stack(np.meshgrid(x, t, indexing="ij"), axis=-1).reshape(-1, 2)
    prediction = predict(net, sources, grid).reshape(reference.shape)
    errors = np.array([field_errors({"u": p}, {"u": r})["relative_l2_error"] for p, r in zip(prediction, reference)])
    mean = float(errors.mean())
    metrics = {
        "example": "deeponet",
        "preset": args.preset,
        "mean_relative_l2_error": mean,
        "max_relative_l2_error": float(errors.max()),
        "median_relative_l2_error": float(np.median(errors)),
        "test_functions": len(sources),
        "target": EXAMPLE.target.get(args.preset),
        "target_metric": EXAMPLE.target_metric,
        "steps": result["steps"],
        "wall_seconds": round(result["seconds"], 1),
        "reference_seconds": round(reference_seconds, 1),
        "final_loss": result["history"][-1]["loss"] if result["history"] else None,
        "settings": dataclasses.asdict(settings),
    }
    line, status = verdict(EXAMPLE, args.preset, metrics)
    metrics["target_met"] = None if metrics["target"] is None else status == 0
    write_json(os.path.join(args.output, "metrics.json"), metrics)
    with atomic_write(os.path.join(args.output, "prediction.npz")) as temporary, open(temporary, "wb") as file:
        np.savez(file, f=sources, x=x, t=t, prediction=prediction, reference=reference, errors=errors)
    worst = int(errors.argmax())
    plot_field(
        {"x": x, "t": t},
        prediction[worst],
        reference[worst],
        os.path.join(args.output, "field.png"),
        f"deeponet: held-out source {worst} (largest error, {errors[worst]:.2e})",
    )
    if result["history"]:
        plot_history(result["history"], os.path.join(args.output, "history.png"), ())
    print(
        f"deeponet: mean relative L2 error {mean:.3e} (max {errors.max():.3e}) over {len(sources)} held-out sources, "
        f"{result['seconds']:.0f} s of training; wrote {args.output}/"
    )
    print(line)
    return status


EXAMPLE = Example(
    name="deeponet",
    presets=PRESETS,
    target={"default": 2e-2},
    target_metric="mean_relative_l2_error",
    training=training,
    unsupported_flags=DISTRIBUTION_FLAGS,  # trains on one device
    wall_seconds={"default": 420},  # on 2 CPU cores, as recorded in docs/deeponet.md: about 7 min for the whole command
)


def main(argv=None) -> int:
    return run(EXAMPLE, argv)


if __name__ == "__main__":  # python FILE runs it as python -m pinn_examples NAME does
    raise SystemExit(main())
