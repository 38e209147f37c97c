"""MAML-family meta-learning on unmodified Keras 3 models.

- :mod:`hodiff.meta.functional`: :class:`FunctionalModel`, a Keras model called on a list of tensors;
- :mod:`hodiff.meta.inner`: :func:`inner_loop`, differentiable inner steps unrolled in Python;
- :mod:`hodiff.meta.optimizers`: the inner optimisers (SGD, momentum, Adam) as pure functions;
- :mod:`hodiff.meta.learner`: :class:`MetaLearner`, the compiled meta-training step;
- :mod:`hodiff.meta.vectorized`: every task of a batch at once for a stack of ``Dense`` layers;
- :mod:`hodiff.meta.tasks`: N-way K-shot tasks from images grouped by class (Omniglot's layout).

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

from hodiff.meta import functional, inner, learner, optimizers, tasks, vectorized
from hodiff.meta.functional import FunctionalModel
from hodiff.meta.inner import inner_loop
from hodiff.meta.learner import META_VARIANTS, MetaEvaluation, MetaLearner
from hodiff.meta.optimizers import INNER_OPTIMIZERS, InnerAdam, InnerMomentum, InnerOptimizer, InnerSGD
from hodiff.meta.tasks import FewShotTasks, split_classes, synthetic_characters

__all__ = [
    "FunctionalModel",
    "inner_loop",
    "MetaLearner",
    "MetaEvaluation",
    "META_VARIANTS",
    "INNER_OPTIMIZERS",
    "InnerOptimizer",
    "InnerSGD",
    "InnerMomentum",
    "InnerAdam",
    "FewShotTasks",
    "split_classes",
    "synthetic_characters",
    "functional",
    "inner",
    "learner",
    "optimizers",
    "tasks",
    "vectorized",
]
