"""MetaLearner: MAML-family meta-training of a Keras model in one compiled step.

:class:`MetaLearner` compiles a meta-training step over a batch of tasks: each task is adapted
by :func:`hodiff.meta.inner_loop`'s unrolled inner steps and its meta-gradient computed inside
the task loop (never differentiated through it), or all tasks at once for a stack of ``Dense``
layers (:mod:`hodiff.meta.vectorized`).

Variants: MAML (second order), FOMAML (``first_order=True``), Meta-SGD (learned
per-parameter inner learning rates), MAML++ (learned per-step learning rates, multi-step loss)
and ANIL (adapt only the head).

References:
  Finn, Abbeel & Levine (2017), "Model-agnostic meta-learning for fast adaptation of deep
  networks"; Li, Zhou, Chen & Li (2017), "Meta-SGD"; Antoniou, Edwards & Storkey (2019), "How to
  train your MAML" (MAML++); Raghu, Raghu, Bengio & Vinyals (2020), "Rapid learning or feature
  reuse?" (ANIL).

Example:
  ```python
  import keras, tensorflow as tf
  from hodiff.meta import MetaLearner

  model = keras.Sequential([keras.Input((1,)), keras.layers.Dense(8, activation="tanh"), keras.layers.Dense(1)])
  mse = lambda prediction, target: tf.reduce_mean((prediction - target) ** 2)
  learner = MetaLearner(model, mse, variant="maml", inner_steps=1, jit_compile=False)
  x = tf.random.normal((4, 5, 1))  # 4 tasks of 5 examples
  before = [w.numpy().copy() for w in model.trainable_weights]
  out = learner.meta_step(x, tf.sin(x), x, tf.sin(x))  # one outer (Adam) update
  assert bool(out["applied"]) and float(out["loss"]) > 0.0
  assert all(not (w.numpy() == b).all() for w, b in zip(model.trainable_weights, before))
  ```
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Sequence
from typing import Any

import keras
import numpy as np
import tensorflow as tf

from hodiff.meta.functional import FunctionalModel, xla_safe_pooling
from hodiff.meta.inner import check_steps, inner_loop, unroll
from hodiff.meta.optimizers import InnerOptimizer, inner_optimizer
from hodiff.meta.vectorized import batched_dense_stack, map_pairs
from hodiff.training.step import TrainStep, full_precision
from hodiff.training.transforms import GradientTransform

__all__ = ["MetaLearner", "MetaEvaluation", "META_VARIANTS"]

logger = logging.getLogger(__name__)

META_VARIANTS = ("maml", "fomaml", "meta_sgd", "maml++", "anil")
Loss = Callable[[tf.Tensor, tf.Tensor], tf.Tensor]


@dataclasses.dataclass
class MetaEvaluation:
    """What :meth:`MetaLearner.evaluate` measured, task by task.

    Attributes:
      query_losses: ``(tasks, steps + 1)`` array: the query loss before adaptation and after
        each inner step.
      support_losses: ``(tasks, steps + 1)`` array: the support loss at the same points.
      parameters: the adapted parameters, one tensor per model parameter with a leading task
        axis (``[p[i] for p in parameters]`` are task ``i``'s, for :meth:`MetaLearner.predict`).
      diverged: ``(tasks,)`` bool array: a support or query loss or an adapted parameter of the
        task is not finite (its rows hold inf or NaN).
    """

    query_losses: np.ndarray
    support_losses: np.ndarray
    parameters: list[tf.Tensor]
    diverged: np.ndarray

    @property
    def num_diverged(self) -> int:
        """How many tasks diverged."""
        return int(self.diverged.sum())


class MetaLearner(tf.Module):
    """Meta-trains a Keras model with a MAML-family algorithm in a compiled step.

    Args:
      model: a built Keras model (or a :class:`FunctionalModel`).
      loss_fn: ``loss_fn(prediction, target) -> scalar`` for support and query sets, a mean
        over the examples (axis 0) when task batches come with masks.
      task_objective: instead of ``loss_fn``, ``task_objective(model, params, x, y) -> scalar``
        for tasks whose loss is not a function of predictions alone (a PINN residual); with
        masks it is called with a ``mask=`` keyword too (shape ``(examples,)``, 1 for real
        examples, 0 for padding) and must weight its terms with it.
      variant: one of ``"maml"``, ``"fomaml"``, ``"meta_sgd"``, ``"maml++"``, ``"anil"``.
      inner_steps: inner gradient steps during meta-training.
      inner_learning_rate: initial inner learning rate (learned for Meta-SGD and MAML++).
      outer_optimizer: a Keras optimizer (default Adam 1e-3). A
        ``keras.optimizers.LossScaleOptimizer`` turns on dynamic loss scaling of the query loss
        and, with the same scale, of every inner step (for ``mixed_float16`` models, see
        docs/meta.md for what runs in which precision).
      transform: a :mod:`hodiff.training.transforms` transform on the meta-gradient (e.g. clipping).
      head: for ANIL, how many of the last trainable variables form the adapted head.
      multi_step_weights: for MAML++, weights of the query loss after each inner step (default
        all on the last).
      recompute: recompute inner steps in the backward pass (``tf.recompute_grad``).
      jit_compile: compile the meta-step (and :meth:`evaluate`, :meth:`predict`) with XLA.
        Second-order variants of models with max-pooling layers other than non-overlapping
        2D ones (which :class:`FunctionalModel` rewrites) need ``False``: TensorFlow's XLA gets
        max-pooling's second derivative wrong (an error says so).
      inner_optimizer: ``"sgd"`` (default), ``"momentum"``, ``"adam"`` or an
        :class:`InnerOptimizer` instance: the differentiable optimiser of the inner steps; the
        variant's (learned) rates scale its directions.
      vectorize: adapt all tasks of a batch at once with batched matmuls. ``None`` (default):
        where the model is a ``keras.Sequential`` of ``Dense`` layers trained with ``loss_fn``
        (see :func:`hodiff.meta.vectorized.batched_dense_stack`), else the task loop; ``True``:
        raise if the model is not such a stack; ``False``: always the task loop.
      steps_per_call: meta-iterations per :meth:`meta_step` call, looped inside the compiled
        step (Python dispatch is paid once per call). With more than one, every tensor passed to
        :meth:`meta_step` has a leading axis of that length, and iteration ``i`` trains on slice
        ``i``: ``(steps_per_call, tasks, examples, ...)``.
      monitor: also return statistics of the meta-gradient (norms, NaN/Inf counts) under
        ``gradient_stats``, as :class:`hodiff.TrainStep` does, computed from the step's raw meta-gradients
        when first read (:class:`~hodiff.training.monitor.GradientStats`). ``False`` leaves them out.

    Call :meth:`meta_step` with a task batch ``(support_x, support_y, query_x, query_y)``, each
    with a leading task axis; it returns the mean query loss after adaptation and the mean support
    loss before it. With ``loss_fn`` the inputs go to the model, so their rank must be the model
    input's plus one: for inputs of shape ``(None, 1)``, ``(tasks, examples, 1)``. Predictions
    and losses of half precision are cast to float32. Tasks with different numbers of examples
    share a batch when padded to a common length, with ``support_mask`` and ``query_mask`` of
    shape ``(tasks, examples)`` marking the real examples.
    """

    def __init__(
        self,
        model: keras.Model | FunctionalModel,
        loss_fn: Loss | None = None,
        variant: str = "maml",
        inner_steps: int = 1,
        inner_learning_rate: float = 0.01,
        outer_optimizer: keras.optimizers.Optimizer | None = None,
        transform: GradientTransform | None = None,
        head: int = 2,
        multi_step_weights: Sequence[float] | None = None,
        recompute: bool = False,
        jit_compile: bool = True,
        task_objective: Callable[..., tf.Tensor] | None = None,
        inner_optimizer: str | InnerOptimizer = "sgd",
        vectorize: bool | None = None,
        steps_per_call: int = 1,
        monitor: bool = True,
    ):
        super().__init__(name="meta_learner")
        caller = "MetaLearner"
        if variant not in META_VARIANTS:
            raise ValueError(f"{caller}: variant {variant!r} is not one of {META_VARIANTS}.")
        check_steps(inner_steps, caller)
        if vectorize not in (None, True, False):
            raise ValueError(f"{caller}: vectorize must be None (automatic), True or False, got {vectorize!r}.")
        self.functional = model if isinstance(model, FunctionalModel) else FunctionalModel(model)
        if (loss_fn is None) == (task_objective is None):
            raise ValueError(
                f"{caller}: pass exactly one of loss_fn(prediction, target) (supervised tasks) and "
                "task_objective(model, params, x, y) (e.g. a PINN residual loss)."
            )
        self.supervised = loss_fn is not None
        pooling = _max_pooling_layers(self.functional.model)
        if jit_compile and variant != "fomaml" and inner_steps and pooling:
            raise ValueError(
                f"{caller}: second-order {variant!r} through max-pooling layers {pooling} cannot be compiled with XLA: "
                "TensorFlow's XLA differentiates max-pooling twice wrongly (the meta-gradient of Finn et al.'s CNN "
                "was 4% off in float32, TF 2.21) and has no float64 kernel for it; hodiff rewrites only 2D pooling "
                "whose windows tile the input (strides == pool_size, 'valid'). Pass jit_compile=False (graph "
                "mode, exact), or variant='fomaml' (first order, fine under XLA)."
            )
        self.loss_fn, self.task_objective = loss_fn, task_objective
        self.objective = self._task_loss
        self.inner_optimizer = _resolve_optimizer(inner_optimizer, caller)
        self.variant, self.inner_steps, self.recompute, self.jit_compile = variant, inner_steps, recompute, jit_compile
        self.batched_function, reason = None, "it is trained with task_objective, not loss_fn"
        if self.functional.batch_statistics or self.functional.dropout:
            reason = "it normalises with batch statistics or drops units"
        elif self.supervised and vectorize is not False:
            self.batched_function, reason = batched_dense_stack(self.functional.model, self.functional.variables)
        if vectorize and self.batched_function is None:
            raise ValueError(
                f"{caller}: vectorize=True needs a keras.Sequential of Dense layers trained with loss_fn, but "
                f"{reason}. Pass vectorize=None to use the task loop for such models."
            )
        params = self.functional.variables
        self.learned_rates: list[tf.Variable] = []
        if variant == "meta_sgd":
            self.learned_rates = [
                tf.Variable(tf.fill(v.shape, tf.constant(inner_learning_rate, v.dtype)), name=f"alpha_{i}")
                for i, v in enumerate(params)
            ]
        elif variant == "maml++":
            self.learned_rates = [
                tf.Variable(tf.fill([inner_steps], tf.constant(inner_learning_rate, v.dtype)), name=f"alpha_{i}")
                for i, v in enumerate(params)
            ]
        self.inner_learning_rate = inner_learning_rate
        self.adapt = [index >= len(params) - head for index in range(len(params))] if variant == "anil" else None
        weights = (
            multi_step_weights
            if variant == "maml++" and multi_step_weights is not None
            else [0.0] * (inner_steps - 1) + [1.0]
        )
        if len(weights) != max(inner_steps, 1):
            raise ValueError(f"{caller}: multi_step_weights has {len(weights)} entries for {inner_steps} inner steps.")
        self.multi_step_weights = list(weights)
        self.step = TrainStep(
            None,
            list(params) + self.learned_rates,
            outer_optimizer or keras.optimizers.Adam(1e-3),
            transform=transform,
            jit_compile=jit_compile,
            gradients_fn=self._meta_gradients,
            steps_per_call=steps_per_call,
            per_step_batches=steps_per_call > 1,
            monitor=monitor,
        )
        self.steps_per_call = steps_per_call
        self._compiled: dict[Any, Callable] = {}
        self._checked: set = set()  # shapes and dtypes of task batches already checked

    @property
    def vectorized(self) -> bool:
        """Whether task batches are adapted all at once (batched matmuls) rather than task by task."""
        return self.batched_function is not None

    def rates(self) -> Any:
        """The inner learning rate(s) in the form :func:`inner_loop` takes.

        MAML++ learns one rate per step and parameter; adapting for more steps than it was
        trained with reuses the last step's rates.
        """
        if self.variant == "meta_sgd":
            return [tf.convert_to_tensor(a) for a in self.learned_rates]
        if self.variant == "maml++":
            return lambda step: [a[min(step, self.inner_steps - 1)] for a in self.learned_rates]
        return self.inner_learning_rate

    # -- losses -------------------------------------------------------------------------------

    def _task_loss(self, params: Sequence[tf.Tensor], x: Any, y: Any, mask: Any = None) -> tf.Tensor:
        """One task's loss (scalar); ``mask`` ``(examples,)`` weights the examples."""
        if self.task_objective is not None:
            extra = {} if mask is None else {"mask": mask}
            return full_precision(self.task_objective(self.functional, params, x, y, **extra))
        assert self.loss_fn is not None
        prediction = full_precision(self.functional(params, x))
        if mask is None:
            return full_precision(self.loss_fn(prediction, y))
        return _masked_mean(self._example_losses(prediction, y), mask)

    def _batched_task_losses(
        self,
        params: Sequence[tf.Tensor],
        x: Any,
        y: Any,
        mask: Any = None,
        shared: Sequence[tf.Tensor] | None = None,
        zeros: Sequence[tf.Tensor] | None = None,
    ) -> tf.Tensor:
        """Every task's loss, shape ``(tasks,)``, for parameters with a leading task axis, or for
        per-task offsets ``params`` from ``shared`` parameters (without a task axis). While the
        offsets are still ``zeros`` (the same tensors: nothing adapted yet) the shared kernels
        multiply all tasks' examples at once and only the offsets' gradients are batched."""
        assert self.batched_function is not None and self.loss_fn is not None
        if shared is None:
            prediction = self.batched_function(params, x)
        elif zeros is not None and all(p is z for p, z in zip(params, zeros)):
            prediction = self.batched_function(params, x, shared=shared)
        else:
            prediction = self.batched_function([s + p for s, p in zip(shared, params)], x)
        prediction = full_precision(prediction)
        if mask is None:
            loss_fn = self.loss_fn
            return map_pairs(lambda a, b: full_precision(loss_fn(a, b)), prediction, tf.convert_to_tensor(y))
        return _masked_mean(self._example_losses(prediction, y, batched=True), mask)

    def _example_losses(self, prediction: tf.Tensor, target: Any, batched: bool = False) -> tf.Tensor:
        """``loss_fn`` on each example as a batch of one: shape ``(examples,)``, or with
        ``batched=True`` ``(tasks, examples)`` for a leading task axis."""
        loss_fn = self.loss_fn
        assert loss_fn is not None
        target = tf.convert_to_tensor(target)
        if batched:  # tasks and examples as one axis of pairs
            lead = tf.shape(prediction)[:2]
            prediction, target = _merge_leading_axes(prediction), _merge_leading_axes(target)
        one = lambda a, b: full_precision(loss_fn(a[None], b[None]))
        losses = map_pairs(one, prediction, target)
        if losses.shape.rank != 1:
            raise ValueError(
                f"MetaLearner: with masks, loss_fn must return a scalar per example (a mean over the examples), "
                f"but on single examples it returned shape {tuple(losses.shape[1:])}."
            )
        return tf.reshape(losses, lead) if batched else losses

    def _adapted(
        self, support: Callable, query: Callable, params: Sequence[tf.Tensor], loss_scale: Any, batched: bool
    ) -> tuple[tf.Tensor, tf.Tensor]:
        """Query loss after the inner steps (weighted over steps for MAML++) and the support loss
        before them; per task with ``batched=True``."""
        trajectory, support_losses = unroll(
            support,
            params,
            self.inner_steps,
            self.rates(),
            self.inner_optimizer,
            self.variant == "fomaml",
            self.adapt,
            self.recompute,
            loss_scale,
            batched,
        )
        if not self.inner_steps:
            final = query(list(params))
            return final, tf.zeros_like(final)
        terms = [weight * query(p) for weight, p in zip(self.multi_step_weights, trajectory) if weight]
        return tf.add_n(terms), support_losses[0]

    # -- adaptation ---------------------------------------------------------------------------

    def adapt_parameters(
        self,
        support_x: Any,
        support_y: Any,
        steps: int | None = None,
        params: Sequence[tf.Tensor] | None = None,
        first_order: bool | None = None,
        support_mask: Any = None,
    ) -> tuple[list[tf.Tensor], tf.Tensor]:
        """Adapts to one task; returns the adapted parameters and the support losses.

        Raises:
          FloatingPointError: when run eagerly and a support loss or an adapted parameter is not
            finite (e.g. Meta-SGD's learned rates applied for more steps than trained).
        """
        steps = self.inner_steps if steps is None else steps
        first_order = self.variant == "fomaml" if first_order is None else first_order
        params = self.functional.parameters() if params is None else params
        adapted, losses = inner_loop(
            lambda p: self._task_loss(p, support_x, support_y, support_mask),
            params,
            steps,
            self.rates(),
            first_order,
            self.adapt,
            self.recompute,
            optimizer=self.inner_optimizer,
        )
        if tf.executing_eagerly():
            finite = bool(tf.reduce_all(tf.math.is_finite(losses))) and all(
                bool(tf.reduce_all(tf.math.is_finite(p))) for p in adapted
            )
            if not finite:
                raise FloatingPointError(
                    f"MetaLearner.adapt_parameters: adaptation diverged within {steps} inner steps (support losses "
                    f"{losses.numpy().tolist()}, or a non-finite adapted parameter)"
                    f"{_divergence_hint(self, steps)}."
                )
        return adapted, losses

    def adapted_query_loss(
        self,
        params: Sequence[tf.Tensor],
        support_x,
        support_y,
        query_x,
        query_y,
        loss_scale: Any = None,
        support_mask: Any = None,
        query_mask: Any = None,
    ) -> tuple[tf.Tensor, tf.Tensor]:
        """Query loss after adapting ``params`` to the support set (weighted over steps for
        MAML++), and the support loss before adaptation; ``loss_scale`` as in :func:`inner_loop`,
        masks ``(examples,)`` as in :meth:`meta_step`."""
        return self._adapted(
            lambda p: self._task_loss(p, support_x, support_y, support_mask),
            lambda p: self._task_loss(p, query_x, query_y, query_mask),
            params,
            loss_scale,
            batched=False,
        )

    def _broadcast_parameters(self, x: tf.Tensor) -> list[tf.Tensor]:
        """The current parameters repeated along a new leading task axis of ``x``'s length."""
        return [tf.broadcast_to(p, _task_shape(x, p)) for p in self.functional.parameters()]

    # -- meta-training ------------------------------------------------------------------------

    def _meta_gradients(
        self, support_x, support_y, query_x, query_y, support_mask=None, query_mask=None
    ) -> tuple[tf.Tensor, list, dict]:
        """Mean query loss over tasks and its gradient w.r.t. the initial parameters (and rates).

        Returns ``(loss, gradients, extras)`` for :class:`hodiff.TrainStep`. Vectorised, all
        tasks are adapted at once under one tape; otherwise each task's meta-gradient is taken
        inside the task loop (a fresh tape per task), so the loop itself is never differentiated.
        With loss scaling the gradients are those of the scaled query loss (``TrainStep``
        unscales them) and the inner steps use the same scale.
        """
        self._check_task_batch(support_x, support_y, query_x, query_y, support_mask, query_mask)
        variables = list(self.functional.variables) + self.learned_rates
        tasks = tf.shape(support_x)[0]
        loss_scale = self.step.loss_scale
        if self.batched_function is not None:
            with tf.GradientTape() as tape:
                if self.recompute:  # every parameter an input of the recomputed steps
                    shared, start = None, self._broadcast_parameters(support_x)
                else:  # per-task offsets from the shared parameters, zero before the first step
                    shared = self.functional.parameters()
                    start = [tf.zeros(_task_shape(support_x, p), p.dtype) for p in shared]
                query_losses, support_losses = self._adapted(
                    lambda p: self._batched_task_losses(p, support_x, support_y, support_mask, shared, start),
                    lambda p: self._batched_task_losses(p, query_x, query_y, query_mask, shared, start),
                    start,
                    loss_scale,
                    batched=True,
                )
                loss = tf.reduce_mean(query_losses)
                scaled = self.step.scale_loss(loss)
            grads = tape.gradient(scaled, variables, unconnected_gradients=tf.UnconnectedGradients.ZERO)
            return loss, grads, {"support_loss": tf.reduce_mean(support_losses)}

        def one_task(index):
            masks = [None if m is None else m[index] for m in (support_mask, query_mask)]
            with tf.GradientTape() as tape:
                task = (support_x[index], support_y[index], query_x[index], query_y[index])
                query_loss, support_loss = self.adapted_query_loss(
                    self.functional.parameters(), *task, loss_scale, *masks
                )
                scaled = self.step.scale_loss(query_loss)
            grads = tape.gradient(scaled, variables, unconnected_gradients=tf.UnconnectedGradients.ZERO)
            return query_loss, support_loss, grads

        def add_task(index: tf.Tensor, loss_total: tf.Tensor, support_total: tf.Tensor, totals: list) -> tuple:
            query_loss, support_loss, grads = one_task(index)
            loss_total += tf.cast(query_loss, loss_total.dtype)
            support_total += tf.cast(support_loss, support_total.dtype)
            return index + 1, loss_total, support_total, [t + g for t, g in zip(totals, grads)]

        zero = tf.zeros((), variables[0].dtype)
        initial = (tf.constant(0), zero, zero, [tf.zeros(v.shape, v.dtype) for v in variables])
        _, loss_total, support_total, totals = tf.while_loop(lambda index, *_: index < tasks, add_task, initial)
        count = tf.cast(tasks, loss_total.dtype)
        return (
            loss_total / count,
            [t / tf.cast(count, t.dtype) for t in totals],
            {"support_loss": support_total / count},
        )

    def meta_step(
        self, support_x, support_y, query_x, query_y, support_mask=None, query_mask=None
    ) -> dict[str, tf.Tensor]:
        """One outer update on a batch of tasks (leading task axis on every argument).

        ``support_mask`` and ``query_mask``, shape ``(tasks, examples)``, mark the real examples
        (1) of tasks padded (0) to a common number of examples; a missing one means all real.
        Each task's loss is then the mean over its real examples, so the meta-gradient is that of
        the tasks processed one by one without padding.

        With ``steps_per_call > 1`` every argument has a leading axis of that length (one task
        batch per meta-iteration, all run in one compiled call); the outputs are those of the last
        iteration, with ``losses`` holding every iteration's query loss.
        """
        arrays = (support_x, support_y, query_x, query_y)
        batch = [a if isinstance(a, tf.Tensor) else tf.convert_to_tensor(a) for a in arrays]
        steps = self.steps_per_call
        masks = self._masks(batch, support_mask, query_mask, leading=3 if steps > 1 else 2)
        signature = tuple((tuple(a.shape), a.dtype) for a in batch)
        if masks or signature not in self._checked:  # masks' values are checked at every call
            self._check_meta_step_batch(batch, masks)
            if not masks:
                self._checked.add(signature)
        return self.step(*batch, *masks)

    def _check_meta_step_batch(self, batch: list[tf.Tensor], masks: list[tf.Tensor]) -> None:
        steps = self.steps_per_call
        if steps == 1:
            self._check_task_batch(*batch, *masks)
            return
        for name, a in zip(
            ("support_x", "support_y", "query_x", "query_y", "support_mask", "query_mask"), batch + masks
        ):
            if a.shape.rank is None or a.shape.rank < 3 or a.shape[0] != steps:
                raise ValueError(
                    f"MetaLearner.meta_step: with steps_per_call={steps}, {name} needs a leading axis of that "
                    f"length, one task batch per meta-iteration: (steps_per_call, tasks, examples, ...); got "
                    f"shape {tuple(a.shape)}."
                )
        self._check_task_batch(*[_merge_leading_axes(a) for a in batch + masks])  # as steps * tasks tasks

    # -- evaluation ---------------------------------------------------------------------------

    def evaluate(
        self,
        tasks: Sequence[Any],
        steps: int | None = None,
        support_mask: Any = None,
        query_mask: Any = None,
        on_nonfinite: str = "warn",
    ) -> MetaEvaluation:
        """Adapts every task of a batch and scores it after each inner step, compiled and batched.

        Args:
          tasks: ``(support_x, support_y, query_x, query_y)`` with a leading task axis, as for
            :meth:`meta_step`.
          steps: inner steps (default: the training ``inner_steps``). Meta-SGD's and MAML++'s
            learned rates are applied at every step (MAML++ repeats its last step's rates).
          support_mask: as for :meth:`meta_step`.
          query_mask: as for :meth:`meta_step`.
          on_nonfinite: what to do when a task diverges (a non-finite loss or adapted
            parameter): ``"warn"`` logs a warning, ``"raise"`` raises ``FloatingPointError``,
            ``"ignore"`` only marks it in :attr:`MetaEvaluation.diverged`.

        Returns:
          A :class:`MetaEvaluation`: query and support losses before and after each step, the
          adapted parameters (task axis first) and the diverged tasks.
        """
        caller = "MetaLearner.evaluate"
        if on_nonfinite not in ("warn", "raise", "ignore"):
            raise ValueError(f"{caller}: on_nonfinite must be 'warn', 'raise' or 'ignore', got {on_nonfinite!r}.")
        steps = self.inner_steps if steps is None else steps
        check_steps(steps, caller)
        if not isinstance(tasks, (list, tuple)) or len(tasks) != 4:
            raise ValueError(
                f"{caller}: tasks must be the four tensors (support_x, support_y, query_x, query_y), each with a "
                f"leading task axis; got a {type(tasks).__name__}."
            )
        batch = [tf.convert_to_tensor(a) for a in tasks]
        masks = self._masks(batch, support_mask, query_mask)
        self._check_task_batch(*batch, *masks)
        key = ("evaluate", steps, bool(masks))
        if key not in self._compiled:
            self._compiled[key] = tf.function(
                lambda *arrays: self._evaluate(steps, *arrays), jit_compile=self.jit_compile, autograph=False
            )
        query, support, parameters, finite = self._compiled[key](*batch, *masks)
        result = MetaEvaluation(query.numpy(), support.numpy(), list(parameters), ~finite.numpy())
        if result.num_diverged and on_nonfinite != "ignore":
            message = (
                f"{caller}: {result.num_diverged} of {len(result.diverged)} tasks diverged (a non-finite support or "
                f"query loss or adapted parameter) within {steps} inner steps{_divergence_hint(self, steps)}; "
                "MetaEvaluation.diverged marks them."
            )
            if on_nonfinite == "raise":
                raise FloatingPointError(message)
            logger.warning(message)
        return result

    def _evaluate(self, steps: int, support_x, support_y, query_x, query_y, support_mask=None, query_mask=None):
        """Per task: query and support losses ``(steps + 1,)``, adapted parameters, finiteness."""
        dtype = tf.as_dtype(self.functional.variables[0].dtype)

        def scores(support: Callable, query: Callable, params: list, batched: bool):
            trajectory, support_losses = unroll(
                support, params, steps, self.rates(), self.inner_optimizer, True, self.adapt, False, None, batched
            )
            states = [params] + trajectory
            query_losses = tf.stack([tf.cast(query(p), dtype) for p in states], axis=-1)
            support_losses = [tf.cast(s, dtype) for s in support_losses] + [tf.cast(support(states[-1]), dtype)]
            return query_losses, tf.stack(support_losses, axis=-1), states[-1]

        if self.batched_function is not None:
            query, support, final = scores(
                lambda p: self._batched_task_losses(p, support_x, support_y, support_mask),
                lambda p: self._batched_task_losses(p, query_x, query_y, query_mask),
                self._broadcast_parameters(support_x),
                batched=True,
            )
        else:

            def one_task(index):
                masks = [None if m is None else m[index] for m in (support_mask, query_mask)]
                return scores(
                    lambda p: self._task_loss(p, support_x[index], support_y[index], masks[0]),
                    lambda p: self._task_loss(p, query_x[index], query_y[index], masks[1]),
                    self.functional.parameters(),
                    batched=False,
                )

            signature = (
                tf.TensorSpec((steps + 1,), dtype),
                tf.TensorSpec((steps + 1,), dtype),
                [tf.TensorSpec(v.shape, v.dtype) for v in self.functional.variables],
            )
            query, support, final = tf.map_fn(one_task, tf.range(tf.shape(support_x)[0]), fn_output_signature=signature)
        finite = tf.reduce_all(tf.math.is_finite(query), -1) & tf.reduce_all(tf.math.is_finite(support), -1)
        for p in final:
            finite &= tf.reduce_all(tf.reshape(tf.math.is_finite(p), [tf.shape(p)[0], -1]), -1)
        return query, support, final, finite

    def predict(self, parameters: Sequence[tf.Tensor], x: Any) -> tf.Tensor:
        """Predictions of each task's adapted parameters on its own inputs, compiled.

        Args:
          parameters: one tensor per model parameter with a leading task axis, e.g.
            :attr:`MetaEvaluation.parameters`.
          x: inputs with the same leading task axis, ``(tasks, examples, ...)``.

        Returns:
          ``(tasks, examples, ...)`` predictions.
        """
        parameters = [tf.convert_to_tensor(p) for p in parameters]
        x = tf.convert_to_tensor(x)
        if len(parameters) != len(self.functional.variables) or any(
            p.shape.rank is None or p.shape.rank != len(v.shape) + 1 or p.shape[0] != x.shape[0]
            for p, v in zip(parameters, self.functional.variables)
        ):
            raise ValueError(
                "MetaLearner.predict: parameters need one tensor per model parameter "
                f"({len(self.functional.variables)}) with a leading task axis of x's length {x.shape[0]}, e.g. "
                f"MetaEvaluation.parameters; got shapes "
                f"{[tuple(p.shape) for p in parameters]}."
            )
        key = "predict"
        if key not in self._compiled:
            self._compiled[key] = tf.function(self._predict, jit_compile=self.jit_compile, autograph=False)
        return self._compiled[key](parameters, x)

    def _predict(self, parameters: list[tf.Tensor], x: tf.Tensor) -> tf.Tensor:
        if self.batched_function is not None:
            return self.batched_function(parameters, x)
        dtype = self.functional.variables[0].dtype
        return tf.map_fn(
            lambda pair: tf.cast(self.functional(pair[0], pair[1]), dtype),
            (parameters, x),
            fn_output_signature=tf.TensorSpec(None, self.functional.variables[0].dtype),
        )

    # -- validation ---------------------------------------------------------------------------

    def _masks(self, batch: list[tf.Tensor], support_mask: Any, query_mask: Any, leading: int = 2) -> list[tf.Tensor]:
        """``[]`` without masks, else both masks as float tensors (a missing one all ones, over the
        first ``leading`` axes of its inputs)."""
        if support_mask is None and query_mask is None:
            return []
        if self.functional.batch_statistics:
            raise ValueError(
                "MetaLearner: masks cannot be used with batch_statistics=True: the padded examples would enter the "
                "batch statistics. Meta-train tasks of equal size, or drop the BatchNormalization layers."
            )
        dtype = tf.as_dtype(self.functional.variables[0].dtype)
        masks = []
        for name, mask, x in (("support_mask", support_mask, batch[0]), ("query_mask", query_mask, batch[2])):
            if mask is None:
                mask = tf.ones(tf.shape(x)[:leading], dtype)
            mask = tf.convert_to_tensor(mask)
            if not (mask.dtype.is_floating or mask.dtype.is_integer or mask.dtype.is_bool):
                raise TypeError(f"MetaLearner: {name} must hold 0/1 (or booleans), got dtype {mask.dtype.name}.")
            masks.append(tf.cast(mask, dtype))
        return masks

    def _check_task_batch(self, *arrays: Any) -> None:
        """Clear errors, before anything is compiled, for task batches that would train wrongly."""
        names = ("support_x", "support_y", "query_x", "query_y")
        masks = [m for m in arrays[4:] if m is not None]
        arrays = arrays[:4]
        shapes = {name: tuple(a.shape) for name, a in zip(names, arrays)}
        if any(a.shape.rank is None or a.shape.rank < 2 for a in arrays):
            raise ValueError(
                "MetaLearner: every task-batch tensor needs a leading task axis and a batch axis, (tasks, examples, "
                f"...); got shapes {shapes}."
            )
        rank = self.functional.input_rank() if self.supervised else None
        for name in ("support_x", "query_x"):
            if rank is not None and len(shapes[name]) != rank + 1:
                raise ValueError(
                    f"MetaLearner: {name} has shape {shapes[name]}, but the model takes inputs of rank {rank}, so a "
                    f"task batch needs rank {rank + 1}: (tasks, examples, ...). Without a task axis every example "
                    "would "
                    f"be trained as a task of its own; for one task pass {name}[None] (and the same for the others)."
                )
        tasks = {name: a.shape[0] for name, a in zip(names, arrays)}
        if len(set(tasks.values())) != 1:
            raise ValueError(
                f"MetaLearner: the task batch has differing numbers of tasks {tasks}; every tensor needs the same "
                "leading (task) axis."
            )
        if tasks["support_x"] == 0:
            raise ValueError(f"MetaLearner: the task batch has zero tasks (shapes {shapes}); pass at least one task.")
        if arrays[0].shape[1] != arrays[1].shape[1] or arrays[2].shape[1] != arrays[3].shape[1]:
            raise ValueError(
                "MetaLearner: support_x/support_y or query_x/query_y disagree on the number of examples per task: "
                f"{shapes}."
            )
        for name, mask, x in zip(("support_mask", "query_mask"), masks, (arrays[0], arrays[2])):
            if tuple(mask.shape) != tuple(x.shape[:2]):
                raise ValueError(
                    f"MetaLearner: {name} has shape {tuple(mask.shape)} but the task batch has (tasks, examples) = "
                    f"{tuple(x.shape[:2])}; pass one 0/1 entry per example of each task (1: real, 0: padding)."
                )
            values = tf.get_static_value(mask)
            if values is None:
                continue
            if not np.all((values == 0) | (values == 1)):
                raise ValueError(f"MetaLearner: {name} must hold only 0 (padding) and 1 (real example).")
            empty = np.flatnonzero(values.sum(axis=1) == 0)
            if empty.size:
                raise ValueError(
                    f"MetaLearner: {name} marks no real example in tasks {empty.tolist()}; every task needs at least "
                    "one support and one query example."
                )


def _task_shape(x: tf.Tensor, p: tf.Tensor) -> list:
    """``p``'s shape behind a leading task axis of ``x``'s length (static where known, which XLA
    needs to compile the step once)."""
    return [x.shape[0] if x.shape[0] is not None else tf.shape(x)[0], *p.shape]


def _merge_leading_axes(x: tf.Tensor) -> tf.Tensor:
    """``x`` with its first two axes merged into one (a static length where both are known)."""
    head = x.shape[0] * x.shape[1] if x.shape[:2].is_fully_defined() else -1
    rest = x.shape[2:] if x.shape[2:].is_fully_defined() else tf.shape(x)[2:]
    return tf.reshape(x, tf.concat([[head], rest], 0)) if isinstance(rest, tf.Tensor) else tf.reshape(x, [head, *rest])


def _masked_mean(losses: tf.Tensor, mask: tf.Tensor) -> tf.Tensor:
    """Mean of ``losses`` over the last axis where ``mask`` is 1 (padding ignored, even if not finite)."""
    mask = tf.cast(mask, losses.dtype)
    kept = tf.where(mask > 0, losses, tf.zeros_like(losses))
    return tf.reduce_sum(kept * mask, -1) / tf.reduce_sum(mask, -1)


def _divergence_hint(learner: MetaLearner, steps: int) -> str:
    if learner.variant in ("meta_sgd", "maml++") and steps > learner.inner_steps:
        return (
            f" ({learner.variant}'s learned rates were trained for {learner.inner_steps} inner step(s); applied for "
            f"more steps they can diverge: adapt with steps <= {learner.inner_steps})"
        )
    return " (a smaller inner learning rate or fewer steps keep the adaptation stable)"


def _max_pooling_layers(model: Any) -> list[str]:
    """Names of the max-pooling layers of a Keras model that XLA would differentiate twice
    wrongly: all but those :class:`FunctionalModel` rewrites (none for a plain callable)."""
    if not isinstance(model, keras.Model):
        return []
    kinds = (keras.layers.MaxPooling1D, keras.layers.MaxPooling2D, keras.layers.MaxPooling3D)
    return [layer.name for layer in model._flatten_layers() if isinstance(layer, kinds) and not xla_safe_pooling(layer)]


def _resolve_optimizer(spec: Any, caller: str) -> InnerOptimizer:
    return inner_optimizer(spec, caller)
