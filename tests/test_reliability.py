"""Runs that cannot be fooled (issue 20): safe loading, one writer per run, provenance, crash-safe
Keras backups, readable errors. Each test here failed on the code before its fix."""

import dataclasses
import errno
import json
import logging
import os
import shutil
import signal
import subprocess
import sys
import zipfile

import keras
import numpy as np
import pytest
import tensorflow as tf

from hodiff import pinn
from hodiff.pinn.runlog import RunInUseError, RunLog, read_checkpoint_state
from hodiff.pinn.saving import load_solution, save_solution
from pinn_examples import heat
from pinn_examples.runner import run as run_example

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FAST = ["--preset", "fast", "--interior", "64", "--adam-steps", "20", "--lbfgs-iterations", "0", "--width", "8"]
FAST += ["--depth", "2", "--steps-per-call", "10", "--log-every", "10", "--checkpoint-every", "10", "--no-progress"]

LINE = pinn.Interval("x", 0.0, 1.0)
POINTS = np.linspace(0.0, 1.0, 7)[:, None]


@keras.saving.register_keras_serializable(package="tests_reliability")
def through_points(x, outputs):
    """Reads the whole point tensor (``x.points``), as a high-dimensional transform does."""
    return tf.reduce_sum(x.points, axis=1, keepdims=True) * (1.0 - x["x"][:, None]) * outputs


def poisson(transform):
    return pinn.Problem(LINE, needs=("u_xx",), residual=lambda d, x, p: d["u_xx"] + 1.0, output_transform=transform)


def tamper(path, reference):
    """Rewrites the output transform's reference in a saved .keras file (a zip holding config.json)."""
    with zipfile.ZipFile(path) as archive:
        members = {name: archive.read(name) for name in archive.namelist()}
    config = json.loads(members["config.json"])

    def visit(node):
        if isinstance(node, dict):
            if node.get("class_name") == "OutputTransform":
                node["config"]["transform"] = reference
            for value in node.values():
                visit(value)
        elif isinstance(node, list):
            for value in node:
                visit(value)

    visit(config)
    members["config.json"] = json.dumps(config).encode()
    with zipfile.ZipFile(path, "w") as archive:
        for name, data in members.items():
            archive.writestr(name, data)


# ----------------------------------------------------------------------------- 1, 2: safe loading
@pytest.mark.parametrize(
    "reference",
    [
        {"module": "builtins", "name": "print"},
        {"module": "tests_reliability_evil_module", "name": "transform"},
        {"registered_name": "tests_reliability>not_registered"},
    ],
)
def test_loading_a_tampered_solution_refuses_what_it_names_before_importing(reference, tmp_path, monkeypatch):
    path = tmp_path / "solution.keras"
    save_solution(path, poisson(through_points), pinn.mlp(LINE, width=4, depth=1))
    tamper(path, reference)
    evil = tmp_path / "tests_reliability_evil_module.py"
    evil.write_text(
        f"open({str(tmp_path / 'imported')!r}, 'w').close()\ndef transform(x, outputs):\n    return outputs\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    called = []
    monkeypatch.setattr("builtins.print", lambda *a, **k: called.append(a))
    with pytest.raises(ValueError, match="load_solution: .*output transform") as info:
        load_solution(path)
    message = str(info.value)
    if "module" in reference:
        assert f"{reference['module']}.{reference['name']}" in message and "register_keras_serializable" in message
        assert "safe_mode=False" in message
    assert not (tmp_path / "imported").exists(), "the named module was imported (its code ran)"
    assert called == [], "the named function was called"


def test_a_transform_using_x_points_predicts_the_same_after_save_and_load(tmp_path):
    model = pinn.mlp(LINE, width=4, depth=1, dtype="float64")
    problem = poisson(through_points)
    path = tmp_path / "solution.keras"
    save_solution(path, problem, model)
    before = problem.solution(model)(tf.constant(POINTS)).numpy()
    np.testing.assert_allclose(load_solution(path)(POINTS).numpy(), before, rtol=1e-14, atol=0)
    assert np.abs(before).max() > 0


# ----------------------------------------------------------------------------- 3: one writer per run
HOLDER = """
import sys, time
import tensorflow as tf
from hodiff.pinn.runlog import RunLog
log = RunLog(sys.argv[1], {"x": tf.Variable(1.0, dtype=tf.float64)}, settings={"seed": 0})
log.append({"phase": "adam", "step": 10, "loss": 0.5})
log.save(10)
print("ready", flush=True)
time.sleep(600)
"""


@pytest.fixture
def live_run(tmp_path):
    """A run directory written by a live process (a RunLog held in a subprocess)."""
    output = tmp_path / "run"
    process = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(output)],
        stdout=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": ROOT},
    )
    try:
        assert process.stdout.readline().strip() == "ready"
        yield output, process
    finally:
        process.kill()
        process.wait()


