"""Keras networks for PINNs: an MLP with input scaling to [-1, 1] and optional Fourier features."""

from __future__ import annotations


import keras
import numpy as np

from hodiff.pinn.geometry import Box

__all__ = ["mlp", "FourierFeatures"]


@keras.saving.register_keras_serializable(package="hodiff")
class FourierFeatures(keras.layers.Layer):
    """``[cos(2 pi x B), sin(2 pi x B)]`` with a fixed Gaussian matrix ``B`` (std ``scale``).

    References:
      Tancik et al. (2020), "Fourier features let networks learn high frequency functions in
      low dimensional domains"; Wang, Wang & Perdikaris (2021), "On the eigenvector bias of
      Fourier feature networks".
    """

    def __init__(self, features: int = 64, scale: float = 1.0, seed: int = 0, **kwargs):
        super().__init__(**kwargs)
        self.features, self.scale, self.seed = features, scale, seed

    def build(self, input_shape):
        matrix = np.random.default_rng(self.seed).normal(scale=self.scale, size=(input_shape[-1], self.features))
        self.matrix = self.add_weight(shape=matrix.shape, initializer=keras.initializers.Constant(matrix), trainable=False, name="matrix")

    def call(self, x):
        projected = 2.0 * np.pi * keras.ops.matmul(x, keras.ops.cast(self.matrix, x.dtype))
        return keras.ops.concatenate([keras.ops.cos(projected), keras.ops.sin(projected)], axis=-1)

    def get_config(self):
        return {**super().get_config(), "features": self.features, "scale": self.scale, "seed": self.seed}


def mlp(
    domain: Box,
    outputs: int = 1,
    width: int = 20,
    depth: int = 8,
    activation: str = "tanh",
    fourier_features: int = 0,
    fourier_scale: float = 1.0,
    dtype: str = "float64",
    seed: int = 0,
) -> keras.Model:
    """A fully connected network whose inputs are first scaled from the domain to [-1, 1].

    Args:
      domain: the problem's domain (its bounds set the input scaling).
      outputs: number of output fields.
      width: neurons per hidden layer.
      depth: number of hidden layers.
      activation: hidden activation (tanh is smooth, as second derivatives need).
      fourier_features: if > 0, that many random Fourier features after the scaling.
      fourier_scale: standard deviation of the Fourier frequencies.
      dtype: ``"float64"`` (default; L-BFGS converges further) or ``"float32"``.
      seed: weight initialisation seed.

    Returns:
      A built ``keras.Sequential``.

    Example:
      ```python
      from hodiff.pinn.geometry import Interval, TimeDomain
      from hodiff.pinn.networks import mlp

      model = mlp(Interval("x", -1, 1) * TimeDomain("t", 0, 1), width=20, depth=4)
      assert model.output_shape == (None, 1)
      ```
    """
    keras.utils.set_random_seed(seed)
    low, high = domain.low, domain.high
    layers = [keras.Input((len(low),), dtype=dtype), keras.layers.Rescaling(2.0 / (high - low), offset=-(high + low) / (high - low), dtype=dtype)]
    if fourier_features:
        layers.append(FourierFeatures(fourier_features, fourier_scale, seed, dtype=dtype))
    layers += [keras.layers.Dense(width, activation=activation, kernel_initializer="glorot_normal", dtype=dtype) for _ in range(depth)]
    layers.append(keras.layers.Dense(outputs, kernel_initializer="glorot_normal", dtype=dtype))
    return keras.Sequential(layers)
