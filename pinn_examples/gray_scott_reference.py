"""Cosine pseudo-spectral reference of PINNacle's Gray-Scott problem (scipy only): ETDRK4 in time.

The problem: ``u_t = 1e-5 (u_xx + u_yy) + 0.04 (1 - u) - u v^2``, ``v_t = 5e-6 (v_xx + v_yy) - 0.1 v + u v^2``
on ``[-1, 1]^2 x [0, 200]``, ``u(x, y, 0) = 1 - exp(-80 ((x + 0.05)^2 + (y + 0.02)^2))``,
``v(x, y, 0) = exp(-80 ((x - 0.05)^2 + (y - 0.02)^2))``, zero flux on the boundary.

- The dynamics: the spot of ``v`` eats into the hole of ``u`` and turns into a crescent of radius about
  0.15 and width a few hundredths that slowly grows; far from the centre ``u = 1``, ``v = 0`` (the
  initial Gaussians are below 2e-9 beyond ``r = 0.5`` and diffusion moves the pattern by about
  ``sqrt(1e-5 * 200) = 0.045``), so the solution changes by less than 1e-6 outside the box
  ``[-0.5, 0.5]^2`` (measured in the tests against a larger box; against the whole square alike).
- :func:`gray_scott_spectral`: the cosine series ``sum c_mn cos(m pi (x + B) / 2B) cos(n pi (y + B) / 2B)``
  on the box ``[-B, B]^2`` (zero flux on its edges, as on the square's), the reaction on the ``n x n``
  cell-centred grid by DCT-II; ETDRK4 (Kassam & Trefethen 2005) with the diffusion and the linear decay
  (``-0.04 u``, ``-0.1 v``) exact, the phi-functions by contour integrals. Outside the box each point
  follows the kinetics without diffusion, ``u = 1 - (1 - u_0) exp(-0.04 t)``, ``v = v_0 exp(-0.1 t)``
  (``u v^2 < 1e-17`` there).
- :func:`gray_scott_reference`: the solution at the example's 20,000 test points (:func:`test_points`:
  uniform in the square, times uniform among the reference's steps) and on a picture slice, cached in
  memory and, with ``HODIFF_CACHE`` set, on disk (atomic writes).

The convergence study (tests/test_gray_scott_reference.py) measures fourth order in the time step,
spectral convergence in space, the box against the whole square and the reference's own error
(:data:`REFERENCE_ERROR`), far below the example's 1e-2 target.

References:
  Hao et al. (2024), "PINNacle: A Comprehensive Benchmark of Physics-Informed Neural Networks
  for Solving PDEs", NeurIPS Datasets and Benchmarks (arXiv:2306.08827), problem GS.
  Pearson (1993), "Complex patterns in a simple system", Science 261.
  Kassam & Trefethen (2005), "Fourth-order time-stepping for stiff PDEs", SIAM J. Sci. Comput. 26(4).
"""

from __future__ import annotations

import functools

import numpy as np
import scipy.fft

from pinn_examples.fd_references import cached_on_disk

DIFFUSION_U, DIFFUSION_V, FEED, DECAY = 1e-5, 5e-6, 0.04, 0.1
HALF, END = 1.0, 200.0  # the square [-1, 1]^2, t in [0, 200]
BOX = 0.5  # the reference solves on [-BOX, BOX]^2; outside, the solution is the kinetics without diffusion
TEST_POINTS, TEST_SEED = 20_000, 20_261_205
PICTURE_Y, PICTURE_X, PICTURE_TIMES, PICTURE_HALF = 0.02, 161, 201, 0.4  # the slice y = 0.02, |x| <= 0.4, t every 1
REFERENCE_N, REFERENCE_DT = 256, 0.25  # 256^2 cosine modes on [-0.5, 0.5]^2 (spacing 0.004), time step 0.25
REFERENCE_ERROR = 1e-5  # the reference's relative L2 error (u, v together and each) is below this (the tests)


