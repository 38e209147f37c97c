"""A study as one call (hodiff.pinn.study): solve, the Solution it returns, save / load, resume, marching."""

import numpy as np
import pytest
import tensorflow as tf

from hodiff import pinn

LINE = pinn.Interval("x", 0.0, 1.0)
POISSON = pinn.Problem(
    LINE,
    needs=("u_xx",),
    residual=lambda d, x, p: d["u_xx"] + np.pi**2 * tf.sin(np.pi * x["x"]),
    output_transform=pinn.hard_dirichlet(LINE, {"left": 0.0, "right": 0.0}),
)
X = np.linspace(0.0, 1.0, 51)[:, None]
EXACT = np.sin(np.pi * X[:, 0])


def trainer(problem, model):
    schedule = pinn.Schedule(steps_per_call=50, log_every=50, checkpoint_every=50, progress=False)
    return pinn.Trainer(pinn.TrainingData(problem, interior=64, seed=1), model, learning_rate=1e-2, schedule=schedule)


PHASES = pinn.Phases(adam_steps=200, lbfgs_iterations=50)


def study(output=None, phases=PHASES):
    model = pinn.mlp(LINE, width=12, depth=2, seed=3)
    reference = pinn.Reference(X, {"u": EXACT})
    return pinn.solve(POISSON, model, phases, trainer=trainer, output=output, reference=reference)


def test_solve_returns_the_fields_their_errors_the_stops_and_the_costs():
    solution = study()
    assert solution.fields == ("u",) and solution.points.shape == (51, 1)
    error = np.linalg.norm(solution.values["u"] - EXACT) / np.linalg.norm(EXACT)
    assert solution.errors["relative_l2_error"] == pytest.approx(error, rel=1e-12) and error < 1e-2
    assert solution.errors["relative_l2_error_u"] == solution.errors["relative_l2_error"]
    assert solution.stops["adam"] == "reached 200 steps" and "after" in solution.stops["lbfgs"]
    assert [row["step"] for row in solution.history if row["phase"] == "adam"] == [50, 100, 150, 200]
    assert solution.wall_seconds > 0 and solution.peak_memory_mib > 100
    np.testing.assert_array_equal(solution.evaluate(X)["u"], solution.values["u"])


def test_a_saved_study_loads_and_a_resumed_one_trains_nothing(tmp_path):
    output = pinn.Output(str(tmp_path / "run"), settings={"study": "poisson"})
    first = study(output)
    loaded = pinn.Solution.load(str(tmp_path / "run"))
    assert loaded.errors == first.errors and loaded.stops == first.stops and loaded.fields == ("u",)
    np.testing.assert_array_equal(loaded.values["u"], first.values["u"])
    with pytest.raises(RuntimeError, match="without its problem and model"):
        loaded.evaluate(X)
    model = pinn.mlp(LINE, width=12, depth=2, seed=9)  # other weights: restored from the run's checkpoint
    restored = pinn.Solution.load(str(tmp_path / "run"), POISSON, model)
    np.testing.assert_array_equal(restored.evaluate(X)["u"], first.values["u"])
    resumed = study(pinn.Output(str(tmp_path / "run"), resume=True, settings={"study": "poisson"}))
    assert resumed.errors == first.errors and resumed.stops["adam"].startswith("already done")
    with pytest.raises(FileNotFoundError, match="holds no saved solution"):
        pinn.Solution.load(str(tmp_path / "none"))


def test_a_marched_study_reports_each_window_and_scores_the_whole_horizon(tmp_path):
    domain = LINE * pinn.TimeDomain("t", 0.0, 1.0)
    decay = pinn.Problem(domain, needs=("u", "u_t"), residual=lambda d, x, p: d["u_t"] + d["u"])
    restart = pinn.SeriesRestart(domain, {"x": pinn.Chebyshev(0.0, 1.0, 12)})
    windows = pinn.TimeWindows(2, initial=lambda x: tf.sin(np.pi * x["x"]), restart=restart)

    def marched_trainer(problem, model):
        schedule = pinn.Schedule(steps_per_call=50, log_every=50, checkpoint_every=50, progress=False)
        return pinn.Trainer(
            pinn.TrainingData(problem, interior=64, seed=1), model, learning_rate=1e-2, schedule=schedule
        )

    points = domain.sample_interior(64, seed=2)
    reference = pinn.Reference(points, {"u": np.sin(np.pi * points[:, 0]) * np.exp(-points[:, 1])})
    model = pinn.mlp(domain, width=8, depth=2, seed=2)
    output = pinn.Output(str(tmp_path / "marched"))
    solution = pinn.solve(
        decay, model, pinn.Phases(adam_steps=300), trainer=marched_trainer, windows=windows, output=output,
        reference=reference,
    )  # fmt: skip
    assert solution.stops == {"adam": ["reached 300 steps", "reached 300 steps"]}
    assert [(w["start"], w["end"], w["adam_steps"], w["adam"]) for w in solution.windows] == [
        (0.0, 0.5, 300, "reached 300 steps"), (0.5, 1.0, 300, "reached 300 steps")
    ]  # fmt: skip
    assert [w["final_loss"] for w in solution.windows][-1] == solution.history[-1]["loss"]
    assert solution.errors["relative_l2_error"] < 5e-2
    assert {row["window"] for row in solution.history} == {0, 1}
    loaded = pinn.Solution.load(str(tmp_path / "marched"), decay, pinn.mlp(domain, width=8, depth=2), windows)
    np.testing.assert_array_equal(loaded.evaluate(points)["u"], solution.values["u"])
    assert loaded.checkpoint == "window-1/ckpt-300" and loaded.windows == solution.windows


