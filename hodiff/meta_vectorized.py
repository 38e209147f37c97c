"""Deprecated alias of :mod:`hodiff.meta.vectorized` (moved there); it goes in the next release.

Every name read here warns with a ``DeprecationWarning`` and is ``hodiff.meta.vectorized``'s own object.
"""

from hodiff._deprecation import moved

__getattr__, __dir__, __all__ = moved("hodiff.meta_vectorized", "hodiff.meta.vectorized")
