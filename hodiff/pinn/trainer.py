"""Trains a PINN: compiled Adam loops, then L-BFGS through scipy, with checkpoints and logs.

The Adam phase runs as :class:`hodiff.TrainStep` calls of ``steps_per_call`` steps each,
compiled with XLA. The L-BFGS phase hands the flattened weights (float64) to
``scipy.optimize.minimize(method="L-BFGS-B")`` with an XLA-compiled value-and-gradient, logs
every ``log_every`` iterations and prints why it stopped. Options: adaptive loss weights
(learning-rate annealing) and residual-based adaptive resampling (RAD). Every
``checkpoint_every`` steps the state goes to a ``tf.train.Checkpoint``; ``resume=True`` picks
it up so that a killed run ends with the same weights as an uninterrupted one.
"""

from __future__ import annotations

import csv
import dataclasses
import os
import time
from typing import Any

import keras
import numpy as np
import scipy.optimize
import tensorflow as tf
from tqdm.auto import tqdm

from hodiff import _validate
from hodiff.pinn.problem import Problem
from hodiff.step import TrainStep

__all__ = ["Trainer", "AdaptiveWeights", "Resampling", "CausalWeights"]


@dataclasses.dataclass
class AdaptiveWeights:
    """Learning-rate annealing of the loss weights (Wang, Teng & Perdikaris 2021, Algorithm 1).

    Every ``every`` Adam steps, each condition term's weight moves towards
    ``max |grad residual loss| / mean |grad term loss|`` (gradients w.r.t. the network
    weights): ``w <- (1 - alpha) w + alpha * that``. The residual's weight stays 1.

    References:
      Wang, Teng & Perdikaris (2021), "Understanding and mitigating gradient flow pathologies
      in physics-informed neural networks", SIAM J. Sci. Comput.
    """

    every: int = 100
    alpha: float = 0.1


@dataclasses.dataclass
class Resampling:
    """Residual-based adaptive distribution (RAD) of the interior points (Wu et al. 2023).

    Every ``every`` Adam steps, ``candidates`` random points are scored with
    ``|r|^k / mean(|r|^k) + c`` and the interior points are redrawn from that density.

    References:
      Wu, Zhu, Tan, Kartha & Lu (2023), "A comprehensive study of non-adaptive and
      residual-based adaptive sampling for physics-informed neural networks", CMAME.
    """

    every: int = 1000
    candidates: int = 100_000
    k: float = 1.0
    c: float = 1.0


@dataclasses.dataclass
class CausalWeights:
    """Causal training for time-dependent problems (Wang, Sankaran & Perdikaris 2024).

    The interior points are grouped into ``bins`` time slices; slice ``i``'s mean squared
    residual ``L_i`` is weighted by ``exp(-epsilon * sum_{k<i} L_k)`` (held constant in the
    gradient), so later times are fitted only once earlier times are. It keeps a PINN from
    settling on a solution that ignores the initial condition (Allen-Cahn's unstable u = 0).

    References:
      Wang, Sankaran & Perdikaris (2024), "Respecting causality for training physics-informed
      neural networks", CMAME 421.
    """

    epsilon: float = 1.0
    bins: int = 32


def _check_every(value: int, steps_per_call: int, name: str) -> None:
    if not isinstance(value, int) or value < 1 or value % steps_per_call:
        raise ValueError(f"Trainer: {name}={value!r} must be a positive multiple of steps_per_call={steps_per_call} (events happen between compiled calls).")


