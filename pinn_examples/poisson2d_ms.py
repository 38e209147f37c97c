"""PINNacle Poisson2d-MS: a (u_xx + u_yy) + f = 0 on [-10, 10]^2 in 5 x 5 blocks, du/dn = -u on the edges.

``a`` is constant on each block of side 4 (from 0.13 to 88) and ``f = c00 + c11 sin(pi xi)
sin(pi eta)`` with ``(xi, eta)`` the block-local coordinates; the coefficients are PINNacle's
(:func:`pinn_examples.poisson2d_ms_reference.coefficients`, read from
:func:`~pinn_examples.poisson2d_ms_reference.data_dir`). Every PINNacle method fails here (best
L2RE 5.9e-1); target 5e-2.

What makes it hard for a plain PINN, and what is done about each:

- ``a`` spans three decades, so the residual ``a Delta u + f`` weighs the blocks by ``a``: the
  blocks with small ``a``, where ``u`` is largest, hardly count. The residual here is
  ``Delta u + f / a`` (the same equation divided by ``a``), which weighs every block alike.
- The square is 20 wide and ``u`` ranges from -7 to 18: the network sees the square scaled to
  ``[-1, 1]^2`` (:func:`hodiff.pinn.mlp`) and its output is multiplied by :data:`OUTPUT_SCALE`,
  so that the network's own output and its derivatives in the scaled coordinates are of order 1.
- ``f / a`` jumps across the interfaces (``u`` is only C^1 there): float64 and L-BFGS after Adam,
  which fit the smooth pieces closely; a residual that cannot vanish in a thin band around the
  jumps costs little.
- The Robin condition (the only thing that fixes the level of ``u``: a constant changes no
  residual) is a loss term at :data:`BOUNDARY` points on the edges.

The error is PINNacle's L2RE on the 101 x 101 grid of the square (nodes on every interface and
edge), against the finite-volume reference (:mod:`pinn_examples.poisson2d_ms_reference`, h = 1/80,
its own error about 1e-6).

References:
  Hao et al. (2024), "PINNacle: A Comprehensive Benchmark of Physics-Informed Neural Networks
  for Solving PDEs", NeurIPS Datasets and Benchmarks (arXiv:2306.08827), problem Poisson2d-MS.
"""

import dataclasses

import numpy as np
import tensorflow as tf

from pinn_examples import poisson2d_ms_reference as ms
from pinn_examples._runner import Example, Settings, run, setting
from pinn_examples.fd_references import on_test_grid

OUTPUT_SCALE = 10.0  # u = OUTPUT_SCALE * network: u ranges over about [-7, 18]
TEST_POINTS = 101  # the test grid: 101 x 101 nodes, h = 0.2, on every interface and edge


@dataclasses.dataclass
class MultiScaleSettings(Settings):
    """The shared settings plus the Robin condition's points and weight."""

    boundary: int = setting(1024, "points on the edges for the Robin condition", positive=True)
    robin_weight: float = setting(1.0, "loss weight of the Robin condition (the residual's is 1)", positive=True)


def tables(dtype):
    """``a`` ``(5, 5)`` and the ``(c00, c11)`` pairs ``(5, 5, 2)`` as constants of ``dtype``."""
    a, c = ms.coefficients()
    return tf.constant(a, dtype), tf.constant(c, dtype)


def source_over_a(x, y, a, c):
    """``f / a`` at tensors ``x``, ``y`` (the blocks found by ``floor``; ``a``, ``c`` from :func:`tables`)."""
    i = tf.clip_by_value(tf.floor((x + ms.HALF) / ms.BLOCK), 0.0, ms.BLOCKS - 1.0)
    j = tf.clip_by_value(tf.floor((y + ms.HALF) / ms.BLOCK), 0.0, ms.BLOCKS - 1.0)
    xi, eta = (x + ms.HALF) / ms.BLOCK - i, (y + ms.HALF) / ms.BLOCK - j
    index = tf.stack([tf.cast(i, tf.int32), tf.cast(j, tf.int32)], axis=1)
    pair = tf.gather_nd(c, index)
    f = pair[:, 0] + pair[:, 1] * tf.sin(np.pi * xi) * tf.sin(np.pi * eta)
    return f / tf.gather_nd(a, index)


def build(settings: MultiScaleSettings):
    from hodiff import pinn

    domain = pinn.Rectangle(("x", "y"), (-ms.HALF, -ms.HALF), (ms.HALF, ms.HALF))
    a, c = tables(settings.dtype)
    problem = pinn.Problem(
        domain,
        needs=("u_xx", "u_yy"),
        residual=lambda d, x, p: d["u_xx"] + d["u_yy"] + source_over_a(x["x"], x["y"], a, c),
        conditions=[pinn.Robin(1.0, 1.0, 0.0, count=settings.boundary)],  # u + du/dn = 0
        weights={"robin": settings.robin_weight},
        output_transform=lambda x, u: OUTPUT_SCALE * u,
    )
    return problem, pinn.mlp(
        domain, width=settings.width, depth=settings.depth, dtype=settings.dtype, seed=settings.seed
    )


def reference():
    x, y, u = on_test_grid(*ms.cached(), points=TEST_POINTS)
    return {"x": x, "y": y}, u


EXAMPLE = Example(
    name="poisson2d_ms",
    build=build,
    reference=reference,
    presets={
        "default": MultiScaleSettings(
            interior=8192, adam_steps=1000, lbfgs_iterations=5000, width=64, depth=4, dtype="float64"
        ),
        "fast": MultiScaleSettings(
            interior=256,
            boundary=64,
            adam_steps=100,
            lbfgs_iterations=20,
            width=16,
            depth=2,
            dtype="float64",
            checkpoint_every=100,
        ),
    },
    target={"default": 5e-2},
)


def main(argv=None) -> int:
    return run(EXAMPLE, argv)
