"""The Gray-Scott spectral reference: the initial condition, the PDE satisfied, fourth order in the time step,
spectral in space, the box against the whole square, its own error estimate, the cache, bad input."""

import numpy as np
import pytest

from pinn_examples import gray_scott_reference as ref


def relative(a, b):
    return np.sqrt(np.sum((a - b) ** 2) / np.sum(b**2))


def points_at(times, count=300, half=0.3, seed=0):
    """``count`` points a time, uniform in ``[-half, half]^2`` (where the pattern is)."""
    rng = np.random.default_rng(seed)
    space = rng.uniform(-half, half, size=(count * len(times), 2))
    return np.column_stack([space, np.repeat(times, count)])


def test_the_initial_condition_and_the_kinetics_outside_the_box():
    points = np.array([[0.05, 0.02, 0.0], [-0.05, -0.02, 0.0], [0.2, -0.1, 0.0], [0.7, 0.1, 0.0], [-0.3, 0.9, 50.0]])
    values = ref.gray_scott_spectral(128, 1.0, points, end=50.0)
    u0, v0 = ref.initial(points[:, 0], points[:, 1])
    np.testing.assert_allclose(values[:4], np.column_stack([u0, v0])[:4], atol=1e-7)
    assert values[0, 1] == pytest.approx(1.0, abs=1e-7) and values[1, 0] == pytest.approx(0.0, abs=1e-7)
    # outside the box: the kinetics without diffusion, (1 - u) and v decaying at 0.04 and 0.1
    np.testing.assert_allclose(values[4], [1.0 - (1.0 - u0[4]) * np.exp(-2.0), v0[4] * np.exp(-5.0)], rtol=1e-12)


def test_the_solution_satisfies_the_pde():
    """u_t, v_t (finite differences in time, fourth order) = diffusion (fourth order in space) + reaction, off the
    grid, as the crescent forms (n = 256, the reference's grid: 1.5e-4; n = 128 leaves 4e-2 in the second
    derivatives, its values 3e-4 from n = 512)."""
    dt, h = 0.5, 1e-3
    centres = points_at(np.array([20.0, 25.0]), count=40, half=0.25, seed=1)
    shifts = [(0, 0, s) for s in (-2, -1, 1, 2)] + [(s, 0, 0) for s in (-2, -1, 0, 1, 2)]
    shifts += [(0, s, 0) for s in (-2, -1, 1, 2)]
    stencil = np.concatenate([centres + np.array([a * h, b * h, c * dt]) for a, b, c in shifts])
    values = ref.gray_scott_spectral(ref.REFERENCE_N, dt, stencil).reshape(len(shifts), len(centres), 2)
    first = np.array([1.0, -8.0, 8.0, -1.0]) / 12.0
    second = np.array([-1.0, 16.0, -30.0, 16.0, -1.0]) / 12.0
    time = np.einsum("k,kpf->pf", first, values[:4]) / dt
    laplacian = np.einsum("k,kpf->pf", second, values[4:9]) / h**2
    laplacian += (np.einsum("k,kpf->pf", second[[0, 1, 3, 4]], values[9:]) + second[2] * values[6]) / h**2
    u, v = values[6, :, 0], values[6, :, 1]
    u_rhs = ref.DIFFUSION_U * laplacian[:, 0] + ref.FEED * (1.0 - u) - u * v**2
    v_rhs = ref.DIFFUSION_V * laplacian[:, 1] - ref.DECAY * v + u * v**2
    assert np.sqrt(np.mean(time**2)) > 5e-3  # the check has something to check
    assert relative(time[:, 0], u_rhs) < 1e-3 and relative(time[:, 1], v_rhs) < 1e-3
    assert relative(time[:, 1], v_rhs + ref.DIFFUSION_V * laplacian[:, 1]) > 1e-2  # diffusion matters at this size


def test_fourth_order_in_the_time_step_and_spectral_in_space():
    """Over the flare and the crescent's start (t <= 20, where the solution changes fastest)."""
    points = points_at(np.array([2.0, 10.0, 20.0]))
    fine = ref.gray_scott_spectral(64, 0.125, points)
    errors = [relative(ref.gray_scott_spectral(64, dt, points), fine) for dt in (1.0, 0.5)]
    assert errors[1] < 2e-4
    assert np.log2(errors[0] / errors[1]) > 3.5  # fourth order
    exact = ref.gray_scott_spectral(192, 0.5, points)
    space = [relative(ref.gray_scott_spectral(n, 0.5, points), exact) for n in (64, 128)]
    assert space[1] < 3e-4 and space[0] / space[1] > 16  # faster than fourth order in h (n = 256: 5e-6 from 192)
    # the reference's step: its error (fourth order from errors[1] at dt = 0.5) below REFERENCE_ERROR
    assert errors[1] / 16 < ref.REFERENCE_ERROR


