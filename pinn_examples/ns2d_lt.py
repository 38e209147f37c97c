"""NS2d-LT (PINNacle): unsteady Navier-Stokes in a channel over a long time, nu = 0.01; fields u, v, p.

``u_t + u u_x + v u_y + p_x = nu (u_xx + u_yy)``,
``v_t + u v_x + v v_y + p_y = nu (v_xx + v_yy) - sin(pi x) sin(pi y) sin(pi t)``, ``u_x + v_y = 0`` on
``[0, 2] x [0, 1] x [0, 5]``: the inflow ``u = sin(pi y) g(t)``, ``g = sin(pi t) + sin(3 pi t) +
sin(5 pi t)``, ``v = 0`` at ``x = 0``; no slip at ``y = 0, 1``; at rest at ``t = 0``. The outlet
``x = 2`` is free of stress, ``-p + 2 nu u_x = 0`` and ``u_y + v_x = 0`` (PINNacle writes ``p = 0``,
which alone leaves the outflow undetermined; as in ``ns2d_cg``, p is within ``2 nu u_x`` of 0 there).
The inflow reverses with ``g``: the whole channel's flow oscillates, the pressure drop (up to ~40) is
what accelerates it, and Stokes layers ~0.04 thick form on the walls.

What the example combines:

- the velocity as the curl of a stream function (:class:`hodiff.pinn.StreamFunction`, ``--stream-function``,
  the default): ``(u, v) = sin(pi y) (g(t) - g(t_k)) e_x + previous + (t - t_k) / L curl(psi)``,
  ``psi = (1 - exp(-x / 0.1)) (4y(1 - y))^2 N_psi`` (``--inlet-thickness 0.1``: the inflow's profile adjusts to the
  channel's within about 0.1 of the inlet): continuity exact, and the inflow's u, no slip and the window's initial
  values too (``t_k`` the window's start, ``L`` its length, ``previous`` the window before at ``t_k``, at rest in the
  first); the inflow's ``v = 0`` is a loss term (``--soft-inlet``: a restart's error in v there is corrected in the
  window rather than held through it; ``--no-soft-inlet``: psi of order 2 at the inlet, v held); the pressure has no
  initial condition (incompressible flow has none to give).
  ``--no-stream-function``: the network gives ``(u, v, p)``, ``u = sin(pi y) g(t) + (previous - sin(pi y)
  g(t_k)) + D N_u``, ``v = previous + D N_v`` with ``D = x/2 4y(1 - y) (t - t_k) / L``, and continuity is a
  loss term (``--continuity-weight``: its terms are about 30 times smaller than the momentum equations', and
  unweighted the network lets the flow lose mass);
- the pressure's lift ``p = (2 - x) (2 / pi) g'(t) + S N_p`` (``--pressure-lift``; ``--pressure-scale`` S):
  the drop that accelerates the inflow's flux ``(2 / pi) g(t)`` along the channel, so that the network
  learns the rest;
- time-marching in ``--time-windows`` windows, each starting from the Chebyshev series of the window before
  (``--restart-nodes`` nodes a side, :class:`hodiff.pinn.SeriesRestart`: every window costs the same, and the
  series holds the inflow and the walls as the window before did); with the stream function the series'
  velocity is itself a curl (``SeriesRestart(divergence_free=(0, 1))``), so no restart hands on a divergence;
- 512 more interior points a window within 0.25 of the inlet (``--inlet-band-points``, ``--inlet-band``;
  :class:`hodiff.pinn.Refinement`), where the inflow's acceleration (``g'`` up to ``9 pi``) adjusts to the channel's
  flow: with the uniform points alone the windows starting at ``t = 2`` and ``4`` could fail there;
- the modified MLP, float32 (750 self-scaled BFGS iterations in each window cost what float64's 500 did), no Adam
  steps by default; the two outlet conditions are loss terms (``--outlet-weight``), the shear one tapered towards
  the walls, ``(4y(1 - y))^2 (u_y + v_x)`` (``--outlet-taper 2``): it cannot hold where the outlet meets the no-slip
  walls, and held uniformly it made the network flatten the wall layers at the outlet.

The error is PINNacle's L2RE over (u, v, p) together (target 1e-1) and over (u, v) (target 5e-2), at
20,000 fixed points uniform in the space-time box (times > 0, multiples of 0.01), against the
staggered finite-volume / SBDF2 reference (:mod:`pinn_examples.ns2d_lt_reference`); ``field.png``
shows the slice ``y = 0.5`` over ``(x, t)``. PINNacle: every method about 1.0.

References:
  Hao et al. (2024), "PINNacle: A Comprehensive Benchmark of Physics-Informed Neural Networks
  for Solving PDEs", NeurIPS Datasets and Benchmarks (arXiv:2306.08827), problem NS2d-LT.
"""

