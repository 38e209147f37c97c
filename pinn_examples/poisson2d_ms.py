"""PINNacle Poisson2d-MS: a (u_xx + u_yy) + f = 0 on [-10, 10]^2 in 5 x 5 blocks, du/dn = -u on the edges.

``a`` is constant on each block of side 4 (from 0.13 to 88) and ``f = c00 + c11 sin(pi xi)
sin(pi eta)`` with ``(xi, eta)`` the block-local coordinates; the coefficients are PINNacle's
(:func:`pinn_examples.poisson2d_ms_reference.coefficients`, read from
:func:`~pinn_examples.poisson2d_ms_reference.data_dir`). Every PINNacle method fails here (best
L2RE 5.9e-1); target 5e-2.

The equation is ``Delta u = g`` with ``g = -f / a``, which jumps across the interfaces, so ``u``
is only C^1 there. The squared strong residual (``a Delta u + f``, or ``Delta u + f / a``) is a
poor loss for it: a smooth network cannot follow the jumps of ``g``, and the bands around the
interfaces, where the residual cannot vanish, dominate the loss, while the smooth, large-scale
part of the error, which the Laplacian barely sees (its smallest eigenvalue with this Robin
condition on a square of side 20 is about 0.04), costs almost nothing. With ``a Delta u + f``
the blocks are also weighed by ``a``, which spans three decades.

The loss here is the Ritz energy (the weak form), which needs first derivatives only, has the
Robin condition as its natural boundary condition, and measures the error in the energy norm:
``E(u) = 1/2 int |grad u|^2 + int g u + 1/2 oint u^2``. With any field ``F`` of divergence
``-g`` (:func:`flux`, a closed form: half the antiderivative of ``-g`` in x, half in y),
``E(u) = 1/2 int |grad u + F|^2 + 1/2 oint (u - F.n)^2 + const``, a sum of squares: the loss is
the mean square of the residuals ``u_x + F_x`` and ``u_y + F_y`` at the interior points plus
``perimeter / area = 0.2`` times the mean square of ``u - F.n`` at the edge points, which is
``2 E(u) / area`` up to a constant (it does not fall to zero). Its minimiser is the solution.

The mean over the points is a quadrature of the energy, so the points are a midpoint grid
aligned with the blocks (:func:`midpoint_square`, :func:`edge_points`). A fixed quadrature can
be fooled: trained long enough, the network learns thin layers between the grid lines next to
the interfaces, where no point sees them, and the loss falls below the energy's minimum while
the error grows (3.4e-1 after 3,000 L-BFGS iterations). The default preset stops at 1,000, and
every run reports :func:`quadrature_check` (the loss on a second grid) in metrics.json.

Network: float64, the square scaled to ``[-1, 1]^2`` (:func:`hodiff.pinn.mlp`), the output
multiplied by :data:`OUTPUT_SCALE` (``u`` ranges from -7 to 18); Adam, then L-BFGS.

The error is PINNacle's L2RE on the 101 x 101 grid of the square (nodes on every interface and
edge), against the finite-volume reference (:mod:`pinn_examples.poisson2d_ms_reference`, h = 1/80,
its own error about 1e-6).

References:
  Hao et al. (2024), "PINNacle: A Comprehensive Benchmark of Physics-Informed Neural Networks
  for Solving PDEs", NeurIPS Datasets and Benchmarks (arXiv:2306.08827), problem Poisson2d-MS.
  E & Yu (2018), "The Deep Ritz Method: a deep learning-based numerical algorithm for solving
  variational problems", Commun. Math. Stat. 6.
"""

import numpy as np
import tensorflow as tf

from pinn_examples import poisson2d_ms_reference as ms
from pinn_examples.fd_references import on_test_grid
from pinn_examples.runner import Example, Settings, run

OUTPUT_SCALE = 10.0  # u = OUTPUT_SCALE * network: u ranges over about [-7, 18]
EDGE_WEIGHT = 4 * 2 * ms.HALF / (2 * ms.HALF) ** 2  # perimeter / area: the edge mean's share of the energy
CHECK_CELLS = 5  # the quadrature check's grid has this many more cells a side than the training grid
TEST_POINTS = 101  # the test grid: 101 x 101 nodes, h = 0.2, on every interface and edge


def midpoint_square():
    """The square, whose interior points are the cell centres of an ``n x n`` grid aligned with the blocks.

    Every cell lies in one block, so the mean over these points is the composite midpoint rule
    (second order on each block, where the integrands are smooth) for the energy's interior
    part; quasi-random points integrate the jumps of ``F`` much less accurately (1.6e-2 instead
    of 3.0e-3 after the same training). ``count`` must be ``n^2`` with ``n`` a multiple of 5.
    (A class made here, not at import time: ``NAME --help`` must not import hodiff.)
    """
    from hodiff.pinn import Box

    class MidpointSquare(Box):
        def sample_interior(self, count: int, method: str = "sobol", seed: int = 0) -> np.ndarray:
            axis = midpoints(cells_per_side(count))
            return np.stack([grid.ravel() for grid in np.meshgrid(axis, axis, indexing="ij")], axis=1)

    return MidpointSquare({"x": (-ms.HALF, ms.HALF), "y": (-ms.HALF, ms.HALF)})


