"""hodiff.jets.stde: exact operators against nested tapes, scipy and closed forms; unbiased estimators."""

import numpy as np
import pytest
import tensorflow as tf
from conftest import make_mlp, points

import hodiff
from hodiff import checks
from hodiff.jets import stde

D = 3
COORDS = ("a", "b", "c")


@pytest.fixture(scope="module")
def model():
    return make_mlp(D, 1, width=6, depth=2)


@pytest.fixture(scope="module")
def partial_table(model):
    """All partials of order 2 and 4 of the model at two points, by nested reverse tapes."""
    wanted = [a + b for a in COORDS for b in COORDS] + [2 * a + 2 * b for a in COORDS for b in COORDS]
    wanted += [a * 3 for a in COORDS] + [a * 4 for a in COORDS]
    return hodiff.partials(lambda x: model(x)[:, 0], points(2, D), coords=COORDS, wanted=wanted)


def exact_values(partial_table, name):
    p = {k: np.asarray(v) for k, v in partial_table.items()}
    if name == "laplacian":
        return sum(p[a + a] for a in COORDS)
    if name == "biharmonic":
        return sum(p[2 * a + 2 * b] for a in COORDS for b in COORDS)
    if name == "pure3":
        return 1.0 * p["aaa"] - 2.0 * p["bbb"] + 0.5 * p["ccc"]
    if name == "pure2":
        return 1.0 * p["aa"] - 2.0 * p["bb"] + 0.5 * p["cc"]
    if name == "mixed":
        return p["ac"]
    if name == "matrix":
        return sum(MATRIX[i, j] * p[COORDS[i] + COORDS[j]] for i in range(D) for j in range(D))
    raise KeyError(name)


MATRIX = np.array([[1.0, 0.5, -1.0], [0.5, 0.0, 2.0], [-1.0, 2.0, -0.5]])
OPERATORS = {
    "laplacian": stde.laplacian_terms(),
    "biharmonic": stde.biharmonic_terms(),
    "pure3": stde.pure_partials_terms([1.0, -2.0, 0.5], order=3),
    "pure2": stde.pure_partials_terms([1.0, -2.0, 0.5], order=2),
    "mixed": stde.mixed_partial_terms(0, 2),
    "matrix": stde.contraction_terms(2, matrix=MATRIX),
}


@pytest.mark.parametrize("name", list(OPERATORS))
def test_exact_operators_match_nested_tapes(model, partial_table, run, name):
    x = points(2, D)
    result = run(lambda x: stde.exact(model, x, OPERATORS[name]), x)
    assert result.shape == (2, 1) and result.dtype == tf.float64
    expected = exact_values(partial_table, name)
    np.testing.assert_allclose(result[:, 0], expected, rtol=1e-9, atol=1e-11 * np.max(np.abs(expected)))


def test_user_contraction_by_directions_and_by_a_function(model, partial_table):
    """sum_s w_s D^3_{v_s} u with v_s = e_i: the pure partials of order 3, given two other ways."""
    x = points(2, D)
    weights = [1.0, -2.0, 0.5]
    by_arrays = stde.exact(model, x, stde.contraction_terms(3, np.eye(D), weights))
    by_function = stde.exact(model, x, stde.contraction_terms(3, lambda d: (np.eye(d), weights)))
    expected = exact_values(partial_table, "pure3")
    np.testing.assert_allclose(by_arrays[:, 0], expected, rtol=1e-9)
    np.testing.assert_allclose(by_function[:, 0], expected, rtol=1e-9)


def test_laplacian_matches_scipy(model):
    x = points(2, D)
    expected, _ = checks.reference_laplacian(lambda x: model(x)[:, 0], x)
    checks.assert_close(stde.exact(model, x, stde.laplacian_terms())[:, 0], expected, rtol=1e-6, what="stde laplacian")


def test_biharmonic_closed_forms(run):
    """prod_i sin(x_i): Delta^2 u = d^2 u; |x|^4: Delta^2 u = 8 d (d + 2). Nested path, plain functions."""
    x = points(3, 4)
    sines = lambda x: tf.reduce_prod(tf.sin(x), axis=1)  # noqa: E731
    result = run(lambda x: stde.exact(sines, x, stde.biharmonic_terms(), method="nested"), x)
    np.testing.assert_allclose(result, 16.0 * sines(x), rtol=1e-10)
    quartic = lambda x: tf.reduce_sum(x**2, axis=1) ** 2  # noqa: E731
    np.testing.assert_allclose(
        stde.exact(quartic, x, stde.biharmonic_terms(), method="nested"), np.full(3, 192.0), rtol=1e-12
    )


