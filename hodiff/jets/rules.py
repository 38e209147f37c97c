"""The one activation-rule table and the flattening of a Keras chain into propagation steps.

Every forward (Taylor-mode) pass in :mod:`hodiff.jets.propagation`, whatever its order (the
collapsed second-order pass of the forward Laplacian, the order-``k`` univariate series, the
collapsed biharmonic), asks this table for the derivatives ``s, s', ..., s^(k)`` of an
elementwise activation ``s`` at the layer's pre-activations:

- tanh and sigmoid: ``s'`` is a polynomial in ``s``, so every derivative is one (orders 1 and 2
  written out, the higher ones by differentiating the polynomial);
- sin, cos and exp: derivatives cycle through ``+-sin``, ``+-cos`` or ``exp``;
- the other elementwise Keras activations (relu, gelu, silu, softplus, ...): nested tapes
  (:func:`~hodiff.elementwise_derivatives`).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import keras
import numpy as np
import tensorflow as tf
from numpy.polynomial import polynomial

from hodiff import _validate
from hodiff.derivatives import elementwise_derivatives

__all__ = ["Step", "activation_derivatives", "prepare", "supported_layers"]

Step = tuple[str, Any]  # ("dense", layer), ("rescaling", layer) or ("activation", h -> [s, s', ..., s^(k)])


@functools.cache
def _polynomials(step: tuple[float, ...], order: int) -> tuple[np.ndarray, ...]:
    """Ascending coefficients in ``y`` of ``y, y', ..., y^(order)`` when ``dy/dh = step(y)``."""
    polys = [np.array([0.0, 1.0])]
    for _ in range(order):
        polys.append(polynomial.polymul(polynomial.polyder(polys[-1]), np.array(step)))
    return tuple(polys)


def _polynomial_rule(function: Callable, step: tuple[float, ...], low: Callable) -> Callable:
    """``s^(m)`` for ``dy/dh = step(y)``: ``low(y)`` gives orders 0..2 written out, Horner the rest."""

    def derivatives(h: tf.Tensor, order: int) -> list[tf.Tensor]:
        y = function(h)
        out = low(y, order)
        for coefficients in _polynomials(step, order)[len(out) :]:
            value = tf.zeros_like(y) + float(coefficients[-1])
            for c in coefficients[-2::-1]:  # Horner
                value = value * y + float(c)
            out.append(value)
        return out

    return derivatives


def _tanh_low(t: tf.Tensor, order: int) -> list[tf.Tensor]:
    first = 1.0 - t * t
    return [t, first, -2.0 * t * first][: order + 1]


def _sigmoid_low(s: tf.Tensor, order: int) -> list[tf.Tensor]:
    first = s * (1.0 - s)
    return [s, first, first * (1.0 - 2.0 * s)][: order + 1]


def _cyclic_rule(functions: list[tuple[Callable, bool]]) -> Callable:
    """Derivatives cycling through ``function(h)`` or ``-function(h)`` (sin, cos, exp)."""

    def derivatives(h: tf.Tensor, order: int) -> list[tf.Tensor]:
        values: dict[Any, tf.Tensor] = {}
        out = []
        for m in range(order + 1):
            function, negate = functions[m % len(functions)]
            if function not in values:
                values[function] = function(h)
            out.append(-values[function] if negate else values[function])
        return out

    return derivatives


_TANH = _polynomial_rule(tf.tanh, (1.0, 0.0, -1.0), _tanh_low)  # tanh' = 1 - tanh^2
_SIGMOID = _polynomial_rule(tf.sigmoid, (0.0, 1.0, -1.0), _sigmoid_low)  # s' = s - s^2
_SIN = _cyclic_rule([(tf.sin, False), (tf.cos, False), (tf.sin, True), (tf.cos, True)])
_COS = _cyclic_rule([(tf.cos, False), (tf.sin, True), (tf.cos, True), (tf.sin, False)])
_EXP = _cyclic_rule([(tf.exp, False)])