import dataclasses

import numpy as np

from pinn_examples.cavity_reference import NU
from pinn_examples.ns2d_lt_reference import END, INFLOW_WAVES, LENGTH, SNAPSHOTS, ns2d_lt_reference, picture_points
from pinn_examples.runner import Example, Settings, field_errors, setting
from pinn_examples.scattered import ScatteredExample, evaluate_run, run

FIELDS = ("u", "v", "p")
OUTLET_POINTS = 512  # per window
INLET_POINTS = 512  # per window, for the inlet's v = 0
INLET_THICKNESS = 0.1  # the inflow's profile adjusts to the channel's flow within about this of the inlet
RESTART_NODES = 32  # Chebyshev-Gauss-Lobatto nodes a side: 0.0026 apart at the walls, 0.005 at the inlet
INLET_BAND = 0.25  # the inflow's acceleration leaves its largest errors within this of the inlet
INLET_BAND_POINTS = 512  # per window, added to the interior's 2,048 uniform ones
OUTLET_TAPER = 2.0  # the shear condition conflicts with no slip at the outlet's corners (see outlet_conditions)
TARGETS = {("u", "v", "p"): 1e-1, ("u", "v"): 5e-2}  # PINNacle's L2RE over these fields together


@dataclasses.dataclass
class ChannelSettings(Settings):
    architecture: str = setting("modified", "the network: plain MLP or modified MLP", choices=("mlp", "modified"))
    pressure_lift: bool = setting(True, "p = (2 - x) (2 / pi) g'(t) + S N_p: the drop that accelerates the inflow")
    pressure_scale: float = setting(1.0, "S: the scale of the network's pressure output", positive=True)
    outlet_points: int = setting(OUTLET_POINTS, "points on the outlet x = 2 per window", positive=True)
    continuity_weight: float = setting(1.0, "loss weight of the continuity equation (its terms are ~30x smaller)")
    restart_nodes: int = setting(
        RESTART_NODES,
        "each window starts from the Chebyshev series of the one before on these nodes a side; 0: off",
        off_or_least=2,
    )
    stream_function: bool = setting(
        True, "the network's velocity from a stream function (pinn.StreamFunction): continuity exact, at every time"
    )
    inlet_thickness: float = setting(
        INLET_THICKNESS, "with the stream function: its inlet factor 1 - exp(-x / this) rises within this; 0: x / 2"
    )
    soft_inlet: bool = setting(
        True,
        "with the stream function: v = 0 on the inlet as a loss term (psi of order 1 there), not held at the restart's",
    )
    inlet_weight: float = setting(10.0, "loss weight of the inlet's v = 0 (--soft-inlet)")
    inlet_points: int = setting(INLET_POINTS, "points on the inlet x = 0 per window (--soft-inlet)", positive=True)
    outlet_weight: float = setting(1.0, "loss weight of the outlet's two stress-free conditions")
    outlet_taper: float = setting(
        OUTLET_TAPER, "the outlet's shear condition weighted by (4y(1 - y))**this: less near the walls; 0: uniform"
    )
    inlet_band_points: int = setting(
        INLET_BAND_POINTS, "interior points per window added within --inlet-band of the inlet; 0: none"
    )
    inlet_band: float = setting(INLET_BAND, "the width of the inlet band (--inlet-band-points)", positive=True)


