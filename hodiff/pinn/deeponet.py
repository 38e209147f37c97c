"""DeepONet: a network for an operator ``G``, ``G(f)(y) = sum_k b_k(f) t_k(y) + b_0``.

The *branch* network reads the input function ``f`` at ``m`` fixed sensors, the *trunk* network
reads the query point ``y`` (e.g. ``(x, t)``); their ``p`` outputs are contracted. Because the
output is linear in the trunk's outputs, a partial derivative in ``y`` is the same contraction
of the trunk's partials: ``d^n G(f)/dy^n = sum_k b_k(f) d^n t_k / dy^n``. That is what
physics-informed training needs (Wang, Wang & Perdikaris 2021): the residual of the PDE at
collocation points, for every ``f`` in a batch, without solution data.

:meth:`DeepONet.partials` evaluates a batch of ``B`` functions at ``P`` shared points (the
cartesian product, ``(B, P)`` results), by one of two methods:

- ``"nested"``: :func:`hodiff.partials` (nested tapes) on the scalar field
  ``y -> G(f_b)(y)`` over all ``B P`` pairs; any differentiable trunk.
- ``"forward"``: Taylor-mode jets of the trunk (:func:`hodiff.jets.taylor_coefficients`) along
  the coordinate axes, once for the ``P`` points and all ``p`` outputs, then contracted with the
  branch; the trunk must be a Keras chain of Dense and elementwise layers. Pure partials only
  (``"x"``, ``"xx"``, ``"t"``); a mixed one (``"xt"``) needs ``"nested"``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import keras
import tensorflow as tf

from hodiff import jets
from hodiff.operators import partials as _field_partials

__all__ = ["DeepONet", "DEEPONET_METHODS"]

DEEPONET_METHODS = ("nested", "forward")


def _dense_stack(
    inputs: int, width: int, depth: int, outputs: int, activation: str, dtype: str, seed: int, name: str
) -> keras.Sequential:
    layers: list[Any] = [keras.Input((inputs,), dtype=dtype)]
    for i in range(depth + 1):
        init = keras.initializers.GlorotNormal(seed=seed + i)
        units, act = (width, activation) if i < depth else (outputs, None)
        layers.append(keras.layers.Dense(units, act, kernel_initializer=init, dtype=dtype))
    return keras.Sequential(layers, name=name)


class DeepONet(keras.Model):
    """Unstacked DeepONet ``G(f)(y) = sum_k b_k(f) t_k(y) + b_0`` as a Keras model.

    Calling the model on ``[f, y]`` pairs row ``i`` of ``f`` (``(N, m)``) with row ``i`` of
    ``y`` (``(N, d)``) and returns ``(N, 1)``, so ``fit``/``predict`` work on paired data;
    :meth:`grid` and :meth:`partials` take ``B`` functions and ``P`` points and return ``(B, P)``.

    Args:
      branch: Keras model ``(N, m) -> (N, p)``: the function at its ``m`` sensors.
      trunk: Keras model ``(N, d) -> (N, p)``: the query point.
      **kwargs: passed to ``keras.Model`` (e.g. ``name``).

    References:
      Lu, Jin, Pang, Zhang & Karniadakis, "Learning nonlinear operators via DeepONet based on
      the universal approximation theorem of operators", Nature Machine Intelligence 3, 2021.
      Wang, Wang & Perdikaris, "Learning the solution operator of parametric partial
      differential equations with physics-informed DeepONets", Science Advances 7, 2021.

    Example:
      ```python
      import tensorflow as tf
      from hodiff.pinn import DeepONet

      net = DeepONet.mlp(sensors=10, dimension=2, width=16, depth=2, basis=8, dtype="float64")
      f = tf.random.normal((3, 10), dtype=tf.float64)            # 3 functions at 10 sensors
      y = tf.random.uniform((5, 2), dtype=tf.float64)            # 5 points (x, t)
      assert net.grid(f, y).shape == (3, 5)
      d = net.partials(f, y, coords=("x", "t"), wanted=("", "t", "xx"), method="forward")
      nested = net.partials(f, y, coords=("x", "t"), wanted=("", "t", "xx"), method="nested")
      tf.debugging.assert_near(d["xx"], nested["xx"])
      ```
    """

    def __init__(self, branch: keras.Model, trunk: keras.Model, **kwargs: Any):
        for name, net in (("branch", branch), ("trunk", trunk)):
            if not isinstance(net, keras.Model) or not net.built or len(getattr(net, "outputs", None) or ()) != 1:
                raise ValueError(
                    f"DeepONet: {name} must be a built Keras model with one input and one output (give it a "
                    f"keras.Input); got {type(net).__name__}."
                )
        kwargs.setdefault("dtype", trunk.weights[0].dtype)
        super().__init__(**kwargs)
        if branch.outputs[0].shape[-1] != trunk.outputs[0].shape[-1]:
            raise ValueError(
                f"DeepONet: branch has {branch.outputs[0].shape[-1]} outputs and trunk "
                f"{trunk.outputs[0].shape[-1]}; both must end in the same number p of basis coefficients."
            )
        self.branch = branch
        self.trunk = trunk
        self.sensors = int(branch.inputs[0].shape[-1])
        self.dimension = int(trunk.inputs[0].shape[-1])
        self.bias = self.add_weight(shape=(), initializer="zeros", name="bias", dtype=trunk.weights[0].dtype)

    @classmethod
    def mlp(
        cls,
        sensors: int,
        dimension: int,
        width: int = 100,
        depth: int = 4,
        basis: int = 100,
        activation: str = "tanh",
        dtype: str = "float32",
        seed: int = 0,
    ) -> DeepONet:
        """A DeepONet whose branch and trunk are Dense stacks (``depth`` hidden layers each).

        Args:
          sensors: ``m``, the number of sensors of the branch.
          dimension: ``d``, the number of coordinates of the trunk.
          width: units per hidden layer.
          depth: hidden layers of each network.
          basis: ``p``, the outputs of each network.
          activation: hidden activation (smooth, e.g. tanh, for second derivatives).
          dtype: ``"float32"`` or ``"float64"``.
          seed: seeds the initialisers (no global random state).

        Returns:
          A built :class:`DeepONet` (the trunk supports ``method="forward"``).
        """
        if dtype not in ("float32", "float64"):
            raise ValueError(f"DeepONet.mlp: dtype must be 'float32' or 'float64'; got {dtype!r}.")
        branch = _dense_stack(sensors, width, depth, basis, activation, dtype, seed, "branch")
        trunk = _dense_stack(dimension, width, depth, basis, activation, dtype, seed + 1000, "trunk")
        return cls(branch, trunk)

    def _check(self, f: Any, y: Any, caller: str) -> tuple[tf.Tensor, tf.Tensor]:
        dtype = self.trunk.weights[0].dtype
        f, y = tf.cast(tf.convert_to_tensor(f), dtype), tf.cast(tf.convert_to_tensor(y), dtype)
        if f.shape.rank != 2 or f.shape[-1] != self.sensors:
            raise ValueError(
                f"{caller}: f must have shape (functions, {self.sensors}): each function at the branch's "
                f"{self.sensors} sensors; got shape {tuple(f.shape)}."
            )
        if y.shape.rank != 2 or y.shape[-1] != self.dimension:
            raise ValueError(
                f"{caller}: y must have shape (points, {self.dimension}): the trunk's {self.dimension} "
                f"coordinates per point; got shape {tuple(y.shape)}."
            )
        return f, y

    def call(self, inputs: Sequence[Any]) -> tf.Tensor:
        """``[f (N, m), y (N, d)] -> (N, 1)``: row ``i`` of ``f`` at row ``i`` of ``y``."""
        if not isinstance(inputs, (list, tuple)) or len(inputs) != 2:
            raise ValueError(
                "DeepONet: call the model on [f, y] (paired rows); for B functions at P shared points use grid(f, y)."
            )
        f, y = self._check(inputs[0], inputs[1], "DeepONet")
        value = tf.reduce_sum(self.branch(f) * self.trunk(y), axis=-1, keepdims=True)
        return value + self.bias

    def grid(self, f: Any, y: Any) -> tf.Tensor:
        """``G(f_b)(y_p)`` for ``B`` functions ``f`` (``(B, m)``) at ``P`` points ``y`` (``(P, d)``): ``(B, P)``."""
        f, y = self._check(f, y, "DeepONet.grid")
        return tf.matmul(self.branch(f), self.trunk(y), transpose_b=True) + self.bias

    def partials(
        self,
        f: Any,
        y: Any,
        coords: Sequence[str],
        wanted: Sequence[str],
        method: str = "forward",
    ) -> dict[str, tf.Tensor]:
        """Named partials in the trunk's coordinates of ``G(f_b)`` at shared points, ``(B, P)`` each.

        Args:
          f: ``B`` functions at the sensors, ``(B, m)``.
          y: ``P`` points, ``(P, d)``.
          coords: one single-letter name per column of ``y``, e.g. ``("x", "t")``.
          wanted: partials by name, as :func:`hodiff.partials`: ``""`` (the value), ``"t"``,
            ``"xx"``; mixed ones (``"xt"``) with ``method="nested"`` only.
          method: ``"forward"`` (Taylor-mode jets of the trunk at the ``P`` points; a Dense chain)
            or ``"nested"`` (nested tapes over all ``B P`` pairs; any trunk).

        Returns:
          ``{name: (B, P)}``.
        """
        caller = "DeepONet.partials"
        if method not in DEEPONET_METHODS:
            raise ValueError(
                f"{caller}: method={method!r} is not an option; use 'forward' (Taylor mode through a Dense trunk) "
                f"or 'nested' (nested tapes, any trunk)."
            )
        if isinstance(wanted, str):
            raise TypeError(
                f"{caller}: wanted must be a tuple of names, e.g. ({wanted!r},), not the string {wanted!r}."
            )
        if len(coords) != self.dimension or len(set(coords)) != len(coords):
            raise ValueError(
                f"{caller}: coords must name each of the trunk's {self.dimension} coordinates once; "
                f"got {tuple(coords)}."
            )
        f, y = self._check(f, y, caller)
        coefficients = self.branch(f)  # (B, p)
        if method == "nested":
            return self._nested(coefficients, y, coords, wanted)
        return self._forward(coefficients, y, coords, wanted, caller)

    def _nested(self, coefficients: tf.Tensor, y: tf.Tensor, coords: Sequence[str], wanted: Sequence[str]) -> dict:
        functions, points = tf.shape(coefficients)[0], tf.shape(y)[0]
        pairs = tf.tile(y, [functions, 1])  # function-major: row b P + j is (f_b, y_j)
        repeated = tf.repeat(coefficients, points, axis=0)

        def field(z):
            return tf.reduce_sum(repeated * self.trunk(z), axis=-1) + self.bias

        values = _field_partials(field, pairs, tuple(coords), tuple(wanted), unconnected="zero")
        return {name: tf.reshape(values[name], tf.stack([functions, points])) for name in wanted}

    def _forward(
        self, coefficients: tf.Tensor, y: tf.Tensor, coords: Sequence[str], wanted: Sequence[str], caller: str
    ) -> dict:
        orders: dict[str, tuple[int, int]] = {}  # name -> (axis, order)
        for name in wanted:
            unknown = [c for c in name if c not in coords]
            if unknown:
                raise ValueError(
                    f"{caller}: wanted {name!r} uses {unknown[0]!r}, which is not one of coords {tuple(coords)}."
                )
            if len(set(name)) > 1:
                raise ValueError(
                    f"{caller}: method='forward' gives pure partials along the coordinate axes; {name!r} is mixed. "
                    f"Use method='nested' for mixed partials."
                )
            orders[name] = (list(coords).index(name[0]) if name else 0, len(name))
        top = max((order for _, order in orders.values()), default=0)
        if top == 0:
            series = [self.trunk(y)[:, None, :]]
        else:
            directions = tf.eye(self.dimension, dtype=y.dtype)
            series = jets.taylor_coefficients(self.trunk, y, directions, top, method="forward", caller=caller)
        results = {}
        for name, (axis, order) in orders.items():
            basis = series[order][:, axis, :] * math.factorial(order)  # (P, p)
            value = tf.matmul(coefficients, basis, transpose_b=True)
            results[name] = value + self.bias if order == 0 else value
        return results
