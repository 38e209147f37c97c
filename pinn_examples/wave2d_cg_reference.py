"""Finite-difference reference of PINNacle's Wave2d-CG (numpy only): leapfrog in time, second order.

The problem: ``u_tt = c(x, y) (u_xx + u_yy)`` on ``[-1, 1]^2 x [0, 5]``, ``u(x, y, 0) =
exp(-((x + 0.5)^2 + y^2) / (2 * 0.3^2))``, ``u_t(x, y, 0) = 0``, zero normal derivative on the edges, with
``c = 12`` where PINNacle's Gaussian random field ``g`` is positive and ``1`` elsewhere, ``g``'s unit square
mapped onto ``[-1, 1]^2`` (``../shared/pinnacle/README.md``; the same field as Heat2d-VC's table,
:func:`~pinn_examples.heat2d_vc_reference.coefficient_table`).

- PINNacle's code (``src/pde/wave.py``, ``WaveHeterogeneous``) writes the residual ``u_xx + u_yy - u_tt / c`` and
  looks ``c`` up by ``scipy.interpolate.griddata`` (linear) on the table's nodes: ``c`` is continuous, piecewise
  linear across each table cell, so the jumps from 1 to 12 are spread over one cell (``2 / 255``). This reference
  interpolates the table bilinearly (:func:`wave_speed_squared`); griddata's triangles and bilinear cells agree at
  the nodes and differ inside a cell only where ``c`` changes there.
- The form: ``c (u_xx + u_yy)``, as PINNacle's code and the issue state it. Whether PINNacle's published solution
  solves this form or ``div(c grad u)`` (its Heat2d-VC solution solves the divergence form) could not be checked:
  its file is not available. :func:`wave2d_cg_fd` solves either (``form=``); docs/pinnacle.md gives how far apart
  they are.
- Space: the nodes of a grid of ``255 m + 1`` a side (every table node is a grid node), the five-point Laplacian,
  the walls by reflection (``u[-1] = u[1]``: second order for the zero normal derivative). The Gaussian's slope
  is not zero at ``x = -1`` (the initial data and the wall condition disagree there): the exact solution is the
  evolution of the Gaussian's even reflection across the wall, with a kink that leaves the wall, which the
  reflection reproduces.
- Time: leapfrog, ``u^(n+1) = 2 u^n - u^(n-1) + dt^2 c L u^n``, started by the Taylor step
  ``u^1 = u^0 + dt^2 / 2 c L u^0`` (``u_t = 0``); ``dt`` is 0.9 of the stability limit ``h / sqrt(2 max c)``
  rounded down so that every test time is a step.
- :func:`wave2d_cg_reference`: Richardson's extrapolation ``(4 u_4 - u_2) / 3`` of the solutions with 2 and 4
  grid cells per table cell, at the example's test points (every fifth table node, 52 x 52, at 26 times from 0
  to 5) and on the picture (the table's nodes at ``t = 5``), cached in memory and, with ``HODIFF_CACHE`` set, on
  disk (atomic writes). About 4 minutes on 2 cores.

The convergence study (tests/test_wave2d_cg_reference.py): second order on a short horizon; over the whole
horizon ``m = 2`` is 1.7e-2 from ``m = 4``, ``m = 4`` is 5.6e-3 from the reference and the extrapolation from
``m = 1`` and 2 is 8.5e-3 from it: the reference's error is estimated at a few 1e-3 (docs/pinnacle.md).

References:
  Hao et al. (2024), "PINNacle: A Comprehensive Benchmark of Physics-Informed Neural Networks
  for Solving PDEs", NeurIPS Datasets and Benchmarks (arXiv:2306.08827), problem Wave2d-CG.
  LeVeque (2007), "Finite Difference Methods for Ordinary and Partial Differential Equations", SIAM (chapter 10).
"""

from __future__ import annotations

import functools

import numpy as np
import scipy.interpolate

from pinn_examples.fd_references import cached_on_disk
from pinn_examples.heat2d_vc_reference import TABLE, coefficient_table

END = 5.0
FAST, SLOW = 12.0, 1.0  # c where g > 0, and elsewhere
CENTRE, WIDTH = (-0.5, 0.0), 0.3  # the initial Gaussian
REFERENCE_M = 2  # extrapolated from 2 and 4 grid cells per table cell: h = 2 / 510 and 2 / 1020
TEST_STRIDE, TEST_TIMES = 5, np.linspace(0.0, END, 26)  # every fifth table node (52 a side) at 26 times
PICTURE_TIME = END
FORMS = ("laplacian", "divergence")


def coefficient_nodes() -> np.ndarray:
    """``c[ix, iy]`` (12 or 1) at the table's nodes ``x = -1 + 2 ix / 255``, ``y = -1 + 2 iy / 255``."""
    a = coefficient_table().T  # 1 or 2, [ix, iy]
    return np.where(a > 1.5, FAST, SLOW)


