"""hodiff.operators: named partials, Laplacian and divergence against closed forms and scipy."""

import importlib

import numpy as np
import pytest
import tensorflow as tf
from conftest import make_mlp, mlp_twins, points

import hodiff
from hodiff.checks import assert_close, check_laplacian, default_tolerance, reference_jacobian


def wave(x):
    """u(x, t) = sin(2x) exp(-t) + x^3 t^2, with every partial known in closed form."""
    return tf.sin(2.0 * x[:, 0]) * tf.exp(-x[:, 1]) + x[:, 0] ** 3 * x[:, 1] ** 2


def test_partials_match_closed_forms(run, dtype):
    x = points(7, 2, dtype)
    wanted = ("", "x", "t", "xx", "xxx", "xxxx", "xt", "tx", "xxt", "tt")
    d = run(lambda x: hodiff.partials(wave, x, coords=("x", "t"), wanted=wanted), x)
    X, T = x[:, 0].numpy().astype(np.float64), x[:, 1].numpy().astype(np.float64)
    s, c, e = np.sin(2 * X), np.cos(2 * X), np.exp(-T)
    expected = {
        "": s * e + X**3 * T**2,
        "x": 2 * c * e + 3 * X**2 * T**2,
        "t": -s * e + 2 * X**3 * T,
        "xx": -4 * s * e + 6 * X * T**2,
        "xxx": -8 * c * e + 6 * T**2,
        "xxxx": 16 * s * e,
        "xt": -2 * c * e + 6 * X**2 * T,
        "tx": -2 * c * e + 6 * X**2 * T,
        "xxt": 4 * s * e + 12 * X * T,
        "tt": s * e + 2 * X**3,
    }
    for name in wanted:
        assert_close(d[name], expected[name], default_tolerance(dtype, 2), what=f"partial {name!r}")


def test_partials_share_tapes_no_derivative_computed_twice():
    calls = []

    def counted(x):
        calls.append(1)
        return wave(x)

    x = points(4, 2)
    hodiff.partials(counted, x, ("x", "t"), ("x", "xx", "xt", "t"))
    assert len(calls) == 1  # one forward pass for every partial


def test_partials_keep_column_shape_and_multi_letter_coords():
    # u = x1^2 x2^3 as a column: u_x1 = 2 x1 x2^3, u_x1x2 = 6 x1 x2^2, u_x2 = 3 x1^2 x2^2 (a swapped
    # x1/x2 column gives u_x2 for u_x1, and 6 x1^2 x2 ... for nothing: the values tell them apart)
    u = lambda x: (x[:, 0] ** 2 * x[:, 1] ** 3)[:, None]
    x = tf.constant([[0.5, 2.0], [1.5, -1.0], [2.0, 0.5]], tf.float64)
    d = hodiff.partials(u, x, coords=("x1", "x2"), wanted=(("x1",), ("x2",), ("x1", "x2"), ("x2", "x2")))
    x1, x2 = x[:, 0:1].numpy(), x[:, 1:2].numpy()
    expected = {
        ("x1",): 2 * x1 * x2**3,
        ("x2",): 3 * x1**2 * x2**2,
        ("x1", "x2"): 6 * x1 * x2**2,
        ("x2", "x2"): 6 * x1**2 * x2,
    }
    for name, value in expected.items():
        assert d[name].shape == (3, 1)
        np.testing.assert_allclose(d[name].numpy(), value, rtol=1e-12, err_msg=str(name))


def test_partials_of_a_model_by_forward_jets_equal_nested_and_name_the_right_column(run):
    model = make_mlp(2)
    x = points(5, 2)
    coords = ("x1", "x2")
    named = ((), ("x1",), ("x2",), ("x1", "x1"), ("x2", "x2"))  # () is the value
    forward = run(lambda x: hodiff.Partials(coords, named)(model, method="forward")(x), x)
    nested = run(lambda x: hodiff.Partials(coords, named)(model, method="nested")(x), x)
    for name in named:
        assert_close(forward[name], nested[name], default_tolerance(tf.float32, 2), what=str(name))
    with tf.GradientTape() as tape:  # the columns named x1 and x2 are the gradient's columns 0 and 1
        tape.watch(x)
        value = model(x)
    gradient = tape.gradient(value, x)
    assert_close(forward[("x1",)][:, 0], gradient[:, 0], default_tolerance(tf.float32, 1), what="x1")
    assert_close(forward[("x2",)][:, 0], gradient[:, 1], default_tolerance(tf.float32, 1), what="x2")
    with pytest.raises(ValueError, match="mixed or higher partials"):
        hodiff.Partials(coords, (("x1", "x2"),))(model, method="forward")(x)


