"""Old import paths kept for one release: a module-level ``__getattr__`` that warns and forwards.

A moved module leaves a thin alias at its old path::

    __getattr__, __dir__, __all__ = moved("hodiff.transforms", "hodiff.training.transforms")

Every name read through the alias (``hodiff.transforms.chain``, ``from hodiff.transforms import
chain``) emits a ``DeprecationWarning`` naming the new path and returns the new module's object
itself, so identity checks and ``isinstance`` keep working.
"""

from __future__ import annotations

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
