"""The run log: what a training run writes to its directory, crash-safe.

A :class:`RunLog` owns ``history.csv`` (one row per log event), ``checkpoints/`` (a
``tf.train.CheckpointManager`` keeping the last ``max_to_keep``), ``run_info.json`` (free-form
facts about the run, e.g. the error before training) and, optionally, ``tensorboard/``. Every
checkpoint also carries the run's state as JSON: the settings, the history up to that
checkpoint, the run info and whatever the trainer adds (wall time, the L-BFGS result), so a
resumed run continues exactly where its checkpoint was taken.

Every file is written atomically: to a temporary file in the same directory, then renamed
over the old one (``os.replace``), so a kill at any moment leaves the previous complete file.
:func:`atomic_write` does this for any writer (``np.savez``, ``fig.savefig``, ``open``).

One process writes a run: a :class:`RunLog` holds an OS lock (``fcntl.flock``) on ``.lock`` in
its directory for as long as it lives (:func:`lock_run`). A second writer, or an overwrite of a
live run, stops with :class:`RunInUseError` naming the process that holds it; the kernel releases
the lock when that process dies, so a killed run never blocks its own resume.

Example:
  ```python
  import json, os, tempfile
  import numpy as np
  from hodiff.pinn.runlog import atomic_write, write_json

  directory = tempfile.mkdtemp()
  write_json(os.path.join(directory, "metrics.json"), {"error": 1e-3})
  with atomic_write(os.path.join(directory, "prediction.npz")) as path:
      np.savez(path, u=np.zeros(3))          # path ends in .npz too, so savez adds nothing
  assert sorted(os.listdir(directory)) == ["metrics.json", "prediction.npz"]
  ```
"""

from __future__ import annotations

import contextlib
import csv
import datetime
import errno
import fcntl
import io
import json
import logging
import math
import os
import re
import shutil
import socket
import sys
import tempfile
import time
import weakref
from collections.abc import Iterator, Sequence
from typing import Any

import tensorflow as tf

__all__ = [
    "RunClock",
    "DiskFullError",
    "RunInUseError",
    "RunLog",
    "atomic_write",
    "checkpoint_files",
    "held_files",
    "lock_run",
    "move_aside",
    "read_checkpoint_state",
    "read_history",
    "restore_model",
    "restore_newest",
    "write_csv",
    "write_json",
]

logger = logging.getLogger(__name__)

HISTORY, RUN_INFO, CHECKPOINTS, TENSORBOARD = "history.csv", "run_info.json", "checkpoints", "tensorboard"
LOCK = ".lock"  # the run's lock file: holds the writer's pid, host, start time and command
_CHECKPOINT_FILE = re.compile(r"^ckpt-(\d+)\.index$")


