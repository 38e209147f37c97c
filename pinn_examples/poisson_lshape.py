"""Poisson on an L-shape: -(u_xx + u_yy) = 1, u = 0 on the boundary of the L (hard condition).

The domain is ``Polygon([(0, 0), (1, 0), (1, -1), (-1, -1), (-1, 1), (0, 1)])`` (sampling and
membership). The condition is hard: u = (1 - x^2)(1 - y^2) w(x, y) N(x, y) with
w = r^(2/3) sin(2 (theta - pi/2) / 3) (theta from 0 to 2 pi, w = 0 on both edges at the re-entrant
corner, positive inside), the corner's own singular harmonic: near the origin
u ~ r^(2/3) sin(2 (theta - pi/2) / 3) (Grisvard), so N stays smooth there, and the factor is smooth
at the five convex corners. The loss is the residual alone. (With the Polygon's approximate distance
function, ``domain.distance(x)``, as the factor, N would need r^(-1/3) at the re-entrant corner and the
distance has a cone at every vertex: 2000 L-BFGS iterations end at 3.5e-1, or 1.0e-2 with an r^(-1/3)
correction; 9.7e-4 with this factor.) Reference: 5-point finite differences, h = 1/200
(:func:`pinn_examples.fd_references.poisson_lshape_fd`, error ~3e-4). Target 1e-2.
"""

import numpy as np
import tensorflow as tf

from pinn_examples.fd_references import cached, on_test_grid
from pinn_examples.runner import Example, Settings, run

VERTICES = ((0.0, 0.0), (1.0, 0.0), (1.0, -1.0), (-1.0, -1.0), (-1.0, 1.0), (0.0, 1.0))


def build(settings: Settings):
    from hodiff import pinn

    domain = pinn.Polygon(VERTICES)

    def hard_condition(x, u):
        angle = tf.atan2(x["y"], x["x"])
        angle = tf.where(angle < np.pi / 4, angle + 2 * np.pi, angle) - np.pi / 2  # 0 .. 3 pi / 2 across the L
        corner = (x["x"] ** 2 + x["y"] ** 2 + 1e-12) ** (1.0 / 3.0) * tf.sin(2.0 * angle / 3.0)
        return ((1 - x["x"] ** 2) * (1 - x["y"] ** 2) * corner)[:, None] * u

    problem = pinn.Problem(
        domain,
        needs=("u_xx", "u_yy"),
        residual=lambda d, x, p: -(d["u_xx"] + d["u_yy"]) - 1.0,
        output_transform=hard_condition,
    )
    return problem, pinn.mlp(
        domain, width=settings.width, depth=settings.depth, dtype=settings.dtype, seed=settings.seed
    )


def reference():
    x, y, u = on_test_grid(*cached("lshape", 200), points=101)  # NaN in the missing quadrant
    return {"x": x, "y": y}, u


EXAMPLE = Example(
    name="poisson_lshape",
    build=build,
    reference=reference,
    presets={
        "default": Settings(interior=2048, adam_steps=1000, lbfgs_iterations=4000, width=32, depth=4),
        "fast": Settings(
            xla=False, interior=256, adam_steps=200, lbfgs_iterations=50, width=16, depth=2, checkpoint_every=100
        ),
    },
    target={"default": 1e-2},
    wall_seconds={"default": 133},  # on 2 CPU cores, as recorded in docs/examples.md
)


def main(argv=None) -> int:
    return run(EXAMPLE, argv)


if __name__ == "__main__":  # python FILE runs it as python -m pinn_examples NAME does
    raise SystemExit(main())
