"""The training data of a PINN: its point sets, draws, loss weights and the one loss the optimiser minimises.

:class:`TrainingData` owns everything a training run evaluates the loss on, so that the
optimisers (:class:`~hodiff.pinn.Trainer`, :class:`~hodiff.pinn.PINNModel`) only optimise it:

- the point sets (interior and every condition's arrays), drawn by
  :meth:`Problem.sample_points <hodiff.pinn.Problem.sample_points>` from ``seed``, and their
  variables, with the unknown parameters and the loss-weight variables;
- the per-step draw scheme: draw ``step`` of a run with seed ``seed`` uses the seed
  :func:`draw_seed` ``(seed, step)``, for the :class:`~hodiff.pinn.Stochastic` needs and for
  ``fresh_points`` (interior points drawn afresh at every step), so the draws are a function of
  ``(seed, step)`` only and a resumed run draws as the uninterrupted one;
- residual-based resampling (RAD, :meth:`resample_by_residual`), uniform redraws
  (:meth:`redraw`) and the learning-rate-annealing targets of adaptive weights
  (:meth:`annealing_targets`) and of gradient-norm weighting (:meth:`grad_norm_targets`), which
  the callbacks :class:`~hodiff.pinn.ResidualResampling`, :class:`~hodiff.pinn.AdaptiveWeights`,
  :class:`~hodiff.pinn.GradNormWeights` and :class:`~hodiff.pinn.UniformResampling` trigger;
- the split of every point set over the replicas of a ``tf.distribute`` strategy.

Data flow: problem -> :class:`TrainingData` -> :meth:`TrainingData.loss` -> optimiser -> run log.

Example:
  ```python
  import keras
  import numpy as np
  import tensorflow as tf
  from hodiff import pinn

  domain = pinn.Interval("x", 0.0, 1.0)
  problem = pinn.Problem(domain, needs=("u_xx",), residual=lambda d, x, p: d["u_xx"] + 1.0,
                         conditions=[pinn.Dirichlet(0.0, count=2)])
  data = pinn.TrainingData(problem, interior=16, seed=3)
  data.build(pinn.mlp(domain, width=8, depth=2))
  total, terms = data.loss(step=0)
  assert set(terms) == {"residual", "boundary"}
  assert np.isclose(float(total), float(terms["residual"] + terms["boundary"]))
  np.testing.assert_array_equal(data.interior.numpy(), problem.sample_points(16, "sobol", 3)["interior"])
  ```
"""

from __future__ import annotations

import contextlib
import functools
import re
from collections.abc import Callable, Iterator
from typing import Any

import keras
import numpy as np
import tensorflow as tf

from hodiff import _validate
from hodiff.pinn.problem import Problem
from hodiff.training.step import xla_reaches

__all__ = ["TrainingData", "draw_seed", "sample_points"]

_SEED_STRIDE = 1_000_003  # seed * _SEED_STRIDE + step: one draw per (seed, step)
# Added to the draw's seed per replica id, so replicas draw independent directions (replica 0 draws what
# one replica draws); far beyond any step count, so no two draws collide.
REPLICA_SEED_STRIDE = 2**40
_STEP_STRIDE = 7919  # the uniform redraw at step s uses seed + _STEP_STRIDE * s
SAMPLINGS = ("sobol", "lhs", "random")

FreshPoints = Callable[[int, tf.Tensor, tf.DType], tf.Tensor]


_DTYPE_MIX = re.compile(
    r"expected to be a (\w+) tensor but is a (\w+) tensor|has type (\w+) that does not match type (\w+)"
)
_TF_NAMES = {"float": "float32", "double": "float64", "half": "float16", "bfloat16": "bfloat16"}


