"""The NS2d-LT reference (pinn_examples.ns2d_lt_reference): its steady limit is the Newton solver's, it converges at
second order in time and space, it meets the boundary conditions, it refuses bad input; slow: its own error."""

import numpy as np
import pytest

from pinn_examples import cavity_reference
from pinn_examples import ns2d_lt_reference as ref


def grid(end: float, dt: float, every: float = 0.1) -> np.ndarray:
    """Points on a 21 x 11 grid of the channel at the times ``every, 2 every, .. end``."""
    x, y = np.linspace(0.0, 2.0, 21), np.linspace(0.0, 1.0, 11)
    times = np.arange(1, int(round(end / every)) + 1) * every
    points = np.array([(a, b, t) for t in times for a in x for b in y])
    points[:, 2] = np.rint(points[:, 2] / dt) * dt
    return points


def relative(a: dict, b: dict, name: str) -> float:
    return float(np.linalg.norm(a[name] - b[name]) / np.linalg.norm(b[name]))


def test_the_steady_limit_is_the_newton_solution():
    """A constant inflow, no forcing: SBDF2's fixed point is the steady discrete equations, so marching reaches
    solve_flow's Newton solution (nu = 0.1: the flow settles by t = 20)."""
    cells, nu = 8, 0.1
    fluid = np.ones((2 * cells, cells), bool)
    system = cavity_reference.flow_system(fluid, 1.0 / cells, ref._walls, outlet=True, nu=nu)
    last = {}
    ref.march(system, 0.02, 1000, lambda t: 1.0, lambda t: np.zeros(system.n_v), lambda k, f: last.update(f))
    steady = cavity_reference.solve_flow(fluid, 1.0 / cells, ref._walls, outlet=True, nu=nu)
    for name in ("u", "v", "p"):
        used = np.isfinite(steady[name])
        np.testing.assert_allclose(last[name][used], steady[name][used], atol=1e-7)
    assert np.abs(steady["v"][np.isfinite(steady["v"])]).max() > 1e-3  # a real two-dimensional flow


def test_the_time_stepping_converges_at_second_order():
    """Halving dt divides the error (against dt / 8) by about 4, in u, v and p, over t in (0, 1] on 16 cells."""
    points = grid(1.0, 0.01)
    fine = ref.solve_ns2d_lt(16, 0.00125, points)
    errors = [ref.solve_ns2d_lt(16, dt, points) for dt in (0.01, 0.005)]
    for name in ("u", "v", "p"):
        coarse, finer = (relative(e, fine, name) for e in errors)
        assert 3.3 < coarse / finer < 6.0, (name, coarse, finer)  # (1 - 1/64) / (1/4 - 1/64) = 4.2 at order 2
        assert finer < 1e-2, (name, finer)


def test_the_space_discretisation_converges_at_second_order():
    """The differences between 16, 32 and 64 cells per unit fall by about 4 (measured 3.3, 3.1, 3.1 in u, v, p:
    nearly asymptotic), over t in (0, 0.3]."""
    points = grid(0.3, 0.0025)
    solutions = [ref.solve_ns2d_lt(cells, 0.0025, points) for cells in (16, 32, 64)]
    for name in ("u", "v", "p"):
        first, second = relative(solutions[0], solutions[1], name), relative(solutions[1], solutions[2], name)
        assert first / second > 2.8, (name, first, second)  # first order would be 2
    assert relative(solutions[1], solutions[2], "u") < 1e-2


def test_the_reference_meets_the_boundary_conditions():
    cells, dt = 16, 0.005
    y = np.linspace(0.0, 1.0, 11)
    at = lambda x, t: np.column_stack([np.full_like(y, x), y, np.full_like(y, t)])  # noqa: E731
    values = ref.solve_ns2d_lt(cells, dt, np.concatenate([at(0.0, 0.1), at(0.0, 1.3), at(1.0, 0.0)]))
    inflow = np.concatenate([np.sin(np.pi * y) * ref.inflow(t) for t in (0.1, 1.3)])
    np.testing.assert_allclose(values["u"][:22], inflow, atol=2e-2 * np.abs(inflow).max())  # bilinear in y
    np.testing.assert_allclose(values["v"][:22], 0.0, atol=1e-12)
    assert np.abs(values["u"][:22]).max() > 1.0
    walls = np.array([[0.7, 0.0, 0.5], [1.9, 1.0, 2.2], [0.3, 0.0, 4.0]])
    walled = ref.solve_ns2d_lt(cells, dt, walls)
    np.testing.assert_allclose(walled["u"], 0.0, atol=1e-12)
    np.testing.assert_allclose(walled["v"], 0.0, atol=1e-12)
    np.testing.assert_allclose([values[name][22:] for name in "uvp"], 0.0, atol=1e-12)  # at rest at t = 0


def test_the_outlet_pressure_is_small_beside_the_drop():
    """The stress-free outlet: p = 2 nu u_x at x = 2, small beside the pressure at the inlet."""
    y = np.linspace(0.05, 0.95, 10)
    points = np.concatenate([np.column_stack([np.full(10, x), y, np.full(10, 0.8)]) for x in (2.0, 0.0)])
    p = ref.solve_ns2d_lt(16, 0.005, points)["p"]
    assert np.abs(p[:10]).max() < 0.02 * np.abs(p[10:]).max()
    assert np.abs(p[10:]).max() > 5.0


@pytest.mark.parametrize(
    ("arguments", "match"),
    [
        ((2, 0.01, np.zeros((1, 3))), "cells=2"),
        ((8, 0.0, np.zeros((1, 3))), "dt=0.0"),
        ((8, 0.01, np.zeros((4, 2))), r"\(N, 3\)"),
        ((8, 0.01, np.array([[0.5, 0.5, 0.015]])), "multiple of dt"),
    ],
)
def test_bad_input_is_refused(arguments, match):
    with pytest.raises(ValueError, match=match):
        ref.solve_ns2d_lt(*arguments)


def test_a_flow_that_blows_up_says_how_to_fix_it():
    with pytest.raises(RuntimeError, match="smaller dt"):
        ref.solve_ns2d_lt(16, 0.1, grid(5.0, 0.1))


@pytest.mark.slow
def test_the_reference_error_at_the_test_points():
    """The reference (64 cells per unit, dt = 0.0025) against 128 cells and dt = 0.00125 at the 20,000 test points:
    below the figures docs/pinnacle.md gives, far below the example's targets."""
    points = ref.test_points()
    coarse = ref.solve_ns2d_lt(ref.REFERENCE_CELLS, ref.REFERENCE_DT, points)
    fine = ref.solve_ns2d_lt(2 * ref.REFERENCE_CELLS, ref.REFERENCE_DT / 2, points)
    for name, bound in (("u", 5e-3), ("v", 3e-2), ("p", 5e-3)):
        assert relative(coarse, fine, name) < bound, (name, relative(coarse, fine, name))
