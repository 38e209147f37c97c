"""Gradient transforms against TensorFlow's own clipping ops and closed forms, in every mode."""

import numpy as np
import pytest
import tensorflow as tf

from hodiff.checks import assert_close
from hodiff.training import transforms

VARIABLES = [tf.Variable(np.ones((3, 2))), tf.Variable(np.full(2, 0.5)), tf.Variable(2.0, dtype=tf.float64)]
GRADS = [tf.constant(np.arange(6.0).reshape(3, 2) - 2.5), tf.constant([3.0, -4.0], tf.float64), None]


def apply(transform, grads, run):
    """Runs the transform in the mode; None gradients are returned as None."""
    transform.build(VARIABLES)
    update = run(lambda *g: transform(list(g) + [None], VARIABLES), *grads[:2])
    return update


def test_clip_by_global_norm_equals_tensorflow(run):
    update = apply(transforms.clip_by_global_norm(2.0), GRADS, run)
    expected, norm = tf.clip_by_global_norm(GRADS[:2], 2.0)
    for actual, reference in zip(update.grads[:2], expected):
        assert_close(actual, reference, rtol=1e-14)
    assert_close(update.info["global_norm"], norm, rtol=1e-14)
    assert update.grads[2] is None and bool(update.apply)


@pytest.mark.parametrize(
    "transform, reference",
    [
        (transforms.clip_by_value(1.5), lambda g: tf.clip_by_value(g, -1.5, 1.5)),
        (transforms.clip_by_norm(1.0), lambda g: tf.clip_by_norm(g, 1.0)),
        (transforms.clip_by_average_norm(0.5), lambda g: g * min(1.0, 0.5 * tf.size(g).numpy() / tf.norm(g).numpy())),
        (transforms.identity(), lambda g: g),
    ],
    ids=["value", "norm", "average_norm", "identity"],
)
def test_per_tensor_clipping(transform, reference, run):
    update = apply(transform, GRADS, run)
    for actual, g in zip(update.grads[:2], GRADS[:2]):
        assert_close(actual, reference(g), rtol=1e-14)
    assert update.grads[2] is None


def test_adaptive_grad_clip_is_unitwise(run):
    update = apply(transforms.adaptive_grad_clip(clipping=0.1, eps=1e-3), GRADS, run)
    kernel_grad, bias_grad = (g.numpy() for g in GRADS[:2])
    # kernel: units are columns; weight column norms sqrt(3), bound 0.1 * sqrt(3)
    column_norms = np.linalg.norm(kernel_grad, axis=0)
    expected_kernel = kernel_grad * np.minimum(1.0, 0.1 * np.sqrt(3.0) / column_norms)
    expected_bias = bias_grad * min(1.0, 0.1 * np.linalg.norm([0.5, 0.5]) / 5.0)
    assert_close(update.grads[0], expected_kernel, rtol=1e-14)
    assert_close(update.grads[1], expected_bias, rtol=1e-14)


def test_skip_nonfinite_counts_and_blocks(run):
    transform = transforms.skip_nonfinite()
    transform.build(VARIABLES)
    step = lambda *g: transform(list(g) + [None], VARIABLES)
    bad = [GRADS[0], tf.constant([np.inf, 1.0], tf.float64)]
    for expected_total, grads in ((1, bad), (2, bad), (2, GRADS[:2]), (3, bad)):
        update = run(step, *grads)
        assert int(update.info["total_skips"]) == expected_total
    assert int(update.info["consecutive_skips"]) == 1 and not bool(update.apply)


def test_accumulate_means_over_calls_and_respects_incoming_skips(run):
    transform = transforms.chain(transforms.skip_nonfinite(), transforms.accumulate(2))
    transform.build(VARIABLES)
    step = lambda *g: transform(list(g) + [None], VARIABLES)
    nan = [GRADS[0], tf.constant([np.nan, 1.0], tf.float64)]
    first = run(step, *[2.0 * g for g in GRADS[:2]])
    skipped = run(step, *nan)
    second = run(step, *GRADS[:2])
    assert [bool(u.apply) for u in (first, skipped, second)] == [False, False, True]
    for actual, g in zip(second.grads[:2], GRADS[:2]):
        assert_close(actual, 1.5 * g, rtol=1e-14)
    assert second.grads[2] is None


def test_chain_reports_every_transform():
    transform = transforms.chain(
        transforms.skip_nonfinite(), transforms.accumulate(1), transforms.clip_by_global_norm(1.0)
    )
    update = transform(GRADS, VARIABLES)
    assert set(update.info) == {"skipped", "consecutive_skips", "total_skips", "accumulated", "global_norm"}
    assert_close(transforms.global_norm(update.grads), 1.0, rtol=1e-14)


