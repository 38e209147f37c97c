"""burgers2d_reference: the drawn initial fields follow PINNacle's recipe from the stated seed, and the pseudo-spectral
solver converges (N against 2N on a short horizon) and matches Cole-Hopf's exact solution of viscous Burgers along
the diagonal."""

import numpy as np
import pytest

from pinn_examples import burgers2d_reference as reference


def test_the_initial_fields_are_the_recipe_drawn_from_the_seed():
    rng = np.random.default_rng(20_261_207)  # the seed stated in the docs
    a, b, shift = rng.standard_normal((2, 4, 4)), rng.standard_normal((2, 4, 4)), rng.standard_normal(2)
    nodes = np.arange(512) / 512
    x, y = np.meshgrid(nodes, nodes, indexing="ij")
    raw = []
    for c in (0, 1):
        field = np.zeros_like(x)
        for i in range(4):
            for j in range(4):
                phase = 2 * np.pi * (i * x + j * y)
                field += a[c, i, j] * np.sin(phase) + b[c, i, j] * np.cos(phase)
        raw.append(field)
    u, v = reference.initial_uv(x, y)
    scale = (u - shift[0]) / raw[0]
    np.testing.assert_allclose(scale, scale.flat[0], rtol=1e-10)  # one factor for both fields
    np.testing.assert_allclose((v - shift[1]) / raw[1], scale.flat[0], rtol=1e-10)
    # the larger field's maximum absolute value is 2 (the grid's best lies a little below the polished maximum)
    largest = max(np.abs(u - shift[0]).max(), np.abs(v - shift[1]).max())
    assert 2.0 - 1e-3 < largest <= 2.0 + 1e-12
    fine = np.linspace(0.0, 1.0, 2001)  # no point of a finer grid exceeds it
    fx, fy = np.meshgrid(fine, fine, indexing="ij")
    fu, fv = reference.initial_uv(fx, fy)
    assert max(np.abs(fu - shift[0]).max(), np.abs(fv - shift[1]).max()) <= 2.0 + 1e-9
    # period 1 in x and y: four copies on [0, 4]; any shape in, the same shape out
    points = np.random.default_rng(3).uniform(0.0, 1.0, size=(2, 5, 3))
    for dx, dy in ((1.0, 0.0), (0.0, 3.0), (2.0, 1.0)):
        for got, want in zip(reference.initial_uv(points[0] + dx, points[1] + dy), reference.initial_uv(*points)):
            assert got.shape == (5, 3)
            np.testing.assert_allclose(got, want, atol=1e-12)
    assert all(np.shape(f) == () for f in reference.initial_uv(0.3, 0.4))


def cole_hopf(x, y, t, nu):
    """``u = v = w(x + y, t)``: ``w_t + 2 w w_s = 2 nu w_ss``, so ``W = 2 w`` solves viscous Burgers with viscosity
    ``2 nu``: ``W = -4 nu phi_s / phi``, ``phi = 1 + c e^(-2 nu (2 pi)^2 t) cos(2 pi s)``."""
    s, c, decay = x + y, 0.8, np.exp(-2.0 * nu * (2.0 * np.pi) ** 2 * t)
    phi = 1.0 + c * decay * np.cos(2.0 * np.pi * s)
    phi_s = -2.0 * np.pi * c * decay * np.sin(2.0 * np.pi * s)
    w = -2.0 * nu * phi_s / phi
    return w, w


def test_the_solver_matches_cole_hopf_along_the_diagonal():
    nu, n, times = 0.02, 128, [0.0, 0.05, 0.2]
    nodes = np.arange(n) / n
    x, y = np.meshgrid(nodes, nodes, indexing="ij")
    u, v = reference.burgers2d_spectral(n, times, initial=cole_hopf(x, y, 0.0, nu), nu=nu, cfl=0.2)  # slow: small dt
    for k, t in enumerate(times):
        exact = cole_hopf(x, y, t, nu)[0]
        assert np.abs(exact).max() > 0.15  # a steep front: phi's minimum is 0.2 at the start
        np.testing.assert_allclose(u[k], exact, atol=1e-9 * np.abs(exact).max())
        np.testing.assert_allclose(v[k], exact, atol=1e-9 * np.abs(exact).max())


def relative_differences(coarse, fine):
    """Per output time, the relative L2 difference of (u, v) of ``coarse`` from ``fine`` at the coarse nodes."""
    stride = fine[0].shape[-1] // coarse[0].shape[-1]
    on_coarse = [f[:, ::stride, ::stride] for f in fine]
    square = lambda fields: sum(np.sum(f**2, axis=(1, 2)) for f in fields)  # noqa: E731
    return np.sqrt(square([c - f for c, f in zip(coarse, on_coarse)]) / square(on_coarse))


def test_the_solver_converges_on_the_drawn_fields_before_the_fronts_form():
    """Fronts form at about t = 0.03 (the steepest slope of the drawn fields is about 38); before, the error
    falls by orders of magnitude with N (there it is RK4's: dt is proportional to 1 / N)."""
    times = [0.0, 0.005, 0.01]
    solutions = [reference.burgers2d_spectral(n, times) for n in (64, 128, 256)]
    first, second = relative_differences(*solutions[:2]), relative_differences(*solutions[1:])
    assert first[0] < 1e-14 and second[0] < 1e-14  # the drawn fields, to rounding
    assert first.max() < 2e-6 and second.max() < first.max() / 8
    nodes = np.arange(64) / 64
    np.testing.assert_allclose(solutions[0][0][0], reference.initial_uv(*np.meshgrid(nodes, nodes, indexing="ij"))[0],
                               atol=1e-12)  # fmt: skip


@pytest.mark.slow
def test_the_solver_converges_over_the_whole_horizon():
    """N against 2N at the 11 test times (about four minutes on 2 cores): 128 / 256 / 512 differ by 2.8e-2 and
    5.8e-3 over all times (docs/pinnacle.md), the difference falling by more than four when N doubles."""
    solutions = [reference.burgers2d_spectral(n, reference.TEST_TIMES) for n in (128, 256, 512)]
    first, second = relative_differences(*solutions[:2]), relative_differences(*solutions[1:])
    assert np.sqrt(np.mean(second**2)) < 1e-2 and second.max() < 2e-2
    assert np.sqrt(np.mean(first**2)) > 4 * np.sqrt(np.mean(second**2))


def test_the_test_points_tile_the_period():
    values = np.arange(2 * 8 * 8, dtype=float).reshape(2, 8, 8)
    tiled = reference.tile(values, 8, 0.25)
    assert tiled.shape == (2, 17, 17)
    np.testing.assert_array_equal(tiled[:, 4], tiled[:, 0])  # x = 1 is x = 0
    np.testing.assert_array_equal(tiled[1, 1, 3], values[1, 2, 6])
    points = reference.grid_points(0.25, np.array([0.0, 1.0]))
    assert points.shape == (2 * 17 * 17, 3)
    np.testing.assert_allclose(points[17 * 17 + 1 * 17 + 3], [0.25, 0.75, 1.0])  # [k_t, ix, iy]
    with pytest.raises(ValueError, match="multiple"):
        reference.tile(values, 8, 0.1)
