"""Reference solutions in numpy/scipy, independent of TensorFlow, each tested for convergence.

- :func:`burgers_cole_hopf`: viscous Burgers with u(x, 0) = -sin(pi x), exact through the
  Cole-Hopf transform, integrals by Gauss-Hermite quadrature in log-sum-exp form.
- :func:`heat_exact` and :func:`heat_method_of_lines` (``solve_ivp`` on a finite-difference grid).
- :func:`allen_cahn_etdrk4`: Fourier pseudo-spectral ETDRK4 (Kassam & Trefethen 2005).
- :func:`kdv_etdrk4` and :func:`kuramoto_sivashinsky_etdrk4`: the same scheme, dealiased.
"""

from __future__ import annotations

import numpy as np
import scipy.integrate
from scipy.special import logsumexp


def burgers_cole_hopf(x: np.ndarray, t: np.ndarray, nu: float, nodes: int = 200) -> np.ndarray:
    """u(x, t) of u_t + u u_x = nu u_xx, u(x, 0) = -sin(pi x), u(+-1, t) = 0, on a grid.

    Cole-Hopf: u = -int sin(pi (x - s)) f(x - s) G(s) ds / int f(x - s) G(s) ds with
    f(y) = exp(-cos(pi y) / (2 pi nu)) and the heat kernel G. With s = sqrt(4 nu t) z both
    integrals become Gauss-Hermite sums; f spans exp(+-1/(2 pi nu)) (e^+-50 for
    nu = 0.01/pi), so the sums are taken in log-sum-exp form.

    Args:
      x: 1-D array of positions.
      t: 1-D array of times (t = 0 gives the initial condition).
      nu: viscosity.
      nodes: Gauss-Hermite nodes.

    Returns:
      Array ``(len(x), len(t))``.

    References:
      Basdevant et al. (1986), "Spectral and finite difference solutions of the Burgers
      equation", Computers & Fluids 14.
    """
    z, w = np.polynomial.hermite.hermgauss(nodes)
    x, t = np.asarray(x, float), np.asarray(t, float)
    u = np.empty((len(x), len(t)))
    for j, time in enumerate(t):
        if time == 0:
            u[:, j] = -np.sin(np.pi * x)
            continue
        y = x[:, None] - np.sqrt(4.0 * nu * time) * z[None, :]  # (x, nodes)
        log_f = -np.cos(np.pi * y) / (2.0 * np.pi * nu) + np.log(w)[None, :]
        numerator = logsumexp(log_f, b=-np.sin(np.pi * y), axis=1, return_sign=True)
        denominator = logsumexp(log_f, axis=1)
        u[:, j] = numerator[1] * np.exp(numerator[0] - denominator)
    return u


def burgers_quad(x: float, t: float, nu: float) -> float:
    """The same Cole-Hopf integrals by adaptive ``scipy.integrate.quad`` (slow; for checks)."""
    scale = np.sqrt(4.0 * nu * t)
    shift = 1.0 / (2.0 * np.pi * nu)  # keeps exp(...) below overflow: -cos <= 1
    f = lambda s: np.exp(-np.cos(np.pi * (x - s)) / (2.0 * np.pi * nu) - shift - (s / scale) ** 2)
    limit = 12 * scale
    numerator = scipy.integrate.quad(
        lambda s: -np.sin(np.pi * (x - s)) * f(s), -limit, limit, limit=500, epsabs=0, epsrel=1e-12, points=[0.0]
    )[0]
    denominator = scipy.integrate.quad(f, -limit, limit, limit=500, epsabs=0, epsrel=1e-12, points=[0.0])[0]
    return numerator / denominator


def heat_exact(x: np.ndarray, t: np.ndarray, alpha: float = 0.4) -> np.ndarray:
    """u = exp(-alpha pi^2 t) sin(pi x) on a grid ``(len(x), len(t))``."""
    return np.sin(np.pi * np.asarray(x))[:, None] * np.exp(-alpha * np.pi**2 * np.asarray(t))[None, :]