def test_the_box_holds_the_whole_square():
    """Solved on [-0.5, 0.5]^2 (zero flux on its edges, the kinetics outside) against [-0.75, 0.75]^2 at the same
    spacing, resolved (an under-resolved grid's ripples reach the edges): the same solution over t in [0, 24]
    (the flare), inside the box and out (against the whole square at n = 512: 6e-8 the same way)."""
    rng = np.random.default_rng(2)
    points = np.column_stack([rng.uniform(-1, 1, (400, 2)), 2.0 * rng.integers(0, 13, 400)])
    points = np.concatenate([points, points_at(np.array([12.0, 24.0]), count=100)])
    box = ref.gray_scott_spectral(ref.REFERENCE_N, 2.0, points)
    larger = ref.gray_scott_spectral(3 * ref.REFERENCE_N // 2, 2.0, points, box=0.75)
    outside = np.any(np.abs(points[:, :2]) > ref.BOX, axis=1)
    assert outside.sum() > 200 and np.abs(box - larger)[outside].max() < 1e-6
    assert relative(box, larger) < 1e-6
    assert np.abs(larger[:, 1]).max() > 0.3  # the pattern is among the points


@pytest.mark.slow
def test_the_reference_error_at_the_test_points():
    """The example's reference (n = 256, dt = 0.25) against a finer step and a finer grid, over t in [0, 200]."""
    points = ref.test_points()
    reference = ref.gray_scott_reference()
    values = np.column_stack([reference["u"], reference["v"]])
    for other in (
        ref.gray_scott_spectral(ref.REFERENCE_N, ref.REFERENCE_DT / 2, points),
        ref.gray_scott_spectral(3 * ref.REFERENCE_N // 2, ref.REFERENCE_DT, points),
    ):
        assert relative(values, other) < ref.REFERENCE_ERROR
        for field in (0, 1):
            assert relative(values[:, field], other[:, field]) < ref.REFERENCE_ERROR


def test_the_cache_round_trip_and_the_test_points(tmp_path, monkeypatch):
    monkeypatch.setenv("HODIFF_CACHE", str(tmp_path))
    ref.gray_scott_reference.cache_clear()
    try:
        first = ref.gray_scott_reference(16, 1.0)
        assert [p.name for p in tmp_path.iterdir()] == ["spectral_gray_scott_16_1.npz"]
        ref.gray_scott_reference.cache_clear()
        again = ref.gray_scott_reference(16, 1.0)
    finally:
        ref.gray_scott_reference.cache_clear()
    for name in ("points", "u", "v", "x", "t", "picture_u", "picture_v"):
        np.testing.assert_array_equal(again[name], first[name])
    points = first["points"]
    assert points.shape == (20_000, 3) and points[:, 2].min() == 0.0 and points[:, 2].max() == 200.0
    assert np.all(np.abs(points[:, :2]) < 1) and np.abs(points[:, :2]).max() > 0.99
    assert first["picture_v"].shape == (ref.PICTURE_X, ref.PICTURE_TIMES)
    np.testing.assert_allclose(first["picture_v"][:, 0], ref.initial(first["x"], ref.PICTURE_Y)[1], atol=1e-2)


@pytest.mark.parametrize(
    "n, dt, points, box, match",
    [
        (4, 0.1, np.zeros((1, 3)), 0.5, "n=4 must be an integer >= 8"),
        (16, 0.0, np.zeros((1, 3)), 0.5, "dt=0.0 must be positive"),
        (16, 0.1, np.zeros((1, 3)), 1.5, r"box=1.5 must be in \(0, 1\]"),
        (16, 0.1, np.zeros((3,)), 0.5, r"must be \(N, 3\)"),
        (16, 0.1, np.array([[0.5, 0.5, 0.15]]), 0.5, "multiple of dt"),
    ],
)
def test_bad_input(n, dt, points, box, match):
    with pytest.raises(ValueError, match=match):
        ref.gray_scott_spectral(n, dt, points, box=box)
