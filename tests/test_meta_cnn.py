"""Finn et al.'s MAML CNN (BatchNorm with batch statistics) through hodiff: its meta-gradient
against hand-written nested tapes, finite differences and, where installed, JAX."""

import keras
import numpy as np
import pytest
import tensorflow as tf
from helpers import meta_cnn

from hodiff.checks import in_mode
from hodiff.meta import FewShotTasks, FunctionalModel, MetaLearner, synthetic_characters
from pinn_examples.maml_omniglot import cross_entropy

STEPS, ALPHA = 2, 0.4


def hodiff_gradient(model, batch, first_order=False, mode="eager", steps=STEPS):
    learner = MetaLearner(
        FunctionalModel(model, batch_statistics=True),
        cross_entropy,
        variant="fomaml" if first_order else "maml",
        inner_steps=steps,
        inner_learning_rate=ALPHA,
        jit_compile=False,
    )
    loss, grads, _ = in_mode(learner._meta_gradients, mode)(*batch)
    return loss, grads


def test_cnn_meta_gradient_matches_nested_tapes_and_finite_differences(mode="eager"):
    model, batch = meta_cnn.small_case("float64")
    params = [v.numpy() for v in model.trainable_variables]
    for first_order in (False, True):
        loss, grads = hodiff_gradient(model, batch, first_order, mode)
        expected_loss, expected = meta_cnn.meta_gradient(params, batch, STEPS, ALPHA, first_order)
        assert abs(float(loss) - float(expected_loss)) < 1e-12
        assert meta_cnn.relative_error(grads, expected) < 1e-10, first_order
    # second order against central differences of the meta-loss itself along random directions (ReLU and
    # max-pooling have kinks, so the step is small: 1e-6 in float64)
    rng = np.random.default_rng(0)
    second_order = hodiff_gradient(model, batch, mode=mode)[1]
    for _ in range(2):
        direction = [rng.standard_normal(p.shape) for p in params]
        along = lambda t, direction=direction: float(
            meta_cnn.meta_loss([p + t * d for p, d in zip(params, direction)], batch, STEPS, ALPHA)
        )
        reference = (along(1e-6) - along(-1e-6)) / 2e-6
        predicted = sum(float(np.sum(np.asarray(g) * d)) for g, d in zip(second_order, direction))
        assert abs(predicted - reference) < 1e-6 * max(1.0, abs(reference)), (predicted, reference)


def test_second_order_through_max_pooling_compiles_correctly_with_xla():
    """TensorFlow's XLA differentiates ``MaxPool`` twice wrongly (4% off in float32 on the small
    CNN, no float64 kernel); FunctionalModel runs tiling 2D max-pooling as a reshape and a
    ``reduce_max``, so second-order MAML compiles, in float64 too, and matches the nested tapes."""
    model = keras.Sequential(  # one block keeps XLA's compile short
        [
            keras.Input((8, 8, 1), dtype="float64"),
            keras.layers.Conv2D(3, 3, padding="same", dtype="float64"),
            keras.layers.BatchNormalization(dtype="float64"),
            keras.layers.ReLU(dtype="float64"),
            keras.layers.MaxPooling2D(2, dtype="float64"),
            keras.layers.Flatten(dtype="float64"),
            keras.layers.Dense(3, dtype="float64"),
        ]
    )
    images = synthetic_characters(classes=6, size=8) + 0.1 * np.random.default_rng(0).standard_normal((6, 20, 8, 8))
    batch = FewShotTasks(images, ways=3, shots=1, queries=2).sample(2, seed=0)
    batch = [tf.constant(a, tf.float64 if a.dtype.kind == "f" else tf.int32) for a in batch]
    params = [v.numpy() for v in model.trainable_variables]
    loss, grads = hodiff_gradient(model, batch, mode="xla", steps=1)
    expected_loss, expected = meta_cnn.meta_gradient(params, batch, 1, ALPHA)
    assert abs(float(loss) - float(expected_loss)) < 1e-12
    assert meta_cnn.relative_error(grads, expected) < 1e-10


