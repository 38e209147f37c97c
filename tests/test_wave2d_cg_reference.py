"""The Wave2d-CG reference: PINNacle's wave speed, leapfrog's order, its conserved energy on the reflecting walls,
the form it solves, and its cache."""

import numpy as np
import pytest

from pinn_examples import heat2d_vc_reference
from pinn_examples import wave2d_cg_reference as ref


def relative(a, b):
    return np.linalg.norm(a - b) / np.linalg.norm(b)


def test_the_wave_speed_is_12_where_pinnacles_field_is_positive_and_linear_between_nodes():
    nodes = ref.coefficient_nodes()
    np.testing.assert_array_equal(nodes == 12.0, heat2d_vc_reference.coefficient_table().T == 2.0)
    assert set(np.unique(nodes)) == {1.0, 12.0}
    h = 2.0 / 255
    ix, iy = np.argwhere(nodes[:-1, :] != nodes[1:, :])[0]  # a jump along x
    x, y = -1.0 + ix * h, -1.0 + iy * h
    np.testing.assert_allclose(ref.wave_speed_squared(np.array([x, x + h]), np.array([y, y])), nodes[ix : ix + 2, iy])
    middle = ref.wave_speed_squared(np.array([x + h / 2]), np.array([y]))
    np.testing.assert_allclose(middle, 6.5)  # halfway up the jump, as griddata's linear lookup


def test_the_order_in_h_on_a_short_horizon():
    """1.4 measured while the kink that the wall makes of the Gaussian (its slope is not zero at x = -1) dominates;
    about 1.9 over the whole horizon (the slow test)."""
    times = np.array([0.0, 0.15, 0.3])
    u = {m: ref.wave2d_cg_fd(m, times)[1][:, ::m, ::m] for m in (1, 2, 4)}
    change, finer_change = relative(u[1][1:], u[2][1:]), relative(u[2][1:], u[4][1:])
    order = np.log2(change / finer_change)  # e_m ~ C h^p: (u_1 - u_2) / (u_2 - u_4) = 2^p
    assert finer_change < 2e-3 and 1.3 < order < 2.5, (change, finer_change, order)
    np.testing.assert_allclose(u[1][0], ref.initial(*np.meshgrid(*2 * [np.linspace(-1, 1, 256)], indexing="ij")))


def test_the_walls_reflect_the_energy_is_conserved_and_the_two_forms_agree_for_constant_speed(monkeypatch):
    """u_tt = c (u_xx + u_yy) conserves sum(u_t^2 / c + |grad u|^2) with zero-flux walls (the leapfrog's discrete
    energy to O(dt^2)); with c constant the divergence form is the same equation."""
    times = np.linspace(0.0, 2.0, 41)
    nodes, u = ref.wave2d_cg_fd(1, times)
    h, dt = nodes[1] - nodes[0], times[1] - times[0]
    c = ref.wave_speed_squared(*np.meshgrid(nodes, nodes, indexing="ij"))

    def energy(k):  # the velocity by central differences between the saved times, the gradient at time k
        velocity = (u[k + 1] - u[k - 1]) / (2.0 * dt)
        gradient = np.diff(u[k], axis=0)[:, :-1] ** 2 + np.diff(u[k], axis=1)[:-1, :] ** 2
        return (np.sum(velocity**2 / c) + np.sum(gradient) / h**2) * h**2

    energies = np.array([energy(k) for k in range(5, 40, 5)])
    assert np.ptp(energies) / energies.mean() < 2e-2, energies  # the walls neither absorb nor radiate
    monkeypatch.setattr(ref, "wave_speed_squared", lambda x, y: np.full(np.shape(x), 3.0))
    same = [ref.wave2d_cg_fd(1, times[:6], form=form)[1] for form in ref.FORMS]
    np.testing.assert_allclose(same[0], same[1], atol=1e-12)
    with pytest.raises(ValueError, match="form='flux' is not one of"):
        ref.wave2d_cg_fd(1, times, form="flux")


def test_the_cached_reference_is_read_back(tmp_path, monkeypatch):
    small = lambda m, times, **kw: (np.linspace(-1, 1, 255 * m + 1), np.ones((len(times), 255 * m + 1, 255 * m + 1)))  # noqa: E731
    monkeypatch.setattr(ref, "wave2d_cg_fd", small)
    monkeypatch.setenv("HODIFF_CACHE", str(tmp_path))
    ref.wave2d_cg_reference.cache_clear()
    try:
        first = ref.wave2d_cg_reference()
        assert (tmp_path / "wave2d_cg_reference_m2.npz").is_file()
        assert first["points"].shape == (26 * 52 * 52, 3) and first["picture"].shape == (256, 256)
        monkeypatch.setattr(ref, "wave2d_cg_fd", None)  # not called again: read from the cache
        ref.wave2d_cg_reference.cache_clear()
        np.testing.assert_array_equal(ref.wave2d_cg_reference()["u"], first["u"])
    finally:
        ref.wave2d_cg_reference.cache_clear()


@pytest.mark.slow
def test_the_extrapolated_reference_against_coarser_grids():
    """The reference (m = 2 and 4 extrapolated) against m = 4 alone and against m = 1 and 2 extrapolated, over the
    whole horizon: 5.6e-3 and 8.5e-3 measured, the reference's own error estimate (docs/pinnacle.md)."""
    u = {m: ref.wave2d_cg_fd(m, ref.TEST_TIMES)[1][:, ::m, ::m] for m in (1, 2, 4)}
    reference, coarser = (4.0 * u[4] - u[2]) / 3.0, (4.0 * u[2] - u[1]) / 3.0
    assert relative(u[4], reference) < 1e-2 and relative(coarser, reference) < 1.5e-2
    np.testing.assert_allclose(
        ref.wave2d_cg_reference()["u"], reference[:, :: ref.TEST_STRIDE, :: ref.TEST_STRIDE].ravel()
    )
