"""The trained solution as one ``.keras`` file: the network and the problem's output transform.

A problem with a hard constraint predicts ``output_transform(x, model(x))``, not ``model(x)``;
:func:`save_solution` writes a Keras model that applies both, and :func:`load_solution` reads
it back, predicting what the trainer predicted. The transform is saved by reference (its module
and name), so it must be a function that can be imported again: defined at module level, or
registered with ``keras.saving.register_keras_serializable``. A lambda or a nested function
cannot be, and is refused at save time.

Loading is safe by default, as Keras 3's ``safe_mode`` is: a file names the function to call, so
:func:`load_solution` accepts only a function registered with Keras (import its module first, which
runs the decorator) or a module-level function of hodiff's own packages (``hodiff``,
``pinn_examples``), and refuses anything else before importing or calling it. For a file you
trust that names a function of your own module, pass ``safe_mode=False``.

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

import contextvars
import importlib
import inspect
import json
import os
import re
import zipfile
from collections.abc import Callable, Sequence
from typing import Any

import keras

from hodiff.pinn.conditions import named_columns
from hodiff.pinn.runlog import atomic_write

__all__ = ["OutputTransform", "load_solution", "save_solution"]


TRUSTED_PACKAGES = ("hodiff", "pinn_examples")  # module-level functions of these may be named by a file
_MODULE_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")
_FUNCTION_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_trusting = contextvars.ContextVar("hodiff_trusting_solution_files", default=False)  # load_solution(safe_mode=False)


def _untrusted_reference(reference: Any, trusted: bool) -> str | None:
    """Why ``reference`` (a saved transform's config) must not be imported, or ``None``; imports nothing."""
    if not isinstance(reference, dict):
        return f"the reference {reference!r} is not a dict"
    if "registered_name" in reference:
        name = reference["registered_name"]
        if not isinstance(name, str) or keras.saving.get_registered_object(name) is None:
            return (
                f"it names the registered function {name!r}, which is not registered now; import the module that "
                "defines it (runs its @keras.saving.register_keras_serializable decorator) before loading"
            )
        return None
    module, name = reference.get("module"), reference.get("name")
    if not isinstance(module, str) or not isinstance(name, str) or not _MODULE_NAME.match(module):
        return f"the reference {reference!r} is not a module and a function name"
    if trusted:
        return None
    if module.split(".")[0] not in TRUSTED_PACKAGES or not _FUNCTION_NAME.match(name):
        return (
            f"it names {module}.{name}, which is neither registered with Keras nor a module-level function of "
            f"hodiff's own packages {TRUSTED_PACKAGES}; loading would import that module and call it. Register "
            "the transform with @keras.saving.register_keras_serializable() and import its module before "
            "loading, or, for a file you trust, call load_solution(path, safe_mode=False)"
        )
    return None


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
        found = _resolve(module, name)
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


def _resolve(module: str, name: str) -> Any:
    """``module.name`` (a dotted qualified name), importing ``module``."""
    found = importlib.import_module(module)
    for part in name.split("."):
        found = getattr(found, part)
    return found


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
    reason = _untrusted_reference(reference, _trusting.get())
    if reason is not None:
        raise ValueError(f"load_solution: the output transform is refused: {reason}.")
    found = _resolve(reference["module"], reference["name"])
    if not _trusting.get() and not (inspect.isfunction(found) and found.__module__ == reference["module"]):
        raise ValueError(
            f"load_solution: the output transform is refused: {reference['module']}.{reference['name']} is not a "
            "function defined in that module."
        )
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
        return self.transform(named_columns(x, self.coords), outputs)  # the mapping Problem.solution passes

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
    if getattr(problem, "input_transform", None) is not None:
        raise ValueError(
            "save_solution: the problem has an input_transform (a time window's local time), which a .keras file "
            "does not store; save the weights (a checkpoint) and rebuild the problem to evaluate it."
        )
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


def _saved_transforms(path: str) -> list[Any]:
    """The output transform references in the ``config.json`` of the ``.keras`` file ``path`` (a zip)."""
    try:
        with zipfile.ZipFile(path) as archive:
            config = json.loads(archive.read("config.json"))
    except (OSError, KeyError, ValueError, zipfile.BadZipFile):
        return []  # not a .keras archive: keras.saving.load_model says what is wrong with it
    found: list[Any] = []

    def visit(node: Any) -> None:
        if isinstance(node, dict):
            if node.get("class_name") == "OutputTransform" and isinstance(node.get("config"), dict):
                found.append(node["config"].get("transform"))
            for value in node.values():
                visit(value)
        elif isinstance(node, list):
            for value in node:
                visit(value)

    visit(config)
    return found


def load_solution(path: str | os.PathLike, safe_mode: bool = True) -> keras.Model:
    """Loads a solution written by :func:`save_solution`: a ``keras.Model`` from ``(N, d)``
    points to ``(N, fields)`` values, output transform applied.

    Args:
      path: the ``.keras`` file.
      safe_mode: refuse an output transform that is neither registered with Keras nor a
        module-level function of hodiff's packages, before importing anything (as Keras's own
        ``safe_mode`` refuses lambdas). ``False`` imports and calls what a trusted file names.

    Raises:
      ValueError: the file names an output transform that safe mode refuses; the message says
        how to register it.
    """
    path = os.fspath(path)
    for reference in _saved_transforms(path):
        reason = _untrusted_reference(reference, trusted=not safe_mode)
        if reason is not None:
            raise ValueError(f"load_solution: {path}: the output transform is refused: {reason}.")
    token = _trusting.set(not safe_mode)
    try:
        return keras.saving.load_model(path, compile=False, safe_mode=safe_mode)
    finally:
        _trusting.reset(token)