def initial(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(u, v)`` at ``t = 0``: a hole in ``u`` and a spot of ``v``, offset from each other."""
    u = 1.0 - np.exp(-80.0 * ((x + 0.05) ** 2 + (y + 0.02) ** 2))
    return u, np.exp(-80.0 * ((x - 0.05) ** 2 + (y - 0.02) ** 2))


def cosine_series(coefficients: np.ndarray, x: np.ndarray, y: np.ndarray, box: float) -> np.ndarray:
    """``sum c_mn cos(m pi (x + box) / 2 box) cos(n pi (y + box) / 2 box)`` (``m, n = 0 ..``) at ``(x, y)``, each
    ``(N,)``."""
    modes = np.pi * np.arange(coefficients.shape[0]) / (2.0 * box)
    return np.einsum("pm,mn,pn->p", np.cos(np.outer(x + box, modes)), coefficients, np.cos(np.outer(y + box, modes)))


def _etdrk4(linear: np.ndarray, dt: float) -> tuple[np.ndarray, ...]:
    """ETDRK4's coefficients ``(e, e2, q, f1, f2, f3)`` of a real diagonal ``linear`` (Kassam & Trefethen 2005),
    the phi-functions by contour integrals over half a circle of 32 points."""
    roots = np.exp(1j * np.pi * (np.arange(1, 33) - 0.5) / 32)
    lr = dt * linear[..., None] + roots

    def contour(values):
        return dt * np.real(np.mean(values, axis=-1))

    q = contour((np.exp(lr / 2.0) - 1.0) / lr)
    f1 = contour((-4.0 - lr + np.exp(lr) * (4.0 - 3.0 * lr + lr**2)) / lr**3)
    f2 = contour((2.0 + lr + np.exp(lr) * (-2.0 + lr)) / lr**3)
    f3 = contour((-4.0 - 3.0 * lr - lr**2 + np.exp(lr) * (4.0 - lr)) / lr**3)
    return np.exp(dt * linear), np.exp(dt * linear / 2.0), q, f1, f2, f3


def gray_scott_spectral(
    n: int, dt: float, points: np.ndarray, end: float | None = None, box: float = BOX
) -> np.ndarray:
    """The ETDRK4 / cosine pseudo-spectral solution at ``points``.

    Args:
      n: grid cells per side of the box: ``n^2`` cosine modes, the reaction on the cell-centred grid of
        spacing ``2 box / n``; an integer >= 8.
      dt: the time step, > 0.
      points: ``(N, 3)`` points ``(x, y, t)`` in the square, every ``t`` a multiple of ``dt`` in ``[0, end]``.
      end: the last time stepped to; default the points' largest time.
      box: the half-width of the box ``[-box, box]^2`` solved on, in ``(0, 1]`` (1: the whole square).

    Returns:
      ``(N, 2)``: ``u`` and ``v`` at the points (the cosine series at each point's time step inside the box,
      the kinetics without diffusion outside).
    """
    if not isinstance(n, (int, np.integer)) or n < 8:
        raise ValueError(f"gray_scott_spectral: n={n!r} must be an integer >= 8 (grid cells per side).")
    if not dt > 0:
        raise ValueError(f"gray_scott_spectral: dt={dt!r} must be positive.")
    if not 0.0 < box <= HALF:
        raise ValueError(f"gray_scott_spectral: box={box!r} must be in (0, 1] (the half-width solved on).")
    points = np.asarray(points, dtype=np.float64)
    if points.ndim != 2 or points.shape[1] != 3:
        raise ValueError(f"gray_scott_spectral: points must be (N, 3) columns x, y, t; got shape {points.shape}.")
    steps = np.rint(points[:, 2] / dt).astype(np.int64)
    if np.any(np.abs(steps * dt - points[:, 2]) > 1e-9 * max(1.0, dt)) or np.any(steps < 0):
        raise ValueError(f"gray_scott_spectral: every point's time must be a multiple of dt={dt} in [0, end].")
    last = int(steps.max(initial=0)) if end is None else int(round(end / dt))
    if steps.max(initial=0) > last:
        raise ValueError(f"gray_scott_spectral: a point's time is after end={end}.")
    values = np.empty((len(points), 2))
    inside = np.all(np.abs(points[:, :2]) < box, axis=1)
    u0, v0 = initial(points[~inside, 0], points[~inside, 1])
    t = points[~inside, 2]
    values[~inside] = np.column_stack([1.0 - (1.0 - u0) * np.exp(-FEED * t), v0 * np.exp(-DECAY * t)])

    grid = -box + (np.arange(n) + 0.5) * 2.0 * box / n
    gx, gy = np.meshgrid(grid, grid, indexing="ij")
    k = np.pi * np.arange(n) / (2.0 * box)
    laplacian = -(k[:, None] ** 2 + k[None, :] ** 2)
    coefficients = [_etdrk4(DIFFUSION_U * laplacian - FEED, dt), _etdrk4(DIFFUSION_V * laplacian - DECAY, dt)]

    def transform(values):  # DCT-II, orthonormal: grid values -> scaled modes
        return scipy.fft.dctn(values, type=2, norm="ortho")

    def nonlinear(modes):
        u, v = (scipy.fft.idctn(m, type=2, norm="ortho") for m in modes)
        reaction = u * v * v
        return transform(FEED - reaction), transform(reaction)

    weight = np.full(n, np.sqrt(2.0 / n))
    weight[0] = np.sqrt(1.0 / n)
    scale = np.outer(weight, weight)  # scaled modes -> coefficients of the cosine products
    chosen_points = np.flatnonzero(inside)
    order = chosen_points[np.argsort(steps[chosen_points], kind="stable")]
    modes, cursor = [transform(f) for f in initial(gx, gy)], 0
    for step in range(last + 1):
        if step:
            nv = nonlinear(modes)
            a = [c[1] * m + c[2] * n_ for c, m, n_ in zip(coefficients, modes, nv)]
            na = nonlinear(a)
            b = [c[1] * m + c[2] * n_ for c, m, n_ in zip(coefficients, modes, na)]
            nb = nonlinear(b)
            c_ = [c[1] * a_ + c[2] * (2.0 * nb_ - nv_) for c, a_, nb_, nv_ in zip(coefficients, a, nb, nv)]
            nc = nonlinear(c_)
            modes = [
                c[0] * m + nv_ * c[3] + 2.0 * (na_ + nb_) * c[4] + nc_ * c[5]
                for c, m, nv_, na_, nb_, nc_ in zip(coefficients, modes, nv, na, nb, nc)
            ]
        end_here = cursor
        while end_here < len(order) and steps[order[end_here]] == step:
            end_here += 1
        if end_here > cursor:
            chosen = order[cursor:end_here]
            for field, m in enumerate(modes):
                values[chosen, field] = cosine_series(scale * m, points[chosen, 0], points[chosen, 1], box)
            cursor = end_here
    return values


def test_points(dt: float = REFERENCE_DT) -> np.ndarray:
    """The example's ``(20000, 3)`` test points: ``(x, y)`` uniform in the square, ``t`` uniform among the
    multiples of ``dt`` in ``[0, 200]`` (so that the reference has each point's time as a step)."""
    rng = np.random.default_rng(TEST_SEED)
    space = rng.uniform(-HALF, HALF, size=(TEST_POINTS, 2))
    steps = rng.integers(0, int(round(END / dt)) + 1, size=TEST_POINTS)
    return np.column_stack([space, steps * dt])


def picture_points() -> tuple[dict[str, np.ndarray], np.ndarray]:
    """The picture slice ``y = 0.02``, ``|x| <= 0.4`` over ``(x, t)``: its axes and the ``(len(x) * len(t), 3)``
    points (ij order)."""
    x, t = np.linspace(-PICTURE_HALF, PICTURE_HALF, PICTURE_X), np.linspace(0.0, END, PICTURE_TIMES)
    gx, gt = (g.ravel() for g in np.meshgrid(x, t, indexing="ij"))
    return {"x": x, "t": t}, np.column_stack([gx, np.full_like(gx, PICTURE_Y), gt])


@functools.lru_cache(maxsize=2)
def gray_scott_reference(n: int = REFERENCE_N, dt: float = REFERENCE_DT) -> dict[str, np.ndarray]:
    """The reference at :func:`test_points` and on the picture slice, solved once (tens of seconds).

    With the environment variable ``HODIFF_CACHE`` naming a directory they are also kept there as
    ``spectral_gray_scott_<n>_<dt>.npz`` (written atomically) and read back by later processes.

    Returns:
      ``{"points": (20000, 3), "u", "v": (20000,), "x", "t": axes, "picture_u", "picture_v": (len(x), len(t))}``.
    """

    def compute() -> dict[str, np.ndarray]:
        points = test_points(dt)
        axes, slice_points = picture_points()
        values = gray_scott_spectral(n, dt, np.concatenate([points, slice_points]), end=END)
        shape = (len(axes["x"]), len(axes["t"]))
        result = {"points": points, "u": values[: len(points), 0], "v": values[: len(points), 1], **axes}
        result["picture_u"], result["picture_v"] = (values[len(points) :, i].reshape(shape) for i in (0, 1))
        return result

    names = ("points", "u", "v", "x", "t", "picture_u", "picture_v")
    return cached_on_disk(f"spectral_gray_scott_{n}_{dt:g}.npz", names, compute)
