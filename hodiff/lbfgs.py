"""Deprecated alias of :mod:`hodiff.training.lbfgs` (moved there); it goes in the next release.

Every name read here warns with a ``DeprecationWarning`` and is ``hodiff.training.lbfgs``'s own object.
"""

from hodiff._deprecation import moved

__getattr__, __dir__, __all__ = moved("hodiff.lbfgs", "hodiff.training.lbfgs")
