"""High-dimensional PDEs on the unit ball in R^D with a stochastic Taylor Laplacian (STDE / SDGD).

``python -m pinn_examples highdim --pde poisson|allen_cahn|sine_gordon --dim D``. The exact
solution is the inseparable "two-body" benchmark of Hu et al. (SDGD) and Shi et al. (STDE),

    u(x) = (1 - |x|^2) psi(x),  psi(x) = sum_{i=1}^{D-1} c_i sin(x_i + cos(x_{i+1}) + x_{i+1} cos(x_i)),

with ``c_i ~ N(0, 1)`` drawn once from ``numpy.random.default_rng(COEFFICIENT_SEED)``. The PDEs,
each with the forcing ``f`` computed in closed form so that this ``u`` solves it:

- ``poisson``: ``-Delta u = f``;
- ``allen_cahn``: ``Delta u + u - u^3 = f``;
- ``sine_gordon``: ``Delta u + sin(u) = f``;

and ``u = 0`` on the sphere ``|x| = 1``, imposed exactly: the network ``N`` is multiplied by
``g = 1 - |x|^2``. With ``grad g = -2x`` and ``Delta g = -2D``,
``Delta u = g Delta N - 4 x . grad N - 2 D N`` (:class:`BallLaplacian`): ``Delta N`` is the sparse
stochastic Taylor estimate (``--num-samples`` random coordinates per point, two independent
draws in the unbiased loss), ``x . grad N`` one first-order jet along ``x``. Each
``theta_i = x_i + cos(x_{i+1}) + x_{i+1} cos(x_i)`` depends on two coordinates only, so ``f`` costs
``O(D)`` per point (:func:`exact_parts`).

Adam's learning rate decays exponentially from ``--learning-rate`` to ``--final-learning-rate``.
Every Adam step draws its own ``--interior`` points uniformly in the ball, inside the compiled
step (:func:`training_data`, :func:`fresh_ball_points`: a Gaussian direction times ``U^(1/D)``),
from a seed that depends on the run's seed and the step only, so a resumed run sees the same
points. (Points kept for a whole compiled call of 100 steps were memorised: the logged loss on
them fell far below the loss at new points, and rose as the learning rate decayed.) The
relative L2 error is measured on ``--test-points`` other fresh uniform points (:func:`ball_points`);
``metrics.json`` also holds the wall time and the peak resident memory. ``field.png`` shows
the slice ``(x1, x2, 0, ..., 0)``. ``--max-minutes`` stops Adam after that much training time
(it is not stored with the run, so a resumed run may change it).

References:
  Hu, Shukla, Karniadakis & Kawaguchi (2024), "Tackling the curse of dimensionality with
  physics-informed neural networks", Neural Networks (arXiv:2307.12306).
  Shi, Hu, Lin & Kawaguchi (2024), "Stochastic Taylor Derivative Estimator: efficient amortization
  for arbitrary differential operators", NeurIPS (arXiv:2412.00088).
"""

from __future__ import annotations

import dataclasses
import time
from typing import Any

import numpy as np

from pinn_examples.runner import (
    Example,
    Settings,
    check_output,
    evaluate,
    field_errors,
    make_trainer,
    parse_args,
    setting,
    verdict,
    write_results,
)

PDES = ("poisson", "allen_cahn", "sine_gordon")
COEFFICIENT_SEED = 20240611  # the c_i of the exact solution
SLICE_POINTS = 61  # the (x1, x2) slice in field.png is SLICE_POINTS x SLICE_POINTS
POINT_STREAM = 7_000_001  # the training points' random stream (hodiff.jets.stde draws streams 0, 1, 2)


@dataclasses.dataclass
class HighDimSettings(Settings):
    """The shared settings plus the PDE, the dimension, the estimator's size and the error's points."""

    pde: str = setting("poisson", "the PDE", choices=PDES)
    dim: int = setting(1000, "dimension D of the unit ball, >= 2", positive=True)
    num_samples: int = setting(16, "coordinates per point in the sparse Laplacian estimate, <= --dim", positive=True)
    test_points: int = setting(4096, "fresh uniform points in the ball for the relative L2 error", positive=True)
    max_minutes: float = setting(0.0, "stop Adam after this many minutes of training; 0: no limit")
    final_learning_rate: float = setting(
        0.0, "learning rate at the last Adam step, by exponential decay from --learning-rate; 0: constant"
    )


