"""The finite-difference references of laplace_holes and poisson_lshape: refinement studies and checks."""

import numpy as np
import pytest

from pinn_examples import fd_references as fd


def relative_l2(a, b):
    inside = np.isfinite(b)
    return float(np.sqrt(np.sum((a[inside] - b[inside]) ** 2) / np.sum(b[inside] ** 2)))


def richardson(solutions):
    """Observed order and the error estimate of the finest of three grids (h, h/2, h/4)."""
    coarse, middle = relative_l2(solutions[0], solutions[2]), relative_l2(solutions[1], solutions[2])
    d1, d2 = relative_l2(solutions[0], solutions[1]), relative_l2(solutions[1], solutions[2])
    order = np.log2(d1 / d2)
    assert coarse > middle, "the error shrinks with h"
    return order, d2 / (2**order - 1)


def test_lshape_reference_error_is_ten_times_below_the_target():
    grids = [fd.on_test_grid(*fd.poisson_lshape_fd(n), points=101)[2] for n in (50, 100, 200)]
    order, error = richardson(grids)
    assert 1.2 < order < 1.5, "about h^(4/3): the re-entrant corner's r^(2/3) singularity"
    assert error < 1e-3, f"the n = 200 reference (used by poisson_lshape) is off by ~{error:.1e}, target 1e-2"


def test_lshape_reference_symmetry_boundary_and_nan_outside():
    x, y, u = fd.poisson_lshape_fd(20)
    np.testing.assert_allclose(u, u.T, atol=1e-14, equal_nan=True)  # the L is symmetric about y = x
    outside = (x[:, None] > 0) & (y[None, :] > 0)
    assert np.isnan(u[outside]).all() and np.isfinite(u[~outside]).all()
    np.testing.assert_array_equal(u[0], 0.0)
    np.testing.assert_array_equal(u[20, 20:], 0.0)  # the re-entrant edge x = 0, y >= 0
    assert np.all(u[np.isfinite(u)] >= 0.0) and 0.14 < np.nanmax(u) < 0.16


def test_holes_reference_error_is_ten_times_below_the_target():
    grids = [fd.on_test_grid(*fd.laplace_holes_fd(n), points=101)[2] for n in (100, 200, 400)]
    order, error = richardson(grids)
    assert 1.8 < order < 2.2, "Shortley-Weller is second order"
    assert error < 5e-4, f"the n = 400 reference (used by laplace_holes) is off by ~{error:.1e}, target 5e-3"


def test_holes_scheme_is_second_order_for_a_harmonic_polynomial():
    exact = lambda x, y: x**3 - 3 * x * y**2 + 0.5 * x * y
    errors = []
    for n in (40, 80):
        x, y, u = fd.laplace_holes_fd(n, boundary=exact)
        truth = exact(x[:, None], y[None, :])
        errors.append(np.nanmax(np.abs(u - truth)))
    assert errors[1] < 1e-5
    assert errors[0] / errors[1] > 3.0, "second order"


def test_holes_reference_is_unchanged_by_the_general_solver():
    """laplace_holes_fd is a call of poisson_holes_fd: the numbers of the code before it (bit-identical here;
    a tolerance for other BLAS/SuperLU builds)."""
    u = fd.laplace_holes_fd(40)[2]
    expected = {(20, 20): 0.23427459383219437, (12, 20): 0.26412871386028947, (7, 12): 0.01863448815643319}
    expected[(3, 3)] = 0.6846992852860998  # next to the corner
    np.testing.assert_allclose([u[key] for key in expected], list(expected.values()), rtol=1e-13)
    np.testing.assert_allclose(np.nansum(u), 704.5275142604012, rtol=1e-13)


def test_holes_reference_symmetry_maximum_principle_and_nan_in_holes():
    x, y, u = fd.laplace_holes_fd(40)
    np.testing.assert_allclose(u, u[::-1], atol=1e-12, equal_nan=True)
    np.testing.assert_allclose(u, u.T, atol=1e-12, equal_nan=True)
    finite = u[np.isfinite(u)]
    assert finite.min() >= 0.0 and finite.max() <= 1.0
    np.testing.assert_array_equal(u[0], 1.0)
    assert np.isnan(u[8, 8]) and np.isnan(u[32, 32])  # the centres (-0.3, -0.3), (0.3, 0.3)
    assert u[12, 8] == 0.0  # (-0.2, -0.3) lies on a circle


