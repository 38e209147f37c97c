"""End-to-end derivative demo: the Laplacian of a Keras MLP, three ways, checked against scipy.

Builds a float64 tanh MLP u: R^d -> R, samples points, computes the Laplacian with hodiff's
nested tapes, forward (Taylor-mode) propagation and the Hutchinson estimator, all compiled
with XLA, and compares each with the trace of scipy.differentiate.hessian at every point.
Exits non-zero if an exact method disagrees with scipy.
"""

import argparse
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras
import numpy as np
import tensorflow as tf

from pinn_examples.runner import SEED_MAX, number


def build_mlp(d: int, width: int, depth: int, seed: int) -> "keras.Model":
    keras.utils.set_random_seed(seed)
    layers = [keras.Input((d,), dtype="float64")]
    layers += [keras.layers.Dense(width, activation="tanh", dtype="float64") for _ in range(depth)]
    return keras.Sequential(layers + [keras.layers.Dense(1, dtype="float64")])


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m pinn_examples laplacian_check", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--dim", type=number(int, positive=True), default=3, help="input dimension d")
    parser.add_argument("--points", type=number(int, positive=True), default=8, help="number of points")
    parser.add_argument("--probes", type=number(int, positive=True), default=256, help="Hutchinson probes per point")
    parser.add_argument("--seed", type=number(int, maximum=SEED_MAX), default=0)
    args = parser.parse_args(argv)
    import hodiff  # imported after the flags are read: --help does not import TensorFlow
    from hodiff.checks import reference_laplacian

    model = build_mlp(args.dim, width=32, depth=3, seed=args.seed)
    x = tf.constant(np.random.default_rng(args.seed).uniform(-1, 1, (args.points, args.dim)))
    compiled = lambda fn: tf.function(fn, jit_compile=True)
    nested = compiled(hodiff.laplacian(model, method="nested"))(x).numpy()[:, 0]
    forward = compiled(hodiff.laplacian(model, method="forward"))(x).numpy()[:, 0]
    by_probes = hodiff.operators.Laplacian().estimate(model, "hutchinson", num_samples=args.probes, seed=args.seed)
    estimate = compiled(by_probes)(x)
    hutchinson, stderr = estimate.value.numpy()[:, 0], estimate.stderr.numpy()[:, 0]
    reference, reference_error = reference_laplacian(model, x)

    print(f"Laplacian of a {args.dim}-32-32-32-1 tanh MLP (float64, XLA) vs scipy.differentiate.hessian trace\n")
    print(f"{'point':>5} {'scipy':>14} {'nested':>14} {'forward':>14} {'hutchinson':>22}")
    for n in range(args.points):
        print(
            f"{n:>5} {reference[n]:>14.8f} {nested[n]:>14.8f} {forward[n]:>14.8f} "
            f"{hutchinson[n]:>12.5f} ± {stderr[n]:.5f}"
        )
    errors = {
        "nested": np.max(np.abs(nested - reference)),
        "forward": np.max(np.abs(forward - reference)),
        "hutchinson": np.max(np.abs(hutchinson - reference)),
    }
    print(
        f"\nmax |error| vs scipy: nested {errors['nested']:.2e}, forward {errors['forward']:.2e}, "
        f"hutchinson {errors['hutchinson']:.2e} (mean stderr {np.mean(stderr):.2e}); "
        f"scipy's own error estimate {np.max(reference_error):.2e}"
    )
    scale = max(1.0, np.max(np.abs(reference)))
    ok = errors["nested"] < 1e-6 * scale and errors["forward"] < 1e-6 * scale
    print("OK: exact methods agree with scipy" if ok else "FAILED: an exact method disagrees with scipy")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
