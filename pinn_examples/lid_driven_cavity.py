"""Lid-driven cavity: steady Navier-Stokes on [0, 1]^2, nu = 0.01, lid u = 4x(1 - x); fields u, v, p.

``u u_x + v u_y + p_x = nu (u_xx + u_yy)``, ``u v_x + v v_y + p_y = nu (v_xx + v_yy)``,
``u_x + v_y = 0``; the lid ``y = 1`` moves with ``u = 4x(1 - x)``, ``v = 0``; the other walls are
at rest; ``p(0, 0) = 0``. The walls are hard constraints (:func:`walls`), so the only condition
left in the loss is the pressure gauge at the corner. The lid vanishes at the corners, but not its
slope: at ``(0, 1)`` the lid's ``u_x = 4`` meets the side wall's ``v_y = 0``, so the velocity is not
``C^1`` there and the pressure has a ``ln r`` singularity (low at ``(0, 1)``, high at ``(1, 1)``).
The top corners' Stokes flow (:func:`corner_flow`) is lifted out of the fields, so the network
learns the smooth rest. Reference: a second-order finite-volume solution on a staggered grid
solved by Newton (:mod:`pinn_examples.cavity_reference`) on 192 x 192 cells, its own error ~5e-4
(refinement tests) away from the top corners. Targets (PINNacle's L2RE over the fields together):
1e-2 on (u, v) and 2e-2 on (u, v, p), scored on a grid that adds cosine-spaced lines, dense near
the walls and corners, to a uniform one.
"""

import numpy as np

from pinn_examples.cavity_reference import NU, lid_driven_cavity
from pinn_examples.runner import Example, Settings, grouped_targets, run


def residual(d, x, p):
    u, v = d["u"], d["v"]
    return {
        "momentum_x": u * d["u_x"] + v * d["u_y"] + d["p_x"] - NU * (d["u_xx"] + d["u_yy"]),
        "momentum_y": u * d["v_x"] + v * d["v_y"] + d["p_y"] - NU * (d["v_xx"] + d["v_yy"]),
        "continuity": d["u_x"] + d["v_y"],
    }


CELLS = 192  # the reference's cells per side
CUTOFF = 0.3  # radius of the corner lifts' cutoff exp(-(r / CUTOFF)^4)
CORE = 0.5 / CELLS  # the corner pressure's ln r is ln(r^2 + CORE^2) / 2: the reference's resolution (see the docs)


def corner_flow(xi, eta, slope, nu=NU, core=CORE):
    """Stokes flow in the right-angled corner ``xi, eta >= 0`` whose wall ``eta = 0`` slides with speed ``slope xi``.

    The wall ``xi = 0`` is at rest. With ``r, theta`` the polar coordinates (``theta = 0`` on the
    sliding wall), the stream function is ``psi = slope r^2 (pi/8 cos 2theta + 1/4 sin 2theta + theta/2
    - pi/8)``: both walls are streamlines and ``u_xi = psi_eta`` is ``slope xi`` on the sliding wall, 0
    on the other. ``r^2 cos 2theta``, ``r^2 sin 2theta`` and ``r^2`` alone cannot meet the four
    conditions; the ``theta r^2`` term that does carries a logarithmic pressure, ``p = 2 nu slope ln r``
    (its vorticity, ``-2 slope theta`` plus a constant, is the harmonic conjugate of ``p / nu``). Velocity:
    ``u_xi = slope (xi + eta (theta - pi/2))``, ``u_eta = -slope xi theta``. The ``ln r`` is taken as
    ``ln(r^2 + core^2) / 2``, finite at the corner (see the lid_driven_cavity section of docs/pinnacle.md).

    Args:
      xi, eta: the coordinates along the sliding wall and along the wall at rest, into the fluid.
      slope: the sliding wall's speed over its distance from the corner.
      nu: the viscosity.
      core: the radius under which the pressure's ``ln r`` levels off (0: ``ln r`` itself).

    Returns:
      ``(u_xi, u_eta, p)`` as tensors: ``nu (Laplacian u) = grad p`` and ``div u = 0`` (for ``p`` only
      where ``r`` is well above ``core``).

    References:
      Moffatt (1964), "Viscous and resistive eddies near a sharp corner", J. Fluid Mech. 18 (corner
      Stokes flows as powers of ``r``).
    """
    import tensorflow as tf

    theta = tf.math.atan2(eta, xi)
    u_xi = slope * (xi + eta * (theta - 0.5 * np.pi))
    u_eta = -slope * xi * theta
    return u_xi, u_eta, nu * slope * tf.math.log(xi * xi + eta * eta + core * core)


def _cutoff(xi, eta, cutoff):
    """``exp(-(r / cutoff)^4)``, ``r^2 = xi^2 + eta^2``: 1 with three vanishing derivatives at the corner."""
    import tensorflow as tf

    r2 = (xi * xi + eta * eta) / cutoff**2
    return tf.exp(-r2 * r2)


