"""gray_scott (PINNacle GS): the residual is the PDE, the hard conditions hold (the initial values, the initial
condition outside the box, zero flux), the cosine restart continues the window before; a tiny run answers
--evaluate over the whole square; the fast preset's windows resume; bad flags."""

import dataclasses
import json

import numpy as np
import pytest

from pinn_examples import gray_scott
from pinn_examples import gray_scott_reference as ref

TINY = [
    "--preset", "fast", "--interior", "64", "--adam-steps", "10", "--lbfgs-iterations", "0", "--architecture", "mlp",
    "--no-progress",
]  # fmt: skip


def coarse_reference():
    """A coarse reference (a second): the plumbing needs its shapes, not its accuracy."""
    return ref.gray_scott_reference(16, 1.0)


def test_the_residual_is_the_pde():
    import tensorflow as tf

    rng = np.random.default_rng(0)
    names = ("u", "u_t", "u_xx", "u_yy", "v", "v_t", "v_xx", "v_yy")
    d = {name: rng.normal(size=20) for name in names}
    got = gray_scott.residual({k: tf.constant(v) for k, v in d.items()}, {}, {})
    u, v = d["u"], d["v"]
    expected_u = d["u_t"] - 1e-5 * (d["u_xx"] + d["u_yy"]) - 0.04 * (1 - u) + u * v**2
    expected_v = d["v_t"] - 5e-6 * (d["v_xx"] + d["v_yy"]) + 0.1 * v - u * v**2
    np.testing.assert_allclose(got["equation_u"].numpy(), expected_u, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(got["equation_v"].numpy(), expected_v, rtol=1e-12, atol=1e-12)


def test_the_hard_conditions_hold():
    """At t = 0 the initial condition; outside the box [-0.5, 0.5]^2 the initial condition at every time; the
    network's part with zero slope across the box's edges; the interior points in the box."""
    import tensorflow as tf

    from hodiff import pinn
    from hodiff.operators import partials

    settings = gray_scott.EXAMPLE.presets["fast"]
    problem, model = gray_scott.build(settings)
    solution = gray_scott.windows(settings).problem(problem, 0).solution(pinn.windows.freeze(model))
    rng = np.random.default_rng(1)
    space = rng.uniform(-1, 1, size=(40, 2))
    at_start = solution(tf.constant(np.column_stack([space, np.zeros(40)]))).numpy()
    np.testing.assert_allclose(at_start, np.column_stack(ref.initial(space[:, 0], space[:, 1])), atol=1e-14)
    outside = np.array([[0.5, 0.1, 30.0], [-0.7, 0.0, 99.0], [0.2, -0.5, 60.0], [0.9, -0.95, 10.0]])
    values = solution(tf.constant(outside)).numpy()
    np.testing.assert_allclose(values, np.column_stack(ref.initial(outside[:, 0], outside[:, 1])), atol=1e-14)
    inside = np.column_stack([space * 0.4, np.full(40, 50.0)])
    u0 = np.column_stack(ref.initial(inside[:, 0], inside[:, 1]))
    assert np.abs(solution(tf.constant(inside)).numpy() - u0).max() > 1e-3  # the network contributes inside
    edges = np.array([[0.5, 0.1, 30.0], [-0.5, -0.2, 70.0]])
    slopes = partials(lambda p: solution(p)[:, 1], tf.constant(edges), ("x", "y", "t"), ("x",))["x"]
    x, y = edges[:, 0], edges[:, 1]
    exact = -160.0 * (x - 0.05) * ref.initial(x, y)[1]  # the initial condition's slope, the network's part none
    np.testing.assert_allclose(slopes.numpy(), exact, rtol=1e-10, atol=1e-14)
    points = problem.domain.sample_interior(500, seed=3)
    assert np.abs(points[:, :2]).max() <= 0.5 and np.abs(points[:, :2]).max() > 0.45
    assert problem.domain.contains(np.array([[0.9, -0.9, 10.0]]))[0]  # the square: --evaluate answers everywhere


def test_the_cosine_restart_continues_the_window_before():
    """Window 1 starts from the cosine series of window 0's change at t = 100: equal to it there, second derivatives
    included (exact for a cosine product of the grid's modes), taken once; outside the box the initial condition."""
    import tensorflow as tf

    from hodiff.operators import partials

    calls = []
    box = 0.5

    def previous(points):
        calls.append(1)
        x, y = points[:, 0:1], points[:, 1:2]
        initial = gray_scott.initial({"x": x[:, 0], "y": y[:, 0]})
        change = tf.cos(3 * np.pi * (x + box) / (2 * box)) * tf.cos(2 * np.pi * (y + box) / (2 * box))
        inside = tf.cast((tf.abs(x) < box) & (tf.abs(y) < box), x.dtype)
        return initial + inside * tf.concat([0.3 * change, -0.2 * change], axis=1)

    settings = gray_scott.GrayScottSettings(dtype="float64", restart_grid=16, box=box, time_windows=2)
    series = gray_scott.windows(settings).restart(previous, 100.0)
    assert len(calls) == 1
    points = np.column_stack([np.random.default_rng(2).uniform(-0.45, 0.45, size=(25, 2)), np.full(25, 100.0)])
    points = tf.constant(points)
    for field in (0, 1):
        before = partials(lambda p, f=field: previous(p)[:, f], points, ("x", "y", "t"), ("", "xx", "yy"))
        after = partials(lambda p, f=field: series(p)[:, f], points, ("x", "y", "t"), ("", "xx", "yy"))
        for key in before:
            np.testing.assert_allclose(after[key].numpy(), before[key].numpy(), rtol=1e-9, atol=1e-9)
    far = np.array([[0.8, 0.1, 100.0], [-0.3, -0.6, 100.0]])
    np.testing.assert_allclose(series(tf.constant(far)).numpy(), np.column_stack(ref.initial(far[:, 0], far[:, 1])))


@pytest.mark.slow  # 10-25 s: XLA compiles the training step and the solution; the pieces are tested above
def test_tiny_run_answers_evaluate_over_the_square(tmp_path, monkeypatch):
    monkeypatch.setattr(gray_scott, "gray_scott_reference", coarse_reference)
    output = tmp_path / "run"
    argv = [*TINY, "--time-windows", "1", "--output", str(output)]
    assert gray_scott.main(argv) == 0  # the fast preset has no target
    metrics = json.loads((output / "metrics.json").read_text())
    assert metrics["error_points"] == 20_000 and 0.0 < metrics["relative_l2_error"] < 2.0
    assert 0.0 < metrics["relative_l2_error_u"] < metrics["relative_l2_error_v"]
    points = np.array([[-1.0, -1.0, 0.0], [0.05, 0.02, 0.0], [0.95, 0.3, 200.0], [0.1, 0.1, 150.0]])
    np.save(tmp_path / "points.npy", points)
    assert gray_scott.main(["--output", str(output), "--evaluate", str(tmp_path / "points.npy")]) == 0
    evaluated = np.load(output / "evaluation.npz")
    initial = ref.initial(points[:3, 0], points[:3, 1])
    for field, exact in zip(gray_scott.FIELDS, initial):
        np.testing.assert_allclose(evaluated[field][:3], exact, atol=1e-12)  # t = 0, and outside the box
        assert np.isfinite(evaluated[field][3])


@pytest.mark.slow  # a minute: each window trains in a child process that compiles its own steps
def test_fast_run_with_windows_resumes_and_plots(tmp_path, monkeypatch):
    monkeypatch.setattr(gray_scott, "gray_scott_reference", coarse_reference)
    output = tmp_path / "run"
    monkeypatch.setenv("HODIFF_CACHE", str(tmp_path))  # the children do not need the reference; the parent's is coarse
    assert gray_scott.main([*TINY, "--output", str(output)]) == 0
    metrics = json.loads((output / "metrics.json").read_text())
    assert [(w["start"], w["end"]) for w in metrics["windows"]] == [(0.0, 100.0), (100.0, 200.0)]
    monkeypatch.setattr(gray_scott, "gray_scott_spectral", lambda n, dt, p: ref.gray_scott_spectral(16, 1.0, p))
    worst = gray_scott.plot_over_time(str(output), str(tmp_path / "over_time.png"), times=(2.0, 150.0), side=11)
    assert (tmp_path / "over_time.png").stat().st_size > 1000 and 0.0 < worst < 10.0
    assert gray_scott.main([*TINY, "--output", str(output), "--resume"]) == 0
    again = json.loads((output / "metrics.json").read_text())
    assert again["relative_l2_error"] == pytest.approx(metrics["relative_l2_error"], rel=1e-10)


@pytest.mark.parametrize(
    "flags, message",
    [
        (["--architecture", "resnet"], "invalid choice"),
        (["--box", "0"], "--box 0.0: give the half-width of the box of the pattern, in (0, 1]"),
        (["--box", "1.5"], "--box 1.5: give the half-width"),
        (["--restart-grid", "1"], "argument --restart-grid: '1' is out of range; give an integer 0 (off) or >= 2"),
    ],
)
def test_bad_flags_are_refused(flags, message, tmp_path, capsys):
    with pytest.raises((SystemExit, ValueError)) as raised:
        gray_scott.main([*TINY, *flags, "--output", str(tmp_path / "run")])
    assert message in capsys.readouterr().err + str(raised.value)


def test_the_settings_are_the_documented_ones():
    default = gray_scott.EXAMPLE.presets["default"]
    assert dataclasses.asdict(default)["box"] == 0.5 and default.time_windows == 10
    assert gray_scott.EXAMPLE.target == {"default": 1e-2}
