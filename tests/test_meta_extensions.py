"""Inner optimisers, tasks of different sizes, the vectorised task axis, batched evaluation and
divergence reports of hodiff.meta, against scipy finite differences and the task loop (float64)."""

import logging

import keras
import numpy as np
import pytest
import tensorflow as tf
from helpers.meta_fixtures import FUNCTIONAL, QUERY, SUPPORT, THETA, mse, small_model, unflatten

import hodiff
from hodiff.checks import assert_close, check_grads, in_mode
from hodiff.meta import FunctionalModel, InnerAdam, InnerMomentum, MetaLearner, inner_loop


@pytest.mark.parametrize(
    "optimizer, learning_rate",
    [("momentum", 0.1), (InnerMomentum(0.5, nesterov=True), 0.1), ("adam", 0.05), (InnerAdam(0.5, 0.9), 0.05)],
)
def test_meta_gradient_through_inner_optimizers_matches_scipy_in_every_mode(optimizer, learning_rate):
    def query_loss(theta):
        adapted, _ = inner_loop(
            lambda p: mse(FUNCTIONAL(p, SUPPORT[0]), SUPPORT[1]),
            unflatten(theta),
            3,
            learning_rate,
            optimizer=optimizer,
        )
        return mse(FUNCTIONAL(adapted, QUERY[0]), QUERY[1])

    check_grads(query_loss, (THETA,), order=1, rtol=1e-7)


def test_momentum_and_adam_follow_their_update_rules(run):
    objective = lambda p: 0.5 * tf.reduce_sum(p[0] ** 2)  # gradient = p
    start = [tf.constant([1.0, -2.0], tf.float64)]
    momentum, _ = run(lambda: inner_loop(objective, start, 2, 0.1, optimizer=InnerMomentum(0.9)))
    p1 = start[0].numpy() * (1 - 0.1)
    expected = p1 - 0.1 * (0.9 * start[0].numpy() + p1)  # buffer = 0.9 g0 + g1
    assert_close(momentum[0], expected, rtol=1e-14)
    adam, _ = run(lambda: inner_loop(objective, start, 1, 0.1, optimizer="adam"))
    assert_close(adam[0], start[0].numpy() - 0.1 * np.sign(start[0].numpy()), rtol=1e-7)


def test_adam_meta_gradient_is_finite_for_parameters_without_gradient(run):
    unused = lambda p: tf.reduce_sum(p[0] ** 2)  # p[1] never gets a gradient: Adam's v stays 0

    def meta_gradient():
        params = [tf.constant([0.5, 1.0], tf.float64), tf.constant([2.0], tf.float64)]
        with tf.GradientTape() as tape:
            tape.watch(params)
            adapted, _ = inner_loop(unused, params, 2, 0.1, optimizer="adam")
            loss = tf.reduce_sum(adapted[0] ** 3) + tf.reduce_sum(adapted[1])
        return tape.gradient(loss, params)

    grads = run(meta_gradient)
    assert all(np.all(np.isfinite(g)) for g in grads) and np.array_equal(grads[1], [1.0])


def task_batch(tasks=3, support=5, query=7, dtype=np.float64, seed=1):
    rng = np.random.default_rng(seed)
    amplitude, phase = rng.uniform(0.5, 2, (tasks, 1, 1)), rng.uniform(0, np.pi, (tasks, 1, 1))
    xs, xq = rng.uniform(-3, 3, (tasks, support, 1)), rng.uniform(-3, 3, (tasks, query, 1))
    return [tf.constant(a, dtype) for a in (xs, amplitude * np.sin(xs - phase), xq, amplitude * np.sin(xq - phase))]


def learner(variant="maml", vectorize=None, **kwargs):
    kwargs.setdefault("inner_steps", 2)
    kwargs.setdefault("inner_learning_rate", 0.05)
    return MetaLearner(small_model(), mse, variant=variant, vectorize=vectorize, jit_compile=False, **kwargs)


@pytest.mark.parametrize("variant", ["maml", "fomaml", "meta_sgd", "maml++", "anil"])
@pytest.mark.parametrize("inner_optimizer", ["sgd", "adam"])
def test_vectorised_meta_gradient_equals_the_task_loop(variant, inner_optimizer):
    batch = task_batch()
    looped = learner(variant, vectorize=False, inner_optimizer=inner_optimizer)
    vectorised = learner(variant, vectorize=True, inner_optimizer=inner_optimizer)
    assert vectorised.vectorized and not looped.vectorized
    expected = looped._meta_gradients(*batch)
    actual = vectorised._meta_gradients(*batch)
    assert_close(actual[0], expected[0], rtol=1e-12)
    for a, e in zip(actual[1], expected[1]):
        assert_close(a, e, rtol=1e-10, atol=1e-13)


def test_vectorised_meta_gradient_with_momentum_agrees_across_modes():
    batch = task_batch()
    results = {
        mode: in_mode(learner("meta_sgd", inner_optimizer="momentum")._meta_gradients, mode)(*batch)
        for mode in ("eager", "graph", "xla")
    }
    expected = learner("meta_sgd", vectorize=False, inner_optimizer="momentum")._meta_gradients(*batch)[1]
    for mode, (_, grads, _) in results.items():
        for a, e in zip(grads, expected):
            assert_close(a, e, rtol=1e-10, atol=1e-13, what=f"meta-gradient ({mode})")


