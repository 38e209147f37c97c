"""The scipy/numpy references behind the examples, checked independently."""

import numpy as np
import pytest

from pinn_examples import references

NU = 0.01 / np.pi


def test_cole_hopf_quadrature_matches_adaptive_quad_near_the_shock():
    x = np.array([-0.02, -0.004, 0.0, 0.003, 0.01, 0.5])
    t = np.array([0.25, 0.5, 0.99])
    gauss_hermite = references.burgers_cole_hopf(x, t, NU)
    quad = np.array([[references.burgers_quad(xi, ti, NU) for ti in t] for xi in x])
    np.testing.assert_allclose(gauss_hermite, quad, rtol=0, atol=1e-10)
    assert np.abs(gauss_hermite).max() > 0.5, "the points straddle the steep shock"


def test_cole_hopf_initial_and_boundary_values():
    x = np.linspace(-1, 1, 9)
    u = references.burgers_cole_hopf(x, np.array([0.0, 0.3, 0.9]), NU)
    np.testing.assert_allclose(u[:, 0], -np.sin(np.pi * x), atol=1e-15)
    np.testing.assert_allclose(u[[0, -1], 1:], 0.0, atol=1e-12)
    np.testing.assert_allclose(u, -u[::-1], atol=1e-12)  # odd in x


def test_method_of_lines_converges_to_the_exact_heat_solution():
    x, t = np.linspace(0, 1, 11), np.array([0.0, 0.25, 1.0])  # nodes of both grids
    exact = references.heat_exact(x, t)
    errors = [np.abs(references.heat_method_of_lines(x, t, cells=cells) - exact).max() for cells in (50, 100)]
    assert errors[1] < 1e-4
    assert 3.5 < errors[0] / errors[1] < 4.5, "second order in space"


def test_etdrk4_self_convergence_and_initial_condition():
    x, t = np.linspace(-1, 1, 17), np.array([0.0, 0.5, 1.0])
    coarse = references.allen_cahn_etdrk4(x, t, modes=256, dt=4e-4)
    fine = references.allen_cahn_etdrk4(x, t, modes=512, dt=2e-4)
    finest = references.allen_cahn_etdrk4(x, t, modes=512, dt=1e-4)
    np.testing.assert_allclose(fine[:, 0], x**2 * np.cos(np.pi * x), atol=1e-12)
    assert np.abs(finest - fine).max() < 1e-5
    assert np.abs(fine - coarse).max() > 4 * np.abs(finest - fine).max(), "the error shrinks with dt"
    assert np.all(np.abs(finest[:, -1]) <= 1.0 + 1e-6), "the solution stays between the stable states"


def test_etdrk4_rejects_times_off_the_step_grid():
    with pytest.raises(ValueError, match="multiple of dt"):
        references.allen_cahn_etdrk4(np.zeros(2), np.array([0.00015]))


def test_kdv_etdrk4_self_convergence_and_invariants():
    x, t = np.linspace(-1, 1, 64, endpoint=False), np.array([0.0, 0.5, 1.0])
    coarse = references.kdv_etdrk4(x, t, modes=128, dt=1e-3)
    fine = references.kdv_etdrk4(x, t, modes=256, dt=5e-4)
    finest = references.kdv_etdrk4(x, t, modes=512, dt=2.5e-4)
    np.testing.assert_allclose(fine[:, 0], np.cos(np.pi * x), atol=1e-12)
    scale = np.linalg.norm(finest)
    assert np.linalg.norm(finest - fine) / scale < 2e-4, "10x (here ~1e6x) below the example's 2e-2 target"
    assert np.linalg.norm(fine - coarse) > 4 * np.linalg.norm(finest - fine), "the error shrinks with dt and modes"
    assert np.abs(finest[:, -1]).max() > 2.0, "solitons have formed: the peak exceeds twice the initial amplitude"
    # KdV conserves the mean and the L2 norm (the trapezoid rule is spectral for periodic data)
    np.testing.assert_allclose(finest.mean(axis=0), 0.0, atol=1e-10)
    np.testing.assert_allclose((finest**2).mean(axis=0), 0.5, rtol=1e-8)


def test_kdv_etdrk4_rejects_times_off_the_step_grid():
    with pytest.raises(ValueError, match="multiple of dt"):
        references.kdv_etdrk4(np.zeros(2), np.array([0.00015]))


def test_cavity_reference_converges_at_second_order():
    from pinn_examples import cavity_reference

    x = np.linspace(0, 1, 41)
    flows = {n: cavity_reference.interpolate(cavity_reference.solve(n), x, x) for n in (16, 32, 64)}

    def difference(a, b):  # relative L2 over (u, v) together, as the example's error
        squares = sum(np.sum((flows[a][f] - flows[b][f]) ** 2) for f in "uv")
        return np.sqrt(squares / sum(np.sum(flows[b][f] ** 2) for f in "uv"))

    coarse, fine = difference(16, 32), difference(32, 64)
    assert 3.0 < coarse / fine < 5.0, "second order: halving h quarters the change"
    # Richardson: the 64-cell error is ~fine / 3; the example's 192 cells are 9x better still
    assert fine / 3 * (64 / 192) ** 2 < 1e-3, "the reference's error is >= 10x below the 1e-2 target"


def test_cavity_reference_meets_the_walls_and_the_gauge():
    from pinn_examples import cavity_reference

    x = np.linspace(0, 1, 21)
    flow = cavity_reference.interpolate(cavity_reference.solve(20), x, x)
    np.testing.assert_allclose(flow["u"][:, -1], 4 * x * (1 - x), atol=1e-12)  # the lid
    for wall in (flow["u"][0], flow["u"][-1], flow["u"][:, 0], flow["v"][0], flow["v"][-1], flow["v"][:, 0]):
        np.testing.assert_allclose(wall, 0.0, atol=1e-12)
    np.testing.assert_allclose(flow["v"][:, -1], 0.0, atol=1e-12)
    assert abs(flow["p"][0, 0]) < 1e-12
    assert flow["u"][10, 10] < 0 < flow["u"][10, 18], "the lid drives a clockwise vortex: back flow below"
