"""Time-marching: a time-dependent problem trained window after window.

The horizon ``[t0, T]`` is cut into ``count`` windows of equal length. Window ``k`` is the
problem on ``[t_k, t_k+1]`` (its points, conditions and causal weights there), solved by
the network that window ``k - 1`` ended with, and its initial condition is hard: the output
transform ``transform(x, outputs, t_k, previous)`` makes the solution equal, at ``t = t_k``, the
previous window's solution there (the exact initial condition in window 0), e.g. ``previous +
(t - t_k) * outputs`` (the default). The solution over the whole horizon is window ``k``'s
on ``[t_k, t_k+1)``; it is continuous across the windows' ends by construction.

:func:`time_marching` drives it. With a :class:`~hodiff.pinn.SeriesRestart` (the window before handed on as a
series in space, whose coefficients are a fixed set of numbers) it builds one trainer, on
:meth:`TimeWindows.moving`'s problem, whose transforms read the window's start and the restart's coefficients
from variables (:class:`WindowState`): each window then assigns the variables, draws its points into the
data's variables (:meth:`TrainingData.move <hodiff.pinn.TrainingData.move>`) and starts a run of its own
(:meth:`Trainer.start_run <hodiff.pinn.Trainer.start_run>`), and every window trains with the steps traced
and compiled for the first: no retrace, no compile, and the memory of one window. Without a restart, window
``k`` differentiates the frozen networks of the windows before it, and each window builds a trainer of its
own. Your ``trainer(problem, model)`` builds the trainer; your ``train(trainer)`` runs one window's phases.
With a ``directory`` each window is a run of its own in ``directory/window-<k>`` (history, checkpoints, run
info); ``resume=True`` restores the finished windows from their last checkpoints (no training) and continues
the window that was killed from its latest checkpoint, so the result equals the uninterrupted run's.
:func:`restore_marching` rebuilds the trained solution from the directory alone (``--evaluate``).

The network's time input is scaled over the whole horizon (:func:`~hodiff.pinn.mlp`), so each
window spans ``1 / count`` of its range; ``TimeWindows(..., local_time=True)`` feeds window ``k``'s
network ``t0 + (t - t_k) * count`` instead (the window's :attr:`~hodiff.pinn.Problem.input_transform`),
so that every window spans the whole range. The residual, conditions and transform see ``t``.

References:
  Wang, Sankaran & Perdikaris (2024), "Respecting causality for training physics-informed
  neural networks", CMAME 421 (time-marching and causal weights); Wang, Wang, Bhartari &
  Perdikaris (2023), "An expert's guide to training physics-informed neural networks",
  arXiv:2308.08468 (sequence-to-sequence time windows).

Example:
  ```python
  import numpy as np
  import tensorflow as tf
  from hodiff import pinn

  domain = pinn.Interval("x", 0.0, 1.0) * pinn.TimeDomain("t", 0.0, 1.0)
  decay = pinn.Problem(domain, needs=("u", "u_t"), residual=lambda d, x, p: d["u_t"] + d["u"])

  def trainer(problem, model):
      return pinn.Trainer(
          pinn.TrainingData(problem, interior=64), model, learning_rate=1e-2,
          schedule=pinn.Schedule(steps_per_call=50, log_every=50, progress=False),
      )


  restart = pinn.SeriesRestart(domain, {"x": pinn.Chebyshev(0.0, 1.0, 12)})  # one compiled step for both windows
  windows = pinn.TimeWindows(2, initial=lambda x: tf.sin(np.pi * x["x"])[:, None], restart=restart)
  model = pinn.mlp(domain, width=8, depth=2)
  marched = pinn.time_marching(decay, model, windows, trainer, train=lambda trainer: trainer.adam(300))
  x = np.array([[0.5, 0.0], [0.5, 0.5], [0.5, 1.0]])
  assert np.allclose(marched.predict(x)[:, 0], np.exp(-x[:, 1]), atol=2e-2)
  assert [row["window"] for row in marched.history][::6] == [0, 1]
  ```
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import os
from collections.abc import Callable
from typing import Any, cast

import keras
import numpy as np
import tensorflow as tf

from hodiff import _validate
from hodiff.pinn.conditions import Initial
from hodiff.pinn.problem import CausalWeights, Problem
from hodiff.pinn.restarts import SeriesRestart
from hodiff.pinn.runlog import checkpoint_files, restore_model
from hodiff.pinn.trainer_options import Output

__all__ = [
    "Marching",
    "TimeWindows",
    "WindowRun",
    "WindowState",
    "restore_marching",
    "second_order_start",
    "time_marching",
]

Transform = Callable[[Any, tf.Tensor, float, tf.Tensor], tf.Tensor]


def _add_initial(x: Any, outputs: tf.Tensor, start: float, initial: tf.Tensor) -> tf.Tensor:
    """``initial + (t - start) * outputs``: equal to ``initial`` at ``t = start``."""
    time = x.points[:, -1:] if x.time is None else x[x.time][:, None]
    return initial + (time - tf.cast(start, outputs.dtype)) * outputs


def second_order_start(
    length: float, velocity_scale: float, bubble: Callable[[Any], tf.Tensor] | None = None, time: str = "t"
) -> Transform:
    """A :class:`TimeWindows` transform for a field ``u`` of second order in time and its velocity ``v = u_t``
    (outputs 0 and 1): ``u = u_k + (t - t_k) v_k + s^2 B N_u`` and ``v = v_k + s B velocity_scale N_v``, with
    ``(u_k, v_k)`` the window's start values and ``s = (t - t_k) / length``, so that ``u`` **and** ``u_t`` take
    their start values exactly (a wave equation's two initial conditions).

    Args:
      length: the window's length.
      velocity_scale: the size of ``v`` against ``u``'s (the network's outputs stay of order one).
      bubble: ``B(x) -> (N,)``, optional: a function of the named coordinates that vanishes on the walls where
        ``u = v = 0`` (they then hold when the start values vanish there too); ``None``: 1.
      time: the time coordinate's name.

    Returns:
      ``transform(x, outputs, start, previous) -> (N, 2)`` for ``TimeWindows(transform=...)``.

    Example:
      ```python
      import tensorflow as tf
      from hodiff import pinn

      transform = pinn.second_order_start(length=0.5, velocity_scale=10.0)
      x = {"x": tf.constant([0.2, 0.7], tf.float64), "t": tf.constant([1.0, 1.5], tf.float64)}
      previous = tf.constant([[1.0, 2.0], [3.0, 4.0]], tf.float64)  # (u_k, v_k)
      got = transform(x, tf.ones((2, 2), tf.float64), tf.constant(1.0, tf.float64), previous).numpy()
      assert got[0].tolist() == [1.0, 2.0] and got[1].tolist() == [3.0 + 0.5 * 4.0 + 1.0, 4.0 + 10.0]
      ```
    """

    def transform(x: Any, outputs: tf.Tensor, start: Any, previous: tf.Tensor) -> tf.Tensor:
        elapsed = (x[time] - start)[:, None]
        s = elapsed / length
        weight = 1.0 if bubble is None else bubble(x)[:, None]
        u = previous[:, :1] + elapsed * previous[:, 1:] + s**2 * weight * outputs[:, :1]
        v = previous[:, 1:] + s * weight * velocity_scale * outputs[:, 1:]
        return tf.concat([u, v], axis=1)

    return transform


@dataclasses.dataclass
class TimeWindows:
    """The windows of a time-marching run and the hard initial condition of each.

    Args:
      count: number of windows of equal length, an int >= 1.
      initial: ``initial(x) -> (N, fields)``: the initial condition at the first time, ``x``
        the named coordinate columns (as a residual gets them; ``x.points`` is the ``(N, d)`` tensor).
      transform: ``transform(x, outputs, start, previous) -> (N, fields)``: the window's solution
        from the network's ``outputs``; it must equal ``previous`` (the solution at ``(x, start)``
        of the window before, ``initial`` in the first) where ``t = start``. ``x`` has ``x.time``,
        the time coordinate's name. ``start`` is a float, or, when every window trains with one compiled step (a
        :class:`~hodiff.pinn.SeriesRestart`), a scalar tensor in the outputs' dtype: use TensorFlow ops on it
        (``float(start)`` or numpy functions fail while the step is traced). Default:
        ``previous + (t - start) * outputs``; multiply ``outputs`` by a function that vanishes on the boundary for
        hard boundary conditions too.
      restart: ``restart(previous, start) -> function``, optional: replaces the solution of the
        window before, ``previous(points) -> (N, fields)``, by a function that agrees with it at
        ``t = start`` and is cheaper to differentiate (e.g. its Fourier series in a periodic
        coordinate, evaluated once on a grid). Without it (``None``, default) window ``k``
        evaluates, and differentiates, the frozen networks of all ``k`` windows before it; with it
        every window costs the same. Called once per window, when its problem is built (by
        :func:`time_marching` and :func:`restore_marching` alike, so a restored run is the same). A
        :class:`~hodiff.pinn.SeriesRestart` also lets every window train with one compiled step (:meth:`moving`).
      local_time: each window's network sees its own time stretched over the whole horizon: it is
        evaluated at ``t0 + (t - t_k) * count`` (``t0`` the horizon's start), so that the window spans
        the time input's whole range (as :func:`~hodiff.pinn.mlp` scales it over the horizon) rather
        than ``1 / count`` of it. ``False`` (default): the network sees ``t`` itself. The residual, the
        conditions and :attr:`transform` see ``t`` either way (the window's :attr:`Problem.input_transform`).
    """

    count: int
    initial: Callable[[Any], tf.Tensor]
    transform: Transform = _add_initial
    restart: Callable[[Callable[[tf.Tensor], tf.Tensor], float], Callable[[tf.Tensor], tf.Tensor]] | None = None
    local_time: bool = False

    def __post_init__(self):
        _validate.check_count(self.count, "count", "TimeWindows")
        if not callable(self.initial) or not callable(self.transform):
            raise TypeError("TimeWindows: initial and transform must be functions (see the docstring).")
        if self.restart is not None and not callable(self.restart):
            raise TypeError(
                f"TimeWindows: restart must be a function restart(previous, start) -> function, or None; got "
                f"{type(self.restart).__name__}."
            )
        if not isinstance(self.local_time, bool):
            raise TypeError(f"TimeWindows: local_time must be True or False, got {self.local_time!r}.")

    def bounds(self, domain: Any) -> list[tuple[float, float]]:
        """``[(t_k, t_k+1)]`` for ``k = 0 .. count - 1`` over the domain's time interval."""
        if domain.time is None:
            raise ValueError("TimeWindows: the domain has no time coordinate to march in.")
        start, end = domain.bounds[domain.time]
        edges = np.linspace(start, end, self.count + 1)
        return [(float(a), float(b)) for a, b in zip(edges[:-1], edges[1:])]

    def index(self, domain: Any, t: Any) -> np.ndarray:
        """The window of each time in ``t``: ``k`` on ``[t_k, t_k+1)``, the last window at the end."""
        start, end = domain.bounds[domain.time]
        k = np.floor((np.asarray(t, dtype=np.float64) - start) / (end - start) * self.count)
        return np.clip(k, 0, self.count - 1).astype(np.int64)

    def output_transform(self, domain: Any, start: float, previous: Callable[[tf.Tensor], tf.Tensor] | None) -> Any:
        """The output transform of the window starting at ``start``; ``previous(points) -> (N, fields)``
        is the solution of the window before (``None``: :attr:`initial`, the first window)."""
        if previous is not None and self.restart is not None:
            previous = self.restart(previous, start)

        def start_values(x: Any, points: tf.Tensor, outputs: tf.Tensor) -> tf.Tensor:
            return _columns(self.initial(x), outputs) if previous is None else previous(points)

        return self._hard_initial(domain, start, start_values)

    def _hard_initial(self, domain: Any, start: Any, start_values: Callable) -> Any:
        """``transform(x, outputs)``: :attr:`transform` with ``start_values(x, points at t = start, outputs)``."""
        time = domain.coords.index(domain.time)
        keep = np.ones(len(domain.coords))
        keep[time] = 0.0
        unit = np.zeros(len(domain.coords))
        unit[time] = 1.0

        def transform(x: Any, outputs: tf.Tensor) -> tf.Tensor:
            x = _Named(x, domain.time)
            at = start if isinstance(start, float) else _tensor(start, outputs.dtype)
            # the points moved to t = start by products
            points = x.points * tf.constant(keep, outputs.dtype) + tf.constant(unit, outputs.dtype) * at
            return self.transform(x, outputs, at, start_values(x, points, outputs))

        return transform

    def domain(self, domain: Any, k: int) -> Any:
        """Window ``k``'s domain: ``domain`` with its time interval cut to the window's."""
        start, end = self.bounds(domain)[k]
        window = copy.copy(domain)  # Box or space * time: the time interval lives in its bounds
        window.bounds = {**domain.bounds, str(domain.time): (start, end)}
        return window

    def _check(self, problem: Problem) -> None:
        initial = [c.name for c in problem.conditions if isinstance(c, Initial)]
        if initial:
            raise ValueError(
                f"TimeWindows: the problem has Initial conditions {initial}; the windows impose the initial condition "
                "exactly (TimeWindows.initial and transform), so leave them out of the problem."
            )
        if self.local_time and problem.input_transform is not None:
            raise ValueError(
                "TimeWindows(local_time=True) gives each window's problem its input_transform (the local time), "
                "but the problem has one already; leave it out, or use local_time=False."
            )

    @property
    def one_graph(self) -> bool:
        """Whether every window trains with one compiled step (:meth:`moving`): the restart is a
        :class:`~hodiff.pinn.SeriesRestart`, whose state is a fixed set of coefficients."""
        return isinstance(self.restart, SeriesRestart)

    def moving(self, problem: Problem) -> tuple[Problem, WindowState]:
        """One problem for every window, and the :class:`WindowState` that says which window it is.

        Its transforms and causal weights read the window's start, and its start values (the initial
        condition in window 0, the restart's series after), from the state's variables, so that a trainer built
        on it once trains every window with the same traced and compiled steps (:func:`time_marching`); its
        domain is window 0's (the points of window ``k``: ``TrainingData.move(windows.domain(domain, k))``).
        Needs a :class:`~hodiff.pinn.SeriesRestart` (:attr:`one_graph`).
        """
        if not self.one_graph:
            raise ValueError(
                "TimeWindows.moving: one problem for every window needs a restart whose state is fixed in size, a "
                f"pinn.SeriesRestart; got restart={self.restart!r}. Use TimeWindows.problem(problem, k, previous)."
            )
        self._check(problem)
        (start, end), *_ = self.bounds(problem.domain)  # a time coordinate
        state = WindowState(self, problem)
        series = cast(SeriesRestart, self.restart).series(state.coefficients)

        def start_values(x: Any, points: tf.Tensor, outputs: tf.Tensor) -> tf.Tensor:
            first = tf.cast(state.first, outputs.dtype)  # 1 in window 0, 0 after: one graph for both
            later = tf.cast(series(tf.cast(points, state.coefficients.dtype)), outputs.dtype)
            return first * _columns(self.initial(x), outputs) + (1.0 - first) * later

        domain = self.domain(problem.domain, 0)
        changes: dict[str, Any] = {
            "domain": domain,
            "output_transform": self._hard_initial(domain, state.start, start_values),
        }
        if self.local_time:
            changes["input_transform"] = self.local_input(problem.domain, state.start)
        if problem.causal is not None:
            changes["causal"] = _WindowCausal(problem.causal.epsilon, problem.causal.bins, state, end - start)
        return problem.replace(**changes), state

    def problem(self, problem: Problem, k: int, previous: Callable[[tf.Tensor], tf.Tensor] | None = None) -> Problem:
        """Window ``k``'s problem: ``problem`` on the window's time interval, with its hard initial condition.

        Args:
          problem: the problem on the whole horizon, without :class:`~hodiff.pinn.Initial`
            conditions (the windows impose the initial condition through :attr:`transform`).
          k: the window, ``0 .. count - 1``.
          previous: the trained solution of window ``k - 1`` (``None`` for window 0).
        """
        if not 0 <= k < self.count:
            raise ValueError(f"TimeWindows.problem: window k={k} is not in 0 .. {self.count - 1}.")
        if (previous is None) != (k == 0):
            raise ValueError("TimeWindows.problem: give previous, the solution of window k - 1, for every k > 0 only.")
        self._check(problem)
        start = self.bounds(problem.domain)[k][0]
        domain = self.domain(problem.domain, k)
        changes = {"domain": domain, "output_transform": self.output_transform(domain, start, previous)}
        if self.local_time:
            changes["input_transform"] = self.local_input(problem.domain, start)
        return problem.replace(**changes)

    def local_input(self, domain: Any, start: Any) -> Callable[[tf.Tensor], tf.Tensor]:
        """The input map of the window starting at ``start`` (a number or a variable; :attr:`local_time`):
        ``(N, d) -> (N, d)`` with the time column ``t0 + (t - start) * count`` over the horizon ``[t0, T]`` of
        ``domain``, the others kept."""
        time = domain.coords.index(domain.time)
        scale = np.ones(len(domain.coords))
        scale[time] = self.count
        unit = np.zeros(len(domain.coords))
        unit[time] = 1.0
        origin = domain.bounds[domain.time][0]

        def local(points: tf.Tensor) -> tf.Tensor:  # by products
            shift = origin - _tensor(start, points.dtype) * self.count
            return points * tf.constant(scale, points.dtype) + tf.constant(unit, points.dtype) * shift

        return local

    def output(
        self,
        directory: str,
        k: int,
        resume: bool,
        overwrite: bool,
        settings: dict[str, Any] | None = None,
        tensorboard: bool = False,
    ) -> Output:
        """Window ``k``'s :class:`~hodiff.pinn.Output` in ``directory/window-<k>``: resumed when it has a
        checkpoint and ``resume``, started afresh (replacing what is there) otherwise under ``resume``
        or ``overwrite``; the window is a setting of the run (with ``settings``), so it cannot resume as
        another."""
        path = os.path.join(directory, f"window-{k}")
        held = bool(checkpoint_files(path))
        return Output(
            path,
            resume=resume and held,
            overwrite=overwrite or (resume and not held),
            tensorboard=tensorboard,
            settings={**(settings or {}), "time_window": {"index": k, "count": self.count}},
        )


class _Named:
    """The named columns of a transform's ``x`` with ``.time``, the time coordinate's name."""

    def __init__(self, columns: Any, time: str):
        self.columns, self.time, self.points = columns, time, columns.points

    def __getitem__(self, name: str) -> tf.Tensor:
        return self.columns[name]

    def __iter__(self):
        return iter(self.columns)

    def __len__(self) -> int:
        return len(self.columns)

    def keys(self):
        return self.columns.keys()


def _tensor(value: Any, dtype: Any) -> tf.Tensor:
    """``value`` (a number, a tensor or a variable) in ``dtype``; a number is not rounded to float32 first."""
    return tf.cast(value, dtype) if isinstance(value, (tf.Tensor, tf.Variable)) else tf.constant(value, dtype)


def _columns(values: Any, like: tf.Tensor) -> tf.Tensor:
    values = tf.cast(tf.convert_to_tensor(values), like.dtype)
    return values[:, None] if values.shape.rank == 1 else values


class WindowState:
    """The variables through which one problem (:meth:`TimeWindows.moving`) is every window's.

    Attributes:
      start: the window's start time (float64).
      first: 1 in the first window (whose start values are :attr:`TimeWindows.initial`), 0 after (the restart's).
      coefficients: the restart's series coefficients of the window before at ``start``.
    """

    def __init__(self, windows: TimeWindows, problem: Problem):
        self.windows, self.domain = windows, problem.domain
        self.restart = cast(SeriesRestart, windows.restart)
        origin = windows.bounds(problem.domain)[0][0]
        fields = len(problem.fields)
        zeros = lambda points: tf.zeros([points.shape[0], fields], points.dtype)  # noqa: E731
        shape = self.restart.coefficients(zeros, origin).shape
        self.start = tf.Variable(origin, dtype=tf.float64, trainable=False, name="window_start")
        self.first = tf.Variable(1.0, dtype=tf.float64, trainable=False, name="window_first")
        self.coefficients = tf.Variable(
            tf.zeros(shape, self.restart.dtype), trainable=False, name="restart_coefficients"
        )

    def enter(self, k: int, solution: Callable[[tf.Tensor], tf.Tensor]) -> None:
        """Makes the state window ``k``'s; ``solution`` is the moving problem's solution, evaluated (at window
        ``k``'s start, on the restart's nodes) while the state and the model still hold window ``k - 1``'s."""
        start = self.windows.bounds(self.domain)[k][0]
        if k:
            self.coefficients.assign(self.restart.coefficients(solution, start))
        self.start.assign(start)
        self.first.assign(1.0 if k == 0 else 0.0)

    @property
    def variables(self) -> list[tf.Variable]:
        return [self.start, self.first, self.coefficients]


@dataclasses.dataclass
class _WindowCausal(CausalWeights):
    """Causal weights whose bins divide the window the state names."""

    state: Any = None
    length: float = 1.0

    def interval(self, domain: Any, dtype: Any) -> tuple[Any, Any]:
        start = tf.cast(self.state.start, dtype)
        return start, start + tf.constant(self.length, dtype)


def freeze(model: keras.Model) -> keras.Model:
    """A non-trainable copy of ``model`` with its current weights."""
    clone = keras.models.clone_model(model)
    clone.set_weights(model.get_weights())
    clone.trainable = False
    return clone


class WindowSolution:
    """Window ``k``'s solution in a run with one compiled graph: the weights and the window state it ended with,
    loaded into the model and the state when called, then evaluated by the run's one compiled solution."""

    def __init__(self, evaluate: Callable[[tf.Tensor], tf.Tensor], variables: list, values: list):
        self.evaluate, self.variables, self.values = evaluate, variables, values

    def load(self) -> None:
        """Loads the window's weights and state into the model and the state's variables."""
        for variable, value in zip(self.variables, self.values):
            variable.assign(value)

    def __call__(self, points: tf.Tensor) -> tf.Tensor:
        self.load()
        return self.evaluate(points)


def _snapshot(evaluate: Callable, model: keras.Model, state: WindowState) -> WindowSolution:
    variables = [*model.weights, *state.variables]
    return WindowSolution(evaluate, variables, [variable.numpy() for variable in variables])


@dataclasses.dataclass
class WindowRun:
    """What one window's training did.

    Attributes:
      history: its history rows (``step`` counted within the window).
      seconds: its training time (summed over resumes).
      adam_steps: the Adam steps it took.
      result: what ``train`` returned for it (e.g. the L-BFGS result).
    """

    history: list[dict[str, Any]]
    seconds: float
    adam_steps: int
    result: Any = None

    @property
    def final_loss(self) -> float | None:
        """The loss of its last history row (``None`` without rows)."""
        return self.history[-1]["loss"] if self.history else None


@dataclasses.dataclass
class Marching:
    """A time-marching run's result: the solution over the whole horizon, window by window.

    Attributes:
      problem: the problem on the whole horizon.
      windows: the :class:`TimeWindows`.
      solutions: per window, its solution function ``(N, d) -> (N, fields)`` (frozen weights, or a
        :class:`WindowSolution`, which loads its window's weights into the model when called).
      runs: per window, its :class:`WindowRun` (empty from :func:`restore_marching`).
      trainer: the :class:`~hodiff.pinn.Trainer` of the last window (``None`` from :func:`restore_marching`).
    """

    problem: Problem
    windows: TimeWindows
    solutions: list[Callable[[tf.Tensor], tf.Tensor]]
    runs: list[WindowRun] = dataclasses.field(default_factory=list)
    dtype: Any = tf.float64
    trainer: Any = None

    def __post_init__(self):
        # functools.partial: TensorFlow counts retracings per code object, which every window's solution
        # closure shares, and warns of "excessive retracing" from the sixth window on.
        self._compiled = [
            s
            if isinstance(s, WindowSolution)
            else tf.function(functools.partial(s), jit_compile=True, reduce_retracing=True, autograph=False)
            for s in self.solutions
        ]

    def predict(self, points: Any, batch: int = 65536) -> np.ndarray:
        """The solution at ``points`` ``(N, d)``, each point answered by the window its time falls in."""
        domain = self.problem.domain
        points = _validate.check_point_array(points, domain.coords, "Marching.predict")
        index = self.windows.index(domain, points[:, domain.coords.index(domain.time)])
        values = np.zeros((len(points), len(self.problem.fields)))
        for k, solution in enumerate(self._compiled):
            chosen = np.flatnonzero(index == k)
            for i in range(0, len(chosen), batch):
                part = chosen[i : i + batch]
                values[part] = solution(tf.constant(points[part], self.dtype)).numpy()
        if isinstance(self._compiled[-1], WindowSolution):  # the model ends with the last window's weights
            self._compiled[-1].load()
        return values

    @property
    def history(self) -> list[dict[str, Any]]:
        """Every window's history rows, with ``window`` and the steps counted on across the windows."""
        rows, offset = [], 0
        for k, run in enumerate(self.runs):
            for row in run.history:
                rows.append({**row, "window": k, "window_step": row["step"], "step": offset + row["step"]})
            offset += run.history[-1]["step"] if run.history else 0
        return rows

    @property
    def elapsed_seconds(self) -> float:
        """Training time summed over the windows (and resumes)."""
        return float(sum(run.seconds for run in self.runs))


def time_marching(
    problem: Problem,
    model: keras.Model,
    windows: TimeWindows,
    trainer: Callable[[Problem, keras.Model], Any],
    train: Callable[[Any], Any],
    directory: str | None = None,
    resume: bool = False,
    overwrite: bool = False,
    settings: dict[str, Any] | None = None,
    tensorboard: bool = False,
) -> Marching:
    """Trains ``problem`` window after window (see the module docstring); returns the :class:`Marching`.

    With a :class:`~hodiff.pinn.SeriesRestart` (:attr:`TimeWindows.one_graph`) the trainer is built once, on
    :meth:`TimeWindows.moving`'s problem, and each window only assigns variables (its points, start and
    restart coefficients) and starts a run of its own (:meth:`Trainer.start_run <hodiff.pinn.Trainer.start_run>`):
    every window trains with the steps traced and compiled for the first, so the run's memory stays that of
    one window. Without one, window ``k`` differentiates the networks of the windows before it, and each
    window gets a trainer (and compiled steps) of its own.

    Args:
      problem: the problem on the whole horizon (no :class:`~hodiff.pinn.Initial` conditions;
        causal weights, if set, act inside each window).
      model: the network; window ``k`` starts from the weights window ``k - 1`` ended with.
      windows: the :class:`TimeWindows`.
      trainer: ``trainer(problem, model) -> Trainer`` on the problem it is given
        (``pinn.Trainer(pinn.TrainingData(problem, ...), model, ...)``, without an output: each window's run
        goes to ``directory/window-<k>``).
      train: ``train(trainer) -> result``: one window's phases (e.g. Adam, then L-BFGS); the results are the
        runs' (:attr:`WindowRun.result`).
      directory: where the windows' runs go, ``directory/window-<k>``; ``None`` keeps them in memory.
      resume: continue a run in ``directory``: finished windows are restored, the killed one resumed.
      overwrite: replace the windows' runs in ``directory``.
      settings: stored with every window's checkpoints (a window resumes only with the same).
      tensorboard: write TensorBoard summaries in each window's directory.
    """
    if not isinstance(windows, TimeWindows):
        raise TypeError(f"time_marching: windows must be a pinn.TimeWindows, got {type(windows).__name__}.")
    for name, function in (("trainer", trainer), ("train", train)):
        if not callable(function):
            raise TypeError(f"time_marching: {name} must be a function (see the docstring), got {function!r}.")
    runs: list[WindowRun] = []
    solutions: list[Callable[[tf.Tensor], tf.Tensor]] = []
    built: Any = None
    evaluate: Any = None
    state: WindowState | None = None
    previous: Any = None
    if windows.one_graph:
        moving, state = windows.moving(problem)
        built = _built(trainer, moving, model)
        if built.data.fresh_points is not None:
            raise ValueError(
                "time_marching: TrainingData(fresh_points=...) draws its points inside the compiled step, where the "
                "window is not known; with a SeriesRestart every window shares that step. Leave fresh_points out "
                "(ResidualResampling or UniformResampling redraw in the window), or march without a restart."
            )
        evaluate = built._predict
    for k in range(windows.count):
        output = None if directory is None else windows.output(directory, k, resume, overwrite, settings, tensorboard)
        if state is not None:
            state.enter(k, evaluate)
            built.data.move(windows.domain(problem.domain, k))
        else:
            built = _built(trainer, windows.problem(problem, k, previous), model)
        built.start_run(output)
        result = train(built)
        runs.append(WindowRun(list(built.history), built.elapsed_seconds, int(built.adam_steps.numpy()), result))
        if built.run_log is not None:
            built.run_log.close()
        if state is not None:
            solutions.append(_snapshot(evaluate, model, state))
        else:
            previous = built.problem.solution(freeze(model))
            solutions.append(previous)
    return Marching(problem, windows, solutions, runs, tf.as_dtype(model.weights[0].dtype), built)


def _built(trainer: Callable[[Problem, keras.Model], Any], problem: Problem, model: keras.Model) -> Any:
    from hodiff.pinn.trainer import Trainer  # the trainer imports the problem's modules, not this one

    built = trainer(problem, model)
    if not isinstance(built, Trainer) or built.problem is not problem:
        raise TypeError(
            "time_marching: trainer(problem, model) must return a pinn.Trainer on the problem it is given "
            f"(pinn.Trainer(pinn.TrainingData(problem, ...), model, ...)), got {type(built).__name__}."
        )
    return built


def restore_marching(
    problem: Problem, model: keras.Model, windows: TimeWindows, directory: str, count: int | None = None
) -> Marching:
    """The trained solution of the time-marching run in ``directory``, from each window's newest
    readable checkpoint (nothing is trained or written); ``model`` ends with the last window's weights.

    Args:
      count: restore the first ``count`` windows only; ``None`` (default): all of them.

    Raises:
      FileNotFoundError: a window has no readable checkpoint (the run did not get that far).
    """
    if count is not None and not (isinstance(count, int) and 0 < count <= windows.count):
        raise ValueError(f"restore_marching: count={count!r} must be an int in 1 .. {windows.count}, or None.")
    solutions: list[Callable[[tf.Tensor], tf.Tensor]] = []
    previous: Any = None
    evaluate: Any = None
    state: WindowState | None = None
    if windows.one_graph:
        moving, state = windows.moving(problem)
        evaluate = tf.function(moving.solution(model), jit_compile=True, reduce_retracing=True, autograph=False)
    for k in range(windows.count if count is None else count):
        if state is not None:
            state.enter(k, evaluate)  # from window k - 1's weights, which the model holds
        else:
            window = windows.problem(problem, k, previous)
        try:
            restore_model(model, os.path.join(directory, f"window-{k}"))
        except FileNotFoundError:
            raise FileNotFoundError(
                f"restore_marching: window {k} in {directory}/window-{k} has no readable checkpoint; the run has not "
                f"trained it yet (resume the run)."
            ) from None
        if state is not None:
            solutions.append(_snapshot(evaluate, model, state))
        else:
            previous = window.solution(freeze(model))
            solutions.append(previous)
    return Marching(problem, windows, solutions, [], tf.as_dtype(model.weights[0].dtype))
