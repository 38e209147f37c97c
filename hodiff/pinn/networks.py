"""Keras networks for PINNs: an MLP or modified MLP with input scaling to [-1, 1] and optional
(multi-scale) Fourier features.

Every layer here is built from matrix products and elementwise functions only (no slices or
concatenations), so each derivative order is again a product or an elementwise function.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

import keras
import numpy as np

from hodiff.pinn.geometry import Box
from hodiff.pinn.tabulated import LevelSetFeature, Tabulated

__all__ = [
    "ARCHITECTURES",
    "DTYPES",
    "FactorizedDense",
    "FourierFeatures",
    "Gate",
    "PeriodicEmbedding",
    "ReflectingEmbedding",
    "is_mixed",
    "mlp",
]

DTYPES = ("float32", "float64", "mixed_float16")
ARCHITECTURES = ("mlp", "modified")


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
    Built from matrix products only (see the module docstring).

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


@keras.saving.register_keras_serializable(package="hodiff")
class ReflectingEmbedding(keras.layers.Layer):
    """Replaces scaled input columns ``s`` in ``[-1, 1]`` by ``sin(pi s / 2)``.

    The map is one-to-one on ``[-1, 1]`` with zero slope at both ends, so the network's derivative along those
    coordinates is exactly zero on both walls (a hard zero-flux, zero-Neumann, condition), and every smooth
    function whose even reflection across the walls is smooth is still representable. Built from matrix products
    and elementwise functions only (see the module docstring).

    References:
      Sukumar & Srivastava (2022), "Exact imposition of boundary conditions with distance functions in
      physics-informed deep neural networks", CMAME 389 (hard boundary conditions by construction).
    """

    def __init__(self, columns: Sequence[int], **kwargs):
        super().__init__(**kwargs)
        self.columns = sorted(int(column) for column in columns)

    def build(self, input_shape):
        reflected = np.zeros(int(input_shape[-1]))
        reflected[self.columns] = 1.0
        self.reflected = keras.ops.convert_to_tensor(reflected, dtype=self.compute_dtype)

    def call(self, x):
        return x + self.reflected * (keras.ops.sin(0.5 * np.pi * x) - x)

    def get_config(self):
        return {**super().get_config(), "columns": self.columns}


@keras.saving.register_keras_serializable(package="hodiff")
class FactorizedDense(keras.layers.Layer):
    """A dense layer with random weight factorisation: kernel ``W = V diag(exp(s))``.

    Each output neuron's weight vector is a trainable scale ``exp(s_k)`` times a trainable
    direction ``v_k``. At build time the kernel ``W`` is drawn by ``kernel_initializer`` (as a
    plain ``Dense`` layer would draw it), ``s ~ N(mean, std)`` from ``seed``, and ``V = W /
    exp(s)``, so the layer starts as the same function as the plain one; only the training
    dynamics differ (gradient descent in ``(s, V)``).

    Args:
      units: output size.
      activation: the activation (a Keras name).
      mean: the mean of the log-scales ``s`` at initialisation.
      std: their standard deviation (>= 0).
      seed: seeds the draw of ``s``.
      kernel_initializer: draws ``W``.
      use_bias: add a bias (initialised to zero).

    References:
      Wang, Wang, Bhartari & Perdikaris (2023), "An expert's guide to training physics-informed
      neural networks", arXiv:2308.08468, section 3.1 (random weight factorisation).
    """

    def __init__(
        self,
        units: int,
        activation: str | None = None,
        mean: float = 1.0,
        std: float = 0.1,
        seed: int = 0,
        kernel_initializer: Any = "glorot_normal",
        use_bias: bool = True,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.units, self.mean, self.std, self.seed, self.use_bias = int(units), float(mean), float(std), seed, use_bias
        self.activation = keras.activations.get(activation)
        self.kernel_initializer = keras.initializers.get(kernel_initializer)

    def build(self, input_shape):
        shape = (int(input_shape[-1]), self.units)
        kernel = np.asarray(keras.ops.convert_to_numpy(self.kernel_initializer(shape, dtype=self.variable_dtype)))
        scale = np.random.default_rng(self.seed).normal(self.mean, self.std, size=self.units)
        direction = kernel.astype(np.float64) / np.exp(scale)
        self.direction = self.add_weight(shape=shape, initializer=keras.initializers.Constant(direction), name="v")
        self.scale = self.add_weight(shape=(self.units,), initializer=keras.initializers.Constant(scale), name="s")
        self.bias = self.add_weight(shape=(self.units,), initializer="zeros", name="bias") if self.use_bias else None

    def call(self, x):
        y = keras.ops.matmul(x, self.direction * keras.ops.exp(self.scale))
        return self.activation(y + self.bias if self.bias is not None else y)

    def compute_output_shape(self, input_shape):
        return (*input_shape[:-1], self.units)

    def get_config(self):
        return {
            **super().get_config(),
            "units": self.units,
            "activation": keras.activations.serialize(self.activation),
            "mean": self.mean,
            "std": self.std,
            "seed": self.seed,
            "kernel_initializer": keras.initializers.serialize(self.kernel_initializer),
            "use_bias": self.use_bias,
        }


@keras.saving.register_keras_serializable(package="hodiff")
class Gate(keras.layers.Layer):
    """``(1 - z) * u + z * v``: the gated update of the modified MLP (inputs ``[z, u, v]``).

    References:
      Wang, Teng & Perdikaris (2021), "Understanding and mitigating gradient flow pathologies
      in physics-informed neural networks", SIAM J. Sci. Comput. 43.
    """

    def call(self, inputs):
        z, u, v = inputs
        return u + z * (v - u)


def mlp(
    domain: Box,
    outputs: int = 1,
    width: int = 20,
    depth: int = 8,
    activation: str = "tanh",
    fourier_features: int = 0,
    fourier_scale: float | Sequence[float] = 1.0,
    dtype: str = "float64",
    seed: int = 0,
    periodic: dict[str, float] | None = None,
    reflecting: Sequence[str] = (),
    architecture: str = "mlp",
    factorization: tuple[float, float] | None = None,
    level_set: Tabulated | None = None,
) -> keras.Model:
    """A fully connected network whose inputs are first scaled from the domain to [-1, 1].

    Args:
      domain: the problem's domain (its bounding box ``low``/``high`` sets the input scaling).
      outputs: number of output fields.
      width: neurons per hidden layer.
      depth: number of hidden layers.
      activation: hidden activation (tanh is smooth, as second derivatives need).
      fourier_features: if > 0, that many random Fourier features after the scaling.
      fourier_scale: standard deviation of the Fourier frequencies; a sequence of them gives
        multi-scale Fourier features: one embedding per scale, each passed through the SAME
        hidden layers, the results joined by one linear output layer (Wang, Wang & Perdikaris
        2021).
      dtype: ``"float64"`` (default; L-BFGS converges further), ``"float32"`` or
        ``"mixed_float16"``: then the hidden layers compute in float16 (float32 weights) while
        the input scaling, embeddings and the output layer stay float32, so the points, the
        outputs and their partials are float32.
      seed: seeds the weight initialisers and the Fourier matrices (no global random state).
      periodic: ``{coordinate: period}``: make the network exactly periodic in those
        coordinates (:class:`PeriodicEmbedding` after the scaling).
      reflecting: coordinates along which the network's derivative is exactly zero at both ends of the domain
        (zero-flux walls; :class:`ReflectingEmbedding` after the scaling).
      architecture: ``"mlp"`` (plain dense layers) or ``"modified"``: the modified MLP of
        Wang, Teng & Perdikaris (2021), ``U = phi(X W_u)``, ``V = phi(X W_v)``,
        ``H_1 = phi(X W_1)``, ``Z_k = phi(H_k W_k)``, ``H_{k+1} = (1 - Z_k) U + Z_k V`` for
        ``k = 1 .. depth - 1`` (``depth`` dense layers besides the two encoders).
      factorization: ``(mean, std)``: random weight factorisation of every dense layer
        (:class:`FactorizedDense`, ``W = V diag(exp(s))``, ``s ~ N(mean, std)``; Wang et al. 2023
        recommend ``(1.0, 0.1)``); the network starts as the same function as without it.
        ``None`` (default): plain dense layers.
      level_set: a :class:`~hodiff.pinn.Tabulated` ``g`` of some coordinates: the network also sees ``|g|``
        (:class:`~hodiff.pinn.tabulated.LevelSetFeature`), so its derivatives may jump across ``g = 0`` while its
        values stay continuous (a coefficient that jumps there; Tseng et al. 2023). Its derivatives come from
        tapes (not ``partials_method="forward"``).

    Returns:
      A built Keras model (``keras.Sequential`` for the plain single-scale MLP, a functional
      ``keras.Model`` otherwise); every variant saves to ``.keras`` and loads back.

    References:
      Tancik et al. (2020), "Fourier features let networks learn high frequency functions in
      low dimensional domains"; Wang, Wang & Perdikaris (2021), "On the eigenvector bias of
      Fourier feature networks", CMAME 384; Wang, Teng & Perdikaris (2021), "Understanding and
      mitigating gradient flow pathologies in physics-informed neural networks", SIAM J. Sci.
      Comput. 43; Wang, Wang, Bhartari & Perdikaris (2023), "An expert's guide to training
      physics-informed neural networks", arXiv:2308.08468.

    Example:
      ```python
      from hodiff.pinn.geometry import Interval, TimeDomain
      from hodiff.pinn.networks import mlp

      domain = Interval("x", -1, 1) * TimeDomain("t", 0, 1)
      model = mlp(domain, width=20, depth=4)
      assert model.output_shape == (None, 1)
      multiscale = mlp(domain, width=16, depth=2, fourier_features=8, fourier_scale=(1.0, 10.0))
      modified = mlp(domain, outputs=2, width=16, depth=3, architecture="modified")
      assert multiscale.output_shape == (None, 1) and modified.output_shape == (None, 2)
      factorized = mlp(domain, width=20, depth=4, factorization=(1.0, 0.1))
      x = domain.sample_interior(5)
      assert abs(factorized(x).numpy() - model(x).numpy()).max() < 1e-12  # same function at the start
      ```
    """
    if dtype not in DTYPES:
        raise ValueError(
            f"mlp: dtype={dtype!r} is not one of {DTYPES}; use 'float32' for speed, 'float64' for L-BFGS accuracy."
        )
    if architecture not in ARCHITECTURES:
        raise ValueError(
            f"mlp: architecture={architecture!r} is not one of {ARCHITECTURES}; 'mlp' is a plain stack of dense "
            "layers, 'modified' the gated modified MLP of Wang, Teng & Perdikaris (2021)."
        )
    scales = _scales(fourier_scale, fourier_features)
    _check_factorization(factorization)
    _check_periodic(periodic, domain)
    _check_reflecting(reflecting, periodic, domain)
    if not isinstance(depth, int) or depth < 1 or not isinstance(width, int) or width < 1:
        raise ValueError(f"mlp: width={width!r} and depth={depth!r} must be ints >= 1.")
    if architecture == "modified" and depth < 2:
        raise ValueError(
            f"mlp: architecture='modified' with depth={depth} has no gated layer (the gates join the encoders from "
            "the second hidden layer on), so it would be a plain MLP; use depth >= 2, or architecture='mlp'."
        )
    outer = "float32" if dtype == "mixed_float16" else dtype
    # Same seeds as keras.utils.set_random_seed(seed) followed by unseeded initialisers, without the global state.
    seeds = random.Random(seed)
    initializer = lambda: keras.initializers.GlorotNormal(seed=seeds.randint(1, int(1e9)))
    low, high = domain.low, domain.high
    front = []
    if level_set is not None:
        front.append(LevelSetFeature.of(level_set, domain.coords, dtype=outer))
        low, high = np.append(low, 0.0), np.append(high, np.abs(level_set.values).max())
    front.append(keras.layers.Rescaling(2.0 / (high - low), offset=-(high + low) / (high - low), dtype=outer))
    if reflecting:  # before the periodic embedding, which widens the columns after it
        front.append(ReflectingEmbedding([domain.coords.index(name) for name in reflecting], dtype=outer))
    if periodic:
        # the scaled coordinate spans 2 over the domain's length: rescale the period alike
        scaled = {
            domain.coords.index(name): 2.0 * period / (domain.bounds[name][1] - domain.bounds[name][0])
            for name, period in periodic.items()
        }
        front.append(PeriodicEmbedding(scaled, dtype=outer))

    def dense(size, act="linear", name=None, layer_dtype=dtype, use_bias=True):
        kernel = initializer()
        if factorization is None:
            return keras.layers.Dense(
                size, activation=act, kernel_initializer=kernel, use_bias=use_bias, dtype=layer_dtype, name=name
            )
        # the log-scales are drawn from the kernel's own seed: the other layers' seeds stay the plain network's
        mean, std = factorization
        return FactorizedDense(size, act, mean, std, kernel.seed, kernel, use_bias, dtype=layer_dtype, name=name)

    if architecture == "mlp" and len(scales) <= 1:
        if fourier_features:
            front.append(FourierFeatures(fourier_features, scales[0], seed, dtype=outer))
        hidden = [dense(width, activation) for _ in range(depth)]
        last = dense(outputs, layer_dtype=outer)
        return keras.Sequential([keras.Input((len(domain.coords),), dtype=outer), *front, *hidden, last])

    inputs = keras.Input((len(domain.coords),), dtype=outer)
    x = inputs
    for layer in front:
        x = layer(x)
    embeddings = (
        [FourierFeatures(fourier_features, scale, seed + i, dtype=outer)(x) for i, scale in enumerate(scales)]
        if fourier_features
        else [x]
    )
    if architecture == "modified":
        encoders = (dense(width, activation, "encoder_u"), dense(width, activation, "encoder_v"))
        layers = [dense(width, activation, f"hidden_{k}") for k in range(depth)]
        gates = [Gate(dtype=dtype, name=f"gate_{k}") for k in range(1, depth)]

        def stack(h):
            u, v = encoders[0](h), encoders[1](h)
            h = layers[0](h)
            for layer, gate in zip(layers[1:], gates):
                h = gate([layer(h), u, v])
            return h

    else:
        layers = [dense(width, activation, f"hidden_{k}") for k in range(depth)]

        def stack(h):
            for layer in layers:
                h = layer(h)
            return h

    # one linear layer on the concatenated outputs, written as a sum of one product per scale
    # (no concatenation: see the module docstring)
    heads = [dense(outputs, name=f"output_{i}", layer_dtype=outer, use_bias=i == 0) for i in range(len(embeddings))]
    parts = [head(stack(h)) for head, h in zip(heads, embeddings)]
    output = parts[0] if len(parts) == 1 else keras.layers.Add(dtype=outer)(parts)
    return keras.Model(inputs, output)


def _check_factorization(factorization: Any) -> None:
    ok = (
        isinstance(factorization, (tuple, list))
        and len(factorization) == 2
        and all(isinstance(v, (int, float, np.number)) and not isinstance(v, bool) for v in factorization)
        and all(np.isfinite(factorization))
        and factorization[1] >= 0
    )
    if factorization is not None and not ok:
        raise ValueError(
            f"mlp: factorization={factorization!r} must be None or (mean, std) of the log-scales s, finite, std >= 0; "
            "Wang et al. (2023) use (1.0, 0.1)."
        )


def _check_periodic(periodic: Any, domain: Box) -> None:
    for name, period in (periodic or {}).items():
        if name not in domain.coords:
            raise ValueError(f"mlp: periodic names {name!r}, which is not a coordinate of the domain {domain.coords}.")
        if isinstance(period, bool) or not isinstance(period, (int, float, np.number)) or not 0 < period < np.inf:
            raise ValueError(
                f"mlp: periodic[{name!r}]={period!r} must be a finite period > 0 (in the units of {name!r}), e.g. "
                f"the domain's length {domain.bounds[name][1] - domain.bounds[name][0]:g}."
            )


def _check_reflecting(reflecting: Any, periodic: Any, domain: Box) -> None:
    if isinstance(reflecting, str) or not isinstance(reflecting, (tuple, list)):
        raise ValueError(f"mlp: reflecting={reflecting!r} must be a tuple of coordinate names, e.g. ('x', 'y').")
    for name in reflecting:
        if name not in domain.coords or name == domain.time:
            raise ValueError(
                f"mlp: reflecting names {name!r}, which is not a spatial coordinate of the domain {domain.coords}."
            )
        if name in (periodic or {}):
            raise ValueError(f"mlp: {name!r} is both periodic and reflecting; a coordinate has one kind of ends.")


def _scales(fourier_scale: float | Sequence[float], fourier_features: int) -> list[float]:
    if not isinstance(fourier_features, int) or fourier_features < 0:
        raise ValueError(f"mlp: fourier_features={fourier_features!r} must be an int >= 0 (0: no Fourier features).")
    scales = [fourier_scale] if isinstance(fourier_scale, (int, float, np.number)) else list(fourier_scale)
    if not scales or any(
        isinstance(s, bool) or not isinstance(s, (int, float, np.number)) or not np.isfinite(s) or s <= 0
        for s in scales
    ):
        raise ValueError(
            f"mlp: fourier_scale={fourier_scale!r} must be a positive number or a non-empty sequence of them "
            "(several give multi-scale Fourier features)."
        )
    if len(scales) > 1 and not fourier_features:
        raise ValueError(
            f"mlp: fourier_scale={fourier_scale!r} gives several scales but fourier_features=0; pass "
            "fourier_features=... (features per scale)."
        )
    return [float(s) for s in scales]


def is_mixed(model: keras.Model) -> bool:
    """Whether any layer of ``model`` computes in float16 or bfloat16 (a mixed precision policy)."""
    stack = list(model.layers)
    while stack:
        layer = stack.pop()
        if getattr(layer, "compute_dtype", None) in ("float16", "bfloat16"):
            return True
        stack.extend(getattr(layer, "layers", []))
    return False
