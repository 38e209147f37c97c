"""PINNacle KS (chaotic): u_t + (100/16) u u_x + (100/16^2) u_xx + (100/16^4) u_xxxx = 0, x in [0, 2 pi] periodic.

``u(x, 0) = cos x (1 + sin x)``, ``t in [0, 1]``. With ``s = 16 x`` and ``tau = 100 t`` this is the
standard ``u_tau + u u_s + u_ss + u_ssss = 0`` on ``[0, 32 pi]``, the chaotic case of Kassam &
Trefethen (2005) up to their ``tau = 100``: modes up to ``k = 16`` grow (up to ``exp(25 t)``), and
a perturbation of the initial condition grows about 1,500-fold by ``t = 1`` (docs/pinnacle.md), so
every error the network makes early is amplified later. What the example combines (Wang,
Sankaran & Perdikaris 2024 solved this setup on a GPU):

- exact periodicity: the network sees ``x`` through ``cos x`` and ``sin x`` (period ``2 pi``);
- time-marching in 20 windows of 0.05 (``--time-windows``), the initial condition of each hard:
  ``u = previous + (t - t_k) / 0.05 N``, where ``previous`` is the window before at its end as its
  Fourier series in ``x`` (so every window costs the same, ``--no-restart`` to differentiate the
  frozen networks instead), the initial condition in the first;
- ``u_xxxx`` taken directly by nested tapes (``--split`` solves for ``u`` and ``v = u_xx`` with
  second derivatives only: cheaper, but 60 times less accurate here);
- the modified MLP with random weight factorisation, float64, residual-based resampling every
  100 Adam steps, Adam then self-scaled BFGS in each window (``--quasi-newton bfgs``: 7x less error
  than L-BFGS over the first two windows, at the same cost). Causal weights (``--causal-epsilon``) are
  off: their stop-gradient makes the quasi-Newton line search fail at once.

Reference: Fourier pseudo-spectral ETDRK4 (Kassam & Trefethen 2005) on 512 modes, self-converged
to ~1e-8 (tests). The error is PINNacle's L2RE on a 256 x 101 grid over the whole ``(x, t)``
domain. PINNacle: every method about 1.0; target 5e-2 (not met: see docs/pinnacle.md).

References:
  Hao et al. (2024), "PINNacle: A Comprehensive Benchmark of Physics-Informed Neural Networks
  for Solving PDEs", NeurIPS Datasets and Benchmarks (arXiv:2306.08827), problem KS; Wang,
  Sankaran & Perdikaris (2024), "Respecting causality for training physics-informed neural
  networks", CMAME 421; Kassam & Trefethen (2005), "Fourth-order time-stepping for stiff PDEs",
  SIAM J. Sci. Comput. 26(4).
"""

import dataclasses

import numpy as np

from pinn_examples.references import kuramoto_sivashinsky_etdrk4
from pinn_examples.runner import Example, Settings, run, setting

ADVECTION, ANTIDIFFUSION, HYPERDIFFUSION = 100.0 / 16, 100.0 / 16**2, 100.0 / 16**4
END = 1.0
GRID_X, GRID_T = 256, 101
RESTART_POINTS = 256  # restart samples in x: the reference's modes above k = 128 are below 1e-11 up to t = 1


@dataclasses.dataclass
class KSSettings(Settings):
    architecture: str = setting("modified", "the network: plain MLP or modified MLP", choices=("mlp", "modified"))
    factorization: bool = setting(True, "random weight factorisation of the dense layers (mean 1, std 0.1)")
    causal_bins: int = setting(16, "time slices of the causal weights in each window", positive=True)
    fourier_features: int = setting(0, "random Fourier features of the embedded inputs (periodic still); 0: none")
    fourier_scale: float = setting(2.0, "standard deviation of the Fourier frequencies", positive=True)
    restart: bool = setting(True, "each window starts from the Fourier series in x of the one before, not its network")
    split: bool = setting(False, "solve for u and v = u_xx (second derivatives only) instead of taking u_xxxx of u")
    local_time: bool = setting(False, "each window's network sees its time stretched over the horizon (TimeWindows)")


def residual(d, x, p):
    """The PDE with ``v = u_xx`` as a second field (two second-order equations for one fourth-order)."""
    return {
        "ks": d["u_t"] + ADVECTION * d["u"] * d["u_x"] + ANTIDIFFUSION * d["v"] + HYPERDIFFUSION * d["v_xx"],
        "curvature": d["v"] - d["u_xx"],
    }


def residual_fourth(d, x, p):
    """The PDE as written, with ``u_xxxx`` (``--no-split``)."""
    return d["u_t"] + ADVECTION * d["u"] * d["u_x"] + ANTIDIFFUSION * d["u_xx"] + HYPERDIFFUSION * d["u_xxxx"]