def test_biharmonic_of_a_sine_network_closed_form():
    """u = sin(w . x): Delta^2 u = |w|^4 u; the forward path through a one-unit sin layer."""
    import keras

    w = np.array([[0.3], [-0.7], [1.1]])
    model = keras.Sequential(
        [keras.Input((3,), dtype="float64"), keras.layers.Dense(1, tf.sin, use_bias=False, dtype="float64")]
    )
    model.layers[0].set_weights([w])
    x = points(4, 3)
    expected = np.sum(w**2) ** 2 * np.sin(x.numpy() @ w)
    np.testing.assert_allclose(stde.exact(model, x, stde.biharmonic_terms()), expected, rtol=1e-12)


# Unbiasedness: one point repeated R times; every row draws its own samples, so the R estimates are
# independent draws (as over R seeds). Their mean must be within 3 standard errors of the exact value,
# and the stderr each estimate reports must match the spread of the estimates.
ESTIMATORS = [
    ("laplacian", "sparse", 2),
    ("laplacian", "rademacher", 2),
    ("laplacian", "gaussian", 2),
    ("biharmonic", "sparse", 3),
    ("biharmonic", "gaussian", 4),
    ("pure3", "sparse", 2),
    ("pure2", "rademacher", 2),
    ("mixed", "gaussian", 2),
    ("matrix", "rademacher", 2),
]
REPEATS = 1500


@pytest.mark.parametrize("name, sampling, num_samples", ESTIMATORS)
def test_estimators_are_unbiased_and_report_their_error(model, partial_table, run, name, sampling, num_samples):
    x = tf.repeat(points(2, D)[:1], REPEATS, axis=0)
    estimate = run(
        lambda x, seed: stde.estimate(model, x, OPERATORS[name], num_samples, seed, sampling), x, tf.constant(7)
    )
    values = estimate.value.numpy()[:, 0]
    exact = exact_values(partial_table, name)[0]
    spread = values.std(ddof=1)
    assert spread > 0
    assert abs(values.mean() - exact) < 3 * spread / np.sqrt(REPEATS), (values.mean(), exact, spread)
    assert 0.75 < np.mean(estimate.stderr.numpy() ** 2) / spread**2 < 1.33


@pytest.mark.parametrize("sampling", ["sparse", "rademacher", "gaussian"])
def test_estimates_are_reproducible_in_every_mode_and_seeded(model, sampling):
    """An int seed gives the same draws in eager, graph and XLA; a seed tensor gives the same draws
    on every call of a compiled function (XLA's Philox stream differs from TF's kernels)."""
    x = points(4, D)
    estimate = lambda x, seed=3: stde.estimate(model, x, stde.laplacian_terms(), 2, seed, sampling)  # noqa: E731
    once = estimate(x)
    for mode in checks.MODES:
        np.testing.assert_allclose(checks.in_mode(estimate, mode)(x).value, once.value, rtol=1e-12, err_msg=mode)
    np.testing.assert_allclose(tf.function(estimate)(x, tf.constant(3)).value, once.value, rtol=1e-12)
    compiled = tf.function(estimate, jit_compile=True)
    np.testing.assert_array_equal(compiled(x, tf.constant(3)).value, compiled(x, tf.constant(3)).value)
    assert not np.allclose(compiled(x, tf.constant(4)).value, compiled(x, tf.constant(3)).value)
    assert not np.allclose(estimate(x, 4).value, once.value)


