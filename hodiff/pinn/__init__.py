"""Physics-informed neural networks on hodiff's derivatives: geometry, conditions, problem,
training data, networks, trainer, run log and plots (``hodiff.pinn.plotting``, imported on demand).

Data flow: problem -> :class:`TrainingData` (points, draws, loss weights) -> its ``loss`` ->
optimiser (:class:`Trainer`, :class:`PINNModel`) -> run log (:class:`~hodiff.pinn.runlog.RunLog`)."""

import warnings as _warnings

from hodiff.pinn import callbacks, conditions, geometry, metrics, names, runlog, saving
from hodiff.pinn.callbacks import AdaptiveWeights, Callback, EarlyStopping, RelativeL2Error, ResidualResampling
from hodiff.pinn.conditions import Condition, Data, Dirichlet, Initial, Neumann, Periodic, Robin
from hodiff.pinn.data import TrainingData
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
from hodiff.pinn.keras_model import PINNModel, UniformResampling
from hodiff.pinn.metrics import relative_l2_errors
from hodiff.pinn.networks import FourierFeatures, Gate, PeriodicEmbedding, mlp
from hodiff.pinn.problem import CausalWeights, Problem, Stochastic
from hodiff.pinn.runlog import RunLog, atomic_write, write_json
from hodiff.pinn.saving import load_solution, save_solution
from hodiff.pinn.trainer import AdamResult, Output, Schedule, Trainer

__all__ = [
    "AdamResult",
    "AdaptiveWeights",
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
    "Output",
    "RelativeL2Error",
    "ResidualResampling",
    "Robin",
    "Schedule",
    "RunLog",
    "Sphere",
    "Stochastic",
    "TimeDomain",
    "Trainer",
    "TrainingData",
    "UniformResampling",
    "Triangle",
    "atomic_write",
    "callbacks",
    "conditions",
    "geometry",
    "load_solution",
    "mlp",
    "names",
    "metrics",
    "relative_l2_errors",
    "runlog",
    "save_solution",
    "saving",
    "write_json",
]

_DEPRECATED = {
    "ReferenceError": ("RelativeL2Error", RelativeL2Error),
    "Resampling": ("ResidualResampling", ResidualResampling),
    "ResamplePoints": ("UniformResampling", UniformResampling),
}


def __getattr__(name: str):
    """Former names, deprecated: ``ReferenceError``, ``Resampling``, ``ResamplePoints``, ``relative_l2_error``."""
    if name == "relative_l2_error":
        from hodiff.pinn import trainer

        return getattr(trainer, name)  # warns
    if name not in _DEPRECATED:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    new, value = _DEPRECATED[name]
    _warnings.warn(f"hodiff.pinn.{name} is deprecated; use hodiff.pinn.{new}.", DeprecationWarning, stacklevel=2)
    return value
