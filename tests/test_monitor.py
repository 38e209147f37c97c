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


def test_table_and_summaries(tmp_path):
    stats = gradient_stats([tf.constant([3.0, 4.0]), None])
    table = format_stats(stats, names=["kernel", "bias"])
    assert "global norm 5" in table and "no gradient" in table and "kernel" in table
    write_summaries(stats, step=3, writer=tf.summary.create_file_writer(str(tmp_path)), names=["kernel", "bias"])
    assert any(name.startswith("events") for name in os.listdir(tmp_path))