@contextlib.contextmanager
def _named_dtype_errors(what: str, dtype: tf.DType) -> Iterator[None]:
    """Turns TensorFlow's raw dtype-mix error (``cannot compute AddV2 as input #1 was expected to be a float tensor
    but is a double tensor``) inside ``what`` into a ``TypeError`` naming ``what``, the dtypes met and the fix."""
    try:
        yield
    except (tf.errors.InvalidArgumentError, TypeError) as error:
        found = _DTYPE_MIX.search(str(error))
        if found is None:
            raise
        met = sorted({_TF_NAMES.get(name, name) for name in found.groups() if name})
        op = re.search(r"\[Op:(\w+)\]|of '(\w+)' Op", str(error))
        where = f" (in a {next(g for g in op.groups() if g)} op)" if op else ""
        raise TypeError(
            f"Problem: {what} mixes dtypes {' and '.join(met)}{where}, while the model computes in {dtype.name}. "
            f"Make every constant it uses of the points' dtype: a Python float, or tf.cast(c, x['x'].dtype) "
            f"(tf.constant(c, tf.float64) is float64 whatever the model); or build the model in the constants' "
            f"dtype (pinn.mlp(..., dtype='float64'))."
        ) from None


def _check_model_outputs(problem: Problem, model: Callable, solution: Callable, x: tf.Tensor) -> None:
    """Refuses a network whose output does not give one column per field of ``problem`` at the points ``x``.

    Without an output transform the model's output is the solution: it must be ``(N, len(fields))``. With one, the
    model's output must still be ``(N, k)`` (the transform slices its columns) and the transform's result
    ``(N, len(fields))`` (:meth:`Problem.solution` checks it). Raises ``ValueError`` naming the model's output shape,
    the fields and the fix; a dtype mix in the output transform raises ``TypeError`` naming it.
    """
    fields, count = problem.fields, len(problem.fields)
    build = f"e.g. pinn.mlp(domain, ..., outputs={count}), or keras.layers.Dense({count}) as the last layer"
    inputs = x if problem.input_transform is None else problem.input_transform(x)
    raw = tf.convert_to_tensor(model(inputs))
    shape = tuple(raw.shape)
    if len(shape) != 2:
        raise ValueError(
            f"Problem: the model returns shape {shape} for {x.shape[0]} points; it must return (N, {count}), one "
            f"column per field {fields}. Give it a last layer with {count} unit(s) and no reshape ({build})."
        )
    if problem.output_transform is None and shape[1] != count:
        raise ValueError(
            f"Problem: the model returns {shape[1]} columns (shape {shape} for {x.shape[0]} points), but the problem "
            f"has {count} field(s) {fields}: one column per field. Build the model with {count} output(s) ({build}), "
            f"or name every output in Problem(fields=...)."
        )
    with _named_dtype_errors("the output transform", raw.dtype):
        solution(x)


def draw_seed(seed: int, step: Any, replica: int = 0) -> Any:
    """The seed of draw ``step`` of a run seeded ``seed``: ``seed * 1_000_003 + step + replica * 2**40``.

    The one scheme for every random draw during training (stochastic needs, fresh points,
    residual-based resampling's candidates): a function of ``(seed, step)`` only.

    Args:
      seed: the run's seed, an int.
      step: the step, an int (then the result is an int) or an int tensor (then an int64 tensor).
      replica: the replica id under a ``tf.distribute`` strategy (0 on one device).

    Returns:
      An int, or an int64 scalar tensor when ``step`` is a tensor.

    Example:
      ```python
      import tensorflow as tf
      from hodiff.pinn.data import draw_seed

      assert draw_seed(2, 5) == 2 * 1_000_003 + 5
      assert int(draw_seed(2, tf.constant(5))) == draw_seed(2, 5)
      ```
    """
    if isinstance(step, (int, np.integer)):
        return int(seed) * _SEED_STRIDE + int(step) + replica * REPLICA_SEED_STRIDE
    value = tf.constant(seed, tf.int64) * _SEED_STRIDE + tf.cast(step, tf.int64)
    return value + replica * REPLICA_SEED_STRIDE if replica else value