# The table: activation -> function (h, order) -> [s(h), s'(h), ..., s^(order)(h)].
_CLOSED_FORMS: dict[Any, Callable[[tf.Tensor, int], list[tf.Tensor]]] = {
    keras.activations.tanh: _TANH,
    tf.tanh: _TANH,
    tf.math.tanh: _TANH,
    keras.activations.sigmoid: _SIGMOID,
    tf.sigmoid: _SIGMOID,
    tf.math.sigmoid: _SIGMOID,
    tf.sin: _SIN,
    tf.math.sin: _SIN,
    tf.cos: _COS,
    tf.math.cos: _COS,
    keras.activations.exponential: _EXP,
    tf.exp: _EXP,
    tf.math.exp: _EXP,
}

# Elementwise activations without a closed form here: their derivatives come from nested tapes.
_ELEMENTWISE_NAMES = (
    "relu",
    "relu6",
    "leaky_relu",
    "elu",
    "selu",
    "celu",
    "gelu",
    "silu",
    "swish",
    "softplus",
    "softsign",
    "mish",
    "hard_sigmoid",
    "hard_silu",
    "hard_swish",
    "log_sigmoid",
    "hard_tanh",
    "sparse_plus",
    "squareplus",
    "tanh_shrink",
)
_ELEMENTWISE = {getattr(keras.activations, n) for n in _ELEMENTWISE_NAMES if hasattr(keras.activations, n)} | {
    tf.nn.relu,
    tf.nn.elu,
    tf.nn.selu,
    tf.nn.gelu,
    tf.nn.silu,
    tf.nn.softplus,
    tf.nn.softsign,
    tf.math.softplus,
}


@tf.autograph.experimental.do_not_convert  # plain Python over the layers; nothing to convert
def activation_derivatives(
    activation: Any, order: int, layer_name: str = "?", caller: str = "forward"
) -> Callable[[tf.Tensor], list[tf.Tensor]] | None:
    """The rule of ``activation`` from the table: a function ``h -> [s, s', ..., s^(order)]``.

    Args:
      activation: a Keras or TensorFlow elementwise activation.
      order: the highest derivative wanted, an int >= 1.
      layer_name: the layer it belongs to, for the error message.
      caller: name used in error messages.

    Returns:
      The rule, or ``None`` for the identity (``linear`` or ``None``).

    Example:
      ```python
      import tensorflow as tf
      from hodiff.jets.rules import activation_derivatives

      s, first, second, third = activation_derivatives(tf.sin, 3)(tf.constant([0.5]))
      tf.debugging.assert_near(third, -tf.cos(tf.constant([0.5])))
      ```
    """
    if activation is keras.activations.linear or activation is None:
        return None
    if activation in _CLOSED_FORMS:
        rule = _CLOSED_FORMS[activation]
        return lambda h: rule(h, order)
    if activation in _ELEMENTWISE:
        return elementwise_derivatives(activation, order, unconnected="zero")
    raise ValueError(
        f"{caller}: method='forward' cannot propagate through the activation "
        f"{getattr(activation, '__name__', activation)!r} of layer {layer_name!r}: it is not one of the "
        f"elementwise activations it knows (tanh, sigmoid, sin, cos, exp, {', '.join(_ELEMENTWISE_NAMES)}). "
        f"Use method='nested', which works for any differentiable model."
    )


