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

import dataclasses
import os
import warnings
from collections.abc import Callable

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
    """The matrix taking a raveled ``shape`` array ``A`` to ``A[i + di, j + dj]`` at the positions ``(i, j)`` (1-D)."""
    cols = np.ravel_multi_index((i + di, j + dj), shape)
    return sp.csr_matrix((np.ones(cols.size), (np.arange(cols.size), cols)), shape=(cols.size, shape[0] * shape[1]))


def _component(
    unknown: np.ndarray,
    wall: np.ndarray,
    index: np.ndarray,
    size: int,
    value: Callable[[np.ndarray, np.ndarray], np.ndarray],
    axis: int,
) -> tuple[sp.csr_matrix, np.ndarray, np.ndarray]:
    """``(E, e, used)``: one velocity component on its whole staggered array as ``E z + e`` of the unknowns ``z``.

    Args:
      unknown, wall: booleans over the array: the unknown nodes, and the nodes on a wall or inlet
        (there the component is normal to the boundary, at its true place: ``value(i, j)``).
      index: the column in ``z`` of each unknown node.
      size: the length of ``z``.
      value: ``value(i, j)``: the wall velocity at node ``(i, j)``; half-integer ``i`` or ``j`` are
        points between nodes (on a wall that a ghost node mirrors across).
      axis: the axis along which tangential ghosts mirror (1 for ``u``, across horizontal walls; 0
        for ``v``).

    A ghost node (not unknown, not on a wall) next to a node on a fluid cell's face along ``axis``
    mirrors it, ``2 wall - neighbour``, so that their mean is the wall's velocity. ``used`` marks
    the nodes that have a value (unknown, wall, ghost); no stencil reaches the others.
    """
    shape = unknown.shape
    flat = np.arange(unknown.size).reshape(shape)
    i, j = np.indices(shape)
    own = sp.csr_matrix((np.ones(unknown.sum()), (flat[unknown], index[unknown])), shape=(unknown.size, size))
    e = np.zeros(shape)
    e[wall] = value(i[wall], j[wall])
    face = unknown | wall
    ghost = ~face
    lower, upper = np.zeros(shape, bool), np.zeros(shape, bool)
    if axis == 1:
        lower[:, 1:], upper[:, :-1] = face[:, :-1], face[:, 1:]
    else:
        lower[1:], upper[:-1] = face[:-1], face[1:]
    if np.any(ghost & lower & upper):
        raise ValueError("solve_flow: a solid wall is one cell thin; give a smaller h (more cells).")
    rows, cols, signs = [], [], []
    for side, step in ((lower, -1), (upper, 1)):
        nodes = ghost & side
        rows.append(flat[nodes])
        cols.append(flat[nodes] + step * (shape[1] if axis == 0 else 1))
        signs.append(-np.ones(nodes.sum()))
        half = (i[nodes] + 0.5 * step, j[nodes]) if axis == 0 else (i[nodes], j[nodes] + 0.5 * step)
        e[nodes] = 2.0 * value(*half)
    used = face | ghost & (lower | upper)
    mirror = sp.csr_matrix(
        (np.concatenate(signs), (np.concatenate(rows), np.concatenate(cols))), shape=(unknown.size, unknown.size)
    )
    return (own + mirror @ own).tocsr(), e.ravel() + mirror @ e.ravel(), used


def _replace(
    E: sp.csr_matrix, e: np.ndarray, shape: tuple[int, int], column: int, rows: np.ndarray, terms: tuple
) -> tuple[sp.csr_matrix, np.ndarray]:
    """``(E, e)`` with the nodes ``(column, rows)`` of an array ``shape`` set to ``sum weight * A[c, rows + dj]``.

    ``terms``: ``(A, a, shape_A, c, dj, weight)`` each, with ``A z + a`` a whole array of ``shape_A``:
    the outlet's ghost nodes as affine maps of the nodes already known.
    """
    picks = [(w * _pick(s, np.full(rows.size, c), rows, 0, dj), A, a) for A, a, s, c, dj, w in terms]
    targets = np.ravel_multi_index((np.full(rows.size, column), rows), shape)
    keep = np.ones(E.shape[0])
    keep[targets] = 0.0
    place = sp.csr_matrix((np.ones(rows.size), (targets, np.arange(rows.size))), shape=(E.shape[0], rows.size))
    matrix = sum(pick @ A for pick, A, _ in picks)
    constant = sum(pick @ a for pick, _, a in picks)
    return (sp.diags(keep) @ E + place @ matrix).tocsr(), keep * e + place @ constant


