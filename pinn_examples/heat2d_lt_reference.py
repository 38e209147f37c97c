"""Sine pseudo-spectral reference of PINNacle's Heat2d-LT (scipy only): ETDRK4 in time.

The problem: ``u_t = 0.001 (u_xx + u_yy) + 5 sin(u^2) (1 + 2 sin(pi t / 4)) sin(4 pi x) sin(2 pi y)``
on ``[0, 1]^2 x [0, 100]``, ``u(x, y, 0) = sin(4 pi x) sin(3 pi y)``, ``u = 0`` on the boundary.

- The dynamics: pointwise ``u_t ~ a(t, x, y) sin(u^2)`` drives ``u`` to the plateaus ``+-sqrt(pi)``
  while ``a`` has one sign and back towards 0 when it flips (``1 + 2 sin(pi t / 4)`` is negative a
  third of each period of 8), so the solution settles onto a periodic orbit of period 8 within a few periods:
  eight cells of ``+-sqrt(pi)`` fill and empty 12.5 times (docs/pinnacle.md). The fronts between
  them have a width of a few hundredths (diffusion 0.001 against reaction rates of tens).
- :func:`heat2d_lt_spectral`: ``u = sum c_mn sin(m pi x) sin(n pi y)`` for ``m, n < n_grid`` (the
  walls hold exactly; the source ``sin(u^2) sin(4 pi x) sin(2 pi y)`` of an odd ``u`` is odd, so
  the sine series is consistent), the nonlinear term on the ``(n_grid - 1)^2`` interior grid by
  DST-I; ETDRK4 (Kassam & Trefethen 2005) with the diffusion exact and the time-dependent source
  at each stage's time, the phi-functions by contour integrals.
- :func:`heat2d_lt_reference`: the solution at the example's 20,000 test points (:func:`test_points`:
  uniform in space, times uniform among the reference's steps) and on a picture slice, cached in
  memory and, with ``HODIFF_CACHE`` set, on disk (atomic writes).

The convergence study (tests/test_heat2d_lt_reference.py) measures fourth order in the time step,
spectral convergence in space and the reference's own error (:data:`REFERENCE_ERROR`), far below the
example's 5e-2 target.

References:
  Hao et al. (2024), "PINNacle: A Comprehensive Benchmark of Physics-Informed Neural Networks
  for Solving PDEs", NeurIPS Datasets and Benchmarks (arXiv:2306.08827), problem Heat2d-LT.
  Kassam & Trefethen (2005), "Fourth-order time-stepping for stiff PDEs", SIAM J. Sci. Comput. 26(4).
"""

from __future__ import annotations

import functools

import numpy as np
import scipy.fft

from pinn_examples.fd_references import cached_on_disk

DIFFUSION, STRENGTH = 0.001, 5.0
END = 100.0
TEST_POINTS, TEST_SEED = 20_000, 20_261_204
PICTURE_Y, PICTURE_X, PICTURE_TIMES = 0.25, 201, 401  # the slice y = 0.25 over (x, t), times every 0.25
REFERENCE_N, REFERENCE_DT = 128, 0.01  # 127^2 sine modes, time step 0.01
REFERENCE_ERROR = 1e-4  # the reference's relative L2 error at the test points is below this (measured in the tests)


