"""The Heat2d-VC finite-volume reference: PINNacle's table redrawn from its seed, convergence in h, the exact time
integration against time steps of the whole problem, the flux across the jumps of a, the cache."""

import numpy as np
import pytest
import scipy.sparse
import scipy.sparse.linalg

from pinn_examples import heat2d_vc_reference as ref

COARSE = slice(None, None, 17)  # every 17th node of the table: 16 x 16 nodes, the same kind of field


def relative(a, b):
    return np.sqrt(np.mean((a - b) ** 2) / np.mean(b**2))


def test_the_table_is_the_sign_of_pinnacles_field_redrawn_from_its_seed(tmp_path):
    field = ref.random_field()
    assert field.shape == (256, 256) and abs(field.mean()) < 1e-12 and field.std() == pytest.approx(1.0)
    np.testing.assert_array_equal(ref.coefficient_table(), 1.0 + (field > 0))  # the shipped file
    np.testing.assert_array_equal(ref.coefficient_table(tmp_path), 1.0 + (field > 0))  # no file: redrawn
    np.save(tmp_path / ref.TABLE_FILE, np.zeros((4, 4)))
    with pytest.raises(ValueError, match="restore PINNacle's file"):
        ref.coefficient_table(tmp_path)
    with pytest.raises(ValueError, match="even int"):
        ref.cell_coefficients(3, ref.coefficient_table())


def test_each_table_cell_is_split_into_m_by_m_cells_of_its_value():
    table = ref.coefficient_table()[COARSE, COARSE]
    cells = ref.cell_coefficients(4, table)
    assert cells.shape == (60, 60)
    np.testing.assert_array_equal(cells[2:58:4, 2:58:4], table[1:-1, 1:-1])  # the cells around each inner node
    np.testing.assert_array_equal(cells[:2, :2], np.full((2, 2), table[0, 0]))  # the corner node's quarter cell


def test_second_order_to_first_order_in_h_with_the_error_of_the_reference_grid():
    table = ref.coefficient_table()[COARSE, COARSE]
    times = np.array([0.5, 1.2])
    solutions = {m: ref.at_nodes(ref.heat2d_vc_fv(m, times, table=table), m) for m in (2, 4, 8, 16)}
    errors = [relative(solutions[m], solutions[16]) for m in (2, 4, 8)]
    orders = np.log2(np.array(errors[:-1]) / np.array(errors[1:]))
    assert np.all(orders > 0.9), (errors, orders)
    assert errors[0] < 5e-2  # m = 2 on this table of 15 cells a side; the reference has 17 times finer cells


def test_exact_in_time_against_tr_bdf2_steps_of_the_whole_problem():
    table = ref.coefficient_table()[COARSE, COARSE]
    times = np.array([0.0, 0.1, 0.4, 1.0])
    exact = ref.heat2d_vc_fv(2, times, table=table).reshape(len(times), -1)
    matrix, centres = ref.operator(2, table)
    forcing = ref.source(centres[None, :], centres[:, None]).ravel()
    dt, gamma = 1e-3, 2.0 - np.sqrt(2.0)
    identity = scipy.sparse.identity(matrix.shape[0], format="csc")
    first = scipy.sparse.linalg.splu((identity - 0.5 * gamma * dt * matrix).tocsc())
    second = scipy.sparse.linalg.splu((identity - (1 - gamma) / (2 - gamma) * dt * matrix).tocsc())
    u, stepped = np.zeros(matrix.shape[0]), [np.zeros(matrix.shape[0])]
    f = lambda t: forcing * np.sin(np.pi * t)  # noqa: E731
    for k in range(1000):
        t = k * dt
        middle = first.solve(u + 0.5 * gamma * dt * (matrix @ u + f(t) + f(t + gamma * dt)))
        combined = (middle / gamma - (1 - gamma) ** 2 / gamma * u) / (2 - gamma)
        u = second.solve(combined + (1 - gamma) / (2 - gamma) * dt * f(t + dt))
        if round((k + 1) * dt, 9) in times:
            stepped.append(u.copy())
    np.testing.assert_allclose(exact[0], 0.0, atol=1e-12)  # u = 0 at t = 0
    assert relative(np.array(stepped[1:]), exact[1:]) < 1e-5


def test_the_discrete_flux_is_continuous_across_the_jumps_and_the_pde_holds():
    table = ref.coefficient_table()[COARSE, COARSE]
    times = np.array([1.5, 1.502])
    u = ref.heat2d_vc_fv(2, times, table=table, dt=2e-3)
    matrix, centres = ref.operator(2, table)
    forcing = ref.source(centres[None, :], centres[:, None])
    u_t = (u[1] - u[0]) / 2e-3
    middle = (matrix @ (0.5 * (u[0] + u[1])).ravel()).reshape(u[0].shape) + forcing * np.sin(np.pi * 1.501)
    assert np.abs(u_t - middle).max() < 1e-5 * np.abs(forcing).max()  # the source and the diffusion nearly cancel
    # the flux between two cells of a = 1 and a = 2 is the harmonic mean's: 4/3 (u_right - u_left) / h^2
    a = ref.cell_coefficients(2, table)
    row, column = np.argwhere(a[:, :-1] != a[:, 1:])[0]
    index = row * a.shape[1] + column
    assert matrix[index, index + 1] == pytest.approx(4.0 / 3.0 * a.shape[1] ** 2)


def test_the_cached_reference_is_read_back(tmp_path, monkeypatch):
    small = lambda m, times, **kw: np.ones((len(times), 510, 510))  # noqa: E731  (the cache, not the solve)
    monkeypatch.setattr(ref, "heat2d_vc_fv", small)
    monkeypatch.setenv("HODIFF_CACHE", str(tmp_path))
    ref.heat2d_vc_reference.cache_clear()
    try:
        first = ref.heat2d_vc_reference()
        assert (tmp_path / "fv_heat2d_vc_2.npz").is_file()
        assert first["points"].shape == (26 * 52 * 52, 3) and first["picture"].shape == (256, 256)
        monkeypatch.setattr(ref, "heat2d_vc_fv", None)  # not called again: read from the cache
        ref.heat2d_vc_reference.cache_clear()
        np.testing.assert_array_equal(ref.heat2d_vc_reference()["u"], first["u"])
    finally:
        ref.heat2d_vc_reference.cache_clear()


@pytest.mark.slow
def test_the_reference_grid_against_one_twice_as_fine():
    """m = 2 (the reference) against m = 4 on PINNacle's table at t = 2.5 and 4.5, where the transient is gone:
    the reference's own error estimate (docs/pinnacle.md)."""
    times = np.array([2.5, 4.5])
    fine = ref.at_nodes(ref.heat2d_vc_fv(4, times), 4, ref.TEST_STRIDE)
    coarse = ref.at_nodes(ref.heat2d_vc_fv(2, times), 2, ref.TEST_STRIDE)
    assert relative(coarse, fine) < 5e-3
