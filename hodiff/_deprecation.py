"""Old import paths and names kept for one release: aliases that warn and forward.

A moved module leaves a thin alias at its old path::

    __getattr__, __dir__, __all__ = moved("hodiff.transforms", "hodiff.training.transforms")

Every name read through the alias (``hodiff.transforms.chain``, ``from hodiff.transforms import
chain``) emits a ``DeprecationWarning`` naming the new path and returns the new module's object
itself, so identity checks and ``isinstance`` keep working.
"""

from __future__ import annotations

import functools
import importlib
import warnings
from collections.abc import Callable
from typing import Any


def warn_moved(old: str, new: str, stacklevel: int = 3) -> None:
    """Emit the ``DeprecationWarning`` for a name or module that moved from ``old`` to ``new``."""
    warnings.warn(
        f"{old} moved to {new}; the old path goes in the next release. Import it from {new} instead.",
        DeprecationWarning,
        stacklevel=stacklevel,
    )


def moved(old: str, new: str) -> tuple[Callable[[str], Any], Callable[[], list[str]], list[str]]:
    """``(__getattr__, __dir__, __all__)`` for the alias module ``old`` of the module ``new``.

    Args:
      old: the deprecated module path, e.g. ``"hodiff.transforms"``.
      new: the module it moved to, e.g. ``"hodiff.training.transforms"``.

    Returns:
      The alias module's ``__getattr__`` (warns, then returns ``new``'s attribute), ``__dir__``
      and ``__all__`` (``new``'s public names).
    """
    target = importlib.import_module(new)
    public = list(getattr(target, "__all__", [name for name in vars(target) if not name.startswith("_")]))

    def __getattr__(name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        try:
            value = getattr(target, name)
        except AttributeError:
            raise AttributeError(f"module {old!r} (moved to {new!r}) has no attribute {name!r}") from None
        warn_moved(f"{old}.{name}", f"{new}.{name}")
        return value

    def __dir__() -> list[str]:
        return sorted(public)

    return __getattr__, __dir__, public


def warn_renamed(old: str, new: str) -> None:
    """Emits the one DeprecationWarning of a moved name, pointing at its replacement."""
    warnings.warn(
        f"{old} is deprecated and will be removed in the next release; use {new}.", DeprecationWarning, stacklevel=3
    )


def alias(function: Callable, old: str, new: str) -> Callable:
    """``function`` under its old name: the same call, with a DeprecationWarning."""

    @functools.wraps(function)
    def deprecated(*args: Any, **kwargs: Any) -> Any:
        warn_renamed(old, new)
        return function(*args, **kwargs)

    return deprecated


def module_getattr(module: str, names: dict[str, tuple[Any, str]]) -> Callable[[str], Any]:
    """A module ``__getattr__`` serving an old module's names, each with a DeprecationWarning."""

    def __getattr__(name: str) -> Any:
        if name not in names:
            raise AttributeError(f"module {module!r} has no attribute {name!r}")
        target, new = names[name]
        warn_renamed(f"{module}.{name}", new)
        return target

    return __getattr__
