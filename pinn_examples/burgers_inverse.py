"""Inverse Burgers: recover the viscosity nu from 2000 noisy samples of the solution.

The samples are 2000 random points of the Cole-Hopf reference grid with 1% Gaussian noise
(relative to the solution's standard deviation). nu is learned as exp(log_nu) from
log_nu = log(0.05) (5 times too large), together with the network; no boundary or initial
condition is used (Raissi, Perdikaris & Karniadakis 2019, Section 4.1.1). Target: nu within 1%
of 0.01/pi.
"""

import numpy as np
import tensorflow as tf

from pinn_examples import burgers
from pinn_examples.runner import Example, Settings, run

SAMPLES, NOISE = 2000, 0.01


def observations(seed: int):
    axes, values = burgers.reference()
    rng = np.random.default_rng(seed)
    mesh = np.meshgrid(axes["x"], axes["t"], indexing="ij")
    chosen = rng.choice(values.size, size=SAMPLES, replace=False)
    points = np.stack([m.ravel()[chosen] for m in mesh], axis=1)
    noisy = values.ravel()[chosen] + NOISE * np.std(values) * rng.normal(size=SAMPLES)
    return points, noisy


def build(settings: Settings):
    from hodiff import pinn

    domain = pinn.Interval("x", -1.0, 1.0) * pinn.TimeDomain("t", 0.0, 1.0)
    points, values = observations(settings.seed)
    problem = pinn.Problem(
        domain,
        needs=("u", "u_t", "u_x", "u_xx"),
        residual=lambda d, x, p: d["u_t"] + d["u"] * d["u_x"] - tf.exp(p["log_nu"]) * d["u_xx"],
        conditions=[pinn.Data(points, values)],
        parameters={"log_nu": np.log(0.05)},
    )
    return problem, pinn.mlp(
        domain, width=settings.width, depth=settings.depth, dtype=settings.dtype, seed=settings.seed
    )


def nu_metrics(trainer):
    nu = float(np.exp(trainer.parameter_values()["log_nu"]))
    return {"nu": nu, "nu_true": burgers.NU, "nu_relative_error": abs(nu - burgers.NU) / burgers.NU}


EXAMPLE = Example(
    name="burgers_inverse",
    build=build,
    reference=burgers.reference,
    presets={
        "default": Settings(interior=4096, adam_steps=2000, lbfgs_iterations=6000),
        "fast": Settings(xla=False, interior=256, adam_steps=200, lbfgs_iterations=50, depth=2, checkpoint_every=100),
    },
    target={"default": 1e-2},
    target_metric="nu_relative_error",
    extra_metrics=nu_metrics,
    wall_seconds={"default": 187},  # on 2 CPU cores, as recorded in docs/examples.md
)


def main(argv=None) -> int:
    return run(EXAMPLE, argv)


if __name__ == "__main__":  # python FILE runs it as python -m pinn_examples NAME does
    raise SystemExit(main())
