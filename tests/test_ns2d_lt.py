"""ns2d_lt (PINNacle NS2d-LT): the residual is the PDE, the hard conditions hold in every window; the fast preset runs,
scores (u, v, p) and (u, v), answers --evaluate and resumes; bad flags."""

import json

import numpy as np
import pytest

from pinn_examples import ns2d_lt
from pinn_examples import ns2d_lt_reference as ref

TINY = [
    "--preset", "fast", "--interior", "64", "--adam-steps", "10", "--lbfgs-iterations", "0", "--architecture", "mlp",
    "--time-windows", "1", "--no-progress",
]  # fmt: skip


def coarse_reference():
    """A coarse reference (a second): the plumbing needs its shapes, not its accuracy."""
    return ref.ns2d_lt_reference(8, 0.01, cache=None)


def test_the_residual_is_the_pde():
    import tensorflow as tf

    rng = np.random.default_rng(0)
    x, y, t = (tf.constant(v) for v in rng.uniform(size=(3, 20)) * np.array([[2.0], [1.0], [5.0]]))
    names = ("u", "v", "u_t", "v_t", "u_x", "u_y", "v_x", "v_y", "p_x", "p_y", "u_xx", "u_yy", "v_xx", "v_yy")
    d = {name: tf.constant(rng.normal(size=20)) for name in names}
    got = {k: v.numpy() for k, v in ns2d_lt.residual(d, {"x": x, "y": y, "t": t}, {}).items()}
    n = {k: v.numpy() for k, v in d.items()}
    x, y, t = x.numpy(), y.numpy(), t.numpy()
    force = -np.sin(np.pi * x) * np.sin(np.pi * y) * np.sin(np.pi * t)  # the y-momentum's right-hand side
    expected = {
        "momentum_x": n["u_t"] + n["u"] * n["u_x"] + n["v"] * n["u_y"] + n["p_x"] - 0.01 * (n["u_xx"] + n["u_yy"]),
        "momentum_y": n["v_t"] + n["u"] * n["v_x"] + n["v"] * n["v_y"] + n["p_y"] - 0.01 * (n["v_xx"] + n["v_yy"])
        - force,
        "continuity": n["u_x"] + n["v_y"],
    }  # fmt: skip
    for key in expected:
        np.testing.assert_allclose(got[key], expected[key], rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("stream", [True, False])
def test_the_hard_conditions_hold_in_every_window(stream):
    """The inflow, no slip and rest at t = 0 exactly; window 1 starts where window 0 ends (from its Chebyshev series,
    which holds the inflow and the walls to rounding); p has the lift; each window's network sees its local time (its
    window stretched over the horizon). With the stream function (the default) and without
    (``--no-stream-function``)."""
    import dataclasses

    import tensorflow as tf

    from hodiff import pinn

    settings = dataclasses.replace(
        ns2d_lt.EXAMPLE.presets["fast"], restart_nodes=ns2d_lt.RESTART_NODES, stream_function=stream, soft_inlet=False
    )
    problem, model = ns2d_lt.build(settings)
    windows = ns2d_lt.windows(settings)
    first = windows.problem(problem, 0).solution(pinn.windows.freeze(model))
    rng = np.random.default_rng(1)
    y, t = rng.uniform(size=20), rng.uniform(size=20) * 2.5
    inlet = first(tf.constant(np.column_stack([np.zeros(20), y, t]))).numpy()
    np.testing.assert_allclose(inlet[:, 0], np.sin(np.pi * y) * ref.inflow(t), atol=1e-13)
    np.testing.assert_allclose(inlet[:, 1], 0.0, atol=1e-13)
    walls = np.column_stack([rng.uniform(size=20) * 2.0, np.repeat([0.0, 1.0], 10), t])
    np.testing.assert_allclose(first(tf.constant(walls)).numpy()[:, :2], 0.0, atol=1e-13)
    space = rng.uniform(size=(20, 2)) * np.array([2.0, 1.0])
    np.testing.assert_allclose(first(tf.constant(np.column_stack([space, np.zeros(20)]))).numpy()[:, :2], 0.0)
    inside = first(tf.constant(np.column_stack([space, np.full(20, 1.3)]))).numpy()
    assert np.abs(inside[:, 1]).max() > 1e-4  # the network contributes
    second = windows.problem(problem, 1, first).solution(pinn.windows.freeze(model))
    middle = tf.constant(np.column_stack([space, np.full(20, 2.5)]))
    np.testing.assert_allclose(second(middle).numpy()[:, :2], first(middle).numpy()[:, :2], atol=1e-9)
    later = rng.uniform(size=20) * 2.5 + 2.5
    inlet = second(tf.constant(np.column_stack([np.zeros(20), y, later]))).numpy()
    np.testing.assert_allclose(inlet[:, 0], np.sin(np.pi * y) * ref.inflow(later), atol=1e-12)
    walls[:, 2] = later
    # the stream function's restart gets v on the wall y = 1 from continuity (the series' flux in y): to the fit's error
    np.testing.assert_allclose(second(tf.constant(walls)).numpy()[:, :2], 0.0, atol=1e-10 if stream else 1e-12)
    g_rate = np.pi * sum(k * np.cos(k * np.pi * 2.5) for k in (1, 3, 5))
    lift = (2.0 - space[:, 0]) * 2.0 / np.pi * g_rate
    raw = model(tf.constant(np.column_stack([space, np.zeros(20)]))).numpy()[:, 2]  # window 1 starts at local t = 0
    np.testing.assert_allclose(second(middle).numpy()[:, 2], lift + settings.pressure_scale * raw, atol=1e-12)


@pytest.mark.slow  # 34 s at load 6 (XLA compiles the Navier-Stokes step); the pieces are tested above
def test_fast_run_scores_evaluates_and_resumes(tmp_path, monkeypatch):
    monkeypatch.setattr(ns2d_lt, "ns2d_lt_reference", coarse_reference)
    output = tmp_path / "run"
    assert ns2d_lt.main([*TINY, "--output", str(output)]) in (0, 3)  # 3: the target missed, as a fast run does
    metrics = json.loads((output / "metrics.json").read_text())
    assert metrics["error_points"] == 20_000 and metrics["error_fields"] == ["u", "v", "p"]
    for key in ("relative_l2_error", "relative_l2_error_uv", "relative_l2_error_u", "relative_l2_error_p"):
        assert 0.0 < metrics[key] < 5.0, key
    assert metrics["target_ratio"] == pytest.approx(
        max(metrics["relative_l2_error"] / 1e-1, metrics["relative_l2_error_uv"] / 5e-2)
    )
    axes, points = ref.snapshot_points((1.0,))
    np.save(tmp_path / "points.npy", points)
    assert ns2d_lt.main(["--output", str(output), "--evaluate", str(tmp_path / "points.npy")]) == 0
    evaluated = np.load(output / "evaluation.npz")
    assert set(evaluated.files) >= {"u", "v", "p"} and evaluated["u"].shape == (len(points),)
    inlet = points[:, 0] == 0.0
    np.testing.assert_allclose(evaluated["u"][inlet], np.sin(np.pi * points[inlet, 1]) * ref.inflow(1.0), atol=1e-12)
    # the pictures over time against the (coarse) reference
    worst = ns2d_lt.plot_over_time(str(output), str(tmp_path / "over_time.png"))
    assert (tmp_path / "over_time.png").stat().st_size > 1000 and 0.0 < worst < 20.0
    # --resume of the finished run restores it and scores alike
    assert ns2d_lt.main([*TINY, "--output", str(output), "--resume"]) in (0, 3)
    again = json.loads((output / "metrics.json").read_text())
    assert again["relative_l2_error"] == pytest.approx(metrics["relative_l2_error"], rel=1e-10)


@pytest.mark.parametrize(
    "flags, message",
    [
        (["--architecture", "resnet"], "invalid choice"),
        (["--pressure-scale", "0"], "--pressure-scale"),
        (["--time-windows", "0"], "out of range"),
        (["--continuity-weight", "-1"], "continuity"),
        (["--inlet-weight", "-1"], "argument --inlet-weight: '-1' is out of range; give a number >= 0"),
        (["--outlet-weight", "-1"], "argument --outlet-weight: '-1' is out of range; give a number >= 0"),
        (["--outlet-taper", "-1"], "argument --outlet-taper: '-1' is out of range; give a number >= 0"),
        (["--restart-nodes", "1"], "argument --restart-nodes: '1' is out of range; give an integer 0 (off) or >= 2"),
        (["--inlet-band-points", "-1"], "argument --inlet-band-points: '-1' is out of range"),
        (["--inlet-band", "0"], "argument --inlet-band: '0' is out of range"),
    ],
)
def test_bad_flags_are_refused(flags, message, tmp_path, capsys):
    with pytest.raises((SystemExit, ValueError), match=None) as raised:
        ns2d_lt.main([*TINY, *flags, "--output", str(tmp_path / "run")])
    assert message in capsys.readouterr().err + str(raised.value)


def test_the_continuity_inlet_and_outlet_weights_reach_the_loss():
    import dataclasses

    fast = ns2d_lt.EXAMPLE.presets["fast"]
    settings = dataclasses.replace(fast, continuity_weight=100.0, inlet_weight=3.0, outlet_weight=0.5)
    problem, _ = ns2d_lt.build(settings)
    outlet = {"outlet_normal": 0.5, "outlet_shear": 0.5}
    assert problem.weights == {"continuity": 100.0, "inlet_v": 3.0, **outlet}
    unweighted = {"outlet_normal": 1.0, "outlet_shear": 1.0}
    assert ns2d_lt.build(fast)[0].weights == {"continuity": 1.0, "inlet_v": 10.0, **unweighted}
    held = dataclasses.replace(fast, soft_inlet=False)  # no inlet term to weight
    assert ns2d_lt.build(held)[0].weights == {"continuity": 1.0, **unweighted}
    default = ns2d_lt.EXAMPLE.presets["default"]  # the stream function: continuity exact, its weight moot
    assert default.stream_function and ns2d_lt.build(default)[0].weights["continuity"] == 1.0


def test_the_outlet_shear_condition_is_tapered_towards_the_walls():
    """``--outlet-taper k``: the shear residual ``u_y + v_x`` times ``(4y(1 - y))^k`` (1 mid-channel, 0 at the walls,
    where no slip and the stress-free outlet meet); ``k = 0`` the uniform condition."""
    import dataclasses

    y = np.array([0.0, 0.1, 0.5, 0.9, 1.0])
    d, x = {"u_y": np.full(5, 3.0), "v_x": np.full(5, -1.0)}, {"x": np.full(5, 2.0), "y": y}
    for taper in (0.0, 1.0, 2.0):
        settings = dataclasses.replace(ns2d_lt.EXAMPLE.presets["fast"], outlet_taper=taper)
        (shear,) = [c for c in ns2d_lt.build(settings)[0].conditions if c.name == "outlet_shear"]
        np.testing.assert_allclose(shear.function(d, x, {}), 2.0 * (4.0 * y * (1.0 - y)) ** taper, atol=1e-15)
    assert ns2d_lt.EXAMPLE.presets["default"].outlet_taper == ns2d_lt.OUTLET_TAPER == 2.0


def test_the_inlet_band_adds_interior_points_near_the_inlet():
    """``--inlet-band-points N --inlet-band w``: N interior points with ``x < w`` after the uniform ones (a
    :class:`hodiff.pinn.Refinement`, in every window); 0 adds none."""
    import dataclasses

    settings = dataclasses.replace(ns2d_lt.EXAMPLE.presets["fast"], inlet_band_points=24, inlet_band=0.2)
    problem = ns2d_lt.build(settings)[0]
    window = ns2d_lt.windows(settings).problem(problem, 1, lambda points: 0.0 * points)
    interior = window.sample_points(64)["interior"]
    assert interior.shape == (88, 3) and np.all(interior[64:, 0] < 0.2) and np.all(interior[64:, 2] >= 2.5)
    assert not ns2d_lt.build(dataclasses.replace(settings, inlet_band_points=0))[0].refinements
    assert ns2d_lt.EXAMPLE.presets["default"].inlet_band_points == ns2d_lt.INLET_BAND_POINTS == 512


def test_the_stream_function_network_trains_as_built():
    """``--stream-function``'s model (a StreamFunction) goes to a Trainer without a call first, as in a window's child
    process."""
    import dataclasses

    from pinn_examples.runner import make_trainer

    settings = dataclasses.replace(ns2d_lt.EXAMPLE.presets["default"], stream_function=True)
    problem, model = ns2d_lt.build(settings)
    trainer = make_trainer(ns2d_lt.windows(settings).problem(problem, 0), model, settings, progress=False)
    assert trainer.model is model


def test_the_soft_inlet_holds_u_and_leaves_v_to_its_loss_term():
    """``--soft-inlet`` (the default with the stream function): psi of order 1 at the inlet, so that u there is the
    inflow exactly and v is the network's, pulled to 0 by the condition ``inlet_v``; ``--no-soft-inlet`` holds v."""
    import dataclasses

    import tensorflow as tf

    from hodiff import pinn

    settings = ns2d_lt.EXAMPLE.presets["fast"]
    problem, model = ns2d_lt.build(settings)
    assert model.walls["x"] == (1, 0) and "inlet_v" in problem.term_names
    solution = ns2d_lt.windows(settings).problem(problem, 0).solution(pinn.windows.freeze(model))
    y, t = np.linspace(0.1, 0.9, 9), np.linspace(0.3, 2.4, 9)
    inlet = solution(tf.constant(np.column_stack([np.zeros(9), y, t]))).numpy()
    np.testing.assert_allclose(inlet[:, 0], np.sin(np.pi * y) * ref.inflow(t), atol=1e-13)
    assert np.abs(inlet[:, 1]).max() > 1e-4  # v is free there
    hard_problem, hard_model = ns2d_lt.build(dataclasses.replace(settings, soft_inlet=False))
    assert hard_model.walls["x"] == (2, 0) and "inlet_v" not in hard_problem.term_names


def test_the_inlet_thickness_reaches_the_stream_function():
    """``--inlet-thickness`` is the stream function's thickness at the inlet (``x``); 0 leaves the scaled x / 2."""
    import dataclasses

    settings = ns2d_lt.EXAMPLE.presets["default"]
    assert ns2d_lt.build(settings)[1].thickness == {"x": ns2d_lt.INLET_THICKNESS}
    assert ns2d_lt.build(dataclasses.replace(settings, inlet_thickness=0.25))[1].thickness == {"x": 0.25}
    assert ns2d_lt.build(dataclasses.replace(settings, inlet_thickness=0.0))[1].thickness == {}


def test_with_the_stream_function_continuity_holds_exactly_in_every_window():
    """With ``--stream-function`` the velocity is the curl of a stream function plus a divergence-free lift, and each
    window starts from the curl restart (``SeriesRestart(divergence_free=...)``): the continuity residual vanishes to
    rounding at any weights, in the first window and after a restart, where the network on (u, v, p)
    (``--no-stream-function``) leaves it to the loss."""
    import dataclasses

    import tensorflow as tf

    from hodiff import pinn

    settings = dataclasses.replace(ns2d_lt.EXAMPLE.presets["fast"], width=16, restart_nodes=12)
    rng = np.random.default_rng(3)
    points = tf.constant(rng.uniform(size=(50, 3)) * np.array([2.0, 1.0, 2.5]))
    later = points + tf.constant([[0.0, 0.0, 2.5]], tf.float64)
    continuity = {}
    for stream in (True, False):
        variant = dataclasses.replace(settings, stream_function=stream)
        problem, model = ns2d_lt.build(variant)
        windows = ns2d_lt.windows(variant)
        first = windows.problem(problem, 0)
        second = windows.problem(problem, 1, first.solution(pinn.windows.freeze(model)))
        for window, at in ((first, points), (second, later)):
            residuals = window.pde_residuals(window.solution(model), at, {})
            continuity[stream, window is second] = np.abs(
                residuals[window.residual_names.index("continuity")].numpy()
            ).max()
    assert continuity[True, False] < 1e-12 and continuity[True, True] < 1e-11
    assert continuity[False, False] > 1e-3 and continuity[False, True] > 1e-3
