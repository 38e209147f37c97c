"""scipy reference checks: hodiff's derivatives against ``scipy.differentiate`` in float64.

The references never touch a tape: they differentiate the function's *values* by adaptive
finite differences (``scipy.differentiate.jacobian``, ``hessian`` and ``derivative``), so they
are independent of the machinery under test. Every check runs hodiff in eager mode, inside
``tf.function`` and inside ``tf.function(jit_compile=True)``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import scipy.differentiate
import tensorflow as tf

from hodiff import _validate, derivatives, operators

__all__ = [
    "MODES",
    "in_mode",
    "assert_close",
    "default_tolerance",
    "reference_jacobian",
    "reference_hessian",
    "reference_laplacian",
    "check_grads",
    "check_laplacian",
]

MODES = ("eager", "graph", "xla")


def in_mode(fn: Callable, mode: str) -> Callable:
    """Wraps ``fn`` to run eagerly (``"eager"``), as a graph (``"graph"``) or compiled (``"xla"``)."""
    if mode == "eager":
        return fn
    if mode == "graph":
        return tf.function(fn)
    if mode == "xla":
        return tf.function(fn, jit_compile=True)
    raise ValueError(f"in_mode: mode={mode!r} is not one of {MODES}.")


def default_tolerance(dtype: tf.DType | np.dtype, order: int = 1) -> float:
    """Relative tolerance for comparing derivatives computed in ``dtype`` against float64 references."""
    if tf.as_dtype(dtype) == tf.float64:
        return 1e-7 if order == 1 else 1e-6
    return 2e-3 if order == 1 else 1e-2


def assert_close(
    actual: Any,
    expected: Any,
    rtol: float,
    atol: float | None = None,
    what: str = "derivative",
    reference_error: Any = None,
) -> None:
    """Asserts ``|actual - expected| <= atol + rtol * |expected|`` entrywise.

    ``atol`` defaults to ``rtol * max(1, max|expected|)`` so that entries that should be zero
    are judged on the scale of the whole result. On failure the message names the worst entry,
    its index, both values and scipy's own error estimate there.
    """
    actual = np.asarray(actual, dtype=np.float64)
    expected = np.asarray(expected, dtype=np.float64)
    if actual.shape != expected.shape:
        raise AssertionError(f"{what}: shape {actual.shape} differs from the reference shape {expected.shape}.")
    if atol is None:
        atol = rtol * max(1.0, float(np.max(np.abs(expected), initial=0.0)))
    excess = np.abs(actual - expected) - (atol + rtol * np.abs(expected))
    if not np.all(np.isfinite(actual)) or np.any(excess > 0):
        worst = (
            np.unravel_index(np.argmax(np.where(np.isfinite(actual), excess, np.inf)), actual.shape)
            if actual.size
            else ()
        )
        scipy_error = (
            ""
            if reference_error is None
            else f", scipy's error estimate there {np.asarray(reference_error)[worst]:.3g}"
        )
        raise AssertionError(
            f"{what} differs from the scipy reference: worst entry at index {tuple(int(i) for i in worst)}: "
            f"hodiff {actual[worst]:.12g} vs reference {expected[worst]:.12g} (|diff| "
            f"{abs(actual[worst] - expected[worst]):.3g}, allowed {atol + rtol * abs(expected[worst]):.3g}"
            f"{scipy_error}); {int(np.sum(excess > 0))} of {actual.size} entries out of tolerance."
        )


def _require_float64(values: Any, what: str) -> np.ndarray:
    values = tf.convert_to_tensor(values)
    if values.dtype != tf.float64:
        raise ValueError(
            f"{what} returned {values.dtype.name} values for float64 inputs, so finite differences "
            f"of it cannot serve as a float64 reference. Make it compute in float64 (for Keras, build "
            f"the model with dtype='float64'), or pass a float64 twin as the reference."
        )
    return values.numpy()


def _float64_if_floating(value: Any) -> Any:
    """Float tensors, arrays and Python floats in float64; every other argument unchanged."""
    if isinstance(value, float) or (hasattr(value, "dtype") and tf.as_dtype(value.dtype).is_floating):
        return _validate.constant(value, tf.float64)
    return value


def _numpy_function(f: Callable, args: Sequence[Any], index: int) -> tuple[Callable, np.ndarray, tuple]:
    """f as a function of the flattened float64 argument ``index``, vectorised the way scipy asks."""
    args64 = [_float64_if_floating(a) for a in args]
    point = np.asarray(args64[index], dtype=np.float64)
    shape = point.shape

    def evaluate(flat_point: tf.Tensor) -> tf.Tensor:
        call_args = list(args64)
        call_args[index] = tf.reshape(flat_point, shape)
        return tf.reshape(f(*call_args), [-1])

    # Values only (no tape): every point scipy asks for is evaluated in one vectorised call.
    evaluate_all = tf.function(
        lambda columns: tf.vectorized_map(evaluate, columns, fallback_to_while_loop=True),
        input_signature=[tf.TensorSpec([None, point.size], tf.float64)],
    )
    _require_float64(evaluate(tf.constant(point.reshape(-1))), "f")

    def vectorised(xs: np.ndarray) -> np.ndarray:
        columns = xs.reshape(xs.shape[0], -1).T
        values = evaluate_all(tf.constant(columns, tf.float64)).numpy().T
        return values.reshape((values.shape[0],) + xs.shape[1:])

    return vectorised, point.reshape(-1), shape


def reference_jacobian(f: Callable, args: Sequence[Any], index: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Jacobian of ``f(*args)`` w.r.t. ``args[index]`` by ``scipy.differentiate`` in float64.

    Returns:
      ``(jacobian, error)`` shaped ``out.shape + arg.shape``; ``error`` is scipy's estimate.
    """
    vectorised, flat, shape = _numpy_function(f, args, index)
    out_shape = np.shape(f(*[tf.cast(a, tf.float64) if i == index else a for i, a in enumerate(args)]))
    if flat.size == 1 and len(out_shape) == 0:  # scalar to scalar: scipy.differentiate.derivative
        result = scipy.differentiate.derivative(lambda t: vectorised(np.asarray(t)[None])[0], flat[0])
        df, error = result.df, result.error
    else:
        result = scipy.differentiate.jacobian(lambda xs: vectorised(xs), flat)
        df, error = result.df, result.error
    full_shape = tuple(out_shape) + tuple(shape)
    return np.reshape(df, full_shape), np.reshape(error, full_shape)