def test_a_second_writer_and_an_overwrite_of_a_live_run_are_refused_naming_the_process(live_run):
    output, process = live_run
    for kwargs in ({"resume": True}, {"overwrite": True}, {}):
        with pytest.raises(RunInUseError, match=f"being written by another run: process {process.pid} on "):
            RunLog(str(output), {"x": tf.Variable(1.0, dtype=tf.float64)}, settings={"seed": 0}, **kwargs)
    for flags in (["--overwrite"], ["--resume"]):
        with pytest.raises(SystemExit, match=f"--output: .* process {process.pid} .*another directory \\(--output\\)"):
            run_example(heat.EXAMPLE, [*FAST, *flags, "--output", str(output)])
    assert (output / "checkpoints" / "ckpt-10.index").exists(), "the live run's files are untouched"
    assert read_checkpoint_state(str(output / "checkpoints" / "ckpt-10"))["history"][0]["step"] == 10


def test_a_killed_writer_does_not_block_its_resume(live_run):
    output, process = live_run
    process.send_signal(signal.SIGKILL)
    process.wait()
    log = RunLog(str(output), {"x": tf.Variable(0.0, dtype=tf.float64)}, settings={"seed": 0}, resume=True)
    assert log.restored.endswith("ckpt-10") and [row["step"] for row in log.history] == [10]
    assert json.loads((output / ".lock").read_text())["pid"] == os.getpid(), "the lock names its new holder"
    log.close()


# ----------------------------------------------------------------------------- 4, 5: provenance, replica count
@pytest.fixture(scope="module")
def other_run(tmp_path_factory):
    """A tiny run written by another example ("burgers": heat's problem under another name, so that only
    the provenance tells them apart); checkpoints 10 and 20."""
    output = tmp_path_factory.mktemp("runs") / "burgers"
    assert run_example(dataclasses.replace(heat.EXAMPLE, name="burgers"), [*FAST, "--output", str(output)]) == 0
    assert sorted(name for name in os.listdir(output / "checkpoints") if name.endswith(".index")) == [
        "ckpt-10.index",
        "ckpt-20.index",
    ]
    return output


def test_evaluate_and_resume_refuse_a_run_written_by_another_example(other_run, tmp_path):
    output = tmp_path / "run"
    shutil.copytree(other_run, output)
    np.save(tmp_path / "p.npy", np.array([[0.5, 0.5]]))
    with pytest.raises(SystemExit, match="written by the example 'burgers', not 'heat'; .*pinn_examples burgers"):
        run_example(heat.EXAMPLE, ["--evaluate", str(tmp_path / "p.npy"), "--output", str(output)])
    assert not (output / "evaluation.npz").exists()
    with pytest.raises(SystemExit, match="heat: resume: .*example: 'burgers' in the run, 'heat' now"):
        run_example(heat.EXAMPLE, [*FAST, "--resume", "--output", str(output)])


