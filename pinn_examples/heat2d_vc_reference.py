"""Finite-volume reference of PINNacle's Heat2d-VC (scipy only): exact in time for the discretised equation.

The problem: ``u_t = div(a grad u) + 200 sin(pi x) sin(5 pi y) sin(pi t)`` on ``[0, 1]^2 x [0, 5]``, ``u = 0`` on
the boundary and at ``t = 0``, with ``a`` equal to 1 or 2: PINNacle's table (``heat2d_vc_coef_256.npy``,
``A[iy, ix]`` at ``x = ix / 255``, ``y = iy / 255``) looked up by nearest neighbour. Its published solution
solves this divergence form (``../shared/pinnacle/README.md``), although PINNacle's PINN code writes
``a (u_xx + u_yy)``; so does this reference.

- The table is the sign of a Gaussian random field ``g`` (:func:`random_field`, PINNacle's generator redrawn from
  its seed): ``a = 2`` where ``g > 0``. The nearest-neighbour cells of the table are squares of side ``1 / 255``
  centred on its nodes, so the domain's edges cut the first and last cells in half.
- :func:`heat2d_vc_fv`: cell-centred finite volumes on ``255 m`` cells a side (``m`` even: every table cell is
  ``m x m`` cells, so that each cell has one coefficient and the jumps of ``a`` lie on cell faces), the face
  coefficient the harmonic mean of its two cells' (the flux is continuous across a jump), ``u = 0`` half a cell
  beyond the edge cells. Second order in ``h`` where ``a`` is smooth, about first order along the staircase
  interfaces.
- In time the semi-discrete system ``u' = L u + f sin(pi t)``, ``u(0) = 0``, is solved exactly:
  ``u(t) = Im(w e^(i pi t)) - e^(L t) Im(w)`` with ``w = (i pi - L)^-1 f``; the transient ``e^(L t) Im(w)`` (it
  decays at least as ``e^(-2 pi^2 t)``, from about 1% of the solution) by TR-BDF2 steps until it is below
  ``1e-10`` of its start, zero after.
- :func:`heat2d_vc_reference`: the solution at the example's test points (the nodes of a 52 x 52 grid of the square,
  every fifth node of the table, at 26 times from 0 to 5) and on the picture (the table's nodes at ``t = 4.5``),
  cached in memory and, with ``HODIFF_CACHE`` set, on disk (atomic writes).

The convergence study (tests/test_heat2d_vc_reference.py) measures the error of ``m = 2`` against ``m = 4`` and the
order, and checks the time integration against TR-BDF2 steps of the whole problem.

References:
  Hao et al. (2024), "PINNacle: A Comprehensive Benchmark of Physics-Informed Neural Networks
  for Solving PDEs", NeurIPS Datasets and Benchmarks (arXiv:2306.08827), problem Heat2d-VC.
  Bank et al. (1985), "Transient simulation of silicon devices and circuits", IEEE Trans. CAD 4 (TR-BDF2).
"""

from __future__ import annotations

import functools
import os
from pathlib import Path

import numpy as np
import scipy.sparse
import scipy.sparse.linalg

from pinn_examples.fd_references import cached_on_disk, data_dir

END = 5.0
TABLE = 256  # the coefficient table's nodes a side
SEED = 20220722  # PINNacle's seed for its random fields (data/generate_functions.py)
TABLE_FILE = "heat2d_vc_coef_256.npy"
REFERENCE_M = 2  # each table cell is REFERENCE_M x REFERENCE_M cells: h = 1 / 510
TEST_STRIDE, TEST_TIMES = 5, np.linspace(0.0, END, 26)  # every fifth table node (52 a side) at 26 times
PICTURE_TIME = 4.5