def heat_method_of_lines(x: np.ndarray, t: np.ndarray, alpha: float = 0.4, cells: int = 400) -> np.ndarray:
    """u_t = alpha u_xx on [0, 1], u(x, 0) = sin(pi x), u = 0 at both ends, by the method of lines.

    Second-order central differences on ``cells`` cells, integrated by ``solve_ivp`` (Radau,
    tight tolerances), interpolated to ``x``. Error O(1/cells^2).
    """
    grid = np.linspace(0.0, 1.0, cells + 1)
    h = grid[1] - grid[0]
    main = -2.0 * np.ones(cells - 1)
    laplacian = (np.diag(main) + np.diag(np.ones(cells - 2), 1) + np.diag(np.ones(cells - 2), -1)) * alpha / h**2
    solution = scipy.integrate.solve_ivp(
        lambda _, u: laplacian @ u,
        (0.0, float(np.max(t))),
        np.sin(np.pi * grid[1:-1]),
        method="Radau",
        t_eval=np.asarray(t),
        jac=laplacian,
        rtol=1e-10,
        atol=1e-12,
    )
    full = np.vstack([np.zeros(len(t)), solution.y, np.zeros(len(t))])
    return np.stack([np.interp(x, grid, full[:, j]) for j in range(len(t))], axis=1)


def allen_cahn_etdrk4(
    x: np.ndarray, t: np.ndarray, modes: int = 512, dt: float = 1e-4, diffusion: float = 1e-4, reaction: float = 5.0
) -> np.ndarray:
    """u_t = diffusion u_xx + reaction (u - u^3), x in [-1, 1) periodic, u(x, 0) = x^2 cos(pi x).

    Fourier pseudo-spectral in space with ``modes`` points, ETDRK4 in time with step ``dt``;
    the phi-functions are evaluated by contour integrals (Kassam & Trefethen 2005, M = 32).
    Returned on the grid ``(len(x), len(t))`` by spectral (trigonometric) interpolation.

    References:
      Kassam & Trefethen (2005), "Fourth-order time-stepping for stiff PDEs", SIAM J. Sci.
      Comput. 26(4).
    """
    grid = -1.0 + 2.0 * np.arange(modes) / modes
    k = np.pi * np.fft.rfftfreq(modes, d=1.0 / modes)  # wavenumbers for period 2
    linear = -diffusion * k**2 + reaction
    nonlinear = lambda v: -reaction * np.fft.rfft(np.fft.irfft(v, n=modes) ** 3)
    initial = np.fft.rfft(grid**2 * np.cos(np.pi * grid))
    return _etdrk4(initial, linear, nonlinear, k, modes, x, t, dt, "allen_cahn_etdrk4")


def kdv_etdrk4(
    x: np.ndarray, t: np.ndarray, modes: int = 512, dt: float = 2e-4, dispersion: float = 0.0025
) -> np.ndarray:
    """u_t + u u_x + dispersion u_xxx = 0, x in [-1, 1) periodic, u(x, 0) = cos(pi x).

    Fourier pseudo-spectral in space with ``modes`` points, the nonlinear term written as
    ``-(u^2 / 2)_x`` and dealiased by the 2/3 rule; ETDRK4 in time with step ``dt``. The
    dispersive term is linear and stiff (``dispersion k^3`` reaches ~1e6 at 512 modes), so it is
    integrated exactly by the exponential; its symbol is imaginary, so the phi-functions are
    contour integrals over a full circle (Kassam & Trefethen 2005, M = 64). Returned on the grid
    ``(len(x), len(t))`` by spectral (trigonometric) interpolation.

    References:
      Kassam & Trefethen (2005), "Fourth-order time-stepping for stiff PDEs", SIAM J. Sci.
      Comput. 26(4); Zabusky & Kruskal (1965), "Interaction of solitons in a collisionless
      plasma and the recurrence of initial states", Phys. Rev. Lett. 15.
    """
    grid = -1.0 + 2.0 * np.arange(modes) / modes
    k = np.pi * np.fft.rfftfreq(modes, d=1.0 / modes)  # wavenumbers for period 2
    linear = 1j * dispersion * k**3  # -dispersion (ik)^3
    keep = np.abs(np.fft.rfftfreq(modes, d=1.0 / modes)) < modes / 3  # 2/3 rule
    derivative = -0.5j * k * keep

    def nonlinear(v):
        u = np.fft.irfft(v * keep, n=modes)
        return derivative * np.fft.rfft(u * u)

    return _etdrk4(np.fft.rfft(np.cos(np.pi * grid)), linear, nonlinear, k, modes, x, t, dt, "kdv_etdrk4")


