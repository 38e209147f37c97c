"""NS2d-CG (PINNacle): steady Navier-Stokes in a channel that widens at x = 2, nu = 0.01; fields u, v, p.

``u u_x + v u_y + p_x = nu (u_xx + u_yy)``, ``u v_x + v v_y + p_y = nu (v_xx + v_yy)``,
``u_x + v_y = 0`` on ``[0, 4] x [0, 2]`` minus ``[0, 2] x [1, 2]``: the inflow ``u = 4y(1 - y)``,
``v = 0`` enters at ``x = 0``, ``y`` in [0, 1]; the channel widens to [0, 2] at ``x = 2``; the
other walls are at rest. The outlet ``x = 4`` is free of stress, ``-p + 2 nu u_x = 0`` and
``u_y + v_x = 0`` (PINNacle writes ``p = 0`` there, which alone leaves the outflow velocity
undetermined; the stress-free outlet is the usual meaning of a pressure outlet, and with it p is
within ``2 nu u_x`` of 0 there). Re = 100 on the inlet's height and peak velocity: the flow
separates at the step's corner (2, 1) and the recirculation behind it reaches the outlet.

The walls and the inlet are hard constraints: ``u = 4y(1 - y) relu(1 - x/2)^3 + D N_u``,
``v = D N_v`` with ``D = tanh(2x) y (2 - y) s(x, y)`` and ``s = a + b + sqrt(a^2 + b^2)``,
``a = 1 - y``, ``b = x - 2``, the R-function union of the half-planes ``y < 1`` and ``x > 2``: zero
on both walls of the step and positive in the channel. Only products and elementwise functions.
The two outlet conditions are loss terms. Reference: the staggered finite-volume solution by Newton
(:func:`pinn_examples.cavity_reference.solve_channel`), 128 cells per unit length, its own error
~1e-3 on (u, v) (refinement tests; the re-entrant corner limits it to first order). The error is
PINNacle's L2RE over (u, v, p) together (target 2e-2), with (u, v) in metrics.json as well. The step's corner
is singular (velocity ~ ``r^0.54``, pressure ~ ``r^-0.46``) but not where the error is: that sits downstream,
where the jet bent up too early under L-BFGS, which had not converged after 16,000 iterations (docs/pinnacle.md).
The default's phase after Adam is self-scaled BFGS with a dense inverse Hessian (``--quasi-newton bfgs``): 5,000
iterations on 6,144 points reach 8.8e-3 on (u, v, p) and 6.8e-3 on (u, v) in 13 minutes on 2 cores.
"""

import numpy as np

from pinn_examples.cavity_reference import NU, expanding_channel
from pinn_examples.runner import Example, Settings, grouped_targets, run

VERTICES = ((0.0, 0.0), (4.0, 0.0), (4.0, 2.0), (2.0, 2.0), (2.0, 1.0), (0.0, 1.0))
OUTLET_POINTS = 256


def residual(d, x, p):
    u, v = d["u"], d["v"]
    return {
        "momentum_x": u * d["u_x"] + v * d["u_y"] + d["p_x"] - NU * (d["u_xx"] + d["u_yy"]),
        "momentum_y": u * d["v_x"] + v * d["v_y"] + d["p_y"] - NU * (d["v_xx"] + d["v_yy"]),
        "continuity": d["u_x"] + d["v_y"],
    }


def walls(x, outputs):
    """u, v exact on the inlet and the walls; p as the network gives it: ``[lift, 0, 0] + [D, D, 1] * outputs``."""
    import tensorflow as tf

    s, t = x["x"][:, None], x["y"][:, None]
    a, b = 1.0 - t, s - 2.0
    step = a + b + tf.sqrt(a * a + b * b + 1e-12)  # R-union of y < 1 and x > 2: zero on the step's walls
    distance = tf.tanh(2.0 * s) * t * (2.0 - t) * step
    lift = 4.0 * t * (1.0 - t) * tf.nn.relu(1.0 - 0.5 * s) ** 3
    dtype = outputs.dtype.as_numpy_dtype
    first, velocity, pressure = (np.array([row], dtype) for row in ([1, 0, 0], [1, 1, 0], [0, 0, 1]))
    return lift * first + (distance * velocity + pressure) * outputs


def outlet_conditions():
    """The stress-free outlet ``x = 4``: ``-p + 2 nu u_x = 0`` and ``u_y + v_x = 0`` at evenly spaced points."""
    from hodiff import pinn

    y = (np.arange(OUTLET_POINTS) + 0.5) * 2.0 / OUTLET_POINTS
    points = np.stack([np.full(OUTLET_POINTS, 4.0), y], axis=1)
    return [
        pinn.Condition(lambda d, x, n: -d["p"] + 2.0 * NU * d["u_x"], ("p", "u_x"), on=points, name="outlet_normal"),
        pinn.Condition(lambda d, x, n: d["u_y"] + d["v_x"], ("u_y", "v_x"), on=points, name="outlet_shear"),
    ]


def build(settings: Settings):
    from hodiff import pinn

    domain = pinn.Polygon(VERTICES)
    problem = pinn.Problem(
        domain,
        needs=("u", "v", "u_x", "u_y", "v_x", "v_y", "p_x", "p_y", "u_xx", "u_yy", "v_xx", "v_yy"),
        residual=residual,
        fields=("u", "v", "p"),
        residual_names=("momentum_x", "momentum_y", "continuity"),
        conditions=outlet_conditions(),
        output_transform=walls,
    )
    return problem, pinn.mlp(
        domain, outputs=3, width=settings.width, depth=settings.depth, dtype=settings.dtype, seed=settings.seed
    )


def reference(cells: int = 128, cache: str | None = "~/.cache/hodiff"):
    """The test grid (spacing 0.02, walls and the step's corner included) and the reference on it (NaN outside)."""
    x, y = np.linspace(0.0, 4.0, 201), np.linspace(0.0, 2.0, 101)
    return {"x": x, "y": y}, expanding_channel(x, y, cells=cells, cache=cache)


TARGETS = {("u", "v", "p"): 2e-2, ("u", "v"): 1e-2}  # PINNacle's L2RE over these fields together


EXAMPLE = Example(
    name="ns2d_cg",
    build=build,
    reference=reference,
    presets={
        "default": Settings(
            interior=6144,
            adam_steps=1000,
            lbfgs_iterations=5000,
            quasi_newton="bfgs",
            width=40,
            depth=4,
            dtype="float64",
        ),
        "fast": Settings(
            xla=False, interior=256, adam_steps=100, lbfgs_iterations=30, width=16, depth=2, checkpoint_every=100
        ),
    },
    target={"default": 1.0},
    target_metric="target_ratio",
    extra_metrics=lambda trainer: grouped_targets(EXAMPLE, trainer, TARGETS),
    wall_seconds={"default": 782},  # on 2 CPU cores, as recorded in docs/benchmarks.md, PINNacle problems
)


def main(argv=None) -> int:
    return run(EXAMPLE, argv)


if __name__ == "__main__":  # python FILE runs it as python -m pinn_examples NAME does
    raise SystemExit(main())
