"""A cut-cell finite-volume reference in 3-D: -Lap(u) + k2(z) u = f in the unit cube minus balls, zero flux.

:func:`balls_fv` discretises ``-Lap(u) + k2 u = f`` on ``[0, 1]^3`` minus disjoint balls with
``du/dn = g`` on the balls' spheres (``g = 0`` by default) and ``du/dn = 0`` on the cube's faces,
by cell-centred finite volumes on a Cartesian grid of ``n^3`` cells: each cell's balance is
``sum_faces A_f h (u_P - u_N) + k2 V h^3 u_P = V h^3 f(P) + (flux through the sphere)``, with
``V`` the cell's fluid volume fraction and ``A_f`` its faces' fluid fractions (apertures), both
integrated by Gauss quadrature of the exact chord lengths. The matrix is symmetric positive
definite (k2 > 0); conjugate gradients with a Jacobi preconditioner solve it.

:func:`poisson3d_cg_fv` is PINNacle's Poisson3d-CG on it. Its convergence is a test
(``tests/test_cutcell_reference.py``): a manufactured solution converges at about second order.

References:
  Johansen & Colella (1998), "A Cartesian grid embedded boundary method for Poisson's equation on
  irregular domains", J. Comput. Phys. 147.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence

import numpy as np
import scipy.sparse
import scipy.sparse.linalg

from pinn_examples.fd_references import cached_on_disk

# poisson3d_cg (PINNacle Poisson3d-CG): the balls (cx, cy, cz, radius), k2 = 64 below z = 1/2 and 100 above
CG3_BALLS = ((0.4, 0.3, 0.6, 0.2), (0.6, 0.7, 0.6, 0.2), (0.2, 0.8, 0.7, 0.1), (0.6, 0.2, 0.3, 0.1))

_GAUSS = np.polynomial.legendre.leggauss(8)
_PANELS = 4  # Gauss panels per cell side: 32 nodes per side


def cg3_k2(z):
    """poisson3d_cg's ``k^2``: 64 for ``z < 1/2``, 100 above."""
    return np.where(z < 0.5, 64.0, 100.0)


def cg3_source(x, y, z, ops=np):
    """poisson3d_cg's ``f``; ``ops=tf`` for tensors (it needs ``sin`` and ``exp``)."""
    norm2 = x**2 + y**2 + z**2
    waves = ops.sin(np.pi * x) + ops.sin(10 * np.pi * y) + ops.sin(5 * np.pi * z)
    product = ops.sin(np.pi * x) * ops.sin(10 * np.pi * y) * ops.sin(5 * np.pi * z)
    return 20.0 * ops.exp(waves) * (norm2 - 1.0) / (norm2 + 1.0) + 100.0 * product


