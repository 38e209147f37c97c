"""The members of an ``.npz`` archive read from their headers, without loading their data.

A header can claim any shape: ``numpy.load`` allocates what it claims before it reads, so a corrupt or
crafted header (``(10**9, 20, 28, 28)`` of float64) raises ``MemoryError`` instead of a clear message.
:func:`npz_headers` checks each header against the bytes the archive holds for it first; the reference
caches (:func:`pinn_examples.fd_references.read_cache`) and ``maml_omniglot --data`` both use it.
"""

from __future__ import annotations

import zipfile
from collections.abc import Iterable

import numpy as np

__all__ = ["NpzError", "npz_headers"]


class NpzError(ValueError):
    """An ``.npz`` archive that cannot be read as it claims: its message names the file and what is wrong."""


def npz_headers(path: str, names: Iterable[str]) -> dict[str, tuple[tuple[int, ...], np.dtype]]:
    """The ``(shape, dtype)`` that the header of each member ``names`` of the ``.npz`` archive ``path`` claims.

    Only the headers are read. Raises :class:`NpzError`, a ``ValueError`` (its message names the file and
    what is wrong) when ``path`` is not a readable ``.npz`` archive, a member is missing, or a header claims more
    bytes than the archive stores for that member (a truncated or corrupt file). Object arrays (pickled, of no
    fixed size) are returned unchecked: the caller refuses their dtype (``numpy.load(allow_pickle=False)`` does).

    Example:
      ```python
      import os, tempfile
      import numpy as np
      from pinn_examples.npz_headers import npz_headers

      path = os.path.join(tempfile.mkdtemp(), "a.npz")
      np.savez(path, u=np.zeros((3, 4)))
      assert npz_headers(path, ["u"]) == {"u": ((3, 4), np.dtype("float64"))}
      ```
    """
    headers: dict[str, tuple[tuple[int, ...], np.dtype]] = {}
    try:
        with zipfile.ZipFile(path) as archive:
            members = archive.namelist()
            missing = [name for name in names if f"{name}.npy" not in members]
            if missing:
                held = [member.removesuffix(".npy") for member in members]
                raise NpzError(f"{path} holds {held}, not {', '.join(repr(name) for name in missing)}")
            for name in names:
                stored = archive.getinfo(f"{name}.npy").file_size
                with archive.open(f"{name}.npy") as member:
                    version = np.lib.format.read_magic(member)
                    if version == (1, 0):
                        shape, _, dtype = np.lib.format.read_array_header_1_0(member)
                    else:
                        shape, _, dtype = np.lib.format.read_array_header_2_0(member)
                    offset = member.tell()
                claimed = int(np.prod(shape, dtype=object)) * dtype.itemsize
                if not dtype.hasobject and offset + claimed > stored:  # object arrays are pickled: no fixed size
                    raise NpzError(
                        f"the header of {name} in {path} claims shape {shape} of {dtype} ({claimed:.3g} bytes), but "
                        f"the archive holds {stored - offset} bytes of data; it is truncated or corrupt"
                    )
                headers[name] = (tuple(shape), dtype)
    except NpzError:
        raise
    except (OSError, ValueError, EOFError, TypeError, zipfile.BadZipFile) as error:
        raise NpzError(f"{path} is not a readable .npz archive ({error})") from None
    return headers
