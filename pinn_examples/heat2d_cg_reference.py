"""Finite-element reference of PINNacle's Heat2d-CG (scipy only): P1 triangles, TR-BDF2 in time.

The problem: ``u_t = u_xx + u_yy`` on the rectangle ``[-8, 8] x [-12, 12]`` minus 11 disks of
radius 1 and 6 of radius 0.4 (:data:`DISKS`), ``t`` in ``[0, 3]``, ``u = 0`` at ``t = 0`` and the
Robin condition ``du/dn = g - u`` (``n`` the normal out of the domain, into the holes) with
``g = 5`` on the large circles, 1 on the small ones and 0.1 on the rectangle.

- :func:`heat_mesh`: a Delaunay mesh (``scipy.spatial.Delaunay``) of a grid of spacing h = 1/n with
  nodes on every circle at arc spacing about h (grid nodes within h/2 of a circle left out);
  triangles whose centroid lies in a disk are dropped.
- :func:`heat_fem`: the weak form ``M u' + (K + B) u = b`` (``K`` the stiffness matrix,
  :func:`pinn_examples.plate_reference.stiffness`; ``M`` the mass matrix; ``B`` and ``b`` the
  boundary integrals of ``u v`` and ``g v``) stepped by TR-BDF2 (second order, L-stable, one step:
  the discontinuous start, u = 0 while the boundary flux is on at once, leaves no ringing) on the
  graded time mesh of :func:`time_mesh`: near t = 0 the solution is a boundary layer of width
  ~sqrt(t), which steps growing like ``t_k = 0.25 (k / n)^3`` resolve; after t = 0.25 the steps are
  equal.
- :func:`heat2d_cg_reference`: the solution at the example's test points (:func:`test_points`)
  and on a picture grid, cached in memory and, with ``HODIFF_CACHE`` set, on disk (atomic writes).

The convergence study (tests/test_heat2d_cg_reference.py) measures second order in h and in the
time step and the reference's own error (:data:`REFERENCE_ERROR`), far below the example's 1e-2 target.

References:
  Hao et al. (2024), "PINNacle: A Comprehensive Benchmark of Physics-Informed Neural Networks
  for Solving PDEs", NeurIPS Datasets and Benchmarks (arXiv:2306.08827), problem Heat2d-CG.
  Bank, Coughran, Fichtner, Grosse, Rose & Smith (1985), "Transient simulation of silicon devices
  and circuits", IEEE Trans. CAD 4 (TR-BDF2).
"""

from __future__ import annotations

import functools

import numpy as np
import scipy.sparse
import scipy.sparse.linalg
import scipy.spatial

from pinn_examples.fd_references import cached_on_disk
from pinn_examples.plate_reference import signed_areas, stiffness

LOW, HIGH = (-8.0, -12.0), (8.0, 12.0)
END = 3.0
LARGE, SMALL = 1.0, 0.4  # radii
LARGE_CENTRES = ((-4, -3), (4, -3), (-4, 3), (4, 3), (-4, -9), (4, -9), (-4, 9), (4, 9), (0, 0), (0, 6), (0, -6))
SMALL_CENTRES = ((-3.2, -6), (-3.2, 6), (3.2, -6), (3.2, 6), (-3.2, 0), (3.2, 0))
DISKS = tuple((float(x), float(y), LARGE) for x, y in LARGE_CENTRES) + tuple(
    (float(x), float(y), SMALL) for x, y in SMALL_CENTRES
)
G_LARGE, G_SMALL, G_RECTANGLE = 5.0, 1.0, 0.1  # du/dn = g - u on each kind of boundary
GRADED = 0.25  # the time steps are graded on [0, GRADED], equal after
TEST_TIMES = tuple(GRADED * (j / 4) ** 3 for j in (1, 2, 3)) + tuple(0.25 * j for j in range(1, 13))
TEST_SPACING, TEST_CLEARANCE = 0.2, 0.05  # test grid spacing; test points stay this far from the circles
PICTURE_SPACING = 0.1
REFERENCE_N, REFERENCE_STEPS = 20, 48  # h = 1/20, 48 graded steps (time step 1/64 after t = 0.25)
REFERENCE_ERROR = 1e-3  # the reference's relative L2 error at the test points is below this (measured in the test)


