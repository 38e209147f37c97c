"""Functional parameters on unmodified Keras 3 models: a model called on a list of tensors.

Keras 3's ``model.stateless_call(trainable, non_trainable, x)`` runs a model on substituted
parameter tensors, so an inner loop can update *tensors* (not variables) and the outer tape sees
the whole path from the initial weights to the query loss. :class:`FunctionalModel` wraps that
call (or any ``f(params, x)``) for :func:`hodiff.meta.inner_loop` and
:class:`hodiff.meta.MetaLearner`.
"""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import keras
import tensorflow as tf

__all__ = ["FunctionalModel"]

_RUNNING_STATISTICS = (keras.layers.BatchNormalization,)
_DROPOUT = (keras.layers.Dropout, keras.layers.GaussianDropout, keras.layers.AlphaDropout)  # SpatialDropout: Dropout


class FunctionalModel:
    """A Keras 3 model (or ``f(params, x)``) called on a list of parameter tensors.

    A Keras model becomes the function ``f(params, x)`` that runs ``model.stateless_call`` on
    ``params`` and the model's current non-trainable values; either way ``self.function`` is
    that ``f`` and ``self.variables`` hold the initial parameters.

    Args:
      model: a built Keras model, or a callable ``f(params, x)`` over a list of tensors.
      parameters: for a callable, the initial parameter list (tensors or variables).
      batch_statistics: for models with BatchNormalization: ``False`` (default) raises, because
        running averages updated by inner steps on support sets would be wrong for every other
        task; ``True`` normalises with the statistics of the batch being evaluated at every
        inner step and at the query (the transductive setting of Finn et al. 2017), and never
        updates the running averages. The batch variance is differentiated exactly, through
        its mean too: Keras' layer (``tf.nn.moments``) holds the mean constant there, which
        leaves first derivatives unchanged but makes second-order meta-gradients wrong.
        Dropout stays off unless ``dropout=True``.
      dropout: for models with Dropout layers (``Dropout``, ``SpatialDropout*``,
        ``GaussianDropout``, ``AlphaDropout``): ``False`` (default) runs them in inference mode
        (inactive, with a warning when the model has any); ``True`` drops units at every inner
        step and at the query, a fresh mask per call (the layers' seed states advance).

    Example:
      ```python
      import tensorflow as tf
      from hodiff.meta import FunctionalModel

      f = FunctionalModel(lambda p, x: x @ p[0] + p[1], parameters=[tf.ones((2, 1)), tf.zeros(1)])
      assert f([2 * tf.ones((2, 1)), tf.zeros(1)], tf.ones((3, 2))).numpy().tolist() == [[4.0]] * 3
      ```
    """

    def __init__(
        self,
        model: keras.Model | Callable,
        parameters: Sequence[Any] | None = None,
        batch_statistics: bool = False,
        dropout: bool = False,
    ):
        caller = "FunctionalModel"
        self.batch_statistics, self.dropout = batch_statistics, dropout
        if isinstance(model, keras.Model):
            if not model.built or not model.weights:
                raise ValueError(
                    f"{caller}: the Keras model has no weights yet (unbuilt). Give it a keras.Input(shape=...) first "
                    "layer or call it once on a batch before meta-learning."
                )
            with_statistics = [
                layer.name for layer in model._flatten_layers() if isinstance(layer, _RUNNING_STATISTICS)
            ]
            if with_statistics and not batch_statistics:
                raise ValueError(
                    f"{caller}: layers {with_statistics} keep running statistics, which inner steps "
                    f"on one task's support set would overwrite for every task. Wrap the model as "
                    f"FunctionalModel(model, batch_statistics=True) (and pass that to MetaLearner or inner_loop "
                    f"instead of the model) to normalise with each evaluated batch's own statistics "
                    f"(running averages untouched), or use LayerNormalization instead."
                )
            dropouts = [layer for layer in model._flatten_layers() if isinstance(layer, _DROPOUT)]
            if dropouts and not dropout:
                warnings.warn(
                    f"{caller}: layers {[layer.name for layer in dropouts]} are dropout layers, which the inner loop "
                    "and the query run inactive (inference mode), so they drop nothing during meta-learning. Pass "
                    "FunctionalModel(model, dropout=True) (and that to MetaLearner) to drop units at every call, or "
                    "remove them. Either way, while the model has them MetaLearner falls back to its per-task loop "
                    "(the tasks adapted one at a time, slower than the vectorised path it takes for a "
                    "keras.Sequential of Dense layers alone): remove them for that speed.",
                    UserWarning,
                    stacklevel=2,
                )
            self.model, self.variables = model, list(model.trainable_variables)
            self.function = _stateless_function(model, batch_statistics, dropouts if dropout else [], dropouts)
        elif callable(model):
            if parameters is None:
                raise ValueError(f"{caller}: a plain callable f(params, x) needs parameters=[initial tensors].")
            self.model = self.function = model
            self.variables = [p if isinstance(p, tf.Variable) else tf.Variable(p) for p in parameters]
        else:
            raise TypeError(
                f"{caller}: model must be a Keras model or a callable f(params, x), got {type(model).__name__}."
            )

    def parameters(self) -> list[tf.Tensor]:
        """The current parameters as tensors read from the variables (differentiable w.r.t. them)."""
        return [tf.convert_to_tensor(v) for v in self.variables]

    def __call__(self, params: Sequence[tf.Tensor], x: Any) -> tf.Tensor:
        params = list(params)
        if len(params) != len(self.variables):
            raise ValueError(
                f"FunctionalModel: got {len(params)} parameter tensors for {len(self.variables)} parameters; pass one "
                "tensor per model.trainable_variables entry, in that order."
            )
        for index, (p, v) in enumerate(zip(params, self.variables)):
            if not tf.TensorShape(p.shape).is_compatible_with(v.shape):
                raise ValueError(
                    f"FunctionalModel: parameter {index} has shape {tuple(p.shape)} but the model's has "
                    f"{tuple(v.shape)}; the lists are probably in different orders."
                )
        return self.function(params, x)

    def input_rank(self) -> int | None:
        """The rank of one batch of inputs (2 for inputs of shape ``(None, d)``), when the model
        declares a single input; ``None`` for plain callables and models without an input spec."""
        try:
            inputs = self.model.inputs if isinstance(self.model, keras.Model) else None
        except (AttributeError, ValueError):
            return None
        return len(inputs[0].shape) if inputs and len(inputs) == 1 else None


