"""Physics-informed neural networks on hodiff's derivatives: geometry, conditions, problem,
networks, trainer, run log and plots (``hodiff.pinn.plotting``, imported on demand)."""

from hodiff.pinn import backup, callbacks, conditions, geometry, names, runlog, saving
from hodiff.pinn.backup import BackupCallback
from hodiff.pinn.callbacks import Callback, EarlyStopping, ReferenceError
from hodiff.pinn.conditions import Condition, Data, Dirichlet, Initial, Neumann, Periodic, Robin
from hodiff.pinn.deeponet import DeepONet
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
from hodiff.pinn.keras_model import PINNModel, ResamplePoints
from hodiff.pinn.networks import FourierFeatures, Gate, PeriodicEmbedding, mlp
from hodiff.pinn.problem import CausalWeights, Problem, Stochastic
from hodiff.pinn.runlog import RunLog, atomic_write, write_json
from hodiff.pinn.saving import load_solution, save_solution
from hodiff.pinn.trainer import AdamResult, AdaptiveWeights, Resampling, Trainer, relative_l2_error

__all__ = [
    "AdamResult",
    "AdaptiveWeights",
    "BackupCallback",
    "Ball",
    "Box",
    "Callback",
    "CausalWeights",
    "Condition",
    "Data",
    "DeepONet",
    "Dirichlet",
    "Disk",
    "EarlyStopping",
    "Ellipse",
    "FourierFeatures",
    "Gate",
    "Geometry",
    "Hypercube",
    "Hypersphere",
    "Initial",
    "Interval",
    "Neumann",
    "Parameter",
    "Periodic",
    "PINNModel",
    "PeriodicEmbedding",
    "PointCloud",
    "Polygon",
    "Problem",
    "Rectangle",
    "ReferenceError",
    "ResamplePoints",
    "Resampling",
    "Robin",
    "RunLog",
    "Sphere",
    "Stochastic",
    "TimeDomain",
    "Trainer",
    "Triangle",
    "atomic_write",
    "backup",
    "callbacks",
    "conditions",
    "geometry",
    "load_solution",
    "mlp",
    "names",
    "relative_l2_error",
    "runlog",
    "save_solution",
    "saving",
    "write_json",
]
