"""TrainingData: its points, draws and loss; forward partials reaching the conditions; one relative-L2 helper."""

import inspect

import numpy as np
import pytest
import tensorflow as tf

from hodiff import pinn
from hodiff.pinn import problem as problem_module
from hodiff.pinn.data import draw_seed
from hodiff.pinn.metrics import relative_l2_errors

DOMAIN = pinn.Interval("x", -1.0, 1.0) * pinn.TimeDomain("t", 0.0, 1.0)


def heat(**options):
    return pinn.Problem(
        DOMAIN,
        needs=("u_t", "u_xx"),
        residual=lambda d, x, p: d["u_t"] - 0.1 * d["u_xx"],
        conditions=[
            pinn.Initial(lambda x: tf.sin(np.pi * x["x"]), count=32),
            pinn.Dirichlet(0.0, count=16),
            pinn.Neumann(0.0, count=8, name="neu"),
        ],
        **options,
    )


def test_points_are_the_ones_the_trainer_drew_before_for_the_same_seed():
    data = pinn.TrainingData(heat(), interior=64, sampling="sobol", seed=3)
    data.build(pinn.mlp(DOMAIN, width=8, depth=2))
    # recorded from Trainer(heat, model, interior=64, seed=3) before TrainingData existed
    np.testing.assert_allclose(
        data.interior.numpy()[:3],
        [[0.3988117594271898, 0.534692264162004], [-0.4491948392242193, 0.017744929529726505],
         [-0.9339834377169609, 0.9021309586241841]],
        rtol=0, atol=1e-15,
    )  # fmt: skip
    initial, boundary, neumann = data.condition_arrays
    np.testing.assert_allclose(
        initial["points"].numpy()[:2], [[0.7865536194294691, 0.0], [-0.8802976198494434, 0.0]], rtol=0, atol=1e-15
    )
    np.testing.assert_allclose(
        boundary["points"].numpy()[:2], [[1.0, 0.2840189365670085], [-1.0, 0.9691783552989364]], rtol=0, atol=1e-15
    )
    assert set(neumann) == {"points", "normals"} and set(boundary) == {"points"}
    assert data.points["neu"] is neumann and data.points["interior"] is data.interior
    # the weights start at the problem's, 1 elsewhere; the parameters are trainable
    weighted = pinn.TrainingData(heat(weights={"neu": 3.0}), interior=8)
    weighted.build(pinn.mlp(DOMAIN, width=4, depth=1))
    assert {k: float(v.numpy()) for k, v in weighted.weights.items()} == {
        "residual": 1.0,
        "initial": 1.0,
        "boundary": 1.0,
        "neu": 3.0,
    }


def test_the_trainer_trains_on_the_data_it_is_given_and_the_former_keywords_give_the_same_run():
    def run(new_api):
        model = pinn.mlp(DOMAIN, width=8, depth=2, seed=4)
        if new_api:
            data = pinn.TrainingData(heat(), interior=32, sampling="random", seed=7)
            schedule = pinn.Schedule(steps_per_call=10, log_every=10, progress=False)
            callbacks = [pinn.ResidualResampling(every=10, candidates=200), pinn.AdaptiveWeights(every=10)]
            return pinn.Trainer(data, model, schedule=schedule, callbacks=callbacks)
        with pytest.warns(DeprecationWarning, match="interior="):
            return pinn.Trainer(
                heat(), model, interior=32, sampling="random", seed=7, steps_per_call=10, log_every=10,
                progress=False, resampling=pinn.ResidualResampling(every=10, candidates=200),
                adaptive_weights=pinn.AdaptiveWeights(every=10),
            )  # fmt: skip

    runs = [run(True), run(False)]
    np.testing.assert_array_equal(runs[0].interior.numpy(), runs[1].interior.numpy())
    for trainer in runs:
        trainer.adam(30)
    strip = lambda history: [{k: v for k, v in row.items() if k != "seconds"} for row in history]  # noqa: E731
    assert strip(runs[0].history) == strip(runs[1].history)
    assert runs[0].history[-1]["weight_neu"] != 1.0  # the adaptive weights moved
    assert runs[0].settings["resampling"] == {"every": 10, "candidates": 200, "k": 1.0, "c": 1.0}
    assert len(inspect.signature(pinn.Trainer.__init__).parameters) <= 10  # self, 8 arguments, **legacy


