"""Explicit-weights calls of Keras models, in the spirit of ``torch.func.functional_call``.

``functional_call(model, weights, x)`` runs ``model`` with ``weights`` in place of its trainable
variables and returns the outputs; the model's own variables are neither read nor changed. A
function of the weights written with it, ``lambda w: loss(functional_call(model, w, x))``, uses
its argument, so every hodiff transform of it (``grad``, ``hessian``, ``hvp``, ``jvp``) is a
derivative in the weights, as in JAX.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import keras
import tensorflow as tf

__all__ = ["functional_call"]


def functional_call(
    model: keras.Model, weights: Sequence[Any] | Mapping[str, Any], x: Any, training: bool = False
) -> Any:
    """Runs ``model`` on ``x`` with ``weights`` in place of its trainable variables.

    Uses Keras 3's ``model.stateless_call``: non-trainable variables (e.g. BatchNorm's moving
    statistics) are read from the model, and nothing is written back.

    Args:
      model: a built Keras 3 model.
      weights: one tensor per trainable variable, either a list in the order of
        ``model.trainable_variables`` or a mapping from each variable's ``path`` (e.g.
        ``"sequential/dense/kernel"``) to its value. A mapping may leave variables out: those
        keep the model's values.
      x: the model's input.
      training: passed to the model's layers (Dropout, BatchNorm batch statistics).

    Returns:
      The model's outputs for ``x`` under ``weights``.

    Example:
      ```python
      import keras
      import tensorflow as tf
      import hodiff

      model = keras.Sequential([keras.Input((1,)), keras.layers.Dense(1, use_bias=False)])
      x = tf.constant([[2.0]])
      loss = lambda w: tf.reduce_sum(hodiff.functional_call(model, w, x) ** 2)
      (g,) = hodiff.grad(loss)([tf.constant([[3.0]])])   # d/dw (2w)^2 = 8w at w = 3
      assert float(g[0, 0]) == 24.0
      ```
    """
    caller = "functional_call"
    if not isinstance(model, keras.Model):
        raise TypeError(f"{caller}: model must be a Keras model; got {type(model).__name__}.")
    if not model.built:
        raise ValueError(f"{caller}: the model has no weights yet; give it a keras.Input(shape=...) or call it once.")
    variables = model.trainable_variables
    values = _ordered_values(variables, weights, caller)
    for variable, value in zip(variables, values):
        if tuple(value.shape) != tuple(variable.shape):
            raise ValueError(
                f"{caller}: the weight for {variable.path!r} has shape {tuple(value.shape)}, but the variable has "
                f"shape {tuple(variable.shape)}; pass one tensor per trainable variable, shaped like it."
            )
    values = [tf.cast(value, variable.dtype) for value, variable in zip(values, variables)]
    non_trainable = [variable.value for variable in model.non_trainable_variables]
    outputs, _ = model.stateless_call(values, non_trainable, x, training=training)
    return outputs


def _ordered_values(variables: list, weights: Any, caller: str) -> list:
    """The weights as a list aligned with ``variables``, from a list or a path -> value mapping."""
    if isinstance(weights, Mapping):
        paths = [variable.path for variable in variables]
        unknown = sorted(set(weights) - set(paths))
        if unknown:
            raise KeyError(
                f"{caller}: weights names {unknown}, which are not trainable variables of the model; the "
                f"names are the variables' paths: {paths}."
            )
        return [tf.convert_to_tensor(weights[p]) if p in weights else v.value for p, v in zip(paths, variables)]
    if isinstance(weights, (str, bytes)) or not isinstance(weights, Sequence):
        raise TypeError(
            f"{caller}: weights must be a list (in the order of model.trainable_variables) or a dict from "
            f"variable path to value; got {type(weights).__name__}."
        )
    if len(weights) != len(variables):
        raise ValueError(
            f"{caller}: got {len(weights)} weights but the model has {len(variables)} trainable variables; pass "
            f"one per variable, in the order of model.trainable_variables."
        )
    return [tf.convert_to_tensor(value) for value in weights]
