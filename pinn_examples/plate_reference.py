"""Finite-element reference of the insulated plate (scipy only): P1 triangles, tested for convergence.

The plate is ``[0, 2] x [0, 1]`` minus the disk of radius 0.2 at (0.5, 0.5) and minus the square
``[1.3, 1.5] x [0.4, 0.6]``; u_xx + u_yy = 0, u = 1 at x = 0, u = 0 at x = 2 and zero normal
derivative on the top, the bottom and both holes (the natural condition of the weak form, so
nothing is imposed there).

- :func:`plate_mesh`: a Delaunay mesh (``scipy.spatial.Delaunay``) of a grid of spacing h = 1/n
  aligned with the square hole, with nodes on the circle at arc spacing about h and the grid
  nodes within h/2 of it left out; triangles whose centroid lies in a hole are dropped.
- :func:`plate_fem`: the P1 solution on that mesh, and the heat flux through the plate (the
  reaction at the nodes of x = 0, which converges faster than the field).
- :func:`plate_reference`: that solution on a test grid (linear on each triangle, NaN in the holes),
  cached in memory and, with ``HODIFF_CACHE`` set, on disk (atomic writes).

The re-entrant corners of the square hole make u ~ r^(2/3) cos(2 theta / 3) there, which limits
the L2 convergence of P1 elements on a uniform mesh to about h^(4/3) near them; the error measured
by the refinement study (tests/test_plate_reference.py) is far below the example's 1e-2 target.
"""

from __future__ import annotations

import functools

import numpy as np
import scipy.sparse
import scipy.sparse.linalg
import scipy.spatial

from pinn_examples.fd_references import cached_on_disk

LENGTH, HEIGHT = 2.0, 1.0
DISK_CENTRE, DISK_RADIUS = (0.5, 0.5), 0.2
SQUARE = ((1.3, 0.4), (1.5, 0.6))  # lower left and upper right corners


