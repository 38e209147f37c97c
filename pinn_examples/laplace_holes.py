"""Laplace on a square with four holes: u_xx + u_yy = 0, u = 1 on the square, u = 0 on the circles.

The domain is ``Rectangle([-0.5, 0.5]^2) - (Disk | Disk | Disk | Disk)`` (radius 0.1, centres
(+-0.3, +-0.3)). Both conditions are hard (Sukumar & Srivastava 2022): with phi_c the domain's
approximate distance to the circles, ``domain.distance(x, where="hole")``, and
phi_s = 4 (1/4 - x^2)(1/4 - y^2), which vanishes on the square, the output is
u = phi_c / (phi_s + phi_c) + phi_s phi_c N(x, y): the first term (a transfinite interpolation) is
1 on the square and 0 on the circles, the second vanishes on both
(``pinn.hard_dirichlet(domain, {"hole": 0, "outer": 1}, distances={"outer": phi_s})``). (phi_s is a product rather than
the square's own distance function, ``domain.distance(x, where=square)``, because that one (an
R-function join of the four edges) has a cone at each corner, where its Laplacian grows like
1 / r; with it 2000 L-BFGS iterations reach 2.4e-2 (1.3e-3 without); a soft u = 1 on the square with u = phi_c N
falls into u = 0.) The loss is the residual alone. Reference: Shortley-Weller finite differences,
h = 1/400 (:func:`pinn_examples.fd_references.laplace_holes_fd`). Target 5e-3.
"""

import numpy as np

from pinn_examples.fd_references import HOLE_CENTRES, HOLE_RADIUS, cached, on_test_grid
from pinn_examples.runner import Example, Settings, run


def domain_and_parts():
    """The domain, its outer square and its holes (operands for ``distance(where=...)``)."""
    from hodiff import pinn

    square = pinn.Rectangle(("x", "y"), (-0.5, -0.5), (0.5, 0.5), name="outer")
    disks = [pinn.Disk(centre, HOLE_RADIUS, name="hole") for centre in HOLE_CENTRES]
    holes = disks[0] | disks[1] | disks[2] | disks[3]
    return square - holes, square, holes


def smooth_square(x):
    """``4 (1/4 - x^2)(1/4 - y^2)``: zero on the square, smooth at its corners (unlike its distance function)."""
    return 4.0 * (0.25 - x["x"] ** 2) * (0.25 - x["y"] ** 2)


def build(settings: Settings):
    from hodiff import pinn

    domain, _, _ = domain_and_parts()
    hard_conditions = pinn.hard_dirichlet(domain, {"hole": 0.0, "outer": 1.0}, distances={"outer": smooth_square})
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
    build=build,
    reference=reference,
    presets={
        "default": Settings(interior=2048, adam_steps=1000, lbfgs_iterations=4000, width=32, depth=4),
        "fast": Settings(
            xla=False, interior=256, adam_steps=200, lbfgs_iterations=50, width=16, depth=2, checkpoint_every=100
        ),
    },
    target={"default": 5e-3},
    wall_seconds={"default": 71},  # on 2 CPU cores, as recorded in docs/examples.md
)


def main(argv=None) -> int:
    return run(EXAMPLE, argv)


if __name__ == "__main__":  # python FILE runs it as python -m pinn_examples NAME does
    raise SystemExit(main())
