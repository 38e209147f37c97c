"""heat2d_ms (PINNacle Heat2d-MS): the closed form solves the PDE; the runner's --time-windows,
its merged history, --evaluate over the whole horizon, the window count as a setting."""

import csv
import json

import numpy as np
import pytest
import tensorflow as tf

from hodiff.operators import partials
from pinn_examples import heat2d_ms
from pinn_examples.runner import TARGET_MISSED

TINY = [
    "--interior", "64", "--adam-steps", "20", "--lbfgs-iterations", "0", "--width", "8", "--depth", "2",
    "--steps-per-call", "10", "--log-every", "10", "--checkpoint-every", "10", "--no-progress",
]  # fmt: skip


def test_the_closed_form_solves_the_pde_and_its_conditions():
    points = tf.constant(np.random.default_rng(0).uniform(size=(50, 3)) * [1.0, 1.0, 5.0])
    u = lambda p: tf.sin(20 * np.pi * p[:, 0]) * tf.sin(np.pi * p[:, 1]) * tf.exp(-heat2d_ms.DECAY * p[:, 2])  # noqa: E731
    d = partials(u, points, ("x", "y", "t"), ("t", "xx", "yy"))
    residual = heat2d_ms.residual({"u_t": d["t"], "u_xx": d["xx"], "u_yy": d["yy"]}, {}, {})
    assert heat2d_ms.DECAY == pytest.approx(1.0016, abs=1e-15)
    np.testing.assert_allclose(residual.numpy(), 0.0, atol=1e-12)
    np.testing.assert_allclose(heat2d_ms.exact(points.numpy()), u(points).numpy(), rtol=1e-13, atol=1e-15)
    edges = np.array([[0.0, 0.3, 1.0], [1.0, 0.7, 2.0], [0.4, 0.0, 3.0], [0.2, 1.0, 4.0]])
    np.testing.assert_allclose(heat2d_ms.exact(edges), 0.0, atol=1e-14)


def test_time_windows_through_the_runner_and_evaluate(tmp_path):
    output = tmp_path / "run"
    flags = ["--preset", "fast", *TINY, "--time-windows", "2", "--output", str(output)]
    assert heat2d_ms.main(flags) == 0  # every window in this process (no restart: a trainer per window)
    metrics = json.loads((output / "metrics.json").read_text())
    assert [(w["start"], w["end"], w["adam_steps"]) for w in metrics["windows"]] == [(0.0, 2.5, 20), (2.5, 5.0, 20)]
    with open(output / "history.csv") as file:
        rows = list(csv.DictReader(file))
    assert [w["final_loss"] for w in metrics["windows"]] == [float(rows[1]["loss"]), float(rows[3]["loss"])]
    assert [(r["window"], r["step"]) for r in rows] == [("0", "10"), ("0", "20"), ("1", "30"), ("1", "40")]
    assert (output / "window-0" / "checkpoints").is_dir() and (output / "window-1" / "checkpoints").is_dir()
    # --evaluate answers each point from its window: the slice the run predicted, both windows on it
    saved = np.load(output / "prediction.npz")
    x, t = np.meshgrid(saved["x"], saved["t"], indexing="ij")
    points = np.stack([x.ravel(), np.full(x.size, 0.5), t.ravel()], 1)
    np.save(tmp_path / "points.npy", points)
    assert heat2d_ms.main(["--output", str(output), "--evaluate", str(tmp_path / "points.npy")]) == 0
    evaluated = np.load(output / "evaluation.npz")
    np.testing.assert_allclose(evaluated["u"], saved["prediction"].ravel(), rtol=0, atol=1e-12)
    assert str(evaluated["checkpoint"]).startswith("window-1/")
    # the window count is a setting of the run (resuming a marched run itself: tests/test_windows.py)
    with pytest.raises(SystemExit, match="settings differ"):
        heat2d_ms.main([*flags[:-4], "--time-windows", "3", "--output", str(output), "--resume"])


def test_time_windows_are_refused_where_they_cannot_apply(tmp_path, capsys):
    from pinn_examples import heat

    with pytest.raises(SystemExit):
        heat.main(["--time-windows", "2", "--output", str(tmp_path / "a")])
    assert "heat has no time-marching windows" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        heat2d_ms.main(["--time-windows", "2", "--replicas", "2", "--output", str(tmp_path / "b")])
    assert "--time-windows trains on one device" in capsys.readouterr().err
    assert TARGET_MISSED == 3


@pytest.mark.parametrize("windows, kept", [("1", []), ("2", ["window-0", "window-1"])])
def test_overwrite_removes_the_windows_of_the_replaced_run_this_run_does_not_have(windows, kept, tmp_path, monkeypatch):
    from hodiff import pinn

    output = tmp_path / "run"
    for name in ("window-0", "window-1", "window-3", "window-x"):
        (output / name).mkdir(parents=True)

    def stop(*args, **kwargs):
        raise KeyboardInterrupt  # the old windows are gone before any training

    monkeypatch.setattr(pinn.Trainer, "__init__", stop)
    with pytest.raises(KeyboardInterrupt):
        heat2d_ms.main(["--time-windows", windows, "--overwrite", "--output", str(output)])
    assert sorted(p.name for p in output.iterdir() if p.name.startswith("window-")) == [*kept, "window-x"]


def test_a_failed_window_reports_its_own_error(tmp_path, monkeypatch):
    """Every window trains in this process: the error of the window that failed is the message, not a log line."""
    from hodiff import pinn

    adam = pinn.Trainer.adam

    def failing(trainer, steps):
        if trainer.settings["time_window"]["index"] == 1:
            raise ValueError("the second window's loss is not finite (a stand-in failure)")
        return adam(trainer, steps)

    monkeypatch.setattr(pinn.Trainer, "adam", failing)
    flags = ["--preset", "fast", *TINY, "--time-windows", "2", "--output", str(tmp_path / "run")]
    with pytest.raises(SystemExit, match="heat2d_ms: the second window's loss is not finite"):
        heat2d_ms.main(flags)
    assert (tmp_path / "run" / "window-0" / "checkpoints").is_dir()  # the first window's work is kept
