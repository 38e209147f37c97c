"""MAML-family meta-gradients against scipy finite differences, in every mode; errors."""

import keras
import numpy as np
import pytest
import tensorflow as tf
from helpers.meta_fixtures import FUNCTIONAL, QUERY, RNG, SUPPORT, THETA, mse, small_model, unflatten

import hodiff
from hodiff.checks import assert_close, check_grads, in_mode
from hodiff.meta import FunctionalModel, MetaLearner, inner_loop


def query_loss_after_adaptation(theta, first_order=False, steps=2, learning_rate=0.1):
    adapted, _ = inner_loop(
        lambda p: mse(FUNCTIONAL(p, SUPPORT[0]), SUPPORT[1]),
        unflatten(theta),
        steps,
        learning_rate,
        first_order=first_order,
    )
    return mse(FUNCTIONAL(adapted, QUERY[0]), QUERY[1])


def test_second_order_meta_gradient_matches_scipy_in_every_mode():
    check_grads(query_loss_after_adaptation, (THETA,), order=1, rtol=1e-6)


def test_first_order_differs_by_exactly_the_dropped_hessian_term(run):
    alpha = 0.1
    support_loss = lambda theta: mse(FUNCTIONAL(unflatten(theta), SUPPORT[0]), SUPPORT[1])
    maml = run(hodiff.grad(lambda t: query_loss_after_adaptation(t, steps=1, learning_rate=alpha)), THETA)
    fomaml = run(
        hodiff.grad(lambda t: query_loss_after_adaptation(t, first_order=True, steps=1, learning_rate=alpha)), THETA
    )
    adapted = THETA - alpha * hodiff.grad(support_loss)(THETA)
    query_gradient = hodiff.grad(lambda t: mse(FUNCTIONAL(unflatten(t), QUERY[0]), QUERY[1]))(adapted)
    # MAML = (I - alpha H_support) g_query; FOMAML = g_query
    dropped = alpha * hodiff.hvp(support_loss, THETA, query_gradient)
    assert_close(np.asarray(fomaml) - np.asarray(maml), dropped, rtol=1e-10, atol=1e-13)
    assert np.abs(dropped).max() > 1e-3, "the Hessian term is not negligible here"


def task_batch(tasks=3, dtype=np.float64):
    rng = np.random.default_rng(1)
    amplitude, phase = rng.uniform(0.5, 2, (tasks, 1, 1)), rng.uniform(0, np.pi, (tasks, 1, 1))
    xs, xq = rng.uniform(-3, 3, (tasks, 5, 1)), rng.uniform(-3, 3, (tasks, 7, 1))
    return [tf.constant(a, dtype) for a in (xs, amplitude * np.sin(xs - phase), xq, amplitude * np.sin(xq - phase))]


@pytest.mark.parametrize("variant", ["maml", "fomaml", "meta_sgd", "maml++", "anil"])
def test_meta_learner_gradient_is_the_mean_of_task_gradients_and_agrees_across_modes(variant):
    batch = task_batch()
    results = {}
    for mode in ("eager", "graph", "xla"):
        learner = MetaLearner(
            small_model(), mse, variant=variant, inner_steps=2, inner_learning_rate=0.05, jit_compile=False
        )
        results[mode] = in_mode(learner._meta_gradients, mode)(*batch)
    for mode in ("graph", "xla"):
        for a, b in zip(results["eager"][1], results[mode][1]):
            assert_close(b, a, rtol=1e-10, atol=1e-12)
    learner = MetaLearner(small_model(), mse, variant=variant, inner_steps=2, inner_learning_rate=0.05)
    loss, grads, extras = learner._meta_gradients(*batch)
    per_task = []
    for index in range(3):
        with tf.GradientTape() as tape:
            task_loss, _ = learner.adapted_query_loss(learner.functional.parameters(), *[b[index] for b in batch])
        per_task.append(
            tape.gradient(task_loss, learner.functional.variables + learner.learned_rates, unconnected_gradients="zero")
        )
    for g, *task_grads in zip(grads, *per_task):
        assert_close(g, np.mean(task_grads, axis=0), rtol=1e-12, atol=1e-14)
    if variant in ("meta_sgd", "maml++"):
        assert all(np.abs(g).max() > 0 for g in grads[len(learner.functional.variables) :]), (
            "learned rates get gradients"
        )
    if variant == "anil":
        before = [v.numpy().copy() for v in learner.functional.variables]
        adapted, _ = learner.adapt_parameters(batch[0][0], batch[1][0], steps=3)
        assert np.array_equal(adapted[0].numpy(), before[0]) and not np.array_equal(adapted[-1].numpy(), before[-1])


