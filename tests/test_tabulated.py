"""hodiff.pinn.tabulated: the spline of a table against scipy's, in eager, graph and XLA; its zero set; the
cusp-capturing network (values continuous, derivatives jumping across g = 0) and the Interface condition."""

import numpy as np
import pytest
import scipy.ndimage
import tensorflow as tf

from hodiff import pinn
from hodiff.pinn.tabulated import LevelSetFeature


def columns(points):
    return {"x": tf.constant(points[:, 0]), "y": tf.constant(points[:, 1])}


@pytest.fixture(scope="module")
def field():
    """A rough periodic table (white noise smoothed a little), as a drawn coefficient field is."""
    values = scipy.ndimage.gaussian_filter(np.random.default_rng(3).normal(size=(24, 20)), 1.5, mode="wrap")
    return pinn.Tabulated(values / values.std(), (0.0, -1.0), (1.0, 1.0), ("x", "y"), periodic=True)


@pytest.mark.parametrize("periodic", [True, False])
def test_the_spline_interpolates_the_table_and_is_scipys_cubic_spline(periodic):
    values = np.random.default_rng(0).normal(size=(9, 7))
    table = pinn.Tabulated(values, (-1.0, 0.0), (1.0, 3.0), ("x", "y"), periodic=periodic)
    nodes = np.stack(np.meshgrid(np.linspace(-1, 1, 9), np.linspace(0, 3, 7), indexing="ij"), -1).reshape(-1, 2)
    np.testing.assert_allclose(table(columns(nodes)).numpy(), values.ravel(), atol=1e-12)
    points = np.random.default_rng(1).uniform([-1.3, -0.4], [1.3, 3.4], size=(200, 2))  # also past the ends
    mode = "grid-wrap" if periodic else "mirror"
    expected = scipy.ndimage.map_coordinates(values, ((points - [-1.0, 0.0]) / [0.25, 0.5]).T, order=3, mode=mode)
    np.testing.assert_allclose(table(columns(points)).numpy(), expected, atol=1e-12)
    np.testing.assert_allclose(table.numpy(points), expected, atol=1e-12)


def test_a_smooth_function_is_reproduced_to_fourth_order_with_its_derivatives():
    errors = []
    for n in (17, 33):
        x = np.linspace(0.0, 1.0, n)
        table = pinn.Tabulated(np.sin(3 * x)[:, None] * np.cos(2 * x)[None, :], (0, 0), (1, 1), ("x", "y"))
        points = tf.constant(np.random.default_rng(2).uniform(0.2, 0.8, size=(100, 2)))
        with tf.GradientTape() as outer:
            outer.watch(points)
            with tf.GradientTape() as inner:
                inner.watch(points)
                value = table({"x": points[:, 0], "y": points[:, 1]})
            u_x = inner.gradient(value, points)[:, 0]
        u_xx = outer.gradient(u_x, points)[:, 0]
        p = points.numpy()
        exact = np.cos(2 * p[:, 1]) * np.array([np.sin(3 * p[:, 0]), 3 * np.cos(3 * p[:, 0]), -9 * np.sin(3 * p[:, 0])])
        errors.append([np.abs(v.numpy() - e).max() for v, e in zip((value, u_x, u_xx), exact)])
    errors = np.array(errors)
    assert errors[1, 0] < 1e-5 and errors[1, 1] < 1e-3 and errors[1, 2] < 5e-2
    assert np.log2(errors[0, 0] / errors[1, 0]) > 3.5  # fourth order in the values
    assert np.log2(errors[0, 2] / errors[1, 2]) > 1.5  # second order in the second derivative


def test_the_network_with_a_level_set_is_the_same_in_eager_graph_and_xla(field, tmp_path):
    import keras

    domain = pinn.Rectangle(("x", "y"), (0.0, -1.0), (1.0, 1.0)) * pinn.TimeDomain("t", 0.0, 1.0)
    model = pinn.mlp(domain, width=8, depth=2, level_set=field)
    points = tf.constant(domain.sample_interior(16))

    def second(x):
        with tf.GradientTape() as outer:
            outer.watch(x)
            with tf.GradientTape() as inner:
                inner.watch(x)
                u = model(x)
            u_x = inner.gradient(u, x)[:, 0]
        return outer.gradient(u_x, x)

    results = [f(points).numpy() for f in (second, tf.function(second), tf.function(second, jit_compile=True))]
    np.testing.assert_allclose(results[1], results[0], atol=1e-10)
    np.testing.assert_allclose(results[2], results[0], atol=1e-10)
    path = str(tmp_path / "model.keras")
    model.save(path)
    loaded = keras.models.load_model(path)
    np.testing.assert_allclose(loaded(points).numpy(), model(points).numpy(), atol=0)
    assert isinstance(model.layers[0], LevelSetFeature)