def corner_lift(s, t, cutoff=CUTOFF):
    """``(u, v, p)``: :func:`corner_flow` at both top corners, each times ``exp(-(r / cutoff)^4)`` (``r`` its distance).

    The lid's ``u = 4x(1 - x)`` grows as ``4x`` from ``(0, 1)`` and as ``4(1 - x)`` from ``(1, 1)``; the
    cutoff is ``exp(-(1 / cutoff)^4)`` (< 1e-50) on the walls away from its corner.
    """
    u = v = p = 0.0
    for xi, sign in ((s, 1.0), (1.0 - s, -1.0)):  # (0, 1): xi = x, u = u_xi; (1, 1): xi = 1 - x, u = -u_xi
        eta = 1.0 - t
        u_xi, u_eta, p_c = corner_flow(xi, eta, 4.0 * sign)
        chi = _cutoff(xi, eta, cutoff)
        u, v, p = u + chi * sign * u_xi, v - chi * u_eta, p + chi * p_c
    return u, v, p


def lid_lift(s, cutoff=CUTOFF):
    """The ``u`` of :func:`corner_lift` on the lid, ``4x chi(x) + 4(1 - x) chi(1 - x)`` (``u_xi = slope xi`` there),
    written out: ``atan2`` has no derivative at the corners themselves."""
    return sum(4.0 * xi * _cutoff(xi, 0.0, cutoff) for xi in (s, 1.0 - s))


def walls(x, outputs):
    """u, v exact on the four walls, the top corners' Stokes flow lifted; p as the network gives it plus its lift.

    ``u = U_c + (4x(1 - x) - U_c(x, 1)) y + bubble N_u``, ``v = V_c + bubble N_v``, ``p = P_c + N_p``,
    with ``(U_c, V_c, P_c)`` the :func:`corner_lift` and ``bubble = x(1 - x) y (1 - y)``: the lift meets
    the lid's ``u`` to first order at each corner and vanishes on the other walls, so the network
    learns the smooth rest. Written with products only.
    """
    s, t = x["x"][:, None], x["y"][:, None]
    bubble = s * (1.0 - s) * t * (1.0 - t)
    u_c, v_c, p_c = corner_lift(s, t)
    dtype = outputs.dtype.as_numpy_dtype
    first, second, third = (np.array([row], dtype) for row in ([1, 0, 0], [0, 1, 0], [0, 0, 1]))
    lift = (u_c + (4.0 * s * (1.0 - s) - lid_lift(s)) * t) * first + v_c * second + p_c * third
    return lift + (bubble * (first + second) + third) * outputs


def build(settings: Settings):
    from hodiff import pinn

    domain = pinn.Rectangle(("x", "y"), (0.0, 0.0), (1.0, 1.0))
    problem = pinn.Problem(
        domain,
        needs=("u", "v", "u_x", "u_y", "v_x", "v_y", "p_x", "p_y", "u_xx", "u_yy", "v_xx", "v_yy"),
        residual=residual,
        fields=("u", "v", "p"),
        residual_names=("momentum_x", "momentum_y", "continuity"),
        conditions=[pinn.Data(np.zeros((1, 2)), np.zeros(1), field="p", name="pressure_gauge")],
        output_transform=walls,
    )
    return problem, pinn.mlp(
        domain, outputs=3, width=settings.width, depth=settings.depth, dtype=settings.dtype, seed=settings.seed
    )


TARGETS = {("u", "v", "p"): 2e-2, ("u", "v"): 1e-2}


def scoring_axis(lines: int = 101) -> np.ndarray:
    """``lines`` uniform lines on [0, 1] and as many cosine-spaced ones, dense near the walls (spacing ~1e-4 there)."""
    cosine = 0.5 * (1.0 - np.cos(np.pi * np.arange(lines) / (lines - 1)))
    return np.unique(np.concatenate([np.linspace(0.0, 1.0, lines), cosine]))


def reference():
    x = y = scoring_axis()
    return {"x": x, "y": y}, lid_driven_cavity(x, y, cells=CELLS)


EXAMPLE = Example(
    name="lid_driven_cavity",
    build=build,
    reference=reference,
    presets={
        "default": Settings(interior=2048, adam_steps=2000, lbfgs_iterations=5000, width=40, depth=4, dtype="float64"),
        "fast": Settings(
            xla=False, interior=256, adam_steps=200, lbfgs_iterations=50, width=16, depth=2, checkpoint_every=100
        ),
    },
    target={"default": 1.0},
    target_metric="target_ratio",
    extra_metrics=lambda trainer: grouped_targets(EXAMPLE, trainer, TARGETS),
    wall_seconds={"default": 438},  # on 2 CPU cores, as recorded in docs/benchmarks.md, PINNacle problems
)


def main(argv=None) -> int:
    return run(EXAMPLE, argv)


if __name__ == "__main__":  # python FILE runs it as python -m pinn_examples NAME does
    raise SystemExit(main())
