"""pinn.StreamFunction: the velocity is the curl of envelope * network (closed form), divergence-free, zero at the
walls to the orders asked, in eager, graph and XLA; it clones, saves and restores; bad input is refused."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from hodiff import pinn

DOMAIN = pinn.Rectangle(("x", "y"), (0.0, 0.0), (2.0, 1.0))
MODES = {
    "eager": lambda f: f,
    "graph": lambda f: tf.function(f),
    "xla": lambda f: tf.function(f, jit_compile=True),
}


def linear_potential(dimension=2):
    """``N0 = 0.3 + 0.5 x - 0.7 y``, ``N1 = 2 + x + y``: a network with a closed-form stream function."""
    network = keras.Sequential([keras.Input((dimension,), dtype="float64"), keras.layers.Dense(2, dtype="float64")])
    kernel = np.zeros((dimension, 2))
    kernel[:2] = [[0.5, 1.0], [-0.7, 1.0]]
    network.layers[0].set_weights([kernel, np.array([0.3, 2.0])])
    return network


@pytest.mark.parametrize("mode", MODES)
def test_the_velocity_is_the_curl_of_the_enveloped_potential(mode):
    """walls x: (2, 0), y: (1, 2): psi = (x/2)^2 * y (1 - y)^2 / (4/27) * N0; u = psi_y, v = -psi_x, p = N1."""
    flow = pinn.StreamFunction(linear_potential(), DOMAIN, walls={"x": (2, 0), "y": (1, 2)})
    rng = np.random.default_rng(0)
    x, y = rng.uniform(0, 2, 50), rng.uniform(0, 1, 50)
    n0, n1 = 0.3 + 0.5 * x - 0.7 * y, 2.0 + x + y
    ex, ey = (x / 2) ** 2, y * (1 - y) ** 2 / (4 / 27)
    ex_x, ey_y = x / 2, ((1 - y) ** 2 - 2 * y * (1 - y)) / (4 / 27)
    u = ex * ey_y * n0 + ex * ey * (-0.7)
    v = -(ex_x * ey * n0 + ex * ey * 0.5)
    got = MODES[mode](flow)(tf.constant(np.column_stack([x, y]))).numpy()
    np.testing.assert_allclose(got, np.column_stack([u, v, n1]), rtol=1e-12, atol=1e-13)


@pytest.mark.parametrize("mode", MODES)
def test_a_thickness_makes_the_factors_rise_within_it(mode):
    """thickness x: 0.1, y: 0.3: psi = (1 - exp(-x/0.1))^2 (1 - exp(-y/0.3)) (1 - exp(-(1 - y)/0.3))^2 N0."""
    flow = pinn.StreamFunction(
        linear_potential(), DOMAIN, walls={"x": (2, 0), "y": (1, 2)}, thickness={"x": 0.1, "y": 0.3}
    )
    rng = np.random.default_rng(4)
    x, y = rng.uniform(0, 2, 50), rng.uniform(0, 1, 50)
    n0 = 0.3 + 0.5 * x - 0.7 * y
    a, b, c = np.exp(-x / 0.1), np.exp(-y / 0.3), np.exp(-(1 - y) / 0.3)
    ex, ey = (1 - a) ** 2, (1 - b) * (1 - c) ** 2
    ex_x, ey_y = 2 * (1 - a) * a / 0.1, b / 0.3 * (1 - c) ** 2 - (1 - b) * 2 * (1 - c) * c / 0.3
    u = ex * ey_y * n0 + ex * ey * (-0.7)
    v = -(ex_x * ey * n0 + ex * ey * 0.5)
    got = MODES[mode](flow)(tf.constant(np.column_stack([x, y]))).numpy()
    np.testing.assert_allclose(got, np.column_stack([u, v, 2.0 + x + y]), rtol=1e-12, atol=1e-13)
    # three thicknesses from the inlet the x factor is 0.90, where (x/2)^2 would be 0.0225
    inlet = flow._envelope(tf.constant([[0.3, 0.5], [2.0, 0.5]], tf.float64)).numpy()[:, 0]
    np.testing.assert_allclose(inlet[0] / inlet[1], (1 - np.exp(-3.0)) ** 2 / (1 - np.exp(-20.0)) ** 2, rtol=1e-12)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("thickness", [None, {"x": 0.1, "y": 0.2}])
def test_divergence_free_and_quiet_at_the_walls(mode, thickness):
    """u_x + v_y = 0 to rounding at every point of (x, y, t) for an MLP; order 2: u = v = 0 at the wall, order 1:
    the normal velocity only, order 0: nothing; with polynomial and exponential wall factors alike."""
    domain = DOMAIN * pinn.TimeDomain("t", 0.0, 1.0)
    potential = pinn.mlp(domain, outputs=1, width=16, depth=2, seed=3, architecture="modified")
    flow = pinn.StreamFunction(potential, domain, ("x", "y"), walls={"x": (2, 0), "y": (1, 2)}, thickness=thickness)

    def divergence(points):
        with tf.GradientTape(persistent=True) as tape:
            tape.watch(points)
            velocity = flow(points)
            u, v = velocity[:, 0], velocity[:, 1]
        return tape.gradient(u, points)[:, 0] + tape.gradient(v, points)[:, 1], velocity

    rng = np.random.default_rng(1)
    points = rng.uniform(size=(40, 3)) * np.array([2.0, 1.0, 1.0])
    div, velocity = MODES[mode](divergence)(tf.constant(points))
    assert velocity.shape == (40, 2)
    assert np.abs(div.numpy()).max() < 1e-12 * np.abs(velocity.numpy()).max()
    walls = {"inlet x = 0": (0, 0.0), "bottom y = 0": (1, 0.0), "top y = 1": (1, 1.0), "outlet x = 2": (0, 2.0)}
    at = {}
    for name, (column, value) in walls.items():
        on = points.copy()
        on[:, column] = value
        at[name] = flow(tf.constant(on)).numpy()
    np.testing.assert_allclose(at["inlet x = 0"], 0.0, atol=1e-14)  # order 2: both components
    np.testing.assert_allclose(at["top y = 1"], 0.0, atol=1e-14)  # order 2
    np.testing.assert_allclose(at["bottom y = 0"][:, 1], 0.0, atol=1e-14)  # order 1: v, the normal component
    assert np.abs(at["bottom y = 0"][:, 0]).min() > 0  # but not u (slip)
    assert np.abs(at["outlet x = 2"]).min() > 0  # order 0: free


@pytest.mark.parametrize("thickness", [None, {"x": 0.05}])
def test_third_partials_are_finite_on_the_walls(thickness):
    """A PDE's second partials of the velocity are third partials of psi, on wall points too (where a power's
    derivatives would be 0 * inf): finite, under XLA."""
    flow = pinn.StreamFunction(linear_potential(), DOMAIN, walls={"x": (2, 0), "y": (1, 2)}, thickness=thickness)

    @tf.function(jit_compile=True)
    def u_xxx_and_v_yyy(points):
        with tf.GradientTape(persistent=True) as third:
            third.watch(points)
            with tf.GradientTape(persistent=True) as second:
                second.watch(points)
                with tf.GradientTape(persistent=True) as first:
                    first.watch(points)
                    u, v = tf.unstack(flow(points)[:, :2], axis=1)
                u_x, v_y = first.gradient(u, points)[:, 0], first.gradient(v, points)[:, 1]
            u_xx, v_yy = second.gradient(u_x, points)[:, 0], second.gradient(v_y, points)[:, 1]
        return third.gradient(u_xx, points), third.gradient(v_yy, points)

    corners = tf.constant([[0.0, 0.0], [2.0, 1.0], [0.0, 1.0], [2.0, 0.0], [1.0, 0.0], [0.0, 0.5]], tf.float64)
    for partials in u_xxx_and_v_yyy(corners):
        assert np.all(np.isfinite(partials.numpy()))


def test_clones_saves_and_restores(tmp_path):
    """A frozen copy (time-marching), a .keras file and a checkpoint give the same outputs."""
    walls, thickness = {"y": (2, 2)}, {"y": 0.1}
    flow = pinn.StreamFunction(pinn.mlp(DOMAIN, outputs=2, width=8, depth=2), DOMAIN, walls=walls, thickness=thickness)
    assert flow.built and len(flow.weights) == len(flow.potential.weights)  # before a call: a Trainer takes it
    points = tf.constant(np.random.default_rng(2).uniform(size=(9, 2)))
    expected = flow(points).numpy()
    frozen = pinn.windows.freeze(flow)
    assert isinstance(frozen, pinn.StreamFunction) and not frozen.trainable
    np.testing.assert_array_equal(frozen(points).numpy(), expected)
    flow.save(tmp_path / "flow.keras")
    np.testing.assert_array_equal(keras.saving.load_model(tmp_path / "flow.keras")(points).numpy(), expected)
    prefix = tf.train.Checkpoint(model=flow).save(str(tmp_path / "ckpt"))
    other = pinn.StreamFunction(
        pinn.mlp(DOMAIN, outputs=2, width=8, depth=2, seed=5), DOMAIN, walls=walls, thickness=thickness
    )
    tf.train.Checkpoint(model=other).restore(prefix).assert_existing_objects_matched()
    np.testing.assert_array_equal(other(points).numpy(), expected)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"potential": "net"}, "potential must be a Keras network"),
        ({"domain": None}, "give the problem's domain"),
        ({"velocity": ("x", "z")}, "velocity=.* must name two different coordinates"),
        ({"velocity": ("x", "x")}, "two different coordinates"),
        ({"walls": {"t": (1, 1)}}, "walls has 't'"),
        ({"walls": {"y": (3, 0)}}, r"walls\['y'\]=\(3, 0\) must be"),
        ({"walls": {"y": (2,)}}, "order at the lower bound, order at the upper bound"),
        ({"thickness": 0.1}, "thickness must be a dict"),
        ({"thickness": {"x": 0.1}}, "thickness has 'x', which has no walls"),
        ({"thickness": {"y": 0.0}}, r"thickness\['y'\]=0.0 must be a positive length"),
        ({"thickness": {"y": -1}}, "must be a positive length"),
        ({"thickness": {"y": True}}, "must be a positive length"),
        ({"thickness": {"y": float("inf")}}, "must be a positive length"),
    ],
)
def test_bad_input_is_refused(kwargs, message):
    arguments = {"potential": linear_potential(), "domain": DOMAIN, "walls": {"y": (2, 2)}, **kwargs}
    with pytest.raises((TypeError, ValueError), match=message):
        pinn.StreamFunction(**arguments)