def test_fresh_points_are_a_function_of_seed_and_step_only():
    seeds = []

    def fresh(count, seed, dtype):
        seeds.append(int(seed))
        draw = tf.stack([tf.cast(seed, tf.int64), tf.constant(11, tf.int64)])
        return tf.random.stateless_uniform((count, 2), draw, dtype=dtype) * tf.constant([2.0, 1.0], dtype) - [1.0, 0.0]

    def data(sampling, seed=5):
        made = pinn.TrainingData(heat(), interior=16, sampling=sampling, seed=seed, fresh_points=fresh)
        made.build(pinn.mlp(DOMAIN, width=8, depth=2, seed=1))
        return made

    sobol, lhs = data("sobol"), data("lhs")
    assert np.abs(sobol.interior.numpy() - lhs.interior.numpy()).max() > 0.01  # other stored points
    residual = lambda d, step: float(d.loss_terms(step)["residual"])  # noqa: E731
    seeds.clear()
    assert residual(sobol, 4) == residual(lhs, 4)  # the fresh points replace them
    assert seeds == [draw_seed(5, 4)] * 2 == [5 * 1_000_003 + 4] * 2
    assert residual(sobol, 4) != residual(sobol, 5)
    assert residual(data("sobol", seed=6), 4) != residual(sobol, 4)
    # the draw advances once per Adam loss, so the compiled loop's steps draw 0, 1, 2, ...
    assert sobol.random and int(sobol.draw_step.numpy()) == 0
    total, terms = sobol.loss(advance=True)
    assert int(sobol.draw_step.numpy()) == 1 and float(total) == pytest.approx(sum(float(v) for v in terms.values()))
    plain = pinn.TrainingData(heat(), interior=16)
    plain.build(pinn.mlp(DOMAIN, width=8, depth=2))
    plain.loss(advance=True)
    assert not plain.random and int(plain.draw_step.numpy()) == 0  # nothing random: no draw to advance
    assert int(draw_seed(5, tf.constant(4), replica=2)) == draw_seed(5, 4, replica=2) == draw_seed(5, 4) + 2 * 2**40


def test_forward_partials_reach_the_conditions_with_the_nested_values(monkeypatch):
    conditions = [
        pinn.Dirichlet(lambda x: x["t"], count=8),
        pinn.Neumann(0.5, count=8),
        pinn.Condition(lambda d, x, n: d["u_xx"] + d["u_t"], needs=("u_xx", "u_t"), on="initial", count=8, name="c"),
        pinn.Periodic("x", count=6),
    ]
    forward = pinn.Problem(
        DOMAIN,
        needs=("u_t", "u_xx"),
        residual=lambda d, x, p: d["u_t"] - d["u_xx"],
        conditions=conditions,
        partials_method="forward",
    )
    nested = forward.replace(partials_method="nested")
    model = pinn.mlp(DOMAIN, width=8, depth=2, seed=2)
    solution, points = forward.solution(model), forward.sample_points(16, seed=1)
    calls = []
    real = problem_module.propagation.forward_partials
    counted = lambda *a, **k: calls.append(1) or real(*a, **k)
    monkeypatch.setattr(problem_module.propagation, "forward_partials", counted)
    for condition in conditions:
        arrays = {key: tf.constant(value, model.weights[0].dtype) for key, value in points[condition.name].items()}
        before = len(calls)
        by_jets = forward.condition_residual(condition, solution, arrays).numpy()
        assert len(calls) == before + 1, f"{condition.name}: the forward pass was not used"
        by_tapes = nested.condition_residual(condition, solution, arrays).numpy()
        assert len(calls) == before + 1  # nested tapes stay nested
        assert np.abs(by_tapes).max() > 0.1
        np.testing.assert_allclose(by_jets, by_tapes, rtol=1e-9, atol=1e-9)


def test_one_relative_l2_helper_and_the_former_names_are_gone():
    prediction = {"u": np.array([1.0, 2.0, 3.0]), "v": np.array([0.0, 1.0, 0.0])}
    reference = {"u": np.array([1.0, 2.0, 2.0]), "v": np.array([0.0, 2.0, np.nan])}
    errors = relative_l2_errors(prediction, reference)
    assert errors["relative_l2_error_u"] == pytest.approx(1.0 / 3.0)
    assert errors["relative_l2_error_v"] == pytest.approx(0.5)
    assert errors["relative_l2_error"] == pytest.approx(np.sqrt(2.0 / 13.0))  # all fields together, not a mean
    assert relative_l2_errors(prediction, reference, ("v",))["relative_l2_error"] == pytest.approx(0.5)
    with pytest.raises(ValueError, match="missing"):
        relative_l2_errors({"u": prediction["u"]}, reference)
    for old in ("ReferenceError", "Resampling", "ResamplePoints", "relative_l2_error"):  # one name per thing
        assert old not in pinn.__all__
        with pytest.raises(AttributeError, match=f"module 'hodiff.pinn' has no attribute '{old}'"):
            getattr(pinn, old)
    for module, old in (("callbacks", "ReferenceError"), ("trainer", "Resampling"), ("keras_model", "ResamplePoints")):
        with pytest.raises(ImportError, match=f"cannot import name '{old}'"):
            exec(f"from hodiff.pinn.{module} import {old}", {})
    with pytest.raises(AttributeError, match="no attribute 'relative_l2_error'"):
        pinn.trainer.relative_l2_error  # noqa: B018