@dataclasses.dataclass
class FlowSystem:
    """The discrete equations of :func:`solve_flow` as maps of the unknowns ``z`` (velocity then pressure).

    Every term is affine, ``A z + scale a``: ``scale`` multiplies the boundary velocity (the ``walls``
    the system was built with), so that one system serves a boundary velocity ``scale(t) walls`` that
    changes in time (:func:`pinn_examples.ns2d_lt_reference.solve_ns2d_lt`).

    Attributes:
      size: the number of unknowns; ``z[:n_u]`` the unknown ``u`` nodes (C order), then ``v``, then ``p``.
      n_u, n_v: the numbers of unknown ``u`` and ``v`` nodes (and of x- and y-momentum equations).
      h, nu: the cells' side and the viscosity.
      convection_x, convection_y: ``[(a, b, weight)]``: the convective fluxes, ``weight (a z)(b z)`` each.
      pressure_x, laplacian_x, pressure_y, laplacian_y: the pressure differences and the 5-point sums of
        the momentum equations (``/ h`` and ``/ h^2`` to come).
      divergence: the continuity equations (the pressure gauge in the first without an outlet).
      velocity: ``(n_u + n_v, size)``: the velocity at each momentum equation's node.
      centres: ``{"u": (x, y), "v": (x, y)}``: where the momentum equations sit.
      fields: ``fields(z, scale) -> {"u", "v", "p"}``: the staggered arrays (see :func:`solve_flow`).
    """

    size: int
    n_u: int
    n_v: int
    h: float
    nu: float
    convection_x: list
    convection_y: list
    pressure_x: tuple
    laplacian_x: tuple
    pressure_y: tuple
    laplacian_y: tuple
    divergence: tuple
    velocity: sp.csr_matrix
    centres: dict
    fields: Callable[[np.ndarray, float], dict]


def _value(term: tuple, z: np.ndarray, scale: float = 1.0) -> np.ndarray:
    """``A z + scale a`` of an affine ``term = (A, a)``."""
    return term[0] @ z + term[1] * scale


def _product(a: tuple, b: tuple, z: np.ndarray, scale: float = 1.0) -> tuple[np.ndarray, sp.csr_matrix]:
    """``(a z + a0)(b z + b0)`` and its Jacobian."""
    va, vb = _value(a, z, scale), _value(b, z, scale)
    return va * vb, sp.diags(vb) @ a[0] + sp.diags(va) @ b[0]


