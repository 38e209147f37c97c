"""Few-shot classification tasks from an array of images grouped by class (Omniglot's layout).

:class:`FewShotTasks` draws N-way K-shot tasks with Q query examples per class from images of
shape ``(classes, examples, height, width)`` (or with a trailing channel axis), the layout of
the Omniglot arrays (1623 characters x 20 drawings of 28x28 pixels) that MAML papers use.
:func:`split_classes` separates the classes used for meta-training from held-out ones, and
:func:`synthetic_characters` makes stand-in data of the same shapes (no download).

Sampling is a pure function of a seed: ``tasks.sample(32, seed=[0, iteration])`` is the same
batch on every machine and after a restart, which makes runs reproducible and resumable.

References:
  Lake, Salakhutdinov & Tenenbaum (2015), "Human-level concept learning through probabilistic
  program induction" (Omniglot); Vinyals et al. (2016), "Matching networks for one shot
  learning" (the N-way K-shot protocol); Finn, Abbeel & Levine (2017) (MAML on Omniglot).

Example:
  ```python
  from hodiff.meta.tasks import FewShotTasks, split_classes, synthetic_characters

  images = synthetic_characters(classes=30, seed=0)  # (30, 20, 28, 28)
  train, held_out = split_classes(images, held_out=10, seed=0)
  tasks = FewShotTasks(train, ways=5, shots=1, queries=15)
  support_x, support_y, query_x, query_y = tasks.sample(4, seed=0)
  assert support_x.shape == (4, 5, 28, 28, 1) and query_y.shape == (4, 75)
  assert sorted(set(support_y[0].tolist())) == [0, 1, 2, 3, 4]
  ```
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = ["FewShotTasks", "split_classes", "synthetic_characters"]

Seed = int | Sequence[int]


class FewShotTasks:
    """N-way K-shot classification tasks drawn from images grouped by class.

    A task picks ``ways`` distinct classes at random, gives them the labels ``0 .. ways-1`` in
    a random order, and draws ``shots + queries`` distinct examples of each class: the first
    ``shots`` form the support set, the rest the query set. Support and query sets are sorted
    by label (``support_y[t] == [0]*shots + [1]*shots + ...``).

    Args:
      images: array ``(classes, examples, height, width)`` or ``(classes, examples, height,
        width, channels)``; values are cast to float32 as they are (scale uint8 pixels to
        [0, 1] first).
      ways: classes per task (N), at most the number of classes.
      shots: support examples per class (K).
      queries: query examples per class (Q); ``shots + queries`` at most the examples per class.

    Example:
      ```python
      import numpy as np
      from hodiff.meta.tasks import FewShotTasks

      images = np.arange(6 * 4 * 2 * 2, dtype=np.float32).reshape(6, 4, 2, 2)
      tasks = FewShotTasks(images, ways=3, shots=1, queries=2)
      sx, sy, qx, qy = tasks.sample(2, seed=1)
      assert sx.shape == (2, 3, 2, 2, 1) and qx.shape == (2, 6, 2, 2, 1)
      assert (qy[0] == [0, 0, 1, 1, 2, 2]).all()
      ```
    """

    def __init__(self, images: Any, ways: int = 5, shots: int = 1, queries: int = 15):
        caller = "FewShotTasks"
        self.images = _check_images(images, caller)
        for name, value in (("ways", ways), ("shots", shots), ("queries", queries)):
            if not isinstance(value, (int, np.integer)) or isinstance(value, bool) or value < 1:
                raise ValueError(f"{caller}: {name} must be an int >= 1, got {value!r}.")
        classes, examples = self.images.shape[:2]
        if ways > classes:
            raise ValueError(
                f"{caller}: ways={ways} but images hold only {classes} classes; pass ways <= {classes} or more "
                "classes (after split_classes, each split needs at least `ways` classes)."
            )
        if shots + queries > examples:
            raise ValueError(
                f"{caller}: shots + queries = {shots} + {queries} examples per class, but images hold only {examples} "
                f"per class; lower shots or queries so that they sum to at most {examples}."
            )
        self.ways, self.shots, self.queries = int(ways), int(shots), int(queries)

    @property
    def classes(self) -> int:
        """The number of classes tasks are drawn from."""
        return int(self.images.shape[0])

    def sample(self, tasks: int, seed: Seed) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """A batch of ``tasks`` tasks, a pure function of ``seed``.

        Args:
          tasks: the number of tasks (the meta-batch size), >= 1.
          seed: an int or a sequence of ints (e.g. ``[run_seed, iteration]``) for
            ``numpy.random.default_rng``.

        Returns:
          ``(support_x, support_y, query_x, query_y)``: float32 images ``(tasks, ways * shots,
          height, width, channels)`` and ``(tasks, ways * queries, ...)``, int32 labels
          ``(tasks, ways * shots)`` and ``(tasks, ways * queries)``, as
          :meth:`hodiff.meta.MetaLearner.meta_step` takes them.
        """
        if not isinstance(tasks, (int, np.integer)) or isinstance(tasks, bool) or tasks < 1:
            raise ValueError(f"FewShotTasks.sample: tasks must be an int >= 1 (tasks per batch), got {tasks!r}.")
        rng = np.random.default_rng(seed)
        ways, shots, queries = self.ways, self.shots, self.queries
        classes_, examples = self.images.shape[:2]
        # per task: `ways` distinct classes (their order is the label), then distinct examples of each
        chosen = np.argsort(rng.random((tasks, classes_)), axis=1)[:, :ways]
        picked = np.argsort(rng.random((tasks, ways, examples)), axis=2)[:, :, : shots + queries]
        drawn = self.images[chosen[:, :, None], picked]  # (tasks, ways, shots + queries, h, w, c)
        image_shape = drawn.shape[3:]
        support = drawn[:, :, :shots].reshape(tasks, ways * shots, *image_shape)
        query = drawn[:, :, shots:].reshape(tasks, ways * queries, *image_shape)
        labels = lambda count: np.broadcast_to(np.repeat(np.arange(ways, dtype=np.int32), count), (tasks, ways * count))
        return support, labels(shots).copy(), query, labels(queries).copy()


def split_classes(images: Any, held_out: int | float, seed: Seed = 0) -> tuple[np.ndarray, np.ndarray]:
    """Splits the classes of ``images`` at random into meta-training and held-out classes.

    Args:
      images: ``(classes, examples, ...)`` as for :class:`FewShotTasks`.
      held_out: how many classes to hold out (an int), or which fraction of them (a float in
        (0, 1)); both parts keep at least one class.
      seed: the seed of the (reproducible) split.

    Returns:
      ``(train_images, held_out_images)``: disjoint sets of whole classes, in ``images``' layout
      and dtype.

    Example:
      ```python
      import numpy as np
      from hodiff.meta.tasks import split_classes

      train, test = split_classes(np.zeros((10, 20, 28, 28)), held_out=0.3)
      assert train.shape[0] == 7 and test.shape[0] == 3
      ```
    """
    caller = "split_classes"
    _check_images(images, caller)
    images = np.asarray(images)
    classes = images.shape[0]
    if isinstance(held_out, bool) or not isinstance(held_out, (int, float, np.integer, np.floating)):
        raise ValueError(f"{caller}: held_out must be a class count (int) or a fraction (float), got {held_out!r}.")
    count = int(held_out) if isinstance(held_out, (int, np.integer)) else int(round(float(held_out) * classes))
    if isinstance(held_out, (float, np.floating)) and not 0.0 < held_out < 1.0:
        raise ValueError(f"{caller}: a fractional held_out must be in (0, 1), got {held_out!r}.")
    if not 1 <= count <= classes - 1:
        raise ValueError(
            f"{caller}: held_out={held_out!r} holds out {count} of {classes} classes; both parts need at least one "
            f"class (hold out between 1 and {classes - 1})."
        )
    order = np.random.default_rng(seed).permutation(classes)
    return images[np.sort(order[count:])], images[np.sort(order[:count])]


def synthetic_characters(classes: int = 100, examples: int = 20, size: int = 28, seed: Seed = 0) -> np.ndarray:
    """Omniglot-shaped stand-in data: ``(classes, examples, size, size)`` float32 in [0, 1].

    Each class is a random pattern of strokes (a coarse random binary grid, smoothed and
    thresholded); each example is its class's pattern shifted by up to two pixels with 5% of
    the pixels flipped, so that classes are learnable few-shot but not from one pixel.

    Args:
      classes: the number of classes (Omniglot has 1623).
      examples: examples per class (Omniglot has 20).
      size: the image side in pixels (28 for MAML's Omniglot).
      seed: the seed.

    Returns:
      The images, float32.
    """
    for name, value in (("classes", classes), ("examples", examples), ("size", size)):
        if not isinstance(value, (int, np.integer)) or isinstance(value, bool) or value < 1:
            raise ValueError(f"synthetic_characters: {name} must be an int >= 1, got {value!r}.")
    rng = np.random.default_rng(seed)
    cells = max(size // 4, 1)
    coarse = (rng.random((classes, cells + 2, cells + 2)) < 0.35).astype(np.int32)
    smooth = (
        coarse[:, :-2, 1:-1] + coarse[:, 2:, 1:-1] + coarse[:, 1:-1, :-2] + coarse[:, 1:-1, 2:] + coarse[:, 1:-1, 1:-1]
    )
    patterns = np.kron(smooth >= 2, np.ones((4, 4), bool))[:, :size, :size]
    patterns = np.pad(patterns, ((0, 0), (0, size - patterns.shape[1]), (0, size - patterns.shape[2])))
    shifts = rng.integers(-2, 3, (classes, examples, 2))
    out = np.empty((classes, examples, size, size), np.float32)
    for c in range(classes):
        for e in range(examples):
            out[c, e] = np.roll(patterns[c], tuple(shifts[c, e]), axis=(0, 1))
    flips = rng.random(out.shape) < 0.05
    return np.where(flips, 1.0 - out, out).astype(np.float32)


def _check_images(images: Any, caller: str) -> np.ndarray:
    array = np.asarray(images)
    if array.ndim not in (4, 5):
        raise ValueError(
            f"{caller}: images must have shape (classes, examples, height, width) or (classes, examples, height, "
            f"width, channels), e.g. Omniglot's (1623, 20, 28, 28); got shape {array.shape}."
        )
    if not (np.issubdtype(array.dtype, np.floating) or np.issubdtype(array.dtype, np.integer) or array.dtype == bool):
        raise TypeError(f"{caller}: images must hold numbers (float, int or bool pixels), got dtype {array.dtype}.")
    if min(array.shape) < 1:
        raise ValueError(f"{caller}: images has an empty axis, shape {array.shape}.")
    array = array.astype(np.float32, copy=False)
    return array[..., None] if array.ndim == 4 else array