def test_second_order_through_overlapping_max_pooling_under_xla_is_refused():
    model = keras.Sequential(
        [keras.Input((8, 8, 1)), keras.layers.MaxPooling2D(3, strides=2), keras.layers.Flatten(), keras.layers.Dense(2)]
    )
    with pytest.raises(ValueError, match="jit_compile=False"):
        MetaLearner(model, cross_entropy, variant="maml", jit_compile=True)
    MetaLearner(model, cross_entropy, variant="fomaml", jit_compile=True)
    MetaLearner(model, cross_entropy, variant="maml", jit_compile=False)


def test_keras_batch_statistics_alone_give_a_wrong_second_order_meta_gradient():
    """Plain nested tapes through Keras' BatchNormalization (``tf.nn.moments`` holds the mean
    constant inside the variance) miss a second-order term; hodiff's FunctionalModel does not."""
    model, batch = meta_cnn.small_case("float64")
    frozen = [tf.convert_to_tensor(v) for v in model.non_trainable_variables]
    keras_loss = lambda p, x, y: cross_entropy(model.stateless_call(p, frozen, x, training=True)[0], y)
    params = [tf.convert_to_tensor(v) for v in model.trainable_variables]
    with tf.GradientTape() as outer:
        outer.watch(params)
        total = 0.0
        for task in range(batch[0].shape[0]):
            adapted = params
            for _ in range(STEPS):
                with tf.GradientTape() as inner:
                    inner.watch(adapted)
                    support = keras_loss(adapted, batch[0][task], batch[1][task])
                adapted = [p - ALPHA * g for p, g in zip(adapted, inner.gradient(support, adapted))]
            total += keras_loss(adapted, batch[2][task], batch[3][task])
    keras_grads = outer.gradient(total / batch[0].shape[0], params, unconnected_gradients=tf.UnconnectedGradients.ZERO)
    _, expected = meta_cnn.meta_gradient(params, batch, STEPS, ALPHA)
    assert meta_cnn.relative_error(keras_grads, expected) > 0.1
    assert meta_cnn.relative_error(hodiff_gradient(model, batch)[1], expected) < 1e-10


@pytest.mark.slow  # about 70 s: JAX compiles the CNN's second derivative (CI installs no JAX anyway)
@pytest.mark.parametrize("dtype, tolerance", [("float64", 1e-10), ("float32", 1e-5)])
def test_cnn_meta_gradient_matches_jax(dtype, tolerance):
    pytest.importorskip("jax")
    pytest.importorskip("optax")
    from benchmarks.maml_cnn import jax_cnn_maml

    model, batch = meta_cnn.small_case(dtype)
    for first_order in (False, True):  # one inner step: JAX's compile of the second order takes most of the test
        meta_gradient, _, params, convert = jax_cnn_maml(model, 1, ALPHA, first_order=first_order)
        jax_loss, jax_grads = meta_gradient(params, *convert(batch))
        loss, grads = hodiff_gradient(model, batch, first_order, steps=1)
        assert abs(float(loss) - float(jax_loss)) < tolerance * abs(float(jax_loss))
        assert meta_cnn.relative_error(grads, jax_grads) < tolerance, (dtype, first_order)


def test_meta_steps_on_new_task_batches_do_not_retrace():
    model, _ = meta_cnn.small_case("float32")
    learner = MetaLearner(
        FunctionalModel(model, batch_statistics=True), cross_entropy, inner_learning_rate=ALPHA, jit_compile=False
    )
    tasks = FewShotTasks(synthetic_characters(classes=8, size=16), ways=3, shots=1, queries=2)
    losses = [float(learner.meta_step(*tasks.sample(2, seed=seed))["loss"]) for seed in range(3)]
    assert learner.step._compiled.experimental_get_tracing_count() == 1 and len(set(losses)) == 3
