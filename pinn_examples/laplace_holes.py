"""Laplace on a square with four holes: u_xx + u_yy = 0, u = 1 on the square, u = 0 on the circles.

The domain is ``Rectangle([-0.5, 0.5]^2) - (Disk | Disk | Disk | Disk)`` (radius 0.1, centres
(+-0.3, +-0.3)). Both conditions are hard, through the domain's approximate distance functions
(Sukumar & Srivastava 2022): u = S(phi_c / 0.14) + phi N(x, y), phi the distance to the whole
boundary, phi_c the distance to the circles and S the C2 smoothstep (0 at 0, 1 from 1 on). phi_c
is at least 0.149 on the square, so the first term is exactly 1 there and 0 on the circles; the
second vanishes on both. (The transfinite lift phi_c / (phi_s + phi_c) also satisfies both, but
its Laplacian reaches 1e3 at the square's corners, which the network must cancel: it trains far
worse.) The loss is the residual alone. Reference: Shortley-Weller finite differences, h = 1/400
(:func:`pinn_examples.fd_references.laplace_holes_fd`). Target 5e-3.
"""

import numpy as np
import tensorflow as tf

from pinn_examples._runner import Example, Settings, run
from pinn_examples.fd_references import HOLE_CENTRES, HOLE_RADIUS, cached, on_test_grid


def domain_and_parts():
    """The domain, its outer square and its holes (operands for ``distance(where=...)``)."""
    from hodiff import pinn

    square = pinn.Rectangle(("x", "y"), (-0.5, -0.5), (0.5, 0.5), name="outer")
    disks = [pinn.Disk(centre, HOLE_RADIUS, name="hole") for centre in HOLE_CENTRES]
    holes = disks[0] | disks[1] | disks[2] | disks[3]
    return square - holes, square, holes


LIFT_WIDTH = 0.14  # below the circles' distance function on the square (>= 0.149)


def smoothstep(t):
    """The C2 step 6 t^5 - 15 t^4 + 10 t^3 on [0, 1], 0 below and 1 above."""
    t = tf.clip_by_value(t, 0.0, 1.0)
    return t**3 * (10.0 - 15.0 * t + 6.0 * t**2)


def build(settings: Settings):
    from hodiff import pinn

    domain, _, holes = domain_and_parts()

    def hard_conditions(x, u):
        points = tf.stack([x["x"], x["y"]], axis=1)
        lift = smoothstep(domain.distance(points, where=holes) / LIFT_WIDTH)  # 1 on the square, 0 on the circles
        return lift[:, None] + domain.distance(points)[:, None] * u

    problem = pinn.Problem(
        domain,
        needs=("u_xx", "u_yy"),
        residual=lambda d, x, p: d["u_xx"] + d["u_yy"],
        output_transform=hard_conditions,
    )
    return problem, pinn.mlp(
        domain, width=settings.width, depth=settings.depth, dtype=settings.dtype, seed=settings.seed
    )


def reference():
    domain, _, _ = domain_and_parts()
    x, y, u = on_test_grid(*cached("holes", 400), points=101)
    points = np.stack([g.ravel() for g in np.meshgrid(x, y, indexing="ij")], axis=1)
    u = np.where(domain.contains(points).reshape(u.shape), u, np.nan)  # NaN in the holes
    return {"x": x, "y": y}, u


EXAMPLE = Example(
    name="laplace_holes",
    description=__doc__.splitlines()[0],
    build=build,
    reference=reference,
    presets={
        "default": Settings(interior=2048, adam_steps=1000, lbfgs_iterations=2000, width=32, depth=4),
        "fast": Settings(interior=256, adam_steps=200, lbfgs_iterations=50, width=16, depth=2, checkpoint_every=100),
    },
    target={"default": 5e-3},
)


def main(argv=None) -> int:
    return run(EXAMPLE, argv)
