"""Steady lid-driven cavity flow by finite volumes on a staggered (MAC) grid, solved by Newton.

Incompressible Navier-Stokes on [0, 1]^2: ``u u_x + v u_y + p_x = nu (u_xx + u_yy)``, the same
for ``v`` with ``p_y``, and ``u_x + v_y = 0``; the lid ``y = 1`` moves with ``u = 4x(1 - x)``,
``v = 0``, the other walls are at rest, and ``p(0, 0) = 0``. Second-order central differences of
the conservative form on ``cells x cells`` cells (Harlow & Welch 1965): ``p`` at cell centres, ``u``
and ``v`` on the cell faces, wall values through ghost cells. Every discrete term is linear or a
product of two linear (affine) maps of the unknowns, so the Jacobian is assembled exactly and
Newton's method (``scipy.sparse.linalg.spsolve``) converges quadratically from the Stokes flow.
Values between the nodes are bilinear interpolations (second order, as the scheme).

References:
  Harlow & Welch (1965), "Numerical calculation of time-dependent viscous incompressible flow of
  fluid with free surface", Phys. Fluids 8.
"""

from __future__ import annotations

import os

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg
from scipy.interpolate import RegularGridInterpolator

from pinn_examples.fd_references import read_cache, write_cache

NU = 0.01


def lid(x: np.ndarray) -> np.ndarray:
    """The lid's velocity ``u(x, 1) = 4x(1 - x)``."""
    return 4.0 * x * (1.0 - x)


def _pick(shape: tuple[int, int], i: np.ndarray, j: np.ndarray, di: int, dj: int) -> sp.csr_matrix:
    """The matrix taking a raveled ``shape`` array ``A`` to ``A[i + di, j + dj]`` over the grid ``i x j``."""
    rows_i, rows_j = np.meshgrid(i, j, indexing="ij")
    cols = np.ravel_multi_index((rows_i.ravel() + di, rows_j.ravel() + dj), shape)
    return sp.csr_matrix((np.ones(cols.size), (np.arange(cols.size), cols)), shape=(cols.size, shape[0] * shape[1]))


def _full(n: int, offset: int, component: str) -> tuple[sp.csr_matrix, np.ndarray]:
    """``(E, e)``: the velocity component with its wall and ghost values, ``E z + e``, from the unknowns ``z``.

    ``u`` is stored as ``(n + 1, n + 2)``: x faces ``i h``, y centres ``(j - 1/2) h`` with ghost rows
    ``j = 0`` and ``n + 1``; ``v`` as ``(n + 2, n + 1)``, the transpose layout. The unknowns of the
    component start at ``offset`` in ``z``.
    """
    h, size = 1.0 / n, 3 * n * n - 2 * n
    shape = (n + 1, n + 2) if component == "u" else (n + 2, n + 1)
    rows, cols, vals, e = [], [], [], np.zeros(shape)
    inner = np.arange(1, n)  # interior face positions along the component's own direction
    across = np.arange(1, n + 1)  # cell centres across it
    index = offset + np.arange((n - 1) * n).reshape(n - 1, n)  # unknowns, [inner, across]

    def add(a, b, unknowns, sign):
        rows.extend(np.ravel_multi_index((a, b), shape).ravel())
        cols.extend(unknowns.ravel())
        vals.extend(np.full(unknowns.size, sign))

    if component == "u":
        ii, jj = np.meshgrid(inner, across, indexing="ij")
        add(ii, jj, index, 1.0)
        add(inner, np.zeros(n - 1, int), index[:, 0], -1.0)  # bottom ghost: -u
        add(inner, np.full(n - 1, n + 1), index[:, -1], -1.0)  # top ghost: 2 lid - u
        e[inner, n + 1] = 2.0 * lid(inner * h)
    else:
        jj, ii = np.meshgrid(inner, across, indexing="ij")
        add(ii, jj, index, 1.0)
        add(np.zeros(n - 1, int), inner, index[:, 0], -1.0)  # left ghost: -v
        add(np.full(n - 1, n + 1), inner, index[:, -1], -1.0)  # right ghost: -v
    matrix = sp.csr_matrix((vals, (rows, cols)), shape=(shape[0] * shape[1], size))
    return matrix, e.ravel()


