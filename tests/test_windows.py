"""Time-marching (hodiff.pinn.windows): window problems, hard initial conditions across windows,
causal weights inside a window, training under XLA, resume after a kill mid-window, restore."""

import numpy as np
import pytest
import tensorflow as tf

from hodiff import pinn
from hodiff.pinn.callbacks import Callback

DOMAIN = pinn.Interval("x", 0.0, 1.0) * pinn.TimeDomain("t", 0.0, 1.0)


def heat(causal=None, conditions=()):
    return pinn.Problem(
        DOMAIN,
        needs=("u_t", "u_xx"),
        residual=lambda d, x, p: d["u_t"] - 0.1 * d["u_xx"],
        conditions=list(conditions),
        causal=causal,
    )


def hard_boundary(x, outputs, start, previous):
    """u = previous + (t - start) x (1 - x) N: the initial and the boundary conditions both hard."""
    return previous + ((x["t"] - start) * x["x"] * (1.0 - x["x"]))[:, None] * outputs


WINDOWS = pinn.TimeWindows(2, initial=lambda x: tf.sin(np.pi * x["x"]), transform=hard_boundary)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_each_window_starts_exactly_where_the_window_before_ends(dtype):
    model = pinn.mlp(DOMAIN, width=8, depth=2, dtype=dtype, seed=1)
    windows = pinn.TimeWindows(3, initial=lambda x: tf.sin(np.pi * x["x"]), transform=hard_boundary)
    assert windows.bounds(DOMAIN) == [(0.0, 1 / 3), (1 / 3, 2 / 3), (2 / 3, 1.0)]
    x = np.linspace(0.0, 1.0, 7)
    previous, solutions = None, []
    for k, (start, end) in enumerate(windows.bounds(DOMAIN)):
        window = windows.problem(heat(), k, previous)
        assert window.domain.bounds == {"x": (0.0, 1.0), "t": (start, end)} and DOMAIN.bounds["t"] == (0.0, 1.0)
        points = window.domain.sample_interior(16)
        assert points[:, 1].min() >= start and points[:, 1].max() <= end
        model.set_weights([w + 0.1 * (k + 1) for w in model.get_weights()])  # another network in every window
        previous = window.solution(pinn.windows.freeze(model))
        solutions.append(previous)
    at = lambda t: tf.constant(np.stack([x, np.full_like(x, t)], 1), dtype)  # noqa: E731
    tolerance = 1e-12 if dtype == "float64" else 1e-6
    np.testing.assert_allclose(solutions[0](at(0.0)).numpy()[:, 0], np.sin(np.pi * x), atol=tolerance)
    for k in (1, 2):
        start = k / 3
        before, after = solutions[k - 1](at(start)).numpy(), solutions[k](at(start)).numpy()
        np.testing.assert_allclose(after, before, rtol=0, atol=tolerance)
        assert np.abs(solutions[k](at(start + 0.2)).numpy() - before).max() > 1e-3  # the window's own network
    marching = pinn.Marching(heat(), windows, solutions, dtype=tf.as_dtype(dtype))
    times = np.array([0.0, 0.3, 1 / 3, 0.5, 0.9, 1.0])
    predicted = marching.predict(np.stack([np.full(6, 0.4), times], 1))
    assert list(windows.index(DOMAIN, times)) == [0, 0, 1, 1, 2, 2]
    for i, k in enumerate(windows.index(DOMAIN, times)):
        expected = solutions[k](tf.constant([[0.4, times[i]]], dtype)).numpy()[0]
        np.testing.assert_allclose(predicted[i], expected, atol=tolerance)


def test_many_windows_predict_without_the_retracing_warning(caplog):
    windows = pinn.TimeWindows(7, initial=lambda x: tf.sin(np.pi * x["x"]), transform=hard_boundary)
    model = pinn.mlp(DOMAIN, width=4, depth=1, dtype="float64", seed=1)
    previous, solutions = None, []
    for k in range(7):  # one closure per window, all of the same code (Problem.solution's)
        previous = windows.problem(heat(), k, previous).solution(pinn.windows.freeze(model))
        solutions.append(previous)
    marching = pinn.Marching(heat(), windows, solutions)
    times = (np.arange(7) + 0.5) / 7
    with caplog.at_level("WARNING"):
        predicted = marching.predict(np.stack([np.full(7, 0.4), times], 1))
    assert predicted.shape == (7, 1) and np.all(np.isfinite(predicted))
    assert not [r for r in caplog.records if "retracing" in r.getMessage()]


