"""Poisson on an L-shape: -(u_xx + u_yy) = 1, u = 0 on the boundary of the L (hard condition).

The domain is ``Polygon([(0, 0), (1, 0), (1, -1), (-1, -1), (-1, 1), (0, 1)])``; the output is
u = phi N(x, y) with phi the polygon's approximate distance function (Sukumar & Srivastava 2022),
zero on every edge, so the loss is the residual alone. The re-entrant corner at the origin makes
u ~ r^(2/3) sin(2 theta / 3) there. Reference: 5-point finite differences, h = 1/200
(:func:`pinn_examples.fd_references.poisson_lshape_fd`, error ~3e-4). Target 1e-2.
"""

import tensorflow as tf

from pinn_examples._runner import Example, Settings, run
from pinn_examples.fd_references import cached, on_test_grid

VERTICES = ((0.0, 0.0), (1.0, 0.0), (1.0, -1.0), (-1.0, -1.0), (-1.0, 1.0), (0.0, 1.0))


def build(settings: Settings):
    from hodiff import pinn

    domain = pinn.Polygon(VERTICES)

    def hard_condition(x, u):
        return domain.distance(tf.stack([x["x"], x["y"]], axis=1))[:, None] * u

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
    description=__doc__.splitlines()[0],
    build=build,
    reference=reference,
    presets={
        "default": Settings(interior=2048, adam_steps=1000, lbfgs_iterations=2000, width=32, depth=4),
        "fast": Settings(interior=256, adam_steps=200, lbfgs_iterations=50, width=16, depth=2, checkpoint_every=100),
    },
    target={"default": 1e-2},
)


def main(argv=None) -> int:
    return run(EXAMPLE, argv)
