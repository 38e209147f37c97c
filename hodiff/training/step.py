"""Compiled training steps: loss, gradient, transforms, optimizer update and statistics.

:class:`TrainStep` builds one ``tf.function`` (``jit_compile=True`` by default) that runs
``steps_per_call`` training steps in a loop inside the graph, so Python dispatch does not
dominate small models. Like Keras 3's own trainer, it traces without AutoGraph: the loss function
runs once as Python at trace time, so control flow on tensor values is written with ``tf.cond``,
``tf.where`` or ``tf.while_loop`` (hodiff's PINN trainer and L-BFGS do the same; AutoGraph's
conversion cost a third of the tracing time of a small PINN).

Under ``tf.distribute`` each replica computes its gradients in an XLA-compiled function; their
mean over replicas is taken first, and the transforms (clipping, accumulation, non-finite
skipping), the statistics and the optimizer act on that mean after, once, in cross-replica
context. So an ``R``-replica step equals a one-replica step on the same global batch.

Mixed precision: with a ``keras.optimizers.LossScaleOptimizer`` the loss is multiplied by its
dynamic scale before differentiating and the gradients are divided by it (in float32) before
the transforms, so clipping and the statistics see the true gradients; a non-finite scaled
gradient halves the scale and skips the step, as the Keras optimizer does. A float16 or
bfloat16 loss (a ``mixed_float16`` model) is cast to float32 first.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from typing import Any

import keras
import tensorflow as tf

from hodiff import _validate
from hodiff.training.monitor import GradientStats, gradient_stats, packed, write_summaries
from hodiff.training.transforms import Deferred, GradientTransform, all_finite, identity

__all__ = ["TrainStep", "full_precision", "unscale", "xla_reaches"]

_HALF = (tf.float16, tf.bfloat16)
_MONITORED = "monitored_gradients"  # the compiled step's output of the raw gradients, which GradientStats wraps


def full_precision(x: Any) -> tf.Tensor:
    """``x`` as a tensor, cast to float32 if it is float16 or bfloat16 (losses are summed in float32)."""
    x = tf.convert_to_tensor(x)
    return tf.cast(x, tf.float32) if x.dtype in _HALF else x


def unscale(grads: Sequence[Any], scale: Any) -> list:
    """Gradients of a scaled loss divided by ``scale``, in float32 at least (``None`` kept)."""

    def divide(g):
        wide = full_precision(g)
        return tf.cast(wide / tf.cast(scale, wide.dtype), g.dtype)

    return [None if g is None else divide(g) for g in grads]


class TrainStep(tf.Module):
    """A compiled training step for a Keras 3 model or a list of variables.

    Args:
      loss_fn: ``loss_fn(*batch) -> scalar``, the mean loss over the (local) batch; it uses the
        model or variables by closure.
      variables: a Keras model (its trainable variables are trained) or a list of variables.
      optimizer: a Keras 3 optimizer (create it under ``strategy.scope()`` when distributed). A
        ``keras.optimizers.LossScaleOptimizer`` turns on dynamic loss scaling (see the module
        docstring): the step applies the unscaled, transformed gradients through its inner
        optimizer and updates the scale itself.
      transform: a :mod:`hodiff.training.transforms` transform (e.g. a chain of skip_nonfinite,
        accumulate and clip_by_global_norm); default none.
      steps_per_call: training steps per call, looped inside the compiled graph.
      per_step_batches: when ``True``, every tensor of the batch has a leading axis of length
        ``steps_per_call`` and step ``i`` uses slice ``i``; otherwise each step reuses the batch.
      jit_compile: compile with XLA (default) or run as a plain ``tf.function``. With several
        logical CPU devices in one process (a test setup) XLA cannot read variables placed on
        another CPU device (tensorflow's XLA known issues), so there the replicas run uncompiled.
      strategy: a ``tf.distribute`` strategy; the batch passed to a call is the global batch and
        is split evenly over the replicas along its first (batch) axis.
      monitor: return :func:`hodiff.training.monitor.gradient_stats` of the raw (reduced) gradients, as a
        :class:`~hodiff.training.monitor.GradientStats`: the compiled step only returns the gradients, and the
        statistics are computed (one small compiled call) when first read, so a call whose statistics are not
        read costs about what ``monitor=False`` costs.
      summary_writer: write the statistics to TensorBoard after each call.
      gradients_fn: instead of differentiating ``loss_fn`` with one tape, compute
        ``(loss, gradients, extras)`` with this ``gradients_fn(*batch)`` (e.g. meta-gradients
        taken task by task); ``extras`` is a dict of scalars added to the outputs. Pass
        ``loss_fn=None`` then. With a ``LossScaleOptimizer``, return the gradients of
        :meth:`scale_loss` of the loss (and the loss itself unscaled); the step unscales them.

    Calling the step with a batch returns a dict of tensors from the last step of the call:
    ``loss`` (float32 for a half-precision loss), ``losses`` (one per step of the call),
    ``applied`` (the optimizer ran), what the transforms report (``global_norm`` of the clipping
    transforms, ``total_skips``, ...; the transforms after an ``accumulate`` run only on the call
    that applies, see :class:`hodiff.training.transforms.Deferred`, and report their value for zero
    gradients on the other calls: ``global_norm`` 0), ``loss_scale`` with a ``LossScaleOptimizer``, and with
    ``monitor`` the statistics of the unscaled gradients as a dict under ``gradient_stats``
    (so the monitor's ``global_norm``, before any transform, stays apart from the clipping
    transform's). A batch with zero examples is not a step: ``applied`` is ``False`` and
    nothing is updated or counted (its mean loss is NaN).

    Example:
      ```python
      import keras, numpy as np
      from hodiff.training import transforms
      from hodiff.training.step import TrainStep

      model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(8, activation="tanh"), keras.layers.Dense(1)])
      x, y = np.random.rand(64, 2).astype("float32"), np.random.rand(64, 1).astype("float32")
      loss_fn = lambda x, y: keras.ops.mean((model(x) - y) ** 2)
      step = TrainStep(loss_fn, model, keras.optimizers.Adam(1e-2),
                       transform=transforms.clip_by_global_norm(1.0), steps_per_call=10)
      out = step(x, y)
      assert out["losses"].shape == (10,) and bool(out["applied"])
      ```
    """

    def __init__(
        self,
        loss_fn: Callable[..., tf.Tensor] | None,
        variables: keras.Model | Sequence[Any],
        optimizer: keras.optimizers.Optimizer,
        transform: GradientTransform | None = None,
        steps_per_call: int = 1,
        per_step_batches: bool = False,
        jit_compile: bool = True,
        strategy: tf.distribute.Strategy | None = None,
        monitor: bool = True,
        summary_writer: tf.summary.SummaryWriter | None = None,
        gradients_fn: Callable[..., tuple] | None = None,
    ):
        super().__init__(name="train_step")
        caller = "TrainStep"
        if not isinstance(steps_per_call, int) or isinstance(steps_per_call, bool) or steps_per_call < 1:
            raise ValueError(f"{caller}: steps_per_call must be an int >= 1, got {steps_per_call!r}.")
        if transform is not None and not isinstance(transform, GradientTransform):
            raise TypeError(
                f"{caller}: transform must be a hodiff.training.transforms transform (e.g. "
                f"transforms.clip_by_global_norm(1.0)), got {type(transform).__name__}."
            )
        self.variables_ = list(variables.trainable_variables if isinstance(variables, keras.Model) else variables)
        if not self.variables_:
            raise ValueError(
                f"{caller}: there are no variables to train. A Keras model has no weights until it is built: call it "
                "once or give it a keras.Input."
            )
        if (loss_fn is None) == (gradients_fn is None):
            raise ValueError(
                f"{caller}: pass exactly one of loss_fn (differentiated with a tape) and gradients_fn (returns loss, "
                "gradients and extras)."
            )
        self.loss_fn: Any = loss_fn  # exactly one of the two is set
        self.gradients_fn = gradients_fn
        self.optimizer = optimizer
        self.loss_scaling = isinstance(optimizer, keras.optimizers.LossScaleOptimizer)
        self._updater = optimizer.inner_optimizer if self.loss_scaling else optimizer
        self.transform = transform or identity()
        self.steps_per_call = steps_per_call
        self.per_step_batches = per_step_batches
        self.strategy: Any = strategy  # None or a strategy; only the replicated path uses it
        self.monitor = monitor
        self.summary_writer = summary_writer
        self.jit_compile = jit_compile
        self._missing: list[bool] = []  # which variables had no gradient when the step was traced (monitor)
        self._shapes: list[tuple] = []  # the shapes of those that had one
        self._compiled_statistics: Callable[..., dict] | None = None
        with strategy.scope() if strategy else contextlib.nullcontext():
            optimizer.build(self.variables_)
            self.transform.build(self.variables_)
        if strategy is None:
            self._loss_and_grads = self._local_loss_and_grads
        else:
            self._loss_and_grads = self._replicated_loss_and_grads
            self._compiled_local = tf.function(
                self._local_loss_and_grads, jit_compile=jit_compile and xla_reaches(strategy), autograph=False
            )
        if strategy is None:
            self._compiled = tf.function(self._local_steps, jit_compile=jit_compile, autograph=False)
        else:
            self._compiled = tf.function(self._steps, autograph=False)
        self._signatures: dict = {}  # (dtype, shape) of each batch tensor -> caller of its concrete function

    def _local_steps(self, *batch: Any) -> dict[str, tf.Tensor]:
        return self._steps(batch, self._has_examples(batch))

    def _local_loss_and_grads(self, batch: tuple, index: tf.Tensor) -> tuple[tf.Tensor, list, dict]:
        if self.per_step_batches:
            batch = tf.nest.map_structure(lambda b: b[index], batch)
        if self.gradients_fn is not None:
            loss, grads, extras = self.gradients_fn(*batch)
            return full_precision(loss), _validate.densify(list(grads)), dict(extras)
        with tf.GradientTape() as tape:
            loss = full_precision(self.loss_fn(*batch))
            _validate.check_scalar(loss, "TrainStep: loss_fn")
            scaled = self.scale_loss(loss)
        return loss, _validate.densify(tape.gradient(scaled, self.variables_)), {}

    @property
    def loss_scale(self) -> tf.Tensor | None:
        """The current dynamic loss scale (a float32 tensor), or ``None`` without loss scaling."""
        return tf.identity(tf.convert_to_tensor(self.optimizer.dynamic_scale)) if self.loss_scaling else None

    def scale_loss(self, loss: Any) -> tf.Tensor:
        """``loss`` (cast to float32 if half precision) times the current dynamic loss scale.

        Without a ``LossScaleOptimizer`` the scale is 1 and the loss is returned as it is. A
        ``gradients_fn`` differentiates this, not the loss, when loss scaling is on.
        """
        loss = full_precision(loss)
        scale = self.loss_scale
        return loss if scale is None else loss * tf.cast(scale, loss.dtype)

    def _unscale(self, grads: list) -> tuple[list, dict]:
        """Gradients divided by the loss scale, and the scale for the outputs; identity without
        loss scaling."""
        scale = self.loss_scale
        if scale is None:
            return grads, {}
        return unscale(grads, scale), {"loss_scale": scale}

    def _update_loss_scale(self, finite: tf.Tensor, has_examples: tf.Tensor) -> None:
        """Keras's dynamic loss-scale rule: a non-finite gradient halves the scale; after
        ``dynamic_growth_steps`` finite ones in a row it doubles. An empty batch changes nothing."""
        optimizer = self.optimizer
        counter, scale = optimizer.step_counter, optimizer.dynamic_scale
        count = tf.convert_to_tensor(counter)
        grow = tf.logical_and(finite, count >= optimizer.dynamic_growth_steps - 1)
        factor = tf.where(has_examples, tf.where(grow, 2.0, tf.where(finite, 1.0, 0.5)), 1.0)
        scale.assign(tf.convert_to_tensor(scale) * tf.cast(factor, scale.dtype))
        counted = tf.where(tf.logical_and(finite, tf.logical_not(grow)), count + 1, tf.zeros_like(count))
        counter.assign(tf.where(has_examples, counted, count))

    def _replicated_loss_and_grads(self, batch: Any, index: tf.Tensor) -> tuple[tf.Tensor, list, dict]:
        """Per-replica gradients (XLA-compiled), then their mean over replicas.

        The mean and everything after it run in cross-replica context: merge_call (which Keras
        optimizers use) is not allowed inside XLA or tf.cond on CPU replicas.
        """
        loss, grads, extras = self.strategy.run(self._compiled_local, args=(batch, index))
        mean = lambda value: self.strategy.reduce(tf.distribute.ReduceOp.MEAN, value, axis=None)
        return mean(loss), [None if g is None else mean(g) for g in grads], {k: mean(v) for k, v in extras.items()}

    def _one_step(self, batch: Any, index: tf.Tensor, has_examples: Any) -> dict[str, tf.Tensor]:
        loss, grads, extras = self._loss_and_grads(batch, index)
        grads, scale_info = self._unscale(grads)
        finite = None  # whether every gradient is finite, where that is known without another pass
        stats = {}
        if self.monitor:  # the raw gradients out, their statistics computed when read (GradientStats)
            self._missing = [g is None for g in grads]
            present = [g for g in grads if g is not None]
            self._shapes = [tuple(g.shape) for g in present]
            stats = {_MONITORED: packed(present)}
        if self.loss_scaling:
            finite = all_finite(grads)
        # Transforms ignore calls with apply=False: an overflow of the scaled gradient and an
        # empty batch are neither counted as skips nor accumulated.
        usable = finite if self.loss_scaling else True
        deferred = self.transform.split(grads, self.variables_, apply=_both(usable, has_examples), finite=finite)
        applied, late_info = self._apply(deferred)
        if self.loss_scaling:
            self._update_loss_scale(finite, has_examples)
        return {"loss": loss, "applied": applied, **extras, **deferred.info, **late_info, **scale_info, **stats}

    def _apply(self, deferred: Deferred) -> tuple[tf.Tensor, dict]:
        """Runs the transforms' per-update work and the optimizer, both only when the step applies.

        One ``tf.cond`` (none when the step always applies). On a call that does not apply the
        per-update work runs on zero gradients instead, for the structure of what it reports
        (e.g. ``global_norm`` 0).
        """

        def optimize(grads: list) -> tf.Tensor:
            self._updater.apply_gradients([(g, v) for g, v in zip(grads, self.variables_) if g is not None])
            return tf.constant(True)

        def update() -> tuple[tf.Tensor, dict]:
            if deferred.then is None:
                return optimize(deferred.grads), {}
            final = deferred.then(deferred.grads)
            if tf.get_static_value(final.apply) is True:  # the stateless transforms keep apply: no second cond
                return optimize(final.grads), final.info
            return tf.cond(final.apply, lambda: optimize(final.grads), lambda: tf.constant(False)), final.info

        def idle() -> tuple[tf.Tensor, dict]:
            if deferred.then is None:
                return tf.constant(False), {}
            zeros = [None if g is None else tf.zeros_like(g) for g in deferred.grads]
            return tf.constant(False), deferred.then(zeros).info

        if tf.get_static_value(deferred.apply) is True:
            return update()
        return tf.cond(deferred.apply, update, idle)

    def _steps(self, batch: Any, has_examples: Any) -> dict[str, tf.Tensor]:
        outputs = self._one_step(batch, tf.constant(0), has_examples)
        if self.steps_per_call == 1:  # no (empty) loop in the graph: XLA would still carry every variable through it
            return {**outputs, "losses": outputs["loss"][None]}
        losses = tf.TensorArray(outputs["loss"].dtype, size=self.steps_per_call).write(0, outputs["loss"])

        def body(i: tf.Tensor, outputs: dict, losses: tf.TensorArray) -> tuple:
            outputs = self._one_step(batch, i, has_examples)
            return i + 1, outputs, losses.write(i, outputs["loss"])

        _, outputs, losses = tf.while_loop(
            lambda i, *_: i < self.steps_per_call, body, (tf.constant(1), outputs, losses), parallel_iterations=1
        )
        return {**outputs, "losses": losses.stack()}

    def _distribute(self, batch: tuple) -> Any:
        replicas = self.strategy.num_replicas_in_sync
        axis = 1 if self.per_step_batches else 0
        for leaf in tf.nest.flatten(batch):
            if leaf.shape[axis] % replicas:
                raise ValueError(
                    f"TrainStep: the global batch of {leaf.shape[axis]} examples (axis {axis} of a "
                    f"tensor of shape {tuple(leaf.shape)}) does not split evenly over "
                    f"{replicas} replicas; use a batch size that is a multiple of {replicas}."
                )

        def local_part(context):
            def part(leaf):
                size = leaf.shape[axis] // replicas
                start = context.replica_id_in_sync_group * size
                return leaf[:, start : start + size] if axis else leaf[start : start + size]

            return tf.nest.map_structure(part, batch)

        return self.strategy.experimental_distribute_values_from_function(local_part)

    def __call__(self, *batch: Any) -> dict[str, tf.Tensor]:
        batch = tuple(b if isinstance(b, tf.Tensor) else tf.nest.map_structure(tf.convert_to_tensor, b) for b in batch)
        if self.per_step_batches:
            for leaf in tf.nest.flatten(batch):
                if leaf.shape.rank == 0 or leaf.shape[0] != self.steps_per_call:
                    raise ValueError(
                        f"TrainStep: per_step_batches=True needs every batch tensor to have a leading "
                        f"axis of length steps_per_call={self.steps_per_call}; got shape {tuple(leaf.shape)}."
                    )
        if self.strategy is None:
            outputs = self._call_local(batch)
        else:
            outputs = self._compiled(self._distribute(batch), self._has_examples(batch))
        if self.monitor:
            outputs = dict(outputs)
            outputs["gradient_stats"] = GradientStats(
                gradients=outputs.pop(_MONITORED), missing=self._missing, compute=self._statistics, shapes=self._shapes
            )
        if self.summary_writer is not None and self.monitor:
            step = int(self.optimizer.iterations.numpy())  # int() of a distributed variable fails
            write_summaries(outputs["gradient_stats"], step, self.summary_writer, self.variables_)
        return outputs

    def _statistics(self, grads: list) -> dict[str, tf.Tensor]:
        """:func:`gradient_stats` of a call's gradients: one compiled call for eager tensors (traced once per shape),
        the ops themselves in a graph (a step called inside the user's ``tf.function``)."""
        present = [g for g in grads if g is not None]
        if not tf.executing_eagerly():
            return gradient_stats(grads)
        if self._compiled_statistics is None:
            missing = [g is None for g in grads]

            def statistics(*present: tf.Tensor) -> dict[str, tf.Tensor]:
                values = iter(present)
                return gradient_stats([None if m else next(values) for m in missing])

            self._compiled_statistics = tf.function(statistics, jit_compile=self.jit_compile, autograph=False)
        return self._compiled_statistics(*present)

    def _call_local(self, batch: tuple) -> dict[str, tf.Tensor]:
        """The compiled step on a batch. Called eagerly with tensors, the concrete function for
        their dtypes and shapes is looked up in a dict and called with its flat inputs
        (:func:`_flat_caller`): tf.function's own dispatch (argument binding, a trace type per
        argument, the cache lookup) and the concrete function's (binding again) cost as much as
        the whole step of a small model."""
        eager_tensors = all(isinstance(b, tf.Tensor) for b in batch) and tf.executing_eagerly()
        if not eager_tensors or tf.config.functions_run_eagerly():
            return self._compiled(*batch)
        signature = tuple((b.dtype, tuple(b.shape)) for b in batch)
        caller = self._signatures.get(signature)
        if caller is None:
            caller = self._signatures[signature] = _flat_caller(self._compiled.get_concrete_function(*batch))
        return caller(batch)

    def _has_examples(self, batch: Any) -> bool | tf.Tensor:
        """False when a batch tensor has zero examples (along its batch axis): a Python bool when
        the shapes are known, else computed in the graph."""
        axis = 1 if self.per_step_batches else 0
        leaves = [leaf for leaf in tf.nest.flatten(batch) if leaf.shape.rank is None or leaf.shape.rank > axis]
        sizes = [leaf.shape[axis] if leaf.shape.rank is not None else None for leaf in leaves]
        if any(size == 0 for size in sizes) or all(size is not None for size in sizes):
            return all(sizes)
        return tf.reduce_all([tf.shape(leaf)[axis] > 0 for leaf in leaves])


def _flat_caller(concrete: Any) -> Callable[[tuple], Any]:
    """``caller(batch)``: ``concrete(*batch)`` for eager tensors of exactly the traced dtypes and
    shapes, as one call of the runtime's function op.

    Where no tape or forward accumulator watches the inputs, ``ConcreteFunction.__call__`` binds
    the arguments to its signature, flattens them, appends the captured variables, runs the
    function op and packs its outputs; the caller does the last three only (the dict lookup in
    :meth:`TrainStep._call_local` has matched dtypes and shapes already): for an XLA function of
    20 variables the binding cost as much as the function op itself (docs/benchmarks.md, Meta
    section). Under a tape, for outputs
    other than plain tensors, or on a TensorFlow without these (private) entry points, it is
    ``concrete(*batch)``.
    """
    fallback = lambda batch: concrete(*batch)
    inference = getattr(concrete, "_inference_function", None)
    watched, run = _tape_watch_check(), _function_runner(inference)
    structure = getattr(concrete, "structured_outputs", None)
    leaves = tf.nest.flatten(structure)
    outputs = getattr(getattr(inference, "function_type", None), "flat_outputs", None)
    if watched is None or run is None or outputs is None or len(outputs) != len(leaves):
        return fallback
    if not all(isinstance(leaf, tf.Tensor) and leaf.dtype not in (tf.resource, tf.variant) for leaf in leaves):
        return fallback

    def caller(batch: tuple) -> Any:
        inputs = [*batch, *concrete.captured_inputs]
        if watched(inputs):
            return concrete(*batch)
        return tf.nest.pack_sequence_as(structure, run(inputs, len(leaves)))

    return caller


def _function_runner(inference: Any) -> Callable[[list, int], list] | None:
    """``run(inputs, outputs)``: the eager runtime's call of a traced function by name (what
    ``AtomicFunction.call_flat`` does eagerly), or ``None`` where TensorFlow's private entry
    point is missing."""
    try:
        from tensorflow.python.eager import context
    except ImportError:  # pragma: no cover - a TensorFlow without the module
        return None
    name = getattr(inference, "name", None)
    call_function = getattr(context.context(), "call_function", None)
    if name is None or call_function is None:
        return None
    return lambda inputs, outputs: call_function(name, inputs, outputs)


def _tape_watch_check() -> Callable[[list], bool] | None:
    """``watched(tensors)``: whether a tape is active or a tape or forward accumulator watches the
    tensors (then a function call goes through ``ConcreteFunction.__call__``, which records the
    call and the variables it reads), or ``None`` where TensorFlow's private entry points are
    missing."""
    try:
        from tensorflow.python.eager import record
        from tensorflow.python.ops import gradients_util
    except ImportError:  # pragma: no cover - a TensorFlow without the modules
        return None
    active = getattr(record, "could_possibly_record", None)
    possible = getattr(gradients_util, "PossibleTapeGradientTypes", None)
    none = getattr(gradients_util, "POSSIBLE_GRADIENT_TYPES_NONE", None)
    if active is None or possible is None or none is None:  # pragma: no cover
        return None
    return lambda tensors: active() or possible(tensors) != none


def _both(a: tf.Tensor | bool, b: tf.Tensor | bool) -> tf.Tensor:
    """``a and b`` as a bool tensor, a constant when both are known (so a step that always applies
    needs no ``tf.cond``)."""
    known_a, known_b = tf.get_static_value(a), tf.get_static_value(b)
    if known_a is not None and known_b is not None:
        return tf.constant(bool(known_a) and bool(known_b))
    if known_a is not None:
        return tf.convert_to_tensor(b, tf.bool) if known_a else tf.constant(False)
    if known_b is not None:
        return tf.convert_to_tensor(a, tf.bool) if known_b else tf.constant(False)
    return tf.logical_and(a, b)


def xla_reaches(strategy: tf.distribute.Strategy) -> bool:
    """Whether an XLA-compiled replica function can read the strategy's variables: not with
    several logical CPU devices in one process (XLA cannot read a variable placed on another
    CPU device), yes on GPUs and with one device per worker."""
    devices = strategy.extended.worker_devices
    return len(devices) == 1 or not any("CPU" in device.upper() for device in devices)
