"""Input validation shared by every transform: errors that name the argument, the problem and the fix."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import keras
import numpy as np
import tensorflow as tf

UNCONNECTED_CHOICES = ("error", "zero")


def as_differentiable(value: Any, name: str, caller: str) -> Any:
    """Converts `value` (tensor, array, float, Variable or nested structure) to float tensors.

    Variables are kept as they are so that tapes watch them (a Keras 3 variable becomes the
    ``tf.Variable`` that holds its value); everything else becomes a tensor.
    Raises TypeError for integer, boolean or non-numeric inputs.
    """
    return tf.nest.map_structure(lambda leaf: _as_float_leaf(leaf, name, caller), value)


def _as_float_leaf(leaf: Any, name: str, caller: str) -> Any:
    if isinstance(leaf, (bool, np.bool_)) or (
        isinstance(leaf, (int, np.integer)) and not isinstance(leaf, (float, np.floating))
    ):
        dtype = "bool" if isinstance(leaf, (bool, np.bool_)) else "int"
        raise TypeError(_not_float_message(caller, name, dtype))
    if isinstance(leaf, keras.Variable):
        leaf = leaf.value
    tensor = leaf if isinstance(leaf, tf.Variable) else tf.convert_to_tensor(leaf)
    if not tensor.dtype.is_floating:
        raise TypeError(_not_float_message(caller, name, tensor.dtype.name))
    return tensor


def _not_float_message(caller: str, name: str, dtype: str) -> str:
    kind = "booleans" if dtype == "bool" else "integers" if "int" in dtype else f"{dtype} values"
    return (
        f"{caller}: argument `{name}` has dtype {dtype}; {kind} are not differentiable. "
        f"Cast it to float first, e.g. tf.cast({name}, tf.float32) (or tf.float64 for "
        f"reference-grade accuracy)."
    )


def as_float_tensor(value: Any, name: str, caller: str) -> tf.Tensor:
    """Like :func:`as_differentiable` for one value, but always a tensor (Variables are read)."""
    return tf.convert_to_tensor(as_differentiable(value, name, caller))


def check_positive_bound(value: Any, name: str, caller: str) -> None:
    """Raises ValueError when a Python number given as an upper bound is not positive."""
    if isinstance(value, (int, float)) and not value > 0:
        raise ValueError(f"{caller}: {name} must be > 0, got {value!r}; it is an upper bound on a norm or magnitude.")


def check_finite_number(
    value: Any, name: str, caller: str, minimum: float = 0, integer: bool = False, fix: str = ""
) -> None:
    """Raises ValueError unless ``value`` is a finite (int when ``integer``) number >= ``minimum``.

    ``fix`` is appended to the message (e.g. how to turn the option off).
    """
    kind = int if integer else (int, float)
    if isinstance(value, bool) or not isinstance(value, kind) or not math.isfinite(value) or value < minimum:
        raise ValueError(
            f"{caller}: {name} must be a finite {'int' if integer else 'number'} >= {minimum}, got {value!r}.{fix}"
        )


def check_count(value: int, name: str, caller: str, minimum: int = 1, fix: str = "") -> None:
    """Raises ValueError unless ``value`` is an int >= ``minimum`` (a number of probes, steps...).

    ``fix`` is appended to the message (what the number is, what to pass).
    """
    if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
        raise ValueError(f"{caller}: {name} must be an int >= {minimum}, got {value!r}.{fix}")


def check_unconnected(unconnected: str, caller: str) -> tf.UnconnectedGradients:
    """Validates the `unconnected` option and returns TensorFlow's matching enum."""
    if unconnected not in UNCONNECTED_CHOICES:
        raise ValueError(
            f"{caller}: unconnected={unconnected!r} is not an option; use 'error' (raise when "
            f"the output does not depend on an input) or 'zero' (return zeros there)."
        )
    return tf.UnconnectedGradients.ZERO if unconnected == "zero" else tf.UnconnectedGradients.NONE