def random_field(size: int = TABLE, alpha: float = 4.0, seed: int = SEED) -> np.ndarray:
    """PINNacle's Gaussian random field ``g[iy, ix]`` (``size x size``, mean 0, standard deviation 1), redrawn from
    its seed with numpy's legacy generator (its own instance: no global state)."""
    rng = np.random.RandomState(seed)
    noise = rng.normal(size=(size, size)) + 1j * rng.normal(size=(size, size))
    k = np.mgrid[:size, :size] - size // 2
    amplitude = (k[0] ** 2 + k[1] ** 2 + 1e-10) ** (-alpha / 4.0)
    amplitude[size // 2, size // 2] = 0.0
    field = np.fft.ifft2(noise * np.fft.fftshift(amplitude)).real
    return (field - field.mean()) / field.std()


def coefficient_table(directory: str | os.PathLike | None = None) -> np.ndarray:
    """The coefficient ``a[iy, ix]`` (1 or 2) at ``x = ix / 255``, ``y = iy / 255``: PINNacle's table from
    ``directory`` (default ``$HODIFF_PINNACLE_DATA`` or ``../shared/pinnacle``) when it is there, else redrawn
    (``1 + (g > 0)`` of :func:`random_field`, equal to the table at every node)."""
    folder = Path(directory) if directory else data_dir()
    path = folder / TABLE_FILE
    if path.is_file():
        table = np.load(path).astype(float)
        if table.shape != (TABLE, TABLE) or not np.all((table == 1.0) | (table == 2.0)):
            raise ValueError(f"heat2d_vc: {path} is not a {TABLE} x {TABLE} table of 1 and 2; restore PINNacle's file.")
        return table
    return 1.0 + (random_field() > 0.0)


def source(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """``f(x, y)``, the source without its factor ``sin(pi t)``."""
    return 200.0 * np.sin(np.pi * x) * np.sin(5.0 * np.pi * y)


def cell_coefficients(m: int, table: np.ndarray) -> np.ndarray:
    """``a`` on the ``(T - 1) m`` cells a side (``[iy, ix]``) of a ``T x T`` table: each table cell split ``m x m``."""
    if m < 2 or m % 2:
        raise ValueError(f"heat2d_vc_fv: m={m!r} must be an even int >= 2 (table cells split m x m, edges on faces).")
    n = (len(table) - 1) * m
    centres = (np.arange(n) + 0.5) / n
    nearest = np.floor(centres * (len(table) - 1) + 0.5).astype(int)  # no ties: centres are never half-way for even m
    return table[np.ix_(nearest, nearest)]


def operator(m: int, table: np.ndarray) -> tuple[scipy.sparse.csc_matrix, np.ndarray]:
    """The finite-volume ``L`` (``div(a grad u)``, ``u = 0`` beyond the edges) and the cell centres (one axis)."""
    a = cell_coefficients(m, table)
    n = len(a)
    h = 1.0 / n
    index = np.arange(n * n).reshape(n, n)
    rows, cols, values = [], [], []
    diagonal = np.zeros((n, n))
    for axis in (0, 1):
        first = [slice(None)] * 2
        second = [slice(None)] * 2
        first[axis], second[axis] = slice(0, -1), slice(1, None)
        left, right = a[tuple(first)], a[tuple(second)]
        face = 2.0 * left * right / (left + right) / h**2  # harmonic mean
        i, j = index[tuple(first)].ravel(), index[tuple(second)].ravel()
        rows += [i, j]
        cols += [j, i]
        values += [face.ravel(), face.ravel()]
        diagonal[tuple(first)] -= face
        diagonal[tuple(second)] -= face
        for end in (0, -1):  # u = 0 on the edge, half a cell away: the flux a (0 - u) / (h / 2)
            edge = [slice(None)] * 2
            edge[axis] = end
            diagonal[tuple(edge)] -= 2.0 * a[tuple(edge)] / h**2
    rows.append(index.ravel())
    cols.append(index.ravel())
    values.append(diagonal.ravel())
    entries = (np.concatenate(values), (np.concatenate(rows), np.concatenate(cols)))
    matrix = scipy.sparse.csc_matrix(entries, (n * n,) * 2)
    return matrix, (np.arange(n) + 0.5) * h


def _transient(matrix: scipy.sparse.csc_matrix, start: np.ndarray, times: np.ndarray, dt: float) -> np.ndarray:
    """``e^(L t) start`` at ``times`` (multiples of ``dt``) by TR-BDF2 steps of ``dt`` (rows), zero once it is below
    ``1e-10`` of ``start``."""
    steps = np.round(np.asarray(times) / dt).astype(int)
    if np.any(np.abs(steps * dt - times) > 1e-9) or np.any(steps < 0):
        raise ValueError(f"heat2d_vc_fv: times must be multiples of dt={dt} from 0; got {times}.")
    gamma = 2.0 - np.sqrt(2.0)
    identity = scipy.sparse.identity(matrix.shape[0], format="csc")
    trapezoid = scipy.sparse.linalg.splu((identity - 0.5 * gamma * dt * matrix).tocsc())
    bdf = scipy.sparse.linalg.splu((identity - (1.0 - gamma) / (2.0 - gamma) * dt * matrix).tocsc())
    out = np.zeros((len(times), len(start)))
    v, step, small = start.copy(), 0, 1e-10 * np.abs(start).max()
    for k in np.argsort(steps):
        target = steps[k]
        while step < target and np.abs(v).max() > small:
            middle = trapezoid.solve(v + 0.5 * gamma * dt * (matrix @ v))
            v = bdf.solve((middle / gamma - (1.0 - gamma) ** 2 / gamma * v) / (2.0 - gamma))
            step += 1
        if np.abs(v).max() > small:
            out[k] = v
    return out


def heat2d_vc_fv(m: int, times: np.ndarray, dt: float = 2e-3, table: np.ndarray | None = None) -> np.ndarray:
    """The finite-volume solution ``(len(times), 255 m, 255 m)`` (``[k, iy, ix]`` at the cell centres, see
    :func:`operator`), exact in time for the semi-discrete equations but for the transient's TR-BDF2 steps of
    ``dt`` (only while it lasts: ``t`` below about 1.5)."""
    table = coefficient_table() if table is None else table
    matrix, centres = operator(m, table)
    n = len(centres)
    forcing = source(centres[None, :], centres[:, None]).ravel()
    shifted = (1j * np.pi * scipy.sparse.identity(n * n) - matrix).tocsc()
    w = scipy.sparse.linalg.spsolve(shifted, forcing.astype(complex))
    times = np.asarray(times, dtype=float)
    steady = np.imag(np.exp(1j * np.pi * times)[:, None] * w[None, :])
    return (steady - _transient(matrix, np.imag(w), times, dt)).reshape(len(times), n, n)


def at_nodes(solution: np.ndarray, m: int, stride: int = 1) -> np.ndarray:
    """The cell solution ``(..., n, n)`` (``n = (T - 1) m``) at the ``T x T`` table's nodes (every ``stride``-th),
    bilinear between cell centres, ``u = 0`` on the edges: ``(..., ceil(T / stride), ceil(T / stride))``."""
    n = solution.shape[-1]
    nodes = np.arange(0, n // m + 1, stride) / (n // m)
    padded = np.zeros(solution.shape[:-2] + (n + 2, n + 2))
    padded[..., 1:-1, 1:-1] = solution
    # the values half a cell beyond the edge: minus the edge cell's, so that u = 0 on the edge between them
    padded[..., 0, :], padded[..., -1, :] = -padded[..., 1, :], -padded[..., -2, :]
    padded[..., :, 0], padded[..., :, -1] = -padded[..., :, 1], -padded[..., :, -2]
    position = nodes * n + 0.5  # in padded index units: cell k's centre is at k + 1
    low = np.clip(np.floor(position).astype(int), 0, n)
    weight = position - low
    rows = padded[..., low, :] * (1 - weight)[:, None] + padded[..., low + 1, :] * weight[:, None]
    return rows[..., :, low] * (1 - weight) + rows[..., :, low + 1] * weight


def grid_points(stride: int, times: np.ndarray) -> np.ndarray:
    """``(len(times) * k * k, 3)`` points ``(x, y, t)`` of the table's every ``stride``-th node at ``times``, in the
    order of ``at_nodes(...)[k_t, iy, ix]``."""
    nodes = np.arange(0, TABLE, stride) / (TABLE - 1)
    t, y, x = np.meshgrid(times, nodes, nodes, indexing="ij")
    return np.column_stack([x.ravel(), y.ravel(), t.ravel()])


@functools.lru_cache(maxsize=2)
def heat2d_vc_reference(m: int = REFERENCE_M) -> dict[str, np.ndarray]:
    """The reference at the test points and on the picture (``t = 4.5``, every table node), solved once.

    With the environment variable ``HODIFF_CACHE`` naming a directory they are also kept there as
    ``fv_heat2d_vc_<m>.npz`` (written atomically) and read back by later processes.

    Returns:
      ``{"points": (P, 3), "u": (P,), "x": (256,), "y": (256,), "picture": (256, 256) [ix, iy]}``.
    """

    def compute() -> dict[str, np.ndarray]:
        times = np.append(TEST_TIMES, PICTURE_TIME)
        solution = heat2d_vc_fv(m, times)
        test = at_nodes(solution[:-1], m, TEST_STRIDE)
        nodes = np.arange(TABLE) / (TABLE - 1)
        picture = at_nodes(solution[-1], m).T
        return {"points": grid_points(TEST_STRIDE, TEST_TIMES), "u": test.ravel(), "x": nodes, "y": nodes,
                "picture": picture}  # fmt: skip

    count = len(TEST_TIMES) * len(range(0, TABLE, TEST_STRIDE)) ** 2
    shapes: dict[str, tuple[int | None, ...]] = {"points": (count, 3), "u": (count,), "x": (TABLE,), "y": (TABLE,)}
    shapes["picture"] = (TABLE, TABLE)
    return cached_on_disk(f"fv_heat2d_vc_{m}.npz", ("points", "u", "x", "y", "picture"), compute, shapes)
