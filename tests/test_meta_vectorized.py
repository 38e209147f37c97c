"""hodiff.meta_vectorized: per-task functions vectorised over the task axis (pfor), the same values
and second-order gradients as the pairs written out one by one, and no per-pair copies under XLA."""

import numpy as np
import pytest
import tensorflow as tf

import hodiff.meta_vectorized as meta_vectorized
from hodiff.checks import assert_close, in_mode
from hodiff.meta_vectorized import map_pairs

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
