"""Lid-driven cavity: steady Navier-Stokes on [0, 1]^2, nu = 0.01, lid u = 4x(1 - x); fields u, v, p.

``u u_x + v u_y + p_x = nu (u_xx + u_yy)``, ``u v_x + v v_y + p_y = nu (v_xx + v_yy)``,
``u_x + v_y = 0``; the lid ``y = 1`` moves with ``u = 4x(1 - x)``, ``v = 0``; the other walls are
at rest; ``p(0, 0) = 0``. The walls are hard constraints: ``u = 4x(1 - x) y + x(1 - x) y (1 - y) N_u``
and ``v = x(1 - x) y (1 - y) N_v`` meet every wall condition exactly, so the only condition left
in the loss is the pressure gauge at the corner. The lid vanishes at the corners, so the flow has
no corner singularity in the velocity. Reference: a second-order finite-volume solution on a
staggered grid solved by Newton (:mod:`pinn_examples.cavity_reference`) on 192 x 192 cells, its
own error ~5e-4 (refinement tests). Targets (PINNacle's L2RE over the fields together): 1e-2 on
(u, v) and 2e-2 on (u, v, p), scored on a grid that adds cosine-spaced lines, dense near the walls
and corners, to a uniform one. The pressure is hard near the top corners, where the lid's
u_x = +-4 meets walls with v_y = 0 and continuity cannot hold exactly.
"""

import numpy as np

from pinn_examples._runner import Example, Settings, grouped_targets, run
from pinn_examples.cavity_reference import NU, lid_driven_cavity


def residual(d, x, p):
    u, v = d["u"], d["v"]
    return {
        "momentum_x": u * d["u_x"] + v * d["u_y"] + d["p_x"] - NU * (d["u_xx"] + d["u_yy"]),
        "momentum_y": u * d["v_x"] + v * d["v_y"] + d["p_y"] - NU * (d["v_xx"] + d["v_yy"]),
        "continuity": d["u_x"] + d["v_y"],
    }


def walls(x, outputs):
    """u, v exact on the four walls; p as the network gives it.

    Written with products only (no slicing or concatenation, which XLA cannot differentiate
    three times): ``[lift, 0, 0] + [bubble, bubble, 1] * outputs``.
    """
    s, t = x["x"][:, None], x["y"][:, None]
    bubble = s * (1.0 - s) * t * (1.0 - t)
    lift = 4.0 * s * (1.0 - s) * t
    dtype = outputs.dtype.as_numpy_dtype
    first, velocity, pressure = (np.array([row], dtype) for row in ([1, 0, 0], [1, 1, 0], [0, 0, 1]))
    return lift * first + (bubble * velocity + pressure) * outputs


def build(settings: Settings):
    from hodiff import pinn

    domain = pinn.Rectangle(("x", "y"), (0.0, 0.0), (1.0, 1.0))
    problem = pinn.Problem(
        domain,
        needs=("u", "v", "u_x", "u_y", "v_x", "v_y", "p_x", "p_y", "u_xx", "u_yy", "v_xx", "v_yy"),
        residual=residual,
        fields=("u", "v", "p"),
        residual_names=("momentum_x", "momentum_y", "continuity"),
        conditions=[pinn.Data(np.zeros((1, 2)), np.zeros(1), field="p", name="pressure_gauge")],
        output_transform=walls,
    )
    return problem, pinn.mlp(
        domain, outputs=3, width=settings.width, depth=settings.depth, dtype=settings.dtype, seed=settings.seed
    )


TARGETS = {("u", "v", "p"): 2e-2, ("u", "v"): 1e-2}


def scoring_axis(lines: int = 101) -> np.ndarray:
    """``lines`` uniform lines on [0, 1] and as many cosine-spaced ones, dense near the walls (spacing ~1e-4 there)."""
    cosine = 0.5 * (1.0 - np.cos(np.pi * np.arange(lines) / (lines - 1)))
    return np.unique(np.concatenate([np.linspace(0.0, 1.0, lines), cosine]))


def reference():
    x = y = scoring_axis()
    return {"x": x, "y": y}, lid_driven_cavity(x, y)


EXAMPLE = Example(
    name="lid_driven_cavity",
    build=build,
    reference=reference,
    presets={
        "default": Settings(interior=2048, adam_steps=2000, lbfgs_iterations=5000, width=40, depth=4, dtype="float64"),
        "fast": Settings(interior=256, adam_steps=200, lbfgs_iterations=50, width=16, depth=2, checkpoint_every=100),
    },
    target={"default": 1.0},
    target_metric="target_ratio",
    extra_metrics=lambda trainer: grouped_targets(EXAMPLE, trainer, TARGETS),
)


def main(argv=None) -> int:
    return run(EXAMPLE, argv)
