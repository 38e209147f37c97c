"""hodiff.jets: univariate Taylor jets of any order, against nested tapes and closed forms."""

import math
from itertools import product

import keras
import numpy as np
import pytest
import tensorflow as tf
from conftest import make_mlp, points

import hodiff
from hodiff.jets import SparseDirections, directional_derivative, stde, taylor_coefficients
from hodiff.jets.propagation import forward_biharmonic
from hodiff.jets.taylor import weighted_jets


def contracted_partials(u, x, v, order):
    """D^k_v u = sum over index tuples of u_{i_1..i_k} v_{i_1}..v_{i_k}, from hodiff.partials (reverse tapes)."""
    d = x.shape[1]
    coords = tuple("abcdefgh"[:d])
    tuples = list(product(range(d), repeat=order))
    wanted = sorted({"".join(coords[i] for i in sorted(t)) for t in tuples})
    table = hodiff.partials(u, x, coords=coords, wanted=wanted)
    v = np.asarray(v)
    out = np.zeros((x.shape[0], v.shape[0]))
    for t in tuples:
        name = "".join(coords[i] for i in sorted(t))
        out += np.asarray(table[name]).reshape(-1, 1) * np.prod(v[:, list(t)], axis=1)[None, :]
    return out


_REFERENCES: dict = {}  # the nested-tape reference once per order, shared by the three modes


@pytest.mark.parametrize("order", [4, 6])
def test_jet_of_a_tanh_mlp_matches_contracted_nested_partials(run, order):
    model = make_mlp(2, 1, width=6, depth=2)
    x, v = points(3, 2), points(2, 2, seed=1)
    jets = run(lambda x: directional_derivative(model, x, v, order), x)
    assert jets.shape == (3, 2, 1) and jets.dtype == tf.float64
    if order not in _REFERENCES:
        _REFERENCES[order] = contracted_partials(lambda x: model(x)[:, 0], x, v, order)
    expected = _REFERENCES[order]
    np.testing.assert_allclose(jets[..., 0], expected, rtol=1e-9, atol=1e-10 * np.max(np.abs(expected)))


def test_low_coefficients_are_value_gradient_and_half_hessian():
    model = make_mlp(3, 1, width=8, depth=2)
    x, v = points(4, 3), points(2, 3, seed=2)
    c = taylor_coefficients(model, x, v, order=3)
    np.testing.assert_allclose(c[0][..., 0], np.repeat(model(x).numpy(), 2, axis=1), rtol=1e-13)
    jacobian = hodiff.batch_jacobian(model)(x)[:, 0, :]  # (N, d)
    np.testing.assert_allclose(c[1][..., 0], jacobian @ tf.transpose(v), rtol=1e-11)
    hessian = hodiff.batch_hessian(lambda x: model(x)[:, 0])(x)
    np.testing.assert_allclose(c[2][..., 0], 0.5 * np.einsum("sd,nde,se->ns", v, hessian, v), rtol=1e-10)


@pytest.mark.parametrize("activation", ["tanh", "sigmoid", tf.sin, tf.cos, "exponential", "softplus", "gelu"])
def test_every_activation_rule_matches_nested_tapes_at_order_five(activation):
    model = make_mlp(3, 1, width=6, depth=2, activation=activation)
    x, v = points(3, 3), points(2, 3, seed=3)
    forward = directional_derivative(model, x, v, 5)
    nested = directional_derivative(model, x, v, 5, method="nested")
    np.testing.assert_allclose(forward, nested, rtol=1e-9, atol=1e-11 * np.max(np.abs(nested)))


def test_closed_form_along_a_line(run):
    """u = sin(x0) exp(x1): d^k/dt^k u(x + t v) = Im((b + i a)^k exp(x1 + i x0)) for v = (a, b)."""
    u = lambda x: tf.sin(x[:, 0]) * tf.exp(x[:, 1])  # noqa: E731
    x, v = points(3, 2), points(2, 2, seed=4)
    result = run(lambda x: directional_derivative(u, x, v, 5, method="nested"), x)
    xn, vn = x.numpy(), v.numpy()
    expected = np.imag((vn[None, :, 1] + 1j * vn[None, :, 0]) ** 5 * np.exp(xn[:, None, 1] + 1j * xn[:, None, 0]))
    assert result.shape == (3, 2)
    np.testing.assert_allclose(result, expected, rtol=1e-10)