def cells_per_side(count: int) -> int:
    """``n`` with ``n^2 = count`` and ``n`` a multiple of 5; ValueError naming ``--interior`` otherwise."""
    n = int(round(np.sqrt(count)))
    if n * n != count or n % ms.BLOCKS:
        near = max(ms.BLOCKS, ms.BLOCKS * round(np.sqrt(count) / ms.BLOCKS))
        raise ValueError(
            f"poisson2d_ms: --interior {count} is not n^2 with n a multiple of {ms.BLOCKS} (the interior points are "
            f"the centres of an n x n grid aligned with the 5 x 5 blocks); give e.g. --interior {near * near}."
        )
    return n


def midpoints(n: int) -> np.ndarray:
    """The centres of ``n`` equal cells of ``[-10, 10]``."""
    return -ms.HALF + (np.arange(n) + 0.5) * (2.0 * ms.HALF / n)


def edge_points(n: int) -> tuple[np.ndarray, np.ndarray]:
    """The midpoints of ``n`` equal pieces of each edge ``(4n, 2)`` and the outward normals there."""
    axis, ends = midpoints(n), np.full(n, ms.HALF)
    points = np.concatenate([np.stack(p, axis=1) for p in ((-ends, axis), (ends, axis), (axis, -ends), (axis, ends))])
    normals = np.repeat(np.array([[-1.0, 0.0], [1.0, 0.0], [0.0, -1.0], [0.0, 1.0]]), n, axis=0)
    return points, normals


def tables(directory=None) -> np.ndarray:
    """Per block ``(i, j)``: ``c00 / a``, ``c11 / a`` and the integrals of ``g = -f / a`` over the blocks before it.

    Returns:
      ``(5, 5, 6)``: ``c00 / a``, ``c11 / a``, then ``sum_{k < i}`` of ``-4 c00 / a`` and
      ``-(8 / pi) c11 / a`` over the blocks ``(k, j)`` (along x), then the same over ``(i, k)``
      (along y): the antiderivative of ``g`` from the edge is ``C0 + C1 sin(pi eta)`` plus the
      block's own part.
    """
    a, c = ms.coefficients(directory)
    c00, c11 = c[..., 0] / a, c[..., 1] / a
    before = lambda block, axis: np.cumsum(block, axis=axis) - block  # sum over the blocks before
    along_x = [before(-4.0 * c00, 0), before(-8.0 / np.pi * c11, 0)]
    along_y = [before(-4.0 * c00, 1), before(-8.0 / np.pi * c11, 1)]
    return np.stack([c00, c11, *along_x, *along_y], axis=-1)


def _blocks(x, y, table):
    """Per point: the row of ``table`` of its block, and its block-local ``(xi, eta)``; tensors or numpy."""
    ops = tf if tf.is_tensor(x) else np
    i = ops.clip_by_value if ops is tf else np.clip
    column = lambda z: i(ops.floor((z + ms.HALF) / ms.BLOCK), 0.0, ms.BLOCKS - 1.0)
    bx, by = column(x), column(y)
    if ops is tf:
        rows = tf.gather_nd(tf.constant(table, x.dtype), tf.cast(tf.stack([bx, by], axis=1), tf.int32))
    else:
        rows = table[bx.astype(np.int64), by.astype(np.int64)]
    return rows, (x + ms.HALF) / ms.BLOCK - bx, (y + ms.HALF) / ms.BLOCK - by


def source_over_a(x, y, table):
    """``f / a = -g`` at the points (tensors or numpy arrays), ``table`` from :func:`tables`."""
    ops = tf if tf.is_tensor(x) else np
    rows, xi, eta = _blocks(x, y, table)
    return rows[:, 0] + rows[:, 1] * ops.sin(np.pi * xi) * ops.sin(np.pi * eta)


def _antiderivatives(x, y, table):
    """``int_{-10}^x g(s, y) ds`` and ``int_{-10}^y g(x, s) ds`` (``g = -f / a``)."""
    ops = tf if tf.is_tensor(x) else np
    rows, xi, eta = _blocks(x, y, table)
    sx, sy = ops.sin(np.pi * xi), ops.sin(np.pi * eta)
    part = lambda t, s_other: -ms.BLOCK * (rows[:, 0] * t + rows[:, 1] * (1.0 - ops.cos(np.pi * t)) / np.pi * s_other)
    along_x = rows[:, 2] + rows[:, 3] * sy + part(xi, sy)
    along_y = rows[:, 4] + rows[:, 5] * sx + part(eta, sx)
    return along_x, along_y


