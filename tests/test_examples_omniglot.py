"""``python -m pinn_examples maml_omniglot``: the fast preset trains, evaluates, resumes exactly; bad --data."""

import io
import json
import re
import zipfile

import numpy as np
import pytest
import tensorflow as tf

from pinn_examples.maml_omniglot import main


def weights(output):
    """Every value of the newest checkpoint (the weights, Adam's moments, the iteration) by name."""
    reader = tf.train.load_checkpoint(tf.train.latest_checkpoint(f"{output}/checkpoints"))
    names = [
        name
        for name in reader.get_variable_to_shape_map()
        if name not in ("save_counter/.ATTRIBUTES/VARIABLE_VALUE", "_CHECKPOINTABLE_OBJECT_GRAPH")
    ]
    return {name: reader.get_tensor(name) for name in names}


def test_fast_preset_trains_evaluates_and_resumes_where_it_was_killed(tmp_path, capsys):
    killed, whole = str(tmp_path / "killed"), str(tmp_path / "whole")
    fast = ["--preset", "fast", "--checkpoint-every", "1", "--log-every", "1"]
    assert main([*fast, "--iterations", "2", "--output", killed, "--eval-tasks", "0"]) == 0  # "killed" at 2 of 4
    assert "iteration 2/2" in capsys.readouterr().out
    assert main([*fast, "--iterations", "4", "--output", killed, "--resume"]) == 0
    out = capsys.readouterr().out
    assert "restored iteration 2" in out and "iteration 3/4" in out and "iteration 1/4" not in out
    assert main([*fast, "--iterations", "4", "--output", whole, "--no-progress", "--eval-tasks", "0"]) == 0
    resumed, uninterrupted = weights(killed), weights(whole)
    assert sum("_trainable_variables" in name for name in resumed) == 18 and resumed.keys() == uninterrupted.keys()
    assert all(np.array_equal(resumed[name], uninterrupted[name]) for name in resumed)
    metrics = json.loads((tmp_path / "killed" / "metrics.json").read_text())
    assert metrics["iteration"] == 4 and metrics["tasks"] == 4 and 0.0 <= metrics["accuracy"] <= 1.0
    assert not (tmp_path / "whole" / "metrics.json").exists()
    (tmp_path / "killed" / "metrics.json").unlink()
    assert main(["--preset", "fast", "--output", killed, "--evaluate"]) == 0  # reads the run, trains nothing
    assert json.loads((tmp_path / "killed" / "metrics.json").read_text()) == metrics
    with pytest.raises(SystemExit, match="other settings"):
        main([*fast, "--output", killed, "--resume", "--shots", "2"])
    with pytest.raises(SystemExit, match="already holds a run"):
        main([*fast, "--output", killed])


def test_bad_data_files_are_refused_with_the_layout(tmp_path, capsys):
    """Refused by argparse (exit status 2, naming --data and the rule) before anything is loaded; a .npy file, a
    header claiming a huge shape and a file that is not an archive ended in tracebacks (issue 46 item 13)."""
    wrong_shape, wrong_key = tmp_path / "shape.npz", tmp_path / "key.npz"
    np.savez(wrong_shape, images=np.zeros((10, 20, 32, 32), np.uint8))
    np.savez(wrong_key, pixels=np.zeros((10, 20, 28, 28), np.uint8))
    plain = tmp_path / "imgs.npy"
    np.save(plain, np.zeros((10, 20, 28, 28), np.uint8))
    text = tmp_path / "text.npz"
    text.write_text("not an archive")
    huge = tmp_path / "huge.npz"
    member = io.BytesIO()
    np.lib.format.write_array_header_1_0(member, {"descr": "<f8", "fortran_order": False, "shape": (10**9, 20, 28, 28)})
    with zipfile.ZipFile(huge, "w") as archive:
        archive.writestr("images.npy", member.getvalue() + bytes(64))
    objects = tmp_path / "objects.npz"
    np.savez(objects, images=np.empty((1, 1, 28, 28), object))
    for path, message in (
        (wrong_shape, r"\(classes, examples, 28, 28\)"),
        (wrong_key, "not 'images'"),
        (tmp_path / "missing.npz", "no file"),
        (plain, "not a readable .npz archive"),
        (text, "not a readable .npz archive"),
        (huge, "claims shape .* truncated or corrupt"),
        (objects, "expected numbers"),
    ):
        with pytest.raises(SystemExit) as info:
            main(["--preset", "fast", "--data", str(path), "--output", str(tmp_path / "out")])
        error = capsys.readouterr().err
        assert info.value.code == 2 and "argument --data: " in error, error
        assert re.search(message, error), (message, error)


def test_a_run_written_by_another_live_process_is_refused(tmp_path):
    """maml_omniglot takes the run lock (hodiff.pinn.runlog.lock_run) as the PINN examples do: two --resume at
    once both trained into one directory (issue 46 item 9)."""
    import subprocess
    import sys

    output = tmp_path / "run"
    output.mkdir()
    (output / "run.json").write_text("{}")
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys; from hodiff.pinn.runlog import lock_run; lock = lock_run(sys.argv[1]); "
            "print('held', flush=True); sys.stdin.read()",
            str(output),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "held"
        for mode in (["--resume"], ["--evaluate"], []):
            with pytest.raises(SystemExit, match="is being written by another run: process"):
                main(["--preset", "fast", "--output", str(output), *mode])
    finally:
        holder.communicate("")  # the holder exits and its lock goes with it
    with pytest.raises(SystemExit, match="other settings"):  # past the lock: the run itself is checked
        main(["--preset", "fast", "--output", str(output), "--resume"])


def test_a_lost_or_damaged_checkpoint_index_loses_nothing(tmp_path, capsys):
    """Issue 46 item 10: the checkpoint index replaced by a directory made --evaluate and --resume say 'no
    checkpoint' (and a save fail) though the checkpoints were there: they are found by their files, the directory is
    moved aside (kept), and a damaged newest checkpoint falls back to the one before."""
    run = tmp_path / "run"
    fast = ["--preset", "fast", "--checkpoint-every", "1", "--output", str(run)]
    assert main([*fast, "--iterations", "2", "--eval-tasks", "0"]) == 0
    index = run / "checkpoints" / "checkpoint"
    index.unlink()
    (index / "inside").mkdir(parents=True)
    assert main([*fast, "--iterations", "4", "--resume", "--eval-tasks", "0"]) == 0
    assert "restored iteration 2" in capsys.readouterr().out
    (aside,) = list((run / "checkpoints").glob("checkpoint.moved-aside-*"))
    assert (aside / "inside").is_dir() and index.is_file(), "kept aside; the index written anew"
    (run / "checkpoints" / "ckpt-4.index").write_bytes(b"\x00garbage")
    assert main(["--preset", "fast", "--output", str(run), "--evaluate"]) == 0
    assert json.loads((run / "metrics.json").read_text())["iteration"] == 3  # ckpt-3, the one before
    for name in list((run / "checkpoints").glob("ckpt-*.index")):
        name.write_bytes(b"\x00garbage")
    with pytest.raises(SystemExit, match=r"--evaluate: .* has no readable checkpoint: ckpt-4: .*ckpt-3: .*train again"):
        main(["--preset", "fast", "--output", str(run), "--evaluate"])