def test_evaluate_refuses_points_outside_or_gives_them_nan(caplog):
    solution = study(phases=pinn.Phases(adam_steps=50))
    points = np.array([[0.5], [1.5], [-0.25]])
    with pytest.raises(ValueError, match=r"2 of 3 points are outside the domain \(the first is row 1: x=1.5\)"):
        solution.evaluate(points)
    values = solution.evaluate(points, outside="nan")["u"]
    assert np.isnan(values).tolist() == [False, True, True] and "their values are NaN" in caplog.text
    assert values[0] == solution.evaluate(points[:1])["u"][0]
    with pytest.raises(ValueError, match=r"2 columns; the domain has coordinates \('x',\), so give 1 columns"):
        solution.evaluate(np.zeros((3, 2)))
    with pytest.raises(ValueError, match="outside='NaN'; give 'error'"):
        solution.evaluate(points, outside="NaN")


def test_a_run_killed_before_its_end_loads_from_its_checkpoint(tmp_path):
    directory = str(tmp_path / "killed")
    trained = trainer(POISSON, pinn.mlp(LINE, width=12, depth=2, seed=3))
    trained.start_run(pinn.Output(directory))
    trained.adam(100)  # no solution.json: the study never ended
    restored = pinn.Solution.load(directory, POISSON, pinn.mlp(LINE, width=12, depth=2, seed=9))
    assert restored.checkpoint == "ckpt-100" and restored.errors == {} and np.isnan(restored.wall_seconds)
    np.testing.assert_allclose(restored.evaluate(X)["u"], trained.predict(X)[:, 0], rtol=1e-6, atol=1e-7)


def test_read_points_checks_the_file(tmp_path):
    path = tmp_path / "points.npy"
    np.save(path, np.array([[0.5, 1], [0.25, 2]], dtype=np.float32))
    points = pinn.read_points(path)
    assert points.dtype == np.float64 and points.tolist() == [[0.5, 1.0], [0.25, 2.0]]
    with pytest.raises(FileNotFoundError, match="missing.npy: no such file"):
        pinn.read_points(tmp_path / "missing.npy")
    np.save(path, np.array([[0.5], [np.inf]]))
    with pytest.raises(ValueError, match=r"1 rows hold NaN or Inf \(the first is row 1"):
        pinn.read_points(path)
    np.save(path, np.zeros(3))
    with pytest.raises(ValueError, match=r"must be a 2-D array \(N, d\), got shape \(3,\)"):
        pinn.read_points(path)
    np.save(path, np.zeros((1000, 4)))
    path.write_bytes(path.read_bytes()[:-100])
    with pytest.raises(ValueError, match="truncated or corrupt"):
        pinn.read_points(path)


def test_bad_studies_are_named():
    with pytest.raises(ValueError, match="2 entries for 3 points"):
        pinn.Reference(np.zeros((3, 1)), {"u": np.zeros(2)})
    with pytest.raises(ValueError, match="names \\['v'\\], which have no values"):
        pinn.Reference(np.zeros((3, 1)), {"u": np.zeros(3)}, groups=[("u", "v")])
    with pytest.raises(ValueError, match="names \\['p'\\], which have no values"):
        pinn.Reference(np.zeros((3, 1)), {"u": np.zeros(3)}, error_fields=("u", "p"))
    with pytest.raises(ValueError, match="must be 'lbfgs' or 'bfgs'"):
        pinn.Phases(method="newton")
    with pytest.raises(ValueError, match="adam_steps"):
        pinn.Phases(adam_steps=-1)
    with pytest.raises(TypeError, match="phases must be"):
        pinn.solve(POISSON, pinn.mlp(LINE, width=4, depth=1), phases=3)