def test_the_zero_set_lies_on_the_spline_zero_with_normals_to_the_positive_side(field):
    points, normals = field.zero_set(500, seed=4)
    assert points.shape == normals.shape == (500, 2)
    assert np.abs(field.numpy(points)).max() < 1e-9
    np.testing.assert_allclose(np.linalg.norm(normals, axis=1), 1.0, atol=1e-12)
    assert np.all(field.numpy(points + 1e-4 * normals) > 0) and np.all(field.numpy(points - 1e-4 * normals) < 0)
    assert np.all((points >= [0.0, -1.0]) & (points <= [1.0, 1.0]))
    again, _ = field.zero_set(500, seed=4)
    np.testing.assert_array_equal(again, points)
    # uniform in arc length: the points of a circle's zero set spread evenly over its angle
    x = np.linspace(-1.0, 1.0, 41)
    circle = pinn.Tabulated(0.5**2 - x[:, None] ** 2 - x[None, :] ** 2, (-1, -1), (1, 1), ("x", "y"))
    on, n = circle.zero_set(4000, seed=0)
    np.testing.assert_allclose(np.linalg.norm(on, axis=1), 0.5, atol=1e-9)
    np.testing.assert_allclose(n, -on / 0.5, atol=1e-6)  # positive inside
    counts = np.histogram(np.arctan2(on[:, 1], on[:, 0]), bins=8, range=(-np.pi, np.pi))[0]
    assert counts.min() > 0.85 * 500 and counts.max() < 1.15 * 500


def test_the_cusp_network_is_continuous_with_a_derivative_that_jumps_across_the_zero_set(field):
    domain = pinn.Rectangle(("x", "y"), (0.0, -1.0), (1.0, 1.0))
    model = pinn.mlp(domain, width=16, depth=2, level_set=field, seed=1)
    points, normals = field.zero_set(50, seed=0)
    sides = []
    for sign in (1.0, -1.0):
        x = tf.constant(points + sign * 1e-6 * normals)
        with tf.GradientTape() as tape:
            tape.watch(x)
            u = model(x)
        sides.append((u.numpy()[:, 0], np.sum(tape.gradient(u, x).numpy() * normals, axis=1)))
    np.testing.assert_allclose(sides[0][0], sides[1][0], atol=1e-4)  # continuous
    assert np.abs(sides[0][1] - sides[1][1]).min() > 1e-3  # du/dn jumps at every point
    plain = pinn.mlp(domain, width=16, depth=2, seed=1)
    x = tf.constant(np.concatenate([points + 1e-6 * normals, points - 1e-6 * normals]))
    with tf.GradientTape() as tape:
        tape.watch(x)
        u = plain(x)
    gradient = np.sum(tape.gradient(u, x).numpy().reshape(2, 50, 2) * normals, axis=2)
    np.testing.assert_allclose(gradient[0], gradient[1], atol=1e-4)  # a plain network cannot jump


def test_the_interface_condition_measures_the_flux_jump_on_both_sides():
    flux = pinn.Interface(lambda p, m, x, n: 3.0 * p["u_x"] - m["u_x"], ("u_x",), points=[[0.5], [0.25]],
                          normals=[[1.0], [1.0]])  # fmt: skip
    arrays = {"points": tf.constant([[0.5], [0.25]], tf.float64), "normals": tf.constant([[1.0], [1.0]], tf.float64)}
    kink = lambda x: tf.where(x < 0.5, 3.0 * x, x + 1.0)  # noqa: E731  a u_x = 3 on both sides of x = 0.5
    values = flux.residual(kink, 0, arrays, ("x",), fields=("u",)).numpy()
    np.testing.assert_allclose(values, [0.0, 6.0], atol=1e-9)  # at 0.25 both sides have u_x = 3: 9 - 3
    problem = pinn.Problem(
        pinn.Interval("x", 0, 1), needs=("u_xx",), residual=lambda d, x, p: d["u_xx"], conditions=[flux]
    )
    assert problem.term_names == ("residual", "interface")


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: pinn.Tabulated(np.zeros((3, 3)), (0, 0), (1, 1), ("x",)), "one axis of at least 2 nodes"),
        (lambda: pinn.Tabulated(np.zeros((1, 3)), (0, 0), (1, 1), ("x", "y")), "one axis of at least 2 nodes"),
        (lambda: pinn.Tabulated(np.full((3, 3), np.nan), (0, 0), (1, 1), ("x", "y")), "NaN or Inf"),
        (lambda: pinn.Tabulated(np.zeros((3, 3)), (0, 1), (1, 1), ("x", "y")), "high > low"),
        (lambda: pinn.Tabulated(np.ones((3, 3)), (0, 0), (1, 1), ("x", "y")).zero_set(5), "never changes sign"),
        (lambda: pinn.Tabulated(np.ones((3, 3)), (0, 0), (1, 1), ("x", "y")).zero_set(0), "count=0"),
        (lambda: pinn.Interface(lambda p, m, x, n: 0, ("u_x",), points=[[0.5]], normals=None), "unit normals"),
        (lambda: pinn.Interface(lambda p, m, x, n: 0, ("u_x",), [[0.5]], [[1.0]], offset=0.0), "offset=0.0"),
        (
            lambda: pinn.mlp(pinn.Interval("x", 0, 1), level_set=pinn.Tabulated(np.eye(3), (0, 0), (1, 1), ("x", "y"))),
            "not among the inputs",
        ),
    ],
)
def test_bad_input_is_refused_with_the_fix(call, message):
    with pytest.raises(ValueError, match=message):
        call()