def ragged_tasks():
    """Three tasks with 2, 5 and 3 support and 4, 1 and 3 query examples: unpadded, and padded to 5
    and 4 examples with masks."""
    rng = np.random.default_rng(2)
    tasks = []
    for support, query in ((2, 4), (5, 1), (3, 3)):
        amplitude, phase = rng.uniform(0.5, 2), rng.uniform(0, np.pi)
        xs, xq = rng.uniform(-3, 3, (support, 1)), rng.uniform(-3, 3, (query, 1))
        tasks.append((xs, amplitude * np.sin(xs - phase), xq, amplitude * np.sin(xq - phase)))
    padded, masks = [], []
    for part, length in zip(range(4), (5, 5, 4, 4)):
        padded.append(
            np.stack([np.pad(t[part], ((0, length - len(t[part])), (0, 0)), constant_values=7.0) for t in tasks])
        )
    for part, length in ((0, 5), (2, 4)):
        masks.append(np.array([[1.0] * len(t[part]) + [0.0] * (length - len(t[part])) for t in tasks]))
    return tasks, [tf.constant(a) for a in padded], [tf.constant(m) for m in masks]


@pytest.mark.parametrize("vectorize", [False, True])
def test_padded_tasks_with_masks_give_the_meta_gradient_of_the_tasks_one_by_one(vectorize):
    tasks, padded, masks = ragged_tasks()
    one_by_one = learner("meta_sgd", vectorize=False, inner_optimizer="adam")
    per_task = [one_by_one._meta_gradients(*[tf.constant(a[None]) for a in task]) for task in tasks]
    expected_loss = np.mean([float(loss) for loss, _, _ in per_task])
    expected = [np.mean(grads, axis=0) for grads in zip(*[g for _, g, _ in per_task])]
    masked = learner("meta_sgd", vectorize=vectorize, inner_optimizer="adam")
    modes = ("eager", "xla") if vectorize else ("eager",)
    for mode in modes:
        loss, grads, _ = in_mode(masked._meta_gradients, mode)(*padded, *masks)
        assert_close(loss, expected_loss, rtol=1e-12)
        for a, e in zip(grads, expected):
            assert_close(a, e, rtol=1e-10, atol=1e-13, what=f"masked meta-gradient ({mode})")
    unmasked = masked._meta_gradients(*padded)[1]
    assert max(np.abs(np.asarray(a) - e).max() for a, e in zip(unmasked, expected)) > 1e-3, "the masks matter"


def test_meta_step_with_masks_trains_and_bad_masks_are_errors():
    _, padded, (support_mask, query_mask) = ragged_tasks()
    meta = MetaLearner(
        small_model(), mse, inner_steps=1, outer_optimizer=keras.optimizers.Adam(1e-2), jit_compile=False
    )
    first = float(meta.meta_step(*padded, support_mask, query_mask)["loss"])
    for _ in range(5):
        last = float(meta.meta_step(*padded, support_mask, query_mask)["loss"])
    assert np.isfinite(last) and last < first
    assert np.isfinite(float(meta.meta_step(*padded, support_mask=support_mask)["loss"])), "query all real"
    with pytest.raises(ValueError, match=r"support_mask has shape \(3, 4\).*\(3, 5\)"):
        meta.meta_step(*padded, support_mask[:, :4], query_mask)
    with pytest.raises(ValueError, match="only 0 .padding. and 1"):
        meta.meta_step(*padded, support_mask * 0.5, query_mask)
    with pytest.raises(ValueError, match=r"query_mask marks no real example in tasks \[1\]"):
        meta.meta_step(*padded, support_mask, query_mask * np.array([[1.0], [0.0], [1.0]]))
    with pytest.raises(TypeError, match="support_mask must hold 0/1"):
        meta.meta_step(*padded, tf.constant([["a"] * 5] * 3), query_mask)


def test_evaluate_is_batched_compiled_and_matches_per_task_adaptation():
    batch = task_batch(4)
    meta = MetaLearner(small_model(), mse, variant="maml++", inner_steps=2, inner_learning_rate=0.05)
    assert meta.vectorized
    result = meta.evaluate(batch, steps=3)
    assert result.query_losses.shape == (4, 4) and result.support_losses.shape == (4, 4)
    assert result.num_diverged == 0 and [tuple(p.shape) for p in result.parameters] == [
        (4, 1, 4),
        (4, 4),
        (4, 4, 1),
        (4, 1),
    ]
    looped = MetaLearner(small_model(), mse, variant="maml++", inner_steps=2, inner_learning_rate=0.05, vectorize=False)
    assert_close(looped.evaluate(batch, steps=3).query_losses, result.query_losses, rtol=1e-10)
    for task in range(4):
        adapted, support_losses = meta.adapt_parameters(batch[0][task], batch[1][task], steps=3)
        assert_close(result.support_losses[task, :3], support_losses, rtol=1e-10)
        query = mse(meta.functional(adapted, batch[2][task]), batch[3][task])
        assert_close(result.query_losses[task, 3], query, rtol=1e-10)
        for p, a in zip(result.parameters, adapted):
            assert_close(p[task], a, rtol=1e-10, atol=1e-14)
    assert np.all(result.support_losses[:, 3] < result.support_losses[:, 0]), "adaptation fits the support sets"
    predictions = meta.predict(result.parameters, batch[2])
    expected = [meta.functional([p[task] for p in result.parameters], batch[2][task]) for task in range(4)]
    assert_close(predictions, np.stack(expected), rtol=1e-12)
    assert_close(looped.predict(result.parameters, batch[2]), np.stack(expected), rtol=1e-12)


