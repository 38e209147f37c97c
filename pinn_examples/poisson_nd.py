"""PINNacle PNd: Poisson in the 5-D unit cube, Delta u + (pi^2/4) sum_i sin(pi x_i / 2) = 0, exact solution.

The boundary values are those of the exact solution, ``u = sum_i sin(pi x_i / 2)``, given as a
soft Dirichlet condition (a loss term of weight 100 at 2,000 points on the ten faces) as in PINNacle:
an exact lift of these boundary values (the transfinite interpolation of the faces) would
already be the solution, since it is a sum of functions of one coordinate each, which would
make the problem trivial. The error is PINNacle's L2RE at 20,000 fixed uniform points of the
cube (:mod:`pinn_examples.scattered`); ``field.png`` shows the slice ``(x1, x2, 0.5, 0.5, 0.5)``.
Float64, Adam then L-BFGS. PINNacle's best L2RE is 4.7e-4; target 5e-5.

References:
  Hao et al. (2024), "PINNacle: A Comprehensive Benchmark of Physics-Informed Neural Networks
  for Solving PDEs", NeurIPS Datasets and Benchmarks (arXiv:2306.08827), problem PNd.
"""

import numpy as np
import tensorflow as tf

from pinn_examples.runner import Example, Settings
from pinn_examples.scattered import ScatteredExample, run

DIM = 5
COORDS = tuple(f"x{i + 1}" for i in range(DIM))
TEST_POINTS, TEST_SEED = 20_000, 20_240_521
SLICE = 41
BOUNDARY = 2000  # points on the faces
BOUNDARY_WEIGHT = 100.0  # the boundary values bound the error inside (maximum principle): fit them first


def exact(points):
    """``u = sum_i sin(pi x_i / 2)`` at ``(N, 5)`` numpy points, shape ``(N,)``."""
    return np.sum(np.sin(0.5 * np.pi * np.asarray(points)), axis=1)


def source(x):
    """``(pi^2 / 4) sum_i sin(pi x_i / 2)`` from the coordinate columns ``x``."""
    return (np.pi**2 / 4.0) * tf.add_n([tf.sin(0.5 * np.pi * x[name]) for name in COORDS])


def residual(d, x, p):
    return tf.add_n([d[("u", name, name)] for name in COORDS]) + source(x)


def build(settings: Settings):
    from hodiff import pinn

    domain = pinn.Hypercube((0.0,) * DIM, (1.0,) * DIM, COORDS)
    boundary = pinn.Dirichlet(lambda x: source(x) / (np.pi**2 / 4.0), count=BOUNDARY)  # u = sum_i sin(pi x_i / 2)
    problem = pinn.Problem(
        domain,
        needs=tuple(("u", name, name) for name in COORDS),
        residual=residual,
        conditions=[boundary],
        weights={"boundary": BOUNDARY_WEIGHT},
        partials_method="forward",  # the five second partials in one Taylor-mode pass
    )
    model = pinn.mlp(domain, width=settings.width, depth=settings.depth, dtype=settings.dtype, seed=settings.seed)
    return problem, model


def test_set():
    points = np.random.default_rng(TEST_SEED).uniform(size=(TEST_POINTS, DIM))
    return points, {"u": exact(points)}


def picture():
    axis = np.linspace(0.0, 1.0, SLICE)
    x1, x2 = (grid.ravel() for grid in np.meshgrid(axis, axis, indexing="ij"))
    points = np.full((x1.size, DIM), 0.5)
    points[:, 0], points[:, 1] = x1, x2
    return {"x1": axis, "x2": axis}, points, {"u": exact(points).reshape(SLICE, SLICE)}


EXAMPLE = Example(
    name="poisson_nd",
    build=build,
    presets={
        "default": Settings(interior=2000, adam_steps=1000, lbfgs_iterations=20000, width=32, depth=4, dtype="float64"),
        "fast": Settings(
            xla=False,
            interior=64,
            adam_steps=100,
            lbfgs_iterations=10,
            width=8,
            depth=2,
            dtype="float64",
            checkpoint_every=100,
        ),
    },
    target={"default": 5e-5},
    wall_seconds={"default": 1130},  # on 2 CPU cores, as recorded in docs/benchmarks.md, PINNacle problems
)
SCATTERED = ScatteredExample(EXAMPLE, test_set, picture)


def main(argv=None) -> int:
    return run(SCATTERED, argv)


if __name__ == "__main__":  # python FILE runs it as python -m pinn_examples NAME does
    raise SystemExit(main())
