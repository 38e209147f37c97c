"""Wave equation u_tt = 4 u_xx on [0, 1]^2, u(x, 0) = sin(pi x) + 0.5 sin(4 pi x), u_t(x, 0) = 0, u(0, t) = u(1, t) = 0.

Exact solution u = sin(pi x) cos(2 pi t) + 0.5 sin(4 pi x) cos(8 pi t). All three conditions
are built into the network's output (hard constraints),

    u = u0(x) + SCALE 4 x (1 - x) tanh(RISE t)^2 N(x, t),

so u = u0 at t = 0, u_t = 0 there (tanh^2 starts as RISE^2 t^2) and u = 0 at x = 0, 1 (u0
vanishes there); the loss is the residual alone. tanh^2 rather than t^2 keeps N of order one
at late times (t^2 would ask N to grow like 1/t^2 near t = 0 to undo it). Random Fourier
features let the network hold the four time periods of the fast mode. Target 1e-2.
"""

import numpy as np
import tensorflow as tf

from pinn_examples.runner import Example, Settings, run

SPEED = 2.0  # u_tt = SPEED^2 u_xx
RISE, SCALE = 4.0, 5.0  # the time factor tanh(RISE t)^2 and the output scale of the network's correction
FOURIER_FEATURES, FOURIER_SCALE = 32, 1.0


def initial(x):
    """u(x, 0) = sin(pi x) + 0.5 sin(4 pi x), for tensors or arrays."""
    sin = tf.sin if tf.is_tensor(x) else np.sin
    return sin(np.pi * x) + 0.5 * sin(4.0 * np.pi * x)


def exact(x, t):
    """u(x, t) = sin(pi x) cos(2 pi t) + 0.5 sin(4 pi x) cos(8 pi t) (numpy, broadcasting)."""
    return np.sin(np.pi * x) * np.cos(SPEED * np.pi * t) + 0.5 * np.sin(4.0 * np.pi * x) * np.cos(
        4.0 * SPEED * np.pi * t
    )


def hard_constraints(x, outputs):
    """u = u0(x) + SCALE 4 x (1 - x) tanh(RISE t)^2 N: the initial value, u_t(x, 0) = 0 and u = 0 at x = 0, 1."""
    factor = SCALE * 4.0 * x["x"] * (1.0 - x["x"]) * tf.tanh(RISE * x["t"]) ** 2
    return (initial(x["x"]) + factor * outputs[:, 0])[:, None]


def residual(d, x, p):
    return d["u_tt"] - SPEED**2 * d["u_xx"]


def build(settings: Settings):
    from hodiff import pinn

    domain = pinn.Interval("x", 0.0, 1.0) * pinn.TimeDomain("t", 0.0, 1.0)
    problem = pinn.Problem(
        domain,
        needs=("u_tt", "u_xx"),
        residual=residual,
        output_transform=hard_constraints,
        residual_names=("residual",),
    )
    model = pinn.mlp(
        domain,
        width=settings.width,
        depth=settings.depth,
        fourier_features=FOURIER_FEATURES,
        fourier_scale=FOURIER_SCALE,
        dtype=settings.dtype,
        seed=settings.seed,
    )
    return problem, model


def reference():
    x, t = np.linspace(0.0, 1.0, 101), np.linspace(0.0, 1.0, 101)
    return {"x": x, "t": t}, exact(x[:, None], t[None, :])


EXAMPLE = Example(
    name="wave",
    build=build,
    reference=reference,
    presets={
        "default": Settings(interior=2048, adam_steps=1000, lbfgs_iterations=3000, width=40, depth=3, dtype="float64"),
        "fast": Settings(
            xla=False,
            interior=256,
            adam_steps=200,
            lbfgs_iterations=50,
            width=16,
            depth=2,
            dtype="float64",
            checkpoint_every=100,
        ),
    },
    target={"default": 1e-2},
    wall_seconds={"default": 207},  # on 2 CPU cores, as recorded in docs/benchmarks.md, PINNacle problems
)


def main(argv=None) -> int:
    return run(EXAMPLE, argv)


if __name__ == "__main__":  # python FILE runs it as python -m pinn_examples NAME does
    raise SystemExit(main())