def test_per_point_and_sparse_directions_equal_shared_dense_ones(run):
    model = make_mlp(4, 1, width=6, depth=2)
    x = points(3, 4)
    dense = tf.constant([[1.0, 0.0, -2.0, 0.0], [0.0, 0.5, 0.0, 0.0]], tf.float64)
    sparse = SparseDirections(tf.constant([[0, 2], [1, 1]]), tf.constant([[1.0, -2.0], [0.25, 0.25]], tf.float64))
    shared = directional_derivative(model, x, dense, 4)
    per_point = directional_derivative(model, x, tf.tile(dense[None], [3, 1, 1]), 4)
    from_sparse = run(lambda x: directional_derivative(model, x, sparse, 4), x)
    np.testing.assert_allclose(per_point, shared, rtol=1e-12)
    np.testing.assert_allclose(from_sparse, shared, rtol=1e-12)
    # A sparse direction given to the nested path is densified first.
    np.testing.assert_allclose(directional_derivative(model, x, sparse, 4, method="nested"), shared, rtol=1e-9)


def test_functional_nested_chains_and_several_outputs():
    inputs = keras.Input((2,), dtype="float64")
    hidden = keras.layers.Dense(5, dtype="float64")(inputs)
    hidden = keras.layers.Activation("tanh", dtype="float64")(hidden)
    inner = keras.Sequential([keras.Input((5,), dtype="float64"), keras.layers.Dense(4, tf.sin, dtype="float64")])
    outputs = keras.layers.Dense(3, dtype="float64")(inner(hidden))
    model = keras.Model(inputs, outputs)
    x, v = points(2, 2), points(3, 2, seed=5)
    forward = directional_derivative(model, x, v, 4)
    assert forward.shape == (2, 3, 3)
    for k in range(3):
        nested = directional_derivative(lambda x, k=k: model(x)[:, k], x, v, 4, method="nested")
        np.testing.assert_allclose(forward[..., k], nested, rtol=1e-9, atol=1e-12)


def test_float32_model_at_float64_points_answers_in_float64():
    model = make_mlp(2, 1, width=4, depth=1, dtype="float32")
    result = directional_derivative(model, points(2, 2), points(1, 2, seed=1), 4)
    assert result.dtype == tf.float64
    np.testing.assert_allclose(
        result, directional_derivative(model, points(2, 2, tf.float32), points(1, 2, tf.float32, 1), 4), rtol=1e-3
    )


@pytest.mark.parametrize("order, error", [(0, ValueError), (-2, ValueError), (2.5, TypeError), (True, TypeError)])
def test_bad_orders_are_refused(order, error):
    with pytest.raises(error, match="order must be"):
        directional_derivative(make_mlp(2, 1, width=3, depth=1), points(2, 2), points(1, 2), order)


def test_unsupported_layer_is_named_and_nested_is_the_fallback():
    keras.utils.set_random_seed(0)
    model = keras.Sequential(
        [
            keras.Input((2,)),
            keras.layers.Dense(4, "tanh"),
            keras.layers.LayerNormalization(name="norm"),
            keras.layers.Dense(1),
        ]
    )
    x, v = points(2, 2, tf.float32), points(1, 2, tf.float32)
    with pytest.raises(ValueError, match="'norm'.*method='nested'"):
        directional_derivative(model, x, v, 4)
    nested = directional_derivative(model, x, v, 2, method="nested")
    hessian = hodiff.batch_hessian(lambda x: model(x)[:, 0])(x)
    np.testing.assert_allclose(nested[:, 0, 0], np.einsum("d,nde,e->n", v[0], hessian, v[0]), rtol=1e-3, atol=1e-5)


def test_other_bad_input():
    model = make_mlp(2, 1, width=3, depth=1)
    with pytest.raises(ValueError, match="method='nested'"):
        directional_derivative(lambda x: x[:, 0], points(2, 2), points(1, 2), 2)
    with pytest.raises(ValueError, match="directions must have shape"):
        directional_derivative(model, points(2, 2), points(1, 3), 2)
    with pytest.raises(ValueError, match="method='bogus' is not an option"):
        directional_derivative(model, points(2, 2), points(1, 2), 2, method="bogus")
    with pytest.raises(TypeError, match="indices must be ints"):
        directional_derivative(model, points(2, 2), SparseDirections([[0.0]], [[1.0]]), 2)


def test_cost_scales_like_k_squared_not_d_to_the_k():
    """Order 6 in d = 50 is one small stacked pass (a nested-tape tower would need C(55, 6) partials)."""
    model = make_mlp(50, 1, width=8, depth=2)
    result = directional_derivative(model, points(2, 50), points(3, 50, seed=1), 6)
    assert result.shape == (2, 3, 1) and np.all(np.isfinite(result))
    assert math.comb(55, 6) > 2e7


