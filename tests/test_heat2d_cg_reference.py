"""The Heat2d-CG finite-element reference: its mesh and boundary, second order in the time step and in h,
its own error estimate, the cache, bad input."""

import numpy as np
import pytest

from pinn_examples import heat2d_cg_reference as ref


def relative(a, b):
    return np.sqrt(np.mean((a - b) ** 2) / np.mean(b**2))


def test_the_mesh_covers_the_domain_and_its_boundary_has_the_right_length_and_data():
    nodes, triangles = ref.heat_mesh(5)
    corners = nodes[triangles]
    area = 0.5 * np.cross(corners[:, 1] - corners[:, 0], corners[:, 2] - corners[:, 0])
    holes = sum(np.pi * r**2 for _, _, r in ref.DISKS)
    assert np.all(area > 0)
    assert area.sum() == pytest.approx(16 * 24 - holes, rel=2e-3)  # inscribed polygons: O(h^2) more area
    edges, g = ref.boundary_edges(nodes, triangles, 1 / 5)
    length = np.linalg.norm(nodes[edges[:, 1]] - nodes[edges[:, 0]], axis=1)
    for value, exact in ((5.0, 11 * 2 * np.pi), (1.0, 6 * 2 * np.pi * 0.4), (0.1, 80.0)):
        assert length[g == value].sum() == pytest.approx(exact, rel=1e-2)
    assert set(np.unique(g)) == {0.1, 1.0, 5.0}


def test_second_order_in_the_time_step():
    u = {steps: ref.heat_fem(5, steps)[2] for steps in (12, 24, 48)}
    order = np.log2(relative(u[12], u[24]) / relative(u[24], u[48]))  # u_dt - u_dt/2 ~ C dt^p
    assert 1.8 < order < 2.3, order
    assert relative(u[24], u[48]) < 1e-4  # the reference's 48 steps are far from limiting it


def test_heat_flows_in_from_the_holes_and_the_solution_grows_with_time():
    nodes, triangles, u = ref.heat_fem(5, 12)
    distance = ref.distance_to_circles(nodes[:, 0], nodes[:, 1])
    assert np.all(np.diff(u.mean(axis=1)) > 0)  # it only heats up
    near, far = u[-1][distance < 0.05].mean(), u[-1][distance > 2.5].mean()
    assert 2.0 < near and far < 1.0
    # at t = 0.0039 the heat sits in a layer of width ~sqrt(t): u ~ 2 g sqrt(t / pi) at a large circle
    large = np.abs(distance) < 1e-9
    inner = (distance > 1.0) & (np.abs(nodes[:, 0]) < 7.0) & (np.abs(nodes[:, 1]) < 11.0)
    assert np.all(u[0][inner] < 1e-4)
    assert u[0][large].max() == pytest.approx(2 * 5 * np.sqrt(ref.TEST_TIMES[0] / np.pi), rel=0.35)


@pytest.mark.slow
def test_second_order_in_h_and_the_references_own_error():
    """h = 1/5, 1/10, 1/20 at the test points (about 3 minutes); the reference (h = 1/20) is the finest."""
    points = ref.test_points()
    space = points[: len(points) // len(ref.TEST_TIMES), :2]
    u = {n: ref.at_points(*ref.heat_fem(n, ref.REFERENCE_STEPS), space) for n in (5, 10, 20)}
    coarse, fine = relative(u[5], u[10]), relative(u[10], u[20])
    order = np.log2(coarse / fine)
    assert 1.8 < order < 2.8, order
    estimate = fine / (2**order - 1)  # Richardson: the error of h = 1/20
    assert estimate < ref.REFERENCE_ERROR, estimate
    cached = ref.heat2d_cg_reference()
    np.testing.assert_allclose(cached["u"], u[20].ravel(), rtol=0, atol=1e-12)


def test_the_reference_is_cached_on_disk(tmp_path, monkeypatch):
    monkeypatch.setenv("HODIFF_CACHE", str(tmp_path))
    first = ref.heat2d_cg_reference.__wrapped__(5, 12)
    assert (tmp_path / "fem_heat2d_cg_5_12.npz").exists()
    monkeypatch.setattr(ref, "heat_fem", lambda *args: pytest.fail("solved again instead of reading the cache"))
    second = ref.heat2d_cg_reference.__wrapped__(5, 12)
    for name in ("points", "u", "x", "y", "picture"):
        np.testing.assert_array_equal(first[name], second[name])
    assert first["points"].shape == (len(first["u"]), 3)
    assert np.isnan(first["picture"]).any() and np.isfinite(first["u"]).all()


def test_bad_input():
    with pytest.raises(ValueError, match="n=3 must be an integer >= 5"):
        ref.heat_mesh(3)
    with pytest.raises(ValueError, match="steps=10 must be a positive multiple of 12"):
        ref.time_mesh(10)
    with pytest.raises(ValueError, match=r"times \[0.3\] are not times of time_mesh\(12\)"):
        ref.heat_fem(5, 12, times=(0.3,))
