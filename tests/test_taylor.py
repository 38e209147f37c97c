"""hodiff.jets.propagation: forward propagation of value, Jacobian and Laplacian through Keras chains."""

import keras
import numpy as np
import pytest
import tensorflow as tf
from conftest import make_mlp, points

import hodiff
from hodiff.jets.propagation import forward_jet, forward_partials


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
    np.testing.assert_array_equal(hodiff.laplacian(model, method="forward")(points(2, 3, tf.float32)), np.zeros((2, 1)))


@pytest.mark.parametrize(
    "model_dtype, x_dtype", [("float32", "float64"), ("float64", "float32"), ("mixed_float16", "float32")]
)
def test_every_operator_answers_in_the_dtype_of_the_points(model_dtype, x_dtype):
    """One dtype rule: every method returns x's dtype, whatever the model computes in."""
    keras.utils.set_random_seed(0)
    model = keras.Sequential(
        [keras.Input((2,)), keras.layers.Dense(8, "tanh", dtype=model_dtype), keras.layers.Dense(1, dtype=model_dtype)]
    )
    x = points(3, 2, tf.as_dtype(x_dtype))
    results = {method: hodiff.laplacian(model, method=method, num_probes=2)(x) for method in hodiff.OPERATOR_METHODS}
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


def test_laplacian_of_a_wide_input_matches_nested(run):
    """d > width: the first layer's tangents stay (d, k) until the first activation."""
    model = make_mlp(12, 1, width=5, depth=3, activation="sigmoid")
    x = points(4, 12)
    np.testing.assert_allclose(
        run(hodiff.laplacian(model, method="forward"), x), hodiff.laplacian(model)(x), rtol=1e-10, atol=1e-12
    )


def test_rescaling_layer_is_propagated(run):
    from hodiff.pinn import Interval, TimeDomain, mlp

    model = mlp(Interval("x", -2.0, 3.0) * TimeDomain("t", 0.0, 0.5), outputs=2, width=6, depth=2)
    x = points(5, 2)
    for k in range(2):
        nested = hodiff.laplacian(lambda x, k=k: model(x)[:, k])(x)
        np.testing.assert_allclose(run(lambda x: forward_jet(model, x).laplacian, x)[:, k], nested, rtol=1e-10)


@pytest.mark.parametrize("separate", [False, True])
def test_forward_partials_match_nested_partials(run, separate):
    model = make_mlp(3, 2, width=8, depth=3)
    x = points(6, 3)
    propagate = lambda x: forward_partials(model, x, first=(0, 2), second=(1, 2), separate_rows=separate)
    value, firsts, seconds = run(propagate, x)
    assert sorted(firsts) == [0, 2] and sorted(seconds) == [1, 2]
    np.testing.assert_allclose(value, model(x), rtol=1e-12)
    for k in range(2):
        nested = hodiff.partials(lambda x, k=k: model(x)[:, k], x, ("a", "b", "c"), ("a", "c", "bb", "cc"))
        np.testing.assert_allclose(firsts[0][:, k], nested["a"], rtol=1e-10, atol=1e-13)
        np.testing.assert_allclose(firsts[2][:, k], nested["c"], rtol=1e-10, atol=1e-13)
        np.testing.assert_allclose(seconds[1][:, k], nested["bb"], rtol=1e-10, atol=1e-13)
        np.testing.assert_allclose(seconds[2][:, k], nested["cc"], rtol=1e-10, atol=1e-13)


def test_forward_partials_reject_a_coordinate_out_of_range():
    with pytest.raises(ValueError, match="second=\\(2,\\)"):
        forward_partials(make_mlp(2), points(3, 2), second=(2,))


