"""Physics-informed neural networks on hodiff's derivatives: geometry, conditions, problem,
training data, networks, trainer, run log and plots (``hodiff.pinn.plotting``, imported on demand).

Data flow: problem -> :class:`TrainingData` (points, draws, loss weights) -> its ``loss`` ->
optimiser (:class:`Trainer`, :class:`PINNModel`) -> run log (:class:`~hodiff.pinn.runlog.RunLog`)."""

from __future__ import annotations

from hodiff.pinn import (
    backup,
    callbacks,
    conditions,
    diagnostics,
    flux,
    geometry,
    metrics,
    names,
    restarts,
    runlog,
    saving,
)
from hodiff.pinn.backup import BackupCallback
from hodiff.pinn.callbacks import (
    AdaptiveWeights,
    Callback,
    EarlyStopping,
    GradNormWeights,
    RelativeL2Error,
    ResidualResampling,
    UniformResampling,
)
from hodiff.pinn.conditions import (
    Condition,
    Data,
    Dirichlet,
    Initial,
    Interface,
    Neumann,
    Periodic,
    Refinement,
    Robin,
    hard_initial,
)
from hodiff.pinn.data import TrainingData
from hodiff.pinn.deeponet import DeepONet
from hodiff.pinn.diagnostics import StallDiagnostic
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
from hodiff.pinn.keras_model import PINNModel
from hodiff.pinn.lifts import hard_dirichlet
from hodiff.pinn.metrics import relative_l2_errors
from hodiff.pinn.networks import FactorizedDense, FourierFeatures, Gate, PeriodicEmbedding, ReflectingEmbedding, mlp
from hodiff.pinn.problem import CausalWeights, Problem, Stochastic
from hodiff.pinn.restarts import Chebyshev, Cosine, Fourier, SeriesRestart, Sine
from hodiff.pinn.saving import load_solution, save_solution
from hodiff.pinn.stream import StreamFunction
from hodiff.pinn.study import Phases, Reference, Solution, read_points, solve
from hodiff.pinn.tabulated import LevelSetFeature, Tabulated
from hodiff.pinn.trainer import AdamResult, Output, Schedule, Trainer
from hodiff.pinn.windows import (
    Marching,
    TimeWindows,
    WindowRun,
    WindowState,
    restore_marching,
    second_order_start,
    time_marching,
)

__all__ = [
    "AdamResult",
    "AdaptiveWeights",
    "BackupCallback",
    "Ball",
    "Box",
    "Callback",
    "CausalWeights",
    "Chebyshev",
    "Condition",
    "Cosine",
    "Data",
    "DeepONet",
    "Dirichlet",
    "Disk",
    "EarlyStopping",
    "Ellipse",
    "FactorizedDense",
    "Fourier",
    "FourierFeatures",
    "Gate",
    "Geometry",
    "GradNormWeights",
    "Hypercube",
    "Hypersphere",
    "Initial",
    "Interface",
    "Interval",
    "LevelSetFeature",
    "Marching",
    "Neumann",
    "Parameter",
    "Periodic",
    "PINNModel",
    "PeriodicEmbedding",
    "ReflectingEmbedding",
    "Phases",
    "PointCloud",
    "Polygon",
    "Problem",
    "Rectangle",
    "Output",
    "RelativeL2Error",
    "ResidualResampling",
    "Refinement",
    "Reference",
    "Robin",
    "Schedule",
    "SeriesRestart",
    "Solution",
    "Sine",
    "Sphere",
    "StallDiagnostic",
    "Stochastic",
    "StreamFunction",
    "Tabulated",
    "TimeDomain",
    "TimeWindows",
    "Trainer",
    "TrainingData",
    "UniformResampling",
    "WindowRun",
    "WindowState",
    "Triangle",
    "backup",
    "callbacks",
    "conditions",
    "diagnostics",
    "flux",
    "geometry",
    "hard_dirichlet",
    "hard_initial",
    "load_solution",
    "mlp",
    "names",
    "metrics",
    "read_points",
    "relative_l2_errors",
    "restarts",
    "restore_marching",
    "runlog",
    "save_solution",
    "second_order_start",
    "saving",
    "solve",
    "time_marching",
]