def check_settings(settings: HighDimSettings) -> None:
    """Raises ``ValueError`` naming the flag when ``--dim`` or ``--num-samples`` cannot work."""
    if settings.dim < 2:
        raise ValueError(
            f"--dim {settings.dim}: the benchmark's solution couples neighbouring coordinates (x_i, x_{{i+1}}), "
            "so it needs D >= 2; give --dim 2 or more."
        )
    if settings.num_samples > settings.dim:
        raise ValueError(
            f"--num-samples {settings.num_samples}: the Laplacian in D={settings.dim} dimensions has only "
            f"{settings.dim} coordinates to sample; give --num-samples <= {settings.dim} (= {settings.dim} is exact)."
        )


def coefficients(dim: int) -> np.ndarray:
    """The ``D - 1`` coefficients ``c_i`` of the exact solution, ``N(0, 1)``, the same on every call."""
    return np.random.default_rng(COEFFICIENT_SEED).standard_normal(dim - 1)


def ball_points(count: int, dim: int, seed: Any) -> np.ndarray:
    """``count`` points uniform in the unit ball of R^dim, float64: a Gaussian direction times ``U^(1/dim)``.

    ``O(count * dim)`` work and memory; ``seed`` is anything ``numpy.random.default_rng`` takes.
    """
    rng = np.random.default_rng(seed)
    directions = rng.standard_normal((count, dim))
    directions /= np.linalg.norm(directions, axis=1, keepdims=True)
    return directions * rng.uniform(size=(count, 1)) ** (1.0 / dim)


def exact_parts(x: Any, c: Any) -> tuple[Any, Any, Any]:
    """``psi``, ``Delta psi`` and ``x . grad psi`` at points ``x`` ``(N, D)``, each ``(N,)``, in closed form.

    With ``a = x_i``, ``b = x_{i+1}``, ``theta = a + cos b + b cos a``:
    ``theta_a = 1 - b sin a``, ``theta_b = cos a - sin b``, ``theta_aa = -b cos a``,
    ``theta_bb = -cos b``, and ``Delta sin(theta) = -sin(theta) (theta_a^2 + theta_b^2) +
    cos(theta) (theta_aa + theta_bb)`` (each term depends on its two coordinates only).

    Args:
      x: a float32 or float64 tensor ``(N, D)``.
      c: the ``D - 1`` coefficients.
    """
    import tensorflow as tf

    c = tf.constant(c, x.dtype)
    a, b = x[:, :-1], x[:, 1:]
    sin_a, cos_a, sin_b, cos_b = tf.sin(a), tf.cos(a), tf.sin(b), tf.cos(b)
    theta = a + cos_b + b * cos_a
    theta_a, theta_b = 1.0 - b * sin_a, cos_a - sin_b
    sin_t, cos_t = tf.sin(theta), tf.cos(theta)
    psi = tf.reduce_sum(c * sin_t, axis=1)
    laplacian = tf.reduce_sum(c * (-sin_t * (theta_a**2 + theta_b**2) + cos_t * (-b * cos_a - cos_b)), axis=1)
    radial = tf.reduce_sum(c * cos_t * (a * theta_a + b * theta_b), axis=1)
    return psi, laplacian, radial


def exact_solution(x: Any, c: Any) -> tuple[Any, Any]:
    """``u = (1 - |x|^2) psi`` and ``Delta u = g Delta psi - 4 x . grad psi - 2 D psi`` at ``x`` ``(N, D)``."""
    import tensorflow as tf

    psi, laplacian, radial = exact_parts(x, c)
    g = 1.0 - tf.reduce_sum(x**2, axis=1)
    return g * psi, g * laplacian - 4.0 * radial - 2.0 * x.shape[1] * psi


def forcing(x: Any, c: Any, pde: str) -> Any:
    """The right-hand side ``f`` ``(N,)`` for which the exact solution solves ``pde`` (see the module docstring)."""
    import tensorflow as tf

    u, laplacian = exact_solution(x, c)
    if pde == "poisson":
        return -laplacian
    if pde == "allen_cahn":
        return laplacian + u - u**3
    if pde == "sine_gordon":
        return laplacian + tf.sin(u)
    raise ValueError(f"forcing: pde={pde!r} is not one of {PDES}.")


