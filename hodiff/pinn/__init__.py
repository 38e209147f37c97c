"""Physics-informed neural networks on hodiff's derivatives: geometry, conditions, problem,
networks, trainer and plots."""

from hodiff.pinn import conditions, geometry
from hodiff.pinn.conditions import Data, Dirichlet, Initial, Neumann, Periodic
from hodiff.pinn.geometry import Box, Interval, Rectangle, TimeDomain
from hodiff.pinn.networks import FourierFeatures, mlp
from hodiff.pinn.problem import Problem
from hodiff.pinn.trainer import AdaptiveWeights, CausalWeights, Resampling, Trainer, relative_l2_error

__all__ = [
    "AdaptiveWeights", "Box", "CausalWeights", "Data", "Dirichlet", "FourierFeatures", "Initial", "Interval", "Neumann",
    "Periodic", "Problem", "Rectangle", "Resampling", "TimeDomain", "Trainer", "conditions", "geometry",
    "mlp", "relative_l2_error",
]