def convection(system: FlowSystem, z: np.ndarray, scale: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    """The convective terms of the x- and y-momentum equations at ``z`` (values only)."""
    parts = []
    for terms in (system.convection_x, system.convection_y):
        parts.append(sum(w * (_value(a, z, scale) * _value(b, z, scale)) for a, b, w in terms))
    return parts[0], parts[1]


def linear_part(system: FlowSystem) -> tuple[sp.csr_matrix, np.ndarray]:
    """``(L, l)``: the momentum equations' pressure and viscous terms and the continuity equations, ``L z + scale l``,
    all rows (x-momentum, y-momentum, continuity)."""
    h, nu = system.h, system.nu
    rows_x = system.pressure_x[0] / h - nu * system.laplacian_x[0] / h**2
    rows_y = system.pressure_y[0] / h - nu * system.laplacian_y[0] / h**2
    constant_x = system.pressure_x[1] / h - nu * system.laplacian_x[1] / h**2
    constant_y = system.pressure_y[1] / h - nu * system.laplacian_y[1] / h**2
    matrix = sp.vstack([rows_x, rows_y, system.divergence[0]]).tocsr()
    return matrix, np.concatenate([constant_x, constant_y, system.divergence[1]])


def flow_system(
    fluid: np.ndarray,
    h: float,
    walls: Callable[[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]],
    outlet: bool = False,
    nu: float = NU,
) -> FlowSystem:
    """The discrete equations of :func:`solve_flow` (same arguments), as a :class:`FlowSystem`."""
    fluid = np.asarray(fluid, bool)
    nx, ny = fluid.shape
    cells = np.zeros((nx + 3, ny + 3), bool)  # cells[a + 1, b + 1]: cell (a, b) holds fluid; a, b from -1
    cells[1 : nx + 1, 1 : ny + 1] = fluid
    su, sv, sp_ = (nx + 2, ny + 2), (nx + 2, ny + 1), (nx + 1, ny)  # one column more than returned: the outlet's
    left, right = cells[: nx + 2, : ny + 2], cells[1:, : ny + 2]  # the cells on either side of each u node
    below, above = cells[: nx + 2, : ny + 1], cells[: nx + 2, 1 : ny + 2]  # ... and of each v node
    u_unknown = left & right
    if outlet:
        u_unknown[nx] = left[nx]
    v_unknown = below & above
    n_u, n_v, n_p = int(u_unknown.sum()), int(v_unknown.sum()), int(fluid.sum())
    size = n_u + n_v + n_p
    u_index, v_index, p_index = np.zeros(su, int), np.zeros(sv, int), np.zeros(sp_, int)
    u_index[u_unknown] = np.arange(n_u)  # C order
    v_index.T[v_unknown.T] = n_u + np.arange(n_v)  # the transpose's C order: v mirrors u
    p_index[:nx][fluid] = n_u + n_v + np.arange(n_p)
    U, u0, u_used = _component(
        u_unknown, (left ^ right) & ~u_unknown, u_index, size, lambda i, j: walls(i * h, (j - 0.5) * h)[0], 1
    )
    V, v0, v_used = _component(v_unknown, below ^ above, v_index, size, lambda i, j: walls((i - 0.5) * h, j * h)[1], 0)
    flat_p = np.arange(sp_[0] * sp_[1]).reshape(sp_)
    P = sp.csr_matrix((np.ones(n_p), (flat_p[:nx][fluid], p_index[:nx][fluid])), shape=(sp_[0] * sp_[1], size))
    p0 = np.zeros(sp_[0] * sp_[1])
    if outlet:  # the ghosts past the outlet from its conditions, each from nodes already known
        rows = np.arange(ny + 1)[v_unknown[nx]]  # u_y + v_x = 0 at (x_out, j h)
        v_terms = ((V, v0, sv, nx, 0, 1.0), (U, u0, su, nx, 1, -1.0), (U, u0, su, nx, 0, 1.0))
        V, v0 = _replace(V, v0, sv, nx + 1, rows, v_terms)
        rows = np.arange(ny + 2)[u_unknown[nx]]  # continuity in the ghost cell
        u_terms = ((U, u0, su, nx, 0, 1.0), (V, v0, sv, nx + 1, 0, -1.0), (V, v0, sv, nx + 1, -1, 1.0))
        U, u0 = _replace(U, u0, su, nx + 1, rows, u_terms)
        rows, c = np.arange(ny)[fluid[-1]], 2.0 * nu / h  # -p + 2 nu u_x = 0 at x_out
        p_terms = ((P, p0, sp_, nx - 1, 0, -1.0), (U, u0, su, nx + 1, 1, c), (U, u0, su, nx - 1, 1, -c))
        P, p0 = _replace(P, p0, sp_, nx, rows, p_terms)
        u_used[nx + 1] |= u_unknown[nx]
        v_used[nx + 1] |= v_unknown[nx]

    def affine(parts, shape, full, base, i, j):
        """sum of weight * A[i + di, j + dj] as (matrix, vector) in z."""
        pick = sum(w * _pick(shape, i, j, di, dj) for di, dj, w in parts)
        return pick @ full, pick @ base

    half = 0.5
    # x-momentum at the unknown u nodes
    i, j = np.nonzero(u_unknown)
    centres = {"u": (i * h, (j - 0.5) * h)}
    velocity_x = affine([(0, 0, 1.0)], su, U, u0, i, j)[0]
    ux_right = affine([(0, 0, half), (1, 0, half)], su, U, u0, i, j)
    ux_left = affine([(-1, 0, half), (0, 0, half)], su, U, u0, i, j)
    ux_top = affine([(0, 0, half), (0, 1, half)], su, U, u0, i, j)
    vx_top = affine([(0, 0, half), (1, 0, half)], sv, V, v0, i, j)
    ux_bottom = affine([(0, -1, half), (0, 0, half)], su, U, u0, i, j)
    vx_bottom = affine([(0, -1, half), (1, -1, half)], sv, V, v0, i, j)
    lap = [(1, 0, 1.0), (-1, 0, 1.0), (0, 1, 1.0), (0, -1, 1.0), (0, 0, -4.0)]
    ux_lap = affine(lap, su, U, u0, i, j)
    px = affine([(0, -1, 1.0), (-1, -1, -1.0)], sp_, P, p0, i, j)
    # y-momentum at the unknown v nodes
    i, j = np.nonzero(v_unknown)
    centres["v"] = ((i - 0.5) * h, j * h)
    velocity_y = affine([(0, 0, 1.0)], sv, V, v0, i, j)[0]
    vy_top = affine([(0, 0, half), (0, 1, half)], sv, V, v0, i, j)
    vy_bottom = affine([(0, -1, half), (0, 0, half)], sv, V, v0, i, j)
    uy_right = affine([(0, 0, half), (0, 1, half)], su, U, u0, i, j)
    vy_right = affine([(0, 0, half), (1, 0, half)], sv, V, v0, i, j)
    uy_left = affine([(-1, 0, half), (-1, 1, half)], su, U, u0, i, j)
    vy_left = affine([(-1, 0, half), (0, 0, half)], sv, V, v0, i, j)
    vy_lap = affine(lap, sv, V, v0, i, j)
    py = affine([(-1, 0, 1.0), (-1, -1, -1.0)], sp_, P, p0, i, j)
    # continuity in every fluid cell (a, b) = (i - 1, j - 1); without an outlet the first one fixes the pressure
    i, j = np.nonzero(fluid)
    i, j = i + 1, j + 1
    div_u = affine([(0, 0, 1.0), (-1, 0, -1.0)], su, U, u0, i, j)
    div_v = affine([(0, 0, 1.0), (0, -1, -1.0)], sv, V, v0, i, j)
    divergence = ((div_u[0] + div_v[0]) / h).tolil(), (div_u[1] + div_v[1]) / h
    if not outlet:
        divergence[0][0, :] = P[flat_p[:nx][fluid][0], :]
        divergence[1][0] = 0.0
    divergence = divergence[0].tocsr(), divergence[1]

    def fields(z: np.ndarray, scale: float = 1.0) -> dict[str, np.ndarray]:
        u = np.where(u_used, (U @ z + u0 * scale).reshape(su), np.nan)[: nx + 1]
        v = np.where(v_used, (V @ z + v0 * scale).reshape(sv), np.nan)
        p = np.where(fluid, (P @ z + p0 * scale).reshape(sp_)[:nx], np.nan)
        return {"u": u, "v": v, "p": p}

    return FlowSystem(
        size=size,
        n_u=n_u,
        n_v=n_v,
        h=h,
        nu=nu,
        convection_x=[
            (ux_right, ux_right, 1.0 / h),
            (ux_left, ux_left, -1.0 / h),
            (ux_top, vx_top, 1.0 / h),
            (ux_bottom, vx_bottom, -1.0 / h),
        ],
        convection_y=[
            (vy_top, vy_top, 1.0 / h),
            (vy_bottom, vy_bottom, -1.0 / h),
            (uy_right, vy_right, 1.0 / h),
            (uy_left, vy_left, -1.0 / h),
        ],
        pressure_x=px,
        laplacian_x=ux_lap,
        pressure_y=py,
        laplacian_y=vy_lap,
        divergence=divergence,
        velocity=sp.vstack([velocity_x, velocity_y]).tocsr(),
        centres=centres,
        fields=fields,
    )


def solve_flow(
    fluid: np.ndarray,
    h: float,
    walls: Callable[[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]],
    outlet: bool = False,
    nu: float = NU,
    tolerance: float = 1e-11,
) -> dict[str, np.ndarray]:
    """Steady flow in the fluid cells of a box of square cells, by Newton's method from rest.

    Args:
      fluid: ``(nx, ny)`` booleans: the cells of ``[0, nx h] x [0, ny h]`` that hold fluid (cell
        ``(a, b)`` is ``[a h, (a + 1) h] x [b h, (b + 1) h]``); the others are solid.
      h: the cells' side.
      walls: ``walls(x, y) -> (u, v)``: the velocity on the boundary (at rest on no-slip walls, the
        inflow at an inlet), called with arrays of boundary points.
      outlet: the right side ``x = nx h``, where it meets fluid, is a free outlet: zero normal
        stress, ``-p + 2 nu u_x = 0`` and ``u_y + v_x = 0`` (traction-free), through ghost nodes
        past it (continuity holds in the ghost cells). Without it the pressure is fixed by ``p = 0``
        in the first fluid cell (in C order), in place of that cell's continuity equation.
      nu: the kinematic viscosity.
      tolerance: Newton stops when no unknown moves by more than this.

    Returns:
      ``{"u": (nx + 1, ny + 2), "v": (nx + 2, ny + 1), "p": (nx, ny)}``: ``u`` on the x faces
      ``x = i h`` at heights ``(j - 1/2) h`` (rows ``j = 0`` and ``ny + 1`` are ghosts outside the
      box), ``v`` the transpose layout, ``p`` at the cell centres; NaN at solid cells and at nodes
      that no stencil reaches.
    """
    system = flow_system(fluid, h, walls, outlet, nu)
    nx, ny = np.shape(fluid)
    value = _value

    def residual(z):
        terms_x = [(_product(a, b, z), w) for a, b, w in system.convection_x]
        terms_y = [(_product(a, b, z), w) for a, b, w in system.convection_y]
        px, ux_lap, py, vy_lap = system.pressure_x, system.laplacian_x, system.pressure_y, system.laplacian_y
        divergence = system.divergence
        fx = sum(w * f for (f, _), w in terms_x) + value(px, z) / h - nu * value(ux_lap, z) / h**2
        jx = sum(w * j for (_, j), w in terms_x) + px[0] / h - nu * ux_lap[0] / h**2
        fy = sum(w * f for (f, _), w in terms_y) + value(py, z) / h - nu * value(vy_lap, z) / h**2
        jy = sum(w * j for (_, j), w in terms_y) + py[0] / h - nu * vy_lap[0] / h**2
        return np.concatenate([fx, fy, value(divergence, z)]), sp.vstack([jx, jy, divergence[0]]).tocsc()

    z = np.zeros(system.size)
    for _ in range(30):
        f, jacobian = residual(z)
        step = scipy.sparse.linalg.spsolve(jacobian, -f)
        z += step
        if np.abs(step).max() < tolerance:
            break
    else:
        raise RuntimeError(f"solve_flow: Newton did not converge on {nx} x {ny} cells (last step {step!r}).")
    return system.fields(z)


def cavity_walls(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The cavity's wall velocity: the lid ``y = 1`` moves with :func:`lid`, the other walls are at rest."""
    return np.where(y == 1.0, lid(x), 0.0), np.zeros(np.shape(x))


def solve(cells: int = 128, nu: float = NU, tolerance: float = 1e-11) -> dict[str, np.ndarray]:
    """The discrete cavity flow on ``cells x cells`` cells (:func:`solve_flow` on the unit square).

    Returns:
      ``{"u": (cells + 1, cells + 2), "v": (cells + 2, cells + 1), "p": (cells, cells)}``: the
      staggered arrays with ghost values (see :func:`solve_flow`), ``p`` shifted so that its bilinear
      extrapolation to the corner (0, 0) is zero.
    """
    try:
        flow = solve_flow(np.ones((cells, cells), bool), 1.0 / cells, cavity_walls, nu=nu, tolerance=tolerance)
    except RuntimeError as error:
        raise RuntimeError(f"cavity_reference.solve on {cells} cells: {error}") from None
    p = flow["p"]
    corner = 2.25 * p[0, 0] - 0.75 * (p[1, 0] + p[0, 1]) + 0.25 * p[1, 1]  # bilinear extrapolation to (0, 0)
    return {"u": flow["u"], "v": flow["v"], "p": p - corner}


def _extend(p: np.ndarray) -> np.ndarray:
    """``p`` (or a velocity) with its NaN cells next to fluid cells filled by linear extrapolation from the
    fluid (the mean over the directions that have fluid): bilinear interpolation stays second order at walls."""
    padded = np.pad(p, 2, constant_values=np.nan)
    guesses = []
    for axis in (0, 1):
        for step in (1, -1):
            near, far = np.roll(padded, -step, axis), np.roll(padded, -2 * step, axis)
            guesses.append(np.where(np.isnan(far), near, 2.0 * near - far))
    with np.errstate(invalid="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # the mean of no guess: NaN, deep in the solid
        filled = np.nanmean(np.stack(guesses), axis=0)[2:-2, 2:-2]
    return np.where(np.isnan(p), filled, p)


def interpolate(
    solution: dict[str, np.ndarray], x: np.ndarray, y: np.ndarray, h: float | None = None
) -> dict[str, np.ndarray]:
    """The staggered ``solution`` (of :func:`solve_flow`) at the grid ``x x y``, ``{field: (len(x), len(y))}``.

    Bilinear interpolation; ``h`` is the cells' side (default: the unit square's, ``1 / nx``). Values at
    points in solid cells are meaningless (or NaN): the caller masks them.
    """
    return interpolate_points(solution, np.stack(np.meshgrid(x, y, indexing="ij"), axis=-1), h)


def interpolate_points(solution: dict[str, np.ndarray], points: np.ndarray, h: float | None = None) -> dict:
    """The staggered ``solution`` at ``points`` (``(..., 2)``: x, y), ``{field: points.shape[:-1]}``, as
    :func:`interpolate` (bilinear)."""
    nx, ny = solution["p"].shape
    h = 1.0 / nx if h is None else h
    x_faces, x_centres = np.arange(nx + 1) * h, (np.arange(nx + 2) - 0.5) * h
    y_faces, y_centres = np.arange(ny + 1) * h, (np.arange(ny + 2) - 0.5) * h
    grids = {"u": (x_faces, y_centres), "v": (x_centres, y_faces), "p": (x_centres[1:-1], y_centres[1:-1])}
    values = {name: _extend(solution[name]) for name in ("u", "v", "p")}
    return {
        name: RegularGridInterpolator(grids[name], values[name], bounds_error=False, fill_value=None)(points)
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
    shapes = {"u": (cells + 1, cells + 2), "v": (cells + 2, cells + 1), "p": (cells, cells)}
    solution = read_cache(path, ("u", "v", "p"), shapes) if path is not None and os.path.lexists(path) else None
    if solution is None:  # no cache, or one that cannot be used (read_cache warned)
        solution = solve(cells)
        if path is not None:
            write_cache(path, **solution)
    return interpolate(solution, np.asarray(x, float), np.asarray(y, float))


def inlet(y: np.ndarray) -> np.ndarray:
    """The channel's inflow ``u(0, y) = 4y(1 - y)``, ``y`` in [0, 1]."""
    return 4.0 * y * (1.0 - y)


def channel_walls(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The channel's boundary velocity: :func:`inlet` at ``x = 0``, at rest on the walls."""
    return np.where(x == 0.0, inlet(y), 0.0), np.zeros(np.shape(x))


def channel_fluid(cells: int) -> np.ndarray:
    """The fluid cells of the channel ``[0, 4] x [0, 2]`` minus ``[0, 2] x [1, 2]``, ``cells`` cells per unit length."""
    a, b = np.meshgrid(np.arange(4 * cells), np.arange(2 * cells), indexing="ij")
    return ~((a < 2 * cells) & (b >= cells))


def solve_channel(cells: int = 64, nu: float = NU, tolerance: float = 1e-11) -> dict[str, np.ndarray]:
    """The discrete flow in the widening channel (PINNacle's NS2d-CG): :func:`solve_flow` with an outlet.

    The inflow :func:`inlet` enters at ``x = 0``, ``y`` in [0, 1]; the channel widens to [0, 2] at
    ``x = 2``; the outlet ``x = 4`` is free of stress (``-p + 2 nu u_x = 0``, ``u_y + v_x = 0``); the other
    walls are at rest.
    """
    if cells < 2:
        raise ValueError(f"solve_channel: cells={cells} is too coarse; give at least 2 cells per unit length.")
    return solve_flow(channel_fluid(cells), 1.0 / cells, channel_walls, outlet=True, nu=nu, tolerance=tolerance)


def in_channel(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Booleans: the points ``(x, y)`` (broadcast) of the closed channel domain."""
    return (x >= 0.0) & (x <= 4.0) & (y >= 0.0) & (y <= 2.0) & ((x >= 2.0) | (y <= 1.0))


def expanding_channel(
    x: np.ndarray, y: np.ndarray, cells: int = 128, cache: str | None = "~/.cache/hodiff"
) -> dict[str, np.ndarray]:
    """``{"u", "v", "p"}`` of the widening channel on the grid ``x x y`` (NaN outside the domain), from
    :func:`solve_channel` on ``cells`` cells per unit length, cached as :func:`lid_driven_cavity` does."""
    path = None if cache is None else os.path.join(os.path.expanduser(cache), f"channel_nu{NU}_{cells}.npz")
    nx, ny = 4 * cells, 2 * cells
    shapes = {"u": (nx + 1, ny + 2), "v": (nx + 2, ny + 1), "p": (nx, ny)}
    solution = read_cache(path, ("u", "v", "p"), shapes) if path is not None and os.path.lexists(path) else None
    if solution is None:
        solution = solve_channel(cells)
        if path is not None:
            write_cache(path, **solution)
    x, y = np.asarray(x, float), np.asarray(y, float)
    values = interpolate(solution, x, y, h=1.0 / cells)
    outside = ~in_channel(x[:, None], y[None, :])
    return {name: np.where(outside, np.nan, array) for name, array in values.items()}
