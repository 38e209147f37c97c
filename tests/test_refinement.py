"""Refinements: more interior points where the residual needs them, in the same residual terms (eager, graph and XLA),
carried through Problem.replace and time windows; bad input gets clear errors."""

import numpy as np
import pytest
import tensorflow as tf

from hodiff import pinn

SQUARE = pinn.Rectangle(("x", "y"), (0.0, 0.0), (1.0, 1.0))
NEAR_INLET = pinn.Refinement(lambda x: x["x"] < 0.25, count=24)


def poisson(refinements=(), conditions=()):
    return pinn.Problem(
        SQUARE,
        needs=("u_xx", "u_yy"),
        residual=lambda d, x, p: d["u_xx"] + d["u_yy"] + 1.0,
        conditions=list(conditions),
        refinements=refinements,
    )


def test_the_refined_points_follow_the_uniform_ones_in_their_region():
    """The uniform draw and the conditions' points are those of the problem without the refinement; the refined
    points come after the uniform ones, all inside the region, the same for the same seed and not for another."""
    wall = pinn.Dirichlet(0.0, count=16)
    plain = poisson(conditions=[wall]).sample_points(64, seed=3)
    refined = poisson([NEAR_INLET], [wall]).sample_points(64, seed=3)
    assert refined["interior"].shape == (88, 2)
    np.testing.assert_array_equal(refined["interior"][:64], plain["interior"])
    np.testing.assert_array_equal(refined[wall.name]["points"], plain[wall.name]["points"])
    extra = refined["interior"][64:]
    assert np.all(extra[:, 0] < 0.25) and np.all((extra >= 0.0) & (extra <= 1.0))
    assert len(np.unique(extra, axis=0)) == 24
    again = poisson([NEAR_INLET], [wall])
    np.testing.assert_array_equal(again.sample_points(64, seed=3)["interior"], refined["interior"])
    assert not np.array_equal(again.sample_points(64, seed=4)["interior"][64:], extra)


def test_the_residual_term_is_the_mean_over_uniform_and_refined_points(run):
    """``u = x^2``: the residual is ``3`` everywhere, and ``u_xx + u_yy + 1 - 3 x`` is not: the term is the mean of
    its square over all 88 points, the refined ones included, in eager, graph and XLA."""
    problem = pinn.Problem(
        SQUARE,
        needs=("u_xx", "u_yy"),
        residual=lambda d, x, p: d["u_xx"] + d["u_yy"] + 1.0 - 3.0 * x["x"],
        refinements=[NEAR_INLET],
    )
    interior = problem.sample_points(64)["interior"]
    solution = lambda points: points[:, :1] ** 2  # noqa: E731

    def term(points):
        return problem.loss_terms(solution, {"interior": points}, {})["residual"]

    expected = np.mean((3.0 - 3.0 * interior[:, 0]) ** 2)
    np.testing.assert_allclose(run(term, tf.constant(interior)).numpy(), expected, rtol=1e-12)


def test_training_data_holds_the_refined_points_and_records_them():
    data = pinn.TrainingData(poisson([NEAR_INLET]), interior=32)
    model = pinn.mlp(SQUARE, width=4, depth=1, dtype="float64")
    data.build(model)
    assert data.interior.shape == (56, 2) and np.all(data.interior.numpy()[32:, 0] < 0.25)
    assert data.settings()["refinements"] == [24]
    assert "refinements" not in pinn.TrainingData(poisson(), interior=32).settings()


def test_replace_and_time_windows_keep_the_refinements():
    domain = pinn.Interval("x", 0.0, 1.0) * pinn.TimeDomain("t", 0.0, 1.0)
    near_start = pinn.Refinement(lambda x: x["x"] < 0.1, count=8)
    problem = pinn.Problem(
        domain, needs=("u_t", "u_xx"), residual=lambda d, x, p: d["u_t"] - d["u_xx"], refinements=[near_start]
    )
    assert problem.replace(weights={"residual": 2.0}).refinements == (near_start,)
    windows = pinn.TimeWindows(2, initial=lambda x: tf.sin(np.pi * x["x"])[:, None])
    second = windows.problem(problem, 1, lambda points: tf.zeros_like(points[:, :1]))
    assert second.refinements == (near_start,)
    points = second.sample_points(16)["interior"]
    assert points.shape == (24, 2) and np.all(points[16:, 0] < 0.1) and np.all(points[16:, 1] >= 0.5)


def test_bad_refinements_are_refused():
    with pytest.raises(TypeError, match="Refinement: where must be a predicate"):
        pinn.Refinement(0.25, count=8)
    for count in (0, -3, 2.5, True):
        with pytest.raises(ValueError, match=r"Refinement: count must be an int >= 1"):
            pinn.Refinement(lambda x: x["x"] < 0.25, count=count)
    with pytest.raises(TypeError, match="Problem: refinements must be hodiff.pinn.Refinement objects, got tuple"):
        poisson([(lambda x: x["x"] < 0.25, 8)])
    nowhere = pinn.Refinement(lambda x: x["x"] > 2.0, count=8)
    with pytest.raises(ValueError, match=r"Refinement: where=.*selects no points on 'interior'"):
        poisson([nowhere]).sample_points(16)
    shape = pinn.Refinement(lambda x: np.ones((3, 3), bool), count=8)
    with pytest.raises(ValueError, match=r"Refinement: where\(x\) must return one bool per point"):
        poisson([shape]).sample_points(16)