def _stateless_function(
    model: keras.Model, batch_statistics: bool, active: list, dropouts: list
) -> Callable[[Sequence[tf.Tensor], Any], tf.Tensor]:
    """``f(params, x)``: ``model`` run on ``params`` and its current non-trainable values, which
    ``stateless_call`` never writes back, except the seed states of the ``active`` dropout layers
    (so that each call draws a new mask). Keras's ``training=True`` switches both batch
    statistics and dropout on; the ``dropouts`` not ``active`` are held at rate 0 during the call."""
    training = batch_statistics or bool(active)
    held = [layer for layer in dropouts if not any(layer is a for a in active)] if training else []
    seeds = {id(layer.seed_generator.state) for layer in active}
    written = [i for i, v in enumerate(model.non_trainable_variables) if id(v) in seeds]

    layers = list(model._flatten_layers())
    normalizations = [layer for layer in layers if isinstance(layer, _RUNNING_STATISTICS)]
    poolings = [layer for layer in layers if xla_safe_pooling(layer)]

    def function(params, x):
        variables = model.non_trainable_variables
        non_trainable = [tf.convert_to_tensor(v) for v in variables]
        with _inactive(held), _exact_moments(normalizations if batch_statistics else []), _reshaped_pooling(poolings):
            outputs, updated = model.stateless_call(list(params), non_trainable, x, training=training)
        for i in written:
            variables[i].assign(updated[i])
        return outputs

    return function


@contextlib.contextmanager
def _inactive(layers: list) -> Iterator[None]:
    """Dropout ``layers`` at rate 0 (a no-op in Keras's dropout layers) for the duration of a call."""
    rates = [layer.rate for layer in layers]
    try:
        for layer in layers:
            layer.rate = 0.0
        yield
    finally:
        for layer, rate in zip(layers, rates):
            layer.rate = rate


def xla_safe_pooling(layer: Any) -> bool:
    """Whether ``layer`` is a max-pooling that :class:`FunctionalModel` runs as a reshape and a
    ``reduce_max``: ``MaxPooling2D`` with windows that tile the input (``strides == pool_size``,
    ``"valid"`` padding, channels last). TensorFlow's XLA differentiates ``MaxPool`` twice wrongly
    (``MaxPoolGradGrad``: 4% off in float32, no float64 kernel; TF 2.21); the reshaped form has
    the same values and plain elementwise derivatives, so second-order MAML compiles correctly.
    At exactly tied maxima its gradient is shared among the tied inputs instead of going to the
    first one."""
    return (
        isinstance(layer, keras.layers.MaxPooling2D)
        and tuple(layer.pool_size) == tuple(layer.strides)
        and layer.padding == "valid"
        and layer.data_format == "channels_last"
    )


@contextlib.contextmanager
def _reshaped_pooling(layers: Sequence[keras.layers.Layer]) -> Iterator[None]:
    """While open, ``layers`` (see :func:`xla_safe_pooling`) pool with a reshape and ``reduce_max``."""
    for layer in layers:

        def call(inputs, window=tuple(layer.pool_size)):
            rows, columns = inputs.shape[1] // window[0], inputs.shape[2] // window[1]
            tiled = inputs[:, : rows * window[0], : columns * window[1]]
            tiled = tf.reshape(tiled, [-1, rows, window[0], columns, window[1], inputs.shape[-1]])
            return tf.reduce_max(tiled, axis=[2, 4])

        layer.call = call
    try:
        yield
    finally:
        for layer in layers:
            del layer.call  # the class's method again


@contextlib.contextmanager
def _exact_moments(layers: Sequence[keras.layers.Layer]) -> Iterator[None]:
    """While open, ``layers`` (BatchNormalization) compute the batch variance as
    ``mean((x - mean(x))**2)`` with the mean differentiated too.

    ``tf.nn.moments``, which Keras' layer calls, computes the same values but holds the mean
    constant inside the variance (``stop_gradient``): the gradient is still exact (the centred
    values sum to zero), but the derivative of that gradient misses the mean's term, so
    second-order MAML through batch statistics was off by O(1) (against JAX and finite
    differences). Masked and synchronised layers keep Keras' own computation.
    """
    patched = []
    for layer in layers:
        original = getattr(layer, "_moments", None)
        axes = getattr(layer, "_reduction_axes", None)
        if original is None or axes is None or getattr(layer, "synchronized", False):
            continue

        def moments(inputs, mask, original=original, axes=tuple(axes)):
            if mask is not None:
                return original(inputs, mask)
            mean = tf.reduce_mean(inputs, list(axes), keepdims=True)
            variance = tf.reduce_mean(tf.square(inputs - mean), list(axes))
            return tf.squeeze(mean, list(axes)), variance

        layer._moments = moments
        patched.append(layer)
    try:
        yield
    finally:
        for layer in patched:
            del layer._moments  # the class's method again
