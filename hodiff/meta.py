"""Functional parameters and MAML-family inner loops on unmodified Keras 3 models.

Keras 3's ``model.stateless_call(trainable, non_trainable, x)`` runs a model on substituted
parameter tensors, so an inner loop can update *tensors* (not variables) and the outer tape sees
the whole path from the initial weights to the query loss. :func:`inner_loop` unrolls the k
inner steps in Python, so the second-order terms are never lost inside a ``tf.while_loop``, and
:class:`MetaLearner` compiles a meta-training step over a batch of tasks (each task's
meta-gradient computed inside the task loop, never differentiated through it).

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
  from hodiff.meta import FunctionalModel, inner_loop

  model = keras.Sequential([keras.Input((1,)), keras.layers.Dense(16, activation="relu"), keras.layers.Dense(1)])
  f = FunctionalModel(model)
  x, y = tf.random.normal((10, 1)), tf.random.normal((10, 1))
  mse = lambda prediction, target: tf.reduce_mean((prediction - target) ** 2)
  adapted, losses = inner_loop(lambda p: mse(f(p, x), y), f.parameters(), steps=5, learning_rate=0.01)
  assert losses.shape == (5,) and len(adapted) == len(model.trainable_variables)
  ```
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import keras
import tensorflow as tf

from hodiff import _validate
from hodiff.step import TrainStep, full_precision, unscale
from hodiff.transforms import GradientTransform

__all__ = ["FunctionalModel", "inner_loop", "MetaLearner", "META_VARIANTS"]

META_VARIANTS = ("maml", "fomaml", "meta_sgd", "maml++", "anil")
Loss = Callable[[tf.Tensor, tf.Tensor], tf.Tensor]

_RUNNING_STATISTICS = (keras.layers.BatchNormalization,)


class FunctionalModel:
    """A Keras 3 model (or ``f(params, x)``) called on a list of parameter tensors.

    A Keras model becomes the function ``f(params, x)`` that runs ``model.stateless_call`` on
    ``params`` and the model's current non-trainable values; either way ``self.function`` is
    that ``f`` and ``self.variables`` hold the initial parameters.

    Args:
      model: a built Keras model, or a callable ``f(params, x)`` over a list of tensors.
      parameters: for a callable, the initial parameter list (tensors or variables).
      batch_statistics: for models with BatchNormalization: ``False`` (default) raises, because
        running averages updated by inner steps on support sets would be wrong for every other
        task; ``True`` normalises with the statistics of the batch being evaluated at every
        inner step and at the query (the transductive setting of Finn et al. 2017), and never
        updates the running averages.

    Example:
      ```python
      import tensorflow as tf
      from hodiff.meta import FunctionalModel

      f = FunctionalModel(lambda p, x: x @ p[0] + p[1], parameters=[tf.ones((2, 1)), tf.zeros(1)])
      assert f([2 * tf.ones((2, 1)), tf.zeros(1)], tf.ones((3, 2))).numpy().tolist() == [[4.0]] * 3
      ```
    """

    def __init__(
        self, model: keras.Model | Callable, parameters: Sequence[Any] | None = None, batch_statistics: bool = False
    ):
        caller = "FunctionalModel"
        self.batch_statistics = batch_statistics
        if isinstance(model, keras.Model):
            if not model.built or not model.weights:
                raise ValueError(
                    f"{caller}: the Keras model has no weights yet (unbuilt). Give it a keras.Input(shape=...) first "
                    "layer or call it once on a batch before meta-learning."
                )
            with_statistics = [
                layer.name for layer in model._flatten_layers() if isinstance(layer, _RUNNING_STATISTICS)
            ]
            if with_statistics and not batch_statistics:
                raise ValueError(
                    f"{caller}: layers {with_statistics} keep running statistics, which inner steps "
                    f"on one task's support set would overwrite for every task. Pass "
                    f"batch_statistics=True to normalise with each evaluated batch's own statistics "
                    f"(running averages untouched), or use LayerNormalization instead."
                )
            self.model, self.variables = model, list(model.trainable_variables)
            self.function = _stateless_function(model, training=batch_statistics)
        elif callable(model):
            if parameters is None:
                raise ValueError(f"{caller}: a plain callable f(params, x) needs parameters=[initial tensors].")
            self.model = self.function = model
            self.variables = [p if isinstance(p, tf.Variable) else tf.Variable(p) for p in parameters]
        else:
            raise TypeError(
                f"{caller}: model must be a Keras model or a callable f(params, x), got {type(model).__name__}."
            )

    def parameters(self) -> list[tf.Tensor]:
        """The current parameters as tensors read from the variables (differentiable w.r.t. them)."""
        return [tf.convert_to_tensor(v) for v in self.variables]

    def __call__(self, params: Sequence[tf.Tensor], x: Any) -> tf.Tensor:
        params = list(params)
        if len(params) != len(self.variables):
            raise ValueError(
                f"FunctionalModel: got {len(params)} parameter tensors for {len(self.variables)} parameters; pass one "
                "tensor per model.trainable_variables entry, in that order."
            )
        for index, (p, v) in enumerate(zip(params, self.variables)):
            if not tf.TensorShape(p.shape).is_compatible_with(v.shape):
                raise ValueError(
                    f"FunctionalModel: parameter {index} has shape {tuple(p.shape)} but the model's has "
                    f"{tuple(v.shape)}; the lists are probably in different orders."
                )
        return self.function(params, x)

    def input_rank(self) -> int | None:
        """The rank of one batch of inputs (2 for inputs of shape ``(None, d)``), when the model
        declares a single input; ``None`` for plain callables and models without an input spec."""
        try:
            inputs = self.model.inputs if isinstance(self.model, keras.Model) else None
        except (AttributeError, ValueError):
            return None
        return len(inputs[0].shape) if inputs and len(inputs) == 1 else None


def _stateless_function(model: keras.Model, training: bool) -> Callable[[Sequence[tf.Tensor], Any], tf.Tensor]:
    """``f(params, x)``: ``model`` run on ``params`` and its current non-trainable values, which
    ``stateless_call`` never writes back."""

    def function(params, x):
        non_trainable = [tf.convert_to_tensor(v) for v in model.non_trainable_variables]
        outputs, _ = model.stateless_call(list(params), non_trainable, x, training=training)
        return outputs

    return function


def _check_steps(steps: int, caller: str) -> None:
    if not isinstance(steps, int) or isinstance(steps, bool) or steps < 0:
        raise ValueError(f"{caller}: steps must be an int >= 0 (number of inner gradient steps), got {steps!r}.")


def inner_loop(
    objective: Callable[[list[tf.Tensor]], tf.Tensor],
    params: Sequence[tf.Tensor],
    steps: int,
    learning_rate: Any,
    first_order: bool = False,
    adapt: Sequence[bool] | None = None,
    recompute: bool = False,
    loss_scale: Any = None,
) -> tuple[list[tf.Tensor], tf.Tensor]:
    """``steps`` steps of gradient descent on one task's objective (its support loss).

    Args:
      objective: ``objective(params) -> scalar``, e.g.
        ``lambda p: mse(model(p, x_support), y_support)`` with a :class:`FunctionalModel`, or a
        PINN residual loss of ``p``.
      params: the starting parameters (tensors; differentiate w.r.t. them for MAML).
      steps: number of inner steps, >= 0 (unrolled in Python).
      learning_rate: a scalar, a list with one tensor per parameter (Meta-SGD), or a function
        of the step index returning either (MAML++'s per-step rates).
      first_order: drop the second-order terms (FOMAML): inner gradients are constants to
        outer tapes.
      adapt: one bool per parameter; ``False`` keeps it fixed (ANIL adapts only the head).
      recompute: recompute each inner step's activations in the backward pass instead of
        storing them (memory for many steps).
      loss_scale: for models that compute in float16 (``mixed_float16``): the objective is
        multiplied by this before differentiating and each gradient divided by it in float32
        after, so small inner gradients do not underflow in the float16 backward pass. A
        half-precision objective is cast to float32 either way.

    Returns:
      ``(adapted_params, losses)``: the parameters after the last step and the (unscaled)
      objective before each step, shape ``(steps,)``.
    """
    caller = "inner_loop"
    _check_steps(steps, caller)
    params = list(params)
    adapt = [True] * len(params) if adapt is None else list(adapt)
    if len(adapt) != len(params):
        raise ValueError(f"{caller}: adapt has {len(adapt)} entries for {len(params)} parameters.")
    losses = []
    for step in range(steps):
        rate = learning_rate(step) if callable(learning_rate) else learning_rate
        rates = list(rate) if isinstance(rate, (list, tuple)) else [rate] * len(params)
        if len(rates) != len(params):
            raise ValueError(
                f"{caller}: got {len(rates)} learning rates for {len(params)} parameters; pass a scalar or one rate "
                "tensor per parameter."
            )

        def one_step(*current, rates=rates):
            with tf.GradientTape() as tape:
                tape.watch(current)
                loss = full_precision(objective(list(current)))
                _validate.check_scalar(loss, f"{caller}: objective")
                scaled = loss if loss_scale is None else loss * tf.cast(loss_scale, loss.dtype)
            grads = tape.gradient(scaled, list(current), unconnected_gradients=tf.UnconnectedGradients.ZERO)
            if loss_scale is not None:
                grads = unscale(grads, loss_scale)
            if first_order:
                grads = [tf.stop_gradient(g) for g in grads]
            updated = [
                p - _validate.constant(r, p.dtype) * g if keep else p
                for p, g, r, keep in zip(current, grads, rates, adapt)
            ]
            return [loss] + updated

        result = _recomputed(one_step)(*params) if recompute else one_step(*params)
        losses.append(result[0])
        params = list(result[1:])
    stacked = tf.stack(losses) if losses else tf.zeros((0,))
    return params, stacked


def _recomputed(fn: Callable[..., list]) -> Callable[..., list]:
    """``fn`` whose activations are recomputed from its inputs in the backward pass.

    ``tf.recompute_grad`` gives wrong gradients for a function that itself takes a gradient (an
    inner step), so this is the same idea written for it: the forward runs without recording,
    the backward reruns ``fn`` under a tape from the inputs and the upstream gradients only.
    """

    @tf.custom_gradient
    def wrapped(*inputs):
        outputs = fn(*inputs)  # custom_gradient keeps outer tapes from recording this

        def backward(*upstream):
            with tf.GradientTape() as tape:
                tape.watch(inputs)
                again = fn(*inputs)
            return tape.gradient(
                again, list(inputs), output_gradients=list(upstream), unconnected_gradients=tf.UnconnectedGradients.ZERO
            )

        return outputs, backward

    return wrapped


class MetaLearner(tf.Module):
    """Meta-trains a Keras model with a MAML-family algorithm in a compiled step.

    Args:
      model: a built Keras model (or a :class:`FunctionalModel`).
      loss_fn: ``loss_fn(prediction, target) -> scalar`` for support and query sets.
      task_objective: instead of ``loss_fn``, ``task_objective(model, params, x, y) -> scalar``
        for tasks whose loss is not a function of predictions alone (a PINN residual).
      variant: one of ``"maml"``, ``"fomaml"``, ``"meta_sgd"``, ``"maml++"``, ``"anil"``.
      inner_steps: inner gradient steps during meta-training.
      inner_learning_rate: initial inner learning rate (learned for Meta-SGD and MAML++).
      outer_optimizer: a Keras optimizer (default Adam 1e-3). A
        ``keras.optimizers.LossScaleOptimizer`` turns on dynamic loss scaling of the query loss
        and, with the same scale, of every inner step (for ``mixed_float16`` models, see
        docs/meta.md for what runs in which precision).
      transform: a :mod:`hodiff.transforms` transform on the meta-gradient (e.g. clipping).
      head: for ANIL, how many of the last trainable variables form the adapted head.
      multi_step_weights: for MAML++, weights of the query loss after each inner step (default
        all on the last).
      recompute: recompute inner steps in the backward pass (``tf.recompute_grad``).
      jit_compile: compile the meta-step with XLA.

    Call :meth:`meta_step` with a task batch ``(support_x, support_y, query_x, query_y)``, each
    with a leading task axis; it returns the mean query loss after adaptation and the mean support
    loss before it. With ``loss_fn`` the inputs go to the model, so their rank must be the model
    input's plus one: for inputs of shape ``(None, 1)``, ``(tasks, examples, 1)``. Predictions
    and losses of half precision are cast to float32.
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
    ):
        super().__init__(name="meta_learner")
        if variant not in META_VARIANTS:
            raise ValueError(f"MetaLearner: variant {variant!r} is not one of {META_VARIANTS}.")
        _check_steps(inner_steps, "MetaLearner")
        self.functional = model if isinstance(model, FunctionalModel) else FunctionalModel(model)
        if (loss_fn is None) == (task_objective is None):
            raise ValueError(
                "MetaLearner: pass exactly one of loss_fn(prediction, target) (supervised tasks) and "
                "task_objective(model, params, x, y) (e.g. a PINN residual loss)."
            )
        self.supervised = loss_fn is not None
        if loss_fn is not None:
            supervised = loss_fn
            self.objective = lambda params, x, y: full_precision(
                supervised(full_precision(self.functional(params, x)), y)
            )
        elif task_objective is not None:
            objective = task_objective
            self.objective = lambda params, x, y: full_precision(objective(self.functional, params, x, y))
        self.variant, self.inner_steps, self.recompute = variant, inner_steps, recompute
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
            raise ValueError(
                f"MetaLearner: multi_step_weights has {len(weights)} entries for {inner_steps} inner steps."
            )
        self.multi_step_weights = list(weights)
        self.step = TrainStep(
            None,
            list(params) + self.learned_rates,
            outer_optimizer or keras.optimizers.Adam(1e-3),
            transform=transform,
            jit_compile=jit_compile,
            gradients_fn=self._meta_gradients,
        )

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

    def adapt_parameters(
        self,
        support_x: Any,
        support_y: Any,
        steps: int | None = None,
        params: Sequence[tf.Tensor] | None = None,
        first_order: bool | None = None,
    ) -> tuple[list[tf.Tensor], tf.Tensor]:
        """Adapts to one task; returns the adapted parameters and the support losses."""
        steps = self.inner_steps if steps is None else steps
        first_order = self.variant == "fomaml" if first_order is None else first_order
        params = self.functional.parameters() if params is None else params
        return inner_loop(
            lambda p: self.objective(p, support_x, support_y),
            params,
            steps,
            self.rates(),
            first_order,
            self.adapt,
            self.recompute,
        )

    def adapted_query_loss(
        self, params: Sequence[tf.Tensor], support_x, support_y, query_x, query_y, loss_scale: Any = None
    ) -> tuple[tf.Tensor, tf.Tensor]:
        """Query loss after adapting ``params`` to the support set (weighted over steps for
        MAML++), and the support loss before adaptation; ``loss_scale`` as in :func:`inner_loop`."""
        rates, first_order = self.rates(), self.variant == "fomaml"
        support = lambda p: self.objective(p, support_x, support_y)
        query, current, support_losses = [], list(params), []
        for step in range(self.inner_steps):
            rate = rates(step) if callable(rates) else rates
            current, losses = inner_loop(support, current, 1, rate, first_order, self.adapt, self.recompute, loss_scale)
            support_losses.append(losses[0])
            if self.multi_step_weights[step]:
                query.append(self.multi_step_weights[step] * self.objective(current, query_x, query_y))
        if not self.inner_steps:
            return self.objective(current, query_x, query_y), tf.zeros(())
        return tf.add_n(query), support_losses[0]

    def _meta_gradients(self, support_x, support_y, query_x, query_y) -> tuple[tf.Tensor, list, dict]:
        """Mean query loss over tasks and its gradient w.r.t. the initial parameters (and rates).

        Returns ``(loss, gradients, extras)`` for :class:`hodiff.TrainStep`. Each task's
        meta-gradient is taken inside the task loop (a fresh tape per task), so the loop itself
        is never differentiated. With loss scaling the gradients are those of the scaled query
        loss (``TrainStep`` unscales them) and the inner steps use the same scale.
        """
        self._check_task_batch(support_x, support_y, query_x, query_y)
        variables = list(self.functional.variables) + self.learned_rates
        tasks = tf.shape(support_x)[0]
        loss_scale = self.step.loss_scale

        def one_task(index):
            with tf.GradientTape() as tape:
                task = (support_x[index], support_y[index], query_x[index], query_y[index])
                query_loss, support_loss = self.adapted_query_loss(
                    self.functional.parameters(), *task, loss_scale=loss_scale
                )
                scaled = self.step.scale_loss(query_loss)
            grads = tape.gradient(scaled, variables, unconnected_gradients=tf.UnconnectedGradients.ZERO)
            return query_loss, support_loss, grads

        totals = [tf.zeros(v.shape, v.dtype) for v in variables]
        loss_total = support_total = tf.zeros((), variables[0].dtype)
        for index in tf.range(tasks):
            query_loss, support_loss, grads = one_task(index)
            loss_total += tf.cast(query_loss, loss_total.dtype)
            support_total += tf.cast(support_loss, support_total.dtype)
            totals = [t + g for t, g in zip(totals, grads)]
        count = tf.cast(tasks, loss_total.dtype)
        return (
            loss_total / count,
            [t / tf.cast(count, t.dtype) for t in totals],
            {"support_loss": support_total / count},
        )

    def meta_step(self, support_x, support_y, query_x, query_y) -> dict[str, tf.Tensor]:
        """One outer update on a batch of tasks (leading task axis on every argument)."""
        batch = [tf.convert_to_tensor(a) for a in (support_x, support_y, query_x, query_y)]
        self._check_task_batch(*batch)
        return self.step(*batch)

    def _check_task_batch(self, *arrays: Any) -> None:
        """Clear errors, before anything is compiled, for task batches that would train wrongly."""
        names = ("support_x", "support_y", "query_x", "query_y")
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