@pytest.mark.parametrize("order", [1, 2, 4])
def test_collapsed_jets_equal_weighted_sums_of_directional_derivatives(run, order):
    model = make_mlp(3, 2, width=6, depth=2, activation="softplus")
    x, v, w = points(4, 3), points(5, 3, seed=1), points(2, 5, seed=2)
    collapsed = run(lambda x: weighted_jets(model, x, v, w, order), x)
    expected = tf.einsum("rs,nso->nro", w, directional_derivative(model, x, v, order))
    np.testing.assert_allclose(collapsed, expected, rtol=1e-10, atol=1e-13)
    nested = weighted_jets(lambda x: model(x)[:, 1], x, v, w, order, method="nested")
    np.testing.assert_allclose(nested, expected[..., 1], rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("activation", ["tanh", "sigmoid", tf.sin, "softplus"])
def test_collapsed_biharmonic_equals_the_sum_of_order_four_jets(run, activation):
    """forward_biharmonic (one collapsed pass) against the d^2 polarisation jets (forward, one stacked
    pass) and the same jets by nested tapes, two outputs, every mode (d = 1 has no pairs)."""
    for d in (1, 3):
        model = make_mlp(d, 2, width=5, depth=3, activation=activation)
        x = points(3, d)
        collapsed = run(lambda x, model=model: forward_biharmonic(model, x), x)
        terms = stde.biharmonic_terms().exact_terms(d)
        directions = SparseDirections(terms.indices.reshape(-1, 2), terms.values.reshape(-1, 2))
        jets = weighted_jets(model, x, directions, terms.weights.reshape(1, -1), 4)[:, 0]
        assert collapsed.shape == (3, 2) and collapsed.dtype == tf.float64
        np.testing.assert_allclose(collapsed, jets, rtol=1e-10, atol=1e-12 * np.max(np.abs(jets)))
        nested = stde.exact(lambda x, model=model: model(x)[:, 1], x, stde.biharmonic_terms(), method="nested")
        np.testing.assert_allclose(collapsed[:, 1], nested, rtol=1e-9, atol=1e-12 * np.max(np.abs(nested)))


def test_collapsed_biharmonic_edge_cases():
    """An activation before the first Dense layer; an affine model (zero); a plain function is refused."""
    model = keras.Sequential(
        [
            keras.Input((2,), dtype="float64"),
            keras.layers.Activation("tanh", dtype="float64"),
            keras.layers.Dense(4, "sigmoid", dtype="float64"),
            keras.layers.Dense(1, dtype="float64"),
        ]
    )
    x = points(3, 2)
    nested = stde.exact(model, x, stde.biharmonic_terms(), method="nested")
    np.testing.assert_allclose(forward_biharmonic(model, x)[:, 0], nested[:, 0], rtol=1e-10)
    affine = keras.Sequential([keras.Input((2,), dtype="float64"), keras.layers.Dense(3, dtype="float64")])
    np.testing.assert_array_equal(forward_biharmonic(affine, x), np.zeros((3, 3)))
    with pytest.raises(ValueError, match="method='nested'"):
        forward_biharmonic(lambda x: x[:, 0], x)


def test_collapsed_second_order_edge_cases():
    """The order-2 collapsed pass: an activation before the first Dense layer, and an affine model (zero)."""
    model = keras.Sequential(
        [
            keras.Input((3,), dtype="float64"),
            keras.layers.Activation("sigmoid", dtype="float64"),
            keras.layers.Dense(4, "tanh", dtype="float64"),
            keras.layers.Dense(1, dtype="float64"),
        ]
    )
    x, v, w = points(3, 3), points(2, 3, seed=1), points(2, 2, seed=2)
    nested = weighted_jets(lambda x: model(x)[:, 0], x, v, w, 2, method="nested")
    np.testing.assert_allclose(weighted_jets(model, x, v, w, 2)[..., 0], nested, rtol=1e-10)
    affine = keras.Sequential([keras.Input((3,), dtype="float64"), keras.layers.Dense(2, dtype="float64")])
    np.testing.assert_array_equal(weighted_jets(affine, x, v, w, 2), np.zeros((3, 2, 2)))


@pytest.mark.parametrize("activation", ["tanh", "sigmoid", "sin", "cos", "exp", "softplus"])
def test_one_rule_table_serves_every_order(activation):
    """The collapsed order-2 pass and the order-k series read the same table: at every order the
    rule gives the derivatives nested tapes give, and a low order is the head of a high one."""
    from hodiff.jets import rules

    function = {"sin": tf.sin, "cos": tf.cos, "exp": tf.exp}.get(activation) or keras.activations.get(activation)
    h = tf.constant(np.linspace(-2.0, 2.0, 9), tf.float64)
    by_tapes = hodiff.elementwise_derivatives(function, 5)(h)
    high = rules.activation_derivatives(function, 5)(h)
    low = rules.activation_derivatives(function, 2)(h)
    assert len(high) == 6 and len(low) == 3
    for m in range(6):
        np.testing.assert_allclose(high[m], by_tapes[m], rtol=1e-10, atol=1e-12, err_msg=f"order {m}")
    for m in range(3):
        np.testing.assert_allclose(low[m], high[m], rtol=1e-14, atol=1e-15, err_msg=f"order {m}")
