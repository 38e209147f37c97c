"""Thin deprecated aliases of the operator and jet names that moved (kept for one release)."""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable
from typing import Any


def warn(old: str, new: str) -> None:
    """Emits the one DeprecationWarning of a moved name, pointing at its replacement."""
    warnings.warn(
        f"{old} is deprecated and will be removed in the next release; use {new}.", DeprecationWarning, stacklevel=3
    )


def alias(function: Callable, old: str, new: str) -> Callable:
    """``function`` under its old name: the same call, with a DeprecationWarning."""

    @functools.wraps(function)
    def deprecated(*args: Any, **kwargs: Any) -> Any:
        warn(old, new)
        return function(*args, **kwargs)

    return deprecated


def module_getattr(module: str, names: dict[str, tuple[Any, str]]) -> Callable[[str], Any]:
    """A module ``__getattr__`` serving an old module's names, each with a DeprecationWarning."""

    def __getattr__(name: str) -> Any:
        if name not in names:
            raise AttributeError(f"module {module!r} has no attribute {name!r}")
        target, new = names[name]
        warn(f"{module}.{name}", new)
        return target

    return __getattr__