def solve(cells: int = 128, nu: float = NU, tolerance: float = 1e-11) -> dict[str, np.ndarray]:
    """The discrete flow on ``cells x cells`` cells.

    Returns:
      ``{"u": (cells + 1, cells + 2), "v": (cells + 2, cells + 1), "p": (cells, cells)}``: the
      staggered arrays with ghost values (see :func:`_full`), ``p`` shifted so that its bilinear
      extrapolation to the corner (0, 0) is zero.
    """
    n, h = cells, 1.0 / cells
    nu_count = (n - 1) * n
    size = 2 * nu_count + n * n
    U, u0 = _full(n, 0, "u")
    V, v0 = _full(n, nu_count, "v")
    P = sp.csr_matrix((np.ones(n * n), (np.arange(n * n), 2 * nu_count + np.arange(n * n))), shape=(n * n, size))
    su, sv, sp_ = (n + 1, n + 2), (n + 2, n + 1), (n, n)
    inner, centres = np.arange(1, n), np.arange(1, n + 1)

    def affine(parts, shape, full, base, i, j):
        """sum of weight * A[i + di, j + dj] as (matrix, vector) in z."""
        pick = sum(w * _pick(shape, i, j, di, dj) for di, dj, w in parts)
        return pick @ full, pick @ base

    half = 0.5
    # x-momentum at the interior u faces (i in 1..n-1, j in 1..n)
    i, j = inner, centres
    ux_right = affine([(0, 0, half), (1, 0, half)], su, U, u0, i, j)
    ux_left = affine([(-1, 0, half), (0, 0, half)], su, U, u0, i, j)
    ux_top = affine([(0, 0, half), (0, 1, half)], su, U, u0, i, j)
    vx_top = affine([(0, 0, half), (1, 0, half)], sv, V, v0, i, j)
    ux_bottom = affine([(0, -1, half), (0, 0, half)], su, U, u0, i, j)
    vx_bottom = affine([(0, -1, half), (1, -1, half)], sv, V, v0, i, j)
    lap = [(1, 0, 1.0), (-1, 0, 1.0), (0, 1, 1.0), (0, -1, 1.0), (0, 0, -4.0)]
    ux_lap = affine(lap, su, U, u0, i, j)
    px = affine([(0, -1, 1.0), (-1, -1, -1.0)], sp_, P, np.zeros(n * n), i, j)
    # y-momentum at the interior v faces (i in 1..n, j in 1..n-1)
    i, j = centres, inner
    vy_top = affine([(0, 0, half), (0, 1, half)], sv, V, v0, i, j)
    vy_bottom = affine([(0, -1, half), (0, 0, half)], sv, V, v0, i, j)
    uy_right = affine([(0, 0, half), (0, 1, half)], su, U, u0, i, j)
    vy_right = affine([(0, 0, half), (1, 0, half)], sv, V, v0, i, j)
    uy_left = affine([(-1, 0, half), (-1, 1, half)], su, U, u0, i, j)
    vy_left = affine([(-1, 0, half), (0, 0, half)], sv, V, v0, i, j)
    vy_lap = affine(lap, sv, V, v0, i, j)
    py = affine([(-1, 0, 1.0), (-1, -1, -1.0)], sp_, P, np.zeros(n * n), i, j)
    # continuity in every cell (a, b) = (i - 1, j - 1), i, j in 1..n; cell (0, 0) fixes the pressure instead
    i, j = centres, centres
    div_u = affine([(0, 0, 1.0), (-1, 0, -1.0)], su, U, u0, i, j)
    div_v = affine([(0, 0, 1.0), (0, -1, -1.0)], sv, V, v0, i, j)
    divergence = ((div_u[0] + div_v[0]) / h).tolil(), (div_u[1] + div_v[1]) / h
    divergence[0][0, :] = P[0, :]
    divergence = divergence[0].tocsr(), divergence[1]
    divergence[1][0] = 0.0

    def value(term, z):
        return term[0] @ z + term[1]

    def product(a, b, z):
        """(a z + a0)(b z + b0) and its Jacobian."""
        va, vb = value(a, z), value(b, z)
        return va * vb, sp.diags(vb) @ a[0] + sp.diags(va) @ b[0]

    def residual(z):
        terms_x = [
            (product(ux_right, ux_right, z), 1.0 / h),
            (product(ux_left, ux_left, z), -1.0 / h),
            (product(ux_top, vx_top, z), 1.0 / h),
            (product(ux_bottom, vx_bottom, z), -1.0 / h),
        ]
        terms_y = [
            (product(vy_top, vy_top, z), 1.0 / h),
            (product(vy_bottom, vy_bottom, z), -1.0 / h),
            (product(uy_right, vy_right, z), 1.0 / h),
            (product(uy_left, vy_left, z), -1.0 / h),
        ]
        fx = sum(w * f for (f, _), w in terms_x) + value(px, z) / h - nu * value(ux_lap, z) / h**2
        jx = sum(w * j for (_, j), w in terms_x) + px[0] / h - nu * ux_lap[0] / h**2
        fy = sum(w * f for (f, _), w in terms_y) + value(py, z) / h - nu * value(vy_lap, z) / h**2
        jy = sum(w * j for (_, j), w in terms_y) + py[0] / h - nu * vy_lap[0] / h**2
        return np.concatenate([fx, fy, value(divergence, z)]), sp.vstack([jx, jy, divergence[0]]).tocsc()

    z = np.zeros(size)
    for _ in range(30):
        f, jacobian = residual(z)
        step = scipy.sparse.linalg.spsolve(jacobian, -f)
        z += step
        if np.abs(step).max() < tolerance:
            break
    else:
        raise RuntimeError(f"cavity_reference.solve: Newton did not converge on {cells} cells (last step {step!r}).")
    u = (U @ z + u0).reshape(su)
    v = (V @ z + v0).reshape(sv)
    p = (P @ z).reshape(sp_)
    corner = 2.25 * p[0, 0] - 0.75 * (p[1, 0] + p[0, 1]) + 0.25 * p[1, 1]  # bilinear extrapolation to (0, 0)
    return {"u": u, "v": v, "p": p - corner}


