"""L-BFGS for Keras models and TensorFlow variables through ``scipy.optimize.minimize``.

:func:`minimize_lbfgs` flattens the variables into one float64 vector, evaluates the loss and
its gradient with one XLA-compiled function, and hands them to scipy's L-BFGS-B. The variables
may be float16, float32 or float64; scipy always works in float64. The variables end at
scipy's answer and scipy's ``OptimizeResult`` comes back.

Under a ``tf.distribute`` strategy (``strategy=``), ``loss_fn`` is each replica's loss: every
replica computes it and its gradient on its own device, the values and the flat gradients are
averaged over the replicas (one all-reduce each), and scipy sees that mean, the same numbers on
every worker, so all workers take the same iterates.

Example:
  ```python
  import numpy as np
  import tensorflow as tf
  from hodiff.training.lbfgs import minimize_lbfgs

  x = tf.Variable([-1.2, 1.0], dtype=tf.float64)
  rosenbrock = lambda: 100.0 * (x[1] - x[0] ** 2) ** 2 + (1.0 - x[0]) ** 2
  result = minimize_lbfgs(rosenbrock, [x], max_iterations=200)
  assert result.success and np.allclose(x.numpy(), [1.0, 1.0], atol=1e-6)
  ```
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import keras
import numpy as np
import scipy.optimize
import tensorflow as tf
from tqdm.auto import tqdm

from hodiff.training.step import xla_reaches

__all__ = ["minimize_lbfgs"]

logger = logging.getLogger(__name__)


def minimize_lbfgs(
    loss_fn: Callable[[], tf.Tensor],
    variables: keras.Model | Sequence[Any],
    max_iterations: int = 1000,
    gtol: float = 1e-10,
    ftol: float = float(np.finfo(float).eps),
    max_corrections: int = 50,
    max_evaluations: int | None = None,
    callback: Callable[[scipy.optimize.OptimizeResult], Any] | None = None,
    loss_scale: float = 1.0,
    jit_compile: bool = True,
    progress: bool = False,
    strategy: tf.distribute.Strategy | None = None,
    compiled: dict | None = None,
    unconnected: str = "error",
) -> scipy.optimize.OptimizeResult:
    """Minimises ``loss_fn()`` over ``variables`` with scipy's L-BFGS-B (float64).

    The defaults run until ``max_iterations``, a vanishing gradient or a failed line search:
    scipy's own ``ftol`` (2.2e-9 relative to ``max(|f|, 1)``) stops as soon as the loss is
    small, which ends physics-informed fits far too early.

    Args:
      loss_fn: ``loss_fn() -> scalar``, using the variables by closure; with ``strategy``, the
        replica's loss, whose mean over the replicas is minimised.
      variables: a Keras model (its trainable variables) or a list of variables.
      max_iterations: scipy's ``maxiter``.
      gtol: stop when the largest gradient entry falls below this.
      ftol: stop when the relative decrease of the loss falls below this.
      max_corrections: curvature pairs kept (scipy's ``maxcor``).
      max_evaluations: scipy's ``maxfun`` (default ``1.25 * max_iterations + 20``).
      callback: ``callback(intermediate_result)`` after every iteration, with the variables
        already set to the iterate ``intermediate_result.x`` (its loss is ``.fun``); raise
        ``StopIteration`` to stop.
      loss_scale: the loss is multiplied by this before differentiating and the gradient
        divided after (mixed precision: float16 gradients then do not underflow); halved
        whenever the scaled gradient overflows. Leave 1 for float32 and float64 models.
      jit_compile: compile the value-and-gradient with XLA (per replica with ``strategy``; not
        on several logical CPU devices in one process, where XLA cannot read the replicas' variables).
      progress: show a tqdm progress bar.
      strategy: a ``tf.distribute`` strategy whose scope created the variables; ``None`` runs
        on the default device.
      compiled: a dict that keeps the compiled value-and-gradient between calls on the same ``loss_fn`` and
        variables (a trainer's windows), so that it is traced once; ``None``: traced per call.
      unconnected: what to do with variables the loss does not depend on: ``"error"`` (a ``ValueError``
        naming them: leave them out of ``variables``) or ``"zero"`` (their gradient is zero, so they keep
        their values; the result's ``unconnected`` names them).

    Returns:
      scipy's ``OptimizeResult`` (``x``, ``fun``, ``nit``, ``nfev``, ``message``, ``success``, and
      ``unconnected``: the names of the variables the loss does not reach); the variables hold ``result.x``.

    Raises:
      ValueError: bad arguments, or (``unconnected="error"``) a loss that does not depend on some variables.
      FloatingPointError: the loss or its gradient is not finite at the starting point.

    References:
      Byrd, Lu, Nocedal & Zhu (1995), "A limited memory algorithm for bound constrained
      optimization", SIAM J. Sci. Comput. 16.
    """
    if not isinstance(max_iterations, int) or max_iterations < 1:
        raise ValueError(f"minimize_lbfgs: max_iterations must be an int >= 1, got {max_iterations!r}.")
    variables = variable_list(variables)
    compiled = {} if compiled is None else compiled
    fun, x0, assign = flat_objective(
        "minimize_lbfgs", loss_fn, variables, loss_scale, jit_compile, strategy, compiled, unconnected
    )
    options = {
        "maxiter": max_iterations,
        "maxfun": max_evaluations or int(1.25 * max_iterations) + 20,
        "ftol": ftol,
        "gtol": gtol,
        "maxcor": max_corrections,
    }
    with iteration_progress("L-BFGS", max_iterations, progress, assign, callback) as on_iteration:
        result = scipy.optimize.minimize(fun, x0, jac=True, method="L-BFGS-B", callback=on_iteration, options=options)
    assign(result.x)
    result.unconnected = list(compiled.get("unconnected", []))
    if str(result.message).startswith("ABNORMAL"):
        result.message = _line_search_failed(variables)
        logger.warning("minimize_lbfgs: %s", result.message)
    logger.info(
        "L-BFGS stopped after %d iterations and %d evaluations, loss %.4e: %s",
        result.nit,
        result.nfev,
        result.fun,
        result.message,
    )
    return result


def variable_list(variables: keras.Model | Sequence[Any]) -> list:
    """A Keras model's trainable variables, or the given variables, as a list."""
    return list(variables.trainable_variables if isinstance(variables, keras.Model) else variables)


@contextlib.contextmanager
def iteration_progress(
    name: str,
    max_iterations: int,
    progress: bool,
    assign: Callable[[np.ndarray], None],
    callback: Callable[[scipy.optimize.OptimizeResult], Any] | None,
) -> Iterator[Callable[[scipy.optimize.OptimizeResult], Any]]:
    """The per-iteration hook of a scipy-style minimiser: a tqdm bar (closed on exit) and the caller's
    ``callback``, run with the variables set to the iterate (``assign(x)``)."""
    bar = tqdm(total=max_iterations, desc=name, disable=not progress, unit="it")

    def on_iteration(intermediate_result: scipy.optimize.OptimizeResult) -> Any:
        bar.update(1)
        bar.set_postfix(loss=f"{intermediate_result.fun:.3e}")
        if callback is None:
            return None
        assign(intermediate_result.x)
        return callback(intermediate_result)

    try:
        yield on_iteration
    finally:
        bar.close()


def flat_objective(
    caller: str,
    loss_fn: Callable[[], tf.Tensor],
    variables: keras.Model | Sequence[Any],
    loss_scale: float,
    jit_compile: bool,
    strategy: tf.distribute.Strategy | None,
    compiled: dict | None = None,
    unconnected: str = "error",
) -> tuple[Callable[[np.ndarray], tuple[float, np.ndarray]], np.ndarray, Callable[[np.ndarray], None]]:
    """The variables as one float64 vector: ``(fun, x0, assign)`` for a scipy-style minimiser.

    ``fun(x)`` assigns ``x`` to the variables and returns the loss and its flat gradient (float64,
    one compiled call; averaged over the replicas with ``strategy``), halving ``loss_scale`` while the
    scaled gradient overflows; ``x0`` is the variables' current values; ``assign(x)`` sets them.
    ``caller`` names the function in error messages; ``compiled`` keeps the compiled value-and-gradient
    between calls (traced on the first), and under ``"unconnected"`` the names of the variables the loss does not
    depend on (known once traced). ``unconnected``: ``"error"`` refuses such variables, ``"zero"`` gives them a
    zero gradient (see :func:`minimize_lbfgs`).

    Raises:
      ValueError: no variables, a loss that does not depend on some (``unconnected="error"``), or a bad
        ``loss_scale`` or ``unconnected``.
      FloatingPointError: the loss or its gradient is not finite at ``x0``.
    """
    variables = variable_list(variables)
    if not variables:
        raise ValueError(
            f"{caller}: there are no variables to optimise. A Keras model has no weights until it is "
            "built: call it once or give it a keras.Input."
        )
    if not (np.isfinite(loss_scale) and loss_scale >= 1.0):
        raise ValueError(f"{caller}: loss_scale must be a finite number >= 1, got {loss_scale!r}.")
    if unconnected not in ("error", "zero"):
        raise ValueError(f"{caller}: unconnected must be 'error' or 'zero', got {unconnected!r}.")
    shapes = [tuple(v.shape) for v in variables]
    sizes = [int(np.prod(s)) for s in shapes]

    def assign_tensor(flat: tf.Tensor) -> None:
        for v, part, shape in zip(variables, tf.split(flat, sizes), shapes):
            v.assign(tf.cast(tf.reshape(part, shape), v.dtype))

    def local_value_and_gradient(scale):
        with tf.GradientTape() as tape:
            loss = loss_fn()
            scaled = loss * tf.cast(scale, loss.dtype)
        grads = tape.gradient(scaled, variables)
        missing = [v.name for v, g in zip(variables, grads) if g is None]
        if missing and unconnected == "error":
            raise ValueError(
                f"{caller}: the loss does not depend on {missing}; leave them out of variables, or pass "
                "unconnected='zero' to keep them at their values (a zero gradient)."
            )
        if compiled is not None:
            compiled["unconnected"] = missing  # at trace time: the same for every later call
        grads = [tf.zeros_like(v) if g is None else g for v, g in zip(variables, grads)]
        gradient = tf.concat([tf.reshape(tf.cast(g, tf.float64), [-1]) for g in grads], 0) / scale
        return tf.cast(loss, tf.float64), gradient

    if compiled is not None and "value_and_gradient" in compiled:
        value_and_gradient = compiled["value_and_gradient"]
    elif strategy is None:

        @tf.function(jit_compile=jit_compile, autograph=False)
        def value_and_gradient(flat, scale):
            assign_tensor(flat)
            return local_value_and_gradient(scale)

    else:
        replica_step = tf.function(
            local_value_and_gradient, jit_compile=jit_compile and xla_reaches(strategy), autograph=False
        )

        @tf.function(autograph=False)
        def value_and_gradient(flat, scale):
            assign_tensor(flat)  # cross-replica context: every replica's copy
            loss, gradient = strategy.run(replica_step, args=(scale,))
            mean = lambda value: strategy.reduce(tf.distribute.ReduceOp.MEAN, value, axis=None)
            return mean(loss), mean(gradient)

    if compiled is not None:
        compiled["value_and_gradient"] = value_and_gradient
    scale = [float(loss_scale)]

    def fun(flat: np.ndarray) -> tuple[float, np.ndarray]:
        while True:
            loss, gradient = value_and_gradient(tf.constant(flat, tf.float64), tf.constant(scale[0], tf.float64))
            loss, gradient = float(loss), gradient.numpy()
            if scale[0] > 1.0 and np.isfinite(loss) and not np.all(np.isfinite(gradient)):
                scale[0] = max(1.0, scale[0] / 2)
                continue
            return loss, gradient

    x0 = np.concatenate([np.ravel(np.asarray(v.numpy(), dtype=np.float64)) for v in variables])
    loss0, gradient0 = fun(x0)
    if not (np.isfinite(loss0) and np.all(np.isfinite(gradient0))):
        raise FloatingPointError(
            f"{caller}: the loss is {loss0} with {int(np.sum(~np.isfinite(gradient0)))} non-finite "
            f"gradient entries at the starting point; fix the loss or the initial values first."
        )
    return fun, x0, lambda flat: assign_tensor(tf.constant(flat, tf.float64))


def _line_search_failed(variables: list) -> str:
    """What scipy's bare ``"ABNORMAL: "`` means (its line search found no acceptable step), the likely
    cause for variables of this precision, and the fix."""
    single = any(tf.as_dtype(v.dtype).size < 8 for v in variables)
    if single:
        cause = (
            "Likely cause: float32 (or lower) precision near convergence: the loss and its gradient are "
            "computed to about 1e-7 relative, which is more than the decrease a step can still make, so the "
            "search sees rounding noise. Fix: train in float64 (pinn.mlp(..., dtype='float64') and "
            "float64 points), or stop earlier (fewer iterations, or a larger ftol / gtol)"
        )
    else:
        cause = (
            "Likely cause: a loss that is not smooth, changes between evaluations (resampled points, dropout) "
            "or whose gradient does not match it (a custom gradient, tf.stop_gradient); fix the loss, or stop "
            "earlier (fewer iterations, or a larger ftol / gtol)"
        )
    return (
        "ABNORMAL: line search failed: no step along the L-BFGS direction lowered the loss enough. "
        f"{cause}. The variables hold the last accepted iterate."
    )