def test_evaluation_records_its_checkpoint_and_warns_when_it_is_not_the_newest(other_run, tmp_path, caplog):
    burgers = dataclasses.replace(heat.EXAMPLE, name="burgers")
    output = tmp_path / "run"
    shutil.copytree(other_run, output)
    np.save(tmp_path / "p.npy", np.array([[0.5, 0.5], [0.25, 0.75]]))
    argv = ["--evaluate", str(tmp_path / "p.npy"), "--output", str(output)]
    assert run_example(burgers, argv) == 0
    with np.load(output / "evaluation.npz") as evaluation:
        assert str(evaluation["checkpoint"]) == "ckpt-20" and int(evaluation["step"]) == 20
        newest = evaluation["u"].copy()
    assert "not the newest" not in caplog.text and "older" not in caplog.text
    (output / "checkpoints" / "ckpt-20.data-00000-of-00001").write_bytes(b"")  # the newest is damaged
    with caplog.at_level(logging.WARNING):
        assert run_example(burgers, argv) == 0
    with np.load(output / "evaluation.npz") as evaluation:
        assert str(evaluation["checkpoint"]) == "ckpt-10" and int(evaluation["step"]) == 10
        assert not np.allclose(evaluation["u"], newest), "the older weights were used"
    assert "the newest checkpoint ckpt-20 is unreadable; evaluated the older ckpt-10 (step 10)" in caplog.text