def sample_points(problem: Problem, interior: int, sampling: str = "sobol", seed: int = 0) -> dict[str, Any]:
    """The training points of ``problem``: ``{"interior": (interior, d), condition name: {"points": ..., ...}}``.

    The interior is drawn with ``seed``, condition ``i`` with ``seed + 1 + i`` (numpy arrays;
    conditions with given points return them); the problem's refinements add their points after the
    ``interior`` uniform ones, refinement ``i`` drawn with ``seed + 1 + len(conditions) + i``.
    :meth:`Problem.sample_points <hodiff.pinn.Problem.sample_points>` is this function.
    """
    first = seed + 1 + len(problem.conditions)  # the refinements' seeds: the interior and conditions' stay as they were
    extra = [r.sample(problem.domain, sampling, first + i) for i, r in enumerate(problem.refinements)]
    points: dict[str, Any] = {
        "interior": np.concatenate([problem.domain.sample_interior(interior, sampling, seed), *extra])
    }
    for i, condition in enumerate(problem.conditions):
        points[condition.name] = condition.sample(problem.domain, sampling, seed + 1 + i)
    return points


class TrainingData:
    """The points, draws and loss weights of a :class:`~hodiff.pinn.Problem`, and its one weighted loss.

    Construction only records the sizes; :meth:`build` draws the points and creates the
    variables for a model (the optimiser calls it: ``Trainer`` and ``PINNModel`` take a
    ``TrainingData`` in place of the problem).

    Args:
      problem: the PDE problem.
      interior: number of interior (collocation) points, an int >= 1.
      sampling: ``"sobol"``, ``"lhs"`` or ``"random"`` for all point sets.
      seed: seeds the point sets (interior with ``seed``, condition ``i`` with ``seed + 1 + i``)
        and every draw during training (:func:`draw_seed`).
      fresh_points: ``fresh_points(count, seed, dtype) -> (count, d)`` tensor: interior points
        drawn afresh at every step, inside the compiled step, from the step's seed (e.g.
        stateless random ops); ``None`` (default) trains on the stored interior points. Under a
        strategy ``count`` is the replica's share.

    Attributes (after :meth:`build`):
      points: ``{"interior": variable, condition name: {key: variable}}``.
      interior: the interior points' variable; condition_arrays: one ``{key: variable}`` per condition.
      parameters: ``{name: variable}``, the unknown parameters (trainable).
      weights: ``{term: variable}``, the loss weights (``problem.weights``, default 1).
      draw_step: the step whose draws the next :meth:`loss` uses (an int64 variable; not created
        for a Keras model, whose optimizer's step count picks the draw).
      solution: ``problem.solution(model)``.
    """

    def __init__(
        self,
        problem: Problem,
        interior: int = 8192,
        sampling: str = "sobol",
        seed: int = 0,
        fresh_points: FreshPoints | None = None,
    ):
        if not isinstance(problem, Problem):
            raise TypeError(f"TrainingData: problem must be a hodiff.pinn.Problem, got {type(problem).__name__}.")
        _validate.check_count(interior, "interior", "TrainingData")
        if sampling not in SAMPLINGS:
            raise ValueError(f"TrainingData: sampling={sampling!r} is not an option; use one of {SAMPLINGS}.")
        if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
            raise TypeError(f"TrainingData: seed must be an int, got {seed!r}.")
        if fresh_points is not None and not callable(fresh_points):
            raise TypeError(
                f"TrainingData: fresh_points must be a function fresh_points(count, seed, dtype) -> (count, d) "
                f"points, got {type(fresh_points).__name__}."
            )
        self.problem, self.interior_count, self.sampling = problem, int(interior), sampling
        self._drawn = problem  # the problem on the domain the points are drawn on (move changes it)
        self.seed, self.fresh_points = int(seed), fresh_points
        # whether the loss changes from step to step (stochastic needs or fresh points): the draw advances
        self.random = bool(problem.stochastic) or fresh_points is not None
        self.strategy: Any = None
        self.replicas = 1
        self.built = False

    def replace_problem(self, problem: Problem) -> TrainingData:
        """A new, unbuilt data object on ``problem`` with the same sizes, sampling, seed and fresh points."""
        return TrainingData(problem, self.interior_count, self.sampling, self.seed, self.fresh_points)

    def settings(self) -> dict[str, Any]:
        """The data's part of a run's settings (stored with the checkpoints)."""
        settings = {"interior": self.interior_count, "sampling": self.sampling, "seed": self.seed}
        if self.problem.refinements:
            settings["refinements"] = [refinement.count for refinement in self.problem.refinements]
        return settings

    # ----------------------------------------------------------------------------- variables
    def build(self, model: keras.Model, strategy: Any = None, add_weight: Callable | None = None) -> None:
        """Draws the points and creates the variables for ``model`` (in its dtype).

        Args:
          model: the network, built (its first weight's dtype is the data's).
          strategy: a ``tf.distribute`` strategy: the variables are mirrored and every point set
            is split over its replicas (:meth:`loss` with ``sharded=True``).
          add_weight: ``add_weight(value, name, trainable) -> variable`` (a Keras model's own, so
            that its checkpoints carry the points); default ``tf.Variable``.

        Raises:
          RuntimeError: built twice (build a new object per run).
        """
        if self.built:
            raise RuntimeError("TrainingData: already built for a model; make a new TrainingData for another run.")
        problem = self.problem
        self.dtype = tf.as_dtype(model.weights[0].dtype)
        self.model, self.solution = model, problem.solution(model)
        self.strategy = strategy
        self.replicas = strategy.num_replicas_in_sync if strategy is not None else 1
        scope = lambda: strategy.scope() if strategy is not None else contextlib.nullcontext()  # noqa: E731
        if add_weight is None:
            add_weight = lambda value, name, trainable: tf.Variable(  # noqa: E731
                tf.constant(value, self.dtype), name=name, trainable=trainable
            )
        sampled = self.sample()
        with scope():  # mirrored under a strategy: every replica reads its own copy
            self.parameters = {name: add_weight(value, name, True) for name, value in problem.parameters.items()}
            self.interior = add_weight(sampled["interior"], "interior", False)
            self.condition_arrays = [
                {key: add_weight(array, f"{c.name}_{key}", False) for key, array in sampled[c.name].items()}
                for c in problem.conditions
            ]
        self.points: dict[str, Any] = {
            "interior": self.interior,
            **{c.name: arrays for c, arrays in zip(problem.conditions, self.condition_arrays)},
        }
        # one eager evaluation on a few points: shape and dtype errors surface here, named, not inside XLA
        few = tf.nest.map_structure(lambda v: tf.convert_to_tensor(v)[:4], self.points)
        _check_model_outputs(problem, model, self.solution, few["interior"])
        with _named_dtype_errors("the residual", self.dtype):
            problem.pde_residuals(self.solution, few["interior"], self.parameters)
        names = ", ".join(repr(c.name) for c in problem.conditions)
        with _named_dtype_errors(f"a condition ({names}): its value or residual function", self.dtype):
            problem.loss_terms(self.solution, few, self.parameters)
        with scope():
            self.weights = {
                name: add_weight(problem.weights.get(name, 1.0), f"weight_{name}", False) for name in problem.term_names
            }
            self.draw_step = tf.Variable(0, dtype=tf.int64, trainable=False, name="draw_step")
        if strategy is not None:
            self._shards = self.shard_plan()
            jit = self.random and xla_reaches(strategy)
            self._replica_terms = tf.function(self._sharded_terms, jit_compile=jit, autograph=False)
            self._terms = tf.function(self._summed_terms, autograph=False)
        else:
            # The terms are logged without XLA: a compiled loss can drop a NaN term that the graph keeps. Random
            # draws run under XLA in the training step, and XLA's stateless random ops draw differently from the
            # graph's for the same seed (TF issue #121243): the terms use XLA too then.
            # functools.partial: TensorFlow counts retracings per code object, which every TrainingData shares; a
            # process that restores many windows' trainers would log "excessive retracing" from the sixth on
            self._terms = tf.function(functools.partial(self._all_terms), jit_compile=self.random, autograph=False)
        self._targets: dict[str, Any] = {}  # compiled targets of each loss weighting (move_weights)
        self._gradients = tf.function(self.gradient_statistics, jit_compile=self.random, autograph=False)
        self._scores: dict[float, Any] = {}
        self.built = True

    @property
    def domain(self) -> Any:
        """The domain the points are drawn on: the problem's, or the one :meth:`move` moved them to."""
        return self._drawn.domain

    def sample(self, seed: int | None = None) -> dict[str, Any]:
        """The point sets drawn with ``seed`` (default: the data's) on :attr:`domain`, as :meth:`Problem.sample_points
        <hodiff.pinn.Problem.sample_points>` draws them (numpy arrays)."""
        return sample_points(self._drawn, self.interior_count, self.sampling, self.seed if seed is None else seed)

    def _check_built(self, caller: str) -> None:
        if not self.built:
            raise RuntimeError(f"TrainingData.{caller}: call build(model) first (the optimiser does).")

    # ----------------------------------------------------------------------------- loss
    def _evaluate(self, points: dict[str, Any], seed: Any, frozen: bool) -> dict[str, tf.Tensor]:
        """The problem's loss terms at ``points`` for draw ``seed``; fresh interior points when asked."""
        if self.fresh_points is not None:
            interior = tf.convert_to_tensor(points["interior"])
            points = {**points, "interior": self.fresh_points(interior.shape[0], seed, interior.dtype)}
        unbiased = False if frozen else None
        return self.problem.loss_terms(self.solution, points, self.parameters, seed, unbiased)

    def loss_terms(self, step: Any = None, frozen: bool = False, sharded: bool = False) -> dict[str, tf.Tensor]:
        """The named loss terms at draw ``step`` (default: :attr:`draw_step`).

        Args:
          step: the draw, an int or int tensor.
          frozen: the L-BFGS objective: the residual of a stochastic problem squared over one
            draw, ``mean(r^2)`` (``mean(r1 * r2)`` of a frozen draw is not bounded below).
          sharded: this replica's part under the strategy (inside ``strategy.run``): its shard's
            mean times the shard's fraction of the points, so the parts sum to the means.

        Returns:
          ``{term: scalar}`` in the order of ``problem.term_names``.
        """
        self._check_built("loss_terms")
        step = self.draw_step if step is None else step
        if not sharded:
            return self._evaluate(self.points, draw_seed(self.seed, step), frozen)
        replica = self._replica_id()
        part = lambda name, v: v[self._shards[name][replica][0] : self._shards[name][replica][1]]  # noqa: E731
        points: dict[str, Any] = {"interior": part("interior", self.interior)}
        for condition, arrays in zip(self.problem.conditions, self.condition_arrays):
            points[condition.name] = {key: part(condition.name, v) for key, v in arrays.items()}
        terms = self._evaluate(points, draw_seed(self.seed, step, replica), frozen)
        fractions = {name: self._shards["interior"][replica][2] for name in self.problem.residual_names}
        fractions.update({c.name: self._shards[c.name][replica][2] for c in self.problem.conditions})
        return {name: value * tf.constant(fractions[name], value.dtype) for name, value in terms.items()}

    def weighted(self, terms: dict[str, tf.Tensor]) -> tf.Tensor:
        """``sum_t w_t L_t`` with the current loss weights."""
        return tf.add_n([tf.cast(self.weights[name], value.dtype) * value for name, value in terms.items()])

    def loss(
        self,
        step: Any = None,
        frozen: bool = False,
        sharded: bool = False,
        advance: bool = False,
        precision: Callable[[tf.Tensor], tf.Tensor] | None = None,
    ) -> tuple[tf.Tensor, dict[str, tf.Tensor]]:
        """The weighted total loss and its named terms: the one loss the optimisers minimise.

        Args:
          step: the draw (default :attr:`draw_step`); see :meth:`loss_terms` for ``frozen`` and ``sharded``.
          frozen: see :meth:`loss_terms`.
          sharded: see :meth:`loss_terms` (the total is then this replica's part).
          advance: afterwards, move :attr:`draw_step` on by one when the loss is random (the next
            step draws anew); the compiled Adam loop uses it.
          precision: applied to every term before weighting (e.g. ``hodiff.training.step.full_precision``).

        Returns:
          ``(total, {term: value})``, scalar tensors.
        """
        terms = self.loss_terms(step, frozen, sharded)
        if advance and self.random:
            self.draw_step.assign_add(1)
        if precision is not None:
            terms = {name: precision(value) for name, value in terms.items()}
        return self.weighted(terms), terms

    def terms(self, frozen: bool = False) -> dict[str, float]:
        """The loss terms now (at :attr:`draw_step`, over all points, compiled), as floats."""
        self._check_built("terms")
        return {name: float(value) for name, value in self._terms(frozen).items()}

    def _all_terms(self, frozen: bool = False) -> dict[str, tf.Tensor]:
        return self.loss_terms(frozen=frozen)

    def _sharded_terms(self, draw: tf.Tensor, frozen: bool = False) -> dict[str, tf.Tensor]:
        return self.loss_terms(draw, frozen, sharded=True)

    def _summed_terms(self, frozen: bool = False) -> dict[str, tf.Tensor]:
        """The loss terms over all points: every replica's part, summed over the replicas."""
        parts = self.strategy.run(self._replica_terms, args=(tf.convert_to_tensor(self.draw_step), frozen))
        return {name: self.strategy.reduce(tf.distribute.ReduceOp.SUM, v, axis=None) for name, v in parts.items()}

    # ----------------------------------------------------------------------------- replicas
    def shard_plan(self) -> dict[str, list[tuple[int, int, float]]]:
        """Per point set (``"interior"`` and each condition), per replica: ``(start, stop, fraction)``.

        Contiguous shards whose sizes differ by at most one; ``fraction`` is the shard's share of
        the set's points, the factor that turns the shard's mean into its part of the global mean.
        """
        sizes = {"interior": int(self.interior.shape[0])}
        for condition, arrays in zip(self.problem.conditions, self.condition_arrays):
            lengths = {int(v.shape[0]) for v in arrays.values()}
            if len(lengths) != 1:
                raise ValueError(
                    f"Trainer: condition {condition.name!r} has arrays of different lengths {sorted(lengths)}; a "
                    f"strategy splits a condition's arrays row by row, so they must have one row per point."
                )
            sizes[condition.name] = lengths.pop()
        plan = {}
        for name, size in sizes.items():
            if size < self.replicas:
                raise ValueError(
                    f"Trainer: the point set {name!r} has {size} points, fewer than the strategy's {self.replicas} "
                    f"replicas; give every point set at least one point per replica."
                )
            bounds = [size * r // self.replicas for r in range(self.replicas + 1)]
            plan[name] = [(start, stop, (stop - start) / size) for start, stop in zip(bounds[:-1], bounds[1:])]
        return plan

    @staticmethod
    def _replica_id() -> int:
        context = tf.distribute.get_replica_context()
        replica = tf.get_static_value(context.replica_id_in_sync_group) if context is not None else None
        if replica is None:
            raise RuntimeError("Trainer: a replica's loss was evaluated outside strategy.run (no static replica id).")
        return int(replica)

    # ----------------------------------------------------------------------------- adaptive weights
    def _term_gradients(self, grouped: bool) -> dict[str, tf.Tensor]:
        """The gradient of loss terms w.r.t. the network weights, flattened into one vector each.

        ``grouped``: the residual terms summed into one entry ``""`` and one entry per condition
        (learning-rate annealing); otherwise one entry per loss term.
        """
        with tf.GradientTape(persistent=True) as tape:
            terms = self.loss_terms()
            if grouped:
                residual = tf.add_n([terms[n] for n in self.problem.residual_names])
                terms = {"": residual, **{c.name: terms[c.name] for c in self.problem.conditions}}
        weights = self.model.trainable_variables
        flat = lambda grads: tf.concat([tf.reshape(g, [-1]) for g in grads if g is not None], 0)  # noqa: E731
        gradients = {name: flat(tape.gradient(loss, weights)) for name, loss in terms.items()}
        del tape
        return gradients

    def annealing_targets(self) -> dict[str, tf.Tensor]:
        """Learning-rate annealing's target weight of every condition term (Wang, Teng & Perdikaris 2021):
        ``max |grad residual loss| / mean |grad term loss|``, gradients w.r.t. the network weights."""
        gradients = self._term_gradients(grouped=True)
        residual_max = tf.reduce_max(tf.abs(gradients.pop("")))
        return {
            name: residual_max / tf.maximum(tf.reduce_mean(tf.abs(g)), tf.constant(1e-30, g.dtype))
            for name, g in gradients.items()
        }

    def grad_norm_targets(self) -> dict[str, tf.Tensor]:
        """Gradient-norm weighting's target weight of every loss term (Wang et al. 2023, Algorithm 1):
        ``sum_j ||grad L_j|| / ||grad L_i||``, gradients w.r.t. the network weights, so that every
        weighted term's gradient has the same norm."""
        norms = {name: tf.norm(g) for name, g in self._term_gradients(grouped=False).items()}
        total = tf.add_n(list(norms.values()))
        return {name: total / tf.maximum(norm, tf.constant(1e-30, norm.dtype)) for name, norm in norms.items()}

    WEIGHTINGS = ("annealing", "grad_norm")

    def move_weights(self, method: str, alpha: float) -> dict[str, float]:
        """Moves the loss weights towards ``method``'s targets: ``w <- (1 - alpha) w + alpha * target``.

        Args:
          method: ``"annealing"`` (:meth:`annealing_targets`: the condition terms; the residuals'
            weights stay) or ``"grad_norm"`` (:meth:`grad_norm_targets`: every term).
          alpha: the step towards the target, in [0, 1] (``alpha = 1 - `` the papers' moving-average factor).

        Returns:
          The targets, as floats (compiled with XLA once per method).
        """
        self._check_built("move_weights")
        if method not in self.WEIGHTINGS:
            raise ValueError(f"TrainingData.move_weights: method={method!r} is not one of {self.WEIGHTINGS}.")
        if method not in self._targets:
            rule = self.annealing_targets if method == "annealing" else self.grad_norm_targets
            self._targets[method] = tf.function(rule, jit_compile=True, autograph=False)
        targets = self._targets[method]()
        for name, target in targets.items():
            self.weights[name].assign((1.0 - alpha) * self.weights[name] + alpha * tf.cast(target, self.dtype))
        return {name: float(target) for name, target in targets.items()}

    def gradient_statistics(self) -> dict[str, tf.Tensor]:
        """The gradients of the weighted loss terms w.r.t. the trainable weights, summarised.

        Returns:
          ``{"norm_<term>": ||grad (w_t L_t)||, "norm_total": ||grad sum_t w_t L_t||,
          "cosines": (T, T) cosines between the terms' gradients}`` (terms in ``problem.term_names``
          order). A term's norm far above the total's means the terms' gradients cancel: the
          optimiser sits at a compromise between them.
        """
        with tf.GradientTape(persistent=True) as tape:
            terms = self.loss_terms()
            weighted = {name: self.weights[name] * value for name, value in terms.items()}
        variables = self.model.trainable_variables + list(self.parameters.values())
        flat = lambda grads: tf.concat(  # noqa: E731
            [
                tf.reshape(g, [-1]) if g is not None else tf.zeros([tf.size(v)], self.dtype)
                for g, v in zip(grads, variables)
            ],
            0,
        )
        vectors = tf.stack([flat(tape.gradient(weighted[name], variables)) for name in self.problem.term_names])
        del tape
        norms = tf.norm(vectors, axis=1)
        unit = vectors / tf.maximum(norms, tf.constant(np.finfo(self.dtype.as_numpy_dtype).tiny, self.dtype))[:, None]
        statistics = {f"norm_{name}": norms[i] for i, name in enumerate(self.problem.term_names)}
        return {
            **statistics,
            "norm_total": tf.norm(tf.reduce_sum(vectors, axis=0)),
            "cosines": unit @ tf.transpose(unit),
        }

    def gradients(self) -> dict[str, Any]:
        """:meth:`gradient_statistics` now, as floats and a numpy matrix (a compiled graph; with XLA for
        stochastic problems, like the logged terms)."""
        self._check_built("gradients")
        values = self._gradients()
        return {name: value.numpy() if name == "cosines" else float(value) for name, value in values.items()}

    def anneal(self, alpha: float) -> None:
        """Moves each condition's weight towards its :meth:`annealing_targets`: ``w <- (1 - alpha) w + alpha t``."""
        self.move_weights("annealing", alpha)

    # ----------------------------------------------------------------------------- resampling
    def _residual_scores(self, x: tf.Tensor, k: float) -> tf.Tensor:
        residuals = self.problem.pde_residuals(self.solution, x, self.parameters)
        return tf.add_n([tf.abs(r) ** k for r in residuals])

    def resample_by_residual(self, step: int, candidates: int, k: float = 1.0, c: float = 1.0) -> None:
        """Residual-based adaptive distribution (RAD, Wu et al. 2023): redraws the interior points.

        ``candidates`` random points (seed :func:`draw_seed` ``(seed, step)``) are scored with
        ``|r|^k / mean(|r|^k) + c`` (exact residuals) and the interior points drawn from that
        density without replacement (``numpy.random.default_rng([seed, step])``), so a resumed
        run resamples exactly as the uninterrupted one.
        """
        self._check_built("resample_by_residual")
        if k not in self._scores:
            self._scores[k] = tf.function(lambda x: self._residual_scores(x, k), jit_compile=True, autograph=False)
        draw = self.domain.sample_interior(candidates, "random", draw_seed(self.seed, step))
        score = np.concatenate(
            [
                self._scores[k](tf.constant(part, self.dtype)).numpy()
                for part in np.array_split(draw, max(1, candidates // 20_000))
            ]
        )
        density = score / score.mean() + c
        rng = np.random.default_rng([self.seed, step])
        chosen = rng.choice(len(draw), size=int(self.interior.shape[0]), replace=False, p=density / density.sum())
        self.interior.assign(draw[chosen])

    def redraw(self, seed: int) -> None:
        """Draws new point sets with ``seed`` (same counts and method) into the variables; conditions
        with fixed points keep them."""
        self._check_built("redraw")
        self._assign(self.sample(int(seed)))

    def move(self, domain: Any) -> None:
        """Draws the point sets of the problem on ``domain`` into the variables, as a new ``TrainingData`` of the
        same sizes, sampling and seed on that domain would (a box of the same coordinates: the next time window
        of :func:`~hodiff.pinn.time_marching`); later draws (:meth:`redraw`, :meth:`resample_by_residual`) are on
        ``domain`` too. The compiled steps read the variables, so nothing retraces."""
        self._check_built("move")
        self._drawn = self.problem.replace(domain=domain)
        self._assign(self.sample())

    def _assign(self, sampled: dict[str, Any]) -> None:
        self.points["interior"].assign(sampled["interior"])
        for condition in self.problem.conditions:
            for key, variable in self.points[condition.name].items():
                variable.assign(np.asarray(sampled[condition.name][key]))

    def redraw_for_step(self, step: int) -> None:
        """:meth:`redraw` with seed ``seed + 7919 * step``, a function of the training step only."""
        self.redraw(self.seed + _STEP_STRIDE * int(step))
