"""The few-shot task sampler: shapes, labels, class split, determinism and bad input."""

import numpy as np
import pytest

from hodiff.meta.tasks import FewShotTasks, split_classes, synthetic_characters


def labelled_images(classes=12, examples=20, size=4):
    """Images whose every pixel is ``class * 100 + example``: the sampled values say where they came from."""
    values = np.arange(classes)[:, None] * 100 + np.arange(examples)[None, :]
    return np.broadcast_to(values[:, :, None, None], (classes, examples, size, size)).astype(np.float32)


def test_tasks_have_the_documented_shapes_and_one_class_per_label():
    tasks = FewShotTasks(labelled_images(), ways=5, shots=2, queries=3)
    sx, sy, qx, qy = tasks.sample(6, seed=[0, 1])
    assert sx.shape == (6, 10, 4, 4, 1) and qx.shape == (6, 15, 4, 4, 1)
    assert sx.dtype == np.float32 and sy.dtype == np.int32
    assert (sy == np.repeat(np.arange(5), 2)).all() and (qy == np.repeat(np.arange(5), 3)).all()
    for t in range(6):
        support_class, query_class = sx[t, :, 0, 0, 0] // 100, qx[t, :, 0, 0, 0] // 100
        for label in range(5):  # every example of a label comes from one class, the same in support and query
            classes = set(support_class[sy[t] == label]) | set(query_class[qy[t] == label])
            assert len(classes) == 1
        assert len(set(support_class)) == 5  # five distinct classes per task
        drawn = np.concatenate([sx[t, :, 0, 0, 0], qx[t, :, 0, 0, 0]])
        assert len(set(drawn)) == drawn.size  # no example used twice in a task (support and query disjoint)


def test_sampling_is_a_pure_function_of_the_seed():
    tasks = FewShotTasks(labelled_images(), ways=3, shots=1, queries=2)
    first, again, other = tasks.sample(4, seed=7), tasks.sample(4, seed=7), tasks.sample(4, seed=8)
    assert all((a == b).all() for a, b in zip(first, again))
    assert not (first[0] == other[0]).all()
    counts = np.bincount((tasks.sample(400, seed=0)[0][:, :, 0, 0, 0] // 100).astype(int).ravel(), minlength=12)
    assert counts.min() > 0.6 * counts.mean()  # every class drawn, about equally often


def test_class_split_is_disjoint_reproducible_and_covers_every_class():
    images = labelled_images(classes=20)
    train, held_out = split_classes(images, held_out=0.25, seed=3)
    train_classes, held_classes = set(train[:, 0, 0, 0] // 100), set(held_out[:, 0, 0, 0] // 100)
    assert len(held_classes) == 5 and len(train_classes) == 15
    assert not train_classes & held_classes and train_classes | held_classes == set(range(20))
    again = split_classes(images, held_out=5, seed=3)
    assert (again[1] == held_out).all()
    sampled = FewShotTasks(train, ways=5, shots=1, queries=1).sample(50, seed=0)[0]
    assert not set((sampled[..., 0, 0, 0] // 100).ravel()) & held_classes  # no held-out class in training tasks


def test_synthetic_characters_have_omniglot_shapes_and_distinct_classes():
    images = synthetic_characters(classes=8, seed=0)
    assert images.shape == (8, 20, 28, 28) and images.dtype == np.float32
    assert set(np.unique(images)) <= {0.0, 1.0} and 0.1 < images.mean() < 0.6
    means = images.mean(axis=1).reshape(8, -1)  # class means differ more than examples within a class
    within = np.mean([np.abs(images[c] - images[c].mean(0)).mean() for c in range(8)])
    between = np.abs(means[:, None] - means[None]).mean()
    assert between > 0.5 * within
    assert (synthetic_characters(classes=8, seed=0) == images).all()


@pytest.mark.parametrize(
    "kwargs, name",
    [
        ({"images": np.zeros((5, 20, 28))}, "images"),
        ({"images": np.zeros((5, 20, 4, 4)), "ways": 6}, "ways"),
        ({"images": np.zeros((5, 20, 4, 4)), "ways": 0}, "ways"),
        ({"images": np.zeros((5, 20, 4, 4)), "shots": 10, "queries": 11}, "shots + queries"),
        ({"images": np.zeros((5, 20, 4, 4)), "queries": 1.5}, "queries"),
        ({"images": np.array([["a"]] * 2, dtype=object).reshape(1, 2, 1, 1)}, "images"),
    ],
)
def test_bad_input_names_the_argument(kwargs, name):
    with pytest.raises((ValueError, TypeError), match=name.replace("+", r"\+")):
        FewShotTasks(**kwargs)


def test_bad_split_and_sample_arguments_name_the_argument():
    with pytest.raises(ValueError, match="held_out"):
        split_classes(np.zeros((4, 2, 3, 3)), held_out=4)
    with pytest.raises(ValueError, match="held_out"):
        split_classes(np.zeros((4, 2, 3, 3)), held_out=1.5)
    with pytest.raises(ValueError, match="tasks"):
        FewShotTasks(np.zeros((4, 2, 3, 3)), ways=2, shots=1, queries=1).sample(0, seed=0)