def test_resuming_with_another_replica_count_is_refused_with_the_fix(other_run, tmp_path):
    output = tmp_path / "run"
    shutil.copytree(other_run, output)
    log = lambda **provenance: RunLog(  # noqa: E731
        str(output),
        {},
        settings=read_checkpoint_state(str(output / "checkpoints" / "ckpt-20"))["settings"],
        resume=True,
        provenance={"example": "burgers", "multi_worker": False, **provenance},
    )
    with pytest.raises(ValueError, match=r"replicas: 1 in the run, 2 now\. Resume it as it was written \(.*replicas=1"):
        log(replicas=2)
    assert log(replicas=1).restored.endswith("ckpt-20")
    # the command line: --replicas 2 (logical CPU devices: a fresh process) on the one-replica run
    command = [sys.executable, "-m", "pinn_examples", "heat", *FAST, "--replicas", "2", "--resume", "--output"]
    shutil.rmtree(output)
    shutil.copytree(other_run, output)
    state = read_checkpoint_state(str(output / "checkpoints" / "ckpt-20"))
    assert state["provenance"] == {"example": "burgers", "replicas": 1, "multi_worker": False}
    process = subprocess.run(
        [*command, str(output)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": ROOT},
    )
    assert process.returncode == 1 and "replicas: 1 in the run, 2 now" in process.stderr, process.stderr[-2000:]


# ----------------------------------------------------------------------------- 11: messages, not tracebacks
def test_resume_with_every_checkpoint_corrupt_stops_with_a_message(other_run, tmp_path):
    output = tmp_path / "run"
    shutil.copytree(other_run, output)
    for name in os.listdir(output / "checkpoints"):
        if name.startswith("ckpt-"):
            (output / "checkpoints" / name).write_bytes(b"")
    burgers = dataclasses.replace(heat.EXAMPLE, name="burgers")
    with pytest.raises(
        SystemExit, match="burgers: resume: no checkpoint in .* could be read: ckpt-20.*ckpt-10.*--overwrite"
    ):
        run_example(burgers, [*FAST, "--resume", "--output", str(output)])


# ----------------------------------------------------------------------------- 8: every shared flag honoured or refused
@pytest.mark.parametrize("flags", [["--replicas", "2"], ["--multi-worker"]])
def test_highdim_refuses_the_distribution_flags_it_does_not_honour(flags, tmp_path, capsys, monkeypatch):
    from pinn_examples import highdim

    monkeypatch.setenv(
        "TF_CONFIG", json.dumps({"cluster": {"worker": ["a:1"]}, "task": {"type": "worker", "index": 0}})
    )
    monkeypatch.setattr(pinn.Trainer, "__init__", lambda *a, **k: pytest.fail("highdim trained, ignoring the flag"))
    with pytest.raises(SystemExit) as info:
        highdim.run(["--preset", "fast", *flags, "--output", str(tmp_path / "run")])
    assert info.value.code == 2 and f"{flags[0]}: highdim trains on one device" in capsys.readouterr().err
    assert not (tmp_path / "run").exists()
    for example in examples_on_the_shared_runner():
        assert set(example.unsupported_flags) <= {"--replicas", "--multi-worker"}


def examples_on_the_shared_runner():
    """Every registered example built on runner.Example."""
    import importlib

    from pinn_examples import EXAMPLES

    modules = [importlib.import_module(f"pinn_examples.{name}") for name in EXAMPLES]
    return [module.EXAMPLE for module in modules if hasattr(module, "EXAMPLE")]


# ----------------------------------------------------------------------------- 10: batch_jacobian of an empty batch
@pytest.mark.parametrize("mode", ["eager", "graph", "xla"])
def test_batch_jacobian_of_an_empty_batch_of_unknown_size(mode):
    from hodiff import batch_jacobian

    jacobian = batch_jacobian(lambda x: tf.stack([x[:, 0] * x[:, 1], tf.sin(x[:, 0])], axis=1))
    if mode != "eager":  # the batch size is unknown when the function is traced
        signature = [tf.TensorSpec((None, 2), tf.float64)]
        jacobian = tf.function(jacobian, input_signature=signature, jit_compile=mode == "xla")
    empty = jacobian(tf.zeros((0, 2), tf.float64))
    assert empty.shape == (0, 2, 2)
    x = np.array([[1.0, 2.0], [3.0, -1.0]])
    expected = np.array([[[2.0, 1.0], [np.cos(1.0), 0.0]], [[-1.0, 3.0], [np.cos(3.0), 0.0]]])
    np.testing.assert_allclose(jacobian(tf.constant(x)).numpy(), expected, rtol=1e-14)


# ----------------------------------------------------------------------------- 9: reference caches
def test_a_corrupt_fd_cache_warns_and_is_recomputed_and_a_killed_write_leaves_no_partial_cache(
    tmp_path, monkeypatch, caplog
):
    from pinn_examples import fd_references

    grid = (np.arange(3.0), np.arange(4.0), np.ones((3, 4)))
    solved = []
    monkeypatch.setattr(fd_references, "poisson_lshape_fd", lambda n: solved.append(n) or grid)
    monkeypatch.setenv("HODIFF_CACHE", str(tmp_path))
    fd_references.cached.cache_clear()
    path = tmp_path / "fd_lshape_5.npz"
    path.write_bytes(b"PK\x03\x04 truncated")  # what a kill during a non-atomic np.savez leaves
    with caplog.at_level(logging.WARNING):
        x, _, u = fd_references.cached("lshape", 5)
    assert (
        solved == [5]
        and "fd_lshape_5.npz is not a readable .npz archive" in caplog.text
        and "computing the reference again" in caplog.text
    )
    np.testing.assert_array_equal(u, grid[2])
    with np.load(path) as saved:
        np.testing.assert_array_equal(saved["u"], grid[2])
    fd_references.cached.cache_clear()

    def killed(file, **arrays):
        file.write(b"PK\x03\x04 partial")
        raise KeyboardInterrupt

    path.unlink()
    monkeypatch.setattr(np, "savez", killed)
    with pytest.raises(KeyboardInterrupt):
        fd_references.cached("lshape", 5)
    assert os.listdir(tmp_path) == [], "no partial cache and no temporary file"
    fd_references.cached.cache_clear()


def test_a_corrupt_cavity_cache_warns_and_is_recomputed(tmp_path, monkeypatch, caplog):
    from pinn_examples import cavity_reference

    cells = 4
    solution = cavity_reference.solve(cells)
    calls = []
    monkeypatch.setattr(cavity_reference, "solve", lambda c: calls.append(c) or solution)
    path = tmp_path / f"cavity_nu{cavity_reference.NU}_{cells}.npz"
    path.write_bytes(b"")
    x = y = np.linspace(0.0, 1.0, 5)
    with caplog.at_level(logging.WARNING):
        values = cavity_reference.lid_driven_cavity(x, y, cells=cells, cache=str(tmp_path))
    assert calls == [cells] and "is not a readable .npz archive" in caplog.text
    again = cavity_reference.lid_driven_cavity(x, y, cells=cells, cache=str(tmp_path))
    assert calls == [cells], "the rewritten cache is read"
    for name in ("u", "v", "p"):
        np.testing.assert_array_equal(again[name], values[name])


def test_trainer_predict_gives_empty_for_no_points_and_names_a_wrong_shape():
    problem = pinn.Problem(LINE * pinn.TimeDomain("t", 0.0, 1.0), needs=("u_t",), residual=lambda d, x, p: d["u_t"])
    trainer = pinn.Trainer(problem, pinn.mlp(problem.domain, width=4, depth=1), interior=8, progress=False)
    empty = trainer.predict(np.zeros((0, 2)))
    assert empty.shape == (0, 1)
    np.testing.assert_array_equal(
        trainer.predict([[0.5, 0.5]]), trainer.predict(np.array([[0.5, 0.5], [0.0, 1.0]]))[:1]
    )
    for points, shape in ((np.zeros((3, 3)), r"\(3, 3\)"), (np.zeros(2), r"\(2,\).*points\[None, :\]")):
        with pytest.raises(
            ValueError, match=rf"Trainer.predict: `points` must have shape \(N, 2\).*\('x', 't'\).*{shape}"
        ):
            trainer.predict(points)


def test_run_info_json_that_is_not_an_object_falls_back_to_the_checkpoint(tmp_path, caplog):
    log = RunLog(str(tmp_path), {"x": tf.Variable(1.0, dtype=tf.float64)}, settings={"seed": 0})
    log.run_info["initial_error"] = 0.5
    log.save(10)
    log.close()
    (tmp_path / "run_info.json").write_text("[1, 2]")
    with caplog.at_level(logging.WARNING):
        resumed = RunLog(str(tmp_path), {"x": tf.Variable(1.0, dtype=tf.float64)}, settings={"seed": 0}, resume=True)
    assert resumed.run_info == {"initial_error": 0.5}
    assert "run_info.json holds a JSON list, not an object" in caplog.text


def npy_header(path, shape, data=b""):
    with open(path, "wb") as file:
        np.lib.format.write_array_header_1_0(file, {"descr": "<f8", "fortran_order": False, "shape": shape})
        file.write(data)
    return path


def test_evaluate_checks_the_npy_header_against_the_file_and_the_memory(other_run, tmp_path, monkeypatch):
    burgers = dataclasses.replace(heat.EXAMPLE, name="burgers")
    claimed = npy_header(tmp_path / "huge.npy", (10**11, 2), np.zeros(4).tobytes())
    with pytest.raises(SystemExit, match=r"header claims shape \(100000000000, 2\) .*1\.6e\+12 bytes.* holds 32"):
        run_example(burgers, ["--evaluate", str(claimed), "--output", str(other_run)])
    sparse = npy_header(tmp_path / "sparse.npy", (2**20, 2))
    with open(sparse, "r+b") as file:
        file.truncate(file.seek(0, 2) + 2**24)  # a whole (sparse) 16 MiB array
    real = os.sysconf
    monkeypatch.setattr(os, "sysconf", lambda name: 1024 if name == "SC_PHYS_PAGES" else real(name))
    with pytest.raises(
        SystemExit, match=r"2097152 numbers of shape \(1048576, 2\) need .* more than this machine.s .*memory"
    ):
        run_example(burgers, ["--evaluate", str(sparse), "--output", str(other_run)])


def no_space(*args, **kwargs):
    raise OSError(errno.ENOSPC, "No space left on device")


def test_a_full_disk_names_the_file_and_the_space_the_run_needs(tmp_path, monkeypatch):
    from hodiff.pinn.runlog import DiskFullError, write_json

    write_json(tmp_path / "metrics.json", {"error": 1.0})
    with monkeypatch.context() as patch:
        patch.setattr(json, "dump", no_space)
        with pytest.raises(
            DiskFullError,
            match=r"no space left on the device while writing .*metrics.json \(.* MiB free\); the file needs about",
        ):
            write_json(tmp_path / "metrics.json", {"error": 2.0})
    assert json.loads((tmp_path / "metrics.json").read_text()) == {"error": 1.0}
    log = RunLog(str(tmp_path / "run"), {"x": tf.Variable(np.zeros(1000))}, settings={"seed": 0})
    log.save(10)
    full = tf.errors.ResourceExhaustedError(None, None, "ckpt-20_temp; No space left on device")
    monkeypatch.setattr(tf.train.CheckpointManager, "save", lambda *a, **k: (_ for _ in ()).throw(full))
    with pytest.raises(
        DiskFullError, match=r"writing .*ckpt-20 .*each checkpoint of this run takes about 0.00[0-9]+ MiB.*keeps 2 plus"
    ):
        log.save(20)
    log.close()
    with pytest.raises(
        SystemExit, match=r"^heat: no space left on the device while writing .*ckpt-10 .* free.*resume it\.$"
    ):
        run_example(heat.EXAMPLE, [*FAST, "--output", str(tmp_path / "heat")])


def test_a_full_disk_when_the_run_lock_is_written_ends_in_a_message_not_a_traceback(tmp_path, monkeypatch):
    """Issue 46 item 10: a disk already full when the example writes its run lock (simulated: ENOSPC from the lock
    file's write) stopped the PINN runner and maml_omniglot with a raw OSError traceback."""
    from hodiff.pinn import runlog
    from pinn_examples import maml_omniglot

    real = os.write

    def write(fd, data):
        if b'"pid"' in bytes(data):  # the lock file's content
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(fd, data)

    monkeypatch.setattr(runlog.os, "write", write)
    with pytest.raises(
        SystemExit,
        match=r"^heat: no space left on the device while writing .*heat/\.lock .*then start the run again\.$",
    ):
        run_example(heat.EXAMPLE, [*FAST, "--output", str(tmp_path / "heat")])
    assert not os.path.exists(tmp_path / "heat" / "checkpoints")
    with pytest.raises(SystemExit, match=r"^maml_omniglot: no space left on the device while writing .*\.lock"):
        maml_omniglot.main(["--preset", "fast", "--output", str(tmp_path / "omniglot")])


# ----------------------------------------------------------------------------- 6: a crash-safe backup for fit
KERAS_PROBLEM = pinn.Problem(
    LINE,
    needs=("u_xx",),
    residual=lambda d, x, p: d["u_xx"] + p["k"],
    conditions=[pinn.Dirichlet(0.0, count=2), pinn.Data(np.array([[0.25], [0.75]]), np.array([0.1875, 0.1875]))],
    parameters={"k": 1.0},
)


def keras_model(seed=0):
    model = pinn.PINNModel(KERAS_PROBLEM, pinn.mlp(LINE, width=8, depth=2, seed=seed), interior=16)
    model.compile(optimizer=keras.optimizers.Adam(1e-2))
    return model


def fit(model, *callbacks):
    return model.fit(epochs=4, steps_per_epoch=5, callbacks=[pinn.UniformResampling(every=10), *callbacks], verbose=0)


@pytest.fixture(scope="module")
def uninterrupted_fit():
    model = keras_model()
    fit(model)
    return model


def fault_points():
    """("before" | "after", k) for every rename of one epoch's backup, and "torn" (a half-written checkpoint)."""
    from tensorflow.python.lib.io import file_io

    return [(when, k) for k in range(3) for when in ("before", "after")] + [("torn", 0)], file_io


@pytest.mark.parametrize("fault", fault_points()[0], ids=lambda fault: f"{fault[0]}-rename-{fault[1]}")
def test_backup_callback_resumes_exactly_after_a_kill_at_every_write(fault, uninterrupted_fit, tmp_path, monkeypatch):
    """Killed while writing the backup of epoch 2 of 4 (at each rename, before or after it, or with the
    checkpoint's data half written), a fresh model (other initial weights, a new optimizer) rerun with the
    callback ends with the uninterrupted run's weights, parameters, points and Adam state."""
    when, k = fault
    file_io = fault_points()[1]
    backup = str(tmp_path / "backup")
    renames = {"count": 0}

    class Arm(keras.callbacks.Callback):  # faults only in the backup written at the end of epoch index 1
        def on_epoch_end(self, epoch, logs=None):
            renames["armed"] = epoch == 1

    def faulty(original):
        def rename(source, target, *args, **kwargs):
            if renames.get("armed"):
                renames["count"] += 1
                if renames["count"] == k + 1 and when == "before":
                    raise KeyboardInterrupt
                result = original(source, target, *args, **kwargs)
                if renames["count"] == k + 1 and when == "after":
                    raise KeyboardInterrupt
                return result
            return original(source, target, *args, **kwargs)

        return rename

    with monkeypatch.context() as patch:
        if when == "torn":
            write = tf.train.Checkpoint._write  # what CheckpointManager.save calls

            def torn(self, prefix, *args, **kwargs):
                path = write(self, prefix, *args, **kwargs)
                if renames.get("armed"):
                    data = f"{path}.data-00000-of-00001"
                    with open(data, "r+b") as file:
                        file.truncate(os.path.getsize(data) // 2)
                    raise KeyboardInterrupt
                return path

            patch.setattr(tf.train.Checkpoint, "_write", torn)
        else:
            patch.setattr(os, "replace", faulty(os.replace))
            patch.setattr(file_io, "rename", faulty(file_io.rename))
        with pytest.raises(KeyboardInterrupt):
            fit(keras_model(), Arm(), pinn.BackupCallback(backup))  # Arm runs first: it arms epoch 1's backup
        if when != "torn":
            assert renames["count"] == k + 1, "the fault was injected"
    resumed = keras_model(seed=7)
    history = fit(resumed, pinn.BackupCallback(backup))
    assert 2 <= len(history.history["loss"]) <= 3, "resumed at epoch 1 or 2, not from the start"
    assert int(resumed.optimizer.iterations.numpy()) == 20
    for a, b in zip(uninterrupted_fit.get_weights(), resumed.get_weights()):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-13)
    for a, b in zip(uninterrupted_fit.optimizer.variables, resumed.optimizer.variables):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-10, atol=1e-13)
    assert not os.path.exists(backup), "the backup of a finished fit is removed"