def test_meta_step_trains_and_recompute_gives_the_same_gradient():
    batch = task_batch(4, np.float32)
    learner = MetaLearner(
        small_model("float32"),
        mse,
        inner_steps=3,
        inner_learning_rate=0.05,
        outer_optimizer=keras.optimizers.Adam(1e-2),
    )
    first = float(learner.meta_step(*batch)["loss"])
    for _ in range(30):
        outputs = learner.meta_step(*batch)
    assert float(outputs["loss"]) < first and "support_loss" in outputs
    plain = MetaLearner(small_model(), mse, inner_steps=3, jit_compile=False)._meta_gradients(*task_batch())
    recomputed = MetaLearner(small_model(), mse, inner_steps=3, recompute=True, jit_compile=False)._meta_gradients(
        *task_batch()
    )
    for a, b in zip(plain[1], recomputed[1]):
        assert_close(b, a, rtol=1e-10, atol=1e-12)


def test_batch_norm_is_an_error_or_normalises_with_the_evaluated_batch():
    keras.utils.set_random_seed(0)
    model = keras.Sequential(
        [keras.Input((1,)), keras.layers.Dense(4), keras.layers.BatchNormalization(), keras.layers.Dense(1)]
    )
    with pytest.raises(ValueError, match="running statistics.*batch_statistics=True"):
        FunctionalModel(model)
    kernel, bias, gamma, beta, kernel2, bias2 = (
        RNG.normal(size=shape) for shape in [(1, 4), (4,), (4,), (4,), (4, 1), (1,)]
    )
    mean, variance = np.full(4, 0.5), np.full(4, 2.0)  # running averages
    model.set_weights([w.astype("float32") for w in (kernel, bias, gamma, beta, mean, variance, kernel2, bias2)])
    functional = FunctionalModel(model, batch_statistics=True)
    moving = [v.numpy().copy() for v in model.non_trainable_variables]
    x = tf.constant(RNG.normal(2.0, 3.0, (8, 1)), tf.float32)
    hidden = x.numpy() @ kernel + bias
    layer = model.layers[1]
    normalised = (hidden - hidden.mean(0)) / np.sqrt(hidden.var(0) + layer.epsilon) * gamma + beta
    assert_close(functional(functional.parameters(), x), normalised @ kernel2 + bias2, rtol=1e-4, atol=1e-5)
    with_running_averages = ((hidden - mean) / np.sqrt(variance + layer.epsilon) * gamma + beta) @ kernel2 + bias2
    assert np.abs(with_running_averages - functional(functional.parameters(), x).numpy()).max() > 0.1
    y = tf.constant(RNG.normal(size=(8, 1)), tf.float32)
    adapted, _ = inner_loop(lambda p: mse(functional(p, x), y), functional.parameters(), 2, 0.1)
    assert all(np.array_equal(a, v.numpy()) for a, v in zip(moving, model.non_trainable_variables)), (
        "running averages untouched"
    )
    # the inner steps themselves normalise with the batch's statistics: two plain gradient steps by hand
    expected = functional.parameters()
    for _ in range(2):
        with tf.GradientTape() as tape:
            tape.watch(expected)
            loss = mse(functional(expected, x), y)
        expected = [p - 0.1 * g for p, g in zip(expected, tape.gradient(loss, expected))]
    for got, want in zip(adapted, expected):
        assert_close(got, want, rtol=1e-5, atol=1e-6)
    assert not np.allclose(adapted[0].numpy(), functional.parameters()[0].numpy()), "the kernel was adapted"
    hidden_after = x.numpy() @ adapted[0].numpy() + adapted[1].numpy()
    after = (hidden_after - hidden_after.mean(0)) / np.sqrt(hidden_after.var(0) + layer.epsilon)
    after = (after * adapted[2].numpy() + adapted[3].numpy()) @ adapted[4].numpy() + adapted[5].numpy()
    assert_close(functional(adapted, x), after, rtol=1e-4, atol=1e-5)


