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

from collections.abc import Callable, Iterator, MutableMapping, Sequence
from typing import Any

import numpy as np
import tensorflow as tf

__all__ = ["GradientStats", "gradient_stats", "format_stats", "write_summaries"]

STATISTICS = ("global_norm", "norms", "mean_abs", "max_abs", "nan_count", "inf_count", "missing")


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


class GradientStats(MutableMapping):
    """:func:`gradient_stats` of the gradients a compiled step returned, computed when first read.

    A :class:`~hodiff.TrainStep` (and so :class:`~hodiff.meta.MetaLearner`) with ``monitor=True``
    returns its raw gradients, values the step has anyway, and this mapping over them under
    ``gradient_stats``: a step whose statistics are not read pays no kernel for them (on the
    sinusoid meta-step they were 13 fusions and a conditional of the compiled step, a fifth of a
    call under load), and reading any entry computes all of them once, with one compiled call
    of :func:`gradient_stats` (in the caller's graph when the step ran inside a ``tf.function``).
    The values are those :func:`gradient_stats` gives: the keys ``global_norm``, ``norms``,
    ``mean_abs``, ``max_abs``, ``nan_count``, ``inf_count`` and ``missing``. It holds the
    gradients until it is dropped (their memory: one more copy of the weights' size).

    Args:
      items: the statistics already computed, as a mapping or ``(key, value)`` pairs (how
        ``tf.nest`` rebuilds it); leave out with ``gradients``.
      gradients: the gradients of the variables that have one, in order.
      missing: one bool per variable: ``True`` where it has no gradient (``None`` in the list
        :func:`gradient_stats` takes).
      compute: ``compute(grads) -> dict``, :func:`gradient_stats` (default) or a compiled version of it.
      shapes: with ``gradients`` one tensor from :func:`packed`, the gradients' shapes: they are split from it
        when the statistics are read (one output of the compiled step instead of one per variable).

    Example:
      ```python
      import tensorflow as tf
      from hodiff.training.monitor import GradientStats, gradient_stats

      grads = [tf.constant([3.0, 4.0]), tf.constant([12.0])]
      stats = GradientStats(gradients=grads, missing=[False, True, False])
      assert not stats.computed and float(stats["global_norm"]) == 13.0 and stats.computed
      assert stats["missing"].numpy().tolist() == [False, True, False] and set(stats) == set(gradient_stats(grads))
      ```
    """

    def __init__(
        self,
        items: Any = (),
        *,
        gradients: Sequence[Any] | None = None,
        missing: Sequence[bool] = (),
        compute: Callable[[list], dict] | None = None,
        shapes: Sequence[tuple] | None = None,
    ):
        self._values: dict[str, Any] | None = None
        self._gradients: list = []
        self._flat: Any = None  # a packed tensor, split into _gradients when first read
        self._shapes = list(shapes or ())
        self._missing: list[bool] = []
        self._compute = compute or gradient_stats
        if gradients is None:
            self._values = dict(items)
            return
        if shapes is not None and not isinstance(gradients, (list, tuple)):
            self._flat, count = gradients, len(self._shapes)
        else:
            self._gradients = list(gradients)
            count = len(self._gradients)
        if sum(not m for m in missing) != count:
            raise ValueError(
                f"GradientStats: missing marks {sum(not m for m in missing)} variables with a gradient, but "
                f"{count} gradients were given; give one flag per variable, True where it has none."
            )
        self._missing = [bool(m) for m in missing]

    @property
    def computed(self) -> bool:
        """Whether the statistics have been computed (read) yet."""
        return self._values is not None

    @property
    def gradients(self) -> list:
        """The gradients, one per variable, ``None`` where a variable has none (as :func:`gradient_stats` takes)."""
        if self._flat is not None:
            sizes = [int(np.prod(shape)) for shape in self._shapes]
            pieces = tf.split(self._flat, sizes)
            self._gradients = [tf.reshape(p, shape) for p, shape in zip(pieces, self._shapes)]
            self._flat = None
        present = iter(self._gradients)
        return [None if missing else next(present) for missing in self._missing]

    def _all(self) -> dict[str, Any]:
        if self._values is None:
            self._values = dict(self._compute(self.gradients))
        return self._values

    def __getitem__(self, key: str) -> Any:
        return self._all()[key]

    def __setitem__(self, key: str, value: Any) -> None:
        self._all()[key] = value

    def __delitem__(self, key: str) -> None:
        del self._all()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(STATISTICS if self._values is None else self._values)

    def __len__(self) -> int:
        return len(STATISTICS if self._values is None else self._values)

    def __repr__(self) -> str:
        state = "computed" if self.computed else "not computed yet"
        return f"GradientStats({state}: {', '.join(self)})"


def packed(grads: Sequence[Any]) -> Any:
    """The gradients as one flat tensor (one output of a compiled step instead of one per variable), or the list
    itself when their dtypes differ or a shape is not known."""
    if len({g.dtype for g in grads}) != 1 or not all(g.shape.is_fully_defined() for g in grads):
        return list(grads)
    return tf.concat([tf.reshape(g, [-1]) for g in grads], axis=0)


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
