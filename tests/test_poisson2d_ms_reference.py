"""The finite-volume reference of poisson2d_ms (PINNacle Poisson2d-MS): refinement studies and checks."""

import numpy as np
import pytest

from pinn_examples import poisson2d_ms_reference as ms
from pinn_examples.fd_references import on_test_grid


@pytest.fixture
def pinnacle_data():
    """PINNacle's coefficient files, where the checkout keeps them (``../shared/pinnacle`` or $HODIFF_PINNACLE_DATA)."""
    try:
        ms.coefficients()
    except FileNotFoundError as error:
        pytest.skip(str(error))


def relative_l2(a, b):
    return float(np.sqrt(np.sum((a - b) ** 2) / np.sum(b**2)))


def smooth(x, y):
    return np.cos(0.3 * x + 0.5) * np.sin(0.2 * y + 1.0) + 0.002 * x * y**2


def smooth_laplacian(x, y):
    return -0.13 * np.cos(0.3 * x + 0.5) * np.sin(0.2 * y + 1.0) + 0.004 * x


def smooth_robin(x, y, nx, ny):
    """du/dn + u on the edges for :func:`smooth`."""
    ux = -0.3 * np.sin(0.3 * x + 0.5) * np.sin(0.2 * y + 1.0) + 0.002 * y**2
    uy = 0.2 * np.cos(0.3 * x + 0.5) * np.cos(0.2 * y + 1.0) + 0.004 * x * y
    return nx * ux + ny * uy + smooth(x, y)


def test_scheme_is_second_order_for_a_smooth_solution():
    errors = []
    for n in (50, 100, 200):
        x, y, u = ms.solve(n, smooth_laplacian, smooth_robin)
        errors.append(np.max(np.abs(u - smooth(x[:, None], y[None, :]))))
    orders = np.log2(np.array(errors[:-1]) / np.array(errors[1:]))
    assert np.all((orders > 1.9) & (orders < 2.1)), orders
    assert errors[-1] < 1e-4


def test_wrong_robin_sign_is_seen():
    """The Robin data enter with the right sign: flipping them leaves an O(1) error."""
    flipped = lambda x, y, nx, ny: -smooth_robin(x, y, nx, ny)
    x, y, u = ms.solve(100, smooth_laplacian, flipped)
    assert np.max(np.abs(u - smooth(x[:, None], y[None, :]))) > 0.1


def test_reference_is_second_order_and_far_below_the_target(pinnacle_data):
    grids = [on_test_grid(*ms.solve(n), points=101)[2] for n in (100, 200, 400)]
    d1, d2 = relative_l2(grids[0], grids[1]), relative_l2(grids[1], grids[2])
    order = np.log2(d1 / d2)
    assert 1.9 < order < 2.1, "second order although f / a jumps: the jumps lie on grid lines"
    error_400 = d2 / (2**order - 1)
    # the example's n = 1600 is then 16 times closer still: about 1e-6
    assert error_400 < 3e-5, f"n = 400 is off by ~{error_400:.1e}; the example uses n = 1600, target 5e-2"


def test_flux_balance_and_solution_range(pinnacle_data):
    """int Delta u = oint du/dn = -oint u: the integral of g equals minus the boundary integral of u."""
    x, y, u = ms.solve(400)
    a, c = ms.coefficients()
    integral = np.sum(-(ms.BLOCK**2 * c[..., 0] + (2 * ms.BLOCK / np.pi) ** 2 * c[..., 1]) / a)
    trapezoid = lambda values: np.sum((values[1:] + values[:-1]) / 2) * (x[1] - x[0])
    boundary = sum(trapezoid(edge) for edge in (u[0], u[-1], u[:, 0], u[:, -1]))
    assert abs(integral + boundary) < 1e-4 * abs(integral)
    assert 17.0 < u.max() < 18.0 and -7.0 < u.min() < -6.5


def test_blocks_and_source(pinnacle_data):
    a, c = ms.coefficients()
    i, j, xi, eta = ms.blocks(np.array([-10.0, -6.0, 10.0, 1.0]), np.array([-10.0, 2.0, 10.0, -3.0]))
    np.testing.assert_array_equal(i, [0, 1, 4, 2])  # a point on an interface belongs to the block above it
    np.testing.assert_array_equal(j, [0, 3, 4, 1])
    np.testing.assert_allclose(xi, [0.0, 0.0, 1.0, 0.75])
    # at a block's centre f = c00 + c11
    g = ms.source(np.array([-8.0 + 4.0 * 3]), np.array([-8.0 + 4.0 * 1]))
    np.testing.assert_allclose(g, -(c[3, 1, 0] + c[3, 1, 1]) / a[3, 1])
    assert a.shape == (5, 5) and 0.1 < a.min() < 0.2 and 80 < a.max() < 90


def test_missing_or_bad_coefficient_files(tmp_path, monkeypatch):
    monkeypatch.setenv(ms.DATA_VARIABLE, str(tmp_path))
    with pytest.raises(FileNotFoundError, match=r"poisson_a_coef\.dat is missing.*HODIFF_PINNACLE_DATA"):
        ms.coefficients()
    np.savetxt(tmp_path / ms.A_FILE, np.ones((5, 5)))
    with pytest.raises(FileNotFoundError, match=r"poisson_f_coef\.dat is missing"):
        ms.coefficients()
    np.savetxt(tmp_path / ms.F_FILE, np.ones(99))
    with pytest.raises(ValueError, match="holds 99 values.*100 finite numbers"):
        ms.coefficients()
    np.savetxt(tmp_path / ms.F_FILE, np.ones(100))
    np.savetxt(tmp_path / ms.A_FILE, -np.ones((5, 5)))
    with pytest.raises(ValueError, match="must be positive"):
        ms.coefficients()
    (tmp_path / ms.A_FILE).write_text("not numbers\n")
    with pytest.raises(ValueError, match="not a table of numbers"):
        ms.coefficients()


def test_grid_must_align_with_the_blocks():
    with pytest.raises(ValueError, match="multiple of 5"):
        ms.solve(12)


def test_cache_is_written_once_and_read_back(tmp_path, monkeypatch):
    calls = []
    monkeypatch.setattr(ms, "solve", lambda n: calls.append(n) or (np.zeros(3), np.zeros(3), np.full((3, 3), 2.0)))
    monkeypatch.setenv("HODIFF_CACHE", str(tmp_path))
    ms.cached.cache_clear()
    try:
        assert ms.cached(10)[2][0, 0] == 2.0
        assert (tmp_path / "fd_poisson2d_ms_10.npz").exists()
        ms.cached.cache_clear()
        assert ms.cached(10)[2][1, 1] == 2.0
        assert calls == [10], "the second process reads the file"
    finally:
        ms.cached.cache_clear()
