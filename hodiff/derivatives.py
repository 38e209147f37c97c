"""Derivatives as function transforms that compose: the tapes stay inside.

Every transform takes a Python callable and returns a new callable (``grad``, ``jacobian``,
``hessian``...) or evaluates directly at a point (``jvp``, ``vjp``, ``hvp``). They run in eager
mode, inside ``tf.function`` and inside ``tf.function(jit_compile=True)``, on tensors, arrays,
``tf.Variable`` s and nested structures of them (for example a model's ``trainable_variables``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import keras
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
    "elementwise_derivatives",
    "HVP_MODES",
]

HVP_MODES = ("forward_over_reverse", "reverse_over_reverse")


def _normalize_argnums(argnums: ArgNums, num_args: int, caller: str) -> tuple[int, ...]:
    indices = (argnums,) if isinstance(argnums, int) else tuple(argnums)
    if not indices or not all(isinstance(i, int) and not isinstance(i, bool) for i in indices):
        raise TypeError(f"{caller}: argnums must be an int or a non-empty tuple of ints, got {argnums!r}.")
    for i in indices:
        if not -num_args <= i < num_args:
            raise ValueError(
                f"{caller}: argnums={argnums!r} refers to argument {i}, but the function was "
                f"called with {num_args} positional argument(s). Pass argnums within range."
            )
    normalized = tuple(i % num_args for i in indices)
    if len(set(normalized)) != len(normalized):
        raise ValueError(f"{caller}: argnums={argnums!r} names an argument twice; name each position once.")
    return normalized


def _independent_args(args: Sequence[Any], indices: Sequence[int], caller: str, name: str = "args") -> list[Any]:
    """Makes every leaf of the differentiated positions its own variable, as a textbook would.

    A tape tracks tensors by identity, so the same tensor passed as ``x`` and ``y`` would
    collect the derivative through both. Each differentiated tensor leaf becomes a fresh
    ``tf.identity`` copy (still differentiable by an enclosing tape, so transforms nest). A
    ``tf.Variable`` stays itself at its first differentiated occurrence (so reads through a
    closure, e.g. a Keras model, still count); its other occurrences, differentiated or not,
    become values read here, before any tape of this transform starts.
    """
    args = list(args)
    differentiated: set[int] = set()

    def independent(leaf):
        if isinstance(leaf, tf.Variable):
            if id(leaf) not in differentiated:
                differentiated.add(id(leaf))
                return leaf
            return tf.identity(tf.convert_to_tensor(leaf))
        return tf.identity(leaf)

    for i in indices:
        args[i] = tf.nest.map_structure(independent, _validate.as_differentiable(args[i], f"{name}[{i}]", caller))

    def read_if_differentiated(leaf):
        variable = leaf.value if isinstance(leaf, keras.Variable) else leaf
        if isinstance(variable, tf.Variable) and id(variable) in differentiated:
            return tf.convert_to_tensor(variable)
        return leaf

    for j in set(range(len(args))) - set(indices):
        args[j] = tf.nest.map_structure(read_if_differentiated, args[j])
    return args


def _split_aux(output: Any, has_aux: bool, caller: str) -> tuple[Any, Any]:
    if not has_aux:
        return output, None
    if not isinstance(output, (tuple, list)) or len(output) != 2:
        raise ValueError(
            f"{caller}: has_aux=True needs f to return a pair (value, aux); it returned "
            f"{type(output).__name__}. Return (value, aux), or pass has_aux=False."
        )
    return output[0], output[1]


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
        argument; ``"zero"`` returns zeros there. A derivative of a derivative (``f`` itself
        returns a derivative, as in ``grad(grad(g))``) is zero where it does not depend on
        the argument, as in JAX, with either option.

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
        args = _independent_args(args, indices, caller)
        sources = [args[i] for i in indices]
        with tf.GradientTape() as tape:
            _validate.watch(tape, sources)
            value, aux = _split_aux(f(*args, **kwargs), has_aux, caller)
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
    has_aux: bool = False,
    unconnected: str = "error",
) -> tuple[Any, ...]:
    """Forward-mode Jacobian-vector product ``J(primals) @ tangents``.

    Uses ``tf.autodiff.ForwardAccumulator``: one forward pass, no tape of the whole function.
    Each primal is its own variable, even when the same tensor is passed twice.

    Args:
      f: function of ``len(primals)`` positional arguments.
      primals: the point, a tuple or list of arguments.
      tangents: the direction, one entry per primal with the same shape.
      has_aux: ``f`` returns ``(output, aux)``; ``aux`` is passed through untouched.
      unconnected: ``"error"`` (default) or ``"zero"`` for outputs that do not depend on
        the primals.

    Returns:
      ``(f(*primals), jvp)`` where ``jvp`` has the structure of the output, or
      ``(output, jvp, aux)`` when ``has_aux``.

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
        raise ValueError(
            f"{caller}: got {len(primals)} primals but {len(tangents)} tangents; give one tangent per primal."
        )
    primals = _independent_args(primals, range(len(primals)), caller, "primals")
    tangents = [_validate.as_differentiable(t, f"tangents[{i}]", caller) for i, t in enumerate(tangents)]
    for i, (p, t) in enumerate(zip(primals, tangents)):
        _validate.check_same_shape(t, p, f"tangents[{i}]", f"primals[{i}]", caller)
    flat_primals, flat_tangents = tf.nest.flatten(primals), tf.nest.flatten(tangents)
    flat_tangents = [tf.cast(t, p.dtype) for t, p in zip(flat_tangents, flat_primals)]
    with tf.autodiff.ForwardAccumulator(flat_primals, flat_tangents) as accumulator:
        output, aux = _split_aux(f(*primals), has_aux, caller)
    tangent_out = accumulator.jvp(output, unconnected_gradients=mode)
    _validate.raise_if_unconnected([tangent_out], ["primals"], caller)
    tangent_out = _validate.connect(tangent_out, flat_primals)
    return (output, tangent_out, aux) if has_aux else (output, tangent_out)


