"""Derivatives as function transforms that compose: the tapes stay inside.

Every transform takes a Python callable and returns a new callable (``grad``, ``jacobian``,
``hessian``...) or evaluates directly at a point (``jvp``, ``vjp``, ``hvp``). They run in eager
mode, inside ``tf.function`` and inside ``tf.function(jit_compile=True)``, on tensors, arrays,
``tf.Variable`` s and nested structures of them (for example a model's ``trainable_variables``).
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import tensorflow as tf

from hodiff import _validate
from hodiff._tower import derivative_tower

ArgNums = int | Sequence[int]

__all__ = [
    "grad",
    "value_and_grad",
    "jvp",
    "vjp",
    "jacobian",
    "batch_jacobian",
    "hessian",
    "batch_hessian",
    "hvp",
    "nth_derivative",
    "HVP_MODES",
]

HVP_MODES = ("forward_over_reverse", "reverse_over_reverse")


def _normalize_argnums(argnums: ArgNums, num_args: int, caller: str) -> tuple[int, ...]:
    indices = (argnums,) if isinstance(argnums, int) else tuple(argnums)
    if not indices or not all(isinstance(i, int) for i in indices):
        raise TypeError(f"{caller}: argnums must be an int or a non-empty tuple of ints, got {argnums!r}.")
    for i in indices:
        if not -num_args <= i < num_args:
            raise ValueError(
                f"{caller}: argnums={argnums!r} refers to argument {i}, but the function was "
                f"called with {num_args} positional argument(s). Pass argnums within range."
            )
    return tuple(i % num_args for i in indices)


def _prepare_args(args: Sequence[Any], indices: tuple[int, ...], caller: str) -> list[Any]:
    prepared = list(args)
    for i in indices:
        prepared[i] = _validate.as_differentiable(args[i], f"args[{i}]", caller)
    return prepared


def value_and_grad(
    f: Callable[..., Any],
    argnums: ArgNums = 0,
    has_aux: bool = False,
    unconnected: str = "error",
) -> Callable[..., Any]:
    """Transforms a scalar function into one that returns its value and its gradient.

    Args:
      f: function returning a scalar tensor (or ``(scalar, aux)`` when ``has_aux``).
      argnums: which positional argument(s) to differentiate; an int or a tuple of ints.
        Arguments may be tensors, arrays, Variables or nested structures of them.
      has_aux: ``f`` returns ``(value, aux)``; ``aux`` is passed through untouched.
      unconnected: ``"error"`` (default) raises when the value does not depend on an
        argument; ``"zero"`` returns zeros there.

    Returns:
      A function returning ``(value, gradient)`` or ``((value, aux), gradient)``; the
      gradient has the structure of the argument (a tuple of them for a tuple ``argnums``).

    Example:
      ```python
      import tensorflow as tf
      from hodiff import value_and_grad

      value, slope = value_and_grad(lambda x: x**2 + 2 * x + 1)(tf.constant(3.0))
      assert float(value) == 16.0 and float(slope) == 8.0
      ```
    """
    return _make_value_and_grad(f, argnums, has_aux, unconnected, "value_and_grad")


def _make_value_and_grad(f, argnums, has_aux, unconnected, caller):
    _validate.check_unconnected(unconnected, caller)

    def value_and_grad_f(*args, **kwargs):
        indices = _normalize_argnums(argnums, len(args), caller)
        args = _prepare_args(args, indices, caller)
        sources = [args[i] for i in indices]
        with tf.GradientTape() as tape:
            _validate.watch(tape, sources)
            output = f(*args, **kwargs)
            value, aux = output if has_aux else (output, None)
            if has_aux and not isinstance(output, (tuple, list)):
                raise ValueError(f"{caller}: has_aux=True needs f to return (value, aux); it returned one value.")
            _validate.check_scalar(value, caller)
        names = [f"args[{i}]" for i in indices]
        gradients = _validate.gradient(tape, value, sources, names, unconnected, caller)
        gradient = gradients[0] if isinstance(argnums, int) else tuple(gradients)
        return ((value, aux) if has_aux else value), gradient

    return value_and_grad_f


def grad(
    f: Callable[..., Any],
    argnums: ArgNums = 0,
    has_aux: bool = False,
    unconnected: str = "error",
) -> Callable[..., Any]:
    """Transforms a scalar function into its gradient function.

    Args:
      f: function returning a scalar tensor (or ``(scalar, aux)`` when ``has_aux``).
      argnums: which positional argument(s) to differentiate; an int or a tuple of ints.
      has_aux: ``f`` returns ``(value, aux)``; the transformed function returns
        ``(gradient, aux)``.
      unconnected: ``"error"`` (default) or ``"zero"``; see :func:`value_and_grad`.

    Returns:
      A function with the signature of ``f`` returning the gradient, shaped like the argument.

    Example:
      ```python
      import tensorflow as tf
      from hodiff import grad

      d2 = grad(grad(lambda x: x**4 + 2 * x**3))   # transforms compose
      assert float(d2(tf.constant(1.0))) == 24.0
      ```
    """
    value_and_grad_f = _make_value_and_grad(f, argnums, has_aux, unconnected, "grad")

    def grad_f(*args, **kwargs):
        value, gradient = value_and_grad_f(*args, **kwargs)
        return (gradient, value[1]) if has_aux else gradient

    return grad_f


def jvp(
    f: Callable[..., Any],
    primals: Sequence[Any],
    tangents: Sequence[Any],
    unconnected: str = "error",
) -> tuple[Any, Any]:
    """Forward-mode Jacobian-vector product ``J(primals) @ tangents``.

    Uses ``tf.autodiff.ForwardAccumulator``: one forward pass, no tape of the whole function.

    Args:
      f: function of ``len(primals)`` positional arguments.
      primals: the point, a tuple or list of arguments.
      tangents: the direction, one entry per primal with the same shape.
      unconnected: ``"error"`` (default) or ``"zero"`` for outputs that do not depend on
        the primals.

    Returns:
      ``(f(*primals), jvp)`` where ``jvp`` has the structure of the output.

    Example:
      ```python
      import tensorflow as tf
      from hodiff import jvp

      out, tangent_out = jvp(tf.sin, (tf.constant(0.0),), (tf.constant(2.0),))
      assert float(tangent_out) == 2.0
      ```
    """
    caller = "jvp"
    mode = _validate.check_unconnected(unconnected, caller)
    if not isinstance(primals, (tuple, list)) or not isinstance(tangents, (tuple, list)):
        raise TypeError(
            f"{caller}: primals and tangents must be tuples (one entry per argument of f), "
            f"e.g. jvp(f, (x,), (v,)); got {type(primals).__name__} and {type(tangents).__name__}."
        )
    if len(primals) != len(tangents):
        raise ValueError(f"{caller}: got {len(primals)} primals but {len(tangents)} tangents; give one tangent per primal.")
    primals = [_validate.as_differentiable(p, f"primals[{i}]", caller) for i, p in enumerate(primals)]
    tangents = [_validate.as_differentiable(t, f"tangents[{i}]", caller) for i, t in enumerate(tangents)]
    for i, (p, t) in enumerate(zip(primals, tangents)):
        _validate.check_same_shape(t, p, f"tangents[{i}]", f"primals[{i}]", caller)
    flat_primals, flat_tangents = tf.nest.flatten(primals), tf.nest.flatten(tangents)
    flat_tangents = [tf.cast(t, p.dtype) for t, p in zip(flat_tangents, flat_primals)]
    with tf.autodiff.ForwardAccumulator(flat_primals, flat_tangents) as accumulator:
        output = f(*primals)
    tangent_out = accumulator.jvp(output, unconnected_gradients=mode)
    if unconnected == "error" and any(t is None for t in tf.nest.flatten(tangent_out)):
        _validate.raise_if_unconnected([None], ["primals"], caller)
    return output, tangent_out


def vjp(f: Callable[..., Any], *primals: Any, unconnected: str = "error") -> tuple[Any, Callable[[Any], tuple]]:
    """Reverse-mode vector-Jacobian product: returns ``f(*primals)`` and a pullback.

    Args:
      f: function of ``len(primals)`` positional arguments.
      *primals: the point.
      unconnected: ``"error"`` (default) or ``"zero"``.

    Returns:
      ``(out, vjp_fn)``; ``vjp_fn(cotangent)`` (cotangent shaped like ``out``) returns a tuple
      with one cotangent per primal. ``vjp_fn`` may be called several times.

    Example:
      ```python
      import tensorflow as tf
      from hodiff import vjp

      out, pullback = vjp(lambda x: 3.0 * x, tf.constant([1.0, 2.0]))
      (cotangent,) = pullback(tf.constant([1.0, 10.0]))
      assert cotangent.numpy().tolist() == [3.0, 30.0]
      ```
    """
    caller = "vjp"
    _validate.check_unconnected(unconnected, caller)
    primals = [_validate.as_differentiable(p, f"primals[{i}]", caller) for i, p in enumerate(primals)]
    tape = tf.GradientTape(persistent=True)
    with tape:
        _validate.watch(tape, primals)
        output = f(*primals)

    def vjp_fn(cotangent: Any) -> tuple:
        cotangent = _validate.as_differentiable(cotangent, "cotangent", caller)
        _validate.check_same_shape(cotangent, output, "cotangent", "the output of f", caller)
        names = [f"primals[{i}]" for i in range(len(primals))]
        flat_output, flat_cotangent = tf.nest.flatten(output), tf.nest.flatten(cotangent)
        flat_cotangent = [tf.cast(c, o.dtype) for c, o in zip(flat_cotangent, flat_output)]
        return tuple(_validate.gradient(tape, flat_output, primals, names, unconnected, caller, flat_cotangent))

    return output, vjp_fn


def jacobian(f: Callable[..., Any], argnums: ArgNums = 0, unconnected: str = "error") -> Callable[..., Any]:
    """Transforms ``f`` into its full Jacobian, shaped ``out.shape + in.shape``.

    Args:
      f: function returning one tensor.
      argnums: which argument(s) to differentiate; a tuple gives a tuple of Jacobians.
      unconnected: ``"error"`` (default) or ``"zero"``.

    Returns:
      A function returning the Jacobian(s).

    Example:
      ```python
      import tensorflow as tf
      from hodiff import jacobian

      J = jacobian(lambda x: x**2)(tf.constant([1.0, 2.0, 3.0]))
      assert J.numpy().tolist() == [[2, 0, 0], [0, 4, 0], [0, 0, 6]]
      ```
    """
    caller = "jacobian"
    mode = _validate.check_unconnected(unconnected, caller)

    def jacobian_f(*args, **kwargs):
        indices = _normalize_argnums(argnums, len(args), caller)
        args = _prepare_args(args, indices, caller)
        sources = [args[i] for i in indices]
        with tf.GradientTape() as tape:
            _validate.watch(tape, sources)
            output = tf.convert_to_tensor(f(*args, **kwargs))
        jacobians = tape.jacobian(output, sources, unconnected_gradients=mode)
        _validate.raise_if_unconnected(jacobians, [f"args[{i}]" for i in indices], caller)
        return jacobians[0] if isinstance(argnums, int) else tuple(jacobians)

    return jacobian_f


def batch_jacobian(f: Callable[[tf.Tensor], tf.Tensor], unconnected: str = "error") -> Callable[[tf.Tensor], tf.Tensor]:
    """Transforms a row-wise function into its per-example Jacobian ``(N, *out, *in)``.

    ``f`` maps a batch ``x`` of shape ``(N, *in)`` to ``(N, *out)`` and row ``n`` of the output
    may depend only on row ``n`` of the input (as for a Keras model without batch
    normalisation in training mode). Cross-example derivatives are not computed.

    Args:
      f: the row-wise function.
      unconnected: ``"error"`` (default) or ``"zero"``.

    Returns:
      A function of ``x`` returning the Jacobian of shape ``(N, *out, *in)``.

    Example:
      ```python
      import tensorflow as tf
      from hodiff import batch_jacobian

      x = tf.constant([[1.0, 2.0], [3.0, 4.0]])
      J = batch_jacobian(lambda x: x * x[:, :1])(x)   # (N, 2, 2)
      assert J.numpy()[1].tolist() == [[6.0, 0.0], [4.0, 3.0]]
      ```
    """
    caller = "batch_jacobian"
    mode = _validate.check_unconnected(unconnected, caller)

    def batch_jacobian_f(x):
        x = _validate.as_differentiable(x, "x", caller)
        if x.shape.rank is None or x.shape.rank < 1:
            raise ValueError(f"{caller}: `x` must have a leading batch axis, shape (N, ...); got shape {tuple(x.shape)}. For one example use x[None].")
        with tf.GradientTape() as tape:
            tape.watch(x)
            output = tf.convert_to_tensor(f(x))
            if output.shape.rank < 1:
                raise ValueError(f"{caller}: f must return a batch, shape (N, ...); it returned shape {tuple(output.shape)}. Use jacobian(f) for unbatched functions.")
            flat_output = tf.reshape(output, (tf.shape(output)[0], -1))
        result = tape.batch_jacobian(flat_output, x, unconnected_gradients=mode)
        _validate.raise_if_unconnected([result], ["x"], caller)
        return tf.reshape(result, tf.concat([tf.shape(output), tf.shape(x)[1:]], axis=0))

    return batch_jacobian_f


def hessian(f: Callable[[tf.Tensor], tf.Tensor], unconnected: str = "error") -> Callable[[tf.Tensor], tf.Tensor]:
    """Transforms a scalar function of one tensor into its Hessian, shaped ``x.shape + x.shape``.

    Args:
      f: function of one tensor returning a scalar.
      unconnected: ``"error"`` (default) or ``"zero"``.

    Returns:
      A function of ``x`` returning the Hessian.

    References:
      Works in eager mode, where ``tf.hessians`` does not (tensorflow issue 29781).

    Example:
      ```python
      import tensorflow as tf
      from hodiff import hessian

      H = hessian(lambda x: x[0] ** 2 * x[1])(tf.constant([1.0, 2.0]))
      assert H.numpy().tolist() == [[4.0, 2.0], [2.0, 0.0]]
      ```
    """
    caller = "hessian"
    mode = _validate.check_unconnected(unconnected, caller)

    def hessian_f(x):
        x = _validate.as_differentiable(x, "x", caller)
        with tf.GradientTape() as outer:
            outer.watch(x)
            with tf.GradientTape() as inner:
                inner.watch(x)
                value = f(x)
                _validate.check_scalar(value, caller)
            gradient = _validate.gradient(inner, value, [x], ["x"], unconnected, caller)[0]
        result = outer.jacobian(gradient, x, unconnected_gradients=mode)
        _validate.raise_if_unconnected([result], ["x"], caller)
        return result

    return hessian_f


def batch_hessian(u: Callable[[tf.Tensor], tf.Tensor], unconnected: str = "error") -> Callable[[tf.Tensor], tf.Tensor]:
    """Transforms a scalar field ``u: (N, d) -> (N,)`` into its per-example Hessian ``(N, d, d)``.

    Rows must be independent (row ``n`` of ``u(x)`` depends only on ``x[n]``). Computed with
    ``d`` reverse passes over one shared pair of tapes, a formulation that also compiles
    under XLA.

    Args:
      u: the field; returns shape ``(N,)`` or ``(N, 1)``.
      unconnected: ``"error"`` (default) or ``"zero"``.

    Returns:
      A function of ``x`` (shape ``(N, d)``) returning ``(N, d, d)``.

    Example:
      ```python
      import tensorflow as tf
      from hodiff import batch_hessian

      x = tf.constant([[1.0, 2.0]])
      H = batch_hessian(lambda x: x[:, 0] ** 2 * x[:, 1])(x)
      assert H.numpy()[0].tolist() == [[4.0, 2.0], [2.0, 0.0]]
      ```
    """
    caller = "batch_hessian"
    _validate.check_unconnected(unconnected, caller)

    def batch_hessian_f(x):
        x = _validate.as_differentiable(x, "x", caller)
        d = _validate.check_field_points(x, caller)
        nodes, _ = derivative_tower(u, x, [(i, j) for i in range(d) for j in range(i, d)], unconnected, caller)
        rows = [tf.stack([nodes[tuple(sorted((i, j)))] for j in range(d)], axis=-1) for i in range(d)]
        return tf.stack(rows, axis=1)

    return batch_hessian_f


def hvp(
    f: Callable[[Any], tf.Tensor],
    x: Any,
    v: Any,
    mode: str = "forward_over_reverse",
    unconnected: str = "error",
) -> Any:
    """Hessian-vector product ``H(x) @ v`` of a scalar function, without forming ``H``.

    Args:
      f: scalar function of ``x``.
      x: the point; a tensor, Variable or nested structure (e.g. ``model.trainable_variables``).
      v: the direction, same structure and shapes as ``x``.
      mode: ``"forward_over_reverse"`` (default; a forward-mode JVP of the gradient, usually
        fastest) or ``"reverse_over_reverse"`` (gradient of ``<grad f, v>``).
      unconnected: ``"error"`` (default) or ``"zero"``.

    Returns:
      ``H @ v`` with the structure of ``x``.

    References:
      Pearlmutter, "Fast exact multiplication by the Hessian", Neural Computation 1994.

    Example:
      ```python
      import tensorflow as tf
      from hodiff import hvp

      f = lambda x: tf.reduce_sum(x**3)          # H = diag(6x)
      Hv = hvp(f, tf.constant([1.0, 2.0]), tf.constant([1.0, 1.0]))
      assert Hv.numpy().tolist() == [6.0, 12.0]
      ```
    """
    caller = "hvp"
    if mode not in HVP_MODES:
        raise ValueError(f"{caller}: mode={mode!r} is not an option; use one of {HVP_MODES}.")
    _validate.check_unconnected(unconnected, caller)
    x = _validate.as_differentiable(x, "x", caller)
    v = _validate.as_differentiable(v, "v", caller)
    _validate.check_same_shape(v, x, "v", "x", caller)
    v = tf.nest.map_structure(lambda vi, xi: tf.cast(vi, xi.dtype), v, x)

    if mode == "forward_over_reverse":
        with tf.autodiff.ForwardAccumulator(tf.nest.flatten(x), tf.nest.flatten(v)) as accumulator:
            gradient = _first_gradient(f, x, unconnected, caller)
        result = accumulator.jvp(gradient, unconnected_gradients=_validate.check_unconnected(unconnected, caller))
        _validate.raise_if_unconnected([result], ["x"], caller)
        return _validate.densify(result)

    with tf.GradientTape() as outer:
        _validate.watch(outer, x)
        gradient = _first_gradient(f, x, unconnected, caller)
        directional = tf.add_n([tf.reduce_sum(g * vi) for g, vi in zip(tf.nest.flatten(gradient), tf.nest.flatten(v))])
    return _validate.gradient(outer, directional, [x], ["x"], unconnected, caller)[0]


def _first_gradient(f, x, unconnected, caller):
    with tf.GradientTape() as inner:
        _validate.watch(inner, x)
        value = f(x)
        _validate.check_scalar(value, caller)
    return _validate.gradient(inner, value, [x], ["x"], unconnected, caller)[0]


def nth_derivative(f: Callable[[tf.Tensor], tf.Tensor], n: int, unconnected: str = "error") -> Callable[[tf.Tensor], tf.Tensor]:
    """Transforms an elementwise function into its ``n``-th derivative by ``n`` nested tapes.

    ``f`` must act elementwise (output entry ``k`` depends only on input entry ``k``), as
    ``tf.sin`` or a scalar function of a scalar does; the result has the shape of ``x``.

    Args:
      f: elementwise function.
      n: order, an int >= 0 (0 returns ``f(x)``).
      unconnected: ``"error"`` (default) or ``"zero"`` (e.g. the 3rd derivative of ``x**2``).

    Returns:
      A function of ``x`` returning ``d^n f / dx^n`` elementwise.

    Example:
      ```python
      import tensorflow as tf
      from hodiff import nth_derivative

      x = tf.constant([0.0, 1.0])
      fourth = nth_derivative(tf.sin, 4)(x)           # sin'''' = sin
      tf.debugging.assert_near(fourth, tf.sin(x))
      ```
    """
    caller = "nth_derivative"
    if not isinstance(n, int) or isinstance(n, bool) or n < 0:
        raise ValueError(f"{caller}: n must be an int >= 0 (the order of the derivative), got {n!r}.")
    _validate.check_unconnected(unconnected, caller)

    def derivative(x, order):
        if order == 0:
            return f(x)
        with tf.GradientTape() as tape:
            tape.watch(x)
            lower = derivative(x, order - 1)
        return _validate.gradient(tape, lower, [x], ["x"], unconnected, caller)[0]

    def nth_derivative_f(x):
        x = _validate.as_differentiable(x, "x", caller)
        return derivative(x, n)

    return nth_derivative_f
