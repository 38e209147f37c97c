"""The trained solution as one ``.keras`` file: the network and the problem's output transform.

A problem with a hard constraint predicts ``output_transform(x, model(x))``, not ``model(x)``;
:func:`save_solution` writes a Keras model that applies both, and :func:`load_solution` reads
it back, predicting what the trainer predicted. The transform is saved by reference (its module
and name), so it must be a function that can be imported again: defined at module level, or
registered with ``keras.saving.register_keras_serializable``. A lambda or a nested function
cannot be, and is refused at save time.

Example:
  ```python
  import os, tempfile
  import keras
  import numpy as np
  from hodiff import pinn
  from hodiff.pinn.saving import load_solution, save_solution


  @keras.saving.register_keras_serializable(package="docs")  # or: a function in an importable module
  def zero_at_the_ends(x, outputs):
      return x["x"][:, None] * (1.0 - x["x"][:, None]) * outputs


  domain = pinn.Interval("x", 0.0, 1.0)
  problem = pinn.Problem(
      domain, needs=("u_xx",), residual=lambda d, x, p: d["u_xx"] + 1.0, output_transform=zero_at_the_ends
  )
  model = pinn.mlp(domain, width=8, depth=2)
  path = os.path.join(tempfile.mkdtemp(), "solution.keras")
  save_solution(path, problem, model)
  x = np.linspace(0.0, 1.0, 5)[:, None]
  assert np.abs(load_solution(path).predict(x, verbose=0)[[0, -1]]).max() < 1e-12
  ```
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable, Sequence
from typing import Any

import keras

from hodiff.pinn.runlog import atomic_write

__all__ = ["OutputTransform", "load_solution", "save_solution"]


def _reference_problem(transform: Callable) -> str | None:
    """Why ``transform`` cannot be saved by reference, or ``None`` when it can."""
    if keras.saving.get_registered_object(keras.saving.get_registered_name(transform)) is transform:
        return None
    name = getattr(transform, "__qualname__", None) or getattr(transform, "__name__", None)
    module = getattr(transform, "__module__", None)
    if name is None or module is None:
        return f"{transform!r} has no module and name to import it by"
    if "<lambda>" in name:
        return "it is a lambda"
    if "<locals>" in name:
        return f"{name} is defined inside a function (a closure)"
    if module == "__main__":
        return "it is defined in __main__, which a later process does not import"
    try:
        found = _import_function({"module": module, "name": name})
    except (ImportError, AttributeError):
        return f"{module}.{name} cannot be imported"
    if found is not transform:
        return f"{module}.{name} imports as another object"
    return None


def _function_reference(function: Callable) -> dict[str, str]:
    """``{"registered_name": ...}`` for a registered function, else ``{"module": ..., "name": ...}``."""
    registered = keras.saving.get_registered_name(function)
    if keras.saving.get_registered_object(registered) is function:
        return {"registered_name": registered}
    return {"module": function.__module__, "name": function.__qualname__}


def _import_function(reference: dict[str, str]) -> Callable:
    """The function a :func:`_function_reference` names (imports its module)."""
    if "registered_name" in reference:
        found = keras.saving.get_registered_object(reference["registered_name"])
        if found is None:
            raise ValueError(
                f"load_solution: the output transform was registered as {reference['registered_name']!r}, which is "
                "not registered now; import the module that defines it (runs its decorator) before loading."
            )
        return found
    found = importlib.import_module(reference["module"])
    for part in reference["name"].split("."):
        found = getattr(found, part)
    return found


@keras.saving.register_keras_serializable(package="hodiff")
class OutputTransform(keras.layers.Layer):
    """Applies ``transform(x, outputs)``, ``x`` the named coordinate columns, to a network's outputs.

    Args:
      transform: ``transform(x, outputs) -> outputs`` (a module-level or registered function).
      coords: the coordinate names, in the column order of the points.
    """

    def __init__(self, transform: Callable, coords: Sequence[str], **kwargs):
        super().__init__(**kwargs)
        if isinstance(transform, dict):
            transform = _import_function(transform)
        self.transform, self.coords = transform, tuple(coords)

    def call(self, x, outputs):
        return self.transform({name: x[:, i] for i, name in enumerate(self.coords)}, outputs)

    def compute_output_shape(self, x_shape, outputs_shape):
        return outputs_shape

    def get_config(self):
        return {
            **super().get_config(),
            "transform": _function_reference(self.transform),
            "coords": list(self.coords),
        }


def solution_model(problem: Any, model: keras.Model) -> keras.Model:
    """``model`` followed by ``problem.output_transform`` (if any) as one functional Keras model."""
    if problem.output_transform is None:
        return model
    reason = _reference_problem(problem.output_transform)
    if reason is not None:
        raise ValueError(
            f"save_solution: the problem's output_transform cannot be saved ({reason}); a .keras file stores "
            "it by module and name. Define it as a function at module level (def transform(x, outputs): ...) "
            "in an importable module, or register it with @keras.saving.register_keras_serializable()."
        )
    inputs = keras.Input(model.inputs[0].shape[1:], dtype=model.inputs[0].dtype)
    transform = OutputTransform(
        problem.output_transform, problem.domain.coords, dtype=model.outputs[0].dtype, name="output_transform"
    )
    return keras.Model(inputs, transform(inputs, model(inputs)), name="solution")


def save_solution(path: str | os.PathLike, problem: Any, model: keras.Model) -> None:
    """Writes ``model`` with ``problem``'s output transform as one ``.keras`` file, atomically.

    Args:
      path: the file, ending in ``.keras``.
      problem: the :class:`~hodiff.pinn.Problem` (its ``output_transform`` and coordinates).
      model: the trained network.

    Raises:
      ValueError: ``path`` does not end in ``.keras``, or the transform cannot be saved by
        reference (a lambda or a closure): the message says how to define it instead.
    """
    path = os.fspath(path)
    if not path.endswith(".keras"):
        raise ValueError(f"save_solution: path={path!r} must end in '.keras' (Keras 3's single-file format).")
    solution = solution_model(problem, model)
    with atomic_write(path) as temporary:
        solution.save(temporary)


def load_solution(path: str | os.PathLike) -> keras.Model:
    """Loads a solution written by :func:`save_solution`: a ``keras.Model`` from ``(N, d)``
    points to ``(N, fields)`` values, output transform applied."""
    return keras.saving.load_model(os.fspath(path), compile=False)