def inflow(t):
    """``g(t)`` and ``g'(t)`` (tensors)."""
    import tensorflow as tf

    g = sum(tf.sin(k * np.pi * t) for k in INFLOW_WAVES)
    rate = np.pi * sum(k * tf.cos(k * np.pi * t) for k in INFLOW_WAVES)
    return g, rate


def residual(d, x, p):
    import tensorflow as tf

    u, v = d["u"], d["v"]
    force = tf.sin(np.pi * x["x"]) * tf.sin(np.pi * x["y"]) * tf.sin(np.pi * x["t"])  # minus the right-hand side
    return {
        "momentum_x": d["u_t"] + u * d["u_x"] + v * d["u_y"] + d["p_x"] - NU * (d["u_xx"] + d["u_yy"]),
        "momentum_y": d["v_t"] + u * d["v_x"] + v * d["v_y"] + d["p_y"] - NU * (d["v_xx"] + d["v_yy"]) + force,
        "continuity": d["u_x"] + d["v_y"],
    }


def initial(x):
    """At rest at ``t = 0`` (the pressure's column is not used)."""
    import tensorflow as tf

    return tf.zeros_like(x["x"])[:, None] * np.zeros((1, 3))


def hard_transform(length: float, lift: bool, scale: float, stream: bool):
    """The window's ``(u, v, p)`` from the network's outputs (see the module's docstring); with ``stream`` the
    network's velocity vanishes at the inlet and the walls already (its stream function's envelope)."""
    import tensorflow as tf

    def transform(x, outputs, start, previous):
        s, y, t = x["x"][:, None], x["y"][:, None], x["t"][:, None]
        g, rate = inflow(t)
        profile = tf.sin(np.pi * y)
        distance = (t - start) / length if stream else 0.5 * s * 4.0 * y * (1.0 - y) * (t - start) / length
        at = tf.cast(start, g.dtype) if tf.is_tensor(start) else tf.constant(start, g.dtype)  # a variable when marched
        g_start = inflow(at)[0]
        drop = (LENGTH - s) * (2.0 / np.pi) * rate if lift else tf.zeros_like(s)
        dtype = outputs.dtype.as_numpy_dtype
        first, velocity, pressure = (np.array([row], dtype) for row in ([1, 0, 0], [1, 1, 0], [0, 0, 1]))
        base = profile * (g - g_start) * first + drop * pressure
        return base + previous * velocity + (distance * velocity + scale * pressure) * outputs

    return transform


def channel(end: float = END):
    """The space-time box ``[0, 2] x [0, 1] x [0, end]``."""
    from hodiff import pinn

    return pinn.Rectangle(("x", "y"), (0.0, 0.0), (LENGTH, 1.0)) * pinn.TimeDomain("t", 0.0, end)


def windows(settings: ChannelSettings, end: float = END):
    """The ``settings.time_windows`` windows on ``[0, end]``, each with its hard initial condition, starting from
    the Chebyshev series of the window before (its grid holds the inflow and the walls, so the series does: exact
    to rounding on the nodes' lines ``x = 0``, ``y = 0``, ``y = 1``)."""
    from hodiff import pinn

    restart = None
    if settings.restart_nodes:
        x, y = pinn.Chebyshev(0.0, LENGTH, settings.restart_nodes), pinn.Chebyshev(0.0, 1.0, settings.restart_nodes)
        velocity = (0, 1) if settings.stream_function else None  # a curl restart: no divergence handed on
        restart = pinn.SeriesRestart(channel(end), {"x": x, "y": y}, settings.dtype, divergence_free=velocity)
    transform = hard_transform(
        end / settings.time_windows, settings.pressure_lift, settings.pressure_scale, settings.stream_function
    )
    return pinn.TimeWindows(settings.time_windows, initial, transform, restart, local_time=True)


