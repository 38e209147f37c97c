"""PINN networks: plain, multi-scale Fourier and modified MLPs; third derivatives in every mode; .keras saves."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from hodiff import pinn
from hodiff.checks import in_mode
from hodiff.operators import partials
from hodiff.pinn.networks import FactorizedDense, FourierFeatures, Gate

DOMAIN = pinn.Interval("x", -1.0, 1.0) * pinn.TimeDomain("t", 0.0, 2.0)
VARIANTS = {
    "fourier": dict(fourier_features=4),
    "multiscale": dict(fourier_features=4, fourier_scale=(1.0, 4.0)),
    "modified": dict(architecture="modified"),
    "modified_multiscale_periodic": dict(
        architecture="modified", fourier_features=3, fourier_scale=(1.0, 2.0, 3.0), periodic={"x": 2.0}
    ),
    "factorized_modified_fourier": dict(architecture="modified", fourier_features=3, factorization=(1.0, 0.1)),
}


def third_derivatives(model, x, square=True):
    """u_xxx and u_xxt of the first output, and the gradient of mean(u_xxx^2) w.r.t. the weights
    (what training a third-order PDE such as KdV takes: a fourth derivative)."""
    with tf.GradientTape() as tape:
        d = partials(lambda y: model(y)[:, 0], x, DOMAIN.coords, ("xxx", "xxt"))
        loss = tf.reduce_mean(tf.square(d["xxx"]) if square else d["xxx"])
    grads = tape.gradient(loss, model.trainable_variables)
    # the output bias does not reach u_xxx: its gradient is zero
    return (
        d["xxx"],
        d["xxt"],
        [tf.zeros(v.shape, x.dtype) if g is None else g for v, g in zip(model.trainable_variables, grads)],
    )


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_third_derivatives_agree_in_eager_graph_and_xla(variant):
    model = pinn.mlp(DOMAIN, outputs=2, width=6, depth=2, **VARIANTS[variant])
    x = tf.constant(DOMAIN.sample_interior(6, seed=2))
    derivatives = lambda x: partials(lambda y: model(y)[:, 0], x, DOMAIN.coords, ("xxx", "xxt"))
    eager = derivatives(x)
    for mode in ("graph", "xla"):
        other = in_mode(derivatives, mode)(x)
        for name in ("xxx", "xxt"):
            np.testing.assert_allclose(other[name].numpy(), eager[name].numpy(), rtol=1e-9, atol=1e-9)
    assert float(tf.reduce_max(tf.abs(eager["xxx"]))) > 0  # a non-trivial third derivative


def test_training_a_third_order_residual_under_xla_matches_eager():
    """The gradient of mean(u_xxx^2) w.r.t. the weights (a fourth derivative, as KdV training takes)."""
    model = pinn.mlp(DOMAIN, width=4, depth=2, architecture="modified", fourier_features=2, fourier_scale=(1.0, 2.0))
    x = tf.constant(DOMAIN.sample_interior(4, seed=2))
    eager = third_derivatives(model, x)
    xla = in_mode(lambda x: third_derivatives(model, x), "xla")(x)
    for a, b in zip(tf.nest.flatten(eager), tf.nest.flatten(xla)):
        assert np.all(np.isfinite(b.numpy()))
        np.testing.assert_allclose(b.numpy(), a.numpy(), rtol=1e-8, atol=1e-8 * np.abs(a.numpy()).max())


def test_third_derivative_matches_finite_differences():
    model = pinn.mlp(
        DOMAIN,
        width=8,
        depth=2,
        architecture="modified",
        fourier_features=3,
        fourier_scale=(0.5, 1.0),
        periodic={"x": 2.0},
    )
    x = DOMAIN.sample_interior(4, seed=5)
    u_xxx = third_derivatives(model, tf.constant(x))[0].numpy()
    h = 1e-3
    shift = lambda k: model(x + [k * h, 0.0]).numpy()[:, 0]
    finite = (shift(2) - 2 * shift(1) + 2 * shift(-1) - shift(-2)) / (2 * h**3)
    np.testing.assert_allclose(u_xxx, finite, rtol=5e-3)  # h^2 truncation error


@pytest.mark.parametrize("dtype", ["float32", "mixed_float16"])
@pytest.mark.parametrize("variant", ["multiscale", "modified"])
def test_other_dtypes_give_float32_points_and_partials_under_xla(variant, dtype):
    # low frequencies: float16 holds the hidden layers' part of a third derivative only up to 65504
    options = {**VARIANTS[variant], "fourier_scale": (0.5, 1.0)} if variant == "multiscale" else VARIANTS[variant]
    model = pinn.mlp(DOMAIN, width=8, depth=2, dtype=dtype, **options)
    x = tf.constant(DOMAIN.sample_interior(4), tf.float32)
    # mean(u_xxx), not its square: ~1e5 overflows float16 gradients (the trainer's loss scaling handles that)
    u_xxx, _, grads = in_mode(lambda x: third_derivatives(model, x, square=False), "xla")(x)
    assert u_xxx.dtype == tf.float32 and np.all(np.isfinite(u_xxx.numpy()))
    assert all(np.all(np.isfinite(g.numpy())) for g in grads)
    hidden = [layer for layer in model.layers if isinstance(layer, keras.layers.Dense)]
    expected = {"float16", "float32"} if dtype == "mixed_float16" else {"float32"}
    assert {layer.compute_dtype for layer in hidden} == expected


def test_multiscale_is_one_shared_stack_and_a_linear_map_of_the_concatenated_outputs():
    scales = (1.0, 5.0)
    model = pinn.mlp(DOMAIN, outputs=2, width=6, depth=2, fourier_features=3, fourier_scale=scales)
    embeddings = [layer for layer in model.layers if isinstance(layer, FourierFeatures)]
    assert [e.scale for e in embeddings] == list(scales)
    hidden = [layer for layer in model.layers if isinstance(layer, keras.layers.Dense) and layer.units == 6]
    heads = [layer for layer in model.layers if isinstance(layer, keras.layers.Dense) and layer.units == 2]
    assert len(hidden) == 2 and len(heads) == 2  # the hidden layers are shared by both scales
    x = DOMAIN.sample_interior(5, seed=1)
    scaled = model.layers[1](x).numpy()
    outs = []
    for embedding in embeddings:
        h = embedding(scaled).numpy()
        for layer in hidden:
            h = np.tanh(h @ layer.kernel.numpy() + layer.bias.numpy())
        outs.append(h)
    kernel = np.concatenate([head.kernel.numpy() for head in heads], axis=0)
    expected = np.concatenate(outs, axis=1) @ kernel + heads[0].bias.numpy()
    np.testing.assert_allclose(model(x).numpy(), expected, rtol=1e-12, atol=1e-12)


def test_modified_mlp_follows_the_paper_formula():
    model = pinn.mlp(DOMAIN, width=5, depth=3, architecture="modified")
    assert sum(isinstance(layer, Gate) for layer in model.layers) == 2
    x = DOMAIN.sample_interior(5, seed=3)
    X = model.layers[1](x).numpy()
    phi = lambda name, h: np.tanh(h @ model.get_layer(name).kernel.numpy() + model.get_layer(name).bias.numpy())
    U, V, H = phi("encoder_u", X), phi("encoder_v", X), phi("hidden_0", X)
    for k in (1, 2):
        Z = phi(f"hidden_{k}", H)
        H = (1 - Z) * U + Z * V
    last = model.get_layer("output_0")
    np.testing.assert_allclose(model(x).numpy(), H @ last.kernel.numpy() + last.bias.numpy(), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_every_variant_saves_and_loads_as_keras(variant, tmp_path):
    model = pinn.mlp(DOMAIN, outputs=2, width=6, depth=2, **VARIANTS[variant])
    path = str(tmp_path / "model.keras")
    model.save(path)
    loaded = keras.saving.load_model(path)
    x = DOMAIN.sample_interior(7, seed=4)
    np.testing.assert_array_equal(loaded(x).numpy(), model(x).numpy())


@pytest.mark.parametrize("variant", ["multiscale", "modified"])
def test_seeds_fix_the_network_without_global_state(variant):
    x = DOMAIN.sample_interior(5)
    build = lambda seed: pinn.mlp(DOMAIN, width=6, depth=2, seed=seed, **VARIANTS[variant])(x).numpy()
    keras.utils.set_random_seed(123)
    first = build(0)
    keras.utils.set_random_seed(456)
    np.testing.assert_array_equal(build(0), first)
    assert not np.allclose(build(1), first)


def test_periodic_modified_multiscale_network_is_exactly_periodic():
    model = pinn.mlp(DOMAIN, width=6, depth=2, **VARIANTS["modified_multiscale_periodic"])
    x = DOMAIN.sample_interior(6, seed=7)
    np.testing.assert_allclose(model(x + [2.0, 0.0]).numpy(), model(x).numpy(), rtol=0, atol=1e-12)


def test_bad_network_options_are_named():
    with pytest.raises(ValueError, match="architecture='resnet'.*'modified'"):
        pinn.mlp(DOMAIN, architecture="resnet")
    with pytest.raises(ValueError, match="fourier_scale=.*positive"):
        pinn.mlp(DOMAIN, fourier_features=4, fourier_scale=(1.0, -2.0))
    with pytest.raises(ValueError, match="fourier_features=0"):
        pinn.mlp(DOMAIN, fourier_scale=(1.0, 2.0))
    with pytest.raises(ValueError, match="depth=0"):
        pinn.mlp(DOMAIN, depth=0)
    with pytest.raises(ValueError, match="'modified' with depth=1 has no gated layer.*depth >= 2"):
        pinn.mlp(DOMAIN, depth=1, architecture="modified")


FACTORIZED = {
    "plain": {},
    "fourier": dict(fourier_features=4, fourier_scale=2.0),
    "modified_multiscale": dict(architecture="modified", fourier_features=3, fourier_scale=(1.0, 4.0)),
}


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("variant", sorted(FACTORIZED))
def test_weight_factorisation_starts_as_the_plain_network_and_trains_other_variables(variant, dtype):
    options = dict(outputs=2, width=8, depth=3, dtype=dtype, seed=3, **FACTORIZED[variant])
    plain = pinn.mlp(DOMAIN, **options)
    factorized = pinn.mlp(DOMAIN, factorization=(1.0, 0.1), **options)
    x = DOMAIN.sample_interior(9, seed=1).astype(dtype)
    tolerance = 1e-12 if dtype == "float64" else 1e-5
    np.testing.assert_allclose(factorized(x).numpy(), plain(x).numpy(), rtol=0, atol=tolerance)
    layers = [layer for layer in factorized.layers if isinstance(layer, FactorizedDense)]
    dense = [layer for layer in plain.layers if isinstance(layer, keras.layers.Dense)]
    assert len(layers) == len(dense) > 0 and not any(isinstance(la, keras.layers.Dense) for la in factorized.layers)
    for layer, twin in zip(layers, dense):  # W = V diag(exp(s)), W the plain layer's kernel
        kernel = layer.direction.numpy() * np.exp(layer.scale.numpy())
        np.testing.assert_allclose(kernel, twin.kernel.numpy(), rtol=10 * np.finfo(dtype).eps)
    scales = np.concatenate([layer.scale.numpy() for layer in layers])
    assert abs(scales.mean() - 1.0) < 0.05 and 0.05 < scales.std() < 0.15  # s ~ N(1, 0.1)
    # the gradient in (s, V) is not the plain gradient: d/dV = exp(s) dW, d/ds = sum_rows(W * dW)
    with tf.GradientTape(persistent=True) as tape:
        loss_plain = tf.reduce_sum(plain(x) ** 2)
        loss_factorized = tf.reduce_sum(factorized(x) ** 2)
    d_kernel = tape.gradient(loss_plain, dense[0].kernel).numpy()
    d_direction, d_scale = tape.gradient(loss_factorized, [layers[0].direction, layers[0].scale])
    scale = np.exp(layers[0].scale.numpy())
    rtol = 1e-10 if dtype == "float64" else 1e-3
    np.testing.assert_allclose(d_direction.numpy(), d_kernel * scale, rtol=rtol, atol=rtol * abs(d_kernel).max())
    expected = (d_kernel * dense[0].kernel.numpy()).sum(axis=0)
    np.testing.assert_allclose(d_scale.numpy(), expected, rtol=rtol, atol=rtol * abs(expected).max())


def test_weight_factorisation_trains_under_xla_as_in_eager():
    model = pinn.mlp(DOMAIN, width=6, depth=2, factorization=(0.5, 0.2), fourier_features=2)
    x = tf.constant(DOMAIN.sample_interior(5, seed=2))
    eager = third_derivatives(model, x)
    xla = in_mode(lambda x: third_derivatives(model, x), "xla")(x)
    for a, b in zip(tf.nest.flatten(eager), tf.nest.flatten(xla)):
        np.testing.assert_allclose(b.numpy(), a.numpy(), rtol=1e-8, atol=1e-8 * np.abs(a.numpy()).max())


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_periodic_embedding_with_any_period_is_exactly_periodic(dtype):
    """A period that is neither 2 pi nor the domain's length: several periods inside the domain, and shifts by many."""
    domain = pinn.Interval("x", 0.0, 1.3) * pinn.TimeDomain("t", 0.0, 1.0)
    period = 0.37
    model = pinn.mlp(domain, width=8, depth=2, dtype=dtype, periodic={"x": period}, fourier_features=3)
    x = domain.sample_interior(16, seed=3)
    u = model(x.astype(dtype)).numpy()
    tolerance = 1e-12 if dtype == "float64" else 1e-5
    for k in (1, 3, -2):
        shifted = model((x + [k * period, 0.0]).astype(dtype)).numpy()
        np.testing.assert_allclose(shifted, u, rtol=0, atol=tolerance)
    half = model((x + [period / 2, 0.0]).astype(dtype)).numpy()
    assert np.abs(half - u).max() > 1e-3  # periodic with that period, not a shorter one by accident


