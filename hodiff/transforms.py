"""Deprecated alias of :mod:`hodiff.training.transforms` (moved there); it goes in the next release.

Every name read here warns with a ``DeprecationWarning`` and is ``hodiff.training.transforms``'s own object.
"""

from hodiff._deprecation import moved

__getattr__, __dir__, __all__ = moved("hodiff.transforms", "hodiff.training.transforms")
