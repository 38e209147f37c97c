"""Pseudo-spectral reference of PINNacle's Burgers2d-C (numpy and scipy only), with its drawn initial fields.

The problem: ``u_t + u u_x + v u_y = nu (u_xx + u_yy)`` and ``v_t + u v_x + v v_y = nu (v_xx + v_yy)``,
``nu = 0.001``, on ``[0, 4]^2 x [0, 1]``, periodic in ``x`` and ``y``.

- The initial fields (:func:`initial_uv`) follow PINNacle's recipe, whose drawn files are not published:
  ``f_c = sum_{i, j = 0..3} A_cij sin(2 pi (i x + j y)) + B_cij cos(2 pi (i x + j y))`` for ``c = u, v``, with
  ``A, B`` standard normal; both fields are multiplied by ``2 / max(max |f_u|, max |f_v|)`` (the maximum read as the
  maximum *absolute* value over the plane, so that the larger field spans ``[-2, 2]`` at most and reaches ``2`` or
  ``-2``), then each is shifted by a standard normal constant. One pair is drawn here with numpy's
  ``np.random.default_rng(SEED)`` (:func:`coefficients`: ``A`` of shape ``(2, 4, 4)``, then ``B`` alike, then the two
  shifts; index ``[c, i, j]``). The modes are integers, so the fields have period 1 in ``x`` and ``y``, and so has the
  solution: on ``[0, 4]^2`` it is 4 x 4 copies of the solution on the unit square, which is all that is computed.
- :func:`burgers2d_spectral`: Fourier pseudo-spectral on ``N x N`` nodes of the unit square, 2/3 dealiasing (modes
  ``|k| < N / 3`` in each direction kept), the viscous term by an integrating factor and the advection by classical
  RK4 (IFRK4), float64, ``scipy.fft`` on every core. Each component obeys a maximum principle (it is advected by
  ``(u, v)`` and diffused), so the initial ``max |u| + max |v|`` bounds the speed throughout; the time step is
  ``CFL / (k_max (max |u| + max |v|))`` of the current fields, shortened to land on every output time.
- :func:`burgers2d_reference`: the solution at the test points (a grid of ``[0, 4]^2`` with spacing ``1 / 32`` at 11
  times ``0, 0.1, .., 1``: the spectral grid's nodes, no interpolation) and the picture (``t = 1``, spacing
  ``1 / 64``), cached in memory and, with ``HODIFF_CACHE`` set, on disk.

The viscosity makes fronts of width about ``4 nu / (jump)``, ``1e-3`` to ``2e-3``: the resolution was chosen by a
convergence study, ``N`` against ``2 N`` (docs/pinnacle.md and tests/test_burgers2d_reference.py).

References:
  Hao et al. (2024), "PINNacle: A Comprehensive Benchmark of Physics-Informed Neural Networks
  for Solving PDEs", NeurIPS Datasets and Benchmarks (arXiv:2306.08827), problem Burgers2d-C.
  Kassam & Trefethen (2005), "Fourth-order time-stepping for stiff PDEs", SIAM J. Sci. Comput. 26 (the
  integrating-factor RK4 scheme and its comparison with ETDRK4).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

import numpy as np
import scipy.fft
import scipy.optimize

from pinn_examples.fd_references import cached_on_disk

NU = 0.001
LENGTH, END = 4.0, 1.0  # the domain [0, LENGTH]^2 x [0, END]; the fields have period 1
SEED = 20_261_207  # np.random.default_rng(SEED): A (2, 4, 4), B (2, 4, 4), the two shifts
MODES = 4  # i, j = 0 .. MODES - 1
REFERENCE_N = 512
CFL = 2.0  # the RK4 step's |lambda dt| on the imaginary axis (stable up to 2.8; 1.0 changes the solution by 2e-5)
TEST_TIMES = np.linspace(0.0, END, 11)
TEST_SPACING, PICTURE_SPACING = 1.0 / 32.0, 1.0 / 64.0
PICTURE_TIME = END


@functools.lru_cache(maxsize=4)
def coefficients(seed: int = SEED) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
    """``(A, B, shift, scale)``: the raw draw (``A[c, i, j]``, ``B[c, i, j]``, ``shift[c]``, ``c = 0`` for ``u``, 1 for
    ``v``) from ``np.random.default_rng(seed)`` and ``scale = 2 / max_c max_(x, y) |f_c|``."""
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((2, MODES, MODES))
    b = rng.standard_normal((2, MODES, MODES))
    shift = rng.standard_normal(2)
    return a, b, shift, 2.0 / max(_largest_absolute(a[c], b[c]) for c in (0, 1))


def raw_field(a: np.ndarray, b: np.ndarray, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """``sum_ij a_ij sin(2 pi (i x + j y)) + b_ij cos(2 pi (i x + j y))`` at numpy arrays ``x, y`` (broadcast)."""
    x, y = np.broadcast_arrays(np.asarray(x, dtype=float), np.asarray(y, dtype=float))
    out = np.zeros(x.shape)
    for i in range(MODES):
        for j in range(MODES):
            phase = 2.0 * np.pi * (i * x + j * y)
            out += a[i, j] * np.sin(phase) + b[i, j] * np.cos(phase)
    return out


def _largest_absolute(a: np.ndarray, b: np.ndarray) -> float:
    """``max |f|`` over the plane: the best of a 128 x 128 grid of one period, polished by a local search."""
    nodes = np.arange(128) / 128.0
    x, y = np.meshgrid(nodes, nodes, indexing="ij")
    values = np.abs(raw_field(a, b, x, y))
    best = 0.0
    for index in np.argsort(values.ravel())[-8:]:
        start = np.array([x.ravel()[index], y.ravel()[index]])
        found = scipy.optimize.minimize(lambda p: -abs(raw_field(a, b, p[0], p[1])), start, method="Nelder-Mead",
                                        options={"xatol": 1e-12, "fatol": 1e-14, "maxiter": 2000})  # fmt: skip
        best = max(best, -found.fun, values.ravel()[index])
    return float(best)


def initial_uv(x, y, seed: int = SEED) -> tuple[np.ndarray, np.ndarray]:
    """The drawn initial fields ``(u, v)`` at numpy arrays ``x, y`` of any (broadcastable) shape.

    Example:
      ```python
      import numpy as np
      from pinn_examples.burgers2d_reference import initial_uv

      u, v = initial_uv(np.array([[0.1, 0.2]]), np.array([[0.3, 1.3]]))
      assert u.shape == v.shape == (1, 2)
      np.testing.assert_allclose(initial_uv(0.1, 0.3)[0], initial_uv(4.1, 2.3)[0])  # period 1
      ```
    """
    a, b, shift, scale = coefficients(seed)
    return tuple(scale * raw_field(a[c], b[c], x, y) + shift[c] for c in (0, 1))  # type: ignore[return-value]


def _wavenumbers(n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(kx, ky, keep)`` on ``rfft2``'s layout ``[ix, iy]`` (angular, period 1) and the 2/3 dealiasing mask."""
    kx = np.fft.fftfreq(n, 1.0 / n)[:, None]
    ky = np.fft.rfftfreq(n, 1.0 / n)[None, :]
    keep = (np.abs(kx) < n / 3.0) & (np.abs(ky) < n / 3.0)
    return 2.0 * np.pi * kx, 2.0 * np.pi * ky, keep