def test_causal_weights_act_inside_each_window():
    causal = pinn.CausalWeights(epsilon=2.0, bins=4)
    window = WINDOWS.problem(heat(causal), 1, lambda points: tf.zeros_like(points[:, :1]))
    t = np.linspace(0.5, 1.0, 400, endpoint=False)
    points = tf.constant(np.stack([np.full_like(t, 0.5), t], 1))
    mean = causal.weighted_mean(tf.ones(400, tf.float64), points, window.domain)
    # every one of the 4 bins of [0.5, 1] holds points: weights exp(-2 k), k = 0..3 (on [0, 1] two bins would be empty)
    np.testing.assert_allclose(float(mean), np.mean(np.exp(-2.0 * np.arange(4))), rtol=1e-12)


DECAY = pinn.Problem(DOMAIN, needs=("u", "u_t"), residual=lambda d, x, p: d["u_t"] + d["u"])  # first order: fast


class Kill(Callback):
    """Raises at Adam step ``step`` of window ``window`` (a kill)."""

    def __init__(self, window, step):
        self.window, self.step = window, step

    def on_chunk_end(self, trainer, step):
        if trainer.settings.get("time_window", {}).get("index") == self.window and step == self.step:
            raise KeyboardInterrupt


def march(directory, resume=False, kill=None, windows=None, steps=20):
    def trainer(problem, model):
        return pinn.Trainer(
            pinn.TrainingData(problem, interior=32, seed=3),
            model,
            learning_rate=1e-2,
            schedule=pinn.Schedule(steps_per_call=10, log_every=10, checkpoint_every=10, progress=False),
            callbacks=[kill] if kill else [],
        )

    model = pinn.mlp(DOMAIN, width=8, depth=2, seed=2)
    train = lambda trainer: trainer.adam(steps)  # noqa: E731
    return pinn.time_marching(DECAY, model, windows or WINDOWS, trainer, train, str(directory), resume=resume)


def test_a_run_killed_mid_window_resumes_exactly_and_restores_for_evaluation(tmp_path):
    full = march(tmp_path / "full")
    with pytest.raises(KeyboardInterrupt):
        march(tmp_path / "part", kill=Kill(window=1, step=10))
    resumed = march(tmp_path / "part", resume=True)
    strip = lambda rows: [{k: v for k, v in row.items() if k != "seconds"} for row in rows]  # noqa: E731
    assert strip(resumed.history) == strip(full.history)
    assert [(r["window"], r["step"]) for r in full.history] == [(0, 10), (0, 20), (1, 30), (1, 40)]
    points = DOMAIN.sample_interior(50, seed=9)
    np.testing.assert_array_equal(resumed.predict(points), full.predict(points))
    restored = pinn.restore_marching(DECAY, pinn.mlp(DOMAIN, width=8, depth=2, seed=5), WINDOWS, str(tmp_path / "full"))
    np.testing.assert_array_equal(restored.predict(points), full.predict(points))
    first = pinn.restore_marching(DECAY, pinn.mlp(DOMAIN, width=8, depth=2), WINDOWS, str(tmp_path / "full"), count=1)
    at = tf.constant(points)
    assert len(first.solutions) == 1  # the first window only
    np.testing.assert_array_equal(first.solutions[0](at).numpy(), full.solutions[0](at).numpy())
    with pytest.raises(ValueError, match="count=3 must be an int in 1 .. 2"):
        pinn.restore_marching(DECAY, pinn.mlp(DOMAIN, width=8, depth=2), WINDOWS, str(tmp_path / "full"), count=3)
    with pytest.raises(FileNotFoundError, match="window 0 .* has no readable checkpoint"):
        pinn.restore_marching(DECAY, pinn.mlp(DOMAIN, width=8, depth=2), WINDOWS, str(tmp_path / "none"))


