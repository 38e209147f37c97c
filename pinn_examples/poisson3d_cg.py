"""PINNacle Poisson3d-CG: -Lap(u) + k^2 u = f in the unit cube minus four balls, du/dn = 0 on every boundary.

``k^2 = 64`` for ``z < 1/2`` and 100 above (u is C^1 across z = 1/2, its second derivative jumps);
``f = 20 exp(sin pi x + sin 10 pi y + sin 5 pi z) (|x|^2 - 1) / (|x|^2 + 1) + 100 sin pi x sin 10 pi y
sin 5 pi z``; the balls are :data:`~pinn_examples.cutcell_reference.CG3_BALLS`.

The loss is the Ritz energy (the Deep Ritz method): u minimises ``E(u) = int 1/2 |grad u|^2 + 1/2 k^2 u^2
- f u`` over the domain, and a zero normal derivative is the natural boundary condition of that
minimum, so neither the cube's faces nor the four spheres need a loss term. Completing the square,
``2 E(u) = int |grad u|^2 + (k u - f / k)^2 - const``: the residuals are ``u_x, u_y, u_z`` and
``k u - f / k``, and their summed mean squares are the energy, up to a constant (the loss does not
fall to zero; the trainer's stall diagnostic is off). Only first derivatives are needed.

The mean over the points is the energy's quadrature (equal weights: the points are uniform in the
domain). They are the domain's Sobol points (the cube's, those in the balls dropped), not a grid: a
fixed grid is fooled, within a few hundred L-BFGS iterations, by a network that builds harmonics of its
features near the grid's sampling frequency (at the centres of n cells a side ``cos(2 pi n y)`` is
constant, with zero derivative; for n = 24, 48 pi is within 2 pi of the fifth harmonic of the 10 pi y
feature): on 24 cells a side the loss fell below the energy's minimum within 200 iterations while the
error grew from 4% to 0.6. Quasi-random points have no such alias. :func:`quadrature_check`
reports the energy on a second point set in metrics.json.

Network: float64; Fourier features of chosen frequencies (:data:`FREQUENCIES`: the source's
``10 pi`` in y and ``5 pi`` in z, with low ones for the smooth part) into a tanh MLP; L-BFGS.

The error is PINNacle's L2RE at 40,000 fixed cell centres of the cut-cell finite-volume reference,
h = 1/160 (:mod:`pinn_examples.cutcell_reference`, second order, its own error about 5e-4);
``field.png`` shows the plane z = 0.6, ``slices.png`` the planes y = 0.25 and y = 0.75 (across the jump
of k^2 at z = 1/2). PINNacle's best L2RE is 9.5e-2; target 3e-2.

References:
  Hao et al. (2024), "PINNacle: A Comprehensive Benchmark of Physics-Informed Neural Networks
  for Solving PDEs", NeurIPS Datasets and Benchmarks (arXiv:2306.08827), problem Poisson3d-CG.
  E & Yu (2018), "The Deep Ritz Method: a deep learning-based numerical algorithm for solving
  variational problems", Commun. Math. Stat. 6.
"""

import os

import numpy as np
import tensorflow as tf

from pinn_examples import cutcell_reference as cc
from pinn_examples.runner import Example, Settings
from pinn_examples.scattered import ScatteredExample, run

COORDS = ("x", "y", "z")
REFERENCE_CELLS = 160  # the finite-volume reference's cells per side (its own error about 5e-4)
TEST_POINTS, TEST_SEED = 40_000, 20_261_204
PICTURE = ("z", 0.6)  # field.png: the plane z = 0.6, through the two large balls' centres
SLICES = (("y", 0.25), ("y", 0.75))  # slices.png: x-z planes where sin 10 pi y = +-1, across z = 1/2
SAFE_POINT = (0.05, 0.05, 0.05)  # a point of the domain, stands in for the planes' points in the balls
# The Fourier features' frequencies (radians per unit length) along x, y and z: low ones for the smooth part and
# the source's 10 pi in y and 5 pi in z. Their harmonics (20 pi, ...) make the network fool the quadrature grid.
FREQUENCIES = {"x": (0.5 * np.pi, np.pi), "y": (0.5 * np.pi, np.pi, 10 * np.pi), "z": (0.5 * np.pi, np.pi, 5 * np.pi)}


