"""The fast paths of meta-training: per-task functions vectorised over the task axis (pfor) give the
values and second-order gradients of the pairs written out one by one, with no per-pair copies
under XLA; several meta-iterations per compiled call equal one call per iteration (float64)."""

import keras
import numpy as np
import pytest
import tensorflow as tf
from helpers.meta_fixtures import small_model

import hodiff.meta.vectorized as meta_vectorized
from hodiff.checks import assert_close, in_mode
from hodiff.meta import MetaLearner
from hodiff.meta.vectorized import map_pairs

RNG = np.random.default_rng(3)
A, B = tf.constant(RNG.normal(size=(5, 4, 1))), tf.constant(RNG.normal(size=(5, 4, 1)))
W = tf.constant(RNG.normal(size=(5, 1, 1)))
mse = lambda prediction, target: tf.reduce_mean((prediction - target) ** 2)


def loss_and_second_derivatives(mapper):
    """Per-pair losses of ``A * w`` and the gradient of a function of their first derivatives
    (second order, as an inner step inside a meta-gradient)."""

    def fn(w):
        with tf.GradientTape() as outer:
            outer.watch(w)
            with tf.GradientTape() as inner:
                inner.watch(w)
                losses = mapper(mse, A * w, B)
                total = tf.reduce_sum(losses)
            first = inner.gradient(total, w)
            objective = tf.reduce_sum(tf.sin(first) * losses)
        return losses, outer.gradient(objective, w)

    return fn


def written_out(fn, a, b):
    return tf.stack([fn(a[i], b[i]) for i in range(a.shape[0])])


@pytest.mark.parametrize("mode", ["eager", "graph", "xla"])
def test_map_pairs_equals_the_pairs_written_out_to_second_order(mode):
    expected = loss_and_second_derivatives(written_out)(W)
    actual = in_mode(loss_and_second_derivatives(map_pairs), mode)(W)
    for a, e in zip(actual, expected):
        assert_close(a, e, rtol=1e-12, atol=1e-14, what=f"map_pairs ({mode})")


def op_types(function, *args):
    return [node.op for node in function.get_concrete_function(*args).graph.as_graph_def().node]


def test_map_pairs_under_xla_is_batched_ops_without_a_function_call():
    """One traced copy of the loss whatever the number of pairs, and no function-call op (across
    one, XLA made the inputs compile-time constants and recompiled at every update)."""
    counts = {}
    for pairs in (3, 30):
        a, b = tf.zeros((pairs, 4, 1)), tf.ones((pairs, 4, 1))
        function = tf.function(lambda a, b: map_pairs(mse, a, b), jit_compile=True)
        ops = op_types(function, a, b)
        assert not [op for op in ops if "Call" in op], ops
        counts[pairs] = len(ops)
        np.testing.assert_allclose(function(a, b).numpy(), np.ones(pairs))
    assert counts[3] == counts[30]


def test_map_pairs_writes_the_pairs_out_where_pfor_cannot_vectorise(monkeypatch):
    def refuse(loop_fn, count):
        raise ValueError("no pfor rule")

    monkeypatch.setattr(meta_vectorized, "_pfor_without_function", lambda: refuse)
    function = tf.function(lambda a, b: map_pairs(mse, a, b), jit_compile=True)
    assert op_types(function, A, B).count("Mean") == 5  # one loss per pair
    assert_close(function(A, B), written_out(mse, A, B), rtol=1e-12)


def task_batches(steps, tasks=3, support=5, query=4, seed=4):
    rng = np.random.default_rng(seed)
    amplitude, phase = rng.uniform(0.5, 2, (steps, tasks, 1, 1)), rng.uniform(0, np.pi, (steps, tasks, 1, 1))
    xs, xq = rng.uniform(-3, 3, (steps, tasks, support, 1)), rng.uniform(-3, 3, (steps, tasks, query, 1))
    return [tf.constant(a) for a in (xs, amplitude * np.sin(xs - phase), xq, amplitude * np.sin(xq - phase))]


@pytest.mark.parametrize("jit_compile", [False, True])
@pytest.mark.parametrize("vectorize", [False, True])
def test_steps_per_call_equals_one_call_per_meta_iteration(jit_compile, vectorize):
    batches = task_batches(3)
    learners = [
        MetaLearner(
            small_model(),
            mse,
            variant="meta_sgd",
            inner_optimizer="adam",
            inner_steps=2,
            inner_learning_rate=0.05,
            outer_optimizer=keras.optimizers.Adam(0.01),
            jit_compile=jit_compile,
            vectorize=vectorize,
            steps_per_call=steps,
        )
        for steps in (1, 3)
    ]
    one_by_one = [float(learners[0].meta_step(*[b[i] for b in batches])["loss"]) for i in range(3)]
    outputs = learners[1].meta_step(*batches)
    assert_close(outputs["losses"], one_by_one, rtol=1e-10)
    for a, e in zip(learners[1].step.variables_, learners[0].step.variables_):
        assert_close(a, e, rtol=1e-10, atol=1e-13, what="weights after three meta-iterations")
    with pytest.raises(ValueError, match="steps_per_call=3, support_x needs a leading axis"):
        learners[1].meta_step(*[b[:2] for b in batches])


def test_first_inner_step_multiplies_the_shared_kernels_over_all_tasks_at_once():
    """MAML's first inner step runs the shared weights on every task's examples with one plain
    matmul per layer (JAX's vmap with unbatched parameters); later steps are batched matmuls.
    The meta-gradient equals the task loop's (second order, float64)."""
    batch = task_batches(1, tasks=4)
    batch = [b[0] for b in batch]
    learners = {
        vectorize: MetaLearner(small_model(), mse, inner_steps=2, inner_learning_rate=0.1, vectorize=vectorize)
        for vectorize in (True, False)
    }
    function = tf.function(learners[True]._meta_gradients, jit_compile=True)
    ops = op_types(function, *batch)
    assert ops.count("MatMul") >= 2 and ops.count("BatchMatMulV2") >= 2, sorted(set(ops))
    expected = learners[False]._meta_gradients(*batch)
    for a, e in zip(function(*batch)[1], expected[1]):
        assert_close(a, e, rtol=1e-10, atol=1e-13, what="vectorised meta-gradient (XLA)")


def test_meta_steps_on_fresh_task_batches_trace_once_and_equal_the_tf_function():
    """One ``meta_step`` call per meta-iteration, each on a newly sampled task batch (as users call
    it): one trace and one compiled function for all of them, and the same second-order
    meta-updates as calling the step's ``tf.function`` (float64, XLA)."""
    learners = [
        MetaLearner(small_model(), mse, inner_learning_rate=0.1, outer_optimizer=keras.optimizers.Adam(0.01))
        for _ in range(2)
    ]
    losses = []
    for seed in range(3):
        batch = [b[0] for b in task_batches(1, seed=seed)]
        losses.append(float(learners[0].meta_step(*batch)["loss"]))
        assert_close(losses[-1], learners[1].step._compiled(*batch)["loss"], rtol=1e-12)
    for a, e in zip(learners[0].step.variables_, learners[1].step.variables_):
        assert_close(a, e, rtol=1e-12, atol=1e-15, what="weights after three meta-iterations")
    assert learners[0].step._compiled.experimental_get_tracing_count() == 1 and len(learners[0].step._signatures) == 1
    assert len(set(losses)) == 3
