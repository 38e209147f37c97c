"""DeepXDE with PINNacle's own configuration on three PINNacle problems, scored as the hodiff examples are.

``python -m benchmarks.pinnacle_deepxde NAME --seconds S --output FILE.json`` trains DeepXDE
(TensorFlow backend) the way PINNacle trains its vanilla PINN: a 5 x 100 tanh network, Glorot
normal initialisation, Adam with learning rate 1e-3, full batch, 8192 domain and 2048 boundary
points, 20,000 iterations, or fewer when ``--seconds`` (the wall time of hodiff's run beside it)
runs out first. Each problem is PINNacle's formulation: Dirichlet conditions as loss terms,
``p = 0`` at ns2d_cg's outlet, the noisy observations of poisson_inverse as a data term. The
error is the L2RE against the same reference and on the same test grid as the hodiff example
(:func:`pinn_examples.runner.field_errors`). ``python -m benchmarks pinnacle --deepxde`` runs it
beside the examples (:mod:`benchmarks.pinnacle`).

References:
  Lu, Meng, Mao & Karniadakis (2021), "DeepXDE: A deep learning library for solving differential
  equations", SIAM Review 63(1).
  Hao et al. (2024), "PINNacle: A Comprehensive Benchmark of Physics-Informed Neural Networks
  for Solving PDEs", NeurIPS Datasets and Benchmarks (arXiv:2306.08827), its trainer settings.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

os.environ.setdefault("DDE_BACKEND", "tensorflow")

ITERATIONS, LEARNING_RATE, DOMAIN_POINTS, BOUNDARY_POINTS = 20_000, 1e-3, 8192, 2048
LAYERS, WIDTH = 5, 100
PROBLEMS = ("poisson2d_cg", "ns2d_cg", "poisson_inverse")
CONFIGURATION = (
    f"{LAYERS} x {WIDTH} tanh, Glorot normal, Adam {LEARNING_RATE:g}, full batch, {DOMAIN_POINTS} domain / "
    f"{BOUNDARY_POINTS} boundary points, {ITERATIONS:,} iterations or hodiff's wall time, whichever ends first"
)


def poisson2d_cg(dde, tf):
    """``-(u_xx + u_yy) + 64 u = f``, ``u = 0.2`` on the square, ``1`` on the circles; the example's grid."""
    from pinn_examples import poisson2d_cg as example
    from pinn_examples.fd_references import CG_CIRCLES, CG_DISKS, CG_EDGES, CG_K2, cg_source

    geometry = dde.geometry.Rectangle([-1.0, -1.0], [1.0, 1.0])
    for cx, cy, radius in CG_DISKS:
        geometry = geometry - dde.geometry.Disk([cx, cy], radius)

    def pde(x, u):
        laplacian = dde.grad.hessian(u, x, i=0, j=0) + dde.grad.hessian(u, x, i=1, j=1)
        return -laplacian + CG_K2 * u - cg_source(x[:, 0:1], x[:, 1:2], tf.sin)

    on_square = lambda x, on: on and np.isclose(np.max(np.abs(x)), 1.0)
    on_circle = lambda x, on: on and not np.isclose(np.max(np.abs(x)), 1.0)
    conditions = [
        dde.icbc.DirichletBC(geometry, lambda x: np.full((len(x), 1), CG_EDGES), on_square),
        dde.icbc.DirichletBC(geometry, lambda x: np.full((len(x), 1), CG_CIRCLES), on_circle),
    ]
    axes, u = example.reference()
    return dde.data.PDE(geometry, pde, conditions, DOMAIN_POINTS, BOUNDARY_POINTS), 2, 1, axes, {"u": u}


def ns2d_cg(dde, tf):
    """Steady Navier-Stokes in the widening channel, PINNacle's conditions (``p = 0`` at the outlet)."""
    from pinn_examples import ns2d_cg as example
    from pinn_examples.cavity_reference import NU

    geometry = dde.geometry.Polygon([list(vertex) for vertex in example.VERTICES])

    def pde(x, out):
        u, v = out[:, 0:1], out[:, 1:2]
        d = lambda i, j: dde.grad.jacobian(out, x, i=i, j=j)
        dd = lambda c, j: dde.grad.hessian(out, x, component=c, i=j, j=j)
        return [
            u * d(0, 0) + v * d(0, 1) + d(2, 0) - NU * (dd(0, 0) + dd(0, 1)),
            u * d(1, 0) + v * d(1, 1) + d(2, 1) - NU * (dd(1, 0) + dd(1, 1)),
            d(0, 0) + d(1, 1),
        ]

    inlet = lambda x, on: on and np.isclose(x[0], 0.0)
    outlet = lambda x, on: on and np.isclose(x[0], 4.0)
    wall = lambda x, on: on and not (np.isclose(x[0], 0.0) or np.isclose(x[0], 4.0))
    zero = lambda x: np.zeros((len(x), 1))
    conditions = [
        dde.icbc.DirichletBC(geometry, lambda x: 4.0 * x[:, 1:2] * (1.0 - x[:, 1:2]), inlet, component=0),
        dde.icbc.DirichletBC(geometry, zero, inlet, component=1),
        dde.icbc.DirichletBC(geometry, zero, wall, component=0),
        dde.icbc.DirichletBC(geometry, zero, wall, component=1),
        dde.icbc.DirichletBC(geometry, zero, outlet, component=2),
    ]
    data = dde.data.PDE(geometry, pde, conditions, DOMAIN_POINTS, BOUNDARY_POINTS)
    # DeepXDE's Polygon samples its boundary in float64; Keras casts the network's input to float32, which
    # would leave the derivatives with respect to the points in float64 and the residual mixing the two.
    for name in ("train_x", "train_x_all", "train_x_bc", "test_x"):
        setattr(data, name, getattr(data, name).astype(np.float32))
    axes, fields = example.reference()
    return data, 2, 3, axes, fields


