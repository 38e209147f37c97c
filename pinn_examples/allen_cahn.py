"""Allen-Cahn: u_t = 1e-4 u_xx - 5 u^3 + 5 u, x in [-1, 1] periodic, u(x, 0) = x^2 cos(pi x), t in [0, 1].

The initial condition is hard (u = x^2 cos(pi x) + t N(x, t)); periodicity of u and u_x is a
soft term. Reference: Fourier pseudo-spectral ETDRK4 (Kassam & Trefethen 2005) on 512 modes,
checked for self-convergence in the tests. Target 1e-2 (long GPU runs with causal training
reach 5e-5).
"""

import numpy as np
import tensorflow as tf

from pinn_examples._runner import Example, Settings, run
from pinn_examples.references import allen_cahn_etdrk4


def build(settings: Settings):
    from hodiff import pinn

    domain = pinn.Interval("x", -1.0, 1.0) * pinn.TimeDomain("t", 0.0, 1.0)
    problem = pinn.Problem(
        domain,
        needs=("u", "u_t", "u_xx"),
        residual=lambda d, x, p: d["u_t"] - 1e-4 * d["u_xx"] + 5.0 * d["u"] ** 3 - 5.0 * d["u"],
        conditions=[pinn.Periodic("x", count=256, derivatives=1)],
        output_transform=lambda x, u: (x["x"] ** 2 * tf.cos(np.pi * x["x"]))[:, None] + x["t"][:, None] * u,
        weights={"periodic": 10.0},
    )
    return problem, pinn.mlp(domain, width=settings.width, depth=settings.depth, dtype=settings.dtype, seed=settings.seed)


def reference():
    x, t = np.linspace(-1.0, 1.0, 256), np.linspace(0.0, 1.0, 101)
    return {"x": x, "t": t}, allen_cahn_etdrk4(x, t)


EXAMPLE = Example(
    name="allen_cahn",
    description=__doc__.splitlines()[0],
    build=build,
    reference=reference,
    presets={
        "default": Settings(interior=8192, adam_steps=5000, lbfgs_iterations=8000, width=64, depth=4, resample_every=1000),
        "fast": Settings(interior=512, adam_steps=200, lbfgs_iterations=400, width=32, depth=2, checkpoint_every=100),
    },
    target=1e-2,
)


def main(argv=None) -> int:
    return run(EXAMPLE, argv)
