"""lid_driven_cavity's corner lift: the corners' Stokes flow solves Stokes, and the lifted fields meet the walls."""

import numpy as np
import pytest
import tensorflow as tf

from pinn_examples import lid_driven_cavity as cavity


def _partials(function, points, run=lambda fn, *args: fn(*args)):
    """``function(x, y) -> (u, v, p)`` at ``points`` with its first and second partials, by nested tapes, called
    through ``run`` (the conftest fixture: eager, graph or XLA)."""

    def partials(x, y):
        with tf.GradientTape(persistent=True) as outer:
            outer.watch([x, y])
            with tf.GradientTape(persistent=True) as inner:
                inner.watch([x, y])
                values = function(x, y)
            first = [inner.gradient(f, [x, y]) for f in values]
        second = [[outer.gradient(d, z) for d, z in zip(pair, (x, y))] for pair in first]
        return values, first, second

    values, first, second = run(partials, tf.constant(points[:, 0]), tf.constant(points[:, 1]))
    return tf.nest.map_structure(lambda tensor: tensor.numpy(), (values, first, second))


@pytest.mark.parametrize("slope", [4.0, -4.0, 1.5])
def test_corner_flow_solves_stokes_and_meets_both_walls(slope, run):
    rng = np.random.default_rng(0)
    points = rng.uniform(1e-3, 0.5, (200, 2))  # core=0 below: ln r itself
    (u, v, p), ((u_x, u_y), (v_x, v_y), (p_x, p_y)), ((u_xx, u_yy), (v_xx, v_yy), _) = _partials(
        lambda xi, eta: cavity.corner_flow(xi, eta, slope, core=0.0), points, run
    )
    scale = np.abs(p_x).max()  # ~ 2 nu |slope| / r at the point nearest the corner
    assert np.abs(u_x + v_y).max() < 1e-12 * abs(slope)
    assert np.abs(cavity.NU * (u_xx + u_yy) - p_x).max() < 1e-9 * scale
    assert np.abs(cavity.NU * (v_xx + v_yy) - p_y).max() < 1e-9 * scale
    np.testing.assert_allclose(p, cavity.NU * slope * np.log(np.sum(points**2, axis=1)), rtol=1e-9)
    along = np.linspace(1e-3, 0.5, 50)
    for xi, eta, wall_u in ((along, 0 * along, slope * along), (0 * along, along, 0 * along)):
        u_xi, u_eta, _ = (f.numpy() for f in cavity.corner_flow(tf.constant(xi), tf.constant(eta), slope))
        np.testing.assert_allclose(u_xi, wall_u, atol=1e-14)
        np.testing.assert_allclose(u_eta, 0.0, atol=1e-14)


def _transformed(outputs):
    """``walls`` with fixed network outputs ``outputs(x, y) -> (N_u, N_v, N_p)``, as ``(x, y) -> (u, v, p)``."""

    def fields(x, y):
        network = tf.stack(outputs(x, y), axis=1)
        values = cavity.walls({"x": x, "y": y}, network)
        return values[:, 0], values[:, 1], values[:, 2]

    return fields


def test_lifted_fields_meet_every_wall_and_continuity_at_the_top_corners():
    fields = _transformed(lambda x, y: (tf.sin(3 * x + y), tf.cos(x * y), x - y))
    along = np.linspace(0.0, 1.0, 41)
    ones, zeros = np.ones_like(along), np.zeros_like(along)
    lid = np.stack([along, ones], axis=1)
    u, v, _ = (f.numpy() for f in fields(tf.constant(lid[:, 0]), tf.constant(lid[:, 1])))
    np.testing.assert_allclose(u, 4 * along * (1 - along), atol=1e-14)
    np.testing.assert_allclose(v, 0.0, atol=1e-14)
    for x, y in ((zeros, along), (ones, along), (along, zeros)):
        u, v, _ = (f.numpy() for f in fields(tf.constant(x), tf.constant(y)))
        np.testing.assert_allclose(u, 0.0, atol=1e-14)
        np.testing.assert_allclose(v, 0.0, atol=1e-14)
    # near each top corner the lift carries the lid's u_x = +-4 against the wall's v_y = 0: continuity's
    # defect vanishes with the distance r (without the lift it is 4 at the corner, whatever the network)
    for r in (1e-2, 1e-3, 1e-4):
        points = np.array([[r, 1 - r], [1 - r, 1 - r], [r / 3, 1 - r], [1 - r / 3, 1 - r]])
        _, ((u_x, _), (_, v_y), _), _ = _partials(fields, points)
        assert np.abs(u_x + v_y).max() < 100 * r


def test_corner_pressure_is_the_regularised_logarithm():
    """p of the lift at the top corners: 2 nu (+-4) ln(core); the lift's u, v vanish there."""
    u, v, p = (f.numpy() for f in cavity.corner_lift(tf.constant([0.0, 1.0]), tf.constant([1.0, 1.0])))
    np.testing.assert_allclose(u, 0.0, atol=1e-15)
    np.testing.assert_allclose(v, 0.0, atol=1e-15)
    np.testing.assert_allclose(p, [8 * cavity.NU * np.log(cavity.CORE), -8 * cavity.NU * np.log(cavity.CORE)])
