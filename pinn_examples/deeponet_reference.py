"""Method-of-lines reference for the diffusion-reaction operator of the ``deeponet`` example.

``u_t = D u_xx + K u^2 + f(x)`` on ``[0, 1] x [0, 1]`` with ``u(x, 0) = 0`` and
``u(0, t) = u(1, t) = 0``, for a source ``f`` given by its values on the sensor grid
``x_j = j / (m - 1)`` and taken between sensors as the piecewise-linear interpolant (the same
``f`` the network sees). Second-order central differences on a grid of ``refinement`` cells per
sensor interval (the sensors are grid nodes, so the kinks of ``f`` sit on nodes), integrated in
time by ``scipy.integrate.solve_ivp`` (BDF, tridiagonal Jacobian, tight tolerances). The spatial
error falls as ``h^2``; :func:`convergence` measures it.
"""

from __future__ import annotations

import numpy as np
import scipy.integrate
import scipy.sparse

DIFFUSION = 0.01
REACTION = 0.01


def solve(
    f: np.ndarray,
    t: np.ndarray,
    refinement: int = 4,
    diffusion: float = DIFFUSION,
    reaction: float = REACTION,
    rtol: float = 1e-10,
    atol: float = 1e-12,
) -> np.ndarray:
    """The solution at the sensor grid and the times ``t``, for one source ``f``.

    Args:
      f: the source at the ``m`` sensors ``x_j = j / (m - 1)``, shape ``(m,)``.
      t: increasing output times in ``[0, 1]``, starting at 0.
      refinement: grid cells per sensor interval (``h = 1 / (refinement (m - 1))``).
      diffusion: ``D``.
      reaction: ``K``.
      rtol: relative tolerance of ``solve_ivp``.
      atol: absolute tolerance of ``solve_ivp``.

    Returns:
      ``u`` of shape ``(m, len(t))`` (sensor ``x`` by time, ij indexing), zero on the boundary.
    """
    f = np.asarray(f, dtype=np.float64)
    t = np.asarray(t, dtype=np.float64)
    if f.ndim != 1 or f.size < 2:
        raise ValueError(f"solve: f must hold the source at m >= 2 sensors, shape (m,); got shape {f.shape}.")
    if refinement < 1 or int(refinement) != refinement:
        raise ValueError(f"solve: refinement must be an int >= 1 (cells per sensor interval); got {refinement}.")
    m = f.size
    cells = refinement * (m - 1)
    x = np.linspace(0.0, 1.0, cells + 1)
    source = np.interp(x[1:-1], np.linspace(0.0, 1.0, m), f)
    h = 1.0 / cells
    n = cells - 1
    laplacian = scipy.sparse.diags([np.ones(n - 1), -2.0 * np.ones(n), np.ones(n - 1)], [-1, 0, 1]) / h**2
    laplacian = laplacian.tocsr()

    def rhs(_, u):
        return diffusion * (laplacian @ u) + reaction * u * u + source

    def jacobian(_, u):
        return diffusion * laplacian + scipy.sparse.diags(2.0 * reaction * u)

    result = scipy.integrate.solve_ivp(
        rhs, (t[0], t[-1]), np.zeros(n), method="BDF", t_eval=t, jac=jacobian, rtol=rtol, atol=atol
    )
    if not result.success:
        raise RuntimeError(f"solve: solve_ivp failed: {result.message}")
    u = np.zeros((cells + 1, t.size))
    u[1:-1] = result.y
    return u[::refinement]


def convergence(f: np.ndarray, t: np.ndarray, refinements=(1, 2, 4, 8), finest: int = 32) -> dict:
    """Relative L2 errors of :func:`solve` at each refinement against a much finer solve.

    Args:
      f: the source at the sensors, shape ``(m,)``.
      t: output times.
      refinements: the grids to measure.
      finest: the refinement taken as exact.

    Returns:
      ``{"refinements": [...], "errors": [...], "orders": [...]}``; ``orders[i]`` is the observed
      order between refinements ``i`` and ``i + 1``.
    """
    exact = solve(f, t, finest)
    errors = [float(np.linalg.norm(solve(f, t, r) - exact) / np.linalg.norm(exact)) for r in refinements]
    orders = [
        float(np.log(errors[i] / errors[i + 1]) / np.log(refinements[i + 1] / refinements[i]))
        for i in range(len(errors) - 1)
    ]
    return {"refinements": list(refinements), "errors": errors, "orders": orders}
