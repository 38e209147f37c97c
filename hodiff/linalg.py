"""The Hessian as a scipy LinearOperator: top eigenvalues and Newton-CG steps from scipy.

The matrix is never formed: every ``matvec`` is one compiled Hessian-vector product, so the
operator scales to the weights of a Keras model.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import scipy.optimize
import scipy.sparse.linalg
import tensorflow as tf

from hodiff import _validate
from hodiff.derivatives import hvp, value_and_grad

__all__ = ["hessian_operator", "hessian_eigenvalues", "newton_cg"]


def _flatten(structure: Any) -> np.ndarray:
    return np.concatenate([np.ravel(np.asarray(leaf)) for leaf in tf.nest.flatten(structure)])


def _unflatten(vector: np.ndarray, like: Any) -> Any:
    leaves, offset = [], 0
    for leaf in tf.nest.flatten(like):
        size = leaf.shape.num_elements()
        leaves.append(tf.constant(np.reshape(vector[offset : offset + size], leaf.shape), dtype=leaf.dtype))
        offset += size
    return tf.nest.pack_sequence_as(like, leaves)


def hessian_operator(
    f: Callable[[Any], tf.Tensor],
    x: Any,
    mode: str = "forward_over_reverse",
    jit_compile: bool = True,
) -> scipy.sparse.linalg.LinearOperator:
    """The Hessian of a scalar ``f`` at ``x`` as a ``scipy.sparse.linalg.LinearOperator``.

    Args:
      f: scalar function, called as ``f(x)``. For model weights, pass
        ``x = model.trainable_variables`` and let ``f`` ignore its argument or use it.
      x: the point: a tensor, array, Variable or structure of them (flattened in
        ``tf.nest`` order). Variables are read at every matvec, so the operator follows them.
      mode: HVP mode, see :func:`hodiff.hvp`.
      jit_compile: compile the HVP with XLA.

    Returns:
      A symmetric ``LinearOperator`` of shape ``(n, n)`` in the dtype of ``x``.

    Example:
      ```python
      import numpy as np, tensorflow as tf
      from hodiff import hessian_operator

      f = lambda x: tf.reduce_sum(tf.constant([1.0, 2.0, 3.0], tf.float64) * x**2)
      H = hessian_operator(f, np.zeros(3))
      assert np.allclose(H @ np.ones(3), [2.0, 4.0, 6.0])
      ```
    """
    caller = "hessian_operator"
    x = _validate.as_differentiable(x, "x", caller)
    leaves = tf.nest.flatten(x)
    n = sum(leaf.shape.num_elements() for leaf in leaves)
    dtype = leaves[0].dtype

    @tf.function(jit_compile=jit_compile, reduce_retracing=True)
    def product(v):
        return hvp(f, x, v, mode=mode)

    def matvec(vector):
        vector = np.asarray(vector, dtype=dtype.as_numpy_dtype).reshape(-1)
        return _flatten(product(_unflatten(vector, x)))

    return scipy.sparse.linalg.LinearOperator((n, n), matvec=matvec, rmatvec=matvec, dtype=dtype.as_numpy_dtype)


def hessian_eigenvalues(
    f: Callable[[Any], tf.Tensor], x: Any, k: int = 1, which: str = "LA", **eigsh_kwargs: Any
) -> tuple[np.ndarray, np.ndarray]:
    """Extreme eigenvalues of the Hessian of ``f`` at ``x`` with ``scipy.sparse.linalg.eigsh``.

    Args:
      f: scalar function of ``x``.
      x: the point (see :func:`hessian_operator`).
      k: number of eigenvalues, less than the number of entries of ``x``.
      which: ``"LA"`` largest algebraic (default), ``"SA"`` smallest, ``"LM"`` largest magnitude.
      **eigsh_kwargs: passed to ``eigsh`` (``tol``, ``maxiter``, ``v0``...).

    Returns:
      ``(eigenvalues, eigenvectors)``, eigenvalues sorted from largest to smallest,
      eigenvectors as the columns of an ``(n, k)`` array.

    Example:
      ```python
      import numpy as np, tensorflow as tf
      from hodiff import hessian_eigenvalues

      f = lambda x: tf.reduce_sum(tf.range(1.0, 11.0, dtype=tf.float64) * x**2)
      values, _ = hessian_eigenvalues(f, np.zeros(10), k=2)
      assert np.allclose(values, [20.0, 18.0])
      ```
    """
    operator = hessian_operator(f, x)
    if not isinstance(k, int) or not 1 <= k < operator.shape[0]:
        raise ValueError(
            f"hessian_eigenvalues: k must be an int with 1 <= k < {operator.shape[0]} (the size of x), got {k!r}."
        )
    values, vectors = scipy.sparse.linalg.eigsh(operator, k=k, which=which, **eigsh_kwargs)
    order = np.argsort(values)[::-1]
    return values[order], vectors[:, order]


def newton_cg(
    f: Callable[[tf.Tensor], tf.Tensor], x0: Any, jit_compile: bool = True, **minimize_kwargs: Any
) -> scipy.optimize.OptimizeResult:
    """Minimises a scalar ``f`` with ``scipy.optimize.minimize(method="Newton-CG")``.

    The gradient and the Hessian-vector products come from hodiff, compiled once.

    Args:
      f: scalar function of one tensor.
      x0: starting point, an array or tensor (float64 recommended).
      jit_compile: compile the gradient and HVP with XLA.
      **minimize_kwargs: passed to ``scipy.optimize.minimize`` (``tol``, ``options``...).

    Returns:
      scipy's ``OptimizeResult``; ``result.x`` has the shape of ``x0``.

    Example:
      ```python
      import numpy as np, tensorflow as tf
      from hodiff import newton_cg

      rosenbrock = lambda x: (1.0 - x[0]) ** 2 + 100.0 * (x[1] - x[0] ** 2) ** 2
      result = newton_cg(rosenbrock, np.array([-1.2, 1.0]))
      assert np.allclose(result.x, [1.0, 1.0], atol=1e-4)
      ```
    """
    caller = "newton_cg"
    x0 = _validate.as_differentiable(x0, "x0", caller)
    if not isinstance(x0, tf.Tensor):
        raise TypeError(f"{caller}: x0 must be one array or tensor, got {type(x0).__name__}.")
    shape, dtype = x0.shape, x0.dtype
    value_and_gradient = tf.function(value_and_grad(f), jit_compile=jit_compile, reduce_retracing=True)
    product = tf.function(lambda x, v: hvp(f, x, v), jit_compile=jit_compile, reduce_retracing=True)

    def as_tensor(vector):
        return tf.constant(np.reshape(vector, shape), dtype=dtype)

    def fun(vector):
        value, gradient = value_and_gradient(as_tensor(vector))
        return float(value), np.ravel(gradient.numpy()).astype(np.float64)

    def hessp(vector, direction):
        return np.ravel(product(as_tensor(vector), as_tensor(direction)).numpy()).astype(np.float64)

    result = scipy.optimize.minimize(
        fun, np.ravel(x0.numpy()).astype(np.float64), jac=True, hessp=hessp, method="Newton-CG", **minimize_kwargs
    )
    result.x = np.reshape(result.x, shape)
    return result
