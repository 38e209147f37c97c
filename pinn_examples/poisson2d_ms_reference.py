"""Reference for PINNacle Poisson2d-MS: ``a (u_xx + u_yy) + f = 0`` on ``[-10, 10]^2``, ``du/dn = -u`` on the edges.

The square is cut into 5 x 5 blocks of side 4; ``a`` is constant on each block and
``f = c00 + c11 sin(pi xi) sin(pi eta)`` with ``(xi, eta)`` the block-local coordinates in
``[0, 1)``. The coefficients are read from PINNacle's two data files (:func:`coefficients`),
kept outside the repository (:func:`data_dir`: ``../shared/pinnacle/`` beside the repository
root, :data:`DATA_DIR`, or the folder the environment variable ``HODIFF_PINNACLE_DATA`` names).

Since ``a`` multiplies the whole Laplacian, the equation is ``Delta u = g`` with ``g = -f / a``
piecewise smooth; ``u`` is C^1 across the block interfaces, where its second derivatives jump.
:func:`solve` is the vertex-centred finite-volume scheme on a uniform grid whose nodes lie on
every interface and edge: the 5-point Laplacian, ``g`` averaged exactly (to second order) over
each node's dual cell (the midpoints of its two halves in each direction, so a dual cell that
straddles an interface is averaged over both blocks), and the Robin condition in the flux of
the boundary half-cells (the same as a ghost node with the central difference). Its operator is
``T (x) I + I (x) T`` with ``T`` the 1-D operator, so the system is solved exactly by the
eigenvectors of ``T`` (two dense ``(n + 1)^2`` matrix products a side, no sparse factorisation).

Convergence (``tests/test_poisson2d_ms_reference.py``): second order on a smooth manufactured
solution, and on the real problem too (the jumps of ``g`` sit on grid lines): the relative L2
difference between ``n`` and ``2n`` cells a side falls by 4 per halving, 1.3e-5 between 400 and
800, 3.2e-6 between 800 and 1600. So the cached reference, ``n = 1600`` (h = 1/80), is within
about 1e-6 (relative L2) of the exact solution: far below the example's target, 5e-2.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from pathlib import Path

import numpy as np
import scipy.linalg

from pinn_examples.fd_references import DATA_DIR, DATA_VARIABLE, cached_on_disk, data_dir  # noqa: F401 (DATA_DIR: docs)

HALF = 10.0  # the square is [-HALF, HALF]^2
BLOCKS = 5  # blocks per side
BLOCK = 2.0 * HALF / BLOCKS  # a block's side
A_FILE, F_FILE = "poisson_a_coef.dat", "poisson_f_coef.dat"
REFERENCE_CELLS = 1600  # cells a side of the cached reference (h = 1/80)


def coefficients(directory: str | os.PathLike | None = None) -> tuple[np.ndarray, np.ndarray]:
    """PINNacle's coefficients: ``a`` per block ``(5, 5)`` and ``(c00, c11)`` per block ``(5, 5, 2)``.

    Block ``(i, j)`` is the ``i``-th along x and the ``j``-th along y, both from -10.

    Args:
      directory: the folder holding ``poisson_a_coef.dat`` and ``poisson_f_coef.dat`` (default :func:`data_dir`).

    Raises:
      FileNotFoundError: a file is missing; the message names it and how to point to it.
      ValueError: a file does not hold 25 (``a``, all positive) or 100 (``f``) finite numbers.
    """
    directory = data_dir() if directory is None else Path(directory)
    values = {}
    for name, count in ((A_FILE, 25), (F_FILE, 100)):
        path = directory / name
        if not path.is_file():
            raise FileNotFoundError(
                f"poisson2d_ms: the coefficient file {path} is missing. It is PINNacle's ref/{name} (Hao et al. 2024); "
                f"put it there, or set the environment variable {DATA_VARIABLE} to the folder that holds "
                f"{A_FILE} and {F_FILE}."
            )
        try:
            array = np.loadtxt(path, dtype=np.float64).ravel()
        except ValueError as error:
            raise ValueError(
                f"poisson2d_ms: {path} is not a table of numbers ({error}); restore PINNacle's ref/{name}."
            ) from None
        if array.size != count or not np.all(np.isfinite(array)):
            raise ValueError(
                f"poisson2d_ms: {path} holds {array.size} values (finite: {bool(np.all(np.isfinite(array)))}); "
                f"it should hold {count} finite numbers. Restore PINNacle's ref/{name}."
            )
        values[name] = array
    a = values[A_FILE].reshape(BLOCKS, BLOCKS)
    if np.any(a <= 0):
        raise ValueError(f"poisson2d_ms: {directory / A_FILE} has values <= 0; a must be positive on every block.")
    c = values[F_FILE].reshape(BLOCKS, BLOCKS, 2, 2)
    return a, np.stack([c[:, :, 0, 0], c[:, :, 1, 1]], axis=-1)


def blocks(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The block indices ``(i, j)`` of the points and their block-local coordinates ``(xi, eta)`` in [0, 1).

    A point on an interface belongs to the block above it, a point on the edges x = 10 or y = 10 to the last.
    """
    i = np.clip(np.floor((x + HALF) / BLOCK), 0, BLOCKS - 1).astype(np.int64)
    j = np.clip(np.floor((y + HALF) / BLOCK), 0, BLOCKS - 1).astype(np.int64)
    return i, j, (x + HALF) / BLOCK - i, (y + HALF) / BLOCK - j


