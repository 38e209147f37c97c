"""Gradient statistics inside compiled code, the table and the TensorBoard summaries."""

import os

import numpy as np
import tensorflow as tf

from hodiff.checks import assert_close
from hodiff.training.monitor import format_stats, gradient_stats, write_summaries


def test_statistics_in_every_mode(run):
    grads = [tf.constant([[3.0, np.nan], [-4.0, np.inf]]), tf.constant([1.0, -2.0]), None]
    stats = run(lambda a, b: gradient_stats([a, b, None]), *grads[:2])
    assert_close(stats["norms"], [5.0, np.sqrt(5.0), 0.0], rtol=1e-6)
    assert_close(stats["global_norm"], np.sqrt(30.0), rtol=1e-6)
    assert_close(stats["mean_abs"], 10.0 / 4, rtol=1e-6)
    assert_close(stats["max_abs"], 4.0, rtol=1e-6)
    assert int(stats["nan_count"]) == 1 and int(stats["inf_count"]) == 1
    assert stats["missing"].numpy().tolist() == [False, False, True]


def logged_scalars(logdir):
    """``{tag: [(step, value)]}`` read back from the TensorBoard event files in ``logdir``."""
    scalars = {}
    for name in sorted(os.listdir(logdir)):
        for event in tf.compat.v1.train.summary_iterator(os.path.join(logdir, name)):
            for value in event.summary.value:
                scalars.setdefault(value.tag, []).append((event.step, float(tf.make_ndarray(value.tensor))))
    return scalars


def test_table_and_summaries(tmp_path):
    stats = gradient_stats([tf.constant([3.0, 4.0]), None])
    table = format_stats(stats, names=["kernel", "bias"])
    assert "global norm 5" in table and "no gradient" in table and "kernel" in table
    # distinct values for every statistic, so a swapped tag, step or variable name shows
    stats = gradient_stats([tf.constant([3.0, 4.0]), tf.constant([1.0, -12.0]), None])
    names = ["kernel", "bias", "unused"]
    write_summaries(stats, step=3, writer=tf.summary.create_file_writer(str(tmp_path)), names=names)
    scalars = logged_scalars(tmp_path)
    expected = {
        "gradients/global_norm": np.sqrt(170.0),
        "gradients/mean_abs": 20.0 / 4,
        "gradients/max_abs": 12.0,
        "gradients/nan_count": 0.0,
        "gradients/inf_count": 0.0,
        "gradients/norm/kernel": 5.0,
        "gradients/norm/bias": np.sqrt(145.0),
    }
    assert sorted(scalars) == sorted(expected), "no norm is logged for the variable without a gradient"
    for tag, value in expected.items():
        [(step, logged)] = scalars[tag]
        assert step == 3 and abs(logged - value) < 1e-5 * max(1.0, value), (tag, step, logged, value)
