"""heat2d_lt (PINNacle Heat2d-LT): the residual is the PDE, the hard conditions hold, the sine restart continues
the window before; the fast preset runs through the runner's windows and answers --evaluate; bad flags."""

import dataclasses
import json

import numpy as np
import pytest

from pinn_examples import heat2d_lt
from pinn_examples import heat2d_lt_reference as ref

TINY = [
    "--preset", "fast", "--interior", "64", "--adam-steps", "10", "--lbfgs-iterations", "0", "--architecture", "mlp",
    "--no-progress",
]  # fmt: skip


def coarse_reference():
    """A coarse reference (seconds): the plumbing needs its shapes, not its accuracy."""
    return ref.heat2d_lt_reference(12, 0.25)


def test_the_residual_is_the_pde():
    import tensorflow as tf

    rng = np.random.default_rng(0)
    x, y, t = (tf.constant(v) for v in rng.uniform(size=(3, 20)) * np.array([[1.0], [1.0], [100.0]]))
    d = {name: tf.constant(rng.normal(size=20)) for name in ("u", "u_t", "u_xx", "u_yy")}
    got = heat2d_lt.residual(d, {"x": x, "y": y, "t": t}, {}).numpy()
    x, y, t = x.numpy(), y.numpy(), t.numpy()
    source = 5 * np.sin(d["u"].numpy() ** 2) * (1 + 2 * np.sin(np.pi * t / 4)) * np.sin(4 * np.pi * x)
    expected = d["u_t"].numpy() - 0.001 * (d["u_xx"].numpy() + d["u_yy"].numpy()) - source * np.sin(2 * np.pi * y)
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12)


def test_the_hard_conditions_hold_in_every_window():
    """At t = t_k the window's solution is the one before (the initial condition in the first); u = 0 on the walls."""
    import tensorflow as tf

    from hodiff import pinn

    settings = heat2d_lt.EXAMPLE.presets["fast"]
    problem, model = heat2d_lt.build(settings)
    windows = heat2d_lt.windows(settings)
    first = windows.problem(problem, 0).solution(pinn.windows.freeze(model))
    rng = np.random.default_rng(1)
    space = rng.uniform(size=(30, 2))
    start = tf.constant(np.column_stack([space, np.zeros(30)]))
    np.testing.assert_allclose(first(start).numpy()[:, 0], ref.initial(space[:, 0], space[:, 1]), atol=1e-13)
    walls = np.array([[0.0, 0.3, 7.0], [1.0, 0.6, 20.0], [0.2, 0.0, 33.0], [0.7, 1.0, 49.0], [0.25, 0.4, 40.0]])
    assert np.abs(first(tf.constant(walls)).numpy()).max() < 1e-13  # the sine walls: x = 1/4 too
    assert np.abs(first(tf.constant(np.column_stack([space, np.full(30, 40.0)])))).max() > 1e-3  # N contributes
    polynomial = dataclasses.replace(settings, sine_walls=False)
    problem, model = heat2d_lt.build(polynomial)
    first = heat2d_lt.windows(polynomial).problem(problem, 0).solution(pinn.windows.freeze(model))
    values = first(tf.constant(walls)).numpy()[:, 0]
    assert np.abs(values[:4]).max() < 1e-13 and abs(values[4]) > 1e-4  # x(1 - x): zero on the walls only


