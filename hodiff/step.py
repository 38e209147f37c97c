"""Deprecated alias of :mod:`hodiff.training.step` (moved there); it goes in the next release.

Every name read here warns with a ``DeprecationWarning`` and is ``hodiff.training.step``'s own object.
"""

from hodiff._deprecation import moved

__getattr__, __dir__, __all__ = moved("hodiff.step", "hodiff.training.step")
