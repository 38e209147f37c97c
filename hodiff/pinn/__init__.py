"""Physics-informed neural networks on hodiff's derivatives: geometry, conditions, problem,
networks, trainer, run log and plots (``hodiff.pinn.plotting``, imported on demand)."""

from hodiff.pinn import callbacks, conditions, geometry, names, runlog, saving
from hodiff.pinn.callbacks import Callback, EarlyStopping, ReferenceError
from hodiff.pinn.conditions import Condition, Data, Dirichlet, Initial, Neumann, Periodic, Robin
from hodiff.pinn.geometry import (
    Ball,
    Box,
    Disk,
    Ellipse,
    Geometry,
    Hypercube,
    Hypersphere,
    Interval,
    Parameter,
    PointCloud,
    Polygon,
    Rectangle,
    Sphere,
    TimeDomain,
    Triangle,
)
from hodiff.pinn.networks import FourierFeatures, Gate, PeriodicEmbedding, mlp
from hodiff.pinn.problem import CausalWeights, Problem
from hodiff.pinn.runlog import RunLog, atomic_write, write_json
from hodiff.pinn.saving import load_solution, save_solution
from hodiff.pinn.trainer import AdamResult, AdaptiveWeights, Resampling, Trainer, relative_l2_error

__all__ = [
    "save_solution",
    "load_solution",
    "saving",
    "callbacks",
    "Gate",
    "ReferenceError",
    "EarlyStopping",
    "Callback",
    "AdamResult",
    "AdaptiveWeights",
    "Ball",
    "Box",
    "CausalWeights",
    "Condition",
    "Data",
    "Dirichlet",
    "Disk",
    "Ellipse",
    "FourierFeatures",
    "Geometry",
    "Hypercube",
    "Hypersphere",
    "Initial",
    "Interval",
    "Neumann",
    "Parameter",
    "Periodic",
    "PeriodicEmbedding",
    "PointCloud",
    "Polygon",
    "Problem",
    "Rectangle",
    "Resampling",
    "Robin",
    "RunLog",
    "Sphere",
    "TimeDomain",
    "Trainer",
    "Triangle",
    "atomic_write",
    "conditions",
    "geometry",
    "mlp",
    "names",
    "relative_l2_error",
    "runlog",
    "write_json",
]
