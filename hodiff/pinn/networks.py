"""Keras networks for PINNs: an MLP with input scaling to [-1, 1] and optional Fourier features.

Every layer here is built from matrix products and elementwise functions only: slicing and
concatenation put XLA's ``DynamicUpdateSlice`` into second derivatives, and it has no gradient
for the third derivative that training a second-order PDE takes.
"""

from __future__ import annotations

import random

import keras
import numpy as np

from hodiff.pinn.geometry import Box

__all__ = ["DTYPES", "FourierFeatures", "PeriodicEmbedding", "is_mixed", "mlp"]

DTYPES = ("float32", "float64", "mixed_float16")


@keras.saving.register_keras_serializable(package="hodiff")
class FourierFeatures(keras.layers.Layer):
    """``[cos(2 pi x B), sin(2 pi x B)]`` with a fixed Gaussian matrix ``B`` (std ``scale``).

    Computed as one product and a phase shift, ``sin(x [2 pi B, 2 pi B] + [pi/2, 0])`` (cos z =
    sin(z + pi/2)), so no concatenation of tensors that depend on ``x``.

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
        self.matrix = self.add_weight(
            shape=matrix.shape, initializer=keras.initializers.Constant(matrix), trainable=False, name="matrix"
        )
        # [2 pi I, 2 pi I] copies each projection twice; the phase turns the first copy's sine into a cosine
        self.duplicate = keras.ops.convert_to_tensor(
            2.0 * np.pi * np.hstack([np.eye(self.features)] * 2), dtype=self.compute_dtype
        )
        self.phase = keras.ops.convert_to_tensor(np.repeat([np.pi / 2, 0.0], self.features), dtype=self.compute_dtype)

    def call(self, x):
        frequencies = keras.ops.matmul(keras.ops.cast(self.matrix, x.dtype), self.duplicate)
        return keras.ops.sin(keras.ops.matmul(x, frequencies) + self.phase)

    def get_config(self):
        return {**super().get_config(), "features": self.features, "scale": self.scale, "seed": self.seed}


@keras.saving.register_keras_serializable(package="hodiff")
class PeriodicEmbedding(keras.layers.Layer):
    """Replaces input columns by ``cos(2 pi x / period)`` and ``sin(2 pi x / period)``.

    The network is then exactly periodic in those coordinates (a hard periodic condition).
    Built from matrix products only: slicing and concatenation would put XLA's
    DynamicUpdateSlice into the second derivative, and it has no gradient for the third that
    a PINN's training takes.

    References:
      Dong & Ni (2021), "A method for representing periodic functions and enforcing exactly
      periodic boundary conditions with deep neural networks", J. Comput. Phys. 435.
    """

    def __init__(self, periods: dict[int, float], **kwargs):
        super().__init__(**kwargs)
        self.periods = {int(column): float(period) for column, period in periods.items()}

    def build(self, input_shape):
        d = int(input_shape[-1])
        periodic = sorted(self.periods)
        size = d + len(periodic)
        angles, cosines, sines, rest = (
            np.zeros((d, len(periodic))),
            np.zeros((len(periodic), size)),
            np.zeros((len(periodic), size)),
            np.zeros((d, size)),
        )
        out = 0
        for column in range(d):
            if column in self.periods:
                j = periodic.index(column)
                angles[column, j] = 2.0 * np.pi / self.periods[column]
                cosines[j, out], sines[j, out + 1] = 1.0, 1.0
                out += 2
            else:
                rest[column, out] = 1.0
                out += 1
        self.matrices = [
            keras.ops.convert_to_tensor(m, dtype=self.compute_dtype) for m in (angles, cosines, sines, rest)
        ]

    def call(self, x):
        angles, cosines, sines, rest = self.matrices
        phase = keras.ops.matmul(x, angles)
        return (
            keras.ops.matmul(keras.ops.cos(phase), cosines)
            + keras.ops.matmul(keras.ops.sin(phase), sines)
            + keras.ops.matmul(x, rest)
        )

    def get_config(self):
        return {**super().get_config(), "periods": self.periods}


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
    periodic: dict[str, float] | None = None,
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
      dtype: ``"float64"`` (default; L-BFGS converges further), ``"float32"`` or
        ``"mixed_float16"``: then the hidden layers compute in float16 (float32 weights) while
        the input scaling, embeddings and the output layer stay float32, so the points, the
        outputs and their partials are float32.
      seed: seeds the weight initialisers (no global random state is touched).
      periodic: ``{coordinate: period}``: make the network exactly periodic in those
        coordinates (:class:`PeriodicEmbedding` after the scaling).

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
    if dtype not in DTYPES:
        raise ValueError(
            f"mlp: dtype={dtype!r} is not one of {DTYPES}; use 'float32' for speed, 'float64' for L-BFGS accuracy."
        )
    outer = "float32" if dtype == "mixed_float16" else dtype
    # Same seeds as keras.utils.set_random_seed(seed) followed by unseeded initialisers, without the global state.
    seeds = random.Random(seed)
    initializer = lambda: keras.initializers.GlorotNormal(seed=seeds.randint(1, int(1e9)))
    low, high = domain.low, domain.high
    layers = [
        keras.Input((len(low),), dtype=outer),
        keras.layers.Rescaling(2.0 / (high - low), offset=-(high + low) / (high - low), dtype=outer),
    ]
    if periodic:
        # the scaled coordinate spans 2 over the domain's length: rescale the period alike
        scaled = {
            domain.coords.index(name): 2.0 * period / (domain.bounds[name][1] - domain.bounds[name][0])
            for name, period in periodic.items()
        }
        layers.append(PeriodicEmbedding(scaled, dtype=outer))
    if fourier_features:
        layers.append(FourierFeatures(fourier_features, fourier_scale, seed, dtype=outer))
    layers += [
        keras.layers.Dense(width, activation=activation, kernel_initializer=initializer(), dtype=dtype)
        for _ in range(depth)
    ]
    layers.append(keras.layers.Dense(outputs, kernel_initializer=initializer(), dtype=outer))
    return keras.Sequential(layers)


def is_mixed(model: keras.Model) -> bool:
    """Whether any layer of ``model`` computes in float16 or bfloat16 (a mixed precision policy)."""
    stack = list(model.layers)
    while stack:
        layer = stack.pop()
        if getattr(layer, "compute_dtype", None) in ("float16", "bfloat16"):
            return True
        stack.extend(getattr(layer, "layers", []))
    return False