def raise_if_unconnected(derivatives: Any, names: Sequence[str], caller: str) -> None:
    """Raises ValueError naming the first input whose derivative TensorFlow returned as None."""
    for derivative, name in zip(derivatives, names):
        if any(leaf is None for leaf in tf.nest.flatten(derivative, expand_composites=False)):
            raise ValueError(
                f"{caller}: the output of the function does not depend on `{name}` (the tape "
                f"found no path from it to the output, so TensorFlow returned None). Check "
                f"that the function really uses `{name}` through differentiable operations "
                f"(not through tf.cast to an integer, tf.round or .numpy()); if a zero "
                f"derivative is what you expect, pass unconnected='zero'."
            )


def watch(tape: tf.GradientTape, value: Any) -> None:
    """Watches every leaf of a tensor, Variable or nested structure."""
    for leaf in tf.nest.flatten(value):
        tape.watch(leaf)


def gradient(
    tape, target, sources: list, names: Sequence[str], unconnected: str, caller: str, output_gradients=None
) -> list:
    """``tape.gradient`` with hodiff's unconnected policy and dense results.

    ``sources`` is a list with one entry (a tensor or a structure) per name in ``names``;
    the result is a list of the same length.
    """
    mode = check_unconnected(unconnected, caller)
    result = densify(tape.gradient(target, sources, output_gradients=output_gradients, unconnected_gradients=mode))
    raise_if_unconnected(result, names, caller)
    return connect(result, sources)


def connect(derivatives: Any, sources: Any) -> Any:
    """``derivatives`` unchanged, but recorded as depending on ``sources`` with derivative zero.

    A derivative that does not depend on its variable (the gradient ``3`` of ``3 a``) is a
    constant to TensorFlow, so a derivative of it (the Hessian) would be unconnected, ``None``.
    The transforms pass every derivative they compute through here, so a derivative of a
    derivative is zero where the inner one does not depend on the argument, as in JAX, while a
    first-order derivative of an unused argument still raises. Costs one identity op.

    Args:
      derivatives: a tensor or structure of tensors (``None`` leaves: returned as they are).
      sources: the variables they were taken with respect to, a tensor, Variable or structure.

    Returns:
      ``derivatives``, same structure and values.
    """
    flat, inputs = tf.nest.flatten(derivatives), tf.nest.flatten(sources)
    if not flat or not inputs or any(leaf is None for leaf in flat):
        return derivatives
    return tf.nest.pack_sequence_as(derivatives, _connected(len(flat))(*flat, *inputs))


def _connected(count: int) -> Callable:
    """An op returning its first ``count`` inputs; their gradient passes through, the others' is zero."""

    @tf.custom_gradient
    def connected(*tensors: tf.Tensor):
        def backward(*upstream):
            return (*upstream, *[tf.zeros_like(source) for source in tensors[count:]])

        return [tf.identity(value) for value in tensors[:count]], backward

    return connected


def densify(value: Any) -> Any:
    """Turns tf.IndexedSlices (gradients of gathers) into dense tensors; leaves the rest alone."""
    return tf.nest.map_structure(
        lambda leaf: tf.convert_to_tensor(leaf) if isinstance(leaf, tf.IndexedSlices) else leaf,
        value,
        expand_composites=False,
    )


def check_scalar(value: tf.Tensor, caller: str) -> None:
    """Raises ValueError when a function that must return a scalar returned something else."""
    value = tf.convert_to_tensor(value)
    if value.shape.rank != 0:
        raise ValueError(
            f"{caller}: the function must return a scalar, but it returned shape "
            f"{tuple(value.shape)}. Reduce it first (tf.reduce_sum or tf.reduce_mean) if you "
            f"want the derivative of the total; use jacobian(f) for the derivative of every "
            f"output, or batch_jacobian(f) / batch_hessian(f) for per-example derivatives."
        )


