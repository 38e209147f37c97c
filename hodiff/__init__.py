"""hodiff: higher-order differentiation for TensorFlow 2 / Keras 3.

Derivatives as composable function transforms (the tapes stay inside), differential operators
for fields, Taylor-mode Laplacians, stochastic estimators, a scipy-backed Hessian operator and
scipy reference checks; stable custom gradients, gradient transforms, multi-task merging,
gradient monitoring and compiled training steps (``hodiff.training``); PINN solvers (``hodiff.pinn``)
and MAML-family meta-learning (``hodiff.meta``). Everything runs in eager mode, ``tf.function`` and XLA.

``import hodiff`` loads the derivative core only; ``hodiff.training``, ``hodiff.meta`` and
``hodiff.pinn`` (and ``TrainStep``, ``minimize_lbfgs``) load on first use.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from hodiff import _xla_gradients, checks, jets, operators
from hodiff.derivatives import (
    HVP_MODES,
    batch_hessian,
    batch_jacobian,
    elementwise_derivatives,
    grad,
    hessian,
    hvp,
    jacobian,
    jvp,
    nth_derivative,
    value_and_grad,
    vjp,
)
from hodiff.estimators import Estimate, hessian_diagonal, hutchinson_trace, hutchpp_trace
from hodiff.functional import functional_call
from hodiff.gauss_newton import ggn_vector_product
from hodiff.jets import Jet, SparseDirections, directional_derivative, taylor_coefficients
from hodiff.linalg import hessian_eigenvalues, hessian_operator, newton_cg
from hodiff.operators import (
    OPERATOR_METHODS,
    Biharmonic,
    Contraction,
    Divergence,
    Laplacian,
    MixedPartial,
    Operator,
    Partials,
    PurePartials,
    divergence,
    laplacian,
    partials,
)
from hodiff.per_example import per_example_gradient_norms, per_example_gradients

if TYPE_CHECKING:  # loaded on first use (PEP 562), see __getattr__
    from hodiff import meta, pinn, training
    from hodiff.training.lbfgs import minimize_lbfgs
    from hodiff.training.step import TrainStep

__version__ = "0.1.0"

_xla_gradients.register()  # slices and concatenations differentiate to any order under XLA

_SUBPACKAGES = ("meta", "pinn", "training")
_LAZY = {"TrainStep": "hodiff.training.step", "minimize_lbfgs": "hodiff.training.lbfgs"}


def __getattr__(name: str) -> Any:
    """Loads ``hodiff.meta``, ``hodiff.pinn``, ``hodiff.training`` and their names on first use."""
    if name in _SUBPACKAGES:
        return importlib.import_module(f"hodiff.{name}")
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'hodiff' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


__all__ = [
    "HVP_MODES",
    "OPERATOR_METHODS",
    "Biharmonic",
    "Contraction",
    "Divergence",
    "Estimate",
    "Jet",
    "Laplacian",
    "MixedPartial",
    "Operator",
    "Partials",
    "PurePartials",
    "SparseDirections",
    "TrainStep",
    "batch_hessian",
    "batch_jacobian",
    "checks",
    "directional_derivative",
    "divergence",
    "elementwise_derivatives",
    "functional_call",
    "ggn_vector_product",
    "grad",
    "hessian",
    "hessian_diagonal",
    "hessian_eigenvalues",
    "hessian_operator",
    "hutchinson_trace",
    "hutchpp_trace",
    "hvp",
    "jacobian",
    "jets",
    "jvp",
    "laplacian",
    "meta",
    "minimize_lbfgs",
    "newton_cg",
    "nth_derivative",
    "operators",
    "partials",
    "per_example_gradient_norms",
    "per_example_gradients",
    "pinn",
    "taylor_coefficients",
    "training",
    "value_and_grad",
    "vjp",
]