def kuramoto_sivashinsky_etdrk4(
    x: np.ndarray,
    t: np.ndarray,
    modes: int = 512,
    dt: float = 2e-5,
    coefficients: tuple[float, float, float] = (100.0 / 16, 100.0 / 16**2, 100.0 / 16**4),
    perturbation: float = 0.0,
) -> np.ndarray:
    """u_t + a u u_x + b u_xx + c u_xxxx = 0, x in [0, 2 pi) periodic, u(x, 0) = cos x (1 + sin x).

    ``coefficients = (a, b, c)``, PINNacle's by default: with ``s = 16 x`` and ``tau = 100 t`` it is
    the standard ``u_tau + u u_s + u_ss + u_ssss = 0`` on ``[0, 32 pi]``, the chaotic case of Kassam &
    Trefethen (``t = 1`` is their ``tau = 100``). Fourier pseudo-spectral in space with ``modes``
    points, the nonlinear term written as ``-a (u^2 / 2)_x`` and dealiased by the 2/3 rule; ETDRK4
    in time with step ``dt``, the phi-functions by contour integrals (M = 32 on half a circle, the
    symbol ``b k^2 - c k^4`` being real). ``perturbation`` adds ``perturbation * sin(3 x)`` to the
    initial condition (to measure how fast nearby solutions part). Returned on the grid
    ``(len(x), len(t))`` by spectral (trigonometric) interpolation.

    References:
      Kassam & Trefethen (2005), "Fourth-order time-stepping for stiff PDEs", SIAM J. Sci.
      Comput. 26(4); Hao et al. (2024), "PINNacle", arXiv:2306.08827 (problem KS).
    """
    a, b, c = coefficients
    grid = 2.0 * np.pi * np.arange(modes) / modes
    k = np.fft.rfftfreq(modes, d=1.0 / modes)  # integer wavenumbers: period 2 pi
    linear = b * k**2 - c * k**4
    keep = k < modes / 3  # 2/3 rule
    derivative = -0.5j * a * k * keep

    def nonlinear(v):
        u = np.fft.irfft(v * keep, n=modes)
        return derivative * np.fft.rfft(u * u)

    initial = np.fft.rfft(np.cos(grid) * (1.0 + np.sin(grid)) + perturbation * np.sin(3.0 * grid))
    return _etdrk4(initial, linear, nonlinear, k, modes, x, t, dt, "kuramoto_sivashinsky_etdrk4", start=0.0)


def _etdrk4(initial, linear, nonlinear, k, modes, x, t, dt, caller, start=-1.0):
    """ETDRK4 (Kassam & Trefethen 2005) for v' = linear v + nonlinear(v) in Fourier space, from the
    ``rfft`` coefficients ``initial``; the solution at the times ``t`` (multiples of ``dt``),
    interpolated trigonometrically to ``x`` (wavenumbers ``k``, grid starting at ``start``): ``(len(x), len(t))``.

    The phi-functions are contour integrals around each ``dt * linear``: for a real symbol, half
    a circle of 32 points and the real part (the other half is its conjugate); otherwise the full
    circle of 64 points.
    """
    real = np.isrealobj(linear)
    roots = (
        np.exp(1j * np.pi * (np.arange(1, 33) - 0.5) / 32)
        if real
        else np.exp(2j * np.pi * (np.arange(1, 65) - 0.5) / 64)
    )
    LR = dt * linear[:, None] + roots[None, :]
    contour = (
        (lambda values: dt * np.real(np.mean(values, axis=1)))
        if real
        else (lambda values: dt * np.mean(values, axis=1))
    )
    E, E2 = np.exp(dt * linear), np.exp(dt * linear / 2)
    Q = contour((np.exp(LR / 2) - 1) / LR)
    f1 = contour((-4 - LR + np.exp(LR) * (4 - 3 * LR + LR**2)) / LR**3)
    f2 = contour((2 + LR + np.exp(LR) * (-2 + LR)) / LR**3)
    f3 = contour((-4 - 3 * LR - LR**2 + np.exp(LR) * (4 - LR)) / LR**3)
    v = initial
    times = np.asarray(t, float)
    steps = np.rint(times / dt).astype(int)
    if np.any(np.abs(steps * dt - times) > 1e-9):
        raise ValueError(f"{caller}: every output time must be a multiple of dt.")
    snapshots, step = {}, 0
    for target in sorted(set(steps)):
        while step < target:
            Nv = nonlinear(v)
            a = E2 * v + Q * Nv
            Na = nonlinear(a)
            b = E2 * v + Q * Na
            Nb = nonlinear(b)
            c = E2 * a + Q * (2 * Nb - Nv)
            Nc = nonlinear(c)
            v = E * v + Nv * f1 + 2 * (Na + Nb) * f2 + Nc * f3
            step += 1
        snapshots[target] = v.copy()
    x = np.asarray(x, float)
    phases = np.exp(1j * np.outer(x - start, k))  # trigonometric interpolation
    weights = np.full(len(k), 2.0)
    weights[0] = 1.0
    if modes % 2 == 0:
        weights[-1] = 1.0
    return np.stack([np.real(phases @ (weights * snapshots[s])) / modes for s in steps], axis=1)
