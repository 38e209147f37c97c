"""Gradient statistics computed inside the graph, so they work under XLA.

``tf.debugging.check_numerics`` is not compilable by XLA (tensorflow issues 59215, 117319);
counting NaN/Inf entries with ordinary reductions is, and it tells more: where and how many.
:func:`gradient_stats` returns a dict of tensors from inside a compiled step;
:func:`format_stats` prints it as a table and :func:`write_summaries` sends it to TensorBoard,
both outside compiled code.

Example:
  ```python
  import tensorflow as tf
  from hodiff.training.monitor import format_stats, gradient_stats

  w, b, unused = tf.Variable([[1.0], [2.0]]), tf.Variable([0.0]), tf.Variable(1.0)
  grads = [tf.constant([[3.0], [float("nan")]]), tf.constant([4.0]), None]
  stats = tf.function(gradient_stats, jit_compile=True)(grads)
  assert int(stats["nan_count"]) == 1 and stats["missing"].numpy().tolist() == [False, False, True]
  print(format_stats(stats, names=["w", "b", "unused"]))
  ```
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import tensorflow as tf

__all__ = ["gradient_stats", "format_stats", "write_summaries"]


def gradient_stats(grads: Sequence[Any]) -> dict[str, tf.Tensor]:
    """Statistics of a list of gradients, one entry per variable (``None`` = no gradient).

    Non-finite entries are counted, and left out of the norms and magnitudes so that one NaN
    does not hide the size of everything else.

    Args:
      grads: gradients as returned by ``tape.gradient(loss, variables)``.

    Returns:
      A dict of tensors: ``global_norm`` (scalar), ``norms`` (one per variable, 0 where
      missing), ``mean_abs`` and ``max_abs`` (over all finite entries), ``nan_count`` and
      ``inf_count`` (int64), ``missing`` (bool per variable: the loss did not reach it).
    """
    dtype = _dtype(grads)
    present = [tf.cast(g, dtype) for g in grads if g is not None]
    squares = tf.stack([tf.reduce_sum(tf.square(g)) for g in present]) if present else tf.zeros((0,), dtype)
    # A NaN or Inf entry makes its sum of squares non-finite; only then pay for the masked
    # statistics and the counts (extra passes over every gradient).
    stats = tf.cond(
        tf.reduce_all(tf.math.is_finite(squares)),
        lambda: _statistics(present, squares, masked=False),
        lambda: _statistics(present, squares, masked=True),
    )
    squares = iter(tf.unstack(stats.pop("squares"), num=len(present)))
    norms = (
        tf.stack([tf.zeros((), dtype) if g is None else tf.sqrt(next(squares)) for g in grads])
        if grads
        else tf.zeros((0,), dtype)
    )
    return {
        "global_norm": tf.sqrt(tf.reduce_sum(tf.square(norms))),
        "norms": norms,
        **stats,
        "missing": tf.constant([g is None for g in grads], tf.bool, shape=(len(grads),)),
    }


def _dtype(grads: Sequence[Any]) -> tf.DType:
    present = [tf.convert_to_tensor(g) for g in grads if g is not None]
    return present[0].dtype if present else tf.float32


def _statistics(grads: list, squares: tf.Tensor, masked: bool) -> dict[str, tf.Tensor]:
    """Sums of squares per gradient, mean/max magnitude and NaN/Inf counts over all of them.

    With ``masked``, non-finite entries are counted and left out of the sums; otherwise every
    entry is finite, ``squares`` is already right and counting is skipped.
    """
    dtype = squares.dtype
    magnitudes = [tf.where(tf.math.is_finite(g), tf.abs(g), tf.zeros_like(g)) if masked else tf.abs(g) for g in grads]
    sizes = [
        tf.reduce_sum(tf.cast(tf.math.is_finite(g), dtype)) if masked else tf.cast(tf.size(g), dtype) for g in grads
    ]
    count = lambda test: (
        tf.add_n([tf.math.count_nonzero(test(g), dtype=tf.int64) for g in grads])
        if masked and grads
        else tf.zeros((), tf.int64)
    )
    total = lambda values: tf.add_n(values) if values else tf.zeros((), dtype)
    return {
        "squares": tf.stack([tf.reduce_sum(tf.square(m)) for m in magnitudes]) if masked and grads else squares,
        "mean_abs": total([tf.reduce_sum(m) for m in magnitudes]) / tf.maximum(total(sizes), 1.0),
        "max_abs": tf.reduce_max(tf.stack([tf.reduce_max(m) for m in magnitudes])) if grads else tf.zeros((), dtype),
        "nan_count": count(tf.math.is_nan),
        "inf_count": count(tf.math.is_inf),
    }


def _names(stats: dict, names: Sequence[Any] | None) -> list[str]:
    count = int(np.shape(stats["norms"])[0])
    if names is None:
        return [f"var{i}" for i in range(count)]
    labels = [getattr(n, "path", None) or getattr(n, "name", n) for n in names]
    if len(labels) != count:
        raise ValueError(
            f"format_stats: got {len(names)} names for {count} gradients; pass one name (or variable) per gradient."
        )
    return [str(label) for label in labels]


def format_stats(stats: dict[str, Any], names: Sequence[Any] | None = None) -> str:
    """A readable table of :func:`gradient_stats` output.

    Args:
      stats: the dict returned by :func:`gradient_stats` (tensors or numpy values).
      names: one name (or variable, whose ``path``/``name`` is used) per gradient.

    Returns:
      A multi-line string: a summary line, then one row per variable.
    """
    values = {key: np.asarray(value) for key, value in stats.items()}
    rows = [
        f"global norm {values['global_norm']:.4g}   mean |g| {values['mean_abs']:.4g}   "
        f"max |g| {values['max_abs']:.4g}   NaN {int(values['nan_count'])}   Inf {int(values['inf_count'])}",
    ]
    labels = _names(stats, names)
    width = max([8] + [len(label) for label in labels])
    rows.append(f"{'variable':<{width}}  {'norm':>11}")
    for label, norm, missing in zip(labels, values["norms"], values["missing"]):
        rows.append(f"{label:<{width}}  {'no gradient' if missing else f'{norm:11.4g}':>11}")
    return "\n".join(rows)


def write_summaries(
    stats: dict[str, Any],
    step: int,
    writer: tf.summary.SummaryWriter,
    names: Sequence[Any] | None = None,
    prefix: str = "gradients",
) -> None:
    """Writes :func:`gradient_stats` output as TensorBoard scalars (call outside XLA).

    Args:
      stats: the dict returned by :func:`gradient_stats`.
      step: the training step to record.
      writer: e.g. ``tf.summary.create_file_writer(logdir)``.
      names: one name (or variable) per gradient, for the per-variable norms.
      prefix: tag prefix.
    """
    with writer.as_default(step=int(step)):
        for key in ("global_norm", "mean_abs", "max_abs", "nan_count", "inf_count"):
            tf.summary.scalar(f"{prefix}/{key}", tf.cast(stats[key], tf.float32))
        for label, norm, missing in zip(_names(stats, names), np.asarray(stats["norms"]), np.asarray(stats["missing"])):
            if not missing:
                tf.summary.scalar(f"{prefix}/norm/{label}", float(norm))
    writer.flush()