def test_backup_callback_keeps_a_finished_backup_on_request(tmp_path):
    backup = str(tmp_path / "backup")
    model = keras_model()
    fit(model, pinn.BackupCallback(backup, delete_on_end=False))
    assert read_checkpoint_state(str(tmp_path / "backup" / "checkpoints" / "ckpt-4"))["epoch"] == 4
    again = keras_model(seed=3)
    assert fit(again, pinn.BackupCallback(backup, delete_on_end=False)).history == {}, "all 4 epochs were done"
    for a, b in zip(model.get_weights(), again.get_weights()):
        np.testing.assert_array_equal(a, b)


def test_backup_callback_resumes_past_a_directory_in_place_of_its_checkpoint_files(tmp_path, caplog):
    """Issue 46 item 10 through fit: the backup's checkpoint index and its newest checkpoint's index replaced by
    directories; the next fit moves them aside (kept), resumes from the epoch before and finishes."""
    backup = tmp_path / "backup"
    model = keras_model()
    fit(model, pinn.BackupCallback(str(backup), delete_on_end=False))
    for name in ("checkpoint", "ckpt-4.index"):
        path = backup / "checkpoints" / name
        path.unlink()
        path.mkdir()
    again = keras_model(seed=3)
    with caplog.at_level(logging.WARNING):
        history = fit(again, pinn.BackupCallback(str(backup), delete_on_end=False))
    assert len(history.history["loss"]) == 1, "epoch 4 again, from the backup of epoch 3"
    assert "checkpoint is a directory" in caplog.text and "ckpt-4.index is a directory" in caplog.text
    moved = sorted(p.name.split(".moved-aside-")[0] for p in (backup / "checkpoints").glob("*.moved-aside-*"))
    assert moved == ["checkpoint", "ckpt-4.index"]
    assert read_checkpoint_state(str(backup / "checkpoints" / "ckpt-4"))["epoch"] == 4
