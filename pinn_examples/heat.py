"""Heat equation: u_t = 0.4 u_xx on [0, 1] x [0, 1], u(x, 0) = sin(pi x), u(0, t) = u(1, t) = 0.

Exact solution exp(-0.4 pi^2 t) sin(pi x); the tests also check it against a method-of-lines
``solve_ivp`` solution. Boundary and initial conditions are soft (loss terms). Target 1e-3.
"""

import numpy as np
import tensorflow as tf

from pinn_examples.references import heat_exact
from pinn_examples.runner import Example, Settings, run

ALPHA = 0.4


def build(settings: Settings):
    from hodiff import pinn

    domain = pinn.Interval("x", 0.0, 1.0) * pinn.TimeDomain("t", 0.0, 1.0)
    problem = pinn.Problem(
        domain,
        needs=("u_t", "u_xx"),
        residual=lambda d, x, p: d["u_t"] - ALPHA * d["u_xx"],
        conditions=[pinn.Dirichlet(0.0, count=128), pinn.Initial(lambda x: tf.sin(np.pi * x["x"]), count=128)],
    )
    return problem, pinn.mlp(
        domain, width=settings.width, depth=settings.depth, dtype=settings.dtype, seed=settings.seed
    )


def reference():
    x, t = np.linspace(0.0, 1.0, 101), np.linspace(0.0, 1.0, 101)
    return {"x": x, "t": t}, heat_exact(x, t, ALPHA)


EXAMPLE = Example(
    name="heat",
    build=build,
    reference=reference,
    presets={
        "default": Settings(interior=2048, adam_steps=1000, lbfgs_iterations=2000, width=20, depth=4),
        "fast": Settings(xla=False, interior=256, adam_steps=200, lbfgs_iterations=50, depth=2, checkpoint_every=100),
    },
    target={"default": 1e-3},
    wall_seconds={"default": 16},  # on 2 CPU cores, as recorded in docs/examples.md
)


def main(argv=None) -> int:
    return run(EXAMPLE, argv)


if __name__ == "__main__":  # python FILE runs it as python -m pinn_examples NAME does
    raise SystemExit(main())
