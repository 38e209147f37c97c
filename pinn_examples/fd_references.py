"""Finite-difference references on non-box domains (scipy.sparse), each tested for convergence.

- :func:`poisson_lshape_fd`: -(u_xx + u_yy) = 1 on the L-shape [-1, 1]^2 minus the quadrant
  x > 0, y > 0, u = 0 on the boundary; 5-point stencil on a grid aligned with the L.
- :func:`laplace_holes_fd`: u_xx + u_yy = 0 on [-0.5, 0.5]^2 minus four disks of radius 0.1
  centred at (+-0.3, +-0.3), u = 1 on the square, u = 0 on the circles; Shortley-Weller stencil
  (second order) at the curved boundary.
- :func:`on_test_grid`: a fine solution restricted to a coarser aligned test grid.

Grid values outside the domain are NaN. ``cached`` keeps a solution in memory (and, with
``HODIFF_CACHE`` set, on disk) so that repeated calls do not repeat the sparse solve.
"""

from __future__ import annotations

import functools
import logging
import os
import zipfile
from collections.abc import Callable

import numpy as np
import scipy.sparse
import scipy.sparse.linalg

HOLE_CENTRES = ((-0.3, -0.3), (-0.3, 0.3), (0.3, -0.3), (0.3, 0.3))
HOLE_RADIUS = 0.1
_ON_CIRCLE = 1e-9  # grid points this close to a circle (relative to the box size 1) lie on it: u = 0 there


def _solve(rows: list, cols: list, values: list, rhs: np.ndarray) -> np.ndarray:
    size = len(rhs)
    matrix = scipy.sparse.csc_matrix(
        (np.concatenate(values), (np.concatenate(rows), np.concatenate(cols))), shape=(size, size)
    )
    return scipy.sparse.linalg.spsolve(matrix, rhs)


