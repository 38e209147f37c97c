"""Deprecated module (one release): operators are objects in :mod:`hodiff.operators`.

``stde.laplacian()`` is :class:`hodiff.operators.Laplacian` (likewise ``biharmonic``,
``pure_partials``, ``mixed_partial``, ``contraction``); ``stde.apply(u, x, op, method)`` is
``op(u, method)(x)``; ``stde.estimate(u, x, op, ...)`` is ``op.estimate(u, ...)(x)``. The jet
machinery lives in :mod:`hodiff.jets.stde`. Every name here warns with a ``DeprecationWarning``.
"""

from __future__ import annotations

from typing import Any

import tensorflow as tf

from hodiff import _deprecation, operators
from hodiff.estimators import Estimate
from hodiff.jets import stde as _stde


def _decomposition(operator: Any, caller: str) -> _stde.Decomposition:
    if not isinstance(operator, operators.Operator) or operator.decomposition is None:
        raise TypeError(
            f"{caller}: operator must be an stde.Operator (stde.laplacian(), stde.biharmonic(), "
            f"stde.pure_partials(c, k), stde.mixed_partial(i, j), stde.contraction(...)); "
            f"got {type(operator).__name__}."
        )
    return operator.decomposition


def _apply(u: Any, x: tf.Tensor, operator: Any, method: str = "forward") -> tf.Tensor:
    return _stde.exact(u, x, _decomposition(operator, "apply"), method, "apply")


def _estimate(
    u: Any,
    x: tf.Tensor,
    operator: Any,
    num_samples: int = 16,
    seed: Any = 0,
    sampling: str = "sparse",
    method: str = "forward",
    with_stderr: bool = True,
) -> Estimate:
    decomposition = _decomposition(operator, "estimate")
    return _stde.estimate(u, x, decomposition, num_samples, seed, sampling, method, with_stderr, "estimate")


__getattr__ = _deprecation.module_getattr(
    "hodiff.stde",
    {
        "SAMPLINGS": (_stde.SAMPLINGS, "hodiff.operators.SAMPLINGS"),
        "Terms": (_stde.Terms, "hodiff.jets.stde.Terms"),
        "Operator": (operators.Operator, "hodiff.operators.Operator"),
        "laplacian": (operators.Laplacian, "hodiff.operators.Laplacian()"),
        "biharmonic": (operators.Biharmonic, "hodiff.operators.Biharmonic()"),
        "pure_partials": (operators.PurePartials, "hodiff.operators.PurePartials(c, k)"),
        "mixed_partial": (operators.MixedPartial, "hodiff.operators.MixedPartial(i, j)"),
        "contraction": (operators.Contraction, "hodiff.operators.Contraction(order, ...)"),
        "apply": (_apply, "operator(u, method)(x)"),
        "estimate": (_estimate, "operator.estimate(u, ...)(x), or operator(u, 'stochastic', ...)(x) for the value"),
    },
)
