"""hodiff: higher-order differentiation for TensorFlow 2 / Keras 3.

Derivatives as composable function transforms (the tapes stay inside), differential operators
for fields, Taylor-mode Laplacians, stochastic estimators, a scipy-backed Hessian operator and
scipy reference checks; stable custom gradients, gradient transforms, multi-task merging,
gradient monitoring and compiled training steps; PINN solvers (``hodiff.pinn``) and MAML-family
meta-learning (``hodiff.meta``). Everything runs in eager mode, ``tf.function`` and XLA.
"""

from hodiff import checks, jets, meta, monitor, multitask, operators, penalties, pinn, stable, stde, taylor, transforms
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
from hodiff.jets import (
    Jet,
    SparseDirections,
    contracted_derivative,
    directional_derivative,
    forward_jet,
    forward_laplacian,
    taylor_coefficients,
)
from hodiff.lbfgs import minimize_lbfgs
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
    stochastic_divergence,
    stochastic_laplacian,
)
from hodiff.step import TrainStep

__version__ = "0.1.0"

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
    "contracted_derivative",
    "directional_derivative",
    "divergence",
    "elementwise_derivatives",
    "forward_jet",
    "forward_laplacian",
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
    "monitor",
    "multitask",
    "newton_cg",
    "nth_derivative",
    "operators",
    "partials",
    "penalties",
    "pinn",
    "stable",
    "stde",
    "stochastic_divergence",
    "stochastic_laplacian",
    "taylor",
    "taylor_coefficients",
    "transforms",
    "value_and_grad",
    "vjp",
]