def check_same_shape(value: Any, reference: Any, name: str, reference_name: str, caller: str) -> None:
    """Raises ValueError when `value` does not have the structure and shapes of `reference`."""
    try:
        tf.nest.assert_same_structure(value, reference)
    except (ValueError, TypeError) as error:
        raise ValueError(f"{caller}: `{name}` must have the same structure as `{reference_name}`: {error}") from None
    for leaf, ref in zip(tf.nest.flatten(value), tf.nest.flatten(reference)):
        if not tf.TensorShape(leaf.shape).is_compatible_with(ref.shape):
            raise ValueError(
                f"{caller}: `{name}` has shape {tuple(leaf.shape)} but `{reference_name}` has "
                f"shape {tuple(ref.shape)}; they must match (one tangent entry per input "
                f"entry). Reshape `{name}` to {tuple(ref.shape)}."
            )


def check_field_points(x: tf.Tensor, caller: str) -> int:
    """Checks that `x` is a batch of points, shape (N, d) with d known; returns d."""
    if x.shape.rank != 2 or x.shape[1] is None:
        raise ValueError(
            f"{caller}: `x` must be a batch of points with shape (N, d): N points in d "
            f"dimensions, d known when the function is traced; got shape {tuple(x.shape)}. "
            f"For a single point use x[None, :]; for a grid, flatten it to "
            f"tf.reshape(grid, (-1, d))."
        )
    return int(x.shape[1])


def check_point_array(points: Any, coords: Sequence[str], caller: str) -> np.ndarray:
    """``points`` as a real ``(N, d)`` numpy array, ``d = len(coords)``; ``N = 0`` (no points) is allowed.

    Raises:
      ValueError: not 2-D, another width, or not real numbers; the message names the columns.
    """
    array = np.asarray(points)
    width = len(coords)
    if array.ndim != 2 or array.shape[1] != width:
        one_point = f" For one point use points[None, :] (shape (1, {width}))." if array.ndim == 1 else ""
        raise ValueError(
            f"{caller}: `points` must have shape (N, {width}), one row per point with the columns {tuple(coords)}; "
            f"got shape {array.shape}.{one_point}"
        )
    if not np.issubdtype(array.dtype, np.number) or np.iscomplexobj(array):
        raise ValueError(f"{caller}: `points` must hold real numbers, got dtype {array.dtype}.")
    return array


def check_per_point_values(
    values: tf.Tensor, num_points_like: tf.Tensor, what: str, caller: str
) -> tuple[tf.Tensor, bool]:
    """Checks that a field returned one value per point, (N,) or (N, 1).

    Returns the values as (N,) and whether the field returned a column (N, 1).
    """
    values = tf.convert_to_tensor(values)
    if values.shape.rank == 2 and values.shape[1] == 1:
        return values[:, 0], True
    if values.shape.rank == 1:
        return values, False
    raise ValueError(
        f"{caller}: `{what}` must return one value per point, shape (N,) or (N, 1); it "
        f"returned shape {tuple(values.shape)} for x of shape {tuple(num_points_like.shape)}. "
        f"For a vector field use divergence(v) or batch_jacobian(v); for several scalar "
        f"fields, apply the operator to each output column."
    )


def check_vector_field(values: tf.Tensor, x: tf.Tensor, caller: str) -> None:
    """Checks that a vector field returned one d-vector per point, shape (N, d)."""
    if values.shape.rank != 2 or values.shape[1] != x.shape[1]:
        raise ValueError(
            f"{caller}: `v` must return one d-vector per point, shape (N, {x.shape[1]}) for x of "
            f"shape {tuple(x.shape)}; it returned {tuple(values.shape)}. For a scalar field use "
            f"laplacian(u) or partials(u, ...)."
        )


def constant(value: Any, dtype: tf.DType) -> tf.Tensor:
    """``value`` in ``dtype``; a Python float goes straight to ``dtype`` (``tf.cast`` of a
    Python float passes through float32 and loses digits in float64)."""
    return tf.cast(value, dtype) if tf.is_tensor(value) else tf.constant(value, dtype)
