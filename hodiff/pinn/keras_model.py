"""A PINN as a ``keras.Model``: ``fit`` trains on the problem's points, with Keras callbacks.

:class:`PINNModel` wraps a network and a problem's :class:`~hodiff.pinn.TrainingData`. Its loss is
the one :class:`~hodiff.pinn.Trainer` minimises, :meth:`TrainingData.loss
<hodiff.pinn.TrainingData.loss>`; the data's variables (points, loss weights, the unknown
parameters of an inverse problem) are weights of the model. ``fit`` needs no data: every step trains on the whole point
set (held in non-trainable weights, so checkpoints carry them), an epoch is ``steps_per_epoch``
steps, and the logs hold the loss and every loss term (means over the epoch's steps, as Keras
metrics are) and the current value of every parameter. ``validation_data=(points, values)``
adds ``val_reference_error``, the relative L2 error against reference values, after each
epoch. So ``EarlyStopping``, ``ModelCheckpoint``, ``BackupAndRestore``, ``CSVLogger``,
``TensorBoard``, ``ReduceLROnPlateau`` and any ``keras.callbacks.Callback`` work as usual.
The trainer's callbacks that redraw points or move loss weights (:class:`~hodiff.pinn.UniformResampling`,
:class:`~hodiff.pinn.ResidualResampling`, :class:`~hodiff.pinn.AdaptiveWeights`,
:class:`~hodiff.pinn.GradNormWeights`) go in ``fit``'s ``callbacks`` as they are: one epoch is one of their chunks.

Example:
  ```python
  import keras
  import numpy as np
  from hodiff import pinn

  domain = pinn.Interval("x", 0.0, 1.0)
  problem = pinn.Problem(domain, needs=("u_xx",), residual=lambda d, x, p: d["u_xx"] + 1.0,
                         conditions=[pinn.Dirichlet(0.0, count=2)])
  model = pinn.PINNModel(problem, pinn.mlp(domain, width=8, depth=2), interior=32)
  model.compile(optimizer=keras.optimizers.Adam(1e-2))
  x = np.linspace(0.0, 1.0, 11)[:, None]
  history = model.fit(epochs=3, steps_per_epoch=20, validation_data=(x, 0.5 * x * (1 - x)), verbose=0)
  assert set(history.history) == {"loss", "residual", "boundary", "val_reference_error"}
  assert history.history["loss"][-1] < history.history["loss"][0]
  ```
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import keras
import numpy as np
import tensorflow as tf

from hodiff import _validate
from hodiff.pinn.callbacks import EVERY_CHUNKS, Callback
from hodiff.pinn.data import TrainingData
from hodiff.pinn.geometry import warn_outside
from hodiff.pinn.problem import Problem
from hodiff.training.step import full_precision

__all__ = ["PINNModel", "ReferenceErrorMetric"]


class ReferenceErrorMetric(keras.metrics.Metric):
    """The relative L2 error ``||prediction - reference|| / ||reference||`` over all batches seen.

    The streaming (in-graph) form of :func:`hodiff.pinn.metrics.relative_l2_errors`' combined
    error: it sums the squared errors and the squared references separately, so the result is
    the error over the whole reference set however it is batched (a mean of per-batch ratios
    would not be). ``values`` of shape ``(N,)`` are compared with a one-column prediction.
    """

    def __init__(self, name: str = "reference_error", dtype: Any = None):
        super().__init__(name=name, dtype=dtype)
        self.squared_error = self.add_variable(shape=(), initializer="zeros", dtype=self.dtype, name="squared_error")
        self.squared_reference = self.add_variable(
            shape=(), initializer="zeros", dtype=self.dtype, name="squared_reference"
        )

    def update_state(self, y_true: Any, y_pred: Any, sample_weight: Any = None) -> None:
        y_pred = tf.cast(y_pred, self.dtype)
        y_true = tf.reshape(tf.cast(y_true, self.dtype), tf.shape(y_pred))
        self.squared_error.assign_add(tf.reduce_sum(tf.square(y_pred - y_true)))
        self.squared_reference.assign_add(tf.reduce_sum(tf.square(y_true)))

    def result(self) -> tf.Tensor:
        return tf.sqrt(tf.math.divide_no_nan(self.squared_error, self.squared_reference))


class PINNModel(keras.Model):
    """A Keras model of a PINN whose ``fit`` minimises the problem's loss at its points.

    Calling the model (``model(x)``, ``model.predict(x)``) gives the solution at points ``(N, d)``,
    output transform applied. ``compile`` takes the optimizer (``loss`` and ``metrics`` are the
    problem's own; ``jit_compile`` and ``steps_per_execution`` work as for any Keras model).

    Args:
      problem: a :class:`~hodiff.pinn.TrainingData`, or the PDE problem (then the data is
        ``TrainingData(problem, interior, sampling, seed)``). The points equal the
        :class:`~hodiff.pinn.Trainer`'s for the same data; the stochastic draws of
        :class:`~hodiff.pinn.Stochastic` needs and fresh points depend on the seed and the
        optimizer's step count only (a run resumed by ``BackupAndRestore`` draws as the
        uninterrupted one).
      network: a built Keras model mapping ``(N, d)`` points to ``(N, len(problem.fields))``
        (e.g. :func:`~hodiff.pinn.mlp`); its weights are the model's.
      interior: number of interior (collocation) points (with a problem).
      sampling: ``"sobol"``, ``"lhs"`` or ``"random"`` for all point sets (with a problem).
      seed: seeds the point sets and the draws (with a problem).
      name: the Keras model name.

    Attributes:
      data: the :class:`~hodiff.pinn.TrainingData`, built with the model's weights as its variables.
      network: the wrapped network.
      parameters: ``{name: Keras variable}``, the unknown parameters (trainable weights).
      points: the point sets, ``{"interior": variable, condition name: {key: variable}}``.
      term_weights: ``{term: non-trainable variable}``, the loss weights (``problem.weights``).
    """

    def __init__(
        self,
        problem: Problem | TrainingData,
        network: keras.Model,
        interior: int = 8192,
        sampling: str = "sobol",
        seed: int = 0,
        name: str | None = None,
    ):
        if isinstance(problem, TrainingData):
            data = problem
        elif isinstance(problem, Problem):
            _validate.check_count(interior, "interior", "PINNModel")
            data = TrainingData(problem, interior, sampling, seed)
        else:
            raise TypeError(
                f"PINNModel: problem must be a hodiff.pinn.Problem or TrainingData, got {type(problem).__name__}."
            )
        if not isinstance(network, keras.Model) or not network.built or not network.weights:
            raise ValueError(
                "PINNModel: network must be a built Keras model with weights; give it a keras.Input(shape=(d,)) or "
                "build it with hodiff.pinn.mlp(domain, ...)."
            )
        problem = data.problem
        dtype = tf.as_dtype(network.weights[0].dtype)
        super().__init__(name=name, dtype=dtype.name)  # call() must not cast float64 points down
        self.problem, self.network, self.data = problem, network, data
        self.sampling, self.seed, self.interior_count = data.sampling, data.seed, data.interior_count
        clashes = set(problem.parameters) & {"loss", "reference_error", *problem.term_names}
        if clashes:
            raise ValueError(
                f"PINNModel: parameters {sorted(clashes)} have the name of a loss term or metric, so the logs "
                f"could not tell them apart; rename the parameters."
            )
        data.build(network, add_weight=self._add_weight)  # the points and weights are the model's weights
        self._solution = data.solution
        self.parameters, self.points, self.term_weights = data.parameters, data.points, data.weights
        # metrics in the network's precision (Keras metrics are float32 by default)
        wide = tf.float32 if dtype in (tf.float16, tf.bfloat16) else dtype
        self.loss_tracker = keras.metrics.Mean(name="loss", dtype=wide.name)
        self.term_trackers = {term: keras.metrics.Mean(name=term, dtype=wide.name) for term in problem.term_names}
        self.reference_error = ReferenceErrorMetric(dtype=wide.name)
        self.built = True

    def _add_weight(self, value: Any, name: str, trainable: bool) -> keras.Variable:
        """A model weight holding ``value`` (the data's variables: parameters, points, loss weights)."""
        array = np.asarray(value)
        dtype = tf.as_dtype(self.network.weights[0].dtype)
        return self.add_weight(
            shape=array.shape,
            dtype=dtype.name,
            initializer=keras.initializers.Constant(array.astype(dtype.as_numpy_dtype)),
            name=name,
            trainable=trainable,
        )

    def get_config(self) -> dict[str, Any]:
        raise NotImplementedError(
            "PINNModel: holds a Problem (Python functions), so it cannot be saved as a whole .keras model. Save its "
            "weights (model.save_weights('run.weights.h5'), ModelCheckpoint(..., save_weights_only=True)) and load "
            "them into a PINNModel built the same way, or save the solution alone with "
            "hodiff.pinn.save_solution(path, problem, model.network)."
        )

    @property
    def metrics(self) -> list[keras.metrics.Metric]:
        return [self.loss_tracker, *self.term_trackers.values(), self.reference_error]

    def call(self, inputs: Any) -> tf.Tensor:
        return self._solution(inputs)

    def physics_loss(self, step: Any = 0, unbiased: bool | None = None) -> tuple[tf.Tensor, dict[str, tf.Tensor]]:
        """The weighted loss and its terms at the current weights and points: :meth:`TrainingData.loss
        <hodiff.pinn.TrainingData.loss>`, the sum the :class:`~hodiff.pinn.Trainer` minimises.

        Args:
          step: the training step, which picks the draw of :class:`~hodiff.pinn.Stochastic` needs.
          unbiased: ``False`` for the L-BFGS objective of a stochastic problem (one draw squared).

        Returns:
          ``(loss, {term: value})``, scalar tensors.
        """
        return self.data.loss(step, frozen=unbiased is False, precision=full_precision)

    def _logs(self) -> dict[str, tf.Tensor]:
        logs = {"loss": self.loss_tracker.result()}
        logs.update({term: tracker.result() for term, tracker in self.term_trackers.items()})
        logs.update({key: tf.identity(value) for key, value in self.parameters.items()})
        return logs

    def _track(self, loss: tf.Tensor, terms: dict[str, tf.Tensor]) -> None:
        self.loss_tracker.update_state(loss)
        for term, value in terms.items():
            self.term_trackers[term].update_state(value)

    def train_step(self, data: Any) -> dict[str, tf.Tensor]:
        """One optimizer step on the whole point set (``data`` is a placeholder and unused)."""
        with tf.GradientTape() as tape:
            loss, terms = self.physics_loss(self.optimizer.iterations)
            scaled = self.optimizer.scale_loss(loss)
        variables = self.trainable_variables
        self.optimizer.apply_gradients(zip(tape.gradient(scaled, variables), variables))
        self._track(loss, terms)
        return self._logs()

    def test_step(self, data: Any) -> dict[str, tf.Tensor]:
        """With ``(points, values)``: the reference error; with the placeholder: the loss terms."""
        x, y, _ = keras.utils.unpack_x_y_sample_weight(data)
        if y is None:
            loss, terms = self.physics_loss(self.optimizer.iterations if self.optimizer is not None else 0)
            self._track(loss, terms)
            return self._logs()
        self.reference_error.update_state(y, self(x))
        return {self.reference_error.name: self.reference_error.result()}

    def compile(self, optimizer: Any = "adam", **kwargs: Any) -> None:
        """Keras's ``compile`` (``optimizer``, ``jit_compile``, ``steps_per_execution``, ...); the
        optimizer is built at once, so ``load_weights`` of a checkpoint restores its state too.
        ``loss`` and ``metrics`` are the problem's and cannot be given."""
        for key in ("loss", "metrics", "loss_weights", "weighted_metrics"):
            if kwargs.get(key) is not None:
                raise ValueError(
                    f"PINNModel.compile: {key} is the problem's (its loss terms and weights); leave {key} out and set "
                    f"the loss weights with Problem(weights=...)."
                )
        super().compile(optimizer=optimizer, **kwargs)
        if not self.optimizer.built:
            self.optimizer.build(self.trainable_variables)

    def fit(
        self,
        x: Any = None,
        y: Any = None,
        epochs: int = 1,
        steps_per_epoch: int = 100,
        validation_data: Any = None,
        validation_batch_size: int | None = None,
        **kwargs: Any,
    ) -> keras.callbacks.History:
        """Trains for ``epochs`` epochs of ``steps_per_epoch`` steps on the problem's points.

        Args:
          x: must be ``None``: the model trains on its own points.
          y: must be ``None``, as ``x``.
          epochs: the epoch to stop at (as in Keras: with ``initial_epoch`` or a restored
            ``BackupAndRestore`` backup, training continues up to this epoch).
          steps_per_epoch: optimizer steps per epoch (callbacks and logs come once per epoch).
          validation_data: ``(points, values)``: reference values at points ``(N, d)``, ``(N,)``
            for one field or ``(N, fields)``; logged as ``val_reference_error`` after each epoch.
          validation_batch_size: points per batch for the reference error (default all at once).
          **kwargs: any other argument of ``keras.Model.fit`` (``callbacks``, ``verbose``,
            ``initial_epoch``, ``validation_freq``). ``callbacks`` may mix Keras callbacks with the trainer's
            (:class:`~hodiff.pinn.callbacks.Callback`: resampling, adaptive weights), called once an epoch.

        Returns:
          The Keras ``History``.
        """
        if x is not None or y is not None:
            raise ValueError(
                "PINNModel.fit: trains on the problem's points, so x and y must be None; pass reference values as "
                "validation_data=(points, values) to log the error against them."
            )
        for key in ("batch_size", "validation_split", "shuffle", "class_weight", "sample_weight", "validation_steps"):
            if key in kwargs:
                raise ValueError(f"PINNModel.fit: {key} does not apply (there is no dataset); leave it out.")
        _validate.check_count(steps_per_epoch, "steps_per_epoch", "PINNModel.fit")
        if validation_data is not None:
            points, values = validation_data
            validation_data = self._reference_dataset(points, values, validation_batch_size, "PINNModel.fit")
        kwargs["callbacks"] = _bridged(list(kwargs.get("callbacks") or []), steps_per_epoch)
        steps = tf.data.Dataset.from_tensors(tf.constant(0, tf.int64)).repeat()
        return super().fit(
            steps,
            epochs=epochs,
            steps_per_epoch=steps_per_epoch,
            validation_data=validation_data,
            shuffle=False,
            **kwargs,
        )

    def evaluate(self, x: Any = None, y: Any = None, **kwargs: Any) -> Any:
        """With no arguments: the loss and its terms at the current weights (``return_dict=True``
        for a dict); with ``(points, values)``: ``reference_error`` (all points in one batch unless
        ``batch_size`` is given)."""
        if x is None and y is None:
            kwargs.setdefault("steps", 1)
            return super().evaluate(tf.data.Dataset.from_tensors(tf.constant(0, tf.int64)), **kwargs)
        if isinstance(x, tf.data.Dataset):  # fit's validation, already batched by fit
            return super().evaluate(x, y, **kwargs)
        reference = self._reference_dataset(x, y, kwargs.pop("batch_size", None), "PINNModel.evaluate")
        return super().evaluate(reference, **kwargs)

    def _reference_dataset(self, points: Any, values: Any, batch_size: int | None, caller: str) -> tf.data.Dataset:
        """``(points, values)`` batched, in the model's precision (Keras would cast arrays to float32)."""
        dtype = self.dtype_policy.compute_dtype
        points, values = np.asarray(points, dtype=dtype), np.asarray(values, dtype=dtype)
        if points.ndim != 2 or values.ndim not in (1, 2) or len(values) != len(points):
            raise ValueError(
                f"{caller}: the reference must be (points (N, d), values (N,) or (N, fields)); got shapes "
                f"{points.shape} and {values.shape}."
            )
        return tf.data.Dataset.from_tensor_slices((points, values)).batch(batch_size or len(points))

    def predict(self, x: Any, batch_size: int | None = None, **kwargs: Any) -> Any:
        """The solution at points ``x`` ``(N, d)``, computed in the model's precision (Keras would cast a
        float64 array to float32), ``batch_size`` points at a time (default up to 65536). Points with
        the wrong number of columns are refused; points outside the domain get a warning
        (:func:`hodiff.pinn.geometry.warn_outside`)."""
        if isinstance(x, tf.data.Dataset):
            return super().predict(x, **kwargs)
        points = _validate.check_point_array(x, self.problem.domain.coords, "PINNModel.predict")
        warn_outside(self.problem.domain, points, "PINNModel.predict")
        points = np.asarray(points, dtype=self.dtype_policy.compute_dtype)
        dataset = tf.data.Dataset.from_tensor_slices(points).batch(batch_size or min(len(points), 65536) or 1)
        return super().predict(dataset, **kwargs)

    def resample(self, seed: int) -> None:
        """Draws new point sets with ``seed`` (same counts and method), as :meth:`Problem.sample_points
        <hodiff.pinn.Problem.sample_points>` does; conditions with fixed points keep them."""
        self.data.redraw(seed)


def _bridged(callbacks: list, steps_per_epoch: int) -> list:
    """``callbacks`` with the trainer's (:class:`~hodiff.pinn.callbacks.Callback`) replaced by one Keras callback
    that calls them; those that read history rows (``metrics``, ``on_log``) are refused."""
    ours = [callback for callback in callbacks if isinstance(callback, Callback)]
    for callback in ours:
        name = type(callback).__name__
        if type(callback).metrics is not Callback.metrics or type(callback).on_log is not Callback.on_log:
            raise ValueError(
                f"PINNModel.fit: {name} reads the trainer's history rows (metrics / on_log), which fit does not keep; "
                "use its Keras equivalent (keras.callbacks.EarlyStopping, validation_data=(points, values) for the "
                "reference error) or train with pinn.Trainer."
            )
        if isinstance(callback, EVERY_CHUNKS) and callback.every % steps_per_epoch:
            raise ValueError(
                f"PINNModel.fit: {name}.every={callback.every} must be a multiple of steps_per_epoch="
                f"{steps_per_epoch} (it acts between epochs); change one of them."
            )
    keras_callbacks = [callback for callback in callbacks if not isinstance(callback, Callback)]
    return keras_callbacks + ([_TrainerCallbacks(ours)] if ours else [])


class _TrainerCallbacks(keras.callbacks.Callback):
    """The trainer's callbacks in ``fit``: an epoch is a chunk, ``fit`` one ``"adam"`` phase, the model the
    trainer (it has the ``data``). The step is the optimizer's, so a run resumed by ``BackupAndRestore`` acts as
    the uninterrupted one."""

    def __init__(self, callbacks: list[Callback]):
        super().__init__()
        self.callbacks = callbacks

    def _step(self) -> int:
        return int(self.model.optimizer.iterations.numpy())

    def on_train_begin(self, logs: Mapping | None = None) -> None:
        for callback in self.callbacks:
            callback.on_phase_begin(self.model, "adam")

    def on_epoch_begin(self, epoch: int, logs: Mapping | None = None) -> None:
        for callback in self.callbacks:
            callback.on_chunk_begin(self.model, self._step())

    def on_epoch_end(self, epoch: int, logs: Mapping | None = None) -> None:
        for callback in self.callbacks:
            callback.on_chunk_end(self.model, self._step())

    def on_train_end(self, logs: Mapping | None = None) -> None:
        for callback in self.callbacks:
            callback.on_phase_end(self.model, "adam", self.model.history)