@pytest.mark.parametrize("method", ["nested", "forward"])
def test_laplacian_of_mlp_against_scipy_hessian_trace(method, dtype):
    model64, model32 = mlp_twins(3, width=16)
    model = model64 if dtype == tf.float64 else model32
    check_laplacian(model, points(6, 3, dtype), methods=(method,), reference_u=model64)


def test_laplacian_of_plain_function_against_scipy(dtype):
    u = lambda x: tf.reduce_prod(tf.sin(x), axis=1) + tf.reduce_sum(x**4, axis=1)
    check_laplacian(u, points(5, 4, dtype), methods=("nested",), reference_u=u)


def test_laplacian_forward_equals_nested_for_several_activations(run):
    for activation in ["tanh", "sigmoid", "softplus", "gelu", "silu", "elu", tf.sin, "relu"]:
        model = make_mlp(4, width=8, depth=3, activation=activation)
        x = points(10, 4)
        nested = run(hodiff.laplacian(model, method="nested", unconnected="zero"), x)
        forward = run(hodiff.laplacian(model, method="forward"), x)
        np.testing.assert_allclose(forward, nested, rtol=1e-9, atol=1e-10, err_msg=str(activation))


def test_laplacian_hutchinson_is_unbiased_and_reproducible(run):
    model = make_mlp(5, width=16)
    x = points(4, 5)
    exact = hodiff.laplacian(model)(x).numpy()[:, 0]
    estimate = hodiff.Laplacian().estimate(model, "hutchinson", num_samples=4000, seed=3)(x)
    value, stderr = estimate.value.numpy()[:, 0], estimate.stderr.numpy()[:, 0]
    assert np.all(np.abs(value - exact) < 5 * stderr + 1e-12)
    first = run(hodiff.laplacian(model, method="hutchinson", num_probes=8, seed=1), x)
    second = run(hodiff.laplacian(model, method="hutchinson", num_probes=8, seed=1), x)
    other_seed = run(hodiff.laplacian(model, method="hutchinson", num_probes=8, seed=2), x)
    np.testing.assert_array_equal(first, second)
    assert not np.allclose(first, other_seed)


@pytest.mark.parametrize("method", ["nested", "forward"])
def test_divergence_of_mlp_against_scipy_jacobian_trace(run, method, dtype):
    model64, model32 = mlp_twins(3, 3, width=8)
    model = model64 if dtype == tf.float64 else model32
    x = points(4, 3, dtype)
    actual = run(hodiff.divergence(model, method=method), x)
    for n in range(4):
        J, _ = reference_jacobian(lambda p: model64(p[None])[0], [tf.cast(x[n], tf.float64)])
        assert_close(actual[n], np.trace(J), default_tolerance(dtype), what=f"divergence row {n}")


def test_divergence_hutchinson_unbiased(run):
    v = lambda x: tf.sin(x) * tf.reduce_sum(x, axis=1, keepdims=True)
    x = points(3, 4)
    exact = hodiff.divergence(v)(x).numpy()
    estimate = hodiff.Divergence().estimate(v, "hutchinson", num_samples=4000, seed=0)(x)
    assert np.all(np.abs(estimate.value.numpy() - exact) < 5 * estimate.stderr.numpy())
    run(hodiff.divergence(v, method="hutchinson", num_probes=4), x)  # compiles in every mode


def test_laplacian_is_differentiable_for_training(run):
    """A PINN step differentiates the Laplacian w.r.t. the weights: forward and nested agree."""
    model = make_mlp(3, width=8)
    x = points(16, 3)

    def loss_gradient(method):
        def step(x):
            loss = lambda weights: tf.reduce_mean(hodiff.laplacian(model, method=method)(x) ** 2)
            # The output bias does not affect a Laplacian: zeros there, not an error.
            return hodiff.grad(loss, unconnected="zero")(model.trainable_variables)

        return step

    nested = run(loss_gradient("nested"), x)
    forward = run(loss_gradient("forward"), x)
    for a, b in zip(nested, forward):
        np.testing.assert_allclose(a, b, rtol=1e-8, atol=1e-12)