def test_bad_factorization_and_period_are_named():
    with pytest.raises(ValueError, match="factorization=.*std >= 0.*1.0, 0.1"):
        pinn.mlp(DOMAIN, factorization=(1.0, -0.1))
    with pytest.raises(ValueError, match="factorization=1.0 must be None or"):
        pinn.mlp(DOMAIN, factorization=1.0)
    with pytest.raises(ValueError, match=r"periodic\['x'\]=0.0 must be a finite period > 0"):
        pinn.mlp(DOMAIN, periodic={"x": 0.0})
    with pytest.raises(ValueError, match="periodic names 'y', which is not a coordinate"):
        pinn.mlp(DOMAIN, periodic={"y": 1.0})


def test_reflecting_embedding_gives_zero_slope_on_both_walls_in_every_mode(run):
    """``reflecting=("x", "y")``: u_x = 0 on x = -1 and x = 3, u_y = 0 on y's ends, not inside; t is untouched."""
    domain = pinn.Rectangle(("x", "y"), (-1.0, 0.0), (3.0, 0.5)) * pinn.TimeDomain("t", 0.0, 1.0)
    model = pinn.mlp(domain, width=8, depth=2, outputs=2, reflecting=("x", "y"), seed=4)
    points = tf.constant([[-1.0, 0.2, 0.3], [3.0, 0.1, 0.7], [0.4, 0.0, 0.5], [1.1, 0.5, 0.9], [0.4, 0.3, 0.5]])
    points = tf.cast(points, tf.float64)

    def slopes(points):
        d = partials(lambda y: model(y)[:, 1], points, domain.coords, ("x", "y", "t"))
        return d["x"], d["y"], d["t"]

    u_x, u_y, u_t = (value.numpy() for value in run(slopes, points))
    np.testing.assert_allclose(u_x[:2], 0.0, atol=1e-14)  # on the x walls
    np.testing.assert_allclose(u_y[2:4], 0.0, atol=1e-14)  # on the y walls
    assert np.abs(u_x[2:]).min() > 1e-6 and np.abs(u_y[[0, 1, 4]]).min() > 1e-6 and np.abs(u_t).min() > 1e-6
    both = pinn.mlp(domain, width=8, depth=2, periodic={"x": 4.0}, reflecting=("y",), seed=4)
    u_y = partials(lambda p: both(p)[:, 0], points, domain.coords, ("y",))["y"].numpy()
    np.testing.assert_allclose(u_y[2:4], 0.0, atol=1e-14)  # y's column found beside x's periodic pair
    restored = keras.models.model_from_json(model.to_json())
    restored.set_weights(model.get_weights())
    np.testing.assert_allclose(restored(points).numpy(), model(points).numpy(), rtol=1e-15)


def test_bad_reflecting_coordinates_are_named():
    with pytest.raises(ValueError, match="reflecting names 't', which is not a spatial coordinate"):
        pinn.mlp(DOMAIN, reflecting=("t",))
    with pytest.raises(ValueError, match="reflecting='x' must be a tuple"):
        pinn.mlp(DOMAIN, reflecting="x")
    with pytest.raises(ValueError, match="'x' is both periodic and reflecting"):
        pinn.mlp(DOMAIN, reflecting=("x",), periodic={"x": 2.0})
