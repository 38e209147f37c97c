"""Helmholtz: u_xx + u_yy + u = q on [-1, 1]^2, u = 0 on the boundary, exact u = sin(pi x) sin(4 pi y).

The boundary condition is a soft loss term, whose gradients are much smaller than the
residual's: learning-rate annealing of the loss weights (Wang, Teng & Perdikaris 2021) is on in
the default preset; ``--no-adaptive-weights`` shows the run without it. Target 1e-2.
"""

import numpy as np
import tensorflow as tf

from pinn_examples.runner import Example, Settings, run

A1, A2 = 1.0, 4.0


def exact(x, y, sin=np.sin):
    return sin(A1 * np.pi * x) * sin(A2 * np.pi * y)


def build(settings: Settings):
    from hodiff import pinn

    domain = pinn.Rectangle(("x", "y"), (-1.0, -1.0), (1.0, 1.0))
    source = lambda x: (1.0 - (A1**2 + A2**2) * np.pi**2) * exact(x["x"], x["y"], tf.sin)
    problem = pinn.Problem(
        domain,
        needs=("u", "u_xx", "u_yy"),
        residual=lambda d, x, p: d["u_xx"] + d["u_yy"] + d["u"] - source(x),
        conditions=[pinn.Dirichlet(0.0, count=512)],
    )
    return problem, pinn.mlp(
        domain, width=settings.width, depth=settings.depth, dtype=settings.dtype, seed=settings.seed
    )


def reference():
    x, y = np.linspace(-1.0, 1.0, 101), np.linspace(-1.0, 1.0, 101)
    return {"x": x, "y": y}, exact(x[:, None], y[None, :])


EXAMPLE = Example(
    name="helmholtz",
    build=build,
    reference=reference,
    presets={
        "default": Settings(
            interior=4096, adam_steps=3000, lbfgs_iterations=2000, width=50, depth=4, adaptive_weights=True
        ),
        "fast": Settings(
            xla=False,
            interior=1024,
            adam_steps=500,
            lbfgs_iterations=300,
            width=50,
            depth=4,
            adaptive_weights=True,
            steps_per_call=50,
            log_every=50,
            checkpoint_every=50,
        ),
    },
    target={"default": 1e-2},
    wall_seconds={"default": 138},  # on 2 CPU cores, as recorded in docs/examples.md
)


def main(argv=None) -> int:
    return run(EXAMPLE, argv)


if __name__ == "__main__":  # python FILE runs it as python -m pinn_examples NAME does
    raise SystemExit(main())