def flux(x, y, table):
    """A field ``F = (F_x, F_y)`` with ``div F = -g = f / a``: ``F_x = -1/2 int_0^x g(s, y) ds``, ``F_y`` alike.

    Continuous along x (``F_x``) and along y (``F_y``), so its divergence holds across the
    interfaces too. Tensors or numpy arrays; ``table`` from :func:`tables`.
    """
    gx, _ = _antiderivatives(x, y, table)
    _, gy = _antiderivatives(x, y, table)
    gx0, _ = _antiderivatives(0.0 * x, y, table)
    _, gy0 = _antiderivatives(x, 0.0 * y, table)
    return -0.5 * (gx - gx0), -0.5 * (gy - gy0)


def check(settings: Settings) -> None:
    """ValueError naming the flag: ``--interior`` not a grid aligned with the blocks, or flags that would change the
    energy's weights or points (the command line refuses them when it parses the flags: ``Example.check``)."""
    cells_per_side(settings.interior)
    if settings.adaptive_weights or settings.loss_weighting != "none" or settings.resample_every:
        raise ValueError(
            "poisson2d_ms: the loss is the Ritz energy on a fixed midpoint grid, whose terms' weights and points "
            "are part of the equation solved; leave out --adaptive-weights, --loss-weighting and --resample-every."
        )


def build(settings: Settings):
    from hodiff import pinn

    try:  # a command-line user's mistakes end with the message alone
        check(settings)
        n = cells_per_side(settings.interior)
        table = tables()
    except (FileNotFoundError, ValueError) as error:
        raise SystemExit(str(error)) from None
    domain = midpoint_square()
    points, normals = edge_points(n)

    def residual(d, x, p):  # grad u + F: its mean square is the energy's interior part
        fx, fy = flux(x["x"], x["y"], table)
        return {"flux_x": d["u_x"] + fx, "flux_y": d["u_y"] + fy}

    def edges(d, x, n):  # u - F.n: its mean square is the energy's boundary part
        fx, fy = flux(x["x"], x["y"], table)
        return d["u"] - (fx * n["x"] + fy * n["y"])

    problem = pinn.Problem(
        domain,
        needs=("u_x", "u_y"),
        residual=residual,
        residual_names=("flux_x", "flux_y"),
        conditions=[pinn.Condition(edges, needs=("u",), on=points, normals=normals, name="edges")],
        weights={"edges": EDGE_WEIGHT},
        output_transform=lambda x, u: OUTPUT_SCALE * u,
    )
    return problem, pinn.mlp(
        domain, width=settings.width, depth=settings.depth, dtype=settings.dtype, seed=settings.seed
    )


def quadrature_check(trainer) -> dict:
    """The loss on a second midpoint grid (``CHECK_CELLS`` more cells a side, its points between the training
    grid's) beside the loss on the training grid: they agree to the quadrature's error, about 1e-3, unless the
    network has learnt thin layers between the training points, where the fixed quadrature cannot see them."""
    problem = trainer.problem
    n = cells_per_side(trainer.data.interior_count) + CHECK_CELLS
    points, normals = edge_points(n)
    check = {"interior": problem.domain.sample_interior(n * n), "edges": {"points": points, "normals": normals}}
    dtype = trainer.model.weights[0].dtype
    check = tf.nest.map_structure(lambda array: tf.constant(array, dtype), check)
    loss = lambda points: sum(
        problem.weights.get(name, 1.0) * float(value)
        for name, value in problem.loss_terms(trainer.solution, points, {}).items()
    )
    own = {"interior": trainer.data.interior, "edges": trainer.data.points["edges"]}
    training, other = loss(own), loss(check)
    return {"loss_on_check_grid": other, "quadrature_gap": other - training}


def reference():
    x, y, u = on_test_grid(*ms.cached(), points=TEST_POINTS)
    return {"x": x, "y": y}, u


EXAMPLE = Example(
    name="poisson2d_ms",
    build=build,
    reference=reference,
    check=check,
    presets={
        "default": Settings(interior=10000, adam_steps=1000, lbfgs_iterations=1000, width=32, depth=4, dtype="float64"),
        "fast": Settings(
            xla=False,
            interior=400,
            adam_steps=100,
            lbfgs_iterations=20,
            width=16,
            depth=2,
            dtype="float64",
            checkpoint_every=100,
        ),
    },
    target={"default": 5e-2},
    extra_metrics=quadrature_check,
    wall_seconds={"default": 80},  # on 2 CPU cores, as recorded in docs/benchmarks.md, PINNacle problems
)


def main(argv=None) -> int:
    return run(EXAMPLE, argv)


if __name__ == "__main__":  # python FILE runs it as python -m pinn_examples NAME does
    raise SystemExit(main())