@pytest.mark.parametrize("method", ["nested", "forward", "hutchinson"])
def test_operators_compile_with_an_unknown_batch_size(method):
    """A tf.function traced once for any N (input_signature with None) works in graph and XLA."""
    model = make_mlp(3, width=8)
    spec = [tf.TensorSpec([None, 3], tf.float64)]
    expected = hodiff.laplacian(model, method=method, num_probes=4)(points(5, 3))
    for jit_compile in (False, True):
        compiled = tf.function(
            hodiff.laplacian(model, method=method, num_probes=4), input_signature=spec, jit_compile=jit_compile
        )
        np.testing.assert_allclose(compiled(points(5, 3)), expected, rtol=1e-9)
        assert compiled(points(7, 3)).shape == (7, 1)


def test_points_may_be_a_variable(run):
    x = tf.Variable(points(4, 2))
    u = lambda x: tf.reduce_sum(tf.sin(x), axis=1)
    np.testing.assert_allclose(run(lambda: hodiff.laplacian(u)(x)), -u(x), rtol=1e-12)
    d = run(lambda: hodiff.partials(u, x, ("a", "b"), ("a", "bb")))
    np.testing.assert_allclose(d["a"], np.cos(x.numpy()[:, 0]), rtol=1e-12)


def test_every_operator_is_one_object_with_one_calling_convention(run):
    """operator(u, method)(x) for every operator and method; the methods agree on a Keras chain."""
    model = make_mlp(3, width=8)
    x = points(4, 3)
    u = lambda p: model(p)[:, 0]
    exact = {
        "laplacian": hodiff.laplacian(u)(x),
        "biharmonic": hodiff.Biharmonic()(u, method="nested")(x),
        "u_01": hodiff.MixedPartial(0, 1)(u, method="nested")(x),
    }
    operators = {"laplacian": hodiff.Laplacian(), "biharmonic": hodiff.Biharmonic(), "u_01": hodiff.MixedPartial(0, 1)}
    for name, operator in operators.items():
        forward = run(lambda x, op=operator: op(model, method="forward")(x)[:, 0], x)
        assert_close(forward, exact[name], default_tolerance(tf.float32, 4), what=f"{name} forward")
        # every group drawn: the sparse estimate is exact
        groups = operator.terms(3).indices.shape[0]
        full = run(lambda x, op=operator, g=groups: op(u, method="stochastic", num_samples=g, seed=3)(x), x)
        assert_close(full, exact[name], default_tolerance(tf.float32, 4), what=f"{name} stochastic")
    with pytest.raises(ValueError, match="not an option for Divergence"):
        hodiff.Divergence()(model, method="stochastic")
    with pytest.raises(ValueError, match="jets='sideways' is not an option"):
        hodiff.Laplacian()(u, method="stochastic", jets="sideways")


@pytest.mark.parametrize(
    "module, name",
    [
        ("hodiff", "stochastic_laplacian"),
        ("hodiff", "stochastic_divergence"),
        ("hodiff", "forward_laplacian"),
        ("hodiff", "forward_jet"),
        ("hodiff", "contracted_derivative"),
        ("hodiff.operators", "stochastic_laplacian"),
        ("hodiff.operators", "stochastic_divergence"),
        ("hodiff.jets", "forward_laplacian"),
        ("hodiff.jets", "forward_jet"),
        ("hodiff.jets", "forward_biharmonic"),
        ("hodiff.jets", "contracted_derivative"),
    ],
)
def test_the_former_names_are_gone(module, name):
    """One name per thing: ``Laplacian().estimate(u, "hutchinson")``, ``laplacian(u, "forward")``,
    ``Biharmonic()(u, "forward")`` and ``Contraction(...)`` are the operators' only spellings."""
    package = importlib.import_module(module)
    assert name not in package.__all__
    with pytest.raises(AttributeError, match=f"module '{module}' has no attribute '{name}'"):
        getattr(package, name)
