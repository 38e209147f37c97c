"""Insulated plate with two holes: u_xx + u_yy = 0, u = 1 at x = 0, u = 0 at x = 2, du/dn = 0 elsewhere.

The domain is ``[0, 2] x [0, 1]`` minus the disk of radius 0.2 at (0.5, 0.5) and minus the square
``[1.3, 1.5] x [0.4, 0.6]``; the top, the bottom and both holes are insulated. Every condition is
exact, so the loss is the residual alone. With soft conditions (and even with a hard Dirichlet lift
and soft Neumann terms, in float64 with L-BFGS) training stalls at an error of ~6e-2, that of the
lift 1 - x / 2 alone: the Neumann terms' gradients cancel the residual's (the trainer's stall
diagnostic says so). Here u = L + D N + phi K with L = 1 - x / 2, D = x (2 - x) (so u = 1 and 0 at
the ends whatever N is), phi a distance function of the insulated pieces (the R-equivalence join
of y (1 - y), the disk's (rho^2 - r^2) / (2 r) and the square's four trimmed-segment functions,
unit slope on each piece, flat in x at both ends) and
K = -D (grad phi . grad N) + phi_x (1/2 - (2 - 2x) N), which makes du/dn = 0 wherever phi = 0:
Sukumar & Srivastava's (2022) first-order Neumann correction applied to the lifted field, with
grad N from a tape inside the output transform. Reference: P1 finite elements on a Delaunay mesh,
h = 1/160 (:mod:`pinn_examples.plate_reference`, error ~1e-4). ``metrics.json`` also has the heat
flux -integral u_x dy through five vertical cuts (equal for the exact solution; two cross the
holes) and the finite elements' flux (:mod:`hodiff.pinn.flux`). Target 1e-2.

References:
  N. Sukumar and A. Srivastava, "Exact imposition of boundary conditions with distance functions
  in physics-informed deep neural networks", CMAME 389 (2022) 114333.
"""

import numpy as np
import tensorflow as tf

from hodiff.pinn.geometry.distance import r_equivalence, segment_adf
from pinn_examples._runner import Example, Settings, run
from pinn_examples.plate_reference import DISK_CENTRE, DISK_RADIUS, HEIGHT, LENGTH, SQUARE, plate_reference

CUTS = (0.25, 0.5, 1.0, 1.4, 1.75)  # x of the vertical cuts whose fluxes metrics.json reports


def domain_and_parts():
    """The plate with its holes, and the two holes (operands for ``where=``)."""
    from hodiff import pinn

    outer = pinn.Rectangle(("x", "y"), (0.0, 0.0), (LENGTH, HEIGHT), name="plate")
    disk = pinn.Disk(DISK_CENTRE, DISK_RADIUS, name="disk")
    square = pinn.Rectangle(("x", "y"), SQUARE[0], SQUARE[1], name="square")
    return outer - disk - square, disk, square


def _fold(x, a):
    """x on [a, 2 - a]; towards the ends a smooth monotone map with zero slope at x = 0 and x = 2."""
    low = a * (x / a + (x / a - 1.0) ** 4 / 4.0)  # q(t) = t + (t - 1)^4 / 4: q'(0) = 0, C^3 at t = 1
    high = LENGTH - a * ((LENGTH - x) / a + ((LENGTH - x) / a - 1.0) ** 4 / 4.0)
    return tf.where(x < a, low, tf.where(x > LENGTH - a, high, x))


def insulated_distance(points):
    """phi: zero on the top, the bottom and both holes, positive inside, |grad phi| = 1 on them, and
    d phi / dx = 0 at x = 0 and x = 2 (the holes' distances see x through :func:`_fold`)."""
    x = tf.reshape(points @ tf.constant([[1.0], [0.0]], points.dtype), [-1])  # matmul, not slicing: XLA-safe
    y = tf.reshape(points @ tf.constant([[0.0], [1.0]], points.dtype), [-1])  # to third derivatives
    walls = y * (HEIGHT - y) / HEIGHT  # slope 1 at y = 0 and y = 1
    folded = _fold(x, 0.2)
    (cx, cy), r = DISK_CENTRE, DISK_RADIUS
    disk = ((folded - cx) ** 2 + (y - cy) ** 2 - r**2) / (2 * r)
    (x0, y0), (x1, y1) = SQUARE
    corners = [np.array(c, dtype=float) for c in ((x0, y0), (x1, y0), (x1, y1), (x0, y1))]
    edges = [segment_adf(a, b)([folded, y]) for a, b in zip(corners, corners[1:] + corners[:1])]
    return r_equivalence([walls, disk, *edges])


def build(settings: Settings):
    from hodiff import pinn

    domain, _, _ = domain_and_parts()
    model = pinn.mlp(domain, width=settings.width, depth=settings.depth, dtype=settings.dtype, seed=settings.seed)

    def exact_conditions(x, u):
        points = x.points
        with tf.GradientTape(persistent=True) as tape:
            tape.watch(points)
            n = tf.reshape(model(points), [-1])
            phi = insulated_distance(points)
        grad_n, grad_phi = tape.gradient(n, points), tape.gradient(phi, points)
        del tape
        phi_x = tf.reshape(grad_phi @ tf.constant([[1.0], [0.0]], points.dtype), [-1])
        along = tf.reduce_sum(grad_phi * grad_n, axis=1)  # grad phi . grad N
        lift, factor = 1.0 - x["x"] / LENGTH, x["x"] * (LENGTH - x["x"])
        correction = -factor * along + phi_x * (1.0 / LENGTH - (LENGTH - 2.0 * x["x"]) * n)
        return (lift + factor * n + phi * correction)[:, None]

    problem = pinn.Problem(
        domain,
        needs=("u_xx", "u_yy"),
        residual=lambda d, x, p: d["u_xx"] + d["u_yy"],
        output_transform=exact_conditions,
    )
    return problem, model


def reference():
    axes, u, _ = plate_reference()
    return axes, u


def cut_fluxes(trainer) -> dict:
    """The heat flux -integral u_x dy through each vertical cut of :data:`CUTS`, the finite elements'
    flux, and the cuts' largest relative deviation from it (:func:`hodiff.pinn.flux.segment_flux`)."""
    from hodiff.pinn.flux import gradient_field, segment_flux

    gradient = gradient_field(trainer)
    heat = lambda points: -gradient(points)  # noqa: E731
    fluxes = {f"flux_x{cut}": segment_flux(heat, (cut, 0.0), (cut, HEIGHT), trainer.problem.domain) for cut in CUTS}
    exact = plate_reference()[2]
    spread = max(abs(value - exact) for value in fluxes.values()) / exact
    return {**fluxes, "flux_reference": exact, "flux_deviation": spread}


EXAMPLE = Example(
    name="insulated_plate",
    build=build,
    reference=reference,
    presets={
        "default": Settings(interior=2048, adam_steps=0, lbfgs_iterations=3000, width=32, depth=3, dtype="float64"),
        "fast": Settings(
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
    extra_metrics=cut_fluxes,
)


def main(argv=None) -> int:
    return run(EXAMPLE, argv)