def vjp(f: Callable[..., Any], *primals: Any, has_aux: bool = False, unconnected: str = "error") -> tuple[Any, ...]:
    """Reverse-mode vector-Jacobian product: returns ``f(*primals)`` and a pullback.

    Args:
      f: function of ``len(primals)`` positional arguments.
      *primals: the point; each is its own variable, even when the same tensor is passed twice.
      has_aux: ``f`` returns ``(output, aux)``; ``aux`` is returned untouched.
      unconnected: ``"error"`` (default) or ``"zero"``.

    Returns:
      ``(out, vjp_fn)`` or ``(out, vjp_fn, aux)``; ``vjp_fn(cotangent)`` (cotangent shaped like
      ``out``) returns a tuple with one cotangent per primal. ``vjp_fn`` may be called several
      times: the forward pass is shared.

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
    sources = _independent_args(primals, range(len(primals)), caller, "primals")
    tape = tf.GradientTape(persistent=True)
    with tape:
        _validate.watch(tape, sources)
        output, aux = _split_aux(f(*sources), has_aux, caller)
    names = [f"primals[{i}]" for i in range(len(primals))]

    def vjp_fn(cotangent: Any) -> tuple:
        cotangent = _validate.as_differentiable(cotangent, "cotangent", caller)
        _validate.check_same_shape(cotangent, output, "cotangent", "the output of f", caller)
        flat_output, flat_cotangent = tf.nest.flatten(output), tf.nest.flatten(cotangent)
        flat_cotangent = [tf.cast(c, o.dtype) for c, o in zip(flat_cotangent, flat_output)]
        return tuple(_validate.gradient(tape, flat_output, sources, names, unconnected, caller, flat_cotangent))

    return (output, vjp_fn, aux) if has_aux else (output, vjp_fn)


def jacobian(
    f: Callable[..., Any], argnums: ArgNums = 0, has_aux: bool = False, unconnected: str = "error"
) -> Callable[..., Any]:
    """Transforms ``f`` into its full Jacobian, shaped ``out.shape + in.shape``.

    Args:
      f: function returning a tensor or a nested structure of tensors.
      argnums: which argument(s) to differentiate; a tuple gives a tuple of Jacobians.
      has_aux: ``f`` returns ``(output, aux)``; the transformed function returns
        ``(jacobian, aux)``.
      unconnected: ``"error"`` (default) or ``"zero"``.

    Returns:
      A function returning the Jacobian(s); for a structured output, the output's structure
      with the Jacobian(s) of each leaf in place of the leaf.

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
        args = _independent_args(args, indices, caller)
        sources = [args[i] for i in indices]
        with tf.GradientTape(persistent=True) as tape:
            _validate.watch(tape, sources)
            output, aux = _split_aux(f(*args, **kwargs), has_aux, caller)
            output = tf.nest.map_structure(tf.convert_to_tensor, output)
        names = [f"args[{i}]" for i in indices]
        leaves = []
        for leaf in tf.nest.flatten(output):
            jacobians = tape.jacobian(leaf, sources, unconnected_gradients=mode)
            _validate.raise_if_unconnected(jacobians, names, caller)
            jacobians = _validate.connect(jacobians, sources)
            leaves.append(jacobians[0] if isinstance(argnums, int) else tuple(jacobians))
        result = tf.nest.pack_sequence_as(output, leaves)
        return (result, aux) if has_aux else result

    return jacobian_f


