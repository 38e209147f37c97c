"""Finite-volume reference of PINNacle's NS2d-LT: unsteady Navier-Stokes in a channel, by SBDF2 in time.

The problem: ``u_t + u u_x + v u_y + p_x = nu (u_xx + u_yy)``,
``v_t + u v_x + v v_y + p_y = nu (v_xx + v_yy) - sin(pi x) sin(pi y) sin(pi t)``, ``u_x + v_y = 0``,
``nu = 0.01``, on ``[0, 2] x [0, 1] x [0, 5]``; the inflow ``u = sin(pi y) g(t)``,
``g(t) = sin(pi t) + sin(3 pi t) + sin(5 pi t)``, ``v = 0`` at ``x = 0``; no slip at ``y = 0`` and
``y = 1``; the outlet ``x = 2`` free of stress, ``-p + 2 nu u_x = 0`` and ``u_y + v_x = 0`` (PINNacle writes
``p = 0``: see docs/pinnacle.md); at rest at ``t = 0``.

- Space: the staggered (MAC) finite volumes of :func:`pinn_examples.cavity_reference.flow_system`,
  ``cells`` cells per unit length, second order. The boundary velocity is ``g(t)`` times the inflow's
  profile, so one system serves every time: its constant terms scale with ``g(t)``.
- Time: SBDF2 (BDF2 for ``u_t`` with the viscous, pressure and continuity terms implicit and the
  convection extrapolated, ``2 C(z_n) - C(z_(n-1))``; Ascher, Ruuth & Wetton 1995), one backward Euler
  step to start. The implicit matrix is the same at every step: one sparse LU, then one solve a step.
  Second order in the time step; stable while ``max|u| dt / h`` stays below about 0.5 (the tests).
- The pressure at ``t = 0``: incompressible flow has no initial pressure to give (PINNacle's ``p = 0``
  at ``t = 0`` is not the limit ``t -> 0+``, where the accelerating inflow needs a pressure gradient),
  so the test points' times are ``> 0``.
- :func:`ns2d_lt_reference`: the solution at the example's 20,000 test points (:func:`test_points`),
  on the picture slice ``y = 0.5`` over ``(x, t)`` and on ``(x, y)`` grids at :data:`SNAPSHOTS`, cached
  in ``~/.cache/hodiff`` (as :mod:`pinn_examples.cavity_reference`).

References:
  Hao et al. (2024), "PINNacle: A Comprehensive Benchmark of Physics-Informed Neural Networks
  for Solving PDEs", NeurIPS Datasets and Benchmarks (arXiv:2306.08827), problem NS2d-LT.
  Ascher, Ruuth & Wetton (1995), "Implicit-explicit methods for time-dependent partial differential
  equations", SIAM J. Numer. Anal. 32(3).
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg

from pinn_examples.cavity_reference import NU, FlowSystem, convection, flow_system, interpolate_points, linear_part
from pinn_examples.fd_references import read_cache, write_cache

LENGTH, END = 2.0, 5.0
TEST_POINTS, TEST_SEED, TEST_DT = 20_000, 20_261_205, 0.01  # test times: multiples of TEST_DT in (0, END]
PICTURE_Y, PICTURE_X, PICTURE_TIMES = 0.5, 101, 251  # the slice y = 0.5 over (x, t), times every 0.02
SNAPSHOTS = (0.5, 1.0, 2.5, 4.0, 5.0)  # times of the (x, y) pictures
SNAPSHOT_X, SNAPSHOT_Y = 101, 51
REFERENCE_CELLS, REFERENCE_DT = 64, 0.0025


INFLOW_WAVES = (1, 3, 5)  # the inflow's g(t) = sin(pi t) + sin(3 pi t) + sin(5 pi t)


def inflow(t: np.ndarray | float) -> np.ndarray:
    """``g(t) = sin(pi t) + sin(3 pi t) + sin(5 pi t)``: the inflow ``u(0, y, t) = sin(pi y) g(t)``."""
    return sum(np.sin(k * np.pi * t) for k in INFLOW_WAVES)


def forcing(x: np.ndarray, y: np.ndarray, t: float) -> np.ndarray:
    """The y-momentum equation's right-hand side ``-sin(pi x) sin(pi y) sin(pi t)``."""
    return -np.sin(np.pi * x) * np.sin(np.pi * y) * np.sin(np.pi * t)