def source(x: np.ndarray, y: np.ndarray, directory: str | os.PathLike | None = None) -> np.ndarray:
    """``g = Delta u = -f / a`` at the points (numpy arrays)."""
    a, c = coefficients(directory)
    i, j, xi, eta = blocks(np.asarray(x, np.float64), np.asarray(y, np.float64))
    f = c[i, j, 0] + c[i, j, 1] * np.sin(np.pi * xi) * np.sin(np.pi * eta)
    return -f / a[i, j]


def _halves(axis: np.ndarray, h: float) -> tuple[np.ndarray, np.ndarray]:
    """The midpoints of the two halves of each node's dual interval (clipped to the square) and their weights."""
    low, high = np.maximum(axis - h / 2, -HALF), np.minimum(axis + h / 2, HALF)
    lengths = np.stack([axis - low, high - axis])
    return np.stack([(low + axis) / 2, (axis + high) / 2]), lengths / lengths.sum(axis=0)


def solve(
    n: int,
    laplacian: Callable[[np.ndarray, np.ndarray], np.ndarray] | None = None,
    robin: Callable[[np.ndarray, np.ndarray, np.ndarray, np.ndarray], np.ndarray] | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``Delta u = g`` on ``[-10, 10]^2`` with ``du/dn + u = q`` on the edges, by vertex-centred finite volumes.

    Args:
      n: cells a side (h = 20 / n), a multiple of 5 (so the interfaces are grid lines), at least 10.
      laplacian: ``g(x, y)`` (numpy arrays in and out); default Poisson2d-MS's ``-f / a`` (:func:`source`).
      robin: ``q(x, y, nx, ny)`` on the edges, ``(nx, ny)`` the outward normal; default 0 (``du/dn = -u``).
        At a corner each edge gets its own normal.

    Returns:
      ``(x, y, u)``: the axes (``n + 1`` nodes each, -10 to 10) and ``u`` on the grid (ij indexing).

    Example:
      ```python
      import numpy as np
      from pinn_examples.poisson2d_ms_reference import solve

      # u = 1 + x / 20: Delta u = 0, du/dn + u = 1 + x / 20 -+ 1 / 20 on the left and right edges
      robin = lambda x, y, nx, ny: 1.0 + x / 20.0 + nx / 20.0
      x, y, u = solve(10, lambda x, y: 0.0 * x, robin)
      np.testing.assert_allclose(u, 1.0 + x[:, None] / 20.0 + 0.0 * y[None, :], atol=1e-12)
      ```
    """
    if n < 10 or n % BLOCKS:
        raise ValueError(f"poisson2d_ms reference: n={n} cells a side; give a multiple of {BLOCKS}, at least 10.")
    laplacian = source if laplacian is None else laplacian
    h = 2.0 * HALF / n
    axis = np.linspace(-HALF, HALF, n + 1)
    points, weights = _halves(axis, h)
    g = sum(
        weights[a][:, None] * weights[b][None, :] * laplacian(*np.meshgrid(points[a], points[b], indexing="ij"))
        for a in range(2)
        for b in range(2)
    )
    rhs = -np.asarray(g, dtype=np.float64)  # -Delta_h u = -g (plus the Robin data)
    if robin is not None:
        ends = np.array([-HALF, HALF])
        for end, (sign, row) in zip(ends, ((-1.0, 0), (1.0, n))):
            rhs[row, :] += 2.0 / h * robin(np.full(n + 1, end), axis, np.full(n + 1, sign), np.zeros(n + 1))
            rhs[:, row] += 2.0 / h * robin(axis, np.full(n + 1, end), np.zeros(n + 1), np.full(n + 1, sign))
    # the 1-D operator -T, made symmetric by halving the boundary rows (their half cells): S = D (-T)
    stiffness = (2.0 * np.eye(n + 1) - np.eye(n + 1, k=1) - np.eye(n + 1, k=-1)) / h**2
    stiffness[0, 0] = stiffness[n, n] = 1.0 / h**2 + 1.0 / h
    half = np.ones(n + 1)
    half[[0, n]] = 0.5
    values, vectors = scipy.linalg.eigh(stiffness, np.diag(half))  # -T V = V diag(values), V^T D V = I
    inverse = vectors.T * half[None, :]  # V^-1 = V^T D
    w = (inverse @ rhs @ inverse.T) / (values[:, None] + values[None, :])
    return axis, axis.copy(), vectors @ w @ vectors.T


@functools.lru_cache(maxsize=2)
def cached(n: int = REFERENCE_CELLS) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``solve(n)``, solved once per process (and, with ``HODIFF_CACHE`` naming a folder, kept there as
    ``fd_poisson2d_ms_<n>.npz`` for later processes, written atomically)."""
    saved = cached_on_disk(f"fd_poisson2d_ms_{n}.npz", ("x", "y", "u"), lambda: dict(zip(("x", "y", "u"), solve(n))))
    return saved["x"], saved["y"], saved["u"]