def domain_and_parts():
    """The cube minus the balls, and the balls (operands for ``where=``)."""
    from hodiff import pinn

    cube = pinn.Box({name: (0.0, 1.0) for name in COORDS}, name="faces")
    balls = [pinn.Ball((cx, cy, cz), r, name="spheres") for cx, cy, cz, r in cc.CG3_BALLS]
    holes = balls[0] | balls[1] | balls[2] | balls[3]
    return cube - holes, holes


def network(domain, settings: Settings):
    """A tanh MLP (:func:`hodiff.pinn.mlp`) on the Fourier features of :data:`FREQUENCIES`: ``cos`` and ``sin``
    of ``w x_i`` (up to a phase) for each coordinate ``x_i`` and each of its frequencies ``w``."""
    from hodiff import pinn
    from hodiff.pinn.networks import FourierFeatures

    columns = [(i, w) for i, name in enumerate(COORDS) for w in FREQUENCIES[name]]
    model = pinn.mlp(
        domain,
        width=settings.width,
        depth=settings.depth,
        dtype=settings.dtype,
        seed=settings.seed,
        fourier_features=len(columns),
    )
    (features,) = [layer for layer in model.layers if isinstance(layer, FourierFeatures)]
    matrix = np.zeros((len(COORDS), len(columns)))
    for j, (i, w) in enumerate(columns):
        matrix[i, j] = w / (4 * np.pi)  # after the scaling to 2 x - 1: sin(2 pi B (2 x - 1)) = sin(w x - w / 2)
    features.matrix.assign(matrix)  # a fixed (non-trainable) weight, kept in the checkpoints
    return model


def k2(z):
    """``k^2``: 64 below z = 1/2, 100 above (tensors)."""
    return tf.where(z < 0.5, tf.constant(64.0, z.dtype), tf.constant(100.0, z.dtype))


def energy(d, x, p):
    """``u_x, u_y, u_z`` and ``k u - f / k``: their summed mean squares are twice the Ritz energy per unit volume,
    up to a constant."""
    k = tf.sqrt(k2(x["z"]))
    source = cc.cg3_source(x["x"], x["y"], x["z"], tf)
    return {"u_x": d["u_x"], "u_y": d["u_y"], "u_z": d["u_z"], "reaction": k * d["u"] - source / k}


def check(settings: Settings) -> None:
    """ValueError naming the flags that would change the energy's weights or points (the command line refuses them
    when it parses the flags: ``Example.check``)."""
    if settings.adaptive_weights or settings.loss_weighting != "none" or settings.resample_every:
        raise ValueError(
            "poisson3d_cg: the loss is the Ritz energy, whose terms' weights (all 1) and uniform points are part of "
            "the equation solved; leave out --adaptive-weights, --loss-weighting and --resample-every."
        )


def build(settings: Settings):
    from hodiff import pinn

    try:
        check(settings)
    except ValueError as error:
        raise SystemExit(str(error)) from None
    domain, _ = domain_and_parts()
    problem = pinn.Problem(domain, needs=("u", "u_x", "u_y", "u_z"), residual=energy)
    return problem, network(domain, settings)


def quadrature_check(trainer) -> dict:
    """The energy on a second set of as many points (the next seed's Sobol points) beside the energy on the
    training points: they agree to the quadrature's error unless the network has learnt structure between the
    training points, where they cannot see it. The energy here is ``loss(u) - loss(0)``, twice the energy per
    unit volume (the constant ``mean (f / k)^2``, whose quadrature differs between point sets, cancels). Also
    draws ``slices.png`` (:func:`draw_slices`) in the run's directory."""
    problem, data = trainer.problem, trainer.data
    zero = lambda x: 0.0 * x[:, :1]  # noqa: E731

    def energy(points):
        points = {"interior": tf.constant(points, data.dtype)}
        loss = lambda u: sum(float(value) for value in problem.loss_terms(u, points, {}).values())  # noqa: E731
        return loss(data.solution) - loss(zero)

    training = energy(data.interior.numpy())
    check = energy(problem.domain.sample_interior(data.interior_count, data.sampling, data.seed + 1))
    if trainer.run_log is not None:
        draw_slices(trainer, os.path.join(trainer.run_log.directory, "slices.png"))
    return {"energy": training, "energy_on_check_points": check, "quadrature_gap": check - training}


