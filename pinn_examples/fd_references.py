"""Finite-difference references on non-box domains (scipy.sparse), each tested for convergence.

- :func:`poisson_lshape_fd`: -(u_xx + u_yy) = 1 on the L-shape [-1, 1]^2 minus the quadrant
  x > 0, y > 0, u = 0 on the boundary; 5-point stencil on a grid aligned with the L.
- :func:`laplace_holes_fd`: u_xx + u_yy = 0 on [-0.5, 0.5]^2 minus four disks of radius 0.1
  centred at (+-0.3, +-0.3), u = 1 on the square, u = 0 on the circles; Shortley-Weller stencil
  (second order) at the curved boundary.
- :func:`poisson_holes_fd`: the solver behind it, -(u_xx + u_yy) + k2 u = f on a rectangle minus any
  disks, Dirichlet data on the edges and the circles; :func:`poisson2d_cg_fd` (PINNacle Poisson2d-CG)
  is another call of it.
- :func:`on_test_grid`: a fine solution restricted to a coarser aligned test grid.

Grid values outside the domain are NaN. ``cached`` keeps a solution in memory (and, with
``HODIFF_CACHE`` set, on disk) so that repeated calls do not repeat the sparse solve.
"""

from __future__ import annotations

import functools
import logging
import os
import zipfile
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import scipy.sparse
import scipy.sparse.linalg

from pinn_examples.npz_headers import npz_headers

HOLE_CENTRES = ((-0.3, -0.3), (-0.3, 0.3), (0.3, -0.3), (0.3, 0.3))
HOLE_RADIUS = 0.1
logger = logging.getLogger(__name__)
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


def _circle_distance(
    px: np.ndarray, py: np.ndarray, dx: float, dy: float, disks: Sequence[tuple[float, float, float]]
) -> np.ndarray:
    """Distance from (px, py) along the unit direction (dx, dy) to the first circle of ``disks`` it meets (or inf)."""
    best = np.full(px.shape, np.inf)
    for cx, cy, radius in disks:
        b = (px - cx) * dx + (py - cy) * dy
        c = (px - cx) ** 2 + (py - cy) ** 2 - radius**2
        disc = b**2 - c
        hit = disc >= 0
        s = np.where(hit, -b - np.sqrt(np.where(hit, disc, 0.0)), np.inf)
        best = np.minimum(best, np.where(s >= 0, s, np.inf))
    return best


def _dirichlet(value: float | Callable[[np.ndarray, np.ndarray], np.ndarray], x: np.ndarray, y: np.ndarray):
    """A constant, or ``value(x, y)``, at the points ``(x, y)``."""
    return np.asarray(value(x, y), dtype=np.float64) if callable(value) else np.full(x.shape, float(value))