def outlet_conditions(count: int, taper: float):
    """The stress-free outlet ``x = 2``: ``-p + 2 nu u_x = 0`` and ``(4y(1 - y))^taper (u_y + v_x) = 0`` (sampled on
    the face).

    The shear condition is tapered towards the walls: where the outlet meets a no-slip wall, ``v_x = 0`` and the wall
    layer's ``u_y`` is not, so the condition fails at the corners (the true flow meets it through an outflow layer
    in ``v`` about ``nu / u`` thick, and the stream function's ``v`` vanishes like ``y^2`` at the walls); held with
    a uniform weight, the network met it by flattening ``u`` across the wall layers instead.
    """
    from hodiff import pinn

    return [
        pinn.Condition(
            lambda d, x, n: -d["p"] + 2.0 * NU * d["u_x"],
            ("p", "u_x"),
            on="boundary",
            where="right",
            count=count,
            name="outlet_normal",
        ),
        pinn.Condition(
            lambda d, x, n: (4.0 * x["y"] * (1.0 - x["y"])) ** taper * (d["u_y"] + d["v_x"]),
            ("u_y", "v_x"),
            on="boundary",
            where="right",
            count=count,
            name="outlet_shear",
        ),
    ]


def inlet_condition(count: int):
    """``v = 0`` on the inlet ``x = 0`` (sampled on the face), for ``--soft-inlet``."""
    from hodiff import pinn

    return pinn.Condition(lambda d, x, n: d["v"], ("v",), on="boundary", where="left", count=count, name="inlet_v")


def inlet_band(count: int, band: float):
    """``count`` more interior points with ``x < band``, where the inflow's acceleration adjusts to the channel."""
    from hodiff import pinn

    return pinn.Refinement(lambda x: x["x"] < band, count)


def build(settings: ChannelSettings, end: float = END):
    """The problem on ``[0, 2] x [0, 1] x [0, end]`` (one window's hard conditions) and the network."""
    from hodiff import pinn

    domain = channel(end)
    one = windows(dataclasses.replace(settings, time_windows=1), end / settings.time_windows)
    soft_inlet = settings.stream_function and settings.soft_inlet
    conditions = outlet_conditions(settings.outlet_points, settings.outlet_taper) + (
        [inlet_condition(settings.inlet_points)] if soft_inlet else []
    )
    problem = pinn.Problem(
        domain,
        needs=("u", "v", "u_t", "v_t", "u_x", "u_y", "v_x", "v_y", "p_x", "p_y", "u_xx", "u_yy", "v_xx", "v_yy"),
        residual=residual,
        fields=FIELDS,
        residual_names=("momentum_x", "momentum_y", "continuity"),
        conditions=conditions,
        output_transform=one.output_transform(domain, 0.0, None),
        refinements=[inlet_band(settings.inlet_band_points, settings.inlet_band)] if settings.inlet_band_points else [],
        weights={
            "continuity": settings.continuity_weight,
            "outlet_normal": settings.outlet_weight,
            "outlet_shear": settings.outlet_weight,
            **({"inlet_v": settings.inlet_weight} if soft_inlet else {}),
        },
    )
    model = pinn.mlp(
        domain,
        outputs=2 if settings.stream_function else 3,
        width=settings.width,
        depth=settings.depth,
        dtype=settings.dtype,
        seed=settings.seed,
        architecture=settings.architecture,
    )
    if settings.stream_function:  # psi's envelope: psi and its normal derivative vanish on the walls, psi on the inlet
        thickness = {"x": settings.inlet_thickness} if settings.inlet_thickness else None
        walls = {"x": (1 if soft_inlet else 2, 0), "y": (2, 2)}  # order 1: psi = 0, u held, v free on the inlet
        model = pinn.StreamFunction(model, domain, ("x", "y"), walls=walls, thickness=thickness)
    return problem, model