def batch_jacobian(
    f: Callable[[tf.Tensor], Any], has_aux: bool = False, unconnected: str = "error"
) -> Callable[[tf.Tensor], Any]:
    """Transforms a row-wise function into its per-example Jacobian ``(N, *out, *in)``.

    ``f`` maps a batch ``x`` of shape ``(N, *in)`` to ``(N, *out)`` and row ``n`` of the output
    may depend only on row ``n`` of the input (as for a Keras model without batch
    normalisation in training mode). Cross-example derivatives are not computed. An empty
    batch (``N = 0``, known when traced or only when run, nested or not) gives an empty result,
    and a gradient through it is zero, in eager, graph and XLA alike.

    Args:
      f: the row-wise function.
      has_aux: ``f`` returns ``(output, aux)``; the transformed function returns
        ``(jacobian, aux)``.
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
            raise ValueError(
                f"{caller}: `x` must have a leading batch axis, shape (N, ...); got shape {tuple(x.shape)}. "
                f"For one example use x[None]."
            )
        with tf.GradientTape(persistent=True) as tape:
            tape.watch(x)
            output, aux = _split_aux(f(x), has_aux, caller)
            output = tf.convert_to_tensor(output)
            if output.shape.rank < 1:
                raise ValueError(
                    f"{caller}: f must return a batch, shape (N, ...); it returned shape {tuple(output.shape)}. "
                    f"Use jacobian(f) for unbatched functions."
                )
            # The row size as a product, never as size / N: an empty batch (N = 0, perhaps known only when the
            # function runs) must not reach a division or a reshape with -1 (tape.batch_jacobian has both).
            row = output.shape[1:].num_elements()
            width = tf.reduce_prod(tf.shape(output)[1:]) if row is None else row
            flat_output = tf.reshape(output, tf.stack([tf.shape(output)[0], width]))
        result_shape = tf.concat([tf.shape(output), tf.shape(x)[1:]], axis=0)
        result = _validate.connect(tf.reshape(_columns_gradient(tape, flat_output, x, mode, caller), result_shape), x)
        return (result, aux) if has_aux else result

    return batch_jacobian_f


LOOPED_COLUMNS = 64  # up to this many output entries per example, batch_jacobian runs one reverse pass per entry


def _columns_gradient(
    tape: tf.GradientTape, flat_output: tf.Tensor, x: tf.Tensor, mode: tf.UnconnectedGradients, caller: str
) -> tf.Tensor:
    """``d flat_output[n, j] / d x[n]`` for every row ``n`` and column ``j``: ``(N, m, *x.shape[1:])``.

    One reverse pass per column ``j`` of the (persistent) ``tape``, seeded with the one-hot row ``e_j``
    on every example. With ``m <= LOOPED_COLUMNS`` known when the function is traced, the passes are
    written out one by one: no ``tf.cond`` on the batch size and no vectorised loop, so a nested
    ``batch_jacobian`` compiles under XLA for a batch of unknown size, 0 and 1 rows included (a
    vectorised loop with a branch inside failed there), and an empty batch keeps the path to the
    weights (zero gradients, in eager mode as in graph mode). Wider outputs are vectorised over
    ``j`` (``tf.vectorized_map``), as ``tape.batch_jacobian`` does.
    """
    width = flat_output.shape[1]

    def column(j: Any) -> tf.Tensor:
        seed = tf.broadcast_to(tf.one_hot(j, tf.shape(flat_output)[1], dtype=flat_output.dtype), tf.shape(flat_output))
        derivative = _validate.densify(tape.gradient(flat_output, x, output_gradients=seed, unconnected_gradients=mode))
        _validate.raise_if_unconnected([derivative], ["x"], caller)
        return derivative

    if width is not None and width <= LOOPED_COLUMNS:
        no_columns = tf.zeros(tf.concat([[0], tf.shape(x)], axis=0), x.dtype)
        per_column = tf.stack([column(j) for j in range(width)]) if width else no_columns
    else:
        per_column = tf.vectorized_map(column, tf.range(tf.shape(flat_output)[1]))  # (m, N, *in)
    return tf.transpose(per_column, [1, 0, *range(2, x.shape.rank + 1)])


def hessian(
    f: Callable[..., tf.Tensor], argnums: ArgNums = 0, has_aux: bool = False, unconnected: str = "error"
) -> Callable[..., Any]:
    """Transforms a scalar function into its Hessian: ``jacobian(grad(f))``.

    Args:
      f: function returning a scalar (or ``(scalar, aux)`` when ``has_aux``).
      argnums: which argument(s) to differentiate; for a tuple ``(i, j)`` the result is the
        nested tuple of blocks ``H[a][b] = d^2 f / d args[a] d args[b]``.
      has_aux: ``f`` returns ``(value, aux)``; the transformed function returns
        ``(hessian, aux)``.
      unconnected: ``"error"`` (default) or ``"zero"``.

    Returns:
      A function with the signature of ``f`` returning the Hessian, shaped
      ``x.shape + x.shape`` for one tensor argument.

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
    return jacobian(grad(f, argnums, has_aux, unconnected), argnums, has_aux, unconnected)


