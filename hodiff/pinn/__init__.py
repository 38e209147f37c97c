"""Physics-informed neural networks on hodiff's derivatives: geometry, conditions, problem,
networks, trainer, run log and plots (``hodiff.pinn.plotting``, imported on demand)."""

from __future__ import annotations

import importlib
from typing import Any

from hodiff._deprecation import warn_moved
from hodiff.pinn import callbacks, conditions, geometry, names, runlog, saving
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
from hodiff.pinn.saving import load_solution, save_solution
from hodiff.pinn.trainer import AdamResult, AdaptiveWeights, Resampling, Trainer

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
    "ReferenceError",
    "ResamplePoints",
    "Resampling",
    "Robin",
    "Sphere",
    "Stochastic",
    "TimeDomain",
    "Trainer",
    "Triangle",
    "callbacks",
    "conditions",
    "geometry",
    "load_solution",
    "mlp",
    "names",
    "runlog",
    "save_solution",
    "saving",
]

_PLUMBING = {  # no longer public names of hodiff.pinn; reachable from their modules
    "RunLog": "hodiff.pinn.runlog",
    "atomic_write": "hodiff.pinn.runlog",
    "write_json": "hodiff.pinn.runlog",
    "relative_l2_error": "hodiff.pinn.trainer",
}


def __getattr__(name: str) -> Any:
    """``hodiff.pinn.RunLog`` and the other run-log plumbing warn for one release: import them from
    their modules (``hodiff.pinn.runlog.RunLog``)."""
    if name in _PLUMBING:
        warn_moved(f"hodiff.pinn.{name}", f"{_PLUMBING[name]}.{name}")
        return getattr(importlib.import_module(_PLUMBING[name]), name)
    raise AttributeError(f"module 'hodiff.pinn' has no attribute {name!r}")
