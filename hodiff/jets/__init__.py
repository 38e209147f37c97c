"""Taylor-mode jets: one forward engine and one activation-rule table for every order.

- :mod:`hodiff.jets.rules`: the activation-rule table (``s, s', ..., s^(k)`` of every supported
  activation) and the flattening of a Keras chain into propagation steps;
- :mod:`hodiff.jets.propagation`: the engine: the collapsed second-order pass (forward
  Laplacian, Jacobian, chosen partials), univariate series of any order (collapsed top
  coefficient included) and the collapsed biharmonic pass;
- :mod:`hodiff.jets.taylor`: Taylor coefficients and directional derivatives along directions,
  forward or by nested tapes;
- :mod:`hodiff.jets.stde`: operators as weighted jets, summed exactly or sampled (STDE, SDGD).

Differential operators built on them (Laplacian, divergence, biharmonic, partials,
contractions) are objects in :mod:`hodiff.operators`, which is where users start.
"""

from __future__ import annotations

from typing import Any

import keras
import tensorflow as tf

from hodiff import _deprecation
from hodiff.jets import directions, propagation, rules, stde, taylor
from hodiff.jets.directions import SparseDirections
from hodiff.jets.propagation import Jet
from hodiff.jets.taylor import JET_METHODS, check_order, directional_derivative, taylor_coefficients

__all__ = [
    "JET_METHODS",
    "Jet",
    "SparseDirections",
    "check_order",
    "directional_derivative",
    "directions",
    "propagation",
    "rules",
    "stde",
    "taylor",
    "taylor_coefficients",
]


def _forward_laplacian(model: keras.Model) -> Any:
    return lambda x: propagation.forward_jet(model, x, caller="forward_laplacian", need_jacobian=False).laplacian


def _forward_jet(model: Any, x: tf.Tensor, need_laplacian: bool = True, caller: str = "forward_jet", **kw: Any) -> Jet:
    return propagation.forward_jet(model, x, need_laplacian, caller, **kw)


# Deprecated names (one release): each call warns and gives the same values as before.
contracted_derivative = _deprecation.alias(
    taylor.weighted_jets,
    "hodiff.contracted_derivative",
    "hodiff.operators.Contraction(order, directions, weights)(u, method)(x)",
)
forward_biharmonic = _deprecation.alias(
    propagation.forward_biharmonic, "hodiff.jets.forward_biharmonic", "hodiff.operators.Biharmonic()(model, 'forward')"
)
forward_jet = _deprecation.alias(
    _forward_jet, "hodiff.forward_jet", "hodiff.laplacian(model, method='forward') or hodiff.divergence(...)"
)
forward_laplacian = _deprecation.alias(
    _forward_laplacian, "hodiff.forward_laplacian(model)", "hodiff.laplacian(model, method='forward')"
)