def test_on_test_grid_needs_an_aligned_fine_grid():
    x = np.linspace(0, 1, 11)
    assert fd.on_test_grid(x, x, np.zeros((11, 11)), 6)[2].shape == (6, 6)
    with pytest.raises(ValueError, match="multiple of 3"):
        fd.on_test_grid(x, x, np.zeros((11, 11)), 4)


def test_coarse_grids_are_refused():
    with pytest.raises(ValueError, match="n >= 20"):
        fd.laplace_holes_fd(10)
    with pytest.raises(ValueError, match="n >= 2"):
        fd.poisson_lshape_fd(1)


def test_poisson_holes_scheme_is_second_order_with_reaction_and_source():
    """A manufactured solution on poisson2d_cg's domain: -Laplace(u) + 64 u = f, u given on every boundary."""
    exact = lambda x, y: np.sin(2 * x) * np.cos(3 * y) + x * y**2
    source = lambda x, y: 13 * np.sin(2 * x) * np.cos(3 * y) - 2 * x + fd.CG_K2 * exact(x, y)
    errors = []
    for n in (20, 40, 80):
        x, y, u = fd.poisson_holes_fd(n, (-1, -1), (1, 1), fd.CG_DISKS, fd.CG_K2, source, exact, exact)
        truth = exact(x[:, None], y[None, :])
        inside = np.min([np.hypot(x[:, None] - cx, y[None, :] - cy) - r for cx, cy, r in fd.CG_DISKS], axis=0) < -1e-9
        np.testing.assert_array_equal(np.isnan(u), inside)
        errors.append(np.nanmax(np.abs(u - truth)))
    orders = np.log2(np.array(errors[:-1]) / np.array(errors[1:]))
    assert np.all((1.8 < orders) & (orders < 2.3)), f"Shortley-Weller with k2 u is second order: {orders}"
    assert errors[-1] < 2e-5


def test_poisson_holes_solves_a_constant_exactly_and_the_disks_get_their_values():
    c = 0.7
    x, y, u = fd.poisson_holes_fd(20, (-1, -1), (1, 1), fd.CG_DISKS, 64.0, lambda x, y: 64.0 * c + 0 * x, c, c)
    np.testing.assert_allclose(u[np.isfinite(u)], c, atol=1e-12)
    x, y, u = fd.poisson2d_cg_fd(20)
    assert x.shape == (41,) and np.isnan(u[28, 28]) and np.isnan(u[10, 30])  # centres (0.4, -0.4), (-0.5, 0.5)
    np.testing.assert_array_equal(u[0], fd.CG_EDGES)
    assert u[16, 8] == u[28, 20] == fd.CG_CIRCLES  # (-0.2, -0.6) and (0.4, 0) lie on circles
    assert np.nanmin(u) < -0.5 and np.nanmax(u) > 1.2, "the source drives u beyond its boundary values"


def test_poisson2d_cg_reference_converges_well_below_the_target():
    grids = [fd.on_test_grid(*fd.cached("cg2d", n), points=201)[2] for n in (100, 200, 400)]
    order, error = richardson(grids)
    assert 1.8 < order < 2.2, "Shortley-Weller is second order"
    assert relative_l2(grids[1], grids[2]) < 5e-4, "h and h/2 agree to a tenth of the target 5e-3"
    assert error < 1e-4, f"the n = 400 reference (used by poisson2d_cg) is off by ~{error:.1e}"


def test_poisson_holes_refuses_bad_input():
    disks = fd.CG_DISKS
    with pytest.raises(ValueError, match="whole cells"):
        fd.poisson_holes_fd(20, (-1, -1), (1.01, 1), disks)
    with pytest.raises(ValueError, match="not strictly inside"):
        fd.poisson_holes_fd(20, (-1, -1), (1, 1), [(0.9, 0.0, 0.2)])
    with pytest.raises(ValueError, match="k2 >= 0"):
        fd.poisson_holes_fd(20, (-1, -1), (1, 1), disks, k2=-1.0)
    with pytest.raises(ValueError, match="n >= 40"):
        fd.poisson_holes_fd(20, (-1, -1), (1, 1), [(0.0, 0.0, 0.05)])


