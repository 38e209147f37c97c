"""Forward (Taylor-mode) propagation of value, gradient and Laplacian through Keras stacks.

Instead of differentiating a network twice with nested tapes, push the triple
``(h, dh/dx, lap h)`` through the layers in one forward pass:

- Dense ``h W + b``: ``(hW + b, J W, L W)``;
- elementwise ``s(h)``: ``(s(h), s'(h) J, s'(h) L + s''(h) sum_i J_i^2)``.

Exact (no sampling), about ``d`` times the cost of a forward pass, and the result is an ordinary
TensorFlow graph: a training step differentiates through it with one more reverse pass.
Supported: ``keras.Sequential`` and functional models that are chains of ``Dense`` (with any
elementwise activation), ``Activation`` and ``Identity`` layers, nested chains included.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import keras
import tensorflow as tf

from hodiff import _validate
from hodiff.derivatives import elementwise_derivatives

__all__ = ["Jet", "forward_jet", "forward_laplacian", "supported_layers"]


class Jet(NamedTuple):
    """Second-order Taylor data of a network's outputs at a batch of points.

    Attributes:
      value: outputs, shape ``(N, k)``.
      jacobian: ``d value_j / d x_i``, shape ``(N, d, k)``.
      laplacian: ``sum_i d^2 value_j / d x_i^2``, shape ``(N, k)``; ``None`` when not asked for.
    """

    value: tf.Tensor
    jacobian: tf.Tensor
    laplacian: tf.Tensor | None


def _tanh_rule(h):
    t = tf.tanh(h)
    first = 1.0 - t * t
    return t, first, -2.0 * t * first


def _sigmoid_rule(h):
    s = tf.sigmoid(h)
    first = s * (1.0 - s)
    return s, first, first * (1.0 - 2.0 * s)


def _sin_rule(h):
    s = tf.sin(h)
    return s, tf.cos(h), -s


def _cos_rule(h):
    c = tf.cos(h)
    return c, -tf.sin(h), -c


def _exp_rule(h):
    e = tf.exp(h)
    return e, e, e


_CLOSED_FORMS = {
    keras.activations.tanh: _tanh_rule,
    tf.tanh: _tanh_rule,
    tf.math.tanh: _tanh_rule,
    keras.activations.sigmoid: _sigmoid_rule,
    tf.sigmoid: _sigmoid_rule,
    tf.math.sigmoid: _sigmoid_rule,
    tf.sin: _sin_rule,
    tf.math.sin: _sin_rule,
    tf.cos: _cos_rule,
    tf.math.cos: _cos_rule,
    keras.activations.exponential: _exp_rule,
    tf.exp: _exp_rule,
    tf.math.exp: _exp_rule,
}

# Elementwise activations without a closed form here: their derivatives come from two tapes.
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


def _tape_rule(activation: Callable[[tf.Tensor], tf.Tensor]):
    return elementwise_derivatives(activation, 2, unconnected="zero")


def _activation_rule(activation, layer, caller):
    """The (value, s', s'') rule for an activation, None for the identity."""
    if activation is keras.activations.linear or activation is None:
        return None
    if activation in _CLOSED_FORMS:
        return _CLOSED_FORMS[activation]
    if activation in _ELEMENTWISE:
        return _tape_rule(activation)
    raise ValueError(
        f"{caller}: method='forward' cannot propagate through the activation "
        f"{getattr(activation, '__name__', activation)!r} of layer {layer.name!r}: it is not one of the "
        f"elementwise activations it knows (tanh, sigmoid, sin, cos, exp, {', '.join(_ELEMENTWISE_NAMES)}). "
        f"Use method='nested', which works for any differentiable model."
    )


def supported_layers(
    model: keras.Model | keras.layers.Layer,
    caller: str = "forward_jet",
    activation_rule: Callable[[Callable], Any] | None = None,
) -> list[tuple[str, Any]]:
    """Flattens a Keras chain into propagation steps, or raises naming the layer it can't handle.

    Args:
      model: a ``keras.Sequential``, a functional chain model, or a single ``Dense`` layer.
      caller: name used in error messages.
      activation_rule: optional function of a supported (non-identity) activation returning the
        step to use for it (e.g. a higher-order rule, see :mod:`hodiff.jets`); by default the
        second-order ``(value, s', s'')`` rule of :func:`forward_jet`.

    Returns:
      A list of ``("dense", layer)`` and ``("activation", rule)`` steps.
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
    steps: list[tuple[str, Any]] = []
    for layer in layers:
        if isinstance(layer, (keras.Sequential, keras.Model)):
            steps.extend(supported_layers(layer, caller, activation_rule))
        elif isinstance(layer, keras.layers.Dense):
            if not layer.built:
                raise ValueError(
                    f"{caller}: layer {layer.name!r} has no weights yet. Build the model first: call it "
                    f"once on a batch (model(x)) or give it a keras.Input."
                )
            steps.append(("dense", layer))
            rule = _activation_rule(layer.activation, layer, caller)
            if rule is not None:
                steps.append(("activation", rule if activation_rule is None else activation_rule(layer.activation)))
        elif isinstance(layer, keras.layers.Activation):
            rule = _activation_rule(layer.activation, layer, caller)
            if rule is not None:
                steps.append(("activation", rule if activation_rule is None else activation_rule(layer.activation)))
        elif isinstance(layer, keras.layers.Identity):
            continue
        else:
            raise ValueError(
                f"{caller}: method='forward' cannot propagate through layer {layer.name!r} of type "
                f"{type(layer).__name__}; it supports Dense, Activation (elementwise) and Identity "
                f"layers. Use method='nested', which works for any differentiable model."
            )
    return steps


def _is_functional_chain(model, caller: str) -> bool:
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


def forward_jet(model: keras.Model, x: tf.Tensor, need_laplacian: bool = True, caller: str = "forward_jet") -> Jet:
    """Propagates value, Jacobian and (optionally) Laplacian of a Keras chain at points ``x``.

    Args:
      model: a ``keras.Sequential`` or functional chain of Dense/elementwise layers.
      x: points, shape ``(N, d)``; the jet is propagated in the wider of ``x``'s dtype and the
        model's compute dtype and returned in ``x``'s dtype.
      need_laplacian: also propagate the Laplacian (skip it for divergence/Jacobians).
      caller: name used in error messages.

    Returns:
      A :class:`Jet` with value ``(N, k)``, jacobian ``(N, d, k)`` and laplacian ``(N, k)``.

    References:
      Li et al., "A computational framework for neural network-based variational Monte Carlo
      with Forward Laplacian", Nature Machine Intelligence 2024 (arXiv:2307.08214).

    Example:
      ```python
      import keras, tensorflow as tf
      from hodiff.taylor import forward_jet

      model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(8, "tanh"), keras.layers.Dense(1)])
      jet = forward_jet(model, tf.random.normal((5, 2)))
      assert jet.jacobian.shape == (5, 2, 1) and jet.laplacian.shape == (5, 1)
      ```
    """
    x = _validate.as_differentiable(x, "x", caller)
    d = _validate.check_field_points(x, caller)
    steps = supported_layers(model, caller)
    dense_layers = [layer for kind, layer in steps if kind == "dense"]
    if not dense_layers:
        raise ValueError(f"{caller}: the model has no Dense layer; nothing to propagate.")
    # Propagate in the wider of the points' and the model's compute dtype (a mixed_float16
    # model's derivatives in float32), and answer in the points' dtype like every operator.
    result_dtype = x.dtype
    dtype = max(result_dtype, tf.as_dtype(dense_layers[0].compute_dtype), key=lambda t: t.size)
    if dense_layers[0].kernel.shape[0] != d:
        raise ValueError(
            f"{caller}: x has d={d} columns but the model's first Dense layer expects "
            f"{dense_layers[0].kernel.shape[0]} inputs."
        )
    # The jet is one stacked tensor (rows, N, k): the value, the d Jacobian rows and (when
    # asked) the Laplacian. A Dense layer is then one matmul for all of them, and its gradient
    # in a training step one matmul too.
    x = tf.cast(x, dtype)
    num_points = tf.shape(x)[0]
    rows = d + 2 if need_laplacian else d + 1
    identity = tf.broadcast_to(tf.eye(d, dtype=dtype)[:, None, :], tf.stack([d, num_points, d]))
    blocks = [x[None], identity] + ([tf.zeros_like(x)[None]] if need_laplacian else [])
    jet = tf.concat(blocks, axis=0)
    for kind, step in steps:
        if kind == "dense":
            kernel = tf.cast(step.kernel, dtype)
            product = tf.matmul(tf.reshape(jet, [-1, kernel.shape[0]]), kernel)
            jet = tf.reshape(product, tf.stack([rows, num_points, kernel.shape[1]]))
            if step.use_bias:  # the bias shifts the value only
                jet = jet + tf.pad(tf.cast(step.bias, dtype)[None, None], [[0, rows - 1], [0, 0], [0, 0]])
        else:
            value, first, second = step(jet[0])
            jacobian = jet[1 : d + 1]
            blocks = [value[None], first[None] * jacobian]
            if need_laplacian:
                blocks.append((first * jet[d + 1] + second * tf.reduce_sum(tf.square(jacobian), axis=0))[None])
            jet = tf.concat(blocks, axis=0)
    jet = tf.cast(jet, result_dtype)
    return Jet(jet[0], tf.transpose(jet[1 : d + 1], [1, 0, 2]), jet[d + 1] if need_laplacian else None)


def forward_laplacian(model: keras.Model) -> Callable[[tf.Tensor], tf.Tensor]:
    """Transforms a Keras chain into its Laplacian by Taylor-mode propagation.

    Same as ``laplacian(model, method="forward")``.

    Args:
      model: a ``keras.Sequential`` or functional chain of Dense/elementwise layers.

    Returns:
      A function of ``x`` (``(N, d)``) returning the Laplacian, shape ``(N, k)``.
    """
    return lambda x: forward_jet(model, x, caller="forward_laplacian").laplacian