@tf.autograph.experimental.do_not_convert  # plain Python over the layers; nothing to convert
def supported_layers(model: keras.Model | keras.layers.Layer, caller: str = "forward", order: int = 2) -> list[Step]:
    """Flattens a Keras chain into propagation steps, or raises naming the layer it can't handle.

    Args:
      model: a ``keras.Sequential``, a functional chain model, or a single ``Dense`` layer;
        nested chains, ``Activation``, ``Identity`` and ``Rescaling`` layers included.
      caller: name used in error messages.
      order: the highest derivative the activations' rules return.

    Returns:
      A list of ``("dense", layer)``, ``("rescaling", layer)`` and ``("activation", rule)``
      steps, where ``rule(h)`` is ``[s(h), s'(h), ..., s^(order)(h)]``.

    Example:
      ```python
      import keras
      from hodiff.jets.rules import supported_layers

      model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(8, "tanh"), keras.layers.Dense(1)])
      assert [kind for kind, _ in supported_layers(model)] == ["dense", "activation", "dense"]
      ```
    """
    if isinstance(model, keras.layers.Dense):
        layers = [model]
    elif isinstance(model, keras.Sequential) or _is_functional_chain(model, caller):
        layers = [layer for layer in model.layers if not isinstance(layer, keras.layers.InputLayer)]
    else:
        raise ValueError(
            f"{caller}: method='forward' needs a keras.Sequential or a functional keras.Model "
            f"that is a chain of Dense and elementwise Activation layers; got "
            f"{type(model).__name__}. Use method='nested' for arbitrary functions and subclassed models."
        )
    steps: list[Step] = []
    for layer in layers:
        if isinstance(layer, (keras.Sequential, keras.Model)):
            steps.extend(supported_layers(layer, caller, order))
            continue
        if isinstance(layer, keras.layers.Dense):
            if not layer.built:
                raise ValueError(
                    f"{caller}: layer {layer.name!r} has no weights yet. Build the model first: call it "
                    f"once on a batch (model(x)) or give it a keras.Input."
                )
            steps.append(("dense", layer))
        elif isinstance(layer, keras.layers.Rescaling):
            steps.append(("rescaling", layer))
            continue
        elif not isinstance(layer, (keras.layers.Activation, keras.layers.Identity)):
            raise ValueError(
                f"{caller}: method='forward' cannot propagate through layer {layer.name!r} of type "
                f"{type(layer).__name__}; it supports Dense, Activation (elementwise), Rescaling and Identity "
                f"layers. Use method='nested', which works for any differentiable model."
            )
        if isinstance(layer, keras.layers.Identity):
            continue
        rule = activation_derivatives(layer.activation, order, layer.name, caller)
        if rule is not None:
            steps.append(("activation", rule))
    return steps


@tf.autograph.experimental.do_not_convert  # plain Python over the layers; nothing to convert
def _is_functional_chain(model: Any, caller: str) -> bool:
    if not isinstance(model, keras.Model) or not hasattr(model, "_operations") or not getattr(model, "inputs", None):
        return False
    layers = [layer for layer in model.layers if not isinstance(layer, keras.layers.InputLayer)]
    if len(model.inputs) != 1 or len(model.outputs) != 1:
        raise ValueError(f"{caller}: method='forward' needs a model with one input and one output.")
    previous = model.inputs[0]
    for layer in layers:
        if layer.input is not previous:
            raise ValueError(
                f"{caller}: method='forward' needs a chain of layers, but layer {layer.name!r} does not "
                f"take the previous layer's output (a branch or skip connection). Use method='nested'."
            )
        previous = layer.output
    return True


@tf.autograph.experimental.do_not_convert  # plain Python over the layers; nothing to convert
def prepare(model: Any, x: Any, caller: str, order: int = 2) -> tuple[list[Step], tf.Tensor, tf.DType]:
    """Checks a forward pass's inputs: the steps, ``x`` in the propagation dtype, and ``x``'s own dtype.

    The jets propagate in the wider of the points' and the model's compute dtype (a
    ``mixed_float16`` model's derivatives in float32) and answer in the points' dtype.
    """
    x = _validate.as_differentiable(x, "x", caller)
    d = _validate.check_field_points(x, caller)
    steps = supported_layers(model, caller, order)
    dense_layers = [layer for kind, layer in steps if kind == "dense"]
    if not dense_layers:
        raise ValueError(f"{caller}: the model has no Dense layer; nothing to propagate.")
    if dense_layers[0].kernel.shape[0] != d:
        raise ValueError(
            f"{caller}: x has d={d} columns but the model's first Dense layer expects "
            f"{dense_layers[0].kernel.shape[0]} inputs."
        )
    dtype = max(x.dtype, tf.as_dtype(dense_layers[0].compute_dtype), key=lambda t: t.size)
    return steps, tf.cast(x, dtype), x.dtype
