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


def test_cavity_reference_keeps_its_numbers_as_a_case_of_the_general_solver():
    """The cavity is one call of solve_flow; these are the old cavity-only solver's numbers on 16 cells."""
    from pinn_examples import cavity_reference

    flow = cavity_reference.solve(16)
    assert flow["u"][8, 12] == pytest.approx(-0.029241381245304607, abs=1e-15)
    assert flow["v"][5, 9] == pytest.approx(0.16396987800909857, abs=1e-15)
    assert flow["p"][3, 14] == pytest.approx(-0.03911391501486646, abs=1e-15)
    sums = [np.abs(flow[name]).sum() for name in "uvp"]
    np.testing.assert_allclose(sums, [38.969687603610126, 24.34456800785062, 6.225688896948188], rtol=1e-13)


def _channel_on_grid(cells, x, y):
    from pinn_examples import cavity_reference

    flow = cavity_reference.interpolate(cavity_reference.solve_channel(cells), x, y, h=1.0 / cells)
    outside = ~cavity_reference.in_channel(x[:, None], y[None, :])
    return {name: np.where(outside, np.nan, values) for name, values in flow.items()}


def test_channel_reference_meets_its_boundary_conditions():
    from pinn_examples import cavity_reference

    cells = 8
    flow = cavity_reference.solve_channel(cells)
    u, v, p = flow["u"], flow["v"], flow["p"]
    y = (np.arange(cells) + 0.5) / cells
    np.testing.assert_allclose(u[0, 1 : cells + 1], 4 * y * (1 - y), atol=1e-14)  # the inlet
    # mass: what the inlet lets in leaves through the outlet (continuity holds in every cell)
    np.testing.assert_allclose(u[-1, 1:-1].sum(), u[0, 1 : cells + 1].sum(), rtol=1e-12)
    # no slip: the mean of a node and its ghost (or the node on the wall) is zero on every wall
    np.testing.assert_allclose(u[1:-1, 0] + u[1:-1, 1], 0.0, atol=1e-14)  # bottom
    np.testing.assert_allclose(u[2 * cells + 1 : -1, -1] + u[2 * cells + 1 : -1, -2], 0.0, atol=1e-14)  # top
    np.testing.assert_allclose(u[1 : 2 * cells, cells] + u[1 : 2 * cells, cells + 1], 0.0, atol=1e-14)  # y = 1
    np.testing.assert_allclose(u[2 * cells, cells + 1 : -1], 0.0, atol=1e-14)  # the step x = 2
    np.testing.assert_allclose(v[1 : 2 * cells + 1, cells], 0.0, atol=1e-14)  # y = 1 from below
    assert np.isnan(p[: 2 * cells, cells:]).all()  # the solid block
    assert np.isfinite(p[2 * cells :]).all() and np.isfinite(p[:, :cells]).all()
    # the stress-free outlet: p = 2 nu u_x at x = 4, up to the discretisation (which halves with h here)
    mismatch = []
    for n, solution in ((cells, flow), (2 * cells, cavity_reference.solve_channel(2 * cells))):
        x = np.array([4.0 - 2.0 / n, 4.0 - 1.0 / n, 4.0])
        grid = cavity_reference.interpolate(solution, x, np.linspace(0.25, 1.75, 7), h=1.0 / n)
        u_x = (3 * grid["u"][2] - 4 * grid["u"][1] + grid["u"][0]) * n / 2
        mismatch.append(np.abs(grid["p"][2] - 2 * cavity_reference.NU * u_x).max())
    assert mismatch[1] < min(mismatch[0] / 2, 6e-3), mismatch
    assert u[-1, 1:-1].min() < 0 < u[-1, 1:-1].max(), "the recirculation behind the step reaches the outlet"


def test_channel_reference_converges():
    """Halving h: the change in (u, v) shrinks by ~2^1.1 or better (the re-entrant corner's velocity ~ r^0.54
    limits it), and in p (whose level upstream of the corner converges about first order) it shrinks too."""
    x, y = np.linspace(0.0, 4.0, 81), np.linspace(0.0, 2.0, 41)
    flows = {cells: _channel_on_grid(cells, x, y) for cells in (8, 16, 32)}

    def difference(a, b, fields):  # relative L2, as the example's error
        inside = np.isfinite(flows[b]["u"])
        squares = sum(np.sum((flows[a][f][inside] - flows[b][f][inside]) ** 2) for f in fields)
        return np.sqrt(squares / sum(np.sum(flows[b][f][inside] ** 2) for f in fields))

    for fields, order in (("uv", 1.3), ("uvp", 1.3), ("p", 0.3)):
        coarse, fine = difference(8, 16, fields), difference(16, 32, fields)
        assert np.log2(coarse / fine) > order, (fields, coarse, fine)
    assert difference(16, 32, "uv") < 8e-3


@pytest.mark.slow
def test_channel_reference_error_is_well_below_the_targets():
    """h = 1/32, 1/64, 1/128: observed orders and the Richardson estimate of the 128-cell solution's own error."""
    x, y = np.linspace(0.0, 4.0, 201), np.linspace(0.0, 2.0, 101)
    flows = {cells: _channel_on_grid(cells, x, y) for cells in (32, 64, 128)}

    def difference(a, b, fields):
        inside = np.isfinite(flows[b]["u"])
        squares = sum(np.sum((flows[a][f][inside] - flows[b][f][inside]) ** 2) for f in fields)
        return np.sqrt(squares / sum(np.sum(flows[b][f][inside] ** 2) for f in fields))

    for fields, target in (("uv", 1e-2), ("uvp", 2e-2)):
        coarse, fine = difference(32, 64, fields), difference(64, 128, fields)
        order = np.log2(coarse / fine)
        assert order > 0.8, (fields, order)
        assert fine / (2**order - 1) < target / 5, (fields, fine, order)  # the 128-cell error, by Richardson
