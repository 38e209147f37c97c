"""A divergence-free planar velocity from a network: the stream function.

:class:`StreamFunction` wraps a network whose first output is a stream function's correction
``N`` and returns the velocity ``(u, v) = (dpsi/dy, -dpsi/dx)`` of ``psi = E(x, y) N``, followed by
the network's other outputs (a pressure, say). ``u_x + v_y = 0`` then holds exactly, at every
point and for every weight: incompressible flow keeps its mass without a continuity loss term,
which otherwise has to be weighted against the momentum equations (and pulls against them).

The envelope ``E`` is a product of powers of the distances to the domain's walls, so that the
network's velocity vanishes where a lift carries the boundary values: order 2 at a wall makes
``psi`` and its normal derivative vanish there, so that both velocity components of the
correction vanish (no slip, or an inflow given by the lift); order 1 makes ``psi`` vanish, so
that only the normal velocity does (no flow through a slip wall); order 0 leaves the wall free (an
outlet). Add the lift in the problem's ``output_transform``: any divergence-free field (a
velocity that depends on ``y`` and ``t`` alone, the solution of an earlier time window) keeps the
sum divergence-free.

Each wall's factor is the distance to it, scaled to the domain (``s`` and ``1 - s``), so it rises
across the whole domain: with order 2 at the inlet of a channel of length 2, ``(x/2)^2`` is 6e-4 at
``x = 0.05``, and the network's output has to grow like ``1/x^2`` to make the flow there. Where the
flow changes within a short distance of a wall (an inflow profile that adjusts, a wall layer), give
that coordinate a ``thickness``: its factors become ``1 - exp(-d / thickness)``, ``d`` the distance
to the wall, which vanish at the wall with the same order and are within 5% of 1 three thicknesses
away (on ``ns2d_lt`` a thickness of 0.1 at the inlet halved the velocity's error over ``t <= 1``).

The velocity is the gradient of ``psi`` taken inside the network's call, so the PDE's second
partials of the velocity are third partials of the network: a training step costs about three
times one on ``(u, v, p)`` directly (the Navier-Stokes example: 202 against 63 ms).

References:
  Batchelor (1967), "An Introduction to Fluid Dynamics", section 2.2 (the stream function);
  Raissi, Perdikaris & Karniadakis (2019), "Physics-informed neural networks", J. Comput. Phys.
  378 (Navier-Stokes through a stream function).

Example:
  ```python
  import tensorflow as tf
  from hodiff import pinn

  domain = pinn.Rectangle(("x", "y"), (0.0, 0.0), (2.0, 1.0))
  potential = pinn.mlp(domain, outputs=2, width=16, depth=2)  # psi's network and a pressure
  flow = pinn.StreamFunction(potential, domain, walls={"y": (2, 2)})
  points = tf.constant([[0.5, 0.3], [1.5, 0.0], [1.0, 1.0]], tf.float64)
  with tf.GradientTape(persistent=True) as tape:
      tape.watch(points)
      u, v, p = tf.unstack(flow(points), axis=1)
  divergence = tape.gradient(u, points)[:, 0] + tape.gradient(v, points)[:, 1]
  assert float(tf.reduce_max(tf.abs(divergence))) < 1e-12
  assert float(tf.reduce_max(tf.abs(flow(points)[1:, :2]))) < 1e-12  # no slip at y = 0 and y = 1
  ```
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import keras
import numpy as np
import tensorflow as tf

__all__ = ["StreamFunction"]

ORDERS = (0, 1, 2)


@keras.saving.register_keras_serializable(package="hodiff")
class StreamFunction(keras.Model):
    """``(u, v, rest) = (dpsi/dy, -dpsi/dx, outputs[1:])`` with ``psi = E * outputs[0]`` (see the module docstring).

    Args:
      potential: a Keras network ``(N, d) -> (N, k)``, ``k >= 1``; its first output times the
        envelope is the stream function, the others are passed on (e.g. :func:`~hodiff.pinn.mlp`
        with ``outputs=2`` for ``(u, v, p)``).
      domain: the problem's domain (its coordinates and bounds place the walls).
      velocity: the names of the two coordinates of the plane, ``(x, y)``: ``u`` is along the first.
        Default: the domain's first two coordinates.
      walls: ``{coordinate: (order at its lower bound, order at its upper bound)}``, orders 0, 1 or 2,
        for coordinates of the plane; the envelope is ``prod s^a (1 - s)^b``, ``s`` the coordinate
        scaled to ``[0, 1]``, normalised to a largest value of 1. Coordinates left out: no factor.
      thickness: ``{coordinate: length}`` for coordinates in ``walls``: their factors are
        ``1 - exp(-d / length)`` instead, ``d`` the distance to the wall (see the module docstring).
      coords: the domain's coordinate names, with ``low`` and ``high`` in place of ``domain`` (what
        ``get_config`` stores).
      low: the domain's lower bounds, one per coordinate.
      high: its upper bounds.

    Returns (when called):
      ``(N, k + 1)``: ``u``, ``v``, then ``outputs[1:]``, in the potential's dtype.
    """

    def __init__(
        self,
        potential: keras.Model,
        domain: Any = None,
        velocity: Sequence[str] | None = None,
        walls: dict[str, Sequence[int]] | None = None,
        thickness: dict[str, float] | None = None,
        *,
        coords: Sequence[str] | None = None,
        low: Sequence[float] | None = None,
        high: Sequence[float] | None = None,
        **kwargs,
    ):
        if not isinstance(potential, keras.layers.Layer):
            raise TypeError(f"StreamFunction: potential must be a Keras network, got {type(potential).__name__}.")
        if potential.weights:  # the points are cast to the network's own type (float32 under mixed precision)
            kwargs.setdefault("dtype", keras.backend.standardize_dtype(potential.weights[0].dtype))
        super().__init__(**kwargs)
        if domain is not None:
            coords, low, high = domain.coords, domain.low, domain.high
        if coords is None or low is None or high is None:
            raise TypeError("StreamFunction: give the problem's domain (its coordinates and bounds place the walls).")
        self.potential = potential
        self.coords = tuple(str(c) for c in coords)
        self.low, self.high = [float(v) for v in low], [float(v) for v in high]
        self.velocity = tuple(self.coords[:2] if velocity is None else velocity)
        self.walls = {str(k): tuple(int(o) for o in v) for k, v in (walls or {}).items()}
        if thickness is not None and not isinstance(thickness, dict):
            raise TypeError(
                f"StreamFunction: thickness must be a dict {{coordinate: length}}, got {type(thickness).__name__}."
            )
        self.thickness = dict(thickness or {})
        self._check()
        self.thickness = {str(k): float(v) for k, v in self.thickness.items()}
        self.built = potential.built  # it has no weights of its own

    def _check(self) -> None:
        if len(self.velocity) != 2 or not set(self.velocity) <= set(self.coords) or len(set(self.velocity)) != 2:
            raise ValueError(
                f"StreamFunction: velocity={self.velocity!r} must name two different coordinates of the domain "
                f"{self.coords}."
            )
        for name, orders in self.walls.items():
            if name not in self.velocity:
                raise ValueError(
                    f"StreamFunction: walls has {name!r}, which is not a coordinate of the plane {self.velocity}."
                )
            if len(orders) != 2 or any(o not in ORDERS for o in orders):
                raise ValueError(
                    f"StreamFunction: walls[{name!r}]={orders!r} must be (order at the lower bound, order at the "
                    f"upper bound), each 0, 1 or 2."
                )
        for name, length in self.thickness.items():
            if name not in self.walls:
                raise ValueError(
                    f"StreamFunction: thickness has {name!r}, which has no walls; give walls[{name!r}] too, or "
                    f"leave it out of thickness (walls: {sorted(self.walls)})."
                )
            if isinstance(length, bool) or not isinstance(length, (int, float)) or not 0 < length < np.inf:
                raise ValueError(
                    f"StreamFunction: thickness[{name!r}]={length!r} must be a positive length (the distance "
                    f"from the wall over which its factor rises to 1 - 1/e)."
                )

    def _envelope(self, points: tf.Tensor) -> tf.Tensor:
        """``(N, 1)``: the product of the walls' factors, each at most 1."""
        envelope = tf.ones_like(points[:, :1])
        for name, (a, b) in self.walls.items():
            i = self.coords.index(name)
            pick = np.zeros((len(self.coords), 1))
            pick[i] = 1.0
            coordinate = points @ tf.constant(pick, points.dtype)
            low, high = coordinate - self.low[i], self.high[i] - coordinate  # distances to the two walls
            if name in self.thickness:
                lower, upper = (1.0 - tf.exp(-d / self.thickness[name]) for d in (low, high))
                peak = 1.0
            else:
                lower, upper = low / (self.high[i] - self.low[i]), high / (self.high[i] - self.low[i])
                peak = (a / (a + b)) ** a * (b / (a + b)) ** b if a + b else 1.0
            # repeated products, not pow: pow's higher derivatives at the wall are 0 * inf
            for factor in [lower] * a + [upper] * b:
                envelope = envelope * factor
            envelope = envelope / peak
        return envelope

    def build(self, input_shape):
        if not self.potential.built:
            self.potential.build(input_shape)
        self.built = True

    def call(self, points):
        d = len(self.coords)
        x, y = (self.coords.index(name) for name in self.velocity)
        with tf.GradientTape() as tape:
            tape.watch(points)
            outputs = self.potential(points)
            k = outputs.shape[-1]
            first = np.zeros((k, 1))
            first[0] = 1.0
            psi = self._envelope(points) * (outputs @ tf.constant(first, outputs.dtype))
        gradient = tape.gradient(psi, points)
        # products with constant matrices, not slices or concatenations
        curl = np.zeros((d, k + 1))
        curl[y, 0], curl[x, 1] = 1.0, -1.0
        rest = np.zeros((k, k + 1))
        rest[1:, 2:] = np.eye(k - 1)
        return gradient @ tf.constant(curl, gradient.dtype) + outputs @ tf.constant(rest, outputs.dtype)

    def get_config(self):
        return {
            **super().get_config(),
            "potential": keras.saving.serialize_keras_object(self.potential),
            "velocity": list(self.velocity),
            "walls": {k: list(v) for k, v in self.walls.items()},
            "thickness": dict(self.thickness),
            "coords": list(self.coords),
            "low": self.low,
            "high": self.high,
        }

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        config["potential"] = keras.saving.deserialize_keras_object(config["potential"])
        return cls(**config)
