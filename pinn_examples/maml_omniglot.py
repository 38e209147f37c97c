"""MAML on Omniglot-shaped few-shot classification with Finn et al. (2017)'s 4-block CNN.

Protocol (Finn, Abbeel & Levine 2017, Section 5.2): N-way K-shot tasks (default 5-way 1-shot,
15 query examples per class) from images grouped by class; the network is 4 blocks of 3x3
convolution (64 filters), batch normalisation with the statistics of each evaluated batch,
ReLU and 2x2 max-pooling, then a dense N-way head; inner learning rate 0.4, meta-batch 32,
outer Adam 1e-3; second-order MAML unless ``--first-order``.

Data: synthetic Omniglot-shaped characters by default (no download; see
:func:`hodiff.meta.tasks.synthetic_characters`), or ``--data PATH.npz`` holding ``images`` of
shape ``(classes, examples, 28, 28)`` (Omniglot: 1623 characters x 20 drawings; uint8 pixels are
scaled to [0, 1]). A fixed, seeded share of the classes (``--held-out``) is never trained on.

Writes ``--output`` (default ``results/maml_omniglot``): ``checkpoints/`` (model, optimizer and
iteration every ``--checkpoint-every`` iterations; ``--resume`` continues a killed run exactly,
since each iteration's tasks are drawn from the seed and the iteration number), ``run.json``
(the settings) and ``metrics.json`` (few-shot accuracy on held-out classes after adaptation,
mean and 95% confidence interval over tasks). ``--evaluate`` evaluates the run in ``--output``
again and trains nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras
import numpy as np
import tensorflow as tf

from pinn_examples.npz_headers import npz_headers
from pinn_examples.runner import SEED_MAX, number

PRESETS = {
    "default": {"iterations": 1000, "meta_batch": 32, "filters": 64, "classes": 200, "eval_tasks": 200, "xla": False},
    "fast": {"iterations": 4, "meta_batch": 2, "filters": 8, "classes": 30, "eval_tasks": 4, "xla": False},
}
SETTINGS = ("ways", "shots", "queries", "inner_steps", "inner_lr", "first_order", "meta_batch", "filters", "seed")
SETTINGS += ("data", "classes", "held_out")


def conv_network(
    ways: int = 5, filters: int = 64, size: int = 28, seed: int = 0, dtype: str = "float32"
) -> keras.Model:
    """Finn et al. (2017)'s Omniglot network: 4 blocks of 3x3 convolution (``filters``), batch
    normalisation, ReLU and 2x2 max-pooling, then a dense ``ways``-way head (logits)."""
    keras.utils.set_random_seed(seed)
    layers: list = [keras.Input((size, size, 1), dtype=dtype)]
    for _ in range(4):
        layers += [
            keras.layers.Conv2D(filters, 3, padding="same", dtype=dtype),
            keras.layers.BatchNormalization(dtype=dtype),
            keras.layers.ReLU(dtype=dtype),
            keras.layers.MaxPooling2D(2, dtype=dtype),
        ]
    layers += [keras.layers.Flatten(dtype=dtype), keras.layers.Dense(ways, dtype=dtype)]
    return keras.Sequential(layers)


def cross_entropy(logits: tf.Tensor, labels: tf.Tensor) -> tf.Tensor:
    """Mean softmax cross-entropy of integer labels (half-precision logits in float32)."""
    logits = tf.cast(logits, tf.float32) if logits.dtype in (tf.float16, tf.bfloat16) else logits
    return tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(tf.cast(labels, tf.int32), logits))


def images_file(path: str) -> str:
    """An argparse ``type`` for ``--data``: an ``.npz`` archive whose ``images`` member's header says
    ``(classes, examples, 28, 28)`` of numbers and that holds the bytes its header claims (read without loading it)."""
    rule = "give an .npz file saved with numpy.savez(PATH, images=array), array of shape (classes, examples, 28, 28)"
    if not os.path.isfile(path):
        raise argparse.ArgumentTypeError(f"no file {path!r}; {rule}")
    try:
        ((shape, dtype),) = npz_headers(path, ["images"]).values()
    except ValueError as error:
        raise argparse.ArgumentTypeError(f"{error}; {rule}") from None
    if len(shape) != 4 or tuple(shape[2:]) != (28, 28):
        raise argparse.ArgumentTypeError(
            f"images in {path} have shape {shape}; expected (classes, examples, 28, 28), e.g. Omniglot's "
            "(1623, 20, 28, 28)"
        )
    if dtype.hasobject or not (np.issubdtype(dtype, np.number) or dtype.kind == "b"):
        raise argparse.ArgumentTypeError(f"images in {path} have dtype {dtype}; expected numbers")
    return path


def load_images(path: str | None, classes: int, seed: int) -> np.ndarray:
    """``(classes, examples, 28, 28)`` float32 images: from ``path`` (key ``images``) or synthetic."""
    from hodiff.meta.tasks import synthetic_characters

    if path is None:
        return synthetic_characters(classes=classes, seed=seed)
    if not os.path.isfile(path):
        raise SystemExit(f"--data: no file {path!r}; give an .npz file with images of shape (classes, 20, 28, 28).")
    try:
        with np.load(path) as file:
            if "images" not in file.files:
                raise SystemExit(
                    f"--data: {path} holds {file.files}, not 'images'; save it with "
                    "numpy.savez(PATH, images=array) where array has shape (classes, examples, 28, 28)."
                )
            images = file["images"]
    except (OSError, ValueError) as error:
        raise SystemExit(f"--data: {path} is not a readable .npz file ({error}).") from None
    if images.ndim != 4 or images.shape[2:] != (28, 28):
        raise SystemExit(
            f"--data: images in {path} have shape {images.shape}; expected (classes, examples, 28, 28), e.g. "
            "Omniglot's (1623, 20, 28, 28)."
        )
    if not (np.issubdtype(images.dtype, np.number) or images.dtype == bool):
        raise SystemExit(f"--data: images in {path} have dtype {images.dtype}; expected numbers.")
    images = images.astype(np.float32)
    return images / 255.0 if images.max() > 1.0 else images


def make_learner(args: argparse.Namespace):
    from hodiff.meta import FunctionalModel, MetaLearner

    return MetaLearner(
        FunctionalModel(conv_network(args.ways, args.filters, seed=args.seed), batch_statistics=True),
        cross_entropy,
        variant="fomaml" if args.first_order else "maml",
        inner_steps=args.inner_steps,
        inner_learning_rate=args.inner_lr,
        outer_optimizer=keras.optimizers.Adam(1e-3),
        jit_compile=args.xla,
    )


def accuracy(learner, tasks, count: int, batch: int, steps: int, seed: int) -> dict:
    """Query accuracy on ``count`` tasks before and after ``steps`` inner steps: mean and 95% CI."""
    before, after = [], []
    for start in range(0, count, batch):
        sx, sy, qx, qy = tasks.sample(min(batch, count - start), seed=[seed, 1, start])
        adapted = learner.evaluate((sx, sy, qx, qy), steps=steps, on_nonfinite="ignore").parameters
        initial = [tf.repeat(p[None], len(sx), axis=0) for p in learner.functional.parameters()]
        for parameters, store in ((initial, before), (adapted, after)):
            logits = learner.predict(parameters, qx).numpy()
            store.extend((logits.argmax(-1) == qy).mean(axis=1).tolist())
    summary = lambda values: (float(np.mean(values)), float(1.96 * np.std(values, ddof=1) / np.sqrt(len(values))))
    (mean_before, _), (mean, half_width) = summary(before), summary(after)
    return {"tasks": count, "steps": steps, "accuracy": mean, "ci95": half_width, "accuracy_before": mean_before}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m pinn_examples maml_omniglot", description=__doc__.splitlines()[0])
    parser.add_argument("--preset", choices=sorted(PRESETS), default="default")
    parser.add_argument(
        "--data", type=images_file, default=None, help="an .npz with images (classes, examples, 28, 28); else synthetic"
    )
    parser.add_argument("--ways", type=number(int, positive=True), default=5)
    parser.add_argument("--shots", type=number(int, positive=True), default=1)
    parser.add_argument("--queries", type=number(int, positive=True), default=15, help="query examples per class")
    parser.add_argument("--inner-steps", type=number(int, positive=True), default=1)
    parser.add_argument("--inner-lr", type=number(float, positive=True), default=0.4)
    parser.add_argument("--first-order", action="store_true", help="first-order MAML (FOMAML)")
    parser.add_argument(
        "--xla",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="compile with XLA (default no: on CPUs its convolutions were 20-30x slower than oneDNN's)",
    )
    parser.add_argument("--iterations", type=number(int, positive=True), default=None)
    parser.add_argument("--meta-batch", type=number(int, positive=True), default=None)
    parser.add_argument("--filters", type=number(int, positive=True), default=None)
    parser.add_argument("--classes", type=number(int, positive=True), default=None, help="synthetic classes")
    parser.add_argument("--held-out", type=float, default=0.2, help="share of the classes held out for --evaluate")
    parser.add_argument("--eval-tasks", type=number(int), default=None, help="held-out tasks to score (0: none)")
    parser.add_argument("--eval-steps", type=number(int, positive=True), default=3)
    parser.add_argument("--checkpoint-every", type=number(int, positive=True), default=100)
    parser.add_argument("--log-every", type=number(int, positive=True), default=50)
    parser.add_argument("--seed", type=number(int, maximum=SEED_MAX), default=0)
    parser.add_argument("--output", default=os.path.join("results", "maml_omniglot"))
    run_mode = parser.add_mutually_exclusive_group()
    run_mode.add_argument("--resume", action="store_true", help="continue the run in --output from its checkpoint")
    run_mode.add_argument("--evaluate", action="store_true", help="evaluate the run in --output; train nothing")
    parser.add_argument("--no-progress", action="store_true", help="no progress lines")
    args = parser.parse_args(argv)
    for name, value in PRESETS[args.preset].items():
        if getattr(args, name) is None:
            setattr(args, name, value)
    if not 0.0 < args.held_out < 1.0:
        parser.error(f"--held-out must be a share in (0, 1), got {args.held_out}")
    from hodiff.pinn.runlog import DiskFullError, RunInUseError, lock_run

    if (args.resume or args.evaluate) and not os.path.isfile(os.path.join(args.output, "run.json")):
        raise SystemExit(f"--{'resume' if args.resume else 'evaluate'}: no run in {args.output} (no run.json).")
    try:  # one writer per --output (as the PINN examples): two --resume at once would train into one run
        lock = lock_run(args.output, "--output", {"example": "maml_omniglot"})
    except RunInUseError as error:
        raise SystemExit(str(error)) from None
    except DiskFullError as error:  # a full disk when the lock is written: nothing of the run is
        raise SystemExit(f"maml_omniglot: {error.strerror}.") from None
    except OSError as error:
        raise SystemExit(f"--output {args.output}: cannot write there ({error}); choose another --output.") from None
    try:
        return train_and_evaluate(args)
    finally:
        lock.release()


def train_and_evaluate(args: argparse.Namespace) -> int:
    """Trains (unless ``--evaluate``) and evaluates the run in ``args.output``; the caller holds its lock."""
    log = (lambda line: None) if args.no_progress else (lambda line: print(line, flush=True))

    from hodiff.meta.tasks import FewShotTasks, split_classes

    settings = {name: getattr(args, name) for name in SETTINGS}
    run_file = os.path.join(args.output, "run.json")
    if args.resume or args.evaluate:
        with open(run_file) as file:
            stored = json.load(file)
        if args.evaluate:
            for name, value in stored.items():
                setattr(args, name, value)
            settings = stored
        elif stored != settings:
            changed = sorted(k for k in settings if stored.get(k) != settings[k])
            raise SystemExit(f"--resume: the run in {args.output} has other settings ({', '.join(changed)}).")
    elif os.path.exists(run_file):
        raise SystemExit(f"--output {args.output} already holds a run; continue it with --resume or pick another.")

    images = load_images(args.data, args.classes, args.seed)
    try:
        train, held_out = split_classes(images, args.held_out, seed=args.seed)
        train_tasks = FewShotTasks(train, args.ways, args.shots, args.queries)
        test_tasks = FewShotTasks(held_out, args.ways, args.shots, args.queries)
    except ValueError as error:
        raise SystemExit(f"maml_omniglot: {error}") from None
    learner = make_learner(args)
    iteration = tf.Variable(0, dtype=tf.int64)
    checkpoint = tf.train.Checkpoint(
        model=learner.functional.model, optimizer=learner.step.optimizer, iteration=iteration
    )
    from hodiff.pinn.runlog import move_aside, restore_newest

    checkpoints = os.path.join(args.output, "checkpoints")
    move_aside(os.path.join(checkpoints, "checkpoint"))  # a directory where the index goes: kept, out of the way
    manager = tf.train.CheckpointManager(checkpoint, checkpoints, max_to_keep=2)
    if args.resume or args.evaluate:
        learner.step.optimizer.build(learner.functional.variables)  # its slots exist before they are restored
        try:  # by the checkpoint files, newest readable first: a lost or damaged index loses nothing
            restored = restore_newest(checkpoint, args.output)
        except FileNotFoundError as error:
            raise SystemExit(
                f"--{'resume' if args.resume else 'evaluate'}: {error}; nothing to continue or evaluate. Remove "
                f"{args.output} (or choose another --output) and train again."
            ) from None
        log(f"maml_omniglot: restored iteration {int(iteration.numpy())} from {restored}")
    else:
        os.makedirs(args.output, exist_ok=True)
        with open(run_file, "w") as file:
            json.dump(settings, file, indent=2)

    if not args.evaluate:
        start, done = time.perf_counter(), int(iteration.numpy())
        for step in range(done, args.iterations):
            out = learner.meta_step(*train_tasks.sample(args.meta_batch, seed=[args.seed, 0, step]))
            iteration.assign(step + 1)
            if (step + 1) % args.checkpoint_every == 0 or step + 1 == args.iterations:
                manager.save(checkpoint_number=step + 1)
            if (step + 1) % args.log_every == 0 or step + 1 == args.iterations:
                rate = (step + 1 - done) / (time.perf_counter() - start)
                log(
                    f"iteration {step + 1}/{args.iterations}: query loss {float(out['loss']):.4f}, "
                    f"{rate:.2f} it/s, about {(args.iterations - step - 1) / rate:.0f} s left"
                )
    if not args.eval_tasks:
        log(f"maml_omniglot: trained to iteration {int(iteration.numpy())}; --eval-tasks 0, so no evaluation")
        return 0
    metrics = accuracy(learner, test_tasks, args.eval_tasks, args.meta_batch, args.eval_steps, args.seed)
    metrics.update(iteration=int(iteration.numpy()), settings=settings)
    with open(os.path.join(args.output, "metrics.json"), "w") as file:
        json.dump(metrics, file, indent=2)
    print(
        f"maml_omniglot: {args.ways}-way {args.shots}-shot accuracy on held-out classes after {args.eval_steps} inner "
        f"steps: {metrics['accuracy']:.3f} +- {metrics['ci95']:.3f} ({metrics['tasks']} tasks; before adaptation "
        f"{metrics['accuracy_before']:.3f}); wrote {args.output}/metrics.json",
        flush=True,
    )
    return 0


if __name__ == "__main__":  # python FILE runs it as python -m pinn_examples NAME does
    raise SystemExit(main())
