"""A crash-safe backup for Keras ``fit``: rerun the same ``fit`` after a kill and it resumes exactly.

:class:`BackupCallback` keeps the training state of a ``fit`` in a :class:`~hodiff.pinn.runlog.RunLog`
directory, the run log the :class:`~hodiff.pinn.Trainer` writes: after every epoch one
``tf.train.Checkpoint`` holds the model's weights (for a :class:`~hodiff.pinn.PINNModel` its
points and parameters too), the optimizer's state and the epoch together, written atomically
and versioned (the last two are kept). A kill at any moment leaves the previous complete
checkpoint; a damaged newest one falls back to the one before; a second process writing the same
directory is refused. ``keras.callbacks.BackupAndRestore`` writes the weights and the epoch in
two files, so a kill between them resumes at the wrong epoch, and a kill during the weights
write leaves a file that every restart fails to read (issue 20).

Example:
  ```python
  import tempfile

  import keras
  import numpy as np
  from hodiff import pinn

  domain = pinn.Interval("x", 0.0, 1.0)
  problem = pinn.Problem(
      domain, needs=("u_xx",), residual=lambda d, x, p: d["u_xx"] + 1.0, conditions=[pinn.Dirichlet(0.0, count=2)]
  )
  backup = tempfile.mkdtemp()


  class Kill(keras.callbacks.Callback):
      def on_epoch_end(self, epoch, logs=None):
          if epoch == 1:
              raise KeyboardInterrupt  # the process dies after epoch 2 of 4 ...


  def train(*callbacks):
      model = pinn.PINNModel(problem, pinn.mlp(domain, width=8, depth=2), interior=32)
      model.compile(optimizer=keras.optimizers.Adam(1e-2))
      history = model.fit(epochs=4, steps_per_epoch=5, callbacks=[pinn.BackupCallback(backup), *callbacks], verbose=0)
      return model, history


  try:
      train(Kill())
  except KeyboardInterrupt:
      pass
  resumed, history = train()  # ... and the same cell, run again, trains epochs 3 and 4 only
  assert len(history.history["loss"]) == 2 and int(resumed.optimizer.iterations.numpy()) == 20
  ```
"""

from __future__ import annotations

import logging
import os
import shutil
from collections.abc import Mapping
from typing import Any

import keras

from hodiff.pinn.runlog import RunLog, held_files

__all__ = ["BackupCallback"]

logger = logging.getLogger(__name__)


class BackupCallback(keras.callbacks.Callback):
    """Backs up a ``fit`` after every epoch, crash-safe, and resumes it when ``fit`` runs again.

    Args:
      directory: the backup's run directory (``checkpoints/``, ``history.csv``, ``run_info.json``).
      settings: what defines the training (e.g. the learning rate), JSON-serialisable; resuming
        with other settings raises ``ValueError`` listing them.
      delete_on_end: remove the backup when ``fit`` ends normally (as ``BackupAndRestore``
        does), so that the next ``fit`` starts afresh. ``False`` keeps it: a later ``fit`` with
        the same ``epochs`` then trains nothing.

    Raises:
      hodiff.pinn.runlog.RunInUseError: (when ``fit`` starts) another live process writes ``directory``.
      RuntimeError: the directory holds checkpoints and none can be read.
    """

    def __init__(
        self, directory: str | os.PathLike, settings: Mapping[str, Any] | None = None, delete_on_end: bool = True
    ):
        super().__init__()
        self.directory = os.fspath(directory)
        self.settings = dict(settings or {})
        self.delete_on_end = delete_on_end
        self.run_log: RunLog | None = None

    def on_train_begin(self, logs: Mapping | None = None) -> None:
        model, optimizer = self.model, self.model.optimizer
        if optimizer is not None and not optimizer.built:  # its variables must exist to be restored
            optimizer.build(model.trainable_variables)
        # every weight by position: a PINNModel's points and parameters are weights that a tf.train.Checkpoint
        # of the model alone misses (add_weight in a dict attribute is not tracked)
        objects: dict[str, Any] = {"weights": list(model.weights)}
        if optimizer is not None:
            objects["optimizer"] = optimizer
        self.run_log = RunLog(self.directory, objects, self.settings, resume=bool(held_files(self.directory)))
        epoch = int(self.run_log.state.get("epoch", 0)) if self.run_log.restored else 0
        if epoch:
            logger.info("BackupCallback: resumed from %s at epoch %d", self.run_log.restored, epoch)
        model._initial_epoch = epoch  # how Keras's fit starts at an epoch (as BackupAndRestore does)

    def on_epoch_end(self, epoch: int, logs: Mapping | None = None) -> None:
        assert self.run_log is not None
        row = {"phase": "fit", "step": epoch + 1}
        row.update({key: float(value) for key, value in (logs or {}).items() if _is_number(value)})
        self.run_log.append(row)
        self.run_log.save(epoch + 1, epoch=epoch + 1)  # weights, optimizer and epoch in one checkpoint

    def on_train_end(self, logs: Mapping | None = None) -> None:
        if self.run_log is None:
            return
        self.run_log.close()
        self.run_log = None
        if self.delete_on_end:
            # renamed first (atomic), so that a kill while deleting never leaves a half-removed backup
            parent, name = os.path.split(os.path.abspath(self.directory))
            removed = os.path.join(parent, f".{name}.removed-{os.getpid()}")
            os.replace(self.directory, removed)
            shutil.rmtree(removed, ignore_errors=True)


def _is_number(value: Any) -> bool:
    try:
        float(value)
    except (TypeError, ValueError):
        return False
    return True
