"""Merging the gradients of several tasks (losses) into one update.

Each function takes ``task_grads``: one list of gradients per task, every list over the same
variables (``None`` entries count as zeros), and returns one merged list of gradients. The
merge sees the whole parameter vector at once (the gradients of a task are flattened and
concatenated), as the papers define it.

Example:
  ```python
  import tensorflow as tf
  from hodiff.training.multitask import pcgrad

  g1 = [tf.constant([1.0, 0.0])]
  g2 = [tf.constant([-1.0, 1.0])]                  # conflicts with g1
  merged = pcgrad([g1, g2], seed=0)
  assert all(float(tf.reduce_sum(merged[0] * g[0])) >= 0 for g in (g1, g2))
  ```
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import tensorflow as tf

from hodiff import _validate

__all__ = ["weighted_sum", "pcgrad", "mgda"]


def _flatten_tasks(task_grads: Sequence[Sequence[Any]], caller: str) -> tuple[tf.Tensor, list]:
    """Stacks each task's gradients into one row: returns (tasks x parameters, template)."""
    task_grads = [list(g) for g in task_grads]
    if len(task_grads) < 1:
        raise ValueError(f"{caller}: task_grads is empty; pass one list of gradients per task.")
    counts = {len(g) for g in task_grads}
    if len(counts) != 1:
        raise ValueError(
            f"{caller}: every task must give one gradient per variable, but the lists have lengths {sorted(counts)}; "
            "compute each with tape.gradient(task_loss, variables) over the same variables."
        )
    template = []
    for position in range(len(task_grads[0])):
        present = [tf.convert_to_tensor(g[position]) for g in task_grads if g[position] is not None]
        template.append(present[0] if present else None)
        for g in present:
            if not g.dtype.is_floating:
                raise TypeError(
                    f"{caller}: gradient {position} has dtype {g.dtype.name}; gradients must be floating point."
                )
            if g.shape != present[0].shape:
                raise ValueError(
                    f"{caller}: the tasks' gradients for variable {position} have different shapes "
                    f"{tuple(present[0].shape)} and {tuple(g.shape)}; every task list must follow the same variable "
                    "order."
                )
    if all(t is None for t in template):
        raise ValueError(f"{caller}: every gradient of every task is None; no task loss depends on the variables.")
    dtype = next(t.dtype for t in template if t is not None)
    rows = []
    for g in task_grads:
        parts = [
            tf.reshape(tf.cast(x, dtype) if x is not None else tf.zeros_like(t, dtype), [-1])
            for x, t in zip(g, template)
            if t is not None
        ]
        rows.append(tf.concat(parts, axis=0))
    return tf.stack(rows), template


def _unflatten(vector: tf.Tensor, template: list) -> list:
    result: list = []
    offset = 0
    for t in template:
        if t is None:
            result.append(None)
            continue
        size = t.shape.num_elements()
        result.append(tf.cast(tf.reshape(vector[offset : offset + size], t.shape), t.dtype))
        offset += size
    return result


def weighted_sum(task_grads: Sequence[Sequence[Any]], weights: Sequence[float] | None = None) -> list:
    """``sum_i weights[i] * task_grads[i]``: the gradient of the weighted total loss.

    Args:
      task_grads: one list of gradients per task.
      weights: one weight per task; default all 1.

    Returns:
      The merged list of gradients.
    """
    matrix, template = _flatten_tasks(task_grads, "weighted_sum")
    count = int(matrix.shape[0])
    factors = tf.ones([count], matrix.dtype) if weights is None else _validate.constant(weights, matrix.dtype)
    if factors.shape != (count,):
        raise ValueError(
            f"weighted_sum: got {factors.shape.num_elements()} weights for {count} tasks; pass one weight per task."
        )
    return _unflatten(tf.linalg.matvec(matrix, factors, transpose_a=True), template)


