"""Kovasznay flow: steady Navier-Stokes at Re = 20 on [-0.5, 1] x [-0.5, 1.5], fields u, v, p, exact solution.

    u u_x + v u_y + p_x - (u_xx + u_yy) / Re = 0
    u v_x + v v_y + p_y - (v_xx + v_yy) / Re = 0
    u_x + v_y = 0

with lambda = Re/2 - sqrt(Re^2/4 + 4 pi^2), u = 1 - e^(lambda x) cos(2 pi y), v = lambda/(2 pi)
e^(lambda x) sin(2 pi y), p = (1 - e^(2 lambda x))/2 (Kovasznay 1948). u and v take the exact
values on the boundary exactly: each is the transfinite (Coons) interpolation of its boundary
values plus a bubble 16 xi (1 - xi) eta (1 - eta) times the network's output (xi, eta the
coordinates scaled to [0, 1]). The pressure is fixed by one point value at the outflow (it is
otherwise defined up to a constant). Target 1e-3 on (u, v).

References:
  Kovasznay (1948), "Laminar flow behind a two-dimensional grid", Proc. Cambridge Philos. Soc. 44.
"""

import numpy as np
import tensorflow as tf

from pinn_examples.runner import Example, Settings, run

RE = 20.0
LAMBDA = RE / 2.0 - np.sqrt(RE**2 / 4.0 + 4.0 * np.pi**2)
X0, X1, Y0, Y1 = -0.5, 1.0, -0.5, 1.5
PRESSURE_POINT = (X1, 0.5)  # where p is pinned to its exact value


def exact(x, y, fields=("u", "v", "p")):
    """``{field: values}`` of the Kovasznay flow at ``(x, y)``, for tensors or numpy arrays."""
    ops = tf if tf.is_tensor(x) else np
    formulas = {
        "u": lambda: 1.0 - ops.exp(LAMBDA * x) * ops.cos(2.0 * np.pi * y),
        "v": lambda: LAMBDA / (2.0 * np.pi) * ops.exp(LAMBDA * x) * ops.sin(2.0 * np.pi * y),
        "p": lambda: 0.5 * (1.0 - ops.exp(2.0 * LAMBDA * x)) + 0.0 * y,  # + 0 y: broadcast like u and v
    }
    return {field: formulas[field]() for field in fields}


def boundary_lift(x, y, field):
    """The transfinite (Coons) interpolation of ``field``'s boundary values: equal to them on all four sides."""
    xi, eta = (x - X0) / (X1 - X0), (y - Y0) / (Y1 - Y0)
    side = lambda a, b: exact(a, b, (field,))[field]
    corner = lambda a, b: float(side(np.float64(a), np.float64(b)))
    sides = (1 - xi) * side(X0 + 0 * x, y) + xi * side(X1 + 0 * x, y)
    sides += (1 - eta) * side(x, Y0 + 0 * y) + eta * side(x, Y1 + 0 * y)
    corners = (1 - xi) * ((1 - eta) * corner(X0, Y0) + eta * corner(X0, Y1))
    corners += xi * ((1 - eta) * corner(X1, Y0) + eta * corner(X1, Y1))
    return sides - corners


def hard_constraints(x, outputs):
    """u and v equal to their boundary values on the boundary; p as the network gives it."""
    xi, eta = (x["x"] - X0) / (X1 - X0), (x["y"] - Y0) / (Y1 - Y0)
    bubble = 16.0 * xi * (1.0 - xi) * eta * (1.0 - eta)
    u = boundary_lift(x["x"], x["y"], "u") + bubble * outputs[:, 0]
    v = boundary_lift(x["x"], x["y"], "v") + bubble * outputs[:, 1]
    return tf.stack([u, v, outputs[:, 2]], axis=1)


def residual(d, x, p):
    u, v = d["u"], d["v"]
    return {
        "momentum_x": u * d["u_x"] + v * d["u_y"] + d["p_x"] - (d["u_xx"] + d["u_yy"]) / RE,
        "momentum_y": u * d["v_x"] + v * d["v_y"] + d["p_y"] - (d["v_xx"] + d["v_yy"]) / RE,
        "continuity": d["u_x"] + d["v_y"],
    }


NEEDS = ("u", "v", "u_x", "u_y", "v_x", "v_y", "p_x", "p_y", "u_xx", "u_yy", "v_xx", "v_yy")


def build(settings: Settings):
    from hodiff import pinn

    domain = pinn.Rectangle(("x", "y"), (X0, Y0), (X1, Y1))
    point = np.array([PRESSURE_POINT])
    pressure = pinn.Data(point, exact(point[:, 0], point[:, 1])["p"], field="p", name="pressure")
    problem = pinn.Problem(
        domain,
        residual=residual,
        needs=NEEDS,
        fields=("u", "v", "p"),
        conditions=[pressure],
        output_transform=hard_constraints,
        residual_names=("momentum_x", "momentum_y", "continuity"),
    )
    model = pinn.mlp(
        domain, outputs=3, width=settings.width, depth=settings.depth, dtype=settings.dtype, seed=settings.seed
    )
    return problem, model


def reference():
    x, y = np.linspace(X0, X1, 76), np.linspace(Y0, Y1, 101)
    return {"x": x, "y": y}, exact(x[:, None], y[None, :])


EXAMPLE = Example(
    name="kovasznay",
    build=build,
    reference=reference,
    presets={
        "default": Settings(interior=2048, adam_steps=1000, lbfgs_iterations=1500, width=40, depth=4, dtype="float64"),
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
    target={"default": 1e-3},
    error_fields=("u", "v"),
    wall_seconds={"default": 491},  # on 2 CPU cores, as recorded in docs/examples.md
)


def main(argv=None) -> int:
    return run(EXAMPLE, argv)


if __name__ == "__main__":  # python FILE runs it as python -m pinn_examples NAME does
    raise SystemExit(main())