def poisson_holes_fd(
    n: int,
    low: tuple[float, float],
    high: tuple[float, float],
    disks: Sequence[tuple[float, float, float]],
    k2: float = 0.0,
    source: Callable[[np.ndarray, np.ndarray], np.ndarray] | None = None,
    outer: float | Callable[[np.ndarray, np.ndarray], np.ndarray] = 0.0,
    circles: float | Callable[[np.ndarray, np.ndarray], np.ndarray] = 0.0,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """-(u_xx + u_yy) + k2 u = f on a rectangle minus disks, Dirichlet data on the edges and the circles.

    Five-point stencil on a grid of spacing h = 1/n with nodes on the rectangle's edges; at a node
    whose neighbour lies in a disk, the arm is shortened to the circle (Shortley-Weller), which
    keeps the scheme second order: u_xx ~ 2 / (hE + hW) ((uE - uP) / hE + (uW - uP) / hW) with the
    circle's value at the shortened arm's end.

    Args:
      n: grid cells per unit length (h = 1/n); the rectangle's sides must hold whole cells, and
        n >= 2 / (the smallest radius), so that every disk holds grid nodes.
      low, high: the rectangle's corners ``(x0, y0)``, ``(x1, y1)``.
      disks: ``(cx, cy, radius)`` of each hole, each strictly inside the rectangle.
      k2: the reaction coefficient k^2 >= 0 (0: Poisson).
      source: ``f(x, y)`` (numpy arrays in, array out); ``None`` is f = 0.
      outer, circles: the Dirichlet data on the rectangle's edges and on the circles: a number,
        or ``g(x, y)`` (numpy arrays in, array out).

    Returns:
      ``(x, y, u)``: the axes and u on the grid (ij indexing), NaN at the nodes inside a disk
      (the circle's value on a circle).

    Raises:
      ValueError: for a grid that does not fit the rectangle or is too coarse for a disk, a disk
        that is not inside the rectangle, or k2 < 0.

    References:
      Shortley & Weller (1938), "The numerical solution of Laplace's equation", J. Appl. Phys. 9.

    Example:
      ```python
      from pinn_examples.fd_references import poisson_holes_fd

      x, y, u = poisson_holes_fd(40, (-0.5, -0.5), (0.5, 0.5), [(0.0, 0.0, 0.2)], outer=1.0, circles=1.0)
      assert abs(u[0, 0] - 1.0) + abs(u[10, 20] - 1.0) < 1e-12  # u = 1 solves Laplace's equation
      ```
    """
    (x0, y0), (x1, y1) = (float(v) for v in low), (float(v) for v in high)
    cells = [(x1 - x0) * n, (y1 - y0) * n]
    if min(cells) <= 0 or any(abs(c - round(c)) > 1e-9 * max(1.0, c) for c in cells):
        raise ValueError(
            f"poisson_holes_fd: the rectangle {low} - {high} does not hold whole cells of h = 1/{n}; give a "
            "rectangle with low < high whose sides are multiples of h."
        )
    if k2 < 0:
        raise ValueError(f"poisson_holes_fd: k2={k2} is negative; give k2 >= 0 (the equation is -Lap(u) + k2 u = f).")
    for cx, cy, radius in disks:
        if not (radius > 0 and x0 < cx - radius and cx + radius < x1 and y0 < cy - radius and cy + radius < y1):
            raise ValueError(
                f"poisson_holes_fd: the disk (centre ({cx}, {cy}), radius {radius}) is not strictly inside the "
                f"rectangle {low} - {high}; give disks of positive radius inside it."
            )
    smallest = min((radius for _, _, radius in disks), default=np.inf)
    if n * smallest < 2.0 - 1e-9:
        raise ValueError(
            f"poisson_holes_fd: n={n} is too coarse for a disk of radius {smallest}; give n >= "
            f"{int(np.ceil(2.0 / smallest - 1e-9))} cells per unit length."
        )
    h, (nx, ny) = 1.0 / n, (int(round(c)) for c in cells)
    x, y = np.linspace(x0, x1, nx + 1), np.linspace(y0, y1, ny + 1)
    px, py = np.meshgrid(x, y, indexing="ij")
    i, j = np.meshgrid(np.arange(nx + 1), np.arange(ny + 1), indexing="ij")
    on_edge = (i == 0) | (i == nx) | (j == 0) | (j == ny)
    tolerance = _ON_CIRCLE * max(x1 - x0, y1 - y0)
    gaps = [np.hypot(px - cx, py - cy) - radius for cx, cy, radius in disks]  # to each circle, < 0 inside
    gap = np.min(gaps or [np.full(px.shape, np.inf)], axis=0)
    unknown = ~on_edge & (gap > tolerance)
    index = -np.ones(i.shape, dtype=np.int64)
    index[unknown] = np.arange(unknown.sum())
    ui, uj = i[unknown], j[unknown]
    me, xp, yp = index[ui, uj], px[unknown], py[unknown]
    arms = {}
    for di, dj in ((1, 0), (-1, 0), (0, 1), (0, -1)):
        other = index[ui + di, uj + dj]
        cut = (other < 0) & ~on_edge[ui + di, uj + dj]  # the neighbour is in a disk or on a circle
        length = np.where(cut, np.minimum(_circle_distance(xp, yp, di, dj, disks), h), h)
        arms[(di, dj)] = (other, length, on_edge[ui + di, uj + dj])
    rows, cols, values, rhs = [], [], [], np.zeros(len(me))
    diagonal = np.zeros(len(me))
    for plus, minus in (((1, 0), (-1, 0)), ((0, 1), (0, -1))):
        lengths = arms[plus][1] + arms[minus][1]
        for arm in (plus, minus):
            other, length, edge = arms[arm]
            weight = 2.0 / (length * lengths)  # coefficient of the arm's end in -u_xx (or -u_yy)
            diagonal += weight
            inside = other >= 0
            rows.append(me[inside])
            cols.append(other[inside])
            values.append(-weight[inside])
            ex, ey = xp + arm[0] * length, yp + arm[1] * length
            ends = np.where(edge, _dirichlet(outer, ex, ey), _dirichlet(circles, ex, ey))
            rhs += np.where(inside, 0.0, weight * ends)
    if k2:
        diagonal += k2
    if source is not None:
        rhs += _dirichlet(source, xp, yp)
    rows.append(me)
    cols.append(me)
    values.append(diagonal)
    u = np.where(on_edge, _dirichlet(outer, px, py), _dirichlet(circles, px, py))
    u[unknown] = _solve(rows, cols, values, rhs)
    u[gap < -tolerance] = np.nan
    return x, y, u


def laplace_holes_fd(
    n: int, boundary: Callable[[np.ndarray, np.ndarray], np.ndarray] | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """u_xx + u_yy = 0 on [-0.5, 0.5]^2 minus four disks, u = 1 on the square, 0 on the circles.

    :func:`poisson_holes_fd` (Shortley-Weller, second order) with k2 = 0, f = 0 and these disks.

    Args:
      n: grid cells per unit length (h = 1/n), at least 20 (so every hole holds grid nodes).
      boundary: other Dirichlet data ``boundary(x, y) -> u`` on the square and the circles
        (numpy arrays in, array out), e.g. a harmonic polynomial to check the scheme.

    Returns:
      ``(x, y, u)``: the axes (``n + 1`` nodes each) and u on the grid (ij indexing), NaN at the
      nodes inside a hole (0 on a circle).
    """
    disks = [(cx, cy, HOLE_RADIUS) for cx, cy in HOLE_CENTRES]
    outer, circles = (1.0, 0.0) if boundary is None else (boundary, boundary)
    return poisson_holes_fd(n, (-0.5, -0.5), (0.5, 0.5), disks, outer=outer, circles=circles)


# poisson2d_cg (PINNacle Poisson2d-CG): -Laplace(u) + 64 u = f on [-1, 1]^2 minus these disks (cx, cy, radius)
CG_DISKS = ((0.5, 0.5, 0.2), (0.4, -0.4, 0.4), (-0.2, -0.7, 0.1), (-0.6, 0.5, 0.3))
CG_K2 = 64.0
CG_EDGES, CG_CIRCLES = 0.2, 1.0  # u on the square's edges, on the circles


def cg_source(x, y, sin: Callable = np.sin):
    """poisson2d_cg's ``f = 10 (17 + x^2 + y^2) sin(pi x) sin(4 pi y)``; pass ``sin=tf.sin`` for tensors."""
    return 10.0 * (17.0 + x**2 + y**2) * sin(np.pi * x) * sin(4.0 * np.pi * y)


def poisson2d_cg_fd(n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """poisson2d_cg's -(u_xx + u_yy) + 64 u = f on [-1, 1]^2 minus four disks, u = 0.2 on the edges, 1 on the circles.

    :func:`poisson_holes_fd` with :data:`CG_DISKS` and :func:`cg_source`. Second order: the
    relative L2 difference of h = 1/200 and 1/400 on the 201 x 201 test grid is 1.1e-4, so the
    h = 1/400 solution (801 x 801 nodes, 5 s) is off by about 4e-5 (Richardson).

    Args:
      n: grid cells per unit length (h = 1/n), at least 20.

    Returns:
      ``(x, y, u)``: the axes (``2n + 1`` nodes each) and u (ij indexing), NaN inside the disks.
    """
    return poisson_holes_fd(n, (-1.0, -1.0), (1.0, 1.0), CG_DISKS, CG_K2, cg_source, CG_EDGES, CG_CIRCLES)


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


DATA_DIR = Path(__file__).resolve().parents[1].parent / "shared" / "pinnacle"  # ../shared/pinnacle from the repository
DATA_VARIABLE = "HODIFF_PINNACLE_DATA"  # an environment variable naming another folder for PINNacle's input files


def data_dir() -> Path:
    """The folder of PINNacle's input files (coefficient tables): ``$HODIFF_PINNACLE_DATA`` when set, else
    :data:`DATA_DIR`."""
    return Path(os.environ.get(DATA_VARIABLE) or DATA_DIR)


@functools.lru_cache(maxsize=4)
def cached(name: str, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``poisson_lshape_fd(n)``, ``laplace_holes_fd(n)`` or ``poisson2d_cg_fd(n)`` (``name`` "lshape" / "holes" /
    "cg2d"), solved once.

    With the environment variable ``HODIFF_CACHE`` naming a directory, the grid is also kept there
    as ``fd_<name>_<n>.npz`` and read back by later processes.
    """
    solver = {"lshape": poisson_lshape_fd, "holes": laplace_holes_fd, "cg2d": poisson2d_cg_fd}[name]
    nodes = n + 1 if name == "holes" else 2 * n + 1
    shapes = {"x": (nodes,), "y": (nodes,), "u": (nodes, nodes)}

    def compute() -> dict[str, np.ndarray]:
        return dict(zip(("x", "y", "u"), solver(n)))

    saved = cached_on_disk(f"fd_{name}_{n}.npz", ("x", "y", "u"), compute, shapes)
    return saved["x"], saved["y"], saved["u"]


Shapes = dict[str, tuple[int | None, ...]]


def cached_on_disk(
    file_name: str,
    names: tuple[str, ...],
    compute: Callable[[], dict[str, np.ndarray]],
    shapes: Shapes | None = None,
) -> dict[str, np.ndarray]:
    """``compute()``: with the environment variable ``HODIFF_CACHE`` naming a directory, read from there as
    ``file_name`` (the arrays ``names``) when an earlier process kept it, else computed and kept there (atomically).

    A file that cannot be used (unreadable, or arrays of other ``shapes`` than expected: see :func:`read_cache`)
    is computed again with a warning; a ``HODIFF_CACHE`` that is not a directory, or a cache that cannot be
    written, warns and keeps nothing (:func:`write_cache`)."""
    directory = os.environ.get("HODIFF_CACHE")
    if directory and os.path.exists(directory) and not os.path.isdir(directory):
        logger.warning(
            "HODIFF_CACHE=%s is not a directory; the reference is computed and not kept. Set HODIFF_CACHE to a "
            "directory (it is created if missing) or unset it.",
            directory,
        )
        directory = None
    path = os.path.join(directory, file_name) if directory else None
    if path and os.path.lexists(path):
        saved = read_cache(path, names, shapes)
        if saved is not None:
            return saved
    result = compute()
    if path:
        write_cache(path, **result)
    return result


def read_cache(path: str, names: tuple[str, ...], shapes: Shapes | None = None) -> dict[str, np.ndarray] | None:
    """The arrays ``names`` of the ``.npz`` cache ``path``; ``None``, with a warning, when it cannot be used,
    so that the caller computes them again.

    A cache cannot be used when it is not a file (a directory at its path), not an archive, truncated, missing an
    array, holds a header claiming more than the file holds (checked before anything is loaded, so a corrupt header
    cannot exhaust the memory: :func:`pinn_examples.npz_headers.npz_headers`), or, with ``shapes``
    (``{name: shape}``, ``None`` for any length along an axis), holds an array of another shape (a cache
    written by another version of the reference).
    """
    try:
        if not os.path.isfile(path):
            raise OSError(f"{path} is not a file")
        headers = npz_headers(path, names)
        for name, expected in (shapes or {}).items():
            shape = headers[name][0]
            if len(shape) != len(expected) or any(e is not None and e != s for s, e in zip(shape, expected)):
                wanted = str(tuple("any" if e is None else e for e in expected)).replace("'", "")
                raise ValueError(f"it holds {name} of shape {shape}, not the expected {wanted}")
        with np.load(path, allow_pickle=False) as data:
            return {name: data[name] for name in names}
    except (OSError, ValueError, KeyError, EOFError, MemoryError, zipfile.BadZipFile) as error:
        logger.warning(
            "the reference cache %s cannot be used (%s: %s); computing the reference again.",
            path,
            type(error).__name__,
            error,
        )
        return None


def write_cache(path: str, **arrays: np.ndarray) -> bool:
    """Writes ``arrays`` to the ``.npz`` cache ``path`` atomically (a kill leaves the old file or none).

    Returns whether it was kept: a cache that cannot be written (a directory at ``path``, a file where its folder
    should be, no permission, a full disk) warns and keeps nothing; the reference was computed all the same."""
    from hodiff.pinn.runlog import atomic_write

    try:
        with atomic_write(path) as temporary, open(temporary, "wb") as file:
            np.savez(file, **arrays)
    except OSError as error:
        logger.warning(
            "the reference cache %s cannot be written (%s: %s); the reference is used but not kept. Remove what is "
            "in the way or point the cache elsewhere (HODIFF_CACHE, or the cache= argument).",
            path,
            type(error).__name__,
            error,
        )
        return False
    return True
