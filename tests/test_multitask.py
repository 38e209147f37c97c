"""Multi-task merging: PCGrad and MGDA against numpy and their promises on conflicting tasks."""

import itertools

import numpy as np
import pytest
import tensorflow as tf

from hodiff.checks import assert_close
from hodiff.training import multitask

RNG = np.random.default_rng(3)
# Three tasks over two variables (shapes (2, 2) and (3,)), pairwise conflicting.
TASKS = [[tf.constant(RNG.normal(size=(2, 2))), tf.constant(RNG.normal(size=3))] for _ in range(3)]
TASKS[1] = [-0.7 * TASKS[0][0] + 0.3, -0.5 * TASKS[0][1]]


def flat(grads):
    return np.concatenate([np.ravel(g) for g in grads])


def numpy_pcgrad(vectors, order):
    merged = []
    for i, g in enumerate(vectors):
        g = g.copy()
        for j in order:
            dot = g @ vectors[j]
            if j != i and dot < 0:
                g -= dot / (vectors[j] @ vectors[j]) * vectors[j]
        merged.append(g)
    return np.sum(merged, axis=0)


def run_pcgrad(run, tasks, seed):
    count = len(tasks)
    return run(
        lambda s, *f: multitask.pcgrad([list(f[2 * i : 2 * i + 2]) for i in range(count)], s),
        tf.constant(seed, tf.int64),
        *[g for t in tasks for g in t],
    )


def test_pcgrad_matches_the_paper_for_the_drawn_order_and_the_order_changes(run):
    vectors = [flat(t) for t in TASKS]
    candidates = {order: numpy_pcgrad(vectors, order) for order in itertools.permutations(range(3))}
    seen = set()
    for seed in range(8):
        merged = flat(run_pcgrad(run, TASKS, seed))
        matches = [
            order for order, reference in candidates.items() if np.allclose(merged, reference, rtol=1e-12, atol=1e-12)
        ]
        assert matches, f"seed {seed}: PCGrad result matches no task order"
        seen.add(tuple(np.round(merged, 10)))
    assert len(seen) > 1, "the random task order must change the result between steps"


def test_pcgrad_two_conflicting_tasks_never_oppose_either(run):
    tasks = TASKS[:2]
    assert flat(tasks[0]) @ flat(tasks[1]) < 0
    merged = flat(run_pcgrad(run, tasks, 0))
    for task in tasks:
        assert merged @ flat(task) >= 0
    naive = flat(multitask.weighted_sum(tasks))
    assert min(naive @ flat(t) for t in tasks) < 0, "the plain sum conflicts with a task here"


@pytest.mark.parametrize("count", [2, 3])
def test_mgda_direction_has_no_negative_inner_product(run, count):
    tasks = TASKS[:count]
    merged = flat(
        run(
            lambda *f: multitask.mgda([list(f[2 * i : 2 * i + 2]) for i in range(count)]),
            *[g for t in tasks for g in t],
        )
    )
    norm2 = merged @ merged
    for task in tasks:
        assert merged @ flat(task) >= norm2 - 1e-6 * np.abs(flat(task)).max() ** 2
    # minimum norm over the hull: no vertex or random convex combination is shorter
    vectors = np.stack([flat(t) for t in tasks])
    for w in np.random.default_rng(0).dirichlet(np.ones(count), size=200):
        assert norm2 <= (w @ vectors) @ (w @ vectors) + 1e-9


def test_weighted_sum_and_none_gradients(run):
    tasks = [[tf.constant([1.0, 2.0]), None], [tf.constant([3.0, -1.0]), tf.constant(2.0)]]
    merged = multitask.weighted_sum(tasks, weights=[0.5, 2.0])
    assert_close(merged[0], [6.5, -1.0], rtol=1e-7)
    assert_close(merged[1], 4.0, rtol=1e-7)
    assert multitask.pcgrad([[None, tf.constant([1.0])], [None, tf.constant([2.0])]], seed=0)[0] is None


def test_bad_input():
    with pytest.raises(ValueError, match=r"lists have lengths \[1, 2\]"):
        multitask.pcgrad([[tf.ones(2)], [tf.ones(2), tf.ones(1)]], seed=0)
    with pytest.raises(ValueError, match="got 3 weights for 2 tasks"):
        multitask.weighted_sum([[tf.ones(2)], [tf.ones(2)]], weights=[1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="different shapes"):
        multitask.mgda([[tf.ones(2)], [tf.ones(3)]])
    with pytest.raises(TypeError, match="dtype int32; gradients must be floating point"):
        multitask.weighted_sum([[tf.constant([1, 2])]])
    with pytest.raises(ValueError, match="task_grads is empty"):
        multitask.mgda([])
