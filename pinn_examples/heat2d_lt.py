"""PINNacle Heat2d-LT: u_t = 0.001 (u_xx + u_yy) + 5 sin(u^2) (1 + 2 sin(pi t / 4)) sin(4 pi x) sin(2 pi y), t <= 100.

On ``[0, 1]^2 x [0, 100]`` with ``u(x, y, 0) = sin(4 pi x) sin(3 pi y)`` and ``u = 0`` on the
boundary. The source drives eight cells to ``+-sqrt(pi)`` while ``1 + 2 sin(pi t / 4)`` is positive
and lets them empty when it is negative: the solution settles onto a periodic orbit of period 8, with fronts
a few hundredths wide (:mod:`pinn_examples.heat2d_lt_reference`). What the example combines:

- time-marching in ``--time-windows`` windows (25 of length 4: half a period each), the initial
  condition of each hard, ``u = previous + (t - t_k) / L 4 sin(4 pi x) y (1 - y) N`` (``u = 0`` on the
  walls exact too, and on the lines ``x = k / 4``, where the solution vanishes by symmetry;
  ``--no-sine-walls``: ``16 x (1 - x)`` for ``4 sin(4 pi x)``), ``previous`` the window before at its end
  as its sine series (``--restart-grid`` points a side; every window then costs the same), the initial
  condition in the first;
- the network sees ``t`` through ``cos(pi t / L)``, ``sin(pi t / L)`` (``--t-period``, by default twice
  the window length ``L``: each window's times span half the circle, where the input scaled over the whole
  horizon would give a window 1/25 of the range) and ``x`` with period 1/2 (``--x-period``: the initial
  condition and the source are odd about every line ``x = k / 4``, so the solution is);
- the modified MLP, float64, Adam then L-BFGS in each window.

The error is PINNacle's L2RE at 20,000 fixed points uniform in the space-time box, against the
sine pseudo-spectral reference (own error below 1e-4); ``field.png`` shows the slice ``y = 0.25``
over ``(x, t)``. PINNacle: every method about 1.0; target 5e-2.

References:
  Hao et al. (2024), "PINNacle: A Comprehensive Benchmark of Physics-Informed Neural Networks
  for Solving PDEs", NeurIPS Datasets and Benchmarks (arXiv:2306.08827), problem Heat2d-LT.
"""

import dataclasses

import numpy as np

from pinn_examples.heat2d_lt_reference import (
    DIFFUSION,
    END,
    REFERENCE_DT,
    REFERENCE_N,
    STRENGTH,
    heat2d_lt_reference,
    heat2d_lt_spectral,
    picture_points,
)
from pinn_examples.runner import Example, Settings, setting
from pinn_examples.scattered import ScatteredExample, evaluate_run, run

WALL_SCALE = 16.0  # x (1 - x) y (1 - y) is at most 1/16


@dataclasses.dataclass
class HeatSettings(Settings):
    architecture: str = setting("modified", "the network: plain MLP or modified MLP", choices=("mlp", "modified"))
    x_period: float = setting(0.5, "period of the embedding of x (the solution's); 0: x plainly")
    t_period: float = setting(
        0.0, "period of the embedding of t; 0: twice the window's length (a window's times span half the circle)"
    )
    restart_grid: int = setting(
        64, "each window starts from the sine series of the one before on this grid; 0: off", off_or_least=2
    )
    sine_walls: bool = setting(True, "u = 0 on the walls by sin(4 pi x) (0 on every x = k/4, period 1/2), not x(1-x)")


def residual(d, x, p):
    import tensorflow as tf

    source = tf.sin(d["u"] ** 2) * (1.0 + 2.0 * tf.sin(np.pi * x["t"] / 4.0))
    source = STRENGTH * source * tf.sin(4.0 * np.pi * x["x"]) * tf.sin(2.0 * np.pi * x["y"])
    return d["u_t"] - DIFFUSION * (d["u_xx"] + d["u_yy"]) - source


def initial(x):
    import tensorflow as tf

    return (tf.sin(4.0 * np.pi * x["x"]) * tf.sin(3.0 * np.pi * x["y"]))[:, None]


def hard_transform(length: float, sine_walls: bool = True):
    """``u = previous + (t - t_k) / length 4 sin(4 pi x) y (1 - y) N``: the window's initial values and u = 0 on the
    walls; the network's output is the change over a window (order one). ``sin(4 pi x)`` is zero on every line
    ``x = k / 4`` (as the solution) and of period 1/2 in ``x`` (as the solution and the ``x`` embedding);
    ``sine_walls=False``: ``16 x (1 - x) y (1 - y)`` instead, which breaks that period."""
    import tensorflow as tf

    def transform(x, outputs, start, previous):
        across = tf.sin(4.0 * np.pi * x["x"]) / 4.0 if sine_walls else x["x"] * (1.0 - x["x"])
        walls = WALL_SCALE * across * x["y"] * (1.0 - x["y"])
        return previous + ((x["t"] - start) / length * walls)[:, None] * outputs

    return transform


