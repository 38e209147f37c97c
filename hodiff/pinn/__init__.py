"""Physics-informed neural networks on hodiff's derivatives: geometry, conditions, problem,
networks, trainer, run log and plots (``hodiff.pinn.plotting``, imported on demand)."""

from hodiff.pinn import conditions, geometry, names, runlog
from hodiff.pinn.conditions import Condition, Data, Dirichlet, Initial, Neumann, Periodic, Robin
from hodiff.pinn.geometry import Box, Interval, Rectangle, TimeDomain
from hodiff.pinn.networks import FourierFeatures, PeriodicEmbedding, mlp
from hodiff.pinn.problem import CausalWeights, Problem
from hodiff.pinn.runlog import RunLog, atomic_write, write_json
from hodiff.pinn.trainer import AdamResult, AdaptiveWeights, Resampling, Trainer, relative_l2_error

__all__ = [
    "AdamResult",
    "AdaptiveWeights",
    "Box",
    "CausalWeights",
    "Condition",
    "Data",
    "Dirichlet",
    "FourierFeatures",
    "Initial",
    "Interval",
    "Neumann",
    "Periodic",
    "PeriodicEmbedding",
    "Problem",
    "Rectangle",
    "Resampling",
    "Robin",
    "RunLog",
    "TimeDomain",
    "Trainer",
    "atomic_write",
    "conditions",
    "geometry",
    "mlp",
    "names",
    "relative_l2_error",
    "runlog",
    "write_json",
]