def test_bad_input():
    with pytest.raises(ValueError, match="got 1 gradients for 3 variables"):
        transforms.clip_by_norm(1.0)(GRADS[:1], VARIABLES)
    with pytest.raises(ValueError, match="every must be an int >= 1"):
        transforms.accumulate(0)
    with pytest.raises(ValueError, match="max_norm must be > 0"):
        transforms.clip_by_global_norm(-1.0)
    with pytest.raises(ValueError, match="max_abs must be > 0"):
        transforms.clip_by_value(0.0)
    with pytest.raises(TypeError, match="gradient 0 .* has dtype int32; gradients must be floating point"):
        transforms.clip_by_norm(1.0)([tf.constant([1, 2]), None, None], VARIABLES)
    with pytest.raises(ValueError, match="different orders"):
        transforms.clip_by_norm(1.0)([GRADS[1], GRADS[0], None], VARIABLES)
    with pytest.raises(TypeError, match="argument 1 is a function, not a gradient transform"):
        transforms.chain(transforms.identity(), lambda g: g)


def test_split_leaves_the_work_after_accumulate_for_the_update():
    transform = transforms.chain(
        transforms.skip_nonfinite(), transforms.accumulate(2), transforms.clip_by_global_norm(1.0)
    )
    first = transform.split(GRADS, VARIABLES)
    assert not bool(first.apply) and set(first.info) == {"skipped", "consecutive_skips", "total_skips", "accumulated"}
    second = transform.split([2.0 * GRADS[0], 2.0 * GRADS[1], None], VARIABLES)
    assert bool(second.apply) and second.then is not None
    for total, g in zip(second.grads[:2], GRADS[:2]):
        assert_close(total, 3.0 * g, rtol=1e-14)  # the running sum, not yet averaged or clipped
    update = second.then(second.grads)
    expected, norm = tf.clip_by_global_norm([1.5 * g for g in GRADS[:2]], 1.0)
    assert_close(update.info["global_norm"], norm, rtol=1e-14) and update.grads[2] is None
    for actual, reference in zip(update.grads[:2], expected):
        assert_close(actual, reference, rtol=1e-14)
    idle = second.then([tf.zeros_like(second.grads[0]), tf.zeros_like(second.grads[1]), None])
    assert float(idle.info["global_norm"]) == 0.0


def test_a_stateful_transform_after_accumulate_sees_every_update(run):
    transform = transforms.chain(transforms.accumulate(2), transforms.skip_nonfinite())
    transform.build(VARIABLES)
    assert transform.split(GRADS, VARIABLES).then is None, "skip_nonfinite needs the mean on every call"
    step = lambda *g: transform(list(g) + [None], VARIABLES)
    nan = [GRADS[0], tf.constant([np.nan, 1.0], tf.float64)]
    updates = [run(step, *grads) for grads in (nan, GRADS[:2])]  # the first call of the window was built above
    assert [bool(u.apply) for u in updates] == [False, False]
    assert int(updates[1].info["total_skips"]) == 1, "the mean of the NaN window is skipped once, when it is due"
    update = run(step, *GRADS[:2])  # a new window: no NaN left over from the skipped one
    assert bool(update.apply) and int(update.info["total_skips"]) == 1 and int(update.info["consecutive_skips"]) == 0
    for actual, g in zip(update.grads[:2], GRADS[:2]):
        assert_close(actual, g, rtol=1e-14)


def test_a_known_finiteness_replaces_the_test_until_the_gradients_change():
    nan = [GRADS[0], tf.constant([np.nan, 1.0], tf.float64), None]
    trusted = transforms.skip_nonfinite().split(nan, VARIABLES, finite=True)
    assert bool(trusted.apply), "the caller's answer is used, no second pass"
    assert not bool(transforms.skip_nonfinite().split(GRADS, VARIABLES, finite=False).apply)
    changed = transforms.chain(transforms.clip_by_value(1.0), transforms.skip_nonfinite()).split(
        nan, VARIABLES, finite=True
    )
    assert not bool(changed.apply) and bool(changed.info["skipped"]), "after clipping the test runs again"


def test_all_finite(run):
    finite = run(lambda a, b: transforms.all_finite([a, None, b]), GRADS[0], tf.constant([1.0, 2.0], tf.float32))
    assert bool(finite)
    for bad in (np.nan, np.inf, -np.inf):
        assert not bool(run(lambda a, b: transforms.all_finite([a, b]), GRADS[0], tf.constant([1.0, bad])))
    assert bool(transforms.all_finite([None]))