@contextlib.contextmanager
def atomic_write(path: str | os.PathLike) -> Iterator[str]:
    """Yields a temporary path beside ``path`` (same extension); renames it to ``path`` on success.

    On an exception the temporary file is removed and ``path`` keeps its old content. The
    directory is created if needed.

    Args:
      path: the file to write.

    Example:
      ```python
      import os, tempfile
      from hodiff.pinn.runlog import atomic_write

      path = os.path.join(tempfile.mkdtemp(), "notes.txt")
      with atomic_write(path) as temporary:
          with open(temporary, "w") as file:
              file.write("done")
      assert open(path).read() == "done"
      ```
    """
    path = os.fspath(path)
    directory, name = os.path.split(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    stem, extension = os.path.splitext(name)
    handle, temporary = tempfile.mkstemp(prefix=f".{stem}.", suffix=f".tmp{extension}", dir=directory)
    os.close(handle)
    os.remove(temporary)  # writers such as np.savez and savefig create the file themselves
    try:
        yield temporary
        if not os.path.exists(temporary):
            raise FileNotFoundError(f"atomic_write: nothing was written to the temporary file {temporary} for {path}.")
        with open(temporary, "rb") as file:
            os.fsync(file.fileno())
        os.replace(temporary, path)
    except OSError as error:
        if error.errno != errno.ENOSPC or isinstance(error, DiskFullError):
            raise
        previous = os.path.getsize(path) if os.path.exists(path) else None
        needed = f"about {_size(previous)} (its previous version)" if previous else "room for it"
        raise DiskFullError(path, f"the file needs {needed}") from error
    finally:
        if os.path.exists(temporary):
            os.remove(temporary)


def _size(count: float | None) -> str:
    return "an unknown size" if count is None else f"{count / 2**20:.3g} MiB"


class DiskFullError(OSError):
    """No space left on the device while writing a run's file; the message names the file, the free
    space and what the run needs.

    Args:
      path: the file (or checkpoint) being written.
      needed: what the run needs there, in words.
      then: what to do once there is room (default: resume the run).
    """

    def __init__(self, path: str, needed: str, then: str = "resume it"):
        try:
            free: float | None = shutil.disk_usage(os.path.dirname(os.path.abspath(path)) or ".").free
        except OSError:
            free = None
        super().__init__(
            errno.ENOSPC,
            f"no space left on the device while writing {path} ({_size(free)} free); {needed}. Free some space "
            f"there or write the run elsewhere (another directory, --output), then {then}",
        )


class RunInUseError(RuntimeError):
    """Another live process holds the run's lock: it is writing that run directory."""


class _HeldLock:
    """One open, flock-ed lock file, shared by every :class:`RunLock` of this process on one directory."""

    def __init__(self, fd: int, path: str):
        self.fd, self.path, self.users = fd, path, 0
        self.provenance: dict[str, Any] = {}


_held: dict[str, _HeldLock] = {}  # real path of the lock file -> this process's lock on it


class RunLock:
    """This process's hold on a run directory's lock; released by :meth:`release`, when the object is
    garbage-collected, or by the kernel when the process dies. See :func:`lock_run`."""

    def __init__(self, held: _HeldLock):
        self._held: _HeldLock | None = held
        held.users += 1
        self._finalizer = weakref.finalize(self, RunLock._drop, held)

    @property
    def path(self) -> str:
        return self._held.path if self._held is not None else ""

    @property
    def provenance(self) -> dict[str, Any]:
        """What the process said about the run's writer when it took the lock (see :func:`lock_run`)."""
        return dict(self._held.provenance) if self._held is not None else {}

    @staticmethod
    def _drop(held: _HeldLock) -> None:
        held.users -= 1
        if held.users == 0:
            _held.pop(held.path, None)
            os.close(held.fd)  # closing the last descriptor releases the flock

    def release(self) -> None:
        """Gives the lock up (other holders in this process keep it)."""
        self._finalizer()
        self._held = None


def _holder(path: str) -> str:
    """Who holds the lock file ``path``, as its writer recorded it."""
    try:
        with open(path) as file:
            info = json.load(file)
        return (
            f"process {info['pid']} on {info['host']}, started {info['started']} "
            f"({' '.join(str(part) for part in info.get('command', []))})"
        )
    except (OSError, ValueError, KeyError, TypeError):
        return "a process that has not recorded itself yet"


def lock_run(directory: str | os.PathLike, caller: str = "RunLog", provenance: dict[str, Any] | None = None) -> RunLock:
    """Takes the exclusive lock on the run in ``directory`` for this process, for the life of the result.

    The lock is an ``fcntl.flock`` on ``directory/.lock`` (the directory is created): the kernel
    releases it when the process dies, so a killed run never blocks its own resume. Taking it
    again in the same process (the runner, then its trainer's run log) shares the hold.

    Args:
      directory: the run's directory.
      caller: named in the error.
      provenance: who writes the run (e.g. ``{"example": "heat", "replicas": 1}``), JSON-serialisable:
        a :class:`RunLog` of this directory in this process that is given no ``provenance`` of its
        own stores this with every checkpoint and checks it on resume. ``None``: that of the innermost
        run this process holds whose directory encloses this one (a time window's run inside its
        marched run), else none.

    Returns:
      A :class:`RunLock`; keep it as long as the run writes.

    Raises:
      RunInUseError: another live process holds the lock; the message names it (pid, host,
        start time, command).

    Example:
      ```python
      import tempfile
      from hodiff.pinn.runlog import lock_run

      directory = tempfile.mkdtemp()
      lock = lock_run(directory)
      again = lock_run(directory)  # the same process: shared
      lock.release()
      again.release()
      ```
    """
    directory = os.fspath(directory)
    os.makedirs(directory, exist_ok=True)
    path = os.path.realpath(os.path.join(directory, LOCK))
    if path in _held:
        if provenance is not None:
            _held[path].provenance = _jsonable(provenance)
        return RunLock(_held[path])
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as error:
        _lock_disk_full(error, path)
        raise
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as error:
        os.close(fd)
        if error.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
            raise
        raise RunInUseError(
            f"{caller}: {directory} is being written by another run: {_holder(path)}. Two writers would mix "
            "their checkpoints and results; wait for that run to finish (or stop it), or choose another "
            "directory (--output). --overwrite does not replace a live run."
        ) from None
    info = {
        "pid": os.getpid(),
        "host": socket.gethostname(),
        "started": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "command": sys.argv,
    }
    try:
        os.ftruncate(fd, 0)
        os.write(fd, json.dumps(info).encode())  # information only: the lock is the flock, not the content
    except OSError as error:
        os.close(fd)  # releases the flock: nothing of the run was written
        _lock_disk_full(error, path)
        raise
    _held[path] = _HeldLock(fd, path)
    _held[path].provenance = _jsonable(provenance if provenance is not None else _enclosing_provenance(path))
    return RunLock(_held[path])


def _lock_disk_full(error: OSError, path: str) -> None:
    """Raises :class:`DiskFullError` for a full disk met while creating or writing the run's lock file ``path``."""
    if error.errno == errno.ENOSPC:
        raise DiskFullError(
            path,
            "the run's lock file needs a few hundred bytes, and every file of the run more (nothing of it was written)",
            then="start the run again",
        ) from error


def _enclosing_provenance(path: str) -> dict[str, Any]:
    """The provenance of the innermost run this process holds that encloses ``path`` (a time window's run inside
    the marched run's directory is written by the same example), else ``{}``."""
    enclosing = [
        held for other, held in _held.items() if path.startswith(os.path.dirname(other) + os.sep) and other != path
    ]
    return dict(max(enclosing, key=lambda held: len(held.path)).provenance) if enclosing else {}


def write_json(path: str | os.PathLike, obj: Any) -> None:
    """Writes ``obj`` as indented JSON to ``path`` atomically."""
    with atomic_write(path) as temporary, open(temporary, "w") as file:
        json.dump(obj, file, indent=2)


def write_csv(path: str | os.PathLike, rows: Sequence[dict[str, Any]]) -> None:
    """Writes ``rows`` (dicts; the columns are their keys in first-seen order) as CSV atomically."""
    columns = list(dict.fromkeys(key for row in rows for key in row))
    with atomic_write(path) as temporary, open(temporary, "w", newline="") as file:
        writer = csv.DictWriter(file, fieldnames=columns)
        writer.writeheader()
        writer.writerows(rows)


def read_history(path: str | os.PathLike) -> list[dict[str, Any]]:
    """Reads a ``history.csv``: ``phase`` stays text, ``step`` is an int, other columns floats;
    an empty cell leaves its column out of that row (as :func:`write_csv` writes a missing key).

    A row that cannot be parsed (a truncated or garbled line, as a killed non-atomic writer
    leaves) is dropped with a warning naming its line; a missing file gives ``[]``.
    """
    if not os.path.exists(path):
        return []
    with open(path, newline="") as file:
        text = file.read()
    reader = csv.reader(io.StringIO(text))
    rows: list[dict[str, Any]] = []
    try:
        header = next(reader)
    except (StopIteration, csv.Error):
        logger.warning("%s has no readable header; its history is ignored.", path)
        return []
    for line, values in enumerate(reader, start=2):
        try:
            if len(values) != len(header):
                raise ValueError(f"{len(values)} fields, expected {len(header)}")
            # an empty cell is a column this row does not have (a metric logged on some rows only)
            row = {
                key: value if key == "phase" else int(value) if key == "step" else float(value)
                for key, value in zip(header, values)
                if value != "" or key in ("phase", "step")
            }
        except ValueError as error:
            logger.warning("%s: line %d is truncated or garbled (%s); dropped.", path, line, error)
            continue
        rows.append(row)
    return rows


def checkpoint_files(directory: str | os.PathLike) -> list[tuple[int, str]]:
    """``(number, prefix)`` of every checkpoint (with an index file) of the run in ``directory``, newest first.

    Args:
      directory: a run's directory (the ``output_dir`` of a :class:`RunLog`).

    Returns:
      A list of ``(checkpoint number, path prefix)``, empty when the run has no checkpoint.
    """
    checkpoints = os.path.join(os.fspath(directory), CHECKPOINTS)
    found = []
    for name in os.listdir(checkpoints) if os.path.isdir(checkpoints) else []:
        match = _CHECKPOINT_FILE.match(name)
        if match:
            found.append((int(match.group(1)), os.path.join(checkpoints, name[: -len(".index")])))
    return sorted(found, reverse=True)


def move_aside(path: str | os.PathLike) -> str | None:
    """Moves aside whatever is at ``path`` where a checkpoint file belongs but is not a regular file (a directory, a
    link): renamed to ``PATH.moved-aside-<UTC time>``, its contents kept, with a warning naming it, so that a
    checkpoint can be written there. Returns the new name, or ``None`` when ``path`` is a file or absent.

    Example:
      ```python
      import os, tempfile
      from hodiff.pinn.runlog import move_aside

      index = os.path.join(tempfile.mkdtemp(), "checkpoint")
      os.makedirs(os.path.join(index, "notes"))  # a directory where the checkpoint index goes
      aside = move_aside(index)
      assert not os.path.exists(index) and os.path.isdir(os.path.join(aside, "notes"))
      assert move_aside(index) is None
      ```
    """
    path = os.fspath(path)
    if not os.path.lexists(path) or (os.path.isfile(path) and not os.path.islink(path)):
        return None
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%S%f")
    aside = f"{path}.moved-aside-{stamp}"
    os.replace(path, aside)
    logger.warning(
        "%s is a %s, not a checkpoint file; it is moved aside to %s (its contents kept) so that the run can write its "
        "checkpoints there. Remove it once you have looked at it.",
        path,
        "directory" if os.path.isdir(aside) else "link or special file",
        os.path.basename(aside),
    )
    return aside


def restore_newest(checkpoint: tf.train.Checkpoint, directory: str | os.PathLike) -> str:
    """Restores ``checkpoint`` from the newest readable checkpoint of the run in ``directory``, found by its files
    (not the index, which may be lost): an unreadable one is skipped for the one before, with a warning; returns
    its prefix.

    Raises:
      FileNotFoundError: the run has no readable checkpoint; the message says why each one failed.
    """
    failures = []
    for _, prefix in checkpoint_files(directory):
        try:
            checkpoint.restore(prefix).expect_partial().assert_existing_objects_matched()
            return prefix
        except Exception as error:  # noqa: BLE001 - an unreadable checkpoint: try the one before
            failures.append(f"{os.path.basename(prefix)}: {type(error).__name__}: {error}")
            logger.warning(
                "checkpoint %s is unreadable (%s: %s); trying the previous one.", prefix, type(error).__name__, error
            )
    reasons = f": {'; '.join(failures)}" if failures else " (no checkpoint files)"
    raise FileNotFoundError(f"{os.fspath(directory)} has no readable checkpoint{reasons}")


def restore_model(model: Any, directory: str | os.PathLike) -> str:
    """Restores ``model``'s weights from the newest readable checkpoint of the run in ``directory`` (an unreadable
    one is skipped for the one before); returns its prefix.

    Raises:
      FileNotFoundError: the run has no readable checkpoint of the model.
    """
    return restore_newest(tf.train.Checkpoint(model=model), directory)


def held_files(directory: str | os.PathLike) -> list[str]:
    """The files of a run that ``directory`` holds (``checkpoints/`` when not empty, ``history.csv``,
    ``run_info.json``); empty when it holds no run."""
    directory = os.fspath(directory)
    held = [name for name in (HISTORY, RUN_INFO) if os.path.exists(os.path.join(directory, name))]
    checkpoints = os.path.join(directory, CHECKPOINTS)
    if os.path.isdir(checkpoints) and os.listdir(checkpoints):
        held.insert(0, f"{CHECKPOINTS}/")
    return held


def read_checkpoint_state(prefix: str) -> dict[str, Any]:
    """The run state stored with a checkpoint (``settings``, ``history``, ``run_info`` and extras), read only.

    Raises whatever TensorFlow or ``json`` raises for an unreadable checkpoint.
    """
    return json.loads(tf.train.load_checkpoint(prefix).get_tensor("run_state/.ATTRIBUTES/VARIABLE_VALUE"))


def _jsonable(value: Any) -> Any:
    """``value`` as it reads back from JSON (tuples become lists, unknown objects their repr)."""
    return json.loads(json.dumps(value, sort_keys=True, default=repr))


class RunLog:
    """History, checkpoints, run info and settings of one training run in ``directory``.

    Args:
      directory: the run's directory.
      objects: the trackable state to checkpoint, ``{name: model, optimizer, variable, ...}``.
      settings: what defines the run (learning rate, seed, sizes, ...), JSON-serialisable;
        resuming with different settings raises ``ValueError`` listing them.
      resume: continue the run held in ``directory`` from its latest readable checkpoint.
      overwrite: replace a run held in ``directory`` (its checkpoints, history, run info and
        TensorBoard logs are removed). Without ``resume`` or ``overwrite``, a directory that
        holds a run raises ``FileExistsError``.
      max_to_keep: checkpoints kept (at least 2, so a corrupt latest one has a predecessor).
      tensorboard: also write each history row as TensorBoard scalars.
      provenance: who writes the run (``{"example": ..., "replicas": ...}``), JSON-serialisable;
        stored with every checkpoint, and resuming a run whose stored provenance differs in a key
        that both have raises ``ValueError`` listing them. Default: what the process gave
        :func:`lock_run` for this directory (the example runner does), else ``{}``.

    Raises:
      RunInUseError: another live process writes ``directory`` (see :func:`lock_run`); the run
        log holds the lock from its creation until it is closed or garbage-collected.

    Attributes:
      history: the rows logged so far (restored from the checkpoint on resume).
      run_info: a dict saved to ``run_info.json`` by :meth:`save_run_info` and with every
        checkpoint; restored on resume.
      state: the extra state stored with the restored checkpoint (``{}`` for a new run).
      restored: the checkpoint path resumed from, or ``None``.
    """

    def __init__(
        self,
        directory: str,
        objects: dict[str, Any],
        settings: dict[str, Any] | None = None,
        resume: bool = False,
        overwrite: bool = False,
        max_to_keep: int = 2,
        tensorboard: bool = False,
        provenance: dict[str, Any] | None = None,
    ):
        if resume and overwrite:
            raise ValueError(
                "RunLog: resume=True and overwrite=True contradict each other; pass one (--resume or --overwrite)."
            )
        if not isinstance(max_to_keep, int) or max_to_keep < 2:
            raise ValueError(
                "RunLog: max_to_keep must be an int >= 2 (a corrupt latest checkpoint needs a predecessor), "
                f"got {max_to_keep!r}."
            )
        self.directory, self.max_to_keep = os.fspath(directory), max_to_keep
        self.lock = lock_run(self.directory)  # before anything is read, removed or written
        self.provenance = _jsonable(provenance) if provenance is not None else self.lock.provenance
        self.settings = _jsonable(settings or {})
        self.history: list[dict[str, Any]] = []
        self.run_info: dict[str, Any] = {}
        self.state: dict[str, Any] = {}
        self.restored: str | None = None
        self._state = tf.Variable("", dtype=tf.string, trainable=False, name="run_state")
        self.checkpoint = tf.train.Checkpoint(**objects, run_state=self._state)  # read by read_checkpoint_state
        self._checkpoints = os.path.join(self.directory, CHECKPOINTS)
        held = self._held_files()
        if held and not resume:
            if not overwrite:
                raise FileExistsError(
                    f"{self.directory} already holds a run ({', '.join(held)}); pass resume=True (--resume) to "
                    f"continue it "
                    f"or overwrite=True (--overwrite) to replace it."
                )
            self._remove_run()
        if resume:
            if not held:
                raise FileNotFoundError(
                    f"resume: {self.directory} holds no run to resume (no {CHECKPOINTS}/, {HISTORY} or "
                    f"{RUN_INFO}); run without resume first."
                )
            self._restore()
        os.makedirs(self._checkpoints, exist_ok=True)
        self._manager = tf.train.CheckpointManager(self.checkpoint, self._checkpoints, max_to_keep=max_to_keep)
        self._writer = tf.summary.create_file_writer(os.path.join(self.directory, TENSORBOARD)) if tensorboard else None
        if self.history:
            write_csv(os.path.join(self.directory, HISTORY), self.history)

    # ----------------------------------------------------------------------------- files
    def _checkpoint_files(self) -> list[tuple[int, str]]:
        """``(number, prefix)`` of every checkpoint with an index file, newest first."""
        return checkpoint_files(self.directory)

    def _held_files(self) -> list[str]:
        return held_files(self.directory)

    def _remove_run(self) -> None:
        logger.warning("overwrite: removing the run in %s", self.directory)
        for name in (CHECKPOINTS, TENSORBOARD):
            shutil.rmtree(os.path.join(self.directory, name), ignore_errors=True)
        for name in (HISTORY, RUN_INFO):
            with contextlib.suppress(FileNotFoundError):
                os.remove(os.path.join(self.directory, name))

    def _clear_the_way(self, names: Sequence[str]) -> None:
        """:func:`move_aside` for each of ``names`` in ``checkpoints/``: the paths TensorFlow writes (the index
        ``checkpoint``, a checkpoint's ``.index`` / ``.data`` files)."""
        for name in names:
            move_aside(os.path.join(self._checkpoints, name))

    def _files_of(self, number: int) -> list[str]:
        """The names under ``checkpoints/`` of checkpoint ``number``'s files (index and data shards)."""
        prefix = f"ckpt-{number}."
        names = os.listdir(self._checkpoints) if os.path.isdir(self._checkpoints) else []
        data = [n for n in names if n.startswith(prefix + "data-") and ".moved-aside-" not in n]
        return [f"ckpt-{number}.index", *data]

    # ----------------------------------------------------------------------------- resume
    def _restore(self) -> None:
        self._clear_the_way(["checkpoint"])  # the index: rebuilt below from the checkpoint files
        candidates = self._checkpoint_files()
        if not candidates:
            logger.warning(
                "resume: %s has no checkpoint yet (the run was stopped before its first); starting from the beginning.",
                self.directory,
            )
            self._remove_run()
            return
        try:
            index = tf.train.get_checkpoint_state(self._checkpoints)
        except (ValueError, UnicodeDecodeError, tf.errors.OpError):  # an empty or binary index: rebuilt below
            index = None
        if index is None or os.path.basename(index.model_checkpoint_path) != os.path.basename(candidates[0][1]):
            logger.warning(
                "resume: the checkpoint index in %s is missing, unreadable or stale; recovering from the "
                "checkpoint files %s.",
                self._checkpoints,
                [os.path.basename(p) for _, p in candidates],
            )
        failures = []
        for position, (number, prefix) in enumerate(candidates):
            try:
                state = read_checkpoint_state(prefix)
            except Exception as error:  # noqa: BLE001 - any unreadable file means: try the previous checkpoint
                failures.append(f"{os.path.basename(prefix)}: {type(error).__name__}: {error}")
                logger.warning(
                    "resume: checkpoint %s is unreadable (%s: %s); trying the previous one.",
                    prefix,
                    type(error).__name__,
                    error,
                )
                self._clear_the_way(self._files_of(number))  # a directory there would stop the next save of it
                continue
            self._check_provenance(state.get("provenance", {}))
            self._check_settings(state.get("settings", {}))
            try:
                self.checkpoint.restore(prefix).assert_existing_objects_matched()
            except Exception as error:  # noqa: BLE001 - corrupt or truncated: TF raises IndexError, DataLossError, ...
                failures.append(f"{os.path.basename(prefix)}: {type(error).__name__}: {error}")
                logger.warning(
                    "resume: checkpoint %s is corrupt or truncated (%s: %s); trying the previous one.",
                    prefix,
                    type(error).__name__,
                    error,
                )
                self._clear_the_way(self._files_of(number))
                continue
            self.restored = prefix
            self.history = state.pop("history")
            self.run_info = state.pop("run_info")
            state.pop("settings", None)
            state.pop("provenance", None)
            self.state = state
            # Older, readable checkpoints stay listed; the corrupt newer ones are left out and get overwritten.
            kept = [os.path.basename(p) for _, p in candidates[position:]][::-1]
            index_text = "".join(
                [f'model_checkpoint_path: "{kept[-1]}"\n']
                + [f'all_model_checkpoint_paths: "{name}"\n' for name in kept]
            )
            with atomic_write(os.path.join(self._checkpoints, "checkpoint")) as temporary, open(temporary, "w") as file:
                file.write(index_text)
            info_path = os.path.join(self.directory, RUN_INFO)
            if os.path.exists(info_path):
                try:
                    with open(info_path) as file:
                        info = json.load(file)
                    if not isinstance(info, dict):
                        raise ValueError(f"{RUN_INFO} holds a JSON {type(info).__name__}, not an object")
                    self.run_info = info
                except ValueError as error:  # JSONDecodeError and UnicodeDecodeError are ValueErrors
                    logger.warning(
                        "resume: %s is unreadable (%s); using the run info stored with the checkpoint.",
                        info_path,
                        error,
                    )
            logger.info("resumed from %s", prefix)
            return
        raise RuntimeError(
            f"resume: no checkpoint in {self._checkpoints} could be read: {'; '.join(failures)}. "
            "Remove the directory or pass overwrite=True (--overwrite) to start again."
        )

    def _check_provenance(self, stored: dict[str, Any]) -> None:
        differing = [
            f"{key}: {stored[key]!r} in the run, {self.provenance[key]!r} now"
            for key in sorted(set(stored) & set(self.provenance))
            if stored[key] != self.provenance[key]
        ]
        if differing:
            flags = ", ".join(f"{key}={stored[key]!r}" for key in sorted(set(stored) & set(self.provenance)))
            raise ValueError(
                f"resume: the run in {self.directory} was written by another writer: "
                + "; ".join(differing)
                + f". Resume it as it was written ({flags}; the replica count is a setting of the run), or start "
                "a new run (overwrite=True, --overwrite, or another directory)."
            )

    def _check_settings(self, stored: dict[str, Any]) -> None:
        def described(settings: dict[str, Any], key: str, absent: str) -> str:
            return repr(settings[key]) if key in settings else absent

        differing = [
            f"{key}: {described(stored, key, 'not recorded (the run is older than this setting)')} in the run, "
            f"{described(self.settings, key, 'not set')} now"
            for key in sorted(set(stored) | set(self.settings))
            if stored.get(key) != self.settings.get(key)
        ]
        if differing:
            raise ValueError(
                f"resume: the settings differ from the run's in {self.directory}: "
                + "; ".join(differing)
                + ". Resume with the run's settings, or start a new run (overwrite=True, --overwrite, or "
                "another directory)."
            )

    # ----------------------------------------------------------------------------- logging
    def append(self, row: dict[str, Any]) -> None:
        """Adds a history row, rewrites ``history.csv`` and writes TensorBoard scalars."""
        self.history.append(row)
        write_csv(os.path.join(self.directory, HISTORY), self.history)
        if self._writer is not None:
            with self._writer.as_default(step=int(row["step"])):
                for key, value in row.items():
                    if key not in ("phase", "step") and isinstance(value, (int, float)) and math.isfinite(value):
                        tf.summary.scalar(key, value)

    def save(self, number: int, **state: Any) -> str:
        """Saves a checkpoint numbered ``number`` with ``state`` (JSON-serialisable) and the run info."""
        payload = {
            **_jsonable(state),
            "settings": self.settings,
            "provenance": self.provenance,
            "history": self.history,
            "run_info": _jsonable(self.run_info),
        }
        self._state.assign(json.dumps(payload))
        self._clear_the_way(["checkpoint", *self._files_of(number)])  # a directory in the way, put there meanwhile
        try:
            path = self._manager.save(checkpoint_number=number)
        except (tf.errors.ResourceExhaustedError, OSError) as error:  # TensorFlow reports a full disk as either
            if isinstance(error, OSError) and error.errno != errno.ENOSPC:
                raise
            each = self._checkpoint_size()
            raise DiskFullError(
                os.path.join(self._checkpoints, f"ckpt-{number}"),
                f"each checkpoint of this run takes about {_size(each)}, and the run keeps {self.max_to_keep} "
                f"plus the one being written: about {_size(each * (self.max_to_keep + 1))}",
            ) from error
        self.save_run_info()
        return path

    def _checkpoint_size(self) -> int:
        """The bytes of the newest checkpoint on disk, else of the checkpointed variables."""
        found = self._checkpoint_files()
        if found:
            prefix = found[0][1]
            folder, name = os.path.split(prefix)
            return sum(
                os.path.getsize(os.path.join(folder, entry))
                for entry in os.listdir(folder)
                if entry.startswith(name + ".")
            )
        return sum(
            int(variable.dtype.size) * int(variable.shape.num_elements() or 0)
            for variable in tf.train.TrackableView(self.checkpoint).descendants()
            if isinstance(variable, tf.Variable) and variable.dtype != tf.string
        ) + len(self._state.numpy())

    def save_run_info(self) -> None:
        """Writes ``run_info.json`` atomically."""
        write_json(os.path.join(self.directory, RUN_INFO), _jsonable(self.run_info))

    @property
    def latest_checkpoint(self) -> str | None:
        return self._manager.latest_checkpoint

    def close(self) -> None:
        """Releases the run's lock (the run log can still be read)."""
        self.lock.release()


class RunClock:
    """The clock and resume bookkeeping of a training run, kept next to its :class:`RunLog`.

    It holds the training time summed over resumes, the run's position (Adam steps plus
    L-BFGS iterations: the checkpoint numbers), the position of the last checkpoint, the stored
    L-BFGS result and the reason Adam stopped early, and saves them with every checkpoint, so a
    resumed run continues from them exactly.

    Args:
      run_log: the run log, or ``None`` (a run kept in memory: nothing is saved).
      adam_steps: the int variable counting the Adam steps taken (checkpointed with the model).

    Attributes:
      elapsed: training seconds up to the last :meth:`tick`.
      saved_at: the position of the last checkpoint (``None``: none yet).
      lbfgs: the finished L-BFGS phase's result fields, or ``None``.
      adam_stop: ``{"step", "reason"}`` once a callback stopped Adam, or ``None``.
    """

    def __init__(self, run_log: RunLog | None, adam_steps: Any):
        self.run_log, self.adam_steps = run_log, adam_steps
        self.elapsed: float = 0.0
        self.saved_at: int | None = None
        self.lbfgs: dict[str, Any] | None = None
        self.adam_stop: dict[str, Any] | None = None
        self._clock: float | None = None
        if run_log is not None and run_log.restored:
            self.elapsed = float(run_log.state.get("elapsed_seconds", 0.0))
            self.lbfgs = run_log.state.get("lbfgs")
            self.adam_stop = run_log.state.get("adam_stop")
            self.saved_at = self.position()

    def position(self) -> int:
        """Adam steps plus L-BFGS iterations so far: checkpoint numbers grow with the run."""
        return int(self.adam_steps.numpy()) + (self.lbfgs["nit"] if self.lbfgs else 0)

    @property
    def seconds(self) -> float:
        """Training time so far, summed over resumes (the running phase included)."""
        return self.elapsed + (time.perf_counter() - self._clock if self._clock is not None else 0.0)

    def start(self) -> None:
        """Starts timing a phase."""
        self._clock = time.perf_counter()

    def stop(self) -> None:
        """Ends a phase's timing. When its last act was to checkpoint this state, the time saved
        with it stands (the milliseconds after are dropped), so a resumed run reports the same."""
        if self.run_log is None or self.saved_at != self.position():
            self.tick()
        self._clock = None

    def tick(self) -> None:
        """Adds the time since the last tick to :attr:`elapsed`."""
        if self._clock is not None:
            now = time.perf_counter()
            self.elapsed += now - self._clock
            self._clock = now

    def save(self) -> None:
        """Checkpoints the run at its position with the clock and the phases' state (no-op without a run log)."""
        if self.run_log is None:
            return
        number = self.position()
        self.tick()
        self.run_log.save(number, elapsed_seconds=self.elapsed, lbfgs=self.lbfgs, adam_stop=self.adam_stop)
        self.saved_at = number
