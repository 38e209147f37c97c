"""Training with hodiff's gradients: one concept per module.

- :mod:`hodiff.training.stable`: numerically stable ops and custom gradients (softmax, norms, clipping);
- :mod:`hodiff.training.transforms`: gradient transforms (clipping, skipping, accumulation, chain);
- :mod:`hodiff.training.step`: :class:`TrainStep`, a compiled (XLA, distributed, mixed-precision) step;
- :mod:`hodiff.training.monitor`: gradient statistics and TensorBoard summaries;
- :mod:`hodiff.training.multitask`: merging the gradients of several losses (PCGrad, ...);
- :mod:`hodiff.training.penalties`: penalties on input gradients (WGAN-GP, saliency, FGSM);
- :mod:`hodiff.training.lbfgs`: :func:`minimize_lbfgs`, scipy's L-BFGS-B on Keras variables;
- :mod:`hodiff.training.bfgs`: :func:`minimize_bfgs`, self-scaled BFGS with a dense inverse Hessian.

Example:
  ```python
  import tensorflow as tf
  from hodiff.training import transforms

  w = tf.Variable([1.0, 2.0])
  update = transforms.clip_by_global_norm(1.0)([tf.constant([3.0, 4.0])], [w])
  tf.debugging.assert_near(update.grads[0], [0.6, 0.8])
  ```
"""

from hodiff.training import bfgs, lbfgs, monitor, multitask, penalties, stable, step, transforms
from hodiff.training.bfgs import minimize_bfgs
from hodiff.training.lbfgs import minimize_lbfgs
from hodiff.training.step import TrainStep

__all__ = [
    "TrainStep",
    "bfgs",
    "lbfgs",
    "minimize_bfgs",
    "minimize_lbfgs",
    "monitor",
    "multitask",
    "penalties",
    "stable",
    "step",
    "transforms",
]
