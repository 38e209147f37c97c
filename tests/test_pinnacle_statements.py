"""Checks of PINNacle's problem statements that the examples rely on or depart from (docs/pinnacle.md)."""

import numpy as np
import tensorflow as tf

from hodiff.operators import partials


def test_wave2d_ms_published_exact_solution_does_not_solve_its_equation():
    """PINNacle's Wave2d-MS pairs u_tt = u_xx + 2 u_yy with sin(pi x) sinh(pi y) cos(pi t) + sinh(3 pi x)
    sin(2 pi y) cos(pi t): each term leaves the residual -2 pi^2 times itself. With the same mode numbers,
    sin(pi x) sin(pi y) cos(sqrt(3) pi t) + sin(3 pi x) sin(2 pi y) cos(sqrt(17) pi t) solves it."""
    pi = np.pi
    points = tf.constant(np.random.default_rng(0).uniform(size=(40, 3)) * [1.0, 1.0, 3.0])

    def residual(u):
        d = partials(u, points, ("x", "y", "t"), ("tt", "xx", "yy"))
        return (d["tt"] - d["xx"] - 2.0 * d["yy"]).numpy()

    first = lambda p: tf.sin(pi * p[:, 0]) * tf.sinh(pi * p[:, 1]) * tf.cos(pi * p[:, 2])  # noqa: E731
    second = lambda p: tf.sinh(3 * pi * p[:, 0]) * tf.sin(2 * pi * p[:, 1]) * tf.cos(pi * p[:, 2])  # noqa: E731
    for term in (first, second):
        np.testing.assert_allclose(residual(term), -2 * pi**2 * term(points).numpy(), rtol=1e-9, atol=1e-9)
    consistent = lambda p: (  # noqa: E731
        tf.sin(pi * p[:, 0]) * tf.sin(pi * p[:, 1]) * tf.cos(np.sqrt(3.0) * pi * p[:, 2])
        + tf.sin(3 * pi * p[:, 0]) * tf.sin(2 * pi * p[:, 1]) * tf.cos(np.sqrt(17.0) * pi * p[:, 2])
    )
    np.testing.assert_allclose(residual(consistent), 0.0, atol=1e-9)