def burgers2d_spectral(
    n: int, times: Sequence[float], initial=None, nu: float = NU, cfl: float = CFL
) -> tuple[np.ndarray, np.ndarray]:
    """``(u, v)``, each ``(len(times), n, n)`` ``[k, ix, iy]`` at the nodes ``(ix / n, iy / n)`` of the unit square.

    Args:
      n: nodes a side (even).
      times: increasing output times from 0.
      initial: ``(u0, v0)`` on the nodes (``(n, n)`` each); default :func:`initial_uv`.
      nu: the viscosity.
      cfl: ``|lambda dt|`` of the fastest advected mode.
    """
    times = np.asarray(times, dtype=float)
    if n < 8 or n % 2 or np.any(np.diff(times) < 0) or times[0] < 0:
        raise ValueError(f"burgers2d_spectral: n={n} must be even >= 8 and times={times} increasing from >= 0.")
    nodes = np.arange(n) / n
    if initial is None:
        initial = initial_uv(*np.meshgrid(nodes, nodes, indexing="ij"))
    kx, ky, keep = _wavenumbers(n)
    decay = -nu * (kx**2 + ky**2)
    k_max = 2.0 * np.pi * (n // 3)

    def forward(field):
        return scipy.fft.rfft2(field, workers=-1) * keep

    def backward(spectrum):
        return scipy.fft.irfft2(spectrum, s=(n, n), workers=-1)

    def advection(uh, vh):
        """``-(u . grad) (u, v)`` in Fourier space, dealiased."""
        u, v = backward(uh), backward(vh)
        u_x, u_y, v_x, v_y = (backward(1j * k * h) for h in (uh, vh) for k in (kx, ky))
        return -forward(u * u_x + v * u_y), -forward(u * v_x + v * v_y)

    state = [forward(np.asarray(f, dtype=float)) for f in initial]
    speed = sum(np.abs(f).max() for f in initial)
    out_u, out_v = np.empty((len(times), n, n)), np.empty((len(times), n, n))
    now = 0.0
    for index, target in enumerate(times):
        while now < target - 1e-14:
            steps = int(np.ceil((target - now) / (cfl / (k_max * speed)) - 1e-9))
            dt = (target - now) / steps
            half = np.exp(decay * dt / 2.0)
            k1 = advection(*state)
            k2 = advection(*(half * (s + dt / 2 * k) for s, k in zip(state, k1, strict=True)))
            k3 = advection(*(half * s + dt / 2 * k for s, k in zip(state, k2, strict=True)))
            k4 = advection(*(half**2 * s + dt * half * k for s, k in zip(state, k3, strict=True)))
            state = [
                half**2 * s + dt / 6.0 * (half**2 * a + 2.0 * half * (b + c) + d)
                for s, a, b, c, d in zip(state, k1, k2, k3, k4, strict=True)
            ]
            now = target if steps == 1 else now + dt
        out_u[index], out_v[index] = backward(state[0]), backward(state[1])
        speed = np.abs(out_u[index]).max() + np.abs(out_v[index]).max()
    return out_u, out_v


def tile(values: np.ndarray, n: int, spacing: float) -> np.ndarray:
    """Nodes ``(..., n, n)`` of the unit square (spacing ``1 / n``) at the ``[0, 4]^2`` grid of ``spacing`` (a multiple
    of ``1 / n``), ``[..., ix, iy]``, by periodicity."""
    stride = int(round(spacing * n))
    if abs(stride - spacing * n) > 1e-9:
        raise ValueError(f"burgers2d: spacing {spacing} is not a multiple of 1 / {n}.")
    index = (np.arange(int(round(LENGTH / spacing)) + 1) * stride) % n
    return values[..., index[:, None], index[None, :]]


def grid_points(spacing: float, times: np.ndarray) -> np.ndarray:
    """``(len(times) * m * m, 3)`` points ``(x, y, t)`` of the ``[0, 4]^2`` grid of ``spacing`` in the order
    ``[k_t, ix, iy]``."""
    nodes = np.linspace(0.0, LENGTH, int(round(LENGTH / spacing)) + 1)
    t, x, y = np.meshgrid(times, nodes, nodes, indexing="ij")
    return np.column_stack([x.ravel(), y.ravel(), t.ravel()])


@functools.lru_cache(maxsize=2)
def burgers2d_reference(n: int = REFERENCE_N) -> dict[str, np.ndarray]:
    """The reference at the test points and on the picture (``t = 1``), solved once.

    With the environment variable ``HODIFF_CACHE`` naming a directory they are also kept there as
    ``spectral_burgers2d_<n>.npz`` and read back by later processes.

    Returns:
      ``{"points": (P, 3), "u": (P,), "v": (P,), "x": (257,), "y": (257,), "picture_u": (257, 257),
      "picture_v": (257, 257)}`` (pictures ``[ix, iy]``).
    """

    def compute() -> dict[str, np.ndarray]:
        u, v = burgers2d_spectral(n, TEST_TIMES)
        nodes = np.linspace(0.0, LENGTH, int(round(LENGTH / PICTURE_SPACING)) + 1)
        return {
            "points": grid_points(TEST_SPACING, TEST_TIMES), "u": tile(u, n, TEST_SPACING).ravel(),
            "v": tile(v, n, TEST_SPACING).ravel(), "x": nodes, "y": nodes,
            "picture_u": tile(u[-1], n, PICTURE_SPACING), "picture_v": tile(v[-1], n, PICTURE_SPACING),
        }  # fmt: skip

    side = int(round(LENGTH / TEST_SPACING)) + 1
    count = len(TEST_TIMES) * side**2
    picture = int(round(LENGTH / PICTURE_SPACING)) + 1
    names = ("points", "u", "v", "x", "y", "picture_u", "picture_v")
    shapes: dict[str, tuple[int | None, ...]] = {"points": (count, 3), "u": (count,), "v": (count,)}
    shapes.update({"x": (picture,), "y": (picture,), "picture_u": (picture,) * 2, "picture_v": (picture,) * 2})
    return cached_on_disk(f"spectral_burgers2d_{n}.npz", names, compute, shapes)