def square(end: float = END):
    """The space-time box ``[0, 1]^2 x [0, end]``."""
    from hodiff import pinn

    return pinn.Rectangle(("x", "y"), (0.0, 0.0), (1.0, 1.0)) * pinn.TimeDomain("t", 0.0, end)


def windows(settings: HeatSettings, end: float = END):
    """The ``settings.time_windows`` windows on ``[0, end]``, each with its hard initial condition."""
    from hodiff import pinn

    restart = None
    if settings.restart_grid:  # the sine series on the interior grid of spacing 1 / grid: zero on the walls
        sine = pinn.Sine(0.0, 1.0, settings.restart_grid - 1)
        restart = pinn.SeriesRestart(square(end), {"x": sine, "y": sine}, settings.dtype)
    transform = hard_transform(end / settings.time_windows, settings.sine_walls)
    return pinn.TimeWindows(settings.time_windows, initial, transform, restart)


def build(settings: HeatSettings, end: float = END):
    """The problem on ``[0, 1]^2 x [0, end]`` (one window's hard conditions) and the network."""
    from hodiff import pinn

    domain = square(end)
    one = windows(dataclasses.replace(settings, time_windows=1), end / settings.time_windows)
    problem = pinn.Problem(
        domain,
        needs=("u", "u_t", "u_xx", "u_yy"),
        residual=residual,
        output_transform=one.output_transform(domain, 0.0, None),
    )
    periodic = {"t": settings.t_period or 2.0 * end / settings.time_windows}
    if settings.x_period:
        periodic["x"] = settings.x_period
    model = pinn.mlp(
        domain,
        width=settings.width,
        depth=settings.depth,
        dtype=settings.dtype,
        seed=settings.seed,
        periodic=periodic,
        architecture=settings.architecture,
    )
    return problem, model


def test_set():
    reference = heat2d_lt_reference()
    return reference["points"], {"u": reference["u"]}


def picture():
    axes, points = picture_points()
    reference = heat2d_lt_reference()
    return axes, points, {"u": reference["picture"]}


SNAPSHOTS = (2.0, 4.0, 6.0, 50.0, 100.0)  # times of plot_over_time's rows: a period's phases, then late


def plot_over_time(output: str, path: str, times: tuple[float, ...] = SNAPSHOTS, side: int = 101) -> float:
    """The trained run in ``output`` (``--evaluate``) and the reference on a ``side x side`` grid at ``times``
    (multiples of the reference's step): one row per time with the prediction, the reference and the error,
    written to ``path``; returns the largest absolute error."""
    import matplotlib.pyplot as plt

    axis = np.linspace(0.0, 1.0, side)
    gx, gy = (g.ravel() for g in np.meshgrid(axis, axis, indexing="ij"))
    points = np.concatenate([np.column_stack([gx, gy, np.full_like(gx, t)]) for t in times])
    exact = heat2d_lt_spectral(REFERENCE_N, REFERENCE_DT, points).reshape(len(times), side, side)
    predicted = evaluate_run(SCATTERED, output, points)["u"].reshape(len(times), side, side)
    figure, grid = plt.subplots(len(times), 3, figsize=(10, 3.1 * len(times)), squeeze=False)
    for row, t in enumerate(times):
        worst = max(np.abs(predicted[row] - exact[row]).max(), 1e-12)
        for column, (values, title) in enumerate(
            ((predicted[row], "PINN"), (exact[row], "spectral"), (predicted[row] - exact[row], "error"))
        ):
            limits = {"vmin": -2.0, "vmax": 2.0} if column < 2 else {"vmin": -worst, "vmax": worst}
            shown = grid[row, column].imshow(values.T, origin="lower", extent=(0, 1, 0, 1), cmap="RdBu_r", **limits)
            figure.colorbar(shown, ax=grid[row, column], shrink=0.8)
            grid[row, column].set_title(f"{title}, t = {t:g}")
    figure.tight_layout()
    figure.savefig(path, dpi=70)
    plt.close(figure)
    return float(np.abs(predicted - exact).max())


EXAMPLE = Example(
    name="heat2d_lt",
    build=build,
    presets={
        "default": HeatSettings(
            interior=2048,
            adam_steps=300,
            lbfgs_iterations=200,
            width=48,
            depth=4,
            dtype="float64",
            steps_per_call=100,
            time_windows=25,
        ),
        "fast": HeatSettings(
            xla=False,
            interior=128,
            adam_steps=20,
            lbfgs_iterations=10,
            width=8,
            depth=2,
            dtype="float64",
            steps_per_call=10,
            log_every=10,
            checkpoint_every=10,
            time_windows=2,
            restart_grid=16,
        ),
    },
    target={"default": 5e-2},
    windows=windows,
    wall_seconds={"default": 1185},  # on 2 CPU cores, as recorded in docs/benchmarks.md, PINNacle problems
)
SCATTERED = ScatteredExample(EXAMPLE, test_set, picture)


def main(argv=None) -> int:
    return run(SCATTERED, argv)


if __name__ == "__main__":  # python FILE runs it as python -m pinn_examples NAME does
    raise SystemExit(main())