def reference_grid():
    """The reference (:func:`~pinn_examples.cutcell_reference.cached`): cell-centre axis, fluid fractions, u."""
    return cc.cached(REFERENCE_CELLS)


def inside(points: np.ndarray) -> np.ndarray:
    """``(N,)``: the points outside every ball (the cube is not checked)."""
    keep = np.ones(len(points), dtype=bool)
    for cx, cy, cz, r in cc.CG3_BALLS:
        keep &= np.sum((points - np.array([cx, cy, cz])) ** 2, axis=1) > r**2
    return keep


def test_set():
    """:data:`TEST_POINTS` fixed cell centres of the reference's grid that lie in the domain, and u there."""
    axis, _, u = reference_grid()
    grid = np.stack([g.ravel() for g in np.meshgrid(axis, axis, axis, indexing="ij")], axis=1)
    rows = np.random.default_rng(TEST_SEED).choice(np.flatnonzero(inside(grid)), TEST_POINTS, replace=False)
    return grid[rows], {"u": u.ravel()[rows]}


def plane(name: str, value: float) -> tuple[dict, np.ndarray, np.ndarray]:
    """The plane ``name = value`` through the reference's grid: its two axes, its ``(m^2, 3)`` points and the
    reference there ``(m, m)``, the mean of the two cell layers either side (NaN in the balls, where the points
    are moved to :data:`SAFE_POINT`, in the domain, so that predicting there warns of nothing)."""
    axis, _, u = reference_grid()
    n, which = len(axis), COORDS.index(name)
    layer = int(round(value * n))
    if not 0 < layer < n or abs(layer - value * n) > 1e-9:
        raise ValueError(f"plane: {name} = {value} is not an inner face of the {n} reference cells; give k / {n}.")
    values = 0.5 * (np.take(u, layer - 1, axis=which) + np.take(u, layer, axis=which))
    others = [c for c in COORDS if c != name]
    first, second = (g.ravel() for g in np.meshgrid(axis, axis, indexing="ij"))
    points = np.zeros((first.size, 3))
    points[:, COORDS.index(others[0])], points[:, COORDS.index(others[1])], points[:, which] = first, second, value
    fluid = inside(points)
    points[~fluid] = SAFE_POINT
    values = np.where(fluid.reshape(values.shape), values, np.nan)
    return {others[0]: axis, others[1]: axis}, points, values


def picture():
    axes, points, values = plane(*PICTURE)
    return axes, points, {"u": values}


def draw_slices(trainer, path: str) -> None:
    """``path``: prediction, reference and error on the planes of :data:`SLICES` (one row each)."""
    from hodiff.pinn import plotting

    predicted, wanted = {}, {}
    for name, value in SLICES:
        axes, points, values = plane(name, value)
        label = f"{name} = {value}"
        wanted[label] = values
        predicted[label] = np.where(np.isfinite(values), trainer.predict(points)[:, 0].reshape(values.shape), np.nan)
    plotting.plot_field(axes, predicted, wanted, path, "poisson3d_cg: x-z planes", vertical=list(axes)[1])


EXAMPLE = Example(
    name="poisson3d_cg",
    build=build,
    check=check,
    presets={
        "default": Settings(interior=32768, adam_steps=0, lbfgs_iterations=2000, width=32, depth=3, dtype="float64"),
        "fast": Settings(
            xla=False,
            interior=2048,
            adam_steps=0,
            lbfgs_iterations=20,
            width=16,
            depth=2,
            dtype="float64",
            checkpoint_every=100,
        ),
    },
    target={"default": 3e-2},
    extra_metrics=quadrature_check,
    diagnose=False,
    wall_seconds={"default": 335},  # on 2 CPU cores, as recorded in docs/benchmarks.md, PINNacle problems
)
SCATTERED = ScatteredExample(EXAMPLE, test_set, picture)


def main(argv=None) -> int:
    return run(SCATTERED, argv)


if __name__ == "__main__":  # python FILE runs it as python -m pinn_examples NAME does
    raise SystemExit(main())