def _ball_laplacian_class():
    """:class:`BallLaplacian`, defined on first use so that importing this module does not import TensorFlow."""
    import tensorflow as tf

    import hodiff
    from hodiff import pinn

    @dataclasses.dataclass(frozen=True)
    class BallLaplacian(pinn.Stochastic):
        """``Delta u`` for ``u = (1 - |x|^2) N(x)``: ``g Delta N - 4 x . grad N - 2 D N``.

        ``Delta N`` is :class:`hodiff.pinn.Stochastic`'s estimate (or, without a seed, the exact
        Laplacian) of ``operator`` on the Keras chain ``network`` by Taylor jets; ``x . grad N``
        is one first-order jet along ``x``. Unbiased whenever the estimate of ``Delta N`` is.
        """

        network: Any = dataclasses.field(default=None, compare=False, repr=False)

        @tf.autograph.experimental.do_not_convert
        def evaluate(self, solution, x, column, seed):
            network = self.network
            laplacian = super().evaluate(network, x, 0, seed)  # the Keras chain itself: the forward route
            value, radial = hodiff.taylor_coefficients(network, x, x[:, None, :], order=1)
            g = 1.0 - tf.reduce_sum(x**2, axis=1)
            return g * laplacian - 4.0 * radial[:, 0, 0] - 2.0 * x.shape[1] * value[:, 0, 0]

    return BallLaplacian


def fresh_ball_points(count: int, dim: int, seed: Any, dtype: Any = "float32") -> Any:
    """``count`` points uniform in the unit ball of R^dim, drawn by TensorFlow's stateless ops from ``seed``.

    The training points (:func:`training_data`), drawn inside the compiled step: a Gaussian
    direction times ``U^(1/dim)``, ``O(count * dim)``. ``seed`` is an int or int tensor (the
    step's seed); the stream differs from :mod:`hodiff.jets.stde`'s. XLA draws other numbers than
    eager or graph mode for the same seed (TF issue #121243), as uniform.
    """
    import tensorflow as tf

    draw = tf.stack([tf.cast(seed, tf.int64), tf.constant(POINT_STREAM, tf.int64)])
    directions = tf.random.stateless_normal((count, dim), draw, dtype=dtype, alg="philox")
    directions /= tf.norm(directions, axis=1, keepdims=True)
    radii = tf.random.stateless_uniform((count, 1), draw + tf.constant([0, 1], tf.int64), dtype=dtype, alg="philox")
    return directions * radii ** (1.0 / dim)


def training_data(problem: Any, settings: HighDimSettings) -> Any:
    """The problem's :class:`hodiff.pinn.TrainingData` whose interior points are drawn afresh at every step.

    ``settings.interior`` points uniform in the unit ball (:func:`fresh_ball_points`), inside the
    compiled step, from the step's seed (the run's seed and the step number, as for the
    stochastic Laplacian), a different stream from the Laplacian's.
    """
    from hodiff import pinn

    dim = settings.dim
    fresh = lambda count, seed, dtype: fresh_ball_points(count, dim, seed, dtype)  # noqa: E731
    return pinn.TrainingData(problem, settings.interior, settings.sampling, settings.seed, fresh_points=fresh)


def build(settings: HighDimSettings):
    """The problem and the model ``u = (1 - |x|^2) N(x)`` (``N`` a tanh MLP, a Keras chain) for ``settings``."""
    import keras
    import tensorflow as tf

    from hodiff import operators, pinn

    check_settings(settings)
    dim, dtype = settings.dim, settings.dtype
    domain = pinn.Hypersphere(np.zeros(dim), 1.0)  # samples once: the trainer's points are only a size here
    c = coefficients(dim)
    layers: list[Any] = [keras.Input((dim,), dtype=dtype)]
    for i in range(settings.depth):
        initializer = keras.initializers.GlorotNormal(settings.seed + i)
        layers.append(keras.layers.Dense(settings.width, "tanh", dtype=dtype, kernel_initializer=initializer))
    initializer = keras.initializers.GlorotNormal(settings.seed + settings.depth)
    layers.append(keras.layers.Dense(1, dtype=dtype, kernel_initializer=initializer))
    network = keras.Sequential(layers, name="network")

    class OnTheBall(keras.layers.Layer):
        """``(1 - |x|^2) network(x)``: zero on the unit sphere whatever the network."""

        def __init__(self, inner, **kwargs):
            super().__init__(**kwargs)
            self.inner = inner

        def call(self, x):
            return (1.0 - tf.reduce_sum(x**2, axis=1, keepdims=True)) * self.inner(x)

    model = keras.Sequential([keras.Input((dim,), dtype=dtype), OnTheBall(network, dtype=dtype)], name="highdim")
    laplacian = _ball_laplacian_class()(
        "lap_u", operators.Laplacian(), "u", settings.num_samples, "sparse", "forward", network=network
    )
    pde = settings.pde

    def residual(d, x, p):
        f = forcing(x.points, c, pde)  # the (N, D) tensor: no slice per coordinate
        lap, u = d["lap_u"], d["u"]
        if pde == "poisson":
            return -lap - f
        if pde == "allen_cahn":
            return lap + u - u**3 - f
        return lap + tf.sin(u) - f

    problem = pinn.Problem(domain, needs=("u", laplacian), residual=residual)
    return problem, model