def interpolate(solution: dict[str, np.ndarray], x: np.ndarray, y: np.ndarray) -> dict[str, np.ndarray]:
    """The staggered ``solution`` at the grid ``x x y`` (points in [0, 1]^2), ``{field: (len(x), len(y))}``."""
    n = solution["p"].shape[0]
    h = 1.0 / n
    faces, centres = np.arange(n + 1) * h, (np.arange(n + 2) - 0.5) * h
    grids = {"u": (faces, centres), "v": (centres, faces), "p": (centres[1:-1], centres[1:-1])}
    mesh = np.stack(np.meshgrid(x, y, indexing="ij"), axis=-1)
    return {
        name: RegularGridInterpolator(grids[name], solution[name], bounds_error=False, fill_value=None)(mesh)
        for name in ("u", "v", "p")
    }


def lid_driven_cavity(
    x: np.ndarray, y: np.ndarray, cells: int = 192, cache: str | None = "~/.cache/hodiff"
) -> dict[str, np.ndarray]:
    """``{"u", "v", "p"}`` on the grid ``x x y``, from :func:`solve` on ``cells`` cells.

    The solve takes tens of seconds at the default size, so its staggered arrays are cached in
    ``cache/cavity_<cells>.npz`` (``cache=None``: no cache).
    """
    path = None if cache is None else os.path.join(os.path.expanduser(cache), f"cavity_nu{NU}_{cells}.npz")
    solution = read_cache(path, ("u", "v", "p")) if path is not None and os.path.exists(path) else None
    if solution is None:  # no cache, or an unreadable one (read_cache warned)
        solution = solve(cells)
        if path is not None:
            write_cache(path, **solution)
    return interpolate(solution, np.asarray(x, float), np.asarray(y, float))
