"""PINNacle Heat2d-VC: u_t = div(a grad u) + f on [0, 1]^2 x [0, 5], a = 1 or 2 from a random field.

``f = 200 sin(pi x) sin(5 pi y) sin(pi t)``, ``u = 0`` on the boundary and at ``t = 0``; ``a`` is 2
where PINNacle's Gaussian random field is positive and 1 elsewhere (its table
``heat2d_vc_coef_256.npy``, :func:`~pinn_examples.heat2d_vc_reference.coefficient_table`).
PINNacle's published solution solves this divergence form; its PINN code writes
``a (u_xx + u_yy)``, which differs by about 21% (docs/pinnacle.md). The heat relaxes in about 1/250
of a time unit against a forcing of period 2, so ``u`` follows the forcing closely, with kinks
wherever ``a`` jumps. What it takes here (docs/pinnacle.md has what was tried):

- the table smoothed by a Gaussian of :attr:`HeatSettings.smoothing` table spacings and made a
  periodic cubic spline (:class:`hodiff.pinn.Tabulated`): ``a_s``, whose gradient the residual
  ``u_t - a_s (u_xx + u_yy) - grad a_s . grad u - f`` needs (the divergence form); a smooth network
  cannot draw the kinks that the table's jumps make, and the field's interfaces are too rough for a
  network that sees ``|g|`` (:class:`hodiff.pinn.LevelSetFeature`: ``g``'s spline has second
  derivatives of about 1,900, which swamp the residual);
- ``u = 16 x (1 - x) y (1 - y) t N``: the boundary and initial conditions hold exactly;
- float64, Adam then L-BFGS.

The error is PINNacle's L2RE over all test points: every fifth node of the table (52 x 52) at 26
times from 0 to 5, against cell-centred finite volumes on 510 x 510 cells, exact in time
(:mod:`pinn_examples.heat2d_vc_reference`); ``field.png`` shows ``t = 4.5``. PINNacle's best L2RE
is 2.1e-1; target 2e-2, not met: the default ends at 0.21 (docs/pinnacle.md).

References:
  Hao et al. (2024), "PINNacle: A Comprehensive Benchmark of Physics-Informed Neural Networks
  for Solving PDEs", NeurIPS Datasets and Benchmarks (arXiv:2306.08827), problem Heat2d-VC.
"""

import dataclasses
import functools

import numpy as np

from pinn_examples.heat2d_vc_reference import END, PICTURE_TIME, coefficient_table, heat2d_vc_reference
from pinn_examples.runner import Example, Settings, setting
from pinn_examples.scattered import ScatteredExample, run

RESIDUAL_SCALE = 100.0  # the source's size: the residual divided by it is of order 1


@dataclasses.dataclass
class HeatSettings(Settings):
    smoothing: float = setting(2.0, "the coefficient table smoothed by a Gaussian of this many cells", positive=True)
    fourier_features: int = setting(0, "random Fourier features of the scaled inputs; 0: none")
    fourier_scale: float = setting(1.0, "standard deviation of the Fourier frequencies", positive=True)


@functools.lru_cache(maxsize=2)
def smoothed_coefficient(cells: float):
    """``a`` smoothed by a Gaussian of ``cells`` table spacings, as a periodic cubic spline."""
    import scipy.ndimage

    from hodiff import pinn

    table = coefficient_table().T  # [ix, iy]
    smooth = scipy.ndimage.gaussian_filter(table, cells, mode="wrap")
    return pinn.Tabulated(smooth, (0.0, 0.0), (1.0, 1.0), ("x", "y"), periodic=True)


def smoothed_residual(cells: float):
    """``u_t - div(a_s grad u) - f``, ``div(a_s grad u) = a_s (u_xx + u_yy) + grad a_s . grad u``, ``a_s`` smoothed."""
    import tensorflow as tf

    table = smoothed_coefficient(cells)

    def residual(d, x, p):
        columns = [x["x"], x["y"]]
        with tf.GradientTape() as tape:
            tape.watch(columns)
            a = table({"x": columns[0], "y": columns[1]})
        a_x, a_y = tape.gradient(a, columns)
        f = 200.0 * tf.sin(np.pi * x["x"]) * tf.sin(5.0 * np.pi * x["y"]) * tf.sin(np.pi * x["t"])
        flux = a * (d["u_xx"] + d["u_yy"]) + a_x * d["u_x"] + a_y * d["u_y"]
        return (d["u_t"] - flux - f) / RESIDUAL_SCALE

    return residual


def output(x, outputs):
    """``u = 16 x (1 - x) y (1 - y) t N``: zero on the boundary and at ``t = 0``."""
    return (16.0 * x["x"] * (1.0 - x["x"]) * x["y"] * (1.0 - x["y"]) * x["t"])[:, None] * outputs


def build(settings: HeatSettings):
    from hodiff import pinn

    domain = pinn.Rectangle(("x", "y"), (0.0, 0.0), (1.0, 1.0)) * pinn.TimeDomain("t", 0.0, END)
    problem = pinn.Problem(
        domain,
        needs=("u_t", "u_x", "u_y", "u_xx", "u_yy"),
        residual=smoothed_residual(settings.smoothing),
        output_transform=output,
    )
    model = pinn.mlp(
        domain, width=settings.width, depth=settings.depth, dtype=settings.dtype, seed=settings.seed,
        fourier_features=settings.fourier_features, fourier_scale=settings.fourier_scale,
    )  # fmt: skip
    return problem, model


def test_set():
    reference = heat2d_vc_reference()
    return reference["points"], {"u": reference["u"]}


def picture():
    reference = heat2d_vc_reference()
    x, y = reference["x"], reference["y"]
    gx, gy = (g.ravel() for g in np.meshgrid(x, y, indexing="ij"))
    points = np.column_stack([gx, gy, np.full_like(gx, PICTURE_TIME)])
    return {"x": x, "y": y}, points, {"u": reference["picture"]}


EXAMPLE = Example(
    name="heat2d_vc",
    build=build,
    presets={
        "default": HeatSettings(
            interior=16384,
            adam_steps=3000,
            lbfgs_iterations=1000,
            width=32,
            depth=4,
            dtype="float64",
        ),
        "fast": HeatSettings(
            xla=False,
            interior=256,
            adam_steps=100,
            lbfgs_iterations=20,
            width=16,
            depth=2,
            dtype="float64",
            checkpoint_every=100,
        ),
    },  # fmt: skip
    target={"default": 2e-2},
    wall_seconds={"default": 1046},  # on 2 CPU cores, as recorded in docs/pinnacle.md
)
SCATTERED = ScatteredExample(EXAMPLE, test_set, picture)


def main(argv=None) -> int:
    return run(SCATTERED, argv)


if __name__ == "__main__":  # python FILE runs it as python -m pinn_examples NAME does
    raise SystemExit(main())