def test_meta_sgd_rates_that_diverge_beyond_the_trained_steps_are_reported(caplog):
    batch = task_batch(3, dtype=np.float32)
    model = keras.Sequential([keras.Input((1,)), keras.layers.Dense(4, activation="tanh"), keras.layers.Dense(1)])
    meta = MetaLearner(model, mse, variant="meta_sgd", inner_steps=1)
    for rate in meta.learned_rates:  # rates that reduce the loss in one step but overshoot when repeated
        rate.assign(tf.fill(rate.shape, 50.0))
    stable = meta.evaluate(batch, steps=1, on_nonfinite="raise")
    assert stable.num_diverged == 0 and np.all(np.isfinite(stable.query_losses))
    with caplog.at_level(logging.WARNING, logger="hodiff.meta"):
        result = meta.evaluate(batch, steps=12)
    assert result.num_diverged == 3 and result.diverged.tolist() == [True] * 3
    assert not np.all(np.isfinite(result.query_losses[:, -1]))
    assert "3 of 3 tasks diverged" in caplog.text and "trained for 1 inner step" in caplog.text
    with pytest.raises(FloatingPointError, match="3 of 3 tasks diverged.*within 12 inner steps.*steps <= 1"):
        meta.evaluate(batch, steps=12, on_nonfinite="raise")
    with pytest.raises(FloatingPointError, match="adapt_parameters: adaptation diverged within 12 inner steps"):
        meta.adapt_parameters(batch[0][0], batch[1][0], steps=12)
    assert meta.evaluate(batch, steps=12, on_nonfinite="ignore").num_diverged == 3


def test_vectorize_choices_and_errors():
    with pytest.raises(ValueError, match="vectorize=True needs a keras.Sequential of Dense layers.*LayerNormalization"):
        model = keras.Sequential([keras.Input((1,)), keras.layers.Dense(3), keras.layers.LayerNormalization()])
        MetaLearner(model, mse, vectorize=True)
    with pytest.raises(ValueError, match="trained with task_objective"):
        MetaLearner(small_model(), task_objective=lambda f, p, x, y: mse(f(p, x), y), vectorize=True)
    plain = FunctionalModel(lambda p, x: x @ p[0], parameters=[tf.ones((1, 1), tf.float64)])
    assert not MetaLearner(plain, mse).vectorized and MetaLearner(small_model(), mse).vectorized
    with pytest.raises(ValueError, match="vectorize must be None"):
        MetaLearner(small_model(), mse, vectorize="yes")
    with pytest.raises(ValueError, match=r"inner_optimizer must be one of \('sgd', 'momentum', 'adam'\)"):
        MetaLearner(small_model(), mse, inner_optimizer="rmsprop")
    with pytest.raises(ValueError, match="momentum must be in"):
        InnerMomentum(1.0)
    with pytest.raises(ValueError, match="epsilon must be > 0"):
        InnerAdam(epsilon=0.0)
    with pytest.raises(ValueError, match="tasks must be the four tensors"):
        MetaLearner(small_model(), mse).evaluate(task_batch()[:2])


def test_inner_sgd_is_plain_gradient_descent(run):
    # InnerSGD's direction is the gradient itself (no state), so inner_loop with it is p <- p - lr * grad,
    # step after step; a momentum or scaled direction would leave the hand-rolled trajectory.
    assert hodiff.meta.InnerSGD is hodiff.meta.optimizers.InnerSGD
    grads = [tf.constant([0.5, -4.0], tf.float64)]
    directions, state = hodiff.meta.InnerSGD().update(grads, hodiff.meta.InnerSGD().init(grads), step=0)
    assert_close(directions[0], grads[0], rtol=0) and list(state) == []
    support_loss = lambda theta: mse(FUNCTIONAL(unflatten(theta), SUPPORT[0]), SUPPORT[1])
    expected = THETA
    for _ in range(3):
        expected = expected - 0.1 * hodiff.grad(support_loss)(expected)
    objective = lambda p: mse(FUNCTIONAL(p, SUPPORT[0]), SUPPORT[1])
    adapted, losses = run(
        lambda t: inner_loop(objective, unflatten(t), 3, 0.1, optimizer=hodiff.meta.InnerSGD()), THETA
    )
    assert_close(tf.concat([tf.reshape(a, [-1]) for a in adapted], 0), expected, rtol=1e-12)
    assert_close(losses[0], support_loss(THETA), rtol=1e-12)