def poisson_inverse(dde, tf):
    """``div(a grad u) + f = 0`` from the example's 2,500 noisy samples of ``u``, ``a`` known on the boundary."""
    from pinn_examples import poisson_inverse as example

    geometry = dde.geometry.Rectangle([0.0, 0.0], [1.0, 1.0])

    def pde(x, out):
        a = out[:, 1:2]
        u_x, u_y = dde.grad.jacobian(out, x, i=0, j=0), dde.grad.jacobian(out, x, i=0, j=1)
        a_x, a_y = dde.grad.jacobian(out, x, i=1, j=0), dde.grad.jacobian(out, x, i=1, j=1)
        laplacian = dde.grad.hessian(out, x, component=0, i=0, j=0) + dde.grad.hessian(out, x, component=0, i=1, j=1)
        return a * laplacian + a_x * u_x + a_y * u_y + example.source(x[:, 0:1], x[:, 1:2])

    points, values = example.observations()
    a_exact = lambda x: example.exact(x[:, 0:1], x[:, 1:2], ("a",))["a"]
    conditions = [
        dde.icbc.PointSetBC(points, values[:, None], component=0),
        dde.icbc.DirichletBC(geometry, a_exact, lambda x, on: on, component=1),
    ]
    axes, fields = example.reference()
    data = dde.data.PDE(geometry, pde, conditions, DOMAIN_POINTS, BOUNDARY_POINTS, anchors=points)
    return data, 2, 2, axes, fields


def stop_after(dde, seconds: float):
    """A DeepXDE callback that stops the training once ``seconds`` have passed; it counts the iterations."""

    class StopAfter(dde.callbacks.Callback):
        def __init__(self):
            super().__init__()
            self.started, self.iterations = time.perf_counter(), 0

        def on_epoch_end(self):
            self.iterations += 1
            if time.perf_counter() - self.started > seconds:
                self.model.stop_training = True

    return StopAfter()


def run(name: str, seconds: float, iterations: int = ITERATIONS, seed: int = 0) -> dict:
    """Trains DeepXDE on ``name`` for ``iterations`` Adam steps or ``seconds``; the errors and the time taken.

    Returns:
      ``{"iterations", "wall_seconds" (training), "relative_l2_error", "relative_l2_error_<field>", ...}``.
    """
    import deepxde as dde
    import tensorflow as tf

    from pinn_examples.runner import field_errors, grid_points

    dde.config.set_random_seed(seed)
    build = {"poisson2d_cg": poisson2d_cg, "ns2d_cg": ns2d_cg, "poisson_inverse": poisson_inverse}[name]
    data, inputs, outputs, axes, reference = build(dde, tf)
    network = dde.nn.FNN([inputs] + [WIDTH] * LAYERS + [outputs], "tanh", "Glorot normal")
    model = dde.Model(data, network)
    model.compile("adam", lr=LEARNING_RATE)
    clock = stop_after(dde, seconds)
    model.train(iterations=iterations, callbacks=[clock], display_every=max(iterations // 10, 1))
    wall = time.perf_counter() - clock.started
    predicted = model.predict(grid_points(axes, tuple(axes)))
    shape = tuple(len(axis) for axis in axes.values())
    prediction = {field: predicted[:, i].reshape(shape) for i, field in enumerate(reference)}
    errors = field_errors(prediction, reference)
    return {"iterations": clock.iterations, "wall_seconds": round(wall, 1), **errors}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.pinnacle_deepxde", description=__doc__.splitlines()[0])
    parser.add_argument("name", choices=PROBLEMS)
    parser.add_argument("--seconds", type=float, required=True, help="wall-time budget of the training")
    parser.add_argument("--iterations", type=int, default=ITERATIONS, help="Adam iterations at most")
    parser.add_argument("--output", type=Path, required=True, help="JSON file for the result")
    args = parser.parse_args(argv)
    result = run(args.name, args.seconds, args.iterations)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    partial = args.output.with_suffix(".partial")
    partial.write_text(json.dumps(result, indent=1))
    partial.replace(args.output)  # atomic
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
