"""hodiff.pinn.flux: fluxes through cuts and closed polygons against closed forms, and bad input."""

import numpy as np
import pytest
import tensorflow as tf

from hodiff import pinn
from hodiff.pinn.flux import gradient_field, neumann_balance, polygon_flux, segment_flux

PLATE = pinn.Rectangle(("x", "y"), (0, 0), (2, 1)) - pinn.Disk((0.5, 0.5), 0.2)


def grad_xy(points):  # grad (x y) = (y, x): harmonic, so no sources
    return np.stack([points[:, 1], points[:, 0]], axis=1)


def test_segment_flux_of_a_harmonic_field_matches_its_closed_form():
    # x = a: integral of q_x = y over [0, 1]: 1/2, whatever a
    for a in (0.1, 1.0, 1.9):
        assert segment_flux(grad_xy, (a, 0.0), (a, 1.0)) == pytest.approx(0.5, abs=1e-13)
    # reversed: the normal turns over, and so does the flux
    assert segment_flux(grad_xy, (1.0, 1.0), (1.0, 0.0)) == pytest.approx(-0.5, abs=1e-13)
    # a slanted cut from (0, 0) to (1, 1), normal (1, -1)/sqrt 2: integral (y - x)/sqrt 2 ds = 0
    assert segment_flux(grad_xy, (0.0, 0.0), (1.0, 1.0)) == pytest.approx(0.0, abs=1e-13)
    # x = 0.5 crosses the disk on y in (0.3, 0.7): integral of y over [0, 0.3] and [0.7, 1] = 0.3
    assert segment_flux(grad_xy, (0.5, 0.0), (0.5, 1.0), domain=PLATE) == pytest.approx(
        0.3, abs=1e-8
    )  # ends to contains() tolerance
    # x = 0.6 crosses it on 0.5 +- sqrt(0.04 - 0.01)
    half = np.sqrt(0.03)
    expected = 0.5 - ((0.5 + half) ** 2 - (0.5 - half) ** 2) / 2
    assert segment_flux(grad_xy, (0.6, 0.0), (0.6, 1.0), domain=PLATE) == pytest.approx(expected, abs=1e-8)


def test_polygon_flux_is_zero_for_a_harmonic_field_and_the_area_for_a_unit_source():
    square = [(0.1, 0.2), (0.9, 0.2), (0.9, 0.8), (0.1, 0.8)]
    assert polygon_flux(grad_xy, square) == pytest.approx(0.0, abs=1e-13)
    source = lambda p: np.stack([p[:, 0], np.zeros(len(p))], axis=1)  # noqa: E731  div = 1
    triangle = [(0.0, 0.0), (2.0, 0.0), (0.0, 1.0)]
    assert polygon_flux(source, triangle) == pytest.approx(1.0, abs=1e-13)
    with pytest.raises(ValueError, match="clockwise"):
        polygon_flux(source, triangle[::-1])
    with pytest.raises(ValueError, match="3 or more"):
        polygon_flux(source, triangle[:2])


def test_gradient_field_of_a_solution_and_of_a_trainer():
    solution = lambda x: tf.stack([x[:, 0] ** 2 - x[:, 1] ** 2, x[:, 0] * x[:, 1]], axis=1)  # noqa: E731
    points = np.array([[0.5, 0.25], [1.0, -2.0]])
    np.testing.assert_allclose(gradient_field(solution)(points), 2 * points * [1, -1], atol=1e-12)
    np.testing.assert_allclose(gradient_field(solution, field=1)(points), points[:, ::-1], atol=1e-12)
    # the heat flux of u = 1 - x / 2 through x = 1 is 1/2 per unit height
    heat = lambda p: -gradient_field(solution)(p) / 4 - [[0.5, 0.0]] + gradient_field(solution)(p) / 4  # noqa: E731
    assert segment_flux(heat, (1.0, 0.0), (1.0, 1.0)) == pytest.approx(-0.5, abs=1e-12)
    with pytest.raises(ValueError, match="field='v' is not a field"):
        gradient_field(solution, field="v")


def test_segment_flux_rejects_bad_input():
    with pytest.raises(ValueError, match="same point"):
        segment_flux(grad_xy, (0.0, 0.0), (0.0, 0.0))
    with pytest.raises(ValueError, match="finite 2-D points"):
        segment_flux(grad_xy, (0.0, 0.0, 0.0), (1.0, 1.0))
    with pytest.raises(ValueError, match="vectors of the same shape"):
        segment_flux(lambda p: p[:, 0], (0.0, 0.0), (1.0, 0.0))


def test_domain_and_boundary_measures_match_their_closed_forms():
    square = pinn.Rectangle(("x", "y"), (0, 0), (2, 1))
    assert square.measure() == 2.0 and square.boundary_measure() == 6.0
    assert square.boundary_measure(where="left") == 1.0 and square.boundary_measure(where=["top", "bottom"]) == 4.0
    sides = lambda x: np.isclose(x["x"], 0.0) | np.isclose(x["x"], 2.0)  # noqa: E731
    assert square.boundary_measure(where=sides) == pytest.approx(2.0, rel=1e-3)
    assert PLATE.measure() == pytest.approx(2.0 - np.pi * 0.04, rel=1e-3)
    assert PLATE.boundary_measure() == pytest.approx(6.0 + 2 * np.pi * 0.2, rel=1e-3)
    assert pinn.Disk((0, 0), 1.0).measure() == pytest.approx(np.pi, rel=1e-3)
    assert pinn.Disk((0, 0), 1.0).boundary_measure() == pytest.approx(2 * np.pi, rel=1e-12)
    line = pinn.Interval("x", 0.0, 3.0)
    assert line.measure() == 3.0 and line.boundary_measure() == 2.0  # two end points
    assert (line * pinn.TimeDomain("t", 0.0, 5.0)).measure() == 3.0  # the spatial part only
    rng = np.random.default_rng(0)
    cloud = pinn.PointCloud(rng.uniform(size=(64, 2)), rng.uniform(size=(8, 2)), np.tile([1.0, 0.0], (8, 1)))
    with pytest.raises(ValueError, match="PointCloud.boundary_measure: a point cloud has no analytic boundary"):
        cloud.boundary_measure()
    only_neumann = pinn.Problem(
        cloud,
        needs=("u_xx", "u_yy"),
        residual=lambda d, x, p: d["u_xx"] + d["u_yy"] + 1.0,
        conditions=[pinn.Neumann(0.0, count=4)],
    )
    assert neumann_balance(only_neumann) is None  # nothing to integrate over: no finding, no error