def distance_to_circles(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """The signed distance of points to the nearest circle: negative inside a disk."""
    return np.min([np.hypot(x - cx, y - cy) - r for cx, cy, r in DISKS], axis=0)


def heat_mesh(n: int) -> tuple[np.ndarray, np.ndarray]:
    """A triangle mesh of the domain with spacing about h = 1/n.

    Args:
      n: cells per unit length, an integer >= 5.

    Returns:
      ``(nodes (M, 2), triangles (T, 3))``, the triangles counter-clockwise.
    """
    if not isinstance(n, (int, np.integer)) or n < 5:
        raise ValueError(f"heat_mesh: n={n!r} must be an integer >= 5 (cells per unit length; h = 1/n).")
    h = 1.0 / n
    axes = [np.linspace(low, high, round((high - low) * n) + 1) for low, high in zip(LOW, HIGH)]
    gx, gy = (grid.ravel() for grid in np.meshgrid(*axes, indexing="ij"))
    keep = distance_to_circles(gx, gy) >= 0.5 * h
    circles = []
    for cx, cy, r in DISKS:
        count = max(8, int(np.ceil(2 * np.pi * r / h)))
        angle = 2 * np.pi * np.arange(count) / count
        circles.append(np.stack([cx + r * np.cos(angle), cy + r * np.sin(angle)], axis=1))
    nodes = np.concatenate([np.stack([gx[keep], gy[keep]], axis=1), *circles])
    triangles = scipy.spatial.Delaunay(nodes).simplices
    corners = nodes[triangles]
    centroid = corners.mean(axis=1)
    area = signed_areas(corners)
    keep = (distance_to_circles(centroid[:, 0], centroid[:, 1]) > 0) & (np.abs(area) > 1e-9 * h * h)
    triangles = np.where((area < 0)[:, None], triangles[:, ::-1], triangles)[keep]
    return nodes, triangles


def _mass(nodes: np.ndarray, triangles: np.ndarray) -> scipy.sparse.csr_matrix:
    """The P1 mass matrix ``M_ij = integral phi_i phi_j`` (area / 12 times [[2, 1, 1], [1, 2, 1], [1, 1, 2]])."""
    p = nodes[triangles]
    area = signed_areas(p)
    local = area[:, None, None] / 12.0 * (np.ones((3, 3)) + np.eye(3))
    rows, cols = np.repeat(triangles, 3, axis=1).ravel(), np.tile(triangles, (1, 3)).ravel()
    return scipy.sparse.csr_matrix((local.ravel(), (rows, cols)), shape=(len(nodes),) * 2)


def boundary_edges(nodes: np.ndarray, triangles: np.ndarray, h: float) -> tuple[np.ndarray, np.ndarray]:
    """The mesh's boundary edges ``(E, 2)`` (edges of one triangle only) and ``g`` on each ``(E,)``.

    Raises ``RuntimeError`` when an edge lies on no circle and not on the rectangle (a hole in the mesh).
    """
    edges = np.sort(np.concatenate([triangles[:, [0, 1]], triangles[:, [1, 2]], triangles[:, [2, 0]]]), axis=1)
    unique, counts = np.unique(edges, axis=0, return_counts=True)
    edges = unique[counts == 1]
    middle = nodes[edges].mean(axis=1)
    g = np.full(len(edges), np.nan)
    for cx, cy, r in DISKS:
        on = np.abs(np.hypot(middle[:, 0] - cx, middle[:, 1] - cy) - r) < 0.25 * h
        g[on] = G_LARGE if r == LARGE else G_SMALL
    tolerance = 1e-9 * max(abs(v) for v in LOW + HIGH)
    on_rectangle = np.any(np.abs(middle - np.array(LOW)) < tolerance, axis=1) | np.any(
        np.abs(middle - np.array(HIGH)) < tolerance, axis=1
    )
    g[on_rectangle] = G_RECTANGLE
    if np.isnan(g).any():
        raise RuntimeError(
            f"heat_mesh: {int(np.isnan(g).sum())} boundary edges lie on no boundary (first at "
            f"{middle[np.isnan(g)][0].tolist()}); the mesh has a hole."
        )
    return edges, g


def time_mesh(steps: int) -> np.ndarray:
    """The times ``0 = t_0 < ... < 3``: ``0.25 (k / steps)^3`` for k <= steps, then equal steps of ``0.75 / steps``.

    Args:
      steps: the graded steps, a multiple of 12 (so that every :data:`TEST_TIMES` is a mesh time).
    """
    if not isinstance(steps, (int, np.integer)) or steps < 12 or steps % 12:
        raise ValueError(f"time_mesh: steps={steps!r} must be a positive multiple of 12 (12, 24, 48, ...).")
    graded = GRADED * (np.arange(steps + 1) / steps) ** 3
    equal = round((END - GRADED) * steps / (3 * GRADED))
    return np.concatenate([graded, GRADED + (END - GRADED) * np.arange(1, equal + 1) / equal])


def heat_fem(n: int, steps: int, times: tuple[float, ...] = TEST_TIMES) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The P1 / TR-BDF2 solution on :func:`heat_mesh` ``(n)`` and :func:`time_mesh` ``(steps)``.

    Args:
      n: cells per unit length (h = 1/n).
      steps: graded time steps (see :func:`time_mesh`).
      times: the times to return, each a time of the mesh.

    Returns:
      ``(nodes, triangles, u)`` with ``u`` of shape ``(len(times), nodes)``.
    """
    mesh_times = time_mesh(steps)
    wanted = [int(np.argmin(np.abs(mesh_times - t))) for t in times]
    missing = [t for t, k in zip(times, wanted) if abs(mesh_times[k] - t) > 1e-12]
    if missing:
        raise ValueError(f"heat_fem: times {missing} are not times of time_mesh({steps}); give mesh times.")
    nodes, triangles = heat_mesh(n)
    edges, g = boundary_edges(nodes, triangles, 1.0 / n)
    length = np.linalg.norm(nodes[edges[:, 1]] - nodes[edges[:, 0]], axis=1)
    local = length[:, None, None] / 6.0 * (np.ones((2, 2)) + np.eye(2))
    rows, cols = np.repeat(edges, 2, axis=1).ravel(), np.tile(edges, (1, 2)).ravel()
    size = len(nodes)
    boundary = scipy.sparse.csr_matrix((local.ravel(), (rows, cols)), shape=(size, size))
    load = np.bincount(edges.ravel(), weights=np.repeat(g * length / 2.0, 2), minlength=size)
    mass, operator = _mass(nodes, triangles), (stiffness(nodes, triangles) + boundary).tocsr()
    gamma = 2.0 - np.sqrt(2.0)  # TR-BDF2: both stages solve with M + gamma / 2 dt A
    u, out = np.zeros(size), {}

    factors: dict[float, tuple] = {}  # the equal steps' matrix, factorised once

    def solve(dt, rhs, guess):
        if dt in factors:
            return factors[dt](rhs)
        matrix = (mass + (0.5 * gamma * dt) * operator).tocsc()
        if dt >= equal_step:
            factors[dt] = scipy.sparse.linalg.factorized(matrix)
            return factors[dt](rhs)
        # a graded step: one solve or two with this matrix, which the conjugate gradients do in a few iterations
        preconditioner = scipy.sparse.diags(1.0 / matrix.diagonal())
        solution, info = scipy.sparse.linalg.cg(matrix, rhs, x0=guess, rtol=1e-11, atol=0.0, M=preconditioner)
        if info:
            raise RuntimeError(f"heat_fem: conjugate gradients did not converge ({info}).")
        return solution

    equal_step = np.diff(mesh_times)[-1] * (1.0 - 1e-9)
    for k, dt in enumerate(np.diff(mesh_times), start=1):
        dt = float(dt) if dt < equal_step else float(np.diff(mesh_times)[-1])
        middle = solve(dt, mass @ u - (0.5 * gamma * dt) * (operator @ u) + gamma * dt * load, u)
        rhs = (mass @ (middle - (1.0 - gamma) ** 2 * u)) / (gamma * (2.0 - gamma)) + 0.5 * gamma * dt * load
        u = solve(dt, rhs, middle)
        if k in wanted:
            out[k] = u
    return nodes, triangles, np.stack([out[k] for k in wanted])


def test_points() -> np.ndarray:
    """The example's ``(N, 3)`` test points (x, y, t): a grid of spacing 0.2 at :data:`TEST_TIMES`, away from the
    circles by at least 0.05."""
    axes = [np.linspace(low, high, round((high - low) / TEST_SPACING) + 1) for low, high in zip(LOW, HIGH)]
    x, y = (grid.ravel() for grid in np.meshgrid(*axes, indexing="ij"))
    keep = distance_to_circles(x, y) >= TEST_CLEARANCE
    space = np.stack([x[keep], y[keep]], axis=1)
    return np.concatenate([np.column_stack([space, np.full(len(space), t)]) for t in TEST_TIMES])


def picture_axes() -> dict[str, np.ndarray]:
    """The picture grid's axes (spacing 0.1)."""
    return {c: np.linspace(lo, hi, round((hi - lo) / PICTURE_SPACING) + 1) for c, lo, hi in zip("xy", LOW, HIGH)}


def at_points(nodes: np.ndarray, triangles: np.ndarray, u: np.ndarray, points: np.ndarray) -> np.ndarray:
    """The P1 fields ``u`` ``(times, nodes)`` at ``points`` ``(N, 2)``, linear on each triangle: ``(times, N)``.

    NaN inside the disks; a point between a circle and the mesh's chords (within h^2 of the circle) is read
    from the nearest node."""
    from matplotlib.tri import TrapezoidMapTriFinder, Triangulation

    triangulation = Triangulation(nodes[:, 0], nodes[:, 1], triangles)
    found = TrapezoidMapTriFinder(triangulation)(points[:, 0], points[:, 1])
    inside = found >= 0
    corners = nodes[triangles[found[inside]]]
    # barycentric weights of the points in their triangles
    v0, v1, p = corners[:, 1] - corners[:, 0], corners[:, 2] - corners[:, 0], points[inside] - corners[:, 0]
    det = v0[:, 0] * v1[:, 1] - v0[:, 1] * v1[:, 0]
    w1 = (p[:, 0] * v1[:, 1] - p[:, 1] * v1[:, 0]) / det
    w2 = (v0[:, 0] * p[:, 1] - v0[:, 1] * p[:, 0]) / det
    weights = np.stack([1.0 - w1 - w2, w1, w2], axis=1)
    values = np.full((len(u), len(points)), np.nan)
    values[:, inside] = np.einsum("tpk,pk->tp", u[:, triangles[found[inside]]], weights)
    outside = ~inside & (distance_to_circles(points[:, 0], points[:, 1]) >= 0)
    if outside.any():
        nearest = scipy.spatial.cKDTree(nodes).query(points[outside])[1]
        values[:, outside] = u[:, nearest]
    return values


@functools.lru_cache(maxsize=2)
def heat2d_cg_reference(n: int = REFERENCE_N, steps: int = REFERENCE_STEPS) -> dict[str, np.ndarray]:
    """The reference at :func:`test_points` and on the picture grid at t = 3, solved once.

    With the environment variable ``HODIFF_CACHE`` naming a directory they are also kept there as
    ``fem_heat2d_cg_<n>_<steps>.npz`` (written atomically) and read back by later processes.

    Returns:
      ``{"points": (N, 3), "u": (N,), "x": ..., "y": ..., "picture": (len(x), len(y)) at t = 3 (NaN in the disks)}``.
    """

    def compute() -> dict[str, np.ndarray]:
        nodes, triangles, u = heat_fem(n, steps)
        points = test_points()
        space = points[: len(points) // len(TEST_TIMES), :2]
        values = at_points(nodes, triangles, u, space).ravel()  # time-major, as test_points orders them
        axes = picture_axes()
        grid = np.stack([g.ravel() for g in np.meshgrid(axes["x"], axes["y"], indexing="ij")], axis=1)
        picture = at_points(nodes, triangles, u[-1:], grid)[0].reshape(len(axes["x"]), len(axes["y"]))
        picture[distance_to_circles(grid[:, 0], grid[:, 1]).reshape(picture.shape) < 0] = np.nan
        return {"points": points, "u": values, "x": axes["x"], "y": axes["y"], "picture": picture}

    return cached_on_disk(f"fem_heat2d_cg_{n}_{steps}.npz", ("points", "u", "x", "y", "picture"), compute)