def initial(x):
    """``u(x, 0) = cos x (1 + sin x) = cos x + sin(2x) / 2`` and ``v = u_xx = -cos x - 2 sin 2x``, ``(N, 2)``."""
    import tensorflow as tf

    return tf.stack([tf.cos(x["x"]) + 0.5 * tf.sin(2.0 * x["x"]), -tf.cos(x["x"]) - 2.0 * tf.sin(2.0 * x["x"])], 1)


def initial_u(x):
    """``u(x, 0)`` alone, ``(N, 1)`` (``--no-split``)."""
    return initial(x)[:, :1]


def scaled_transform(length: float):
    """``u = previous + (t - t_k) / length N``: the network's output is the change over a window of
    ``length`` (order one), not the time derivative (tens where the cells form)."""

    def transform(x, outputs, start, previous):
        return previous + ((x["t"] - start) / length)[:, None] * outputs

    return transform


def periodic_line(end: float = END):
    """The space-time box ``[0, 2 pi] x [0, end]``."""
    from hodiff import pinn

    return pinn.Interval("x", 0.0, 2.0 * np.pi) * pinn.TimeDomain("t", 0.0, end)


def windows(settings: KSSettings, end: float = END):
    """The ``settings.time_windows`` windows, each with the hard initial condition ``previous + (t - t_k) N``
    (``previous`` as its Fourier series in ``x`` unless ``--no-restart``)."""
    from hodiff import pinn

    restart = None
    if settings.restart:
        fourier = pinn.Fourier(0.0, 2.0 * np.pi, RESTART_POINTS)
        restart = pinn.SeriesRestart(periodic_line(end), {"x": fourier}, settings.dtype)
    transform = scaled_transform(end / settings.time_windows)
    return pinn.TimeWindows(
        settings.time_windows, initial if settings.split else initial_u, transform, restart, settings.local_time
    )


def build(settings: KSSettings, end: float = END):
    """The problem on ``[0, 2 pi] x [0, end]`` (one window's hard initial condition) and the network."""
    from hodiff import pinn

    domain = periodic_line(end)
    one = windows(dataclasses.replace(settings, time_windows=1), end)
    causal = pinn.CausalWeights(settings.causal_epsilon, settings.causal_bins) if settings.causal_epsilon else None
    if settings.split:
        needs, equations, fields = ("u", "u_t", "u_x", "u_xx", "v", "v_xx"), residual, ("u", "v")
    else:
        needs, equations, fields = ("u", "u_t", "u_x", "u_xx", "u_xxxx"), residual_fourth, ("u",)
    problem = pinn.Problem(
        domain,
        needs=needs,
        residual=equations,
        fields=fields,
        output_transform=one.output_transform(domain, 0.0, None),
        causal=causal,
    )
    model = pinn.mlp(
        domain,
        outputs=len(fields),
        width=settings.width,
        depth=settings.depth,
        dtype=settings.dtype,
        seed=settings.seed,
        periodic={"x": 2.0 * np.pi},
        architecture=settings.architecture,
        factorization=(1.0, 0.1) if settings.factorization else None,
        fourier_features=settings.fourier_features,
        fourier_scale=settings.fourier_scale,
    )
    return problem, model


def reference(end: float = END):
    """The ETDRK4 solution on the test grid: 256 points in ``x`` (both ends), 101 times in ``[0, end]``."""
    x, t = np.linspace(0.0, 2.0 * np.pi, GRID_X), np.linspace(0.0, end, GRID_T)
    return {"x": x, "t": t}, kuramoto_sivashinsky_etdrk4(x, t, dt=end / (GRID_T - 1) / 200)


EXAMPLE = Example(
    name="kuramoto_sivashinsky",
    build=build,
    reference=reference,
    presets={
        "default": KSSettings(
            interior=1024,
            adam_steps=200,
            lbfgs_iterations=200,
            quasi_newton="bfgs",
            width=32,
            depth=4,
            dtype="float64",
            resample_every=100,
            time_windows=20,
        ),
        "fast": KSSettings(
            xla=False,
            interior=128,
            adam_steps=20,
            lbfgs_iterations=10,
            width=8,
            depth=2,
            dtype="float64",
            steps_per_call=10,
            log_every=10,
            checkpoint_every=10,
            time_windows=2,
        ),
    },
    target={"default": 5e-2},
    error_fields=("u",),
    windows=windows,
    wall_seconds={"default": 1510},  # on 2 CPU cores, as recorded in docs/benchmarks.md, PINNacle problems
)


def main(argv=None) -> int:
    return run(EXAMPLE, argv)


if __name__ == "__main__":  # python FILE runs it as python -m pinn_examples NAME does
    raise SystemExit(main())