def laplace_problem(domain, source, conditions, a=1.0, needs=None):
    second = [f"u_{c}{c}" for c in domain.space]
    return pinn.Problem(
        domain,
        needs=tuple(needs or second),
        residual=lambda d, x, p: a * tf.add_n([d[name] for name in second]) + source(x),
        conditions=conditions,
    )


def test_neumann_balance_finds_the_mismatch_of_sources_and_boundary_fluxes():
    """A pure-Neumann problem a laplacian(u) + s = 0, du/dn = g has a solution only when a integral(g) + integral(s)
    = 0 (issue 46 item 5): the integrals against closed forms, balanced and not."""
    square = pinn.Rectangle(("x", "y"), (0, 0), (1, 1))
    one = lambda x: tf.ones_like(x["x"])  # noqa: E731
    heated = neumann_balance(laplace_problem(square, one, [pinn.Neumann(0.0, count=8)]))
    assert heated["sources"] == pytest.approx(1.0, abs=1e-12) and heated["fluxes"] == 0.0
    assert heated["mismatch"] == pytest.approx(1.0) and not heated["balanced"] and heated["conditions"] == ["neumann"]
    assert neumann_balance(laplace_problem(square, one, [pinn.Neumann(-0.25, count=8)]))["balanced"]
    # s = 2 pi^2 cos(pi x) cos(pi y) integrates to 0: balanced with insulated walls (the problem of the L-BFGS test)
    wave = lambda x: 2 * np.pi**2 * tf.cos(np.pi * x["x"]) * tf.cos(np.pi * x["y"])  # noqa: E731
    assert neumann_balance(laplace_problem(square, wave, [pinn.Neumann(0.0, count=8)]))["balanced"]
    # a disk, a = 0.5, s = 1, g = 1: sources pi, fluxes 0.5 * 2 pi
    disk = pinn.Disk((0, 0), 1.0)
    check = neumann_balance(laplace_problem(disk, one, [pinn.Neumann(1.0, count=8)], a=0.5))
    assert check["coefficient"] == 0.5 and check["fluxes"] == pytest.approx(np.pi, rel=1e-12)
    assert check["sources"] == pytest.approx(np.pi, rel=1e-3) and check["mismatch"] == pytest.approx(2 * np.pi, 1e-3)
    assert neumann_balance(laplace_problem(disk, one, [pinn.Neumann(-1.0, count=8)], a=0.5))["balanced"]
    # pieces with their own fluxes, a periodic pair adding nothing, a function g
    sides = pinn.Neumann(0.0, count=8, where=["left", "right"], name="sides")
    lids = pinn.Neumann(0.5, count=8, where=["top", "bottom"], name="lids")
    check = neumann_balance(laplace_problem(square, one, [sides, lids]))
    assert check["fluxes"] == pytest.approx(1.0) and check["mismatch"] == pytest.approx(2.0) and not check["balanced"]
    assert check["conditions"] == ["sides", "lids"]
    varying = pinn.Neumann(lambda x: -x["x"], count=8, where=["top", "bottom"], name="lids")  # integral: -1
    check = neumann_balance(laplace_problem(square, one, [pinn.Periodic("x", count=8), varying]))
    assert check["fluxes"] == pytest.approx(-1.0, rel=1e-3) and check["balanced"]
    # 1-D: u'' = x on [0, 2] needs u'(2) - u'(0) = 2: du/dn = 1 at both ends
    line = pinn.Interval("x", 0.0, 2.0)
    check = neumann_balance(laplace_problem(line, lambda x: -x["x"], [pinn.Neumann(1.0, count=2)]))
    assert check["sources"] == pytest.approx(-2.0, rel=1e-6) and check["fluxes"] == 2.0 and check["balanced"]
    # another form (an advection term): the case is named, without numbers
    advected = pinn.Problem(
        square,
        needs=("u_x", "u_xx", "u_yy"),
        residual=lambda d, x, p: d["u_xx"] + d["u_yy"] + d["u_x"] + 1.0,
        conditions=[pinn.Neumann(0.0, count=8)],
    )
    check = neumann_balance(advected)
    assert check["conditions"] == ["neumann"] and check["mismatch"] is None and check["balanced"] is None
    # not pure-Neumann: a value anywhere, a free part of the boundary, u in the residual
    assert neumann_balance(laplace_problem(square, one, [pinn.Dirichlet(0.0, count=8)])) is None
    assert neumann_balance(laplace_problem(square, one, [pinn.Neumann(0.0, count=8, where="left")])) is None
    helmholtz = pinn.Problem(
        square,
        needs=("u", "u_xx", "u_yy"),
        residual=lambda d, x, p: d["u_xx"] + d["u_yy"] - d["u"] + 1.0,
        conditions=[pinn.Neumann(0.0, count=8)],
    )
    assert neumann_balance(helmholtz) is None
