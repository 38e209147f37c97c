"""hodiff.taylor: forward propagation of value, Jacobian and Laplacian through Keras chains."""

import keras
import numpy as np
import pytest
import tensorflow as tf
from conftest import make_mlp, points

import hodiff
from hodiff.taylor import forward_jet


def test_jet_matches_value_batch_jacobian_and_laplacian(run):
    model = make_mlp(3, 2, width=8, depth=3)
    x = points(6, 3)
    jet = run(lambda x: forward_jet(model, x), x)
    np.testing.assert_allclose(jet.value, model(x), rtol=1e-12)
    jacobian = hodiff.batch_jacobian(model)(x)  # (N, out, in)
    np.testing.assert_allclose(jet.jacobian, tf.transpose(jacobian, [0, 2, 1]), rtol=1e-10, atol=1e-14)
    for k in range(2):
        nested = hodiff.laplacian(lambda x, k=k: model(x)[:, k])(x)
        np.testing.assert_allclose(jet.laplacian[:, k], nested, rtol=1e-9, atol=1e-12)


def test_functional_chain_and_activation_layers(run):
    inputs = keras.Input((2,), dtype="float64")
    hidden = keras.layers.Dense(8, dtype="float64")(inputs)
    hidden = keras.layers.Activation("tanh", dtype="float64")(hidden)
    outputs = keras.layers.Dense(1, dtype="float64", activation=tf.sin)(hidden)
    model = keras.Model(inputs, outputs)
    x = points(5, 2)
    np.testing.assert_allclose(
        run(hodiff.laplacian(model, method="forward"), x), hodiff.laplacian(model)(x), rtol=1e-9, atol=1e-12
    )


def test_linear_model_has_zero_laplacian():
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(4), keras.layers.Dense(1)])
    np.testing.assert_array_equal(hodiff.forward_laplacian(model)(points(2, 3, tf.float32)), np.zeros((2, 1)))


@pytest.mark.parametrize(
    "model_dtype, x_dtype", [("float32", "float64"), ("float64", "float32"), ("mixed_float16", "float32")]
)
def test_every_operator_answers_in_the_dtype_of_the_points(model_dtype, x_dtype):
    """One dtype rule: nested, forward and hutchinson all return x's dtype, whatever the model computes in."""
    keras.utils.set_random_seed(0)
    model = keras.Sequential(
        [keras.Input((2,)), keras.layers.Dense(8, "tanh", dtype=model_dtype), keras.layers.Dense(1, dtype=model_dtype)]
    )
    x = points(3, 2, tf.as_dtype(x_dtype))
    results = {method: hodiff.laplacian(model, method=method)(x) for method in hodiff.OPERATOR_METHODS}
    derivatives = hodiff.partials(model, x, coords=("a", "b"), wanted=("", "a", "ab"))
    for name, value in {**results, **derivatives}.items():
        assert value.dtype == x.dtype, f"{name}: {value.dtype.name}, points {x.dtype.name}"
    # The mixed_float16 model's forward jet propagates in float32: it matches the nested tapes
    # to float16 rounding of the layer outputs, not worse.
    np.testing.assert_allclose(results["forward"], results["nested"], rtol=2e-2, atol=2e-2)


@pytest.mark.parametrize(
    "layer, match",
    [
        (keras.layers.BatchNormalization(), "BatchNormalization"),
        (keras.layers.Dense(3, activation="softmax"), "softmax"),
    ],
)
def test_unsupported_layers_name_the_layer_and_the_fix(layer, match):
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(3), layer, keras.layers.Dense(1)])
    with pytest.raises(ValueError, match=match) as info:
        hodiff.laplacian(model, method="forward")(points(2, 3, tf.float32))
    assert "method='nested'" in str(info.value)


def test_skip_connection_is_rejected():
    inputs = keras.Input((2,))
    hidden = keras.layers.Dense(2)(inputs)
    model = keras.Model(inputs, keras.layers.Dense(1)(keras.layers.Add()([inputs, hidden])))
    with pytest.raises(ValueError, match="method='nested'"):
        hodiff.laplacian(model, method="forward")(points(2, 2, tf.float32))


def test_plain_function_is_rejected_for_forward():
    with pytest.raises(ValueError, match="keras.Sequential"):
        hodiff.laplacian(lambda x: tf.reduce_sum(x**2, axis=1), method="forward")(points(2, 2))