def pcgrad(task_grads: Sequence[Sequence[Any]], seed: Any) -> list:
    """PCGrad: project each task's gradient off the gradients it conflicts with, then sum.

    For each task ``i``, for the other tasks ``j`` in a random order: if ``g_i . g_j < 0``,
    ``g_i -= (g_i . g_j) / |g_j|^2 g_j``. The order is a permutation drawn statelessly from
    ``seed``; pass the step number (e.g. ``optimizer.iterations``) so that it changes every
    step, as the paper prescribes. With two tasks the result never has a negative inner
    product with either task's gradient.

    Args:
      task_grads: one list of gradients per task.
      seed: int or scalar int tensor selecting the task order.

    Returns:
      The merged list of gradients (the sum of the projected task gradients).

    References:
      Yu, Kumar, Gupta, Levine, Hausman & Finn (2020), "Gradient surgery for multi-task
      learning", NeurIPS, Algorithm 1.
    """
    matrix, template = _flatten_tasks(task_grads, "pcgrad")
    count = int(matrix.shape[0])
    seed = tf.stack([tf.cast(seed, tf.int64), tf.constant(0x9C, tf.int64)])
    order = tf.argsort(tf.random.stateless_uniform([count], seed=seed))
    squared_norms = tf.reduce_sum(matrix * matrix, axis=1)
    projected = []
    for i in range(count):
        g = matrix[i]
        for position in range(count):
            j = order[position]
            other = tf.gather(matrix, j)
            dot = tf.reduce_sum(g * other)
            conflict = tf.logical_and(tf.not_equal(j, i), dot < 0)
            g = tf.where(conflict, g - tf.math.divide_no_nan(dot, tf.gather(squared_norms, j)) * other, g)
        projected.append(g)
    return _unflatten(tf.add_n(projected), template)


def mgda(task_grads: Sequence[Sequence[Any]], iterations: int = 1000) -> list:
    """MGDA: the minimum-norm point of the convex hull of the task gradients.

    The result ``d = sum_i w_i g_i`` (``w`` on the simplex) satisfies ``d . g_i >= |d|^2 >= 0``
    for every task at the optimum, so a small step along ``-d`` decreases no task loss;
    ``d = 0`` means the point is Pareto-stationary. ``w`` is found by Frank-Wolfe with exact
    line search on the tasks' Gram matrix (exact in one step for two tasks; the duality gap
    shrinks at least like 1/iterations, and each iteration costs only tasks^2 flops).

    Args:
      task_grads: one list of gradients per task.
      iterations: Frank-Wolfe iterations.

    Returns:
      The merged list of gradients.

    References:
      Désidéri (2012), "Multiple-gradient descent algorithm (MGDA) for multiobjective
      optimization"; Sener & Koltun (2018), "Multi-task learning as multi-objective
      optimization", NeurIPS, Algorithm 2.
    """
    if not isinstance(iterations, int) or iterations < 1:
        raise ValueError(f"mgda: iterations must be an int >= 1, got {iterations!r}.")
    matrix, template = _flatten_tasks(task_grads, "mgda")
    count = int(matrix.shape[0])
    gram = tf.matmul(matrix, matrix, transpose_b=True)
    weights = tf.fill([count], tf.cast(1.0 / count, matrix.dtype))

    def frank_wolfe_step(weights: tf.Tensor) -> tf.Tensor:
        gram_w = tf.linalg.matvec(gram, weights)
        vertex = tf.argmin(gram_w)
        current = tf.reduce_sum(weights * gram_w)  # |d|^2
        toward = tf.gather(gram_w, vertex)  # d . g_vertex
        distance = current - 2.0 * toward + tf.gather(tf.linalg.diag_part(gram), vertex)
        step = tf.clip_by_value(tf.math.divide_no_nan(current - toward, distance), 0.0, 1.0)
        return (1.0 - step) * weights + step * tf.one_hot(vertex, count, dtype=matrix.dtype)

    (weights,) = tf.while_loop(
        lambda w: True, lambda w: (frank_wolfe_step(w),), (weights,), maximum_iterations=iterations
    )
    return _unflatten(tf.linalg.matvec(matrix, weights, transpose_a=True), template)