def test_bad_input():
    functional = FunctionalModel(small_model())
    with pytest.raises(ValueError, match="got 3 parameter tensors for 4 parameters"):
        functional(functional.parameters()[:3], SUPPORT[0])
    with pytest.raises(ValueError, match="different orders"):
        functional(functional.parameters()[::-1], SUPPORT[0])
    with pytest.raises(ValueError, match="no weights yet"):
        FunctionalModel(keras.Sequential([keras.layers.Dense(1)]))
    with pytest.raises(ValueError, match="steps must be an int >= 0"):
        inner_loop(lambda p: mse(functional(p, SUPPORT[0]), SUPPORT[1]), functional.parameters(), -1, 0.1)
    with pytest.raises(ValueError, match="exactly one of loss_fn"):
        MetaLearner(small_model())
    with pytest.raises(ValueError, match="variant 'reptile'"):
        MetaLearner(small_model(), mse, variant="reptile")
    learner = MetaLearner(small_model(), mse, jit_compile=False)
    xs, ys, xq, yq = task_batch()
    with pytest.raises(ValueError, match="differing numbers of tasks"):
        learner.meta_step(xs, ys, xq[:2], yq[:2])
    with pytest.raises(ValueError, match="leading task axis"):
        learner.meta_step(xs[0, :, 0], ys, xq, yq)


def test_task_batch_without_a_task_axis_or_without_tasks_is_an_error():
    learner = MetaLearner(small_model(), mse)
    xs, ys, xq, yq = task_batch()
    with pytest.raises(ValueError, match=r"support_x has shape \(5, 1\).*inputs of rank 2.*rank 3.*support_x\[None\]"):
        learner.meta_step(xs[0], ys[0], xq[0, :5], yq[0, :5])  # 5 "tasks" of one example each
    with pytest.raises(ValueError, match="zero tasks"):
        learner.meta_step(xs[:0], ys[:0], xq[:0], yq[:0])
    assert int(learner.step.optimizer.iterations) == 0
    assert np.isfinite(float(learner.meta_step(xs[:1], ys[:1], xq[:1], yq[:1])["loss"])), "one task is fine"


def test_functional_model_has_one_call_path():
    model = small_model()
    keras_functional = FunctionalModel(model)
    assert_close(keras_functional.function(keras_functional.parameters(), SUPPORT[0]), model(SUPPORT[0]), rtol=1e-15)
    f = lambda p, x: x @ p[0] + p[1]
    plain = FunctionalModel(f, parameters=[tf.ones((1, 1), tf.float64), tf.zeros(1, tf.float64)])
    assert plain.function is f and plain.input_rank() is None and keras_functional.input_rank() == 2


def mixed_twin(model):
    """A mixed_float16 copy of a float32 model (float32 variables, float16 compute)."""
    twin = keras.Sequential(
        [
            keras.Input((1,)),
            keras.layers.Dense(4, activation="tanh", dtype="mixed_float16"),
            keras.layers.Dense(1, dtype="mixed_float16"),
        ]
    )
    twin.set_weights(model.get_weights())
    return twin


