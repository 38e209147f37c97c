"""Bad input gets an error that names the argument, the problem and the fix."""

import numpy as np
import pytest
import tensorflow as tf
from conftest import make_mlp, points

import hodiff

square_sum = lambda x: tf.reduce_sum(x**2)


@pytest.mark.parametrize("value", [3, np.int32(3), tf.constant([1, 2]), True, tf.constant([True])])
def test_integer_and_bool_inputs(value):
    with pytest.raises(TypeError, match="not differentiable; cast it to float|are not differentiable") as info:
        hodiff.grad(square_sum)(value)
    assert "args[0]" in str(info.value) and "tf.cast" in str(info.value)


def test_integer_points_in_operators():
    with pytest.raises(TypeError, match="`x` has dtype int32"):
        hodiff.laplacian(lambda x: x[:, 0])(tf.constant([[1, 2]]))


@pytest.mark.parametrize(
    "transform",
    [
        lambda f, x: hodiff.grad(f)(x),
        lambda f, x: hodiff.value_and_grad(f)(x),
        lambda f, x: hodiff.hessian(f)(x),
        lambda f, x: hodiff.hvp(f, x, tf.ones_like(x)),
    ],
)
def test_non_scalar_function(transform):
    with pytest.raises(ValueError, match=r"must return a scalar.*shape \(3,\).*batch_jacobian") as info:
        transform(lambda x: x**2, tf.ones(3))
    assert "tf.reduce_sum" in str(info.value)


def test_non_scalar_function_inside_compiled_code_fails_at_trace_time():
    with pytest.raises(ValueError, match="must return a scalar"):
        tf.function(hodiff.grad(lambda x: x**2), jit_compile=True)(tf.ones(3))


def test_hvp_direction_with_wrong_shape():
    with pytest.raises(ValueError, match=r"`v` has shape \(2,\) but `x` has shape \(3,\)"):
        hodiff.hvp(square_sum, tf.ones(3), tf.ones(2))


def test_jvp_tangent_with_wrong_shape_and_count():
    with pytest.raises(ValueError, match=r"tangents\[0\]"):
        hodiff.jvp(tf.sin, (tf.ones(3),), (tf.ones(4),))
    with pytest.raises(ValueError, match="one tangent per primal"):
        hodiff.jvp(tf.sin, (tf.ones(3),), ())


def test_unconnected_output_names_the_input_and_offers_zero():
    f = lambda x, y: tf.reduce_sum(x**2)
    with pytest.raises(ValueError, match=r"does not depend on `args\[1\]`.*unconnected='zero'"):
        hodiff.grad(f, argnums=(0, 1))(tf.ones(2), tf.ones(2))
    gx, gy = hodiff.grad(f, argnums=(0, 1), unconnected="zero")(tf.ones(2), tf.ones(2))
    np.testing.assert_array_equal(gy, [0.0, 0.0])


def test_unconnected_through_integer_cast():
    f = lambda x: tf.reduce_sum(tf.cast(tf.cast(x, tf.int32), tf.float32))
    with pytest.raises(ValueError, match="does not depend on"):
        hodiff.grad(f)(tf.ones(2))


def test_unconnected_option_is_validated():
    with pytest.raises(ValueError, match="unconnected='zeros' is not an option"):
        hodiff.grad(square_sum, unconnected="zeros")


def test_linear_field_has_zero_laplacian_and_a_constant_field_raises_unless_zero_asked():
    u = lambda x: 3.0 * x[:, 0]  # a derivative of a derivative: zero where unconnected, as in JAX
    np.testing.assert_array_equal(hodiff.laplacian(u)(points(2, 2)), [0.0, 0.0])
    np.testing.assert_array_equal(hodiff.laplacian(u, unconnected="zero")(points(2, 2)), [0.0, 0.0])
    constant = lambda x: tf.ones_like(x[:, 0])  # no path from x at all: the first derivative raises
    with pytest.raises(ValueError, match="unconnected='zero'"):
        hodiff.laplacian(constant)(points(2, 2))
    np.testing.assert_array_equal(hodiff.laplacian(constant, unconnected="zero")(points(2, 2)), [0.0, 0.0])


@pytest.mark.parametrize("shape", [(3,), (2, 3, 1)])
def test_field_points_must_be_n_by_d(shape):
    with pytest.raises(ValueError, match=r"`x` must be a batch of points with shape \(N, d\)") as info:
        hodiff.laplacian(lambda x: x[..., 0])(tf.ones(shape))
    assert "x[None, :]" in str(info.value)


def test_field_must_return_one_value_per_point():
    model = make_mlp(2, d_out=3)
    with pytest.raises(ValueError, match=r"one value per point.*\(N, 1\).*divergence"):
        hodiff.laplacian(model)(points(4, 2))
    with pytest.raises(ValueError, match=r"one d-vector per point"):
        hodiff.divergence(lambda x: x[:, 0])(points(4, 2))


def test_partials_with_unknown_coordinate_and_wrong_coords():
    u = lambda x: x[:, 0] * x[:, 1]
    with pytest.raises(ValueError, match="uses 'y', which is not one of coords"):
        hodiff.partials(u, points(2, 2), ("x", "t"), ("xy",))
    with pytest.raises(ValueError, match="coords must name each of the 2 columns"):
        hodiff.partials(u, points(2, 2), ("x",), ("x",))
    with pytest.raises(TypeError, match="tuple of names"):
        hodiff.partials(u, points(2, 2), ("x", "t"), "xx")


def test_method_and_mode_options_are_validated():
    with pytest.raises(ValueError, match="method='taylor' is not an option"):
        hodiff.laplacian(square_sum, method="taylor")
    with pytest.raises(ValueError, match="mode='forward' is not an option"):
        hodiff.hvp(square_sum, tf.ones(2), tf.ones(2), mode="forward")
    with pytest.raises(ValueError, match="n must be an int >= 0"):
        hodiff.nth_derivative(tf.sin, -1)


def test_argnums_out_of_range():
    with pytest.raises(ValueError, match="argnums=2 refers to argument 2"):
        hodiff.grad(lambda x, y: x * y, argnums=2)(1.0, 2.0)


def test_unbuilt_model_for_forward_laplacian():
    import keras

    model = keras.Sequential([keras.layers.Dense(4, activation="tanh"), keras.layers.Dense(1)])
    with pytest.raises(ValueError, match="Build the model first"):
        hodiff.laplacian(model, method="forward")(points(2, 2, tf.float32))