def test_bad_windows_are_named():
    with pytest.raises(ValueError, match="Initial conditions \\['initial'\\]"):
        WINDOWS.problem(heat(conditions=[pinn.Initial(0.0, count=4)]), 0)
    with pytest.raises(ValueError, match="window k=2 is not in 0 .. 1"):
        WINDOWS.problem(heat(), 2, lambda p: p)
    with pytest.raises(ValueError, match="give previous"):
        WINDOWS.problem(heat(), 1)
    with pytest.raises(ValueError, match="count"):
        pinn.TimeWindows(0, initial=lambda x: x["x"])
    steady = pinn.Problem(pinn.Interval("x", 0.0, 1.0), needs=("u_xx",), residual=lambda d, x, p: d["u_xx"])
    with pytest.raises(ValueError, match="no time coordinate"):
        WINDOWS.problem(steady, 0)
    with pytest.raises(TypeError, match="restart must be a function"):
        pinn.TimeWindows(2, initial=lambda x: x["x"], restart=3)


def test_restart_replaces_the_window_before_once_when_the_window_is_built():
    seen = []

    def restart(previous, start):
        seen.append(start)
        return lambda points: previous(points) + 1.0  # any function: it only has to be what the window starts from

    windows = pinn.TimeWindows(2, initial=lambda x: tf.sin(np.pi * x["x"]), transform=hard_boundary, restart=restart)
    model = pinn.mlp(DOMAIN, width=8, depth=2, seed=1)
    first = windows.problem(heat(), 0).solution(pinn.windows.freeze(model))
    assert seen == []  # the first window starts from the initial condition
    second = windows.problem(heat(), 1, first).solution(model)
    assert seen == [0.5]
    points = tf.constant([[0.3, 0.5], [0.7, 0.5]], tf.float64)
    np.testing.assert_allclose(second(points).numpy(), first(points).numpy() + 1.0, rtol=0, atol=1e-14)
    assert seen == [0.5]  # not called again when the window is evaluated


def local_windows(count=4, **options):
    return pinn.TimeWindows(count, initial=lambda x: tf.sin(np.pi * x["x"]), transform=hard_boundary, **options)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_local_time_feeds_each_window_network_its_own_time_stretched_over_the_horizon(dtype, run):
    """With local_time the network of window k = 2 of [0.5, 0.75] sees t0 + (t - t_k) * count = 4 (t - 0.5)
    (derivatives through it), the residual and the transform still t; without it the network sees t."""
    previous = lambda points: 0.25 * points[:, :1]  # noqa: E731 - any window before
    network = lambda points: points[:, 1:] ** 2  # noqa: E731 - the time it is given, squared
    points = tf.constant([[0.2, 0.5], [0.4, 0.6], [0.9, 0.75]], dtype)
    x, t = points.numpy()[:, 0].astype(np.float64), points.numpy()[:, 1].astype(np.float64)
    lift = (t - 0.5) * x * (1.0 - x)  # hard_boundary's (t - start) x (1 - x)
    for local, seen in ((True, 4.0 * (t - 0.5)), (False, t)):
        window = local_windows(local_time=local).problem(heat(), 2, previous)
        solution = window.solution(network)

        def value_and_u_t(p, solution=solution):
            with tf.GradientTape() as tape:
                tape.watch(p)
                u = solution(p)
            return u, tape.gradient(u, p)[:, 1]

        u, u_t = run(value_and_u_t, points)
        tolerance = 1e-6 if dtype == "float32" else 1e-13
        np.testing.assert_allclose(u.numpy()[:, 0], 0.25 * x + lift * seen**2, rtol=tolerance, atol=tolerance)
        d_seen = 4.0 if local else 1.0  # chain rule: d(seen)/dt
        expected = x * (1.0 - x) * seen**2 + lift * 2.0 * seen * d_seen
        np.testing.assert_allclose(u_t.numpy(), expected, rtol=tolerance, atol=tolerance)
    assert window.input_transform is None and local_windows(local_time=True).problem(heat(), 0).input_transform