def _walls(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The boundary velocity at ``g = 1``: ``sin(pi y)`` across the inlet ``x = 0``, at rest elsewhere."""
    return np.where(x == 0.0, np.sin(np.pi * y), 0.0), np.zeros(np.shape(x))


def solve_ns2d_lt(cells: int, dt: float, points: np.ndarray, end: float | None = None) -> dict[str, np.ndarray]:
    """The SBDF2 / staggered finite-volume solution at ``points``.

    Args:
      cells: cells per unit length (``2 cells x cells`` cells), an integer >= 4.
      dt: the time step, > 0.
      points: ``(N, 3)`` points ``(x, y, t)`` in the box, every ``t`` a multiple of ``dt``.
      end: the last time stepped to; default the points' largest time.

    Returns:
      ``{"u", "v", "p"}``, each ``(N,)``: bilinear interpolation of the staggered fields at each point's step.
    """
    if not isinstance(cells, (int, np.integer)) or cells < 4:
        raise ValueError(f"solve_ns2d_lt: cells={cells!r} must be an integer >= 4 (cells per unit length).")
    if not dt > 0:
        raise ValueError(f"solve_ns2d_lt: dt={dt!r} must be positive.")
    points = np.asarray(points, dtype=np.float64)
    if points.ndim != 2 or points.shape[1] != 3:
        raise ValueError(f"solve_ns2d_lt: points must be (N, 3) columns x, y, t; got shape {points.shape}.")
    steps = np.rint(points[:, 2] / dt).astype(np.int64)
    if np.any(np.abs(steps * dt - points[:, 2]) > 1e-9 * max(1.0, dt)) or np.any(steps < 0):
        raise ValueError(f"solve_ns2d_lt: every point's time must be a multiple of dt={dt} in [0, end].")
    last = int(steps.max(initial=0)) if end is None else int(round(end / dt))
    if steps.max(initial=0) > last:
        raise ValueError(f"solve_ns2d_lt: a point's time is after end={end}.")
    h = 1.0 / cells
    system = flow_system(np.ones((int(LENGTH * cells), cells), bool), h, _walls, outlet=True, nu=NU)
    order = np.argsort(steps, kind="stable")
    values = {name: np.empty(len(points)) for name in ("u", "v", "p")}
    cursor = 0

    def collect(step, fields):
        nonlocal cursor
        end_here = cursor
        while end_here < len(order) and steps[order[end_here]] == step:
            end_here += 1
        if end_here > cursor:
            chosen = order[cursor:end_here]
            at = interpolate_points(fields, points[chosen, :2], h)
            for name in values:
                values[name][chosen] = at[name]
            cursor = end_here

    shape = forcing(*system.centres["v"], 0.5)  # at sin(pi t) = 1
    march(system, dt, last, inflow, lambda t: np.sin(np.pi * t) * shape, collect)
    return values


def march(
    system: FlowSystem,
    dt: float,
    steps: int,
    scale: Callable[[float], float],
    force: Callable[[float], np.ndarray],
    callback: Callable[[int, dict[str, np.ndarray]], None],
) -> None:
    """Steps ``system``'s flow from rest by SBDF2 (one backward Euler step first).

    Args:
      system: the discrete equations (:func:`pinn_examples.cavity_reference.flow_system`).
      dt: the time step.
      steps: how many steps.
      scale: ``scale(t)``: the boundary velocity at time ``t`` is ``scale(t)`` times the system's.
      force: ``force(t)``: the y-momentum equation's right-hand side at the ``v`` nodes (``system.centres["v"]``).
      callback: ``callback(step, fields)`` at every step, ``0 .. steps``, with the staggered fields at
        ``t = step dt`` (``system.fields``).
    """
    linear, constant = linear_part(system)
    n_momentum = system.n_u + system.n_v
    rest_rows = system.size - n_momentum
    mass = sp.vstack([system.velocity, sp.csr_matrix((rest_rows, system.size))]).tocsr()
    zeros_u, zeros_p = np.zeros(system.n_u), np.zeros(rest_rows)

    def explicit(z, t):
        cx, cy = convection(system, z, scale(t))
        return np.concatenate([cx, cy, zeros_p])

    z = np.zeros(system.size)
    z_before = c_before = solver = None
    callback(0, system.fields(z, scale(0.0)))
    for step in range(1, steps + 1):
        t = step * dt
        c_now = explicit(z, t - dt)
        rest = scale(t) * constant - np.concatenate([zeros_u, force(t), zeros_p])
        if step == 1:
            z_next = scipy.sparse.linalg.splu((mass / dt + linear).tocsc()).solve(mass @ z / dt - c_now - rest)
        else:
            if solver is None:
                solver = scipy.sparse.linalg.splu((1.5 / dt * mass + linear).tocsc())
            z_next = solver.solve(mass @ (2.0 * z - 0.5 * z_before) / dt - (2.0 * c_now - c_before) - rest)
        z_before, c_before, z = z, c_now, z_next
        if not np.all(np.isfinite(z)) or np.abs(z[:n_momentum]).max() > 1e3:
            raise RuntimeError(
                f"march: the flow blew up at t = {t:g} (h = {system.h:g}, dt = {dt:g}); give a smaller dt "
                f"(max|u| dt / h must stay below about 0.5)."
            )
        callback(step, system.fields(z, scale(t)))


def test_points(dt: float = TEST_DT) -> np.ndarray:
    """The example's ``(20000, 3)`` test points: ``(x, y)`` uniform in ``[0, 2] x [0, 1]``, ``t`` uniform among
    the multiples of ``dt`` in ``(0, 5]``."""
    rng = np.random.default_rng(TEST_SEED)
    space = rng.uniform(size=(TEST_POINTS, 2)) * np.array([LENGTH, 1.0])
    steps = rng.integers(1, int(round(END / dt)) + 1, size=TEST_POINTS)
    return np.column_stack([space, steps * dt])


def picture_points() -> tuple[dict[str, np.ndarray], np.ndarray]:
    """The picture slice ``y = 0.5`` over ``(x, t)``: its axes and the ``(len(x) * len(t), 3)`` points (ij order)."""
    x, t = np.linspace(0.0, LENGTH, PICTURE_X), np.linspace(0.0, END, PICTURE_TIMES)
    gx, gt = (g.ravel() for g in np.meshgrid(x, t, indexing="ij"))
    return {"x": x, "t": t}, np.column_stack([gx, np.full_like(gx, PICTURE_Y), gt])


def snapshot_points(times: tuple[float, ...] = SNAPSHOTS) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """The ``(x, y)`` grids at ``times``: the axes and the ``(len(times) * len(x) * len(y), 3)`` points."""
    x, y = np.linspace(0.0, LENGTH, SNAPSHOT_X), np.linspace(0.0, 1.0, SNAPSHOT_Y)
    gx, gy = (g.ravel() for g in np.meshgrid(x, y, indexing="ij"))
    points = np.concatenate([np.column_stack([gx, gy, np.full_like(gx, t)]) for t in times])
    return {"x": x, "y": y}, points


@functools.lru_cache(maxsize=2)
def ns2d_lt_reference(
    cells: int = REFERENCE_CELLS, dt: float = REFERENCE_DT, cache: str | None = "~/.cache/hodiff"
) -> dict[str, np.ndarray]:
    """The reference at :func:`test_points`, on the picture slice and at the snapshots, solved once (minutes).

    Kept in ``cache/ns2d_lt_<cells>_<dt>.npz`` (``cache=None``: no cache) and read back by later processes.

    Returns:
      ``{"points": (20000, 3), "u", "v", "p": (20000,), "x", "t", "picture_u", ... (len(x), len(t)),
      "snapshot_x", "snapshot_y", "snapshot_u", ... (len(SNAPSHOTS), len(x), len(y))}``.
    """
    names = ("u", "v", "p")
    keys = ("points", *names, "x", "t", "snapshot_x", "snapshot_y") + tuple(
        f"{kind}_{name}" for kind in ("picture", "snapshot") for name in names
    )
    path = None if cache is None else os.path.join(os.path.expanduser(cache), f"ns2d_lt_{cells}_{dt:g}.npz")
    picture, snapshot = (PICTURE_X, PICTURE_TIMES), (len(SNAPSHOTS), SNAPSHOT_X, SNAPSHOT_Y)
    shapes: dict[str, tuple[int | None, ...]] = {"points": (TEST_POINTS, 3), "x": (PICTURE_X,), "t": (PICTURE_TIMES,)}
    shapes |= {"snapshot_x": (SNAPSHOT_X,), "snapshot_y": (SNAPSHOT_Y,)}
    for name in names:
        shapes |= {name: (TEST_POINTS,), f"picture_{name}": picture, f"snapshot_{name}": snapshot}
    if path is not None and os.path.lexists(path):
        saved = read_cache(path, keys, shapes)
        if saved is not None:
            return saved
    points = test_points()
    axes, slice_points = picture_points()
    grid, snapshots = snapshot_points()
    values = solve_ns2d_lt(cells, dt, np.concatenate([points, slice_points, snapshots]), end=END)
    n, m = len(points), len(slice_points)
    result = {"points": points, "x": axes["x"], "t": axes["t"], "snapshot_x": grid["x"], "snapshot_y": grid["y"]}
    for name in names:
        result[name] = values[name][:n]
        result[f"picture_{name}"] = values[name][n : n + m].reshape(len(axes["x"]), len(axes["t"]))
        result[f"snapshot_{name}"] = values[name][n + m :].reshape(len(SNAPSHOTS), len(grid["x"]), len(grid["y"]))
    if path is not None:
        write_cache(path, **result)
    return result