def test_the_sine_restart_continues_the_window_before():
    """Window 1 starts from the sine series of window 0 at t = 50: equal to it there, second derivatives included
    (exact for a sine product), taken once, and 0 on the walls."""
    import tensorflow as tf

    from hodiff.operators import partials

    calls = []

    def previous(points):
        calls.append(1)
        x, y, t = (points[:, i : i + 1] for i in range(3))
        second = 0.5 * tf.sin(5 * np.pi * x) * tf.sin(np.pi * y)
        return (1.0 + t) * tf.sin(2 * np.pi * x) * tf.sin(3 * np.pi * y) - second

    settings = heat2d_lt.HeatSettings(dtype="float64", restart_grid=16, time_windows=2)
    series = heat2d_lt.windows(settings).restart(previous, 50.0)
    assert len(calls) == 1
    points = tf.constant(np.column_stack([np.random.default_rng(2).uniform(size=(25, 2)), np.full(25, 50.0)]))
    before = partials(lambda p: previous(p)[:, 0], points, ("x", "y", "t"), ("", "xx", "yy"))
    after = partials(lambda p: series(p)[:, 0], points, ("x", "y", "t"), ("", "xx", "yy"))
    for key in before:
        np.testing.assert_allclose(after[key].numpy(), before[key].numpy(), rtol=1e-10, atol=1e-9)
    assert len(calls) == 2  # the check's own call only
    assert np.abs(series(tf.constant([[0.0, 0.4, 50.0], [0.3, 1.0, 50.0]], tf.float64)).numpy()).max() < 1e-12


@pytest.mark.slow  # 20 s (70 s at load 6): XLA compiles each window's steps; the pieces are tested above
def test_fast_run_with_windows_and_evaluate(tmp_path, monkeypatch):
    monkeypatch.setattr(heat2d_lt, "heat2d_lt_reference", coarse_reference)
    output = tmp_path / "run"
    assert heat2d_lt.main([*TINY, "--output", str(output)]) in (0, 3)  # 3: the target missed, as a fast run does
    metrics = json.loads((output / "metrics.json").read_text())
    assert [(w["start"], w["end"]) for w in metrics["windows"]] == [(0.0, 50.0), (50.0, 100.0)]
    assert metrics["error_points"] == 20_000 and 0.0 < metrics["relative_l2_error"] < 2.0
    saved = np.load(output / "prediction.npz")
    x, t = np.meshgrid(saved["x"], saved["t"], indexing="ij")
    points = np.stack([x.ravel(), np.full(x.size, ref.PICTURE_Y), t.ravel()], 1)
    np.save(tmp_path / "points.npy", points)
    assert heat2d_lt.main(["--output", str(output), "--evaluate", str(tmp_path / "points.npy")]) == 0
    evaluated = np.load(output / "evaluation.npz")
    np.testing.assert_allclose(evaluated["u"], saved["prediction"].ravel(), rtol=0, atol=1e-12)
    np.testing.assert_allclose(evaluated["u"].reshape(x.shape)[:, 0], ref.initial(saved["x"], 0.25), atol=1e-12)
    # the pictures over time: the run at t = 2, 6 against the (coarse) reference
    monkeypatch.setattr(heat2d_lt, "heat2d_lt_spectral", lambda n, dt, p: ref.heat2d_lt_spectral(12, 0.25, p))
    worst = heat2d_lt.plot_over_time(str(output), str(tmp_path / "over_time.png"), times=(2.0, 6.0), side=11)
    assert (tmp_path / "over_time.png").stat().st_size > 1000 and 0.0 < worst < 10.0
    # --resume of the finished run restores both windows (the second from the first's sine series) and scores alike
    assert heat2d_lt.main([*TINY, "--output", str(output), "--resume"]) in (0, 3)
    again = json.loads((output / "metrics.json").read_text())
    assert again["relative_l2_error"] == pytest.approx(metrics["relative_l2_error"], rel=1e-10)


@pytest.mark.parametrize(
    "flags, message",
    [
        (["--architecture", "resnet"], "invalid choice"),
        (["--restart-grid", "1"], "argument --restart-grid: '1' is out of range; give an integer 0 (off) or >= 2"),
        (["--time-windows", "0"], "out of range"),
    ],
)
def test_bad_flags_are_refused(flags, message, tmp_path, capsys):
    with pytest.raises((SystemExit, ValueError), match=None) as raised:
        heat2d_lt.main([*TINY, *flags, "--output", str(tmp_path / "run")])
    assert message in capsys.readouterr().err + str(raised.value)