def in_holes(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Whether points lie strictly inside the disk or the square hole."""
    (x0, y0), (x1, y1) = SQUARE
    disk = np.hypot(x - DISK_CENTRE[0], y - DISK_CENTRE[1]) < DISK_RADIUS
    return disk | ((x > x0) & (x < x1) & (y > y0) & (y < y1))


def plate_mesh(n: int) -> tuple[np.ndarray, np.ndarray]:
    """A triangle mesh of the plate with spacing about h = 1/n.

    Args:
      n: cells per unit length, a multiple of 10 (so the square hole's edges are grid lines), >= 20.

    Returns:
      ``(nodes (M, 2), triangles (T, 3))``, the triangles counter-clockwise.
    """
    if n < 20 or n % 10:
        raise ValueError(
            f"plate_mesh: n={n!r} must be a multiple of 10 and at least 20 (the square's edges lie on it)."
        )
    h = 1.0 / n
    gx, gy = np.meshgrid(np.linspace(0, LENGTH, round(LENGTH * n) + 1), np.linspace(0, HEIGHT, n + 1), indexing="ij")
    gx, gy = gx.ravel(), gy.ravel()
    near_disk = np.hypot(gx - DISK_CENTRE[0], gy - DISK_CENTRE[1]) < DISK_RADIUS + 0.5 * h
    grid = ~near_disk & ~in_holes(gx, gy)
    count = int(np.ceil(2 * np.pi * DISK_RADIUS / h))
    angle = 2 * np.pi * np.arange(count) / count
    circle = np.stack([DISK_CENTRE[0] + DISK_RADIUS * np.cos(angle), DISK_CENTRE[1] + DISK_RADIUS * np.sin(angle)], 1)
    nodes = np.concatenate([np.stack([gx[grid], gy[grid]], 1), circle])
    triangles = scipy.spatial.Delaunay(nodes).simplices
    corners = nodes[triangles]
    centroid = corners.mean(axis=1)
    area = signed_areas(corners)
    keep = ~in_holes(centroid[:, 0], centroid[:, 1]) & (np.abs(area) > 1e-9 * h * h)
    triangles = np.where((area < 0)[:, None], triangles[:, ::-1], triangles)[keep]
    return nodes, triangles


def signed_areas(corners: np.ndarray) -> np.ndarray:
    """The signed areas of triangles ``(T, 3, 2)`` (positive counter-clockwise): half the 2-D cross product."""
    a, b = corners[:, 1] - corners[:, 0], corners[:, 2] - corners[:, 0]
    return 0.5 * (a[:, 0] * b[:, 1] - a[:, 1] * b[:, 0])


def stiffness(nodes: np.ndarray, triangles: np.ndarray) -> scipy.sparse.csr_matrix:
    """The P1 stiffness matrix ``K_ij = integral grad phi_i . grad phi_j``."""
    p = nodes[triangles]  # (T, 3, 2)
    edges = np.roll(p, -1, axis=1) - np.roll(p, 1, axis=1)  # edge opposite each vertex
    area = signed_areas(p)
    gradients = np.stack([-edges[..., 1], edges[..., 0]], axis=-1) / (
        2 * area[:, None, None]
    )  # grad of barycentric i, up to sign
    local = area[:, None, None] * np.einsum("tik,tjk->tij", gradients, gradients)
    rows = np.repeat(triangles, 3, axis=1).ravel()
    cols = np.tile(triangles, (1, 3)).ravel()
    return scipy.sparse.csr_matrix((local.ravel(), (rows, cols)), shape=(len(nodes),) * 2)


def plate_fem(n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
    """The P1 finite-element solution of the insulated plate on :func:`plate_mesh` ``(n)``.

    Args:
      n: cells per unit length (see :func:`plate_mesh`).

    Returns:
      ``(nodes, triangles, u at the nodes, flux)``: ``flux`` is the heat flux ``integral -u_x dy``
      through x = 0 (the reaction at its nodes), equal to that through any cut across the plate.
    """
    nodes, triangles = plate_mesh(n)
    matrix_k = stiffness(nodes, triangles)
    left, right = np.isclose(nodes[:, 0], 0.0), np.isclose(nodes[:, 0], LENGTH)
    fixed = left | right
    u = np.where(left, 1.0, 0.0)
    free = ~fixed
    matrix = matrix_k[free][:, free].tocsc()
    u[free] = scipy.sparse.linalg.spsolve(matrix, -matrix_k[free][:, fixed] @ u[fixed])
    flux = float((matrix_k @ u)[left].sum())  # sum_i (K u)_i over x = 0 = integral du/dn = integral -u_x dy
    return nodes, triangles, u, flux


def on_grid(nodes: np.ndarray, triangles: np.ndarray, u: np.ndarray, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """The P1 field at the grid ``x x y`` (ij indexing), linear on each triangle; NaN in the holes.

    A point between the circle and the mesh's chords is read just outside the chord (moved away from
    the disk's centre by twice the chords' sagitta, a distance of order h^2).
    """
    from matplotlib.tri import LinearTriInterpolator, Triangulation

    px, py = np.meshgrid(x, y, indexing="ij")
    field = LinearTriInterpolator(Triangulation(nodes[:, 0], nodes[:, 1], triangles), u)
    values = np.ma.filled(field(px, py).astype(float), np.nan)
    missed = np.isnan(values) & ~in_holes(px, py)
    if missed.any():
        on_circle = np.isclose(np.hypot(nodes[:, 0] - DISK_CENTRE[0], nodes[:, 1] - DISK_CENTRE[1]), DISK_RADIUS)
        sagitta = DISK_RADIUS * (1.0 - np.cos(np.pi / on_circle.sum()))
        dx, dy = px[missed] - DISK_CENTRE[0], py[missed] - DISK_CENTRE[1]
        scale = 1.0 + 2.0 * sagitta / np.hypot(dx, dy)
        values[missed] = np.ma.filled(field(DISK_CENTRE[0] + scale * dx, DISK_CENTRE[1] + scale * dy), np.nan)
    return np.where(in_holes(px, py), np.nan, values)


TEST_AXES = {"x": np.linspace(0.0, LENGTH, 201), "y": np.linspace(0.0, HEIGHT, 101)}  # h = 0.01
REFERENCE_N = 160


@functools.lru_cache(maxsize=2)
def plate_reference(n: int = REFERENCE_N) -> tuple[dict[str, np.ndarray], np.ndarray, float]:
    """The solution of :func:`plate_fem` ``(n)`` on :data:`TEST_AXES`, and the flux, solved once.

    With the environment variable ``HODIFF_CACHE`` naming a directory they are also kept there as
    ``fem_plate_<n>.npz`` (written atomically) and read back by later processes.

    Returns:
      ``(axes, u on the grid (NaN in the holes), flux)``.
    """

    def compute() -> dict[str, np.ndarray]:
        nodes, triangles, values, flux = plate_fem(n)
        u = on_grid(nodes, triangles, values, TEST_AXES["x"], TEST_AXES["y"])
        return {"x": TEST_AXES["x"], "y": TEST_AXES["y"], "u": u, "flux": np.array(flux)}

    saved = cached_on_disk(f"fem_plate_{n}.npz", ("x", "y", "u", "flux"), compute)
    return {"x": saved["x"], "y": saved["y"]}, saved["u"], float(saved["flux"])