def test_local_time_marches_the_decay_to_the_exact_solution_and_restores_identically(tmp_path):
    """u_t = -u, u(x, 0) = sin(pi x) in 4 windows with local time (XLA training): u = sin(pi x) exp(-t); the
    solution restored from the directory equals the trained one."""
    windows = pinn.TimeWindows(4, initial=lambda x: tf.sin(np.pi * x["x"])[:, None], local_time=True)

    def trainer(problem, model):
        return pinn.Trainer(
            pinn.TrainingData(problem, interior=64, seed=3), model, learning_rate=1e-2,
            schedule=pinn.Schedule(steps_per_call=50, log_every=50, checkpoint_every=50, progress=False),
        )  # fmt: skip

    model = pinn.mlp(DOMAIN, width=8, depth=2, seed=2)
    marched = pinn.time_marching(DECAY, model, windows, trainer, lambda t: t.adam(300), str(tmp_path))
    points = DOMAIN.sample_interior(64, seed=9)
    exact = np.sin(np.pi * points[:, 0]) * np.exp(-points[:, 1])
    np.testing.assert_allclose(marched.predict(points)[:, 0], exact, atol=2e-2)
    restored = pinn.restore_marching(DECAY, pinn.mlp(DOMAIN, width=8, depth=2, seed=5), windows, str(tmp_path))
    np.testing.assert_array_equal(restored.predict(points), marched.predict(points))
    with pytest.raises(ValueError, match="has an input_transform"):  # a .keras file would drop the local time
        pinn.saving.solution_model(windows.problem(DECAY, 0), pinn.mlp(DOMAIN, width=8, depth=2))
    with pytest.raises(ValueError, match="has one already"):
        windows.problem(DECAY.replace(input_transform=lambda p: p), 0)
    with pytest.raises(TypeError, match="local_time must be True or False"):
        pinn.TimeWindows(2, initial=lambda x: x["x"], local_time=1)


def test_many_windows_trainers_log_their_terms_without_the_retracing_warning(caplog):
    """A process that restores many windows' trainers (the runner's parent, scoring a marched run) computes each one's
    loss terms once: TensorFlow must not take that for retracing of one function."""
    with caplog.at_level("WARNING"):
        for k in range(7):
            model = pinn.mlp(DOMAIN, width=4, depth=1, dtype="float64", seed=k)
            data = pinn.TrainingData(heat(), interior=16)
            trainer = pinn.Trainer(data, model, schedule=pinn.Schedule(progress=False))
            assert all(np.isfinite(value) for value in trainer.data.terms().values())
    assert not [r for r in caplog.records if "retracing" in r.getMessage()]


def restart_windows(count, **options):
    restart = pinn.SeriesRestart(DOMAIN, {"x": pinn.Chebyshev(0.0, 1.0, 12)})
    initial = lambda x: tf.sin(np.pi * x["x"])  # noqa: E731
    return pinn.TimeWindows(count, initial=initial, transform=hard_boundary, restart=restart, **options)


@pytest.mark.parametrize("local_time", [False, True])
def test_the_moving_problem_is_each_window_problem_when_its_state_names_the_window(local_time):
    """One problem for every window (TimeWindows.moving): with the state set to window k it gives window k's own
    problem's solution, time derivative and causally weighted mean, for the same network and window before."""
    windows = restart_windows(3, local_time=local_time)
    causal = pinn.CausalWeights(epsilon=2.0, bins=4)
    moving, state = windows.moving(heat(causal))
    model = pinn.mlp(DOMAIN, width=8, depth=2, dtype="float64", seed=1)
    solve = moving.solution(model)
    previous = None
    for k, (start, end) in enumerate(windows.bounds(DOMAIN)):
        state.enter(k, solve)  # fits the window before, as the model and state still hold it
        model.set_weights([w + 0.05 * k for w in model.get_weights()])  # window k's network
        window = windows.problem(heat(causal), k, previous)
        t = np.linspace(start, end, 9)
        points = tf.constant(np.stack([np.linspace(0.1, 0.9, 9), t], 1))
        own = window.solution(model)
        with tf.GradientTape(persistent=True) as tape:
            tape.watch(points)
            mine, theirs = solve(points), own(points)
        np.testing.assert_allclose(mine.numpy(), theirs.numpy(), rtol=0, atol=1e-13)
        np.testing.assert_allclose(tape.gradient(mine, points), tape.gradient(theirs, points), rtol=0, atol=1e-12)
        squares = tf.constant(np.linspace(1.0, 2.0, 9))
        np.testing.assert_allclose(
            moving.causal.weighted_mean(squares, points, moving.domain),
            causal.weighted_mean(squares, points, window.domain),
            rtol=1e-14,
        )
        previous = window.solution(pinn.windows.freeze(model))


class Counted:
    """DECAY's residual, counting its traces (calls while a graph is built; eager checks do not count)."""

    def __init__(self):
        self.calls = 0

    def __call__(self, d, x, p):
        self.calls += not tf.executing_eagerly()
        return d["u_t"] + d["u"]


