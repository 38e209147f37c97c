"""The finite-element reference of insulated_plate: refinement study, flux, maximum principle, cache."""

import numpy as np
import pytest

from pinn_examples import plate_reference as fem


def relative_l2(a, b):
    inside = np.isfinite(b)
    return float(np.sqrt(np.sum((a[inside] - b[inside]) ** 2) / np.sum(b[inside] ** 2)))


@pytest.fixture(scope="module")
def solutions():
    results = {}
    for n in (40, 80, fem.REFERENCE_N):
        nodes, triangles, u, flux = fem.plate_fem(n)
        grid = fem.on_grid(nodes, triangles, u, fem.TEST_AXES["x"], fem.TEST_AXES["y"])
        results[n] = (grid, flux, nodes, triangles, u)
    return results


def test_reference_converges_and_its_error_is_far_below_the_target(solutions):
    coarse, middle, fine = (solutions[n][0] for n in (40, 80, fem.REFERENCE_N))
    d1, d2 = relative_l2(coarse, middle), relative_l2(middle, fine)
    order = np.log2(d1 / d2)
    assert 1.0 < order < 2.2, "between h^(4/3) (the re-entrant corners' r^(2/3)) and h^2"
    error = d2 / (2**order - 1)  # Richardson: the finest grid's error
    assert error < 3e-4, f"the n = {fem.REFERENCE_N} reference is off by ~{error:.1e}; the example's target is 1e-2"
    fluxes = [solutions[n][1] for n in (40, 80, fem.REFERENCE_N)]
    assert abs(fluxes[1] - fluxes[2]) < abs(fluxes[0] - fluxes[1]) and abs(fluxes[1] - fluxes[2]) < 5e-4
    assert 0.41 < fluxes[2] < 0.43  # less than the 0.5 of the plate without holes: the holes block heat


def test_reference_holds_the_conditions_and_the_maximum_principle(solutions):
    grid, _, nodes, triangles, u = solutions[40]
    np.testing.assert_allclose(u[np.isclose(nodes[:, 0], 0.0)], 1.0)
    np.testing.assert_allclose(u[np.isclose(nodes[:, 0], 2.0)], 0.0)
    assert np.all((u >= -1e-12) & (u <= 1 + 1e-12))
    x, y = np.meshgrid(fem.TEST_AXES["x"], fem.TEST_AXES["y"], indexing="ij")
    assert np.array_equal(np.isnan(grid), fem.in_holes(x, y)), "NaN exactly in the holes"
    corners = nodes[triangles]
    area = 0.5 * np.cross(corners[:, 1] - corners[:, 0], corners[:, 2] - corners[:, 0])
    assert np.all(area > 0) and np.isclose(area.sum(), 2.0 - np.pi * 0.04 - 0.04, rtol=2e-3)
    # zero flux through the top: the field's y-slope at y = 1 is small compared with its x-slope
    top = np.nanmean(np.abs(grid[:, -1] - grid[:, -2])) / np.nanmean(np.abs(np.diff(grid[:, -1])))
    assert top < 0.2


def test_reference_is_cached_on_disk_and_recomputed_when_the_cache_is_bad(tmp_path, monkeypatch):
    monkeypatch.setenv("HODIFF_CACHE", str(tmp_path))
    fem.plate_reference.cache_clear()
    axes, u, flux = fem.plate_reference(40)
    path = tmp_path / "fem_plate_40.npz"
    assert path.exists()
    fem.plate_reference.cache_clear()
    again = fem.plate_reference(40)
    np.testing.assert_array_equal(again[1], u)
    assert again[2] == flux
    path.write_bytes(b"not an archive")
    fem.plate_reference.cache_clear()
    np.testing.assert_array_equal(fem.plate_reference(40)[1], u)
    fem.plate_reference.cache_clear()


def test_mesh_rejects_a_grid_that_misses_the_square():
    with pytest.raises(ValueError, match="multiple of 10"):
        fem.plate_mesh(25)