class Trainer:
    """Fits a Keras model to a :class:`~hodiff.pinn.Problem`.

    Args:
      problem: the PDE problem.
      model: a Keras model mapping ``(N, d)`` points to ``(N, len(problem.fields))``.
      interior: number of interior (collocation) points.
      sampling: ``"sobol"``, ``"lhs"`` or ``"random"`` for all point sets.
      seed: seeds the point sets and the resampling.
      learning_rate: Adam learning rate (a float or a Keras schedule).
      steps_per_call: Adam steps per compiled call.
      log_every: Adam steps (and L-BFGS iterations) between history rows.
      checkpoint_every: Adam steps between checkpoints (needs ``output_dir``).
      adaptive_weights: an :class:`AdaptiveWeights` or ``None``.
      resampling: a :class:`Resampling` or ``None``.
      causal: a :class:`CausalWeights` (time-dependent problems) or ``None``.
      output_dir: where ``history.csv``, ``checkpoints/`` and ``tensorboard/`` go.
      resume: restore the latest checkpoint in ``output_dir`` and continue from it.
      tensorboard: also write the history as TensorBoard scalars.
      progress: show a tqdm progress bar.
    """

    def __init__(
        self,
        problem: Problem,
        model: keras.Model,
        interior: int = 8192,
        sampling: str = "sobol",
        seed: int = 0,
        learning_rate: Any = 1e-3,
        steps_per_call: int = 100,
        log_every: int = 100,
        checkpoint_every: int = 1000,
        adaptive_weights: AdaptiveWeights | None = None,
        resampling: Resampling | None = None,
        causal: CausalWeights | None = None,
        output_dir: str | None = None,
        resume: bool = False,
        tensorboard: bool = False,
        progress: bool = True,
    ):
        _check_every(log_every, steps_per_call, "log_every")
        _check_every(checkpoint_every, steps_per_call, "checkpoint_every")
        for option in (adaptive_weights, resampling):
            if option is not None:
                _check_every(option.every, steps_per_call, f"{type(option).__name__}.every")
        if causal is not None and problem.domain.time is None:
            raise ValueError("Trainer: causal weights need a time coordinate; the domain has none.")
        if resume and output_dir is None:
            raise ValueError("Trainer: resume=True needs output_dir, where the checkpoints are.")
        if not model.built or not model.weights:
            raise ValueError("Trainer: the model has no weights yet; give it a keras.Input(shape=(d,)) or call it once.")
        self.problem, self.model, self.seed, self.sampling = problem, model, seed, sampling
        self.log_every, self.checkpoint_every, self.progress = log_every, checkpoint_every, progress
        self.adaptive_weights, self.resampling, self.causal, self.output_dir = adaptive_weights, resampling, causal, output_dir
        self.dtype = tf.as_dtype(model.weights[0].dtype)
        self.solution = problem.solution(model)

        variable = lambda value, name: tf.Variable(tf.constant(value, self.dtype), name=name)
        self.parameters = {name: variable(value, name) for name, value in problem.parameters.items()}
        domain = problem.domain
        self.interior = variable(domain.sample_interior(interior, sampling, seed), "interior")
        self.condition_arrays = [
            {key: variable(array, f"{condition.name}_{key}") for key, array in condition.sample(domain, sampling, seed + 1 + i).items()}
            for i, condition in enumerate(problem.conditions)
        ]
        self._check_shapes()
        self.weights = {name: tf.Variable(tf.constant(problem.weights.get(name, 1.0), self.dtype), trainable=False, name=f"weight_{name}") for name in problem.term_names}
        unknown = set(problem.weights) - set(problem.term_names)
        if unknown:
            raise ValueError(f"Trainer: weights given for {sorted(unknown)}, which are not loss terms; the terms are {problem.term_names}.")
        self.variables = list(model.trainable_variables) + list(self.parameters.values())
        self.optimizer = keras.optimizers.Adam(learning_rate)
        self.step = TrainStep(self._total_loss, self.variables, self.optimizer, steps_per_call=steps_per_call, monitor=False)
        self.adam_steps = tf.Variable(0, dtype=tf.int64, trainable=False, name="adam_steps")
        self.lbfgs_done = tf.Variable(False, trainable=False, name="lbfgs_done")
        # Compiled on first use (tf.function traces lazily).
        self._terms = tf.function(self._loss_terms, jit_compile=True)
        self._weight_targets = tf.function(self._annealing_targets, jit_compile=True)
        self._residual_scores = tf.function(self._resampling_scores, jit_compile=True)
        self._predict = tf.function(self.solution, jit_compile=True, reduce_retracing=True)
        self.checkpoint = tf.train.Checkpoint(
            model=model, optimizer=self.optimizer, parameters=self.parameters, weights=self.weights,
            interior=self.interior, conditions=self.condition_arrays, adam_steps=self.adam_steps, lbfgs_done=self.lbfgs_done,
        )
        self.history: list[dict[str, float]] = []
        self._manager = self._writer = None
        self._start = time.perf_counter()
        if output_dir is not None:
            self._manager = tf.train.CheckpointManager(self.checkpoint, os.path.join(output_dir, "checkpoints"), max_to_keep=2)
            if resume and self._manager.latest_checkpoint:
                self.checkpoint.restore(self._manager.latest_checkpoint).assert_existing_objects_matched()
                self.history = self._read_history(int(self.adam_steps.numpy()))
                print(f"resumed from {self._manager.latest_checkpoint} at Adam step {int(self.adam_steps.numpy())}")
            if tensorboard:
                self._writer = tf.summary.create_file_writer(os.path.join(output_dir, "tensorboard"))

    # ----------------------------------------------------------------------------- losses
    def _check_shapes(self) -> None:
        """Evaluates every term once on a few points, so shape errors surface before training."""
        few = self.interior[:4]
        self.problem.pde_residuals(self.solution, few, self.parameters)
        for condition, arrays in zip(self.problem.conditions, self.condition_arrays):
            residual = self.problem.condition_residual(condition, self.solution, {k: v[:4] for k, v in arrays.items()})
            if residual.shape.rank != 1:
                raise ValueError(f"Trainer: condition {condition.name!r} gave residuals of shape {tuple(residual.shape)}; expected (N,).")

    def _loss_terms(self) -> dict[str, tf.Tensor]:
        """Mean squared residual of every term (causally weighted over time when asked)."""
        interior = tf.convert_to_tensor(self.interior)
        residuals = self.problem.pde_residuals(self.solution, interior, self.parameters)
        if self.causal:
            mean_square = lambda r: self._causal_mean(tf.square(r), interior)
        else:
            mean_square = lambda r: tf.reduce_mean(tf.square(r))
        terms = {name: mean_square(r) for name, r in zip(self.problem.residual_names, residuals)}
        for condition, arrays in zip(self.problem.conditions, self.condition_arrays):
            values = {k: tf.convert_to_tensor(v) for k, v in arrays.items()}
            terms[condition.name] = tf.reduce_mean(tf.square(self.problem.condition_residual(condition, self.solution, values)))
        return terms

    def _causal_mean(self, squares: tf.Tensor, points: tf.Tensor) -> tf.Tensor:
        domain, bins = self.problem.domain, self.causal.bins
        start, end = domain.bounds[domain.time]
        t = points[:, domain.coords.index(domain.time)]
        index = tf.clip_by_value(tf.cast((t - start) / (end - start) * bins, tf.int32), 0, bins - 1)
        per_bin = tf.math.unsorted_segment_mean(squares, index, bins)
        weights = tf.stop_gradient(tf.exp(-_validate.constant(self.causal.epsilon, squares.dtype) * tf.cumsum(per_bin, exclusive=True)))
        return tf.reduce_mean(weights * per_bin)

    def _total_loss(self) -> tf.Tensor:
        terms = self._loss_terms()
        return tf.add_n([self.weights[name] * value for name, value in terms.items()])

    # ----------------------------------------------------------------------------- Adam
    def adam(self, steps: int) -> None:
        """Runs Adam until ``steps`` steps in total have been taken (resume-aware)."""
        chunk = self.step.steps_per_call
        if steps % chunk:
            raise ValueError(f"Trainer.adam: steps={steps} must be a multiple of steps_per_call={chunk}.")
        done = int(self.adam_steps.numpy())
        if done >= steps:
            return
        bar = tqdm(total=steps, initial=done, desc="Adam", disable=not self.progress, unit="step")
        while done < steps:
            # Resampling happens before a chunk, after the checkpoint of the chunk before, so a
            # run resumed from that checkpoint resamples exactly as the uninterrupted one.
            if self.resampling and done and done % self.resampling.every == 0:
                self._resample(done)
            outputs = self.step()
            done += chunk
            self.adam_steps.assign(done)
            if not np.isfinite(float(outputs["loss"])):
                raise FloatingPointError(f"Trainer: the loss became {float(outputs['loss'])} at Adam step {done}; lower the learning rate or check the residual.")
            if self.adaptive_weights and done % self.adaptive_weights.every == 0:
                self._update_weights()
            if done % self.log_every == 0:
                row = self._log("adam", done)
                bar.set_postfix(loss=f"{row['loss']:.3e}")
            bar.update(chunk)
            if self._manager and done % self.checkpoint_every == 0:
                self._manager.save(checkpoint_number=done)
        bar.close()

    def _update_weights(self) -> None:
        targets = self._weight_targets()
        alpha = self.adaptive_weights.alpha
        for name, target in targets.items():
            self.weights[name].assign((1.0 - alpha) * self.weights[name] + alpha * target)

    def _annealing_targets(self) -> dict[str, tf.Tensor]:
        with tf.GradientTape(persistent=True) as tape:
            terms = self._loss_terms()
        weights = self.model.trainable_variables
        flat = lambda grads: tf.concat([tf.reshape(tf.abs(g), [-1]) for g in grads if g is not None], 0)
        residual_max = tf.reduce_max(flat(tape.gradient(tf.add_n([terms[n] for n in self.problem.residual_names]), weights)))
        targets = {}
        for condition in self.problem.conditions:
            mean = tf.reduce_mean(flat(tape.gradient(terms[condition.name], weights)))
            targets[condition.name] = residual_max / tf.maximum(mean, tf.constant(1e-30, self.dtype))
        del tape
        return targets

    def _resampling_scores(self, x: tf.Tensor) -> tf.Tensor:
        residuals = self.problem.pde_residuals(self.solution, x, self.parameters)
        return tf.add_n([tf.abs(r) ** self.resampling.k for r in residuals])

    def _resample(self, step: int) -> None:
        config = self.resampling
        candidates = self.problem.domain.sample_interior(config.candidates, "random", self.seed * 1_000_003 + step)
        score = np.concatenate([self._residual_scores(tf.constant(part, self.dtype)).numpy() for part in np.array_split(candidates, max(1, config.candidates // 20_000))])
        density = score / score.mean() + config.c
        rng = np.random.default_rng([self.seed, step])
        chosen = rng.choice(len(candidates), size=int(self.interior.shape[0]), replace=False, p=density / density.sum())
        self.interior.assign(candidates[chosen])

    # ----------------------------------------------------------------------------- L-BFGS
    def lbfgs(self, max_iterations: int, gtol: float = 1e-10, ftol: float = float(np.finfo(float).eps), max_corrections: int = 50) -> scipy.optimize.OptimizeResult | None:
        """Runs L-BFGS-B on the flattened weights; prints and returns scipy's result.

        scipy's default ``ftol`` (2.2e-9, relative to max(|f|, 1)) stops PINN runs early, as
        soon as the loss is small; the default here only stops on ``max_iterations``, a tiny
        gradient or a line-search failure, and the reason is printed.

        A resumed run restarts L-BFGS from the weights it started from (saved in the checkpoint
        before the phase), so it ends where an uninterrupted run ends.
        """
        if bool(self.lbfgs_done.numpy()):
            print("L-BFGS: already done in the run being resumed")
            return None
        if self._manager:
            self._manager.save(checkpoint_number=int(self.adam_steps.numpy()))
        shapes = [v.shape for v in self.variables]
        sizes = [int(np.prod(s)) for s in shapes]

        @tf.function(jit_compile=True)
        def value_and_gradient(flat):
            for v, part, shape in zip(self.variables, tf.split(flat, sizes), shapes):
                v.assign(tf.cast(tf.reshape(part, shape), v.dtype))
            with tf.GradientTape() as tape:
                loss = self._total_loss()
            grads = tape.gradient(loss, self.variables)
            return tf.cast(loss, tf.float64), tf.concat([tf.reshape(tf.cast(g, tf.float64), [-1]) for g in grads], 0)

        def fun(flat):
            loss, gradient = value_and_gradient(tf.constant(flat))
            return float(loss), gradient.numpy()

        bar = tqdm(total=max_iterations, desc="L-BFGS", disable=not self.progress, unit="it")
        iteration = [0]

        def callback(intermediate_result):
            iteration[0] += 1
            bar.update(1)
            if iteration[0] % self.log_every == 0:
                row = self._log("lbfgs", int(self.adam_steps.numpy()) + iteration[0], intermediate_result.x)
                bar.set_postfix(loss=f"{row['loss']:.3e}")

        x0 = np.concatenate([np.ravel(v.numpy()).astype(np.float64) for v in self.variables])
        result = scipy.optimize.minimize(fun, x0, jac=True, method="L-BFGS-B", callback=callback, options={"maxiter": max_iterations, "maxfun": int(1.25 * max_iterations) + 20, "ftol": ftol, "gtol": gtol, "maxcor": max_corrections})
        bar.close()
        value_and_gradient(tf.constant(result.x))  # leave the variables at scipy's answer
        print(f"L-BFGS stopped after {result.nit} iterations and {result.nfev} evaluations, loss {result.fun:.4e}: {result.message}")
        self._log("lbfgs", int(self.adam_steps.numpy()) + result.nit)
        self.lbfgs_done.assign(True)
        if self._manager:
            self._manager.save(checkpoint_number=int(self.adam_steps.numpy()) + result.nit)
        return result

    # ----------------------------------------------------------------------------- logs
    def _log(self, phase: str, step: int, flat: np.ndarray | None = None) -> dict[str, float]:
        terms = {name: float(value) for name, value in self._terms().items()}
        row = {"phase": phase, "step": step, "seconds": round(time.perf_counter() - self._start, 3),
               "loss": sum(float(self.weights[n].numpy()) * v for n, v in terms.items()), **terms,
               **{f"weight_{n}": float(w.numpy()) for n, w in self.weights.items()},
               **{n: float(p.numpy()) for n, p in self.parameters.items()}}
        self.history.append(row)
        if self.output_dir:
            self._write_history()
        if self._writer:
            with self._writer.as_default(step=step):
                for key, value in row.items():
                    if key not in ("phase", "step"):
                        tf.summary.scalar(key, value)
        return row

    def _write_history(self) -> None:
        os.makedirs(self.output_dir, exist_ok=True)
        with open(os.path.join(self.output_dir, "history.csv"), "w", newline="") as file:
            writer = csv.DictWriter(file, fieldnames=list(self.history[0]))
            writer.writeheader()
            writer.writerows(self.history)

    def _read_history(self, up_to_step: int) -> list[dict[str, Any]]:
        path = os.path.join(self.output_dir, "history.csv")
        if not os.path.exists(path):
            return []
        with open(path) as file:
            rows = [row for row in csv.DictReader(file) if row["phase"] == "adam" and int(row["step"]) <= up_to_step]
        return [{k: (v if k == "phase" else int(v) if k == "step" else float(v)) for k, v in row.items()} for row in rows]

    # ----------------------------------------------------------------------------- use
    def predict(self, points: Any, batch: int = 65536) -> np.ndarray:
        """The solution at ``points`` ``(N, d)``: ``(N, fields)`` numpy array."""
        points = np.asarray(points)
        parts = [self._predict(tf.constant(points[i:i + batch], self.dtype)).numpy() for i in range(0, len(points), batch)]
        return np.concatenate(parts, axis=0)

    def parameter_values(self) -> dict[str, float]:
        return {name: float(value.numpy()) for name, value in self.parameters.items()}


def relative_l2_error(prediction: Any, reference: Any) -> float:
    """``||prediction - reference||_2 / ||reference||_2`` over all entries."""
    prediction, reference = np.ravel(prediction), np.ravel(reference)
    return float(np.linalg.norm(prediction - reference) / np.linalg.norm(reference))