def _nodes(low: np.ndarray, high: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Composite Gauss nodes and weights on each interval ``[low, high]`` (arrays ``(m,)`` -> ``(m, q)``)."""
    points, weights = _GAUSS
    edges = np.linspace(0.0, 1.0, _PANELS + 1)
    t = (edges[:-1, None] + (edges[1:] - edges[:-1])[:, None] * (points[None, :] + 1) / 2).ravel()
    w = ((edges[1:] - edges[:-1])[:, None] * weights[None, :] / 2).ravel()
    width = (high - low)[:, None]
    return low[:, None] + width * t[None, :], width * w[None, :]


def _disk_in_square(cy, cz, rho2, y0, z0, h):
    """Area of the disks (centres (cy, cz), radii^2 rho2; rows) inside the squares [y0, y0+h] x [z0, z0+h]."""
    rho = np.sqrt(np.maximum(rho2, 0.0))
    low = np.maximum(y0, cy - rho)
    high = np.maximum(np.minimum(y0 + h, cy + rho), low)
    ys, ws = _nodes(low, high)
    half = np.sqrt(np.maximum(rho[:, None] ** 2 - (ys - cy[:, None]) ** 2, 0.0))
    top = np.minimum(z0[:, None] + h, cz[:, None] + half)
    bottom = np.maximum(z0[:, None], cz[:, None] - half)
    return np.sum(ws * np.maximum(top - bottom, 0.0), axis=1)


def _face_fractions(c, r, axis, planes, ia, ib, h):
    """Solid fractions of the faces normal to ``axis`` at plane indices x index grids (P, A, B) near one ball."""
    a, b = [k for k in range(3) if k != axis]
    P, A, B = (m.ravel() for m in np.meshgrid(planes, ia, ib, indexing="ij"))
    rho2 = r**2 - (P * h - c[axis]) ** 2
    gap = np.hypot((A + 0.5) * h - c[a], (B + 0.5) * h - c[b])  # square centre to disk centre
    rho = np.sqrt(np.maximum(rho2, 0.0))
    fraction = np.where(gap + h / np.sqrt(2) <= rho, 1.0, 0.0)
    cut = (gap + h / np.sqrt(2) > rho) & (gap - h / np.sqrt(2) < rho) & (rho2 > 0)
    for part in np.array_split(np.flatnonzero(cut), max(1, cut.sum() // 20000)):
        area = _disk_in_square(
            np.full(part.size, c[a]), np.full(part.size, c[b]), rho2[part], A[part] * h, B[part] * h, h
        )
        fraction[part] = area / h**2
    index = [None, None, None]
    index[axis], index[a], index[b] = P, A, B
    return tuple(index), fraction


def _cell_fractions(c, r, ix, iy, iz, h):
    """Solid fractions of the cells (index grids) near one ball."""
    X, Y, Z = (m.ravel() for m in np.meshgrid(ix, iy, iz, indexing="ij"))
    gap = np.sqrt(((X + 0.5) * h - c[0]) ** 2 + ((Y + 0.5) * h - c[1]) ** 2 + ((Z + 0.5) * h - c[2]) ** 2)
    corner = h * np.sqrt(3) / 2
    fraction = np.where(gap + corner <= r, 1.0, 0.0)
    cut = np.flatnonzero((gap + corner > r) & (gap - corner < r))
    for part in np.array_split(cut, max(1, cut.size // 2000)):
        xs, ws = _nodes(X[part] * h, X[part] * h + h)  # the ball's slices along x, over the cell's width
        rows = np.repeat(part, xs.shape[1])
        area = _disk_in_square(
            np.full(rows.size, c[1]),
            np.full(rows.size, c[2]),
            (r**2 - (xs - c[0]) ** 2).ravel(),
            Y[rows] * h,
            Z[rows] * h,
            h,
        )
        fraction[part] = np.sum(ws * area.reshape(xs.shape), axis=1) / h**3
    return (X, Y, Z), fraction


def solid_fractions(balls, n: int):
    """The fractions of the cells and of their faces that lie inside the balls (the solid).

    Args:
      balls: ``(cx, cy, cz, radius)`` of each ball, disjoint.
      n: cells per side of the unit cube.

    Returns:
      ``(cells, faces)``: ``(n, n, n)`` fractions of the cells' volumes, and a list of the x-, y-
      and z-faces' area fractions, shapes ``(n + 1, n, n)``, ``(n, n + 1, n)``, ``(n, n, n + 1)``.
    """
    h = 1.0 / n
    cells = np.zeros((n, n, n))
    faces = [np.zeros((n + 1, n, n)), np.zeros((n, n + 1, n)), np.zeros((n, n, n + 1))]
    for ball in balls:
        c, r = np.asarray(ball[:3], dtype=np.float64), float(ball[3])
        lo = np.maximum(np.floor((c - r) / h).astype(int), 0)
        hi = np.minimum(np.ceil((c + r) / h).astype(int), n)  # cells lo .. hi - 1 may meet the ball
        ranges = [np.arange(lo[k], hi[k]) for k in range(3)]
        for axis in range(3):
            a, b = [k for k in range(3) if k != axis]
            index, fraction = _face_fractions(c, r, axis, np.arange(lo[axis], hi[axis] + 1), ranges[a], ranges[b], h)
            np.add.at(faces[axis], index, fraction)
        index, fraction = _cell_fractions(c, r, *ranges, h)
        np.add.at(cells, index, fraction)
    return np.clip(cells, 0.0, 1.0), [np.clip(f, 0.0, 1.0) for f in faces]


def balls_fv(
    n: int,
    balls: Sequence[tuple[float, float, float, float]],
    k2: Callable[[np.ndarray], np.ndarray],
    source: Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray],
    normal_derivative: Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray] | None = None,
    rtol: float = 1e-10,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """-Lap(u) + k2(z) u = f in [0, 1]^3 minus disjoint balls; du/dn = 0 on the faces, g on the spheres.

    Args:
      n: cells per side (h = 1/n), even (so that z = 1/2 is a cell face), at least 4 / (smallest radius).
      balls: ``(cx, cy, cz, radius)`` of each ball, inside the cube and disjoint.
      k2: ``k2(z) > 0`` (constant on each cell: evaluated at its centre).
      source: ``f(x, y, z)`` (numpy arrays in, array out), taken at the cell centres.
      normal_derivative: ``g(x, y, z)``, the derivative of u along the normal pointing out of the
        domain (into the ball), at points of the spheres; ``None`` is zero flux.
      rtol: the conjugate gradients' relative residual.

    Returns:
      ``(centres, fraction, u)``: the cell-centre axis ``(n,)`` (the same on x, y, z), the fluid
      volume fraction of each cell ``(n, n, n)`` and u at the cell centres (NaN in cells entirely
      inside a ball).

    Example:
      ```python
      import numpy as np
      from pinn_examples.cutcell_reference import balls_fv

      ones = lambda x, y, z: 64.0 + 0 * x  # u = 1 solves -Lap(u) + 64 u = 64 with zero flux
      _, fraction, u = balls_fv(20, [(0.5, 0.5, 0.5, 0.2)], lambda z: 64.0 + 0 * z, ones)
      assert np.nanmax(np.abs(u - 1.0)) < 1e-8 and 0.9 < fraction.mean() < 0.98
      ```
    """
    if n % 2 or n * min(b[3] for b in balls) < 4:
        raise ValueError(f"balls_fv: n={n} must be even and at least 4 / (the smallest radius); give a larger n.")
    h = 1.0 / n
    axis = (np.arange(n) + 0.5) * h
    solid, solid_faces = solid_fractions(balls, n)
    fraction = 1.0 - solid
    fluid = fraction > 1e-12
    index = -np.ones((n, n, n), dtype=np.int64)
    index[fluid] = np.arange(fluid.sum())
    X, Y, Z = np.meshgrid(axis, axis, axis, indexing="ij")
    diagonal = (k2(Z) * fraction * h**3)[fluid]
    rhs = (source(X, Y, Z) * fraction * h**3)[fluid]
    rows, cols, values = [], [], []
    flux_vector = np.zeros((3, n, n, n))  # sum over the cell's faces of (aperture * area * outward normal)
    for ax in range(3):
        aperture = 1.0 - solid_faces[ax]
        inner = [slice(None)] * 3
        inner[ax] = slice(1, n)  # the faces between cells i-1 and i
        a = aperture[tuple(inner)]
        left = [slice(None)] * 3
        left[ax] = slice(0, n - 1)
        right = [slice(None)] * 3
        right[ax] = slice(1, n)
        il, ir = index[tuple(left)], index[tuple(right)]
        link = (a > 1e-12) & (il >= 0) & (ir >= 0)
        w = (a * h)[link]
        rows += [il[link], ir[link]]
        cols += [ir[link], il[link]]
        values += [-w, -w]
        np.add.at(diagonal, il[link], w)
        np.add.at(diagonal, ir[link], w)
        low = [slice(None)] * 3
        low[ax] = slice(0, n)
        high = [slice(None)] * 3
        high[ax] = slice(1, n + 1)
        flux_vector[ax] = (aperture[tuple(high)] - aperture[tuple(low)]) * h**2
    if normal_derivative is not None:
        # the sphere's piece in a cell: its area vector (outward of the domain) is minus the faces' sum
        centres = np.stack([X, Y, Z])
        nearest = np.zeros_like(centres)
        best = np.full((n, n, n), np.inf)
        for cx, cy, cz, r in balls:
            offset = centres - np.array([cx, cy, cz])[:, None, None, None]
            distance = np.sqrt(np.sum(offset**2, axis=0))
            closer = np.abs(distance - r) < best
            point = np.array([cx, cy, cz])[:, None, None, None] + r * offset / np.maximum(distance, 1e-300)
            nearest = np.where(closer, point, nearest)
            best = np.where(closer, np.abs(distance - r), best)
        area = np.sqrt(np.sum(flux_vector**2, axis=0))
        rhs += (area * normal_derivative(*nearest))[fluid]
    rows.append(np.arange(len(diagonal)))
    cols.append(np.arange(len(diagonal)))
    values.append(diagonal)
    size = len(diagonal)
    matrix = scipy.sparse.csr_matrix(
        (np.concatenate(values), (np.concatenate(rows), np.concatenate(cols))), (size, size)
    )
    scale = 1.0 / np.sqrt(diagonal)  # symmetric Jacobi scaling: CG on D^-1/2 A D^-1/2
    scaled = scipy.sparse.diags(scale) @ matrix @ scipy.sparse.diags(scale)
    solution, info = scipy.sparse.linalg.cg(scaled, rhs * scale, rtol=rtol, maxiter=20 * n)
    if info != 0:
        raise RuntimeError(f"balls_fv: conjugate gradients did not converge in {info} iterations (n={n}).")
    u = np.full((n, n, n), np.nan)
    u[fluid] = solution * scale
    return axis, fraction, u


def poisson3d_cg_fv(n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """PINNacle Poisson3d-CG: -Lap(u) + k2(z) u = f in the cube minus :data:`CG3_BALLS`, zero flux everywhere."""
    return balls_fv(n, CG3_BALLS, cg3_k2, cg3_source)


@functools.lru_cache(maxsize=2)
def cached(n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`poisson3d_cg_fv` ``(n)``, solved once per process (and, with ``HODIFF_CACHE`` naming a folder, kept
    there as ``fv_poisson3d_cg_<n>.npz`` for later processes, written atomically)."""
    names = ("axis", "fraction", "u")
    saved = cached_on_disk(f"fv_poisson3d_cg_{n}.npz", names, lambda: dict(zip(names, poisson3d_cg_fv(n))))
    return saved["axis"], saved["fraction"], saved["u"]
