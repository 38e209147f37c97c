"""hodiff.checks: the reference checks catch wrong derivatives and say where."""

import numpy as np
import pytest
import tensorflow as tf

from hodiff.checks import assert_close, check_grads, check_laplacian, in_mode, reference_laplacian


@tf.custom_gradient
def wrong_square(x):
    """x**2 with a gradient that is off by 1%: check_grads must notice."""
    return x**2, lambda upstream: upstream * 2.02 * x


def test_check_grads_reports_worst_entry_index_and_both_values():
    x = tf.constant([1.0, 2.0, 3.0], tf.float64)
    with pytest.raises(AssertionError) as info:
        check_grads(lambda x: tf.reduce_sum(wrong_square(x)), (x,), order=1, modes=["eager"])
    message = str(info.value)
    assert "worst entry at index (2,)" in message
    assert "hodiff 6.06 vs reference 6 " in message


def test_check_grads_catches_wrong_second_derivative():
    @tf.custom_gradient
    def cube(x):
        # First derivative right (3x^2), but half of it is a constant to the tape: 3x, not 6x.
        return x**3, lambda upstream: upstream * 3.0 * x * tf.stop_gradient(x)

    with pytest.raises(AssertionError, match="second derivative"):
        check_grads(lambda x: cube(x), (tf.constant(1.5, tf.float64),), order=2, modes=["eager"])


def test_check_laplacian_catches_wrong_field_and_needs_float64_reference():
    u = lambda x: tf.reduce_sum(wrong_square(x), axis=1)
    with pytest.raises(AssertionError, match="laplacian nested"):
        check_laplacian(u, tf.ones((2, 3), tf.float64), modes=["eager"])
    with pytest.raises(ValueError, match="float64"):
        reference_laplacian(lambda x: tf.cast(tf.reduce_sum(x, axis=1), tf.float32), tf.ones((2, 2), tf.float64))


def test_assert_close_passes_within_tolerance_and_rejects_nan():
    assert_close([1.0, 2.0], [1.0, 2.0 + 1e-9], rtol=1e-6)
    with pytest.raises(AssertionError, match="index \\(1,\\)"):
        assert_close([1.0, np.nan], [1.0, 2.0], rtol=1e-6)


def test_in_mode_rejects_unknown_mode():
    with pytest.raises(ValueError, match="eager"):
        in_mode(tf.sin, "jit")


def test_zero_rtol_means_exact_not_default():
    """rtol=0.0 is a tolerance of zero (it used to fall back to the default, `rtol or default`)."""
    with pytest.raises(AssertionError):
        check_grads(tf.sin, (tf.constant(0.3, tf.float32),), order=1, rtol=0.0, modes=["eager"])
    check_grads(tf.sin, (tf.constant(0.3, tf.float32),), order=1, modes=["eager"])
