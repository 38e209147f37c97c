"""PINNacle Poisson2d-CG: -(u_xx + u_yy) + 64 u = f on a square minus four disks, u = 0.2 / 1 on edges / circles.

The domain is ``Rectangle([-1, 1]^2) - (four disks)`` (:data:`~pinn_examples.fd_references.CG_DISKS`),
``f = 10 (17 + x^2 + y^2) sin(pi x) sin(4 pi y)`` (a Poisson-Boltzmann / screened Poisson
equation, k = 8). Both conditions are hard (Sukumar & Srivastava 2022): with phi_c the domain's
approximate distance to the circles, ``domain.distance(x, where="circle")``, and
phi_s = (1 - x^2)(1 - y^2), which vanishes on the square (a product rather than the square's own
distance function, whose corner cones spoil the Laplacian), the output is the transfinite lift
``(0.2 phi_c + phi_s) / (phi_s + phi_c)`` (0.2 on the square, 1 on the circles) plus
``phi_s phi_c N(x, y)``: ``pinn.hard_dirichlet(domain, {"circle": 1, "edges": 0.2}, distances={"edges": phi_s})``.
The loss is the residual alone; float64, Adam then L-BFGS. Reference:
Shortley-Weller finite differences, h = 1/400, own error about 4e-5
(:func:`pinn_examples.fd_references.poisson2d_cg_fd`); the error is PINNacle's L2RE on the
201 x 201 grid of the square (NaN in the disks). PINNacle's best L2RE is 1.4e-2; target 5e-3.

References:
  Hao et al. (2024), "PINNacle: A Comprehensive Benchmark of Physics-Informed Neural Networks
  for Solving PDEs", NeurIPS Datasets and Benchmarks (arXiv:2306.08827), problem Poisson2d-CG.
"""

import numpy as np
import tensorflow as tf

from pinn_examples.fd_references import CG_CIRCLES, CG_DISKS, CG_EDGES, CG_K2, cached, cg_source, on_test_grid
from pinn_examples.runner import Example, Settings, run

TEST_POINTS = 201  # per side: spacing 0.01


def domain_and_parts():
    """The domain, its outer square and its disks (operands for ``distance(where=...)``)."""
    from hodiff import pinn

    square = pinn.Rectangle(("x", "y"), (-1.0, -1.0), (1.0, 1.0), name="edges")
    disks = [pinn.Disk((cx, cy), radius, name="circle") for cx, cy, radius in CG_DISKS]
    holes = disks[0] | disks[1] | disks[2] | disks[3]
    return square - holes, square, holes


def smooth_square(x):
    """``(1 - x^2)(1 - y^2)``: zero on the square, and smooth at its corners (unlike its distance function)."""
    return (1.0 - x["x"] ** 2) * (1.0 - x["y"] ** 2)


def residual(d, x, p):
    return -(d["u_xx"] + d["u_yy"]) + CG_K2 * d["u"] - cg_source(x["x"], x["y"], tf.sin)


def build(settings: Settings):
    from hodiff import pinn

    domain, _, _ = domain_and_parts()
    hard_conditions = pinn.hard_dirichlet(
        domain, {"circle": CG_CIRCLES, "edges": CG_EDGES}, distances={"edges": smooth_square}
    )
    problem = pinn.Problem(domain, needs=("u", "u_xx", "u_yy"), residual=residual, output_transform=hard_conditions)
    model = pinn.mlp(domain, width=settings.width, depth=settings.depth, dtype=settings.dtype, seed=settings.seed)
    return problem, model


def reference():
    domain, _, _ = domain_and_parts()
    x, y, u = on_test_grid(*cached("cg2d", 400), points=TEST_POINTS)
    points = np.stack([g.ravel() for g in np.meshgrid(x, y, indexing="ij")], axis=1)
    u = np.where(domain.contains(points).reshape(u.shape), u, np.nan)  # NaN in the disks
    return {"x": x, "y": y}, u


EXAMPLE = Example(
    name="poisson2d_cg",
    build=build,
    reference=reference,
    presets={
        "default": Settings(interior=4096, adam_steps=1000, lbfgs_iterations=5000, width=32, depth=4, dtype="float64"),
        "fast": Settings(
            xla=False,
            interior=256,
            adam_steps=100,
            lbfgs_iterations=20,
            width=16,
            depth=2,
            dtype="float64",
            checkpoint_every=100,
        ),
    },
    target={"default": 5e-3},
    wall_seconds={"default": 397},  # on 2 CPU cores, as recorded in docs/benchmarks.md, PINNacle problems
)


def main(argv=None) -> int:
    return run(EXAMPLE, argv)


if __name__ == "__main__":  # python FILE runs it as python -m pinn_examples NAME does
    raise SystemExit(main())