def counted_march(count, directory=None, resume=False, kill=None):
    residual = Counted()
    problem = pinn.Problem(DOMAIN, needs=("u", "u_t"), residual=residual)

    def trainer(problem, model):
        return pinn.Trainer(
            pinn.TrainingData(problem, interior=32, seed=3), model, learning_rate=1e-2,
            schedule=pinn.Schedule(  # no stall diagnostic: whether it fires (and traces) depends on the training
                steps_per_call=10, log_every=10, checkpoint_every=10, progress=False, diagnose_every=0
            ),
            callbacks=[kill] if kill else [],
        )  # fmt: skip

    def train(trainer):
        trainer.adam(20)
        return trainer.lbfgs(3)

    model = pinn.mlp(DOMAIN, width=8, depth=2, seed=2)
    windows = restart_windows(count)
    marched = pinn.time_marching(problem, model, windows, trainer, train, directory, resume=resume)
    return marched, residual.calls


def test_a_marched_run_traces_each_phase_once_whatever_its_number_of_windows():
    """With a SeriesRestart every window trains with the steps traced for the first: Adam's step, L-BFGS's
    objective and the logged terms trace once for the run, so 4 windows call the residual as often as 2."""
    two, calls_two = counted_march(2)
    four, calls_four = counted_march(4)
    assert calls_four == calls_two > 0
    assert len(four.runs) == 4 and all(run.adam_steps == 20 and run.result.nit >= 1 for run in four.runs)
    assert [row["window"] for row in four.history if row["phase"] == "adam"] == [0, 0, 1, 1, 2, 2, 3, 3]


def test_a_marched_run_killed_in_its_third_window_resumes_to_the_uninterrupted_result(tmp_path):
    full, _ = counted_march(4, str(tmp_path / "full"))
    with pytest.raises(KeyboardInterrupt):
        counted_march(4, str(tmp_path / "part"), kill=Kill(window=2, step=10))
    resumed, _ = counted_march(4, str(tmp_path / "part"), resume=True)
    strip = lambda rows: [{k: v for k, v in row.items() if k != "seconds"} for row in rows]  # noqa: E731
    assert strip(resumed.history) == strip(full.history)
    points = DOMAIN.sample_interior(64, seed=9)
    np.testing.assert_array_equal(resumed.predict(points), full.predict(points))
    model = pinn.mlp(DOMAIN, width=8, depth=2, seed=5)
    restored = pinn.restore_marching(DECAY, model, restart_windows(4), str(tmp_path / "part"))
    np.testing.assert_array_equal(restored.predict(points), full.predict(points))
    exact = np.sin(np.pi * points[:, 0]) * np.exp(-points[:, 1])
    assert np.abs(full.predict(points)[:, 0] - exact).max() < 0.2  # trained towards the decay, window after window


def test_moved_data_draws_and_redraws_in_its_window():
    """TrainingData.move: the points, and every later draw (uniform or by the residual), lie in the new window."""
    data = pinn.TrainingData(DECAY, interior=64, seed=1)
    data.build(pinn.mlp(DOMAIN, width=4, depth=1))
    window = restart_windows(4).domain(DOMAIN, 2)
    data.move(window)
    assert data.domain is not DOMAIN and data.domain.bounds["t"] == (0.5, 0.75)
    times = lambda: data.interior.numpy()[:, 1]  # noqa: E731
    assert times().min() >= 0.5 and times().max() <= 0.75
    data.resample_by_residual(step=100, candidates=512)
    assert times().min() >= 0.5 and times().max() <= 0.75
    data.redraw(seed=7)
    assert times().min() >= 0.5 and times().max() <= 0.75


def test_points_drawn_inside_the_step_are_refused_with_one_step_for_every_window():
    def trainer(problem, model):
        fresh = lambda count, seed, dtype: tf.random.stateless_uniform([count, 2], seed, dtype=dtype)  # noqa: E731
        return pinn.Trainer(pinn.TrainingData(problem, interior=16, fresh_points=fresh), model)

    model = pinn.mlp(DOMAIN, width=4, depth=1)
    with pytest.raises(ValueError, match="fresh_points"):
        pinn.time_marching(DECAY, model, restart_windows(2), trainer, lambda t: None)