def reference_hessian(f: Callable, args: Sequence[Any], index: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Hessian of a scalar ``f(*args)`` w.r.t. ``args[index]`` by ``scipy.differentiate.hessian``.

    Returns:
      ``(hessian, error)`` shaped ``arg.shape + arg.shape``.
    """
    vectorised, flat, shape = _numpy_function(f, args, index)
    result = scipy.differentiate.hessian(lambda xs: vectorised(xs)[0], flat)
    return np.reshape(result.ddf, shape + shape), np.reshape(result.error, shape + shape)


def reference_laplacian(u: Callable, x: Any) -> tuple[np.ndarray, np.ndarray]:
    """Laplacian of a field at each point: the trace of scipy's float64 Hessian there.

    All points go to scipy in one vectorised call, so ``u`` is evaluated on whole batches.

    Returns:
      ``(laplacian, error)``, each of shape ``(N,)``.
    """
    points = np.asarray(x, dtype=np.float64)

    def vectorised(xs: np.ndarray) -> np.ndarray:  # xs: (d, N, ...) -> (N, ...)
        flat = xs.reshape(xs.shape[0], -1).T
        values = _require_float64(u(tf.constant(flat, tf.float64)), "u").reshape(-1)
        return values.reshape(xs.shape[1:])

    result = scipy.differentiate.hessian(vectorised, points.T)
    diagonal = np.diagonal(result.ddf, axis1=0, axis2=1)  # (N, d)
    error = np.diagonal(result.error, axis1=0, axis2=1)
    return diagonal.sum(axis=-1), error.sum(axis=-1)


def check_grads(
    f: Callable,
    args: Sequence[Any],
    order: int = 2,
    argnums: Sequence[int] | None = None,
    modes: Sequence[str] = MODES,
    rtol: float | None = None,
    atol: float | None = None,
) -> None:
    """Checks hodiff's first (and second) derivatives of ``f`` against scipy in float64.

    Order 1 compares :func:`hodiff.grad` (scalar ``f``) or :func:`hodiff.jacobian` with
    ``scipy.differentiate.jacobian`` (``derivative`` for scalar arguments). Order 2 needs a
    scalar ``f`` and compares :func:`hodiff.hessian` and both :func:`hodiff.hvp` modes with
    ``scipy.differentiate.hessian``. hodiff runs in the dtype of ``args``; the references
    always run in float64.

    Args:
      f: the function; must accept float64 inputs for the reference.
      args: positional arguments (tensors or arrays) at which to check.
      order: 1 or 2.
      argnums: which arguments to check; default all.
      modes: execution modes, any of ``"eager"``, ``"graph"``, ``"xla"``.
      rtol: relative tolerance; default from the dtype and order.
      atol: absolute tolerance; default ``rtol`` times the largest reference entry.

    Raises:
      AssertionError: naming the worst entry, its index, hodiff's value and scipy's.

    Example:
      ```python
      import tensorflow as tf
      from hodiff.checks import check_grads

      check_grads(lambda x: x**4 + 2 * x**3, (tf.constant(1.0, tf.float64),), order=2)
      ```
    """
    if order not in (1, 2):
        raise ValueError(f"check_grads: order must be 1 or 2, got {order!r}.")
    args = [tf.convert_to_tensor(a) for a in args]
    argnums = range(len(args)) if argnums is None else argnums
    scalar = tf.convert_to_tensor(f(*args)).shape.rank == 0
    if order == 2 and not scalar:
        raise ValueError("check_grads: order=2 needs f to return a scalar; reduce it or check order=1.")
    for index in argnums:
        dtype = args[index].dtype
        expected, error = reference_jacobian(f, args, index)
        first = derivatives.grad(f, argnums=index) if scalar else derivatives.jacobian(f, argnums=index)
        for mode in modes:
            tolerance = default_tolerance(dtype, 1) if rtol is None else rtol
            actual = in_mode(first, mode)(*args)
            assert_close(
                actual,
                expected,
                tolerance,
                atol,
                f"first derivative w.r.t. args[{index}] ({mode}, {dtype.name})",
                error,
            )
        if order == 1:
            continue
        expected, error = reference_hessian(f, args, index)
        size = args[index].shape.num_elements()
        direction = tf.reshape(tf.cast(tf.linspace(-1.0, 1.0, size), dtype), args[index].shape)
        expected_hvp = np.reshape(expected, (size, size)) @ np.ravel(direction.numpy()).astype(np.float64)

        def of_arg(a, index=index):  # f as a function of args[index] alone
            call_args = list(args)
            call_args[index] = a
            return f(*call_args)

        for mode in modes:
            tolerance = default_tolerance(dtype, 2) if rtol is None else rtol
            what = f"w.r.t. args[{index}] ({mode}, {dtype.name})"
            second = in_mode(derivatives.hessian(of_arg), mode)(args[index])
            assert_close(second, expected, tolerance, atol, f"second derivative {what}", error)
            for hvp_mode in derivatives.HVP_MODES:
                product = in_mode(lambda a, m=hvp_mode, v=direction: derivatives.hvp(of_arg, a, v, mode=m), mode)(
                    args[index]
                )
                assert_close(np.ravel(product), expected_hvp, tolerance, atol, f"hvp {hvp_mode} {what}")


def check_laplacian(
    u: Callable,
    x: Any,
    methods: Sequence[str] = ("nested",),
    modes: Sequence[str] = MODES,
    rtol: float | None = None,
    atol: float | None = None,
    reference_u: Callable | None = None,
) -> None:
    """Checks :func:`hodiff.laplacian` of a field against the trace of scipy's Hessian per point.

    Args:
      u: scalar field ``(N, d) -> (N,)`` or ``(N, 1)``; must accept float64 points (a Keras
        model casts them to its own dtype).
      x: points, shape ``(N, d)``; hodiff runs in their dtype.
      methods: exact methods to check, ``"nested"`` and/or ``"forward"``.
      modes: execution modes.
      rtol: relative tolerance; default from the dtype, as in :func:`check_grads`.
      atol: absolute tolerance; default ``rtol`` times the largest reference entry.
      reference_u: a float64 twin of ``u`` for the reference (e.g. a float64 copy of a float32
        Keras model); default ``u`` itself.

    Example:
      ```python
      import tensorflow as tf
      from hodiff.checks import check_laplacian

      u = lambda x: tf.sin(x[:, 0]) * tf.exp(x[:, 1])          # Laplacian 0
      check_laplacian(u, tf.random.normal((4, 2), dtype=tf.float64))
      ```
    """
    x = tf.convert_to_tensor(x)
    expected, error = reference_laplacian(reference_u or u, x)
    for method in methods:
        for mode in modes:
            actual = in_mode(operators.laplacian(u, method=method), mode)(x)
            tolerance = default_tolerance(x.dtype, 2) if rtol is None else rtol
            assert_close(
                np.reshape(actual, -1), expected, tolerance, atol, f"laplacian {method} ({mode}, {x.dtype.name})", error
            )