def wave_speed_squared(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """``c`` at points of ``[-1, 1]^2``: the table interpolated bilinearly (continuous, as PINNacle's lookup)."""
    nodes = np.linspace(-1.0, 1.0, TABLE)
    lookup = scipy.interpolate.RegularGridInterpolator((nodes, nodes), coefficient_nodes())
    return lookup(np.stack([np.clip(x, -1.0, 1.0), np.clip(y, -1.0, 1.0)], axis=-1))


def initial(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """``u(x, y, 0)``: the Gaussian of width 0.3 at ``(-0.5, 0)``."""
    return np.exp(-((x - CENTRE[0]) ** 2 + (y - CENTRE[1]) ** 2) / (2.0 * WIDTH**2))


def _operator(c: np.ndarray, h: float, form: str):
    """``apply(padded) -> L u`` for ``u = padded[1:-1, 1:-1]``: ``c (u_xx + u_yy)`` or ``div(c grad u)`` on the
    nodes; ``padded``'s frame is filled by reflection (``u[-1] = u[1]``) in place."""
    weights = {}
    if form == "divergence":
        p = np.pad(c, 1, mode="reflect")
        weights = {"east": 0.5 * (p[2:, 1:-1] + c), "west": 0.5 * (p[:-2, 1:-1] + c)}
        weights |= {"north": 0.5 * (p[1:-1, 2:] + c), "south": 0.5 * (p[1:-1, :-2] + c)}
    scale = (c if form == "laplacian" else 1.0) / h**2

    def apply(padded: np.ndarray) -> np.ndarray:
        padded[0], padded[-1] = padded[2], padded[-3]
        padded[:, 0], padded[:, -1] = padded[:, 2], padded[:, -3]
        u = padded[1:-1, 1:-1]
        neighbours = {"east": padded[2:, 1:-1], "west": padded[:-2, 1:-1]}
        neighbours |= {"north": padded[1:-1, 2:], "south": padded[1:-1, :-2]}
        if not weights:
            total = neighbours["east"] + neighbours["west"]
            total += neighbours["north"]
            total += neighbours["south"]
            total -= 4.0 * u
        else:
            total = sum(weights[side] * (neighbours[side] - u) for side in neighbours)
        total *= scale
        return total

    return apply


def wave2d_cg_fd(m: int, times=TEST_TIMES, form: str = "laplacian") -> tuple[np.ndarray, np.ndarray]:
    """Leapfrog on ``255 m + 1`` nodes a side: ``(nodes, u)``, ``u[k, ix, iy]`` at ``times[k]`` (multiples of one
    step: every time in ``times`` is a multiple of the first positive gap)."""
    if form not in FORMS:
        raise ValueError(f"wave2d_cg_fd: form={form!r} is not one of {FORMS}.")
    times = np.asarray(times, float)
    nodes = np.linspace(-1.0, 1.0, (TABLE - 1) * m + 1)
    h = nodes[1] - nodes[0]
    gx, gy = np.meshgrid(nodes, nodes, indexing="ij")
    c = wave_speed_squared(gx, gy)
    apply = _operator(c, h, form)
    gap = np.diff(times)[np.diff(times) > 0].min()
    per_gap = int(np.ceil(gap / (0.9 * h / np.sqrt(2.0 * c.max()))))
    dt = gap / per_gap
    steps = np.rint(times / dt).astype(int)
    if not np.allclose(steps * dt, times, atol=1e-9 * max(END, times.max())):
        raise ValueError("wave2d_cg_fd: every time must be a multiple of the smallest gap between times.")
    padded = np.pad(initial(gx, gy), 1)
    u = padded[1:-1, 1:-1]
    previous, step = u - 0.5 * dt**2 * apply(padded), 0  # the Taylor start: u^-1 = u^1 when u_t = 0
    out = np.empty((len(times), *u.shape))
    for k, target in sorted(enumerate(steps), key=lambda pair: pair[1]):
        while step < target:
            change = apply(padded)
            change *= dt**2
            change -= previous
            previous[...] = u
            u *= 2.0
            u += change  # u^(n+1) = 2 u^n - u^(n-1) + dt^2 L u^n
            step += 1
        out[k] = u
    return nodes, out


@functools.lru_cache(maxsize=2)
def wave2d_cg_reference(m: int = REFERENCE_M) -> dict[str, np.ndarray]:
    """``points`` ``(N, 3)`` and ``u`` at the test points; ``x``, ``y`` and ``picture`` ``[ix, iy]`` at ``t = 5``:
    Richardson's extrapolation ``(4 u_2m - u_m) / 3`` of the solutions on ``m`` and ``2 m`` grid cells per table
    cell, at the table's nodes."""

    def compute():
        times = np.union1d(TEST_TIMES, [PICTURE_TIME])
        coarse, fine = (wave2d_cg_fd(k, times)[1][:, ::k, ::k] for k in (m, 2 * m))
        table_nodes = (4.0 * fine - coarse) / 3.0
        nodes = np.linspace(-1.0, 1.0, TABLE)
        test = table_nodes[np.searchsorted(times, TEST_TIMES)][:, ::TEST_STRIDE, ::TEST_STRIDE]
        axis = nodes[::TEST_STRIDE]
        t, x, y = np.meshgrid(TEST_TIMES, axis, axis, indexing="ij")
        return {
            "points": np.stack([x.ravel(), y.ravel(), t.ravel()], axis=1),
            "u": test.ravel(),
            "x": nodes,
            "y": nodes,
            "picture": table_nodes[np.searchsorted(times, PICTURE_TIME)],
        }

    return cached_on_disk(f"wave2d_cg_reference_m{m}.npz", ("points", "u", "x", "y", "picture"), compute)