def test_sparse_with_every_group_is_exact_with_zero_error(model):
    x = points(2, D)
    for operator, groups in ((stde.laplacian_terms(), D), (stde.biharmonic_terms(), D * (D + 1) // 2)):
        full = stde.estimate(model, x, operator, num_samples=groups, sampling="sparse")
        np.testing.assert_allclose(full.value, stde.exact(model, x, operator), rtol=1e-10)
        np.testing.assert_allclose(full.stderr, 0.0, atol=1e-12)


def test_rademacher_biharmonic_would_be_biased_and_is_refused(model):
    with pytest.raises(ValueError, match="sampling='gaussian'"):
        stde.estimate(model, points(2, D), stde.biharmonic_terms(), 2, sampling="rademacher")


def test_bad_input_gets_clear_errors(model):
    x = points(2, D)
    for order, error in ((0, ValueError), (-1, ValueError), (1.5, TypeError)):
        with pytest.raises(error, match="order must be"):
            stde.pure_partials_terms([1.0, 1.0, 1.0], order)
        with pytest.raises(error, match="order must be"):
            stde.contraction_terms(order, np.eye(3))
    with pytest.raises(ValueError, match="num_samples=4 sampled groups.*only 3"):
        stde.estimate(model, x, stde.laplacian_terms(), num_samples=4)
    with pytest.raises(ValueError, match="2 coefficients.*d=3"):
        stde.exact(model, x, stde.pure_partials_terms([1.0, 2.0], 2))
    with pytest.raises(ValueError, match="2 coefficients.*d=3"):
        stde.estimate(model, x, stde.pure_partials_terms([1.0, 2.0], 2), 2, sampling="rademacher")
    with pytest.raises(ValueError, match="needs d > 3"):
        stde.exact(model, x, stde.mixed_partial_terms(0, 3))
    with pytest.raises(ValueError, match="symmetric"):
        stde.contraction_terms(2, matrix=[[0.0, 1.0], [0.0, 0.0]])
    with pytest.raises(ValueError, match="either directions"):
        stde.contraction_terms(2)
    with pytest.raises(ValueError, match=r"shape \(S, d=3\)"):
        stde.exact(model, x, stde.contraction_terms(2, np.ones((2, 4))))
    with pytest.raises(ValueError, match="no dense estimator"):
        stde.estimate(model, x, stde.pure_partials_terms([1.0, 1.0, 1.0], 4), 2, sampling="gaussian")
    with pytest.raises(ValueError, match="sampling='uniform' is not an option"):
        stde.estimate(model, x, stde.laplacian_terms(), 2, sampling="uniform")
    with pytest.raises(ValueError, match="num_samples must be an int >= 1"):
        stde.estimate(model, x, stde.laplacian_terms(), 0)


def test_training_gradients_flow_through_jets(model, run):
    """A loss built on stde.exact differentiates like one built on the forward Laplacian (any mode);
    one built on stde.estimate has a gradient for every weight but the output bias (derivatives of u
    do not depend on it)."""
    x = points(3, D)

    def gradients(x):
        with tf.GradientTape(persistent=True) as tape:
            jets = tf.reduce_sum(stde.exact(model, x, stde.laplacian_terms()) ** 2)
            reference = tf.reduce_sum(hodiff.laplacian(model, method="forward")(x) ** 2)
            noisy = tf.reduce_sum(stde.estimate(model, x, stde.laplacian_terms(), 2, seed=0, sampling="gaussian").value)
        weights = model.trainable_variables
        return tape.gradient(jets, weights), tape.gradient(reference, weights), tape.gradient(noisy, weights)

    by_jets, reference, noisy = run(gradients, x)
    assert by_jets[-1] is None and noisy[-1] is None  # the output bias
    assert reference[-1] is None or np.all(np.asarray(reference[-1]) == 0.0)  # zero or unconnected, by taylor's path
    for a, b, c in zip(by_jets[:-1], reference[:-1], noisy[:-1]):
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-12)
        assert np.all(np.isfinite(c)) and np.any(c != 0)


@pytest.mark.parametrize("name, sampling", [("laplacian", "sparse"), ("biharmonic", "sparse"), ("matrix", "gaussian")])
def test_value_only_estimate_equals_the_mean_of_the_samples(model, run, name, sampling):
    """with_stderr=False collapses the top coefficient into one sum: the same value, no stderr."""
    x = points(3, D)
    full = stde.estimate(model, x, OPERATORS[name], 3, seed=5, sampling=sampling)
    fast = run(lambda x: stde.estimate(model, x, OPERATORS[name], 3, seed=5, sampling=sampling, with_stderr=False), x)
    assert fast.stderr is None
    np.testing.assert_allclose(fast.value, full.value, rtol=1e-10, atol=1e-12)