def _test_batches(settings: HighDimSettings):
    """The error's points, in batches of at most ~2^21 numbers: ``(points, exact u)``, float64."""
    import tensorflow as tf

    c = coefficients(settings.dim)
    batch = max(1, min(settings.test_points, 2**21 // settings.dim))
    for number, start in enumerate(range(0, settings.test_points, batch)):
        count = min(batch, settings.test_points - start)
        points = ball_points(count, settings.dim, [settings.seed, 2, number])
        yield points, exact_solution(tf.constant(points), c)[0].numpy()


def relative_error(trainer: Any, settings: HighDimSettings) -> float:
    """``||u_pred - u|| / ||u||`` over ``settings.test_points`` fresh uniform points in the ball
    (:func:`hodiff.pinn.metrics.relative_l2_errors`; the points come in batches, the values are small)."""
    from hodiff.pinn.metrics import relative_l2_errors

    predicted, exact = zip(*((trainer.predict(points)[:, 0], values) for points, values in _test_batches(settings)))
    return relative_l2_errors({"u": np.concatenate(predicted)}, {"u": np.concatenate(exact)})["relative_l2_error"]


def slice_fields(trainer: Any, settings: HighDimSettings) -> tuple[dict, np.ndarray, np.ndarray]:
    """The prediction and the exact solution on the slice ``(x1, x2, 0, ..., 0)``, NaN outside the disk."""
    import tensorflow as tf

    axis = np.linspace(-1.0, 1.0, SLICE_POINTS)
    x1, x2 = (grid.ravel() for grid in np.meshgrid(axis, axis, indexing="ij"))
    inside = x1**2 + x2**2 <= 1.0
    predicted, exact = np.full(x1.shape, np.nan), np.full(x1.shape, np.nan)
    c, rows = coefficients(settings.dim), np.flatnonzero(inside)
    batch = max(1, 2**21 // settings.dim)
    for start in range(0, len(rows), batch):
        chosen = rows[start : start + batch]
        points = np.zeros((len(chosen), settings.dim))
        points[:, 0], points[:, 1] = x1[chosen], x2[chosen]
        predicted[chosen] = trainer.predict(points)[:, 0]
        exact[chosen] = exact_solution(tf.constant(points), c)[0].numpy()
    shape = (SLICE_POINTS, SLICE_POINTS)
    return {"x1": axis, "x2": axis}, predicted.reshape(shape), exact.reshape(shape)


def train(trainer: Any, settings: HighDimSettings, progress: bool = True) -> str:
    """Adam, fresh points at every step (:func:`training_data`); returns why it stopped."""
    chunk, done = settings.steps_per_call, int(trainer.adam_steps.numpy())
    budget = 60.0 * settings.max_minutes
    while done < settings.adam_steps:
        if budget and trainer.elapsed_seconds >= budget:
            return f"--max-minutes {settings.max_minutes:g} reached after {done} steps"
        if settings.final_learning_rate:  # a function of the step only, so a resumed run decays alike
            ratio = settings.final_learning_rate / settings.learning_rate
            optimizer = getattr(trainer.optimizer, "inner_optimizer", trainer.optimizer)
            optimizer.learning_rate = settings.learning_rate * ratio ** (done / settings.adam_steps)
        result = trainer.adam(done + chunk)
        done = result.steps
        if result.new_steps == 0:  # stopped (a callback) or already done
            return result.stop_reason
        if progress and done % settings.log_every == 0:
            error = relative_error(trainer, dataclasses.replace(settings, test_points=min(512, settings.test_points)))
            print(
                f"highdim: step {done}, loss {trainer.history[-1]['loss']:.4e}, relative L2 error {error:.3e} "
                f"(512 test points), {trainer.elapsed_seconds:.0f} s"
            )
    return f"reached {settings.adam_steps} steps"


def run(argv: list[str] | None = None) -> int:
    """Trains, measures and writes the results of the highdim example; returns the exit status."""
    started = time.perf_counter()
    args, settings = parse_args(EXAMPLE, argv)  # refuses what check_settings refuses (Example.check)
    if args.evaluate is not None:
        return evaluate(EXAMPLE, args)
    problem, model = build(settings)
    check_output(args)
    # --max-minutes and --test-points do not change the training: stored as their defaults (a resume may change them)
    defaults = HighDimSettings()
    stored = dataclasses.replace(settings, max_minutes=defaults.max_minutes, test_points=defaults.test_points)
    try:
        data = training_data(problem, stored)
        trainer = make_trainer(data, model, stored, args.output, args.resume, args.overwrite, args.tensorboard, False)
    except (FileExistsError, FileNotFoundError, ValueError) as error:
        raise SystemExit(f"highdim: {error}") from None
    print(f"highdim: {dataclasses.asdict(settings)}")
    if "initial_relative_l2_error" not in trainer.run_info:
        untrained = trainer.run_log is None or trainer.run_log.restored is None
        trainer.run_info["initial_relative_l2_error"] = relative_error(trainer, settings) if untrained else None
        trainer.save_run_info()
    stop_reason = train(trainer, settings, progress=not args.no_progress)
    from hodiff.pinn.study import peak_memory_mib

    error = relative_error(trainer, settings)
    axes, predicted, exact = slice_fields(trainer, settings)
    metrics = {
        "example": EXAMPLE.name,
        "preset": args.preset,
        "pde": settings.pde,
        "dim": settings.dim,
        "relative_l2_error": error,
        "relative_l2_error_slice": field_errors({"u": predicted}, {"u": exact})["relative_l2_error"],
        "test_points": settings.test_points,
        "target": EXAMPLE.target.get(args.preset),
        "target_metric": EXAMPLE.target_metric,
        "initial_relative_l2_error": trainer.run_info["initial_relative_l2_error"],
        "adam_steps": int(trainer.adam_steps.numpy()),
        "stop_reason": stop_reason,
        "lbfgs_iterations": None,
        "wall_seconds": round(trainer.elapsed_seconds, 1),
        "total_seconds": round(time.perf_counter() - started, 1),
        "peak_rss_mib": round(peak_memory_mib(), 1),
        "final_loss": trainer.final_loss,
        "settings": dataclasses.asdict(settings),
    }
    line, status = verdict(EXAMPLE, args.preset, metrics)
    metrics["target_met"] = None if EXAMPLE.target.get(args.preset) is None else status == 0
    title = f"highdim {settings.pde}, D={settings.dim}: slice (x1, x2, 0, ...); rel. L2 error in the ball {error:.2e}"
    write_results(args.output, metrics, axes, predicted, exact, trainer.history, trainer.problem, title)
    print(
        f"highdim: {settings.pde}, D={settings.dim}: relative L2 error {error:.3e} on {settings.test_points} fresh "
        f"points, {trainer.elapsed_seconds:.0f} s of training ({metrics['total_seconds']:.0f} s in all), "
        f"peak RSS {metrics['peak_rss_mib']:.0f} MiB; {stop_reason}; wrote {args.output}/"
    )
    print(line)
    return status


EXAMPLE = Example(
    name="highdim",
    description=__doc__.splitlines()[0],
    build=build,
    reference=lambda: ({}, np.zeros(0)),  # unused: the error is measured on fresh points in the ball (run above)
    check=check_settings,
    presets={
        "default": HighDimSettings(
            interior=100,
            adam_steps=15000,
            lbfgs_iterations=0,
            learning_rate=1e-3,
            final_learning_rate=1e-5,
            width=128,
            depth=4,
            sampling="random",
            steps_per_call=100,
            log_every=500,
            checkpoint_every=1000,
        ),
        "fast": HighDimSettings(
            xla=False,
            interior=32,
            adam_steps=20,
            lbfgs_iterations=0,
            width=16,
            depth=2,
            sampling="random",
            steps_per_call=10,
            log_every=10,
            checkpoint_every=10,
            dim=5,
            num_samples=2,
            test_points=256,
        ),
    },
    target={"default": 1e-2},
    unsupported_flags=("--replicas", "--multi-worker"),  # its own run() trains on one device
    wall_seconds={"default": 447},  # on 2 CPU cores, as recorded in docs/high-dimensional.md: training and evaluation
)


def main(argv=None) -> int:
    return run(argv)


if __name__ == "__main__":  # python FILE runs it as python -m pinn_examples NAME does
    raise SystemExit(main())