def test_inner_loop_loss_scale_keeps_float16_inner_gradients(run):
    reference = FunctionalModel(small_model("float32"))
    mixed = FunctionalModel(mixed_twin(reference.model))
    x, y = (tf.cast(t, tf.float32) for t in SUPPORT)
    tiny = lambda f: lambda p: 1e-8 * mse(tf.cast(f(p, x), tf.float32), y)  # gradients ~1e-9 underflow in float16

    def adapted(f, loss_scale):
        params, losses = inner_loop(tiny(f), f.parameters(), 1, 1e6, loss_scale=loss_scale)
        return params, losses

    expected, _ = run(lambda: adapted(reference, None))
    lost, _ = run(lambda: adapted(mixed, None))
    kept, losses = run(lambda: adapted(mixed, tf.constant(2.0**15)))
    assert all(np.array_equal(a, b) for a, b in zip(lost, mixed.parameters())), "without scaling the inner step is lost"
    assert all(p.dtype == tf.float32 for p in kept) and losses.dtype == tf.float32
    moved = [e.numpy() - p.numpy() for e, p in zip(expected, reference.parameters())]
    for k, p, m in zip(kept, mixed.parameters(), moved):
        assert np.abs(m).max() > 1e-3
        assert_close(k.numpy() - p.numpy(), m, rtol=2e-2, atol=2e-2 * np.abs(m).max())


def test_mixed_float16_model_meta_trains_with_loss_scaling():
    batch = task_batch(4, np.float32)
    reference = MetaLearner(small_model("float32"), mse, inner_steps=2, inner_learning_rate=0.05, jit_compile=False)
    expected = reference._meta_gradients(*batch)[1]
    optimizer = keras.optimizers.LossScaleOptimizer(keras.optimizers.Adam(1e-2), initial_scale=2.0**12)
    learner = MetaLearner(
        mixed_twin(reference.functional.model), mse, inner_steps=2, inner_learning_rate=0.05, outer_optimizer=optimizer
    )
    for g, e in zip(learner._meta_gradients(*batch)[1], expected):  # gradients of the scaled query loss
        assert_close(g.numpy() / 2.0**12, e, rtol=5e-2, atol=5e-3 * np.abs(e).max())
    # from Keras's default scale: steps whose scaled second-order gradients overflow are skipped
    # and halve the scale, then it trains
    optimizer = keras.optimizers.LossScaleOptimizer(keras.optimizers.Adam(1e-2))
    learner = MetaLearner(
        mixed_twin(reference.functional.model), mse, inner_steps=2, inner_learning_rate=0.05, outer_optimizer=optimizer
    )
    outputs = [learner.meta_step(*batch) for _ in range(30)]
    applied = [bool(o["applied"]) for o in outputs]
    assert sum(applied) >= 25 and int(optimizer.iterations) == sum(applied)
    assert float(optimizer.dynamic_scale.numpy()) == 2.0 ** (15 - (30 - sum(applied)))
    losses = [float(o["loss"]) for o in outputs]
    assert outputs[-1]["loss"].dtype == tf.float32 and losses[-1] < 0.8 * losses[applied.index(True)]
    assert all(v.dtype == "float32" for v in learner.functional.variables)


def test_monitor_off_leaves_the_statistics_out_and_trains_the_same():
    x = tf.constant(RNG.uniform(-2, 2, (3, 6, 1)))
    batch = (x, tf.sin(x), x + 0.5, tf.sin(x + 0.5))
    learners = [
        MetaLearner(small_model(), mse, inner_learning_rate=0.1, jit_compile=False, monitor=monitor)
        for monitor in (True, False)
    ]
    outputs = [learner.meta_step(*batch) for learner in learners]
    assert "gradient_stats" in outputs[0] and "gradient_stats" not in outputs[1]
    assert_close(outputs[1]["loss"], outputs[0]["loss"], rtol=1e-12)
    for a, e in zip(learners[1].step.variables_, learners[0].step.variables_):
        assert_close(a, e, rtol=1e-12, atol=1e-15, what="weights after one meta-step without the monitor")