def _huge_header_archive(path, name="u"):
    """An .npz whose member ``name`` claims (10**9, 1000) float64 but holds 64 bytes (np.load: MemoryError)."""
    import io
    import zipfile

    member = io.BytesIO()
    np.lib.format.write_array_header_1_0(member, {"descr": "<f8", "fortran_order": False, "shape": (10**9, 1000)})
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr(f"{name}.npy", member.getvalue() + bytes(64))


def test_unusable_reference_caches_are_computed_again_with_a_warning(tmp_path, monkeypatch, caplog):
    """A header claiming a huge shape (MemoryError), a directory at the cache path and a cache of other shapes
    are computed again with a warning; each ended in a traceback or was used silently (issue 46 item 11)."""
    monkeypatch.setenv("HODIFF_CACHE", str(tmp_path))
    calls = []

    def compute():
        calls.append(1)
        return {"u": np.arange(6.0).reshape(2, 3)}

    path = tmp_path / "ref.npz"
    _huge_header_archive(path)
    with caplog.at_level("WARNING"):
        saved = fd.cached_on_disk("ref.npz", ("u",), compute, {"u": (2, None)})
    np.testing.assert_array_equal(saved["u"], compute()["u"])
    assert "claims shape (1000000000, 1000)" in caplog.text and "computing the reference again" in caplog.text
    assert fd.read_cache(str(path), ("u",)) is not None, "the good result replaced the corrupt file"
    caplog.clear()
    np.savez(path, u=np.zeros((4, 3)))  # a valid cache of other shapes: recomputed, not used
    with caplog.at_level("WARNING"):
        saved = fd.cached_on_disk("ref.npz", ("u",), compute, {"u": (2, None)})
    assert saved["u"].shape == (2, 3) and "u of shape (4, 3), not the expected (2, any)" in caplog.text
    caplog.clear()
    path.unlink()
    path.mkdir()  # a directory at the cache path: read and write both fail, the reference is still returned
    with caplog.at_level("WARNING"):
        saved = fd.cached_on_disk("ref.npz", ("u",), compute)
    assert saved["u"].shape == (2, 3) and "is not a file" in caplog.text and "cannot be written" in caplog.text
    assert path.is_dir()


def test_a_cache_setting_naming_a_file_computes_with_a_warning(tmp_path, monkeypatch, caplog):
    afile = tmp_path / "cache.txt"
    afile.write_text("not a directory")
    monkeypatch.setenv("HODIFF_CACHE", str(afile))
    with caplog.at_level("WARNING"):
        saved = fd.cached_on_disk("ref.npz", ("u",), lambda: {"u": np.ones(3)})
    np.testing.assert_array_equal(saved["u"], np.ones(3))
    assert f"HODIFF_CACHE={afile} is not a directory" in caplog.text
    assert afile.read_text() == "not a directory"


def test_the_grid_references_check_their_cached_shapes(tmp_path, monkeypatch, caplog):
    monkeypatch.setenv("HODIFF_CACHE", str(tmp_path))
    fd.cached.cache_clear()
    np.savez(tmp_path / "fd_lshape_4.npz", x=np.zeros(3), y=np.zeros(3), u=np.zeros((3, 3)))
    with caplog.at_level("WARNING"):
        x, y, u = fd.cached("lshape", 4)
    fd.cached.cache_clear()
    assert u.shape == (9, 9) and "not the expected (9,)" in caplog.text


def test_the_cavity_cache_is_recomputed_when_unusable(tmp_path, caplog):
    from pinn_examples import cavity_reference

    axis = np.linspace(0.0, 1.0, 5)
    good = cavity_reference.lid_driven_cavity(axis, axis, cells=8, cache=str(tmp_path))
    path = next(tmp_path.glob("cavity_*.npz"))
    np.savez(path, u=np.zeros((3, 3)), v=np.zeros((3, 3)), p=np.zeros((3, 3)))
    with caplog.at_level("WARNING"):
        again = cavity_reference.lid_driven_cavity(axis, axis, cells=8, cache=str(tmp_path))
    assert "not the expected (9, 10)" in caplog.text
    np.testing.assert_allclose(again["u"], good["u"])
    path.unlink()
    path.mkdir()
    caplog.clear()
    with caplog.at_level("WARNING"):
        again = cavity_reference.lid_driven_cavity(axis, axis, cells=8, cache=str(tmp_path))
    assert "cannot be written" in caplog.text
    np.testing.assert_allclose(again["u"], good["u"])