def test_problem_partials_by_one_forward_pass_match_nested_tapes(run):
    """Problem(partials_method="forward") on a Keras chain: the same partials as the tapes."""
    from hodiff import pinn

    problem = pinn.Problem(
        pinn.Interval("x", -1.0, 2.0) * pinn.TimeDomain("t", 0.0, 1.0),
        needs=("u", "u_t", "u_x", "u_xx", "v_tt"),
        residual=lambda d, x, p: (d["u_t"] + d["u"] * d["u_x"] - d["u_xx"], d["v_tt"]),
        fields=("u", "v"),
        residual_names=("u_eq", "v_eq"),
    )
    model = pinn.mlp(problem.domain, outputs=2, width=6, depth=2)
    solution = problem.solution(model)
    assert solution is model  # no output transform: the Keras chain itself, no hidden attribute
    x = points(7, 2)
    assert problem._forward_ready(solution, {"u_xx": ("u", ("x", "x"))})  # the forward path is taken
    assert not problem._forward_ready(solution, {"u_xt": ("u", ("x", "t"))})  # mixed: nested tapes
    forward_problem = problem.replace(partials_method="forward")
    forward = run(lambda x: forward_problem.named_partials(solution, x, problem.needs), x)
    nested = problem.named_partials(solution, x, problem.needs)
    assert set(forward) == set(nested) == {"u", "u_t", "u_x", "u_xx", "v_tt"}
    for key in nested:
        np.testing.assert_allclose(forward[key], nested[key], rtol=1e-10, atol=1e-13, err_msg=key)


def test_forward_partials_at_the_leading_rows_only(run):
    """derivative_rows=n: the value at every point, the partials of the first n points only."""
    model = make_mlp(2, 2, width=8, depth=3)
    x = points(9, 2)
    value, firsts, seconds = run(lambda x: forward_partials(model, x, (0, 1), (0,), derivative_rows=5), x)
    alone = forward_partials(model, x[:5], (0, 1), (0,))
    np.testing.assert_allclose(value, model(x), rtol=1e-12)
    assert firsts[0].shape == firsts[1].shape == seconds[0].shape == (5, 2)
    for got, expected in ((firsts[0], alone[1][0]), (firsts[1], alone[1][1]), (seconds[0], alone[2][0])):
        np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-15)
    stacked = forward_partials(model, x, (0, 1), (0,), derivative_rows=5, separate_rows=False)
    for got, expected in ((stacked[0], value), (stacked[1][1], firsts[1]), (stacked[2][0], seconds[0])):
        np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("d", [3, 40])
def test_laplacian_without_the_jacobian_matches_the_full_jet(run, d):
    """need_jacobian=False drops the tangents after the last activation: the same Laplacian."""
    model = make_mlp(d, 2, width=6, depth=3)
    x = points(5, d)
    full = forward_jet(model, x)
    lean = run(lambda x: forward_jet(model, x, need_jacobian=False), x)
    assert lean.jacobian is None
    np.testing.assert_allclose(lean.value, full.value, rtol=1e-14)
    np.testing.assert_allclose(lean.laplacian, full.laplacian, rtol=1e-12, atol=1e-14)
    with pytest.raises(ValueError, match="nothing to propagate"):
        forward_jet(model, x, need_laplacian=False, need_jacobian=False)


def test_second_order_derivatives_through_the_forward_laplacian_match_nested():
    """The sum of squares has its own gradient: HVPs of a loss on the forward Laplacian (fourth
    order in the network) equal those through nested tapes."""
    model = make_mlp(3, 1, width=5, depth=3)
    x = points(4, 3)
    weights = model.trainable_variables[:-1]  # the output bias does not reach a Laplacian
    directions = [tf.ones_like(w) for w in weights]
    operators = {method: hodiff.laplacian(model, method=method) for method in ("forward", "nested")}
    losses = {method: lambda _, op=op: tf.reduce_mean(op(x) ** 2) for method, op in operators.items()}
    for mode in ("forward_over_reverse", "reverse_over_reverse"):
        forward, nested = (hodiff.hvp(losses[method], weights, directions, mode=mode) for method in losses)
        for a, b in zip(forward, nested):
            np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-12)