def poisson_lshape_fd(n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """-(u_xx + u_yy) = 1 on the L-shape, u = 0 on its boundary, by the 5-point stencil.

    The L has vertices (0,0), (1,0), (1,-1), (-1,-1), (-1,1), (0,1): the square [-1, 1]^2 without
    the open quadrant x > 0, y > 0. The grid has spacing h = 1/n and nodes on every edge. The
    re-entrant corner (u ~ r^(2/3) sin(2 theta / 3)) limits the convergence to about h^(4/3) in L2.

    Args:
      n: grid cells per unit length (h = 1/n), at least 2.

    Returns:
      ``(x, y, u)``: the axes (``2n + 1`` nodes each) and u on the grid (ij indexing), NaN at
      the nodes outside the closed L.
    """
    if n < 2:
        raise ValueError(f"poisson_lshape_fd: n={n} is too coarse; give n >= 2 cells per unit length.")
    h = 1.0 / n
    axis = np.linspace(-1.0, 1.0, 2 * n + 1)
    i, j = np.meshgrid(np.arange(2 * n + 1), np.arange(2 * n + 1), indexing="ij")
    unknown = (i > 0) & (i < 2 * n) & (j > 0) & (j < 2 * n) & ~((i >= n) & (j >= n))
    index = -np.ones(i.shape, dtype=np.int64)
    index[unknown] = np.arange(unknown.sum())
    ui, uj = i[unknown], j[unknown]
    me = index[ui, uj]
    rows, cols, values = [me], [me], [np.full(len(me), 4.0 / h**2)]
    for di, dj in ((1, 0), (-1, 0), (0, 1), (0, -1)):
        other = index[ui + di, uj + dj]
        inside = other >= 0  # a neighbour that is not an unknown is on the boundary, where u = 0
        rows.append(me[inside])
        cols.append(other[inside])
        values.append(np.full(inside.sum(), -1.0 / h**2))
    u = np.zeros(i.shape)
    u[unknown] = _solve(rows, cols, values, np.ones(len(me)))
    u[(i > n) & (j > n)] = np.nan
    return axis, axis.copy(), u


def _circle_distance(px: np.ndarray, py: np.ndarray, dx: float, dy: float) -> np.ndarray:
    """Distance from (px, py) along the unit direction (dx, dy) to the first hole circle it meets (inf if none)."""
    best = np.full(px.shape, np.inf)
    for cx, cy in HOLE_CENTRES:
        b = (px - cx) * dx + (py - cy) * dy
        c = (px - cx) ** 2 + (py - cy) ** 2 - HOLE_RADIUS**2
        disc = b**2 - c
        hit = disc >= 0
        s = np.where(hit, -b - np.sqrt(np.where(hit, disc, 0.0)), np.inf)
        best = np.minimum(best, np.where(s >= 0, s, np.inf))
    return best


def laplace_holes_fd(
    n: int, boundary: Callable[[np.ndarray, np.ndarray], np.ndarray] | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """u_xx + u_yy = 0 on [-0.5, 0.5]^2 minus four disks, u = 1 on the square, 0 on the circles.

    Five-point stencil on a grid of spacing h = 1/n; at a node whose neighbour lies in a hole,
    the arm is shortened to the circle (Shortley-Weller), which keeps the scheme second order:
    u_xx ~ 2 / (hE + hW) ((uE - uP) / hE + (uW - uP) / hW) with the circle value u = 0 at the
    shortened arm's end.

    Args:
      n: grid cells per unit length (h = 1/n), at least 20 (so every hole holds grid nodes).
      boundary: other Dirichlet data ``boundary(x, y) -> u`` on the square and the circles
        (numpy arrays in, array out), e.g. a harmonic polynomial to check the scheme.

    Returns:
      ``(x, y, u)``: the axes (``n + 1`` nodes each) and u on the grid (ij indexing), NaN at the
      nodes inside a hole (0 on a circle).

    References:
      Shortley & Weller (1938), "The numerical solution of Laplace's equation", J. Appl. Phys. 9.
    """
    if n < 20:
        raise ValueError(f"laplace_holes_fd: n={n} is too coarse; give n >= 20 cells per unit length.")
    h = 1.0 / n
    axis = np.linspace(-0.5, 0.5, n + 1)
    px, py = np.meshgrid(axis, axis, indexing="ij")
    i, j = np.meshgrid(np.arange(n + 1), np.arange(n + 1), indexing="ij")
    gap = np.min([np.hypot(px - cx, py - cy) for cx, cy in HOLE_CENTRES], axis=0) - HOLE_RADIUS
    on_square = (i == 0) | (i == n) | (j == 0) | (j == n)
    unknown = ~on_square & (gap > _ON_CIRCLE)
    index = -np.ones(i.shape, dtype=np.int64)
    index[unknown] = np.arange(unknown.sum())
    ui, uj = i[unknown], j[unknown]
    me, x0, y0 = index[ui, uj], px[unknown], py[unknown]
    arms = {}
    for di, dj in ((1, 0), (-1, 0), (0, 1), (0, -1)):
        other = index[ui + di, uj + dj]
        cut = (other < 0) & ~on_square[ui + di, uj + dj]  # the neighbour is in a hole or on a circle
        length = np.where(cut, np.minimum(_circle_distance(x0, y0, di, dj), h), h)
        arms[(di, dj)] = (other, length, on_square[ui + di, uj + dj])
    rows, cols, values, rhs = [], [], [], np.zeros(len(me))
    diagonal = np.zeros(len(me))
    for plus, minus in (((1, 0), (-1, 0)), ((0, 1), (0, -1))):
        lengths = arms[plus][1] + arms[minus][1]
        for arm in (plus, minus):
            other, length, square = arms[arm]
            weight = 2.0 / (length * lengths)  # coefficient of the arm's end in -u_xx (or -u_yy)
            diagonal += weight
            inside = other >= 0
            rows.append(me[inside])
            cols.append(other[inside])
            values.append(-weight[inside])
            if boundary is None:
                rhs += np.where(square, weight, 0.0)  # u = 1 on the square, 0 on the circles
            else:
                ends = boundary(x0 + arm[0] * length, y0 + arm[1] * length)
                rhs += np.where(inside, 0.0, weight * ends)
    rows.append(me)
    cols.append(me)
    values.append(diagonal)
    u = np.where(on_square, 1.0, 0.0) if boundary is None else np.where(unknown, 0.0, boundary(px, py))
    u[unknown] = _solve(rows, cols, values, rhs)
    u[gap < -_ON_CIRCLE] = np.nan
    return axis, axis.copy(), u


def on_test_grid(x: np.ndarray, y: np.ndarray, u: np.ndarray, points: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The nodes of an aligned fine grid that form a ``points x points`` test grid (every k-th node).

    Raises:
      ValueError: when ``len(x) - 1`` is not a multiple of ``points - 1``.
    """
    step, left = divmod(len(x) - 1, points - 1)
    if left:
        raise ValueError(
            f"on_test_grid: {len(x) - 1} grid cells do not contain a {points}-point grid; "
            f"give a fine grid whose cell count is a multiple of {points - 1}."
        )
    return x[::step], y[::step], u[::step, ::step]


@functools.lru_cache(maxsize=4)
def cached(name: str, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``poisson_lshape_fd(n)`` or ``laplace_holes_fd(n)`` (``name`` "lshape" / "holes"), solved once.

    With the environment variable ``HODIFF_CACHE`` naming a directory, the grid is also kept there
    as ``fd_<name>_<n>.npz`` and read back by later processes.
    """
    solver = {"lshape": poisson_lshape_fd, "holes": laplace_holes_fd}[name]
    directory = os.environ.get("HODIFF_CACHE")
    path = os.path.join(directory, f"fd_{name}_{n}.npz") if directory else None
    if path and os.path.exists(path):
        saved = read_cache(path, ("x", "y", "u"))
        if saved is not None:
            return saved["x"], saved["y"], saved["u"]
    x, y, u = solver(n)
    if path:
        write_cache(path, x=x, y=y, u=u)
    return x, y, u


def read_cache(path: str, names: tuple[str, ...]) -> dict[str, np.ndarray] | None:
    """The arrays ``names`` of the ``.npz`` cache ``path``; ``None``, with a warning, when it is unreadable
    (truncated, not an archive, an array missing), so that the caller computes them again."""
    try:
        with np.load(path, allow_pickle=False) as data:
            return {name: data[name] for name in names}
    except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile) as error:
        logging.getLogger(__name__).warning(
            "the reference cache %s is unreadable (%s: %s); computing the reference again.",
            path,
            type(error).__name__,
            error,
        )
        return None


def write_cache(path: str, **arrays: np.ndarray) -> None:
    """Writes ``arrays`` to the ``.npz`` cache ``path`` atomically (a kill leaves the old file or none)."""
    from hodiff.pinn.runlog import atomic_write

    with atomic_write(path) as temporary, open(temporary, "wb") as file:
        np.savez(file, **arrays)
