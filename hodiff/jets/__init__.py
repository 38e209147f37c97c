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