def initial(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """``u(x, y, 0) = sin(4 pi x) sin(3 pi y)``."""
    return np.sin(4.0 * np.pi * x) * np.sin(3.0 * np.pi * y)


def forcing(t: float) -> float:
    """The source's factor in time, ``5 (1 + 2 sin(pi t / 4))``: negative a third of each period of 8."""
    return STRENGTH * (1.0 + 2.0 * np.sin(np.pi * t / 4.0))


def sine_series(coefficients: np.ndarray, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """``sum c_mn sin(m pi x) sin(n pi y)`` (``m, n = 1 ..``) at the points ``(x, y)``, each ``(N,)``."""
    modes = np.pi * np.arange(1, coefficients.shape[0] + 1)
    return np.einsum("pm,mn,pn->p", np.sin(np.outer(x, modes)), coefficients, np.sin(np.outer(y, modes)))


def heat2d_lt_spectral(n: int, dt: float, points: np.ndarray, end: float | None = None) -> np.ndarray:
    """The ETDRK4 / sine pseudo-spectral solution at ``points``.

    Args:
      n: grid cells per side: ``(n - 1)^2`` sine modes, the nonlinear term on the interior grid of
        spacing ``1 / n``; an integer >= 8.
      dt: the time step, > 0.
      points: ``(N, 3)`` points ``(x, y, t)``, every ``t`` a multiple of ``dt`` in ``[0, end]``.
      end: the last time stepped to; default the points' largest time.

    Returns:
      ``u`` at the points, ``(N,)``: the sine series at each point's time step.
    """
    if not isinstance(n, (int, np.integer)) or n < 8:
        raise ValueError(f"heat2d_lt_spectral: n={n!r} must be an integer >= 8 (grid cells per side).")
    if not dt > 0:
        raise ValueError(f"heat2d_lt_spectral: dt={dt!r} must be positive.")
    points = np.asarray(points, dtype=np.float64)
    if points.ndim != 2 or points.shape[1] != 3:
        raise ValueError(f"heat2d_lt_spectral: points must be (N, 3) columns x, y, t; got shape {points.shape}.")
    steps = np.rint(points[:, 2] / dt).astype(np.int64)
    if np.any(np.abs(steps * dt - points[:, 2]) > 1e-9 * max(1.0, dt)) or np.any(steps < 0):
        raise ValueError(f"heat2d_lt_spectral: every point's time must be a multiple of dt={dt} in [0, end].")
    last = int(steps.max(initial=0)) if end is None else int(round(end / dt))
    if steps.max(initial=0) > last:
        raise ValueError(f"heat2d_lt_spectral: a point's time is after end={end}.")
    grid = np.arange(1, n) / n
    gx, gy = np.meshgrid(grid, grid, indexing="ij")
    shape = np.sin(4.0 * np.pi * gx) * np.sin(2.0 * np.pi * gy)
    k = np.pi * np.arange(1, n)
    linear = -DIFFUSION * (k[:, None] ** 2 + k[None, :] ** 2)

    def transform(values):  # DST-I with the orthonormal scale: its own inverse (grid values <-> scaled modes)
        return scipy.fft.dstn(values, type=1, norm="ortho")

    def nonlinear(v, t):
        u = transform(v)
        return transform(forcing(t) * shape * np.sin(u * u))

    # ETDRK4's coefficients (Kassam & Trefethen 2005), the symbol real: half a circle of 32 points
    roots = np.exp(1j * np.pi * (np.arange(1, 33) - 0.5) / 32)
    lr = dt * linear[..., None] + roots

    def contour(values):
        return dt * np.real(np.mean(values, axis=-1))

    e, e2 = np.exp(dt * linear), np.exp(dt * linear / 2.0)
    q = contour((np.exp(lr / 2.0) - 1.0) / lr)
    f1 = contour((-4.0 - lr + np.exp(lr) * (4.0 - 3.0 * lr + lr**2)) / lr**3)
    f2 = contour((2.0 + lr + np.exp(lr) * (-2.0 + lr)) / lr**3)
    f3 = contour((-4.0 - 3.0 * lr - lr**2 + np.exp(lr) * (4.0 - lr)) / lr**3)
    del lr
    scale = 2.0 / n  # scaled modes -> coefficients of sin(m pi x) sin(n pi y)
    order = np.argsort(steps, kind="stable")
    values = np.empty(len(points))
    v, cursor = transform(initial(gx, gy)), 0
    for step in range(last + 1):
        if step:
            t = (step - 1) * dt
            nv = nonlinear(v, t)
            a = e2 * v + q * nv
            na = nonlinear(a, t + dt / 2.0)
            b = e2 * v + q * na
            nb = nonlinear(b, t + dt / 2.0)
            c = e2 * a + q * (2.0 * nb - nv)
            nc = nonlinear(c, t + dt)
            v = e * v + nv * f1 + 2.0 * (na + nb) * f2 + nc * f3
        end_here = cursor
        while end_here < len(order) and steps[order[end_here]] == step:
            end_here += 1
        if end_here > cursor:
            chosen = order[cursor:end_here]
            values[chosen] = sine_series(scale * v, points[chosen, 0], points[chosen, 1])
            cursor = end_here
    return values


def test_points(dt: float = REFERENCE_DT) -> np.ndarray:
    """The example's ``(20000, 3)`` test points: ``(x, y)`` uniform in the square, ``t`` uniform among the
    multiples of ``dt`` in ``[0, 100]`` (so that the reference has each point's time as a step)."""
    rng = np.random.default_rng(TEST_SEED)
    space = rng.uniform(size=(TEST_POINTS, 2))
    steps = rng.integers(0, int(round(END / dt)) + 1, size=TEST_POINTS)
    return np.column_stack([space, steps * dt])


def picture_points() -> tuple[dict[str, np.ndarray], np.ndarray]:
    """The picture slice ``y = 0.25`` over ``(x, t)``: its axes and the ``(len(x) * len(t), 3)`` points (ij order)."""
    x, t = np.linspace(0.0, 1.0, PICTURE_X), np.linspace(0.0, END, PICTURE_TIMES)
    gx, gt = (g.ravel() for g in np.meshgrid(x, t, indexing="ij"))
    return {"x": x, "t": t}, np.column_stack([gx, np.full_like(gx, PICTURE_Y), gt])


@functools.lru_cache(maxsize=2)
def heat2d_lt_reference(n: int = REFERENCE_N, dt: float = REFERENCE_DT) -> dict[str, np.ndarray]:
    """The reference at :func:`test_points` and on the picture slice, solved once (about a minute).

    With the environment variable ``HODIFF_CACHE`` naming a directory they are also kept there as
    ``spectral_heat2d_lt_<n>_<dt>.npz`` (written atomically) and read back by later processes.

    Returns:
      ``{"points": (20000, 3), "u": (20000,), "x": ..., "t": ..., "picture": (len(x), len(t))}``.
    """

    def compute() -> dict[str, np.ndarray]:
        points = test_points(dt)
        axes, slice_points = picture_points()
        values = heat2d_lt_spectral(n, dt, np.concatenate([points, slice_points]), end=END)
        picture = values[len(points) :].reshape(len(axes["x"]), len(axes["t"]))
        return {"points": points, "u": values[: len(points)], "x": axes["x"], "t": axes["t"], "picture": picture}

    shapes: dict[str, tuple[int | None, ...]] = {"points": (TEST_POINTS, 3), "u": (TEST_POINTS,)}
    shapes |= {"x": (PICTURE_X,), "t": (PICTURE_TIMES,), "picture": (PICTURE_X, PICTURE_TIMES)}
    return cached_on_disk(f"spectral_heat2d_lt_{n}_{dt:g}.npz", ("points", "u", "x", "t", "picture"), compute, shapes)
