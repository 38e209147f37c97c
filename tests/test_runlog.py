"""Run log: atomic files, tolerant history reading, overwrite and resume rules, checkpoint faults."""

import json
import logging
import os

import numpy as np
import pytest
import tensorflow as tf

from hodiff.pinn.runlog import (
    RunLog,
    atomic_write,
    checkpoint_files,
    read_checkpoint_state,
    read_history,
    write_csv,
    write_json,
)


def test_atomic_write_replaces_on_success_and_keeps_the_old_file_on_failure(tmp_path):
    path = tmp_path / "metrics.json"
    write_json(path, {"error": 1.0})
    with pytest.raises(RuntimeError, match="killed"), atomic_write(path) as temporary:
        with open(temporary, "w") as file:
            file.write('{"error": 0.')  # half written when the run dies
        raise RuntimeError("killed")
    assert json.loads(path.read_text()) == {"error": 1.0}
    assert os.listdir(tmp_path) == ["metrics.json"], "no temporary file left behind"
    with pytest.raises(FileNotFoundError, match="nothing was written"), atomic_write(tmp_path / "empty.txt"):
        pass


def test_atomic_write_works_for_savez_and_savefig(tmp_path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    with atomic_write(tmp_path / "prediction.npz") as temporary:
        np.savez(temporary, u=np.arange(3.0))
    np.testing.assert_array_equal(np.load(tmp_path / "prediction.npz")["u"], np.arange(3.0))
    figure = plt.figure()
    with atomic_write(tmp_path / "field.png") as temporary:
        figure.savefig(temporary)
    plt.close(figure)
    assert (tmp_path / "field.png").read_bytes()[:4] == b"\x89PNG"
    assert sorted(os.listdir(tmp_path)) == ["field.png", "prediction.npz"]


def test_read_history_drops_a_truncated_last_row(tmp_path, caplog):
    path = tmp_path / "history.csv"
    rows = [{"phase": "adam", "step": 10, "loss": 0.5}, {"phase": "lbfgs", "step": 20, "loss": 0.25}]
    write_csv(path, rows)
    path.write_text(path.read_text() + "adam,30,0.1")
    assert read_history(path) == rows + [{"phase": "adam", "step": 30, "loss": 0.1}]
    path.write_text(path.read_text()[:-4] + "\n" + "lbfgs,4")  # garbled, then truncated mid-row
    with caplog.at_level(logging.WARNING):
        assert read_history(path) == rows
    assert "line 4 is truncated or garbled" in caplog.text and "line 5" in caplog.text


def log_in(directory, value=1.0, **kwargs):
    variable = tf.Variable(value, dtype=tf.float64)
    return RunLog(str(directory), {"x": variable}, settings={"seed": 0, "learning_rate": 1e-3}, **kwargs), variable


def saved_run(directory, steps=(10, 20, 30)):
    log, variable = log_in(directory)
    for step in steps:
        variable.assign(float(step))
        log.append({"phase": "adam", "step": step, "loss": 1.0 / step})
        log.save(step, elapsed_seconds=float(step))
    return log


def test_a_held_run_is_not_overwritten_silently(tmp_path):
    saved_run(tmp_path)
    with pytest.raises(
        FileExistsError, match="already holds a run.*resume=True \\(--resume\\).*overwrite=True \\(--overwrite\\)"
    ):
        log_in(tmp_path)
    log, _ = log_in(tmp_path, overwrite=True)
    assert log.history == [] and not os.path.exists(tmp_path / "history.csv") and log.latest_checkpoint is None
    with pytest.raises(FileNotFoundError, match="holds no run to resume"):
        log_in(tmp_path / "elsewhere", resume=True)


def test_resume_restores_history_state_and_run_info_of_the_checkpoint(tmp_path):
    log = saved_run(tmp_path)
    log.run_info["initial_error"] = 0.75
    log.save_run_info()
    log.append({"phase": "adam", "step": 40, "loss": 0.01})  # logged, then killed before its checkpoint
    resumed, variable = log_in(tmp_path, resume=True)
    assert variable.numpy() == 30.0 and resumed.state["elapsed_seconds"] == 30.0
    assert [row["step"] for row in resumed.history] == [10, 20, 30]
    assert [row["step"] for row in read_history(tmp_path / "history.csv")] == [10, 20, 30], (
        "history.csv matches the checkpoint"
    )
    assert resumed.run_info == {"initial_error": 0.75}


def test_resume_names_a_setting_newer_than_the_run(tmp_path):
    saved_run(tmp_path)
    with pytest.raises(
        ValueError, match=r"inlet_points: not recorded \(the run is older than this setting\) in the run, 512 now"
    ):
        RunLog(
            str(tmp_path),
            {"x": tf.Variable(1.0, dtype=tf.float64)},
            settings={"seed": 0, "learning_rate": 1e-3, "inlet_points": 512},
            resume=True,
        )


def test_resume_with_other_settings_lists_every_difference(tmp_path):
    saved_run(tmp_path)
    with pytest.raises(ValueError, match=r"learning_rate: 0.001 in the run, 0.01 now; seed: 0 in the run, 3 now"):
        RunLog(
            str(tmp_path),
            {"x": tf.Variable(1.0, dtype=tf.float64)},
            settings={"seed": 3, "learning_rate": 1e-2},
            resume=True,
        )


def test_a_truncated_latest_checkpoint_falls_back_to_the_previous_one(tmp_path, caplog):
    saved_run(tmp_path)
    data = tmp_path / "checkpoints" / "ckpt-30.data-00000-of-00001"
    with open(data, "r+b") as file:
        file.truncate(os.path.getsize(data) // 2)
    with caplog.at_level(logging.WARNING):
        resumed, variable = log_in(tmp_path, resume=True)
    assert (
        "ckpt-30" in caplog.text and variable.numpy() == 20.0 and [row["step"] for row in resumed.history] == [10, 20]
    )
    variable.assign(25.0)
    resumed.save(30, elapsed_seconds=30.0)  # the run goes on and rewrites checkpoint 30
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        assert log_in(tmp_path, resume=True)[1].numpy() == 25.0
    assert "corrupt" not in caplog.text


@pytest.mark.parametrize("damage", ["missing", "garbled", "empty", "binary"])
def test_a_lost_checkpoint_index_is_recovered_from_the_files(tmp_path, caplog, damage):
    saved_run(tmp_path)
    index = tmp_path / "checkpoints" / "checkpoint"
    if damage == "missing":
        index.unlink()
    elif damage == "garbled":
        index.write_text("model_checkpoint_path: {{{ garbage")
    elif damage == "empty":  # issue 20: ValueError from tf.train.get_checkpoint_state used to escape
        index.write_bytes(b"")
    else:  # UnicodeDecodeError used to escape
        index.write_bytes(bytes(range(256)))
    with caplog.at_level(logging.WARNING):
        resumed, variable = log_in(tmp_path, resume=True)
    assert variable.numpy() == 30.0 and len(resumed.history) == 3
    assert "recovering from the checkpoint files" in caplog.text
    assert tf.train.latest_checkpoint(str(tmp_path / "checkpoints")).endswith("ckpt-30"), "the index is rewritten"


def test_no_readable_checkpoint_is_an_error_not_a_fresh_start(tmp_path):
    saved_run(tmp_path, steps=(10, 20))
    for name in os.listdir(tmp_path / "checkpoints"):
        if name.endswith(".index"):
            (tmp_path / "checkpoints" / name).write_bytes(b"\x00garbage")
    with pytest.raises(RuntimeError, match="no checkpoint in .* could be read: ckpt-20.*ckpt-10"):
        log_in(tmp_path, resume=True)


def test_a_garbled_history_file_does_not_stop_resume(tmp_path):
    saved_run(tmp_path)
    path = tmp_path / "history.csv"
    path.write_text(path.read_text()[:-7])  # a kill in the middle of a non-atomic write
    resumed, _ = log_in(tmp_path, resume=True)
    assert [row["step"] for row in resumed.history] == [10, 20, 30]
    assert read_history(path) == resumed.history, "history.csv is rewritten whole from the checkpoint"


def test_checkpoints_are_listed_and_their_state_read_without_a_run_log(tmp_path):
    assert checkpoint_files(tmp_path) == []
    saved_run(tmp_path, steps=(10, 20, 30))
    files = checkpoint_files(tmp_path)
    assert [number for number, _ in files] == sorted((number for number, _ in files), reverse=True)
    state = read_checkpoint_state(files[0][1])
    assert state["settings"] == {"seed": 0, "learning_rate": 1e-3} and state["elapsed_seconds"] == 30.0
    assert [row["step"] for row in state["history"]] == [10, 20, 30]


def test_a_run_inside_a_held_run_inherits_its_provenance(tmp_path):
    """A time window's run (``OUTPUT/window-<k>``) stores the provenance of the marched run that encloses it, so that
    another example's --evaluate or --resume of it is refused as for a single run."""
    from hodiff.pinn.runlog import lock_run

    outer = lock_run(tmp_path / "run", provenance={"example": "ns2d_lt", "replicas": 1})
    window = lock_run(tmp_path / "run" / "window-3")
    beside = lock_run(tmp_path / "other")
    try:
        assert window.provenance == {"example": "ns2d_lt", "replicas": 1}
        assert beside.provenance == {}
    finally:
        for lock in (outer, window, beside):
            lock.release()


@pytest.mark.parametrize("where", ["index", "latest checkpoint's index", "latest checkpoint's data"])
def test_a_directory_in_place_of_a_checkpoint_file_is_moved_aside_and_the_run_goes_on(tmp_path, caplog, where):
    """The checkpoint index (``checkpoints/checkpoint``) or a checkpoint's own file replaced by a directory ended in
    IsADirectoryError / FailedPreconditionError tracebacks on resume and at the next save of that number (issue 46
    item 10): it is moved aside (its contents kept, named in a warning), the run resumes from the newest readable
    checkpoint, and saving that number again works."""
    saved_run(tmp_path)
    name = {"index": "checkpoint", "latest checkpoint's index": "ckpt-30.index"}.get(
        where, "ckpt-30.data-00000-of-00001"
    )
    path = tmp_path / "checkpoints" / name
    path.unlink()
    (path / "inside").mkdir(parents=True)
    (path / "inside" / "notes.txt").write_text("kept")
    with caplog.at_level(logging.WARNING):
        resumed, variable = log_in(tmp_path, resume=True)
    expected = 30.0 if where == "index" else 20.0  # a damaged ckpt-30 falls back to ckpt-20
    assert variable.numpy() == expected and len(resumed.history) == int(expected) // 10
    (aside,) = [p for p in (tmp_path / "checkpoints").iterdir() if p.name.startswith(name + ".moved-aside-")]
    assert (aside / "inside" / "notes.txt").read_text() == "kept", "nothing is lost"
    assert f"{name} is a directory, not a checkpoint file; it is moved aside to {aside.name}" in caplog.text
    variable.assign(35.0)
    resumed.save(30, elapsed_seconds=30.0)  # the same number again: written where the directory was
    assert log_in(tmp_path, resume=True)[1].numpy() == 35.0


def test_a_directory_put_in_place_of_the_index_during_a_run_does_not_stop_its_next_checkpoint(tmp_path, caplog):
    log = saved_run(tmp_path, steps=(10,))
    index = tmp_path / "checkpoints" / "checkpoint"
    index.unlink()
    index.mkdir()
    with caplog.at_level(logging.WARNING):
        log.save(20)
    assert "is moved aside" in caplog.text and index.is_file()
    assert tf.train.latest_checkpoint(str(tmp_path / "checkpoints")).endswith("ckpt-20")


@pytest.mark.parametrize("at", ["write", "open"])
def test_a_full_disk_when_the_lock_is_written_is_a_disk_full_error_and_leaves_no_lock(tmp_path, monkeypatch, at):
    """A disk already full when the run's lock file is created or written ended in a raw OSError traceback (issue 46
    item 10): it is a DiskFullError naming the file and the fix, and the lock is not kept."""
    import errno

    from hodiff.pinn import runlog

    real_write, real_open = os.write, os.open

    def write(fd, data):
        if b'"pid"' in bytes(data):  # the lock file's content
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_write(fd, data)

    def open_(path, *args, **kwargs):
        if os.fspath(path).endswith(runlog.LOCK):
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_open(path, *args, **kwargs)

    with monkeypatch.context() as patch:
        patch.setattr(runlog.os, "write" if at == "write" else "open", write if at == "write" else open_)
        with pytest.raises(
            runlog.DiskFullError,
            match=r"no space left on the device while writing .*\.lock \(.* free\); the run's lock file needs .*"
            r"nothing of it was written.*then start the run again",
        ):
            runlog.lock_run(tmp_path / "run")
        with pytest.raises(runlog.DiskFullError):
            log_in(tmp_path / "run")
    assert not any(path.endswith(os.path.join("run", runlog.LOCK)) for path in runlog._held)
    log_in(tmp_path / "run")[0].close()  # with room again, the run starts