def batch_hessian(u: Callable[[tf.Tensor], tf.Tensor], unconnected: str = "error") -> Callable[[tf.Tensor], tf.Tensor]:
    """Transforms a scalar field ``u: (N, d) -> (N,)`` into its per-example Hessian ``(N, d, d)``.

    Rows must be independent (row ``n`` of ``u(x)`` depends only on ``x[n]``). Computed with
    ``d`` reverse passes over one shared pair of tapes, a formulation that also compiles
    under XLA.

    Args:
      u: the field; returns shape ``(N,)`` or ``(N, 1)``.
      unconnected: ``"error"`` (default) or ``"zero"``.

    Returns:
      A function of ``x`` (shape ``(N, d)``) returning ``(N, d, d)`` in the dtype of ``x``.

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

    Built from the transforms: ``jvp(grad(f), (x,), (v,))`` (forward over reverse) or the
    pullback of ``grad(f)`` applied to ``v`` (reverse over reverse; ``H`` is symmetric).

    Args:
      f: scalar function of ``x``.
      x: the point; a tensor, Variable or nested structure (e.g. ``model.trainable_variables``).
      v: the direction, same structure and shapes as ``x``.
      mode: ``"forward_over_reverse"`` (default; a forward-mode JVP of the gradient, usually
        fastest) or ``"reverse_over_reverse"`` (a vector-Jacobian product of the gradient).
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
    v = tf.nest.pack_sequence_as(x, [tf.cast(vi, xi.dtype) for vi, xi in zip(tf.nest.flatten(v), tf.nest.flatten(x))])
    gradient = grad(f, unconnected=unconnected)
    if mode == "forward_over_reverse":
        return _validate.densify(jvp(gradient, (x,), (v,), unconnected=unconnected)[1])
    _, pullback = vjp(gradient, x, unconnected=unconnected)
    return pullback(v)[0]


def elementwise_derivatives(
    f: Callable[[tf.Tensor], tf.Tensor], n: int, unconnected: str = "error"
) -> Callable[[tf.Tensor], list[tf.Tensor]]:
    """Transforms an elementwise function into the list ``[f, f', ..., f^(n)]`` by nested tapes.

    ``f`` must act elementwise (output entry ``k`` depends only on input entry ``k``), as
    ``tf.sin`` or a Keras activation does. Tape ``k`` records only the computation of the
    derivative of order ``k - 1``, so all orders cost one chain of ``n`` tapes.

    Args:
      f: elementwise function.
      n: highest order, an int >= 0.
      unconnected: ``"error"`` (default) or ``"zero"`` for an ``f`` that does not depend on ``x``;
        an order beyond the first that does not (the 3rd derivative of ``x**2``) is zero either way.

    Returns:
      A function of ``x`` returning ``n + 1`` tensors shaped like ``x``.

    Example:
      ```python
      import tensorflow as tf
      from hodiff import elementwise_derivatives

      value, first, second = elementwise_derivatives(tf.sin, 2)(tf.constant([0.0]))
      assert first.numpy().tolist() == [1.0] and second.numpy().tolist() == [0.0]
      ```
    """
    caller = "elementwise_derivatives"
    if not isinstance(n, int) or isinstance(n, bool) or n < 0:
        raise ValueError(f"{caller}: n must be an int >= 0 (the highest order), got {n!r}.")
    _validate.check_unconnected(unconnected, caller)

    def up_to(x, order):
        if order == 0:
            return [f(x)]
        with tf.GradientTape() as tape:
            tape.watch(x)
            lower = up_to(x, order - 1)
        return lower + _validate.gradient(tape, lower[-1], [x], ["x"], unconnected, caller)

    def elementwise_derivatives_f(x):
        return up_to(_validate.as_differentiable(x, "x", caller), n)

    return elementwise_derivatives_f


def nth_derivative(
    f: Callable[[tf.Tensor], tf.Tensor], n: int, unconnected: str = "error"
) -> Callable[[tf.Tensor], tf.Tensor]:
    """Transforms an elementwise function into its ``n``-th derivative by ``n`` nested tapes.

    ``f`` must act elementwise (output entry ``k`` depends only on input entry ``k``), as
    ``tf.sin`` or a scalar function of a scalar does; the result has the shape of ``x``.

    Args:
      f: elementwise function.
      n: order, an int >= 0 (0 returns ``f(x)``).
      unconnected: ``"error"`` (default) or ``"zero"`` for an ``f`` that does not depend on ``x``;
        an order beyond the first that does not (the 3rd derivative of ``x**2``) is zero either way.

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
    if not isinstance(n, int) or isinstance(n, bool) or n < 0:
        raise ValueError(f"nth_derivative: n must be an int >= 0 (the order of the derivative), got {n!r}.")
    all_orders = elementwise_derivatives(f, n, unconnected)
    return lambda x: all_orders(x)[-1]
