"""Viscous Burgers: u_t + u u_x = (0.01/pi) u_xx on [-1, 1] x [0, 1], u(x, 0) = -sin(pi x), u(+-1, t) = 0.

The reference is the Cole-Hopf solution (Gauss-Hermite quadrature in log-sum-exp form) on
256 x-points by 100 t-points in [0, 0.99]. Presets: ``default`` (``make demo``: float32, 4096
Sobol points, 2000 Adam steps then L-BFGS; target 5e-3 in under 5 minutes on 2 cores),
``paper`` (float64, more points and L-BFGS iterations, residual-based resampling; target
5e-4; Raissi et al. 2019 report 6.7e-4) and ``fast`` (a smoke run for the tests).
"""

import numpy as np
import tensorflow as tf

from pinn_examples.references import burgers_cole_hopf
from pinn_examples.runner import Example, Settings, run

NU = 0.01 / np.pi


def problem(conditions_count=(100, 200)):
    from hodiff import pinn

    domain = pinn.Interval("x", -1.0, 1.0) * pinn.TimeDomain("t", 0.0, 1.0)
    return pinn.Problem(
        domain,
        needs=("u", "u_t", "u_x", "u_xx"),
        residual=lambda d, x, p: d["u_t"] + d["u"] * d["u_x"] - NU * d["u_xx"],
        conditions=[
            pinn.Dirichlet(0.0, count=conditions_count[0]),
            pinn.Initial(lambda x: -tf.sin(np.pi * x["x"]), count=conditions_count[1]),
        ],
    )


def build(settings: Settings):
    from hodiff import pinn

    burgers = problem()
    return burgers, pinn.mlp(
        burgers.domain, width=settings.width, depth=settings.depth, dtype=settings.dtype, seed=settings.seed
    )


def reference():
    x, t = np.linspace(-1.0, 1.0, 256), np.linspace(0.0, 0.99, 100)
    return {"x": x, "t": t}, burgers_cole_hopf(x, t, NU)


EXAMPLE = Example(
    name="burgers",
    build=build,
    reference=reference,
    presets={
        "default": Settings(interior=4096, adam_steps=2000, lbfgs_iterations=6000),
        "paper": Settings(interior=8192, adam_steps=5000, lbfgs_iterations=20000, dtype="float64", resample_every=2500),
        "fast": Settings(
            xla=False, interior=512, adam_steps=300, lbfgs_iterations=100, depth=4, log_every=100, checkpoint_every=100
        ),
    },
    target={"default": 5e-3, "paper": 5e-4},
    wall_seconds={"default": 122, "paper": 2096},  # on 2 CPU cores, as recorded in docs/examples.md
)


def main(argv=None) -> int:
    return run(EXAMPLE, argv)


if __name__ == "__main__":  # python FILE runs it as python -m pinn_examples NAME does
    raise SystemExit(main())
