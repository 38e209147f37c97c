"""Insulated plate with two holes: u_xx + u_yy = 0, u = 1 at x = 0, u = 0 at x = 2, du/dn = 0 elsewhere.

The domain is ``[0, 2] x [0, 1]`` minus the disk of radius 0.2 at (0.5, 0.5) and minus the square
``[1.3, 1.5] x [0.4, 0.6]``; the top, the bottom and both holes are insulated. The Dirichlet
conditions are hard, by a lift: u = 1 - x / 2 + x (2 - x) N(x, y); the lift 1 - x / 2 alone meets
every condition except those on the holes (relative L2 error 6.0e-2, where users' soft-condition
runs stalled). The zero normal derivatives are loss terms, one per piece (``walls``: top and
bottom, ``disk``, ``square``; the square's re-entrant corners make u ~ r^(2/3) there, so its term
has extra points near them), in float64 with L-BFGS. Reference: P1 finite elements on a Delaunay
mesh with h = 1/160 (:mod:`pinn_examples.plate_reference`, error ~1e-4). The metrics also give the
heat flux -integral u_x dy through five vertical cuts (equal for the exact solution; two cross the
holes) against the finite elements' flux. Target 1e-2.
"""

import dataclasses

import numpy as np

from pinn_examples._runner import Example, Settings, run, setting
from pinn_examples.plate_reference import DISK_CENTRE, DISK_RADIUS, HEIGHT, LENGTH, SQUARE, plate_reference

CUTS = (0.25, 0.5, 1.0, 1.4, 1.75)  # x of the vertical cuts whose fluxes metrics.json reports


@dataclasses.dataclass
class PlateSettings(Settings):
    """The shared settings and the boundary points of the insulated pieces."""

    boundary: int = setting(512, "points on each insulated piece (top and bottom, disk, square)", positive=True)


def domain_and_parts():
    """The plate with its holes, and the two holes (operands for ``where=``)."""
    from hodiff import pinn

    outer = pinn.Rectangle(("x", "y"), (0.0, 0.0), (LENGTH, HEIGHT), name="plate")
    disk = pinn.Disk(DISK_CENTRE, DISK_RADIUS, name="disk")
    square = pinn.Rectangle(("x", "y"), SQUARE[0], SQUARE[1], name="square")
    return outer - disk - square, disk, square


def on_walls(x):
    """The top and bottom edges (the plate's insulated outer faces): a predicate, unambiguous."""
    return np.isclose(x["y"], 0.0) | np.isclose(x["y"], HEIGHT)


def near_corners(x):
    """Square-hole boundary points within 0.05 of one of its corners (the re-entrant corners of the plate)."""
    corners = [(SQUARE[i][0], SQUARE[j][1]) for i in (0, 1) for j in (0, 1)]
    return np.min([np.hypot(x["x"] - cx, x["y"] - cy) for cx, cy in corners], axis=0) < 0.05


def build(settings: Settings):
    from hodiff import pinn

    domain, disk, square = domain_and_parts()

    def lift(x, u):  # u = 1 at x = 0 and u = 0 at x = 2, exactly
        return (1.0 - x["x"] / LENGTH)[:, None] + (x["x"] * (LENGTH - x["x"]))[:, None] * u

    count = getattr(settings, "boundary", 512)
    insulated = [
        pinn.Neumann(0.0, count=count, name="walls", where=on_walls),
        pinn.Neumann(0.0, count=count // 2, name="disk", where=disk),
        pinn.Neumann(0.0, count=count // 2, name="square", where=square),
        pinn.Neumann(0.0, count=count // 4, name="corners", where=near_corners),
    ]
    problem = pinn.Problem(
        domain,
        needs=("u_xx", "u_yy"),
        residual=lambda d, x, p: d["u_xx"] + d["u_yy"],
        conditions=insulated,
        output_transform=lift,
    )
    return problem, pinn.mlp(
        domain, width=settings.width, depth=settings.depth, dtype=settings.dtype, seed=settings.seed
    )


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
        "default": PlateSettings(
            interior=4096, adam_steps=1000, lbfgs_iterations=4000, width=32, depth=4, dtype="float64", boundary=512
        ),
        "fast": PlateSettings(
            interior=256,
            adam_steps=200,
            lbfgs_iterations=50,
            width=16,
            depth=2,
            dtype="float64",
            boundary=64,
            checkpoint_every=100,
        ),
    },
    target={"default": 1e-2},
    extra_metrics=cut_fluxes,
)


def main(argv=None) -> int:
    return run(EXAMPLE, argv)