def test_set():
    reference = ns2d_lt_reference()
    return reference["points"], {name: reference[name] for name in FIELDS}


def picture():
    axes, points = picture_points()
    reference = ns2d_lt_reference()
    return axes, points, {name: reference[f"picture_{name}"] for name in FIELDS}


def scores(trainer) -> dict:
    """The L2RE over (u, v) beside metrics.json's (u, v, p), and ``target_ratio``: the larger of each over its
    target (<= 1: both targets met)."""
    from pinn_examples.scattered import predict

    points, exact = SCATTERED.test_set()
    predicted = predict(trainer, points)
    errors = {fields: field_errors(predicted, exact, fields)["relative_l2_error"] for fields in TARGETS}
    return {
        "relative_l2_error_uv": errors[("u", "v")],
        "target_ratio": max(errors[fields] / target for fields, target in TARGETS.items()),
    }


def plot_over_time(output: str, path: str) -> float:
    """The trained run in ``output`` (``--evaluate``) against the reference at :data:`SNAPSHOTS`: one row per time
    with ``u``, ``v``, ``p`` of the PINN and their errors, written to ``path``; returns the largest error in u."""
    import matplotlib.pyplot as plt

    from pinn_examples.ns2d_lt_reference import snapshot_points

    axes, points = snapshot_points()
    shape = (len(SNAPSHOTS), len(axes["x"]), len(axes["y"]))
    exact = ns2d_lt_reference()
    evaluated = evaluate_run(SCATTERED, output, points)
    predicted = {name: evaluated[name].reshape(shape) for name in FIELDS}
    figure, grid = plt.subplots(len(SNAPSHOTS), 6, figsize=(24, 2.4 * len(SNAPSHOTS)), squeeze=False)
    extent = (0.0, LENGTH, 0.0, 1.0)
    for row, t in enumerate(SNAPSHOTS):
        for k, name in enumerate(FIELDS):
            error = predicted[name][row] - exact[f"snapshot_{name}"][row]
            for column, (values, title) in enumerate(((predicted[name][row], "PINN"), (error, "error"))):
                ax = grid[row, 2 * k + column]
                limit = max(np.abs(values).max(), 1e-12)
                shown = ax.imshow(values.T, origin="lower", extent=extent, cmap="RdBu_r", vmin=-limit, vmax=limit)
                figure.colorbar(shown, ax=ax, shrink=0.8)
                ax.set_title(f"{name} {title}, t = {t:g}")
    figure.tight_layout()
    figure.savefig(path, dpi=60)
    plt.close(figure)
    return float(np.abs(predicted["u"] - exact["snapshot_u"]).max())


EXAMPLE = Example(
    name="ns2d_lt",
    build=build,
    presets={
        "default": ChannelSettings(
            interior=2048,
            adam_steps=0,
            lbfgs_iterations=750,
            quasi_newton="bfgs",
            width=32,
            depth=4,
            dtype="float32",
            steps_per_call=100,
            time_windows=10,
        ),
        "fast": ChannelSettings(
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
            outlet_points=32,
            inlet_points=32,
            inlet_band_points=16,
            restart_nodes=8,
        ),
    },
    target={"default": 1.0},
    target_metric="target_ratio",
    extra_metrics=scores,
    windows=windows,
    wall_seconds={"default": 1486},  # on 2 CPU cores, as recorded in docs/benchmarks.md, PINNacle problems
)
SCATTERED = ScatteredExample(EXAMPLE, test_set, picture)


def main(argv=None) -> int:
    return run(SCATTERED, argv)


if __name__ == "__main__":  # python FILE runs it as python -m pinn_examples NAME does
    raise SystemExit(main())
