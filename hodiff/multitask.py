"""Deprecated alias of :mod:`hodiff.training.multitask` (moved there); it goes in the next release.

Every name read here warns with a ``DeprecationWarning`` and is ``hodiff.training.multitask``'s own object.
"""

from hodiff._deprecation import moved

__getattr__, __dir__, __all__ = moved("hodiff.multitask", "hodiff.training.multitask")
