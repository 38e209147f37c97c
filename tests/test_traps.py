"""Issue 23: traps users met on their own problems, each an error or a warning that says what to do."""

import logging

import keras
import numpy as np
import pytest
import tensorflow as tf

from hodiff import pinn
from hodiff.meta import FunctionalModel, MetaLearner
from hodiff.training.lbfgs import minimize_lbfgs

SQUARE = pinn.Rectangle(("x", "y"), (0.0, 0.0), (1.0, 1.0))


def laplace(needs=("u_xx", "u_yy"), residual=None, output_transform=None, fields=("u",)):
    return pinn.Problem(
        SQUARE,
        needs=needs,
        residual=residual or (lambda d, x, p: d["u_xx"] + d["u_yy"]),
        conditions=[pinn.Dirichlet(0.0, count=8)],
        fields=fields,
        output_transform=output_transform,
    )


def trainer_for(problem, model=None, interior=16):
    model = model or pinn.mlp(problem.domain, width=8, depth=1, outputs=len(problem.fields), seed=0)
    schedule = pinn.Schedule(steps_per_call=2, log_every=2, progress=False)
    return pinn.Trainer(pinn.TrainingData(problem, interior=interior), model, schedule=schedule)


def test_residual_reading_a_partial_not_in_needs_names_it():
    # found when the problem is built (issue 46 item 4), not at the first training step
    with pytest.raises(KeyError, match=r"Problem: the residual reads d\['u_yy'\], which is not in its needs"):
        laplace(needs=("u_xx",))
    with pytest.raises(KeyError, match=r"needs=\('u_xx', 'u_yy'\)"):
        laplace(needs=("u_xx",))
    wall = pinn.Condition(lambda d, x, n: d["u_y"], needs=("u_x",), count=4, name="wall")
    with pytest.raises(KeyError, match=r"Condition 'wall': the residual reads d\['u_y'\].*needs=\('u_x', 'u_y'\)"):
        pinn.Problem(SQUARE, needs=("u_xx", "u_yy"), residual=lambda d, x, p: d["u_xx"] + d["u_yy"], conditions=[wall])


def test_output_transform_with_the_wrong_shape_says_the_shape_it_must_return():
    flat = laplace(output_transform=lambda x, outputs: x["x"] * outputs[:, 0])  # (N,), not (N, 1)
    with pytest.raises(ValueError, match=r"output_transform returned shape \(5,\).*must return \(N, 1\).*u\[:, None\]"):
        flat.solution(pinn.mlp(SQUARE, width=4, depth=1, seed=0))(tf.zeros((5, 2), tf.float64))
    two = laplace(fields=("u", "v"), output_transform=lambda x, outputs: outputs[:, :1])
    with pytest.raises(ValueError, match=r"shape \(5, 1\).*\(N, 2\), one column per field \('u', 'v'\)"):
        two.solution(pinn.mlp(SQUARE, width=4, depth=1, outputs=2, seed=0))(tf.zeros((5, 2), tf.float64))
    good = laplace(output_transform=lambda x, outputs: (x["x"] * outputs[:, 0])[:, None])
    points = tf.constant([[0.0, 0.3], [0.5, 0.5]], tf.float64)
    values = good.solution(pinn.mlp(SQUARE, width=4, depth=1, seed=0))(points)
    assert values.shape == (2, 1) and values[0, 0] == 0.0


def test_predict_checks_columns_and_warns_outside_the_domain():
    domain = SQUARE * pinn.Parameter("k", 1.0, 2.0)
    problem = pinn.Problem(
        domain, needs=("u_xx",), residual=lambda d, x, p: d["u_xx"], conditions=[pinn.Dirichlet(0.0, count=8)]
    )
    trainer = trainer_for(problem)
    with pytest.raises(
        ValueError, match=r"Trainer.predict: `points` must have shape \(N, 3\).*columns \('x', 'y', 'k'\)"
    ):
        trainer.predict(np.zeros((4, 2)))
    with pytest.warns(UserWarning, match=r"2 of 3 points are outside the domain.*row 1: x=0.5, y=0.5, k=3.*parameter"):
        values = trainer.predict([[0.5, 0.5, 1.5], [0.5, 0.5, 3.0], [1.5, 0.5, 1.5]])
    assert values.shape == (3, 1) and np.all(np.isfinite(values))
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        trainer.predict([[0.5, 0.5, 1.5], [1.0, 0.0, 2.0]])  # inside, corners included: no warning
    keras_model = pinn.PINNModel(problem, pinn.mlp(domain, width=4, depth=1, seed=0), interior=16)
    with pytest.raises(ValueError, match=r"PINNModel.predict: `points` must have shape \(N, 3\)"):
        keras_model.predict(np.zeros((4, 2)), verbose=0)
    with pytest.warns(UserWarning, match="PINNModel.predict: 1 of 1 points are outside"):
        keras_model.predict(np.array([[2.0, 0.5, 1.5]]), verbose=0)


def test_lbfgs_line_search_failure_is_explained(caplog):
    @tf.custom_gradient
    def uphill(v):
        return tf.reduce_sum(v**2), lambda g: -2 * g * v  # a gradient that does not match the loss

    for dtype, cause in ((tf.float32, "float32"), (tf.float64, "gradient does not match")):
        v = tf.Variable([1.0, -2.0], dtype=dtype)
        with caplog.at_level(logging.WARNING, logger="hodiff.training.lbfgs"):
            result = minimize_lbfgs(lambda v=v: uphill(v), [v], 20)
        assert result.message.startswith("ABNORMAL: line search failed") and cause in result.message
        assert "stop earlier" in result.message and abs(result.fun - 5.0) < 1e-6
        assert "line search failed" in caplog.text


def dense_then(*layers, width=6):
    """Dense (identity kernel, zero bias) then ``layers``: the model's output is ``layers(x)``."""
    dense = keras.layers.Dense(width, kernel_initializer="identity", bias_initializer="zeros")
    return keras.Sequential([keras.Input((width,)), dense, *layers])


def test_functional_model_batchnorm_error_says_where_the_option_goes():
    with pytest.raises(ValueError, match=r"FunctionalModel\(model, batch_statistics=True\).*MetaLearner"):
        FunctionalModel(dense_then(keras.layers.BatchNormalization()))
    with pytest.raises(ValueError, match=r"FunctionalModel\(model, batch_statistics=True\)"):
        MetaLearner(dense_then(keras.layers.BatchNormalization()), loss_fn=keras.losses.MeanSquaredError())


def test_dropout_is_separate_from_batch_statistics_and_warned_about():
    x = tf.constant(np.random.default_rng(0).normal(size=(64, 6)), tf.float32)
    model = dense_then(keras.layers.BatchNormalization(), keras.layers.Dropout(0.5))
    with pytest.warns(UserWarning, match=r"\['dropout.*'\] are dropout layers.*FunctionalModel\(model, dropout=True\)"):
        statistics = FunctionalModel(model, batch_statistics=True)
    # batch statistics, dropout off: the batch normalised by its own mean and variance, the same at every call
    first = statistics(statistics.parameters(), x).numpy()
    centred = (x.numpy() - x.numpy().mean(0)) / np.sqrt(x.numpy().var(0) + 1e-3)
    np.testing.assert_allclose(first, centred, atol=1e-5)
    np.testing.assert_array_equal(statistics(statistics.parameters(), x).numpy(), first)
    # dropout on: half the units zeroed, the others scaled by 2, a new mask at every call
    both = FunctionalModel(model, batch_statistics=True, dropout=True)
    masks = []
    for _ in range(2):
        out = both(both.parameters(), x).numpy()
        kept = out != 0
        np.testing.assert_allclose(out[kept], 2 * centred[kept], atol=1e-5)
        assert 0.4 < kept.mean() < 0.6
        masks.append(kept)
    assert (masks[0] != masks[1]).mean() > 0.3
    # dropout without batch statistics (a model without BatchNormalization): the plain values, masked
    only = FunctionalModel(dense_then(keras.layers.Dropout(0.5)), dropout=True)
    out = only(only.parameters(), x).numpy()
    np.testing.assert_allclose(out[out != 0], 2 * x.numpy()[out != 0], atol=1e-6)
    assert 0.4 < (out != 0).mean() < 0.6
    with pytest.warns(UserWarning, match="dropout=True"):
        plain = FunctionalModel(dense_then(keras.layers.Dropout(0.5)))
    np.testing.assert_allclose(plain(plain.parameters(), x).numpy(), x.numpy(), atol=1e-6)  # inactive


def test_the_dropout_warning_says_the_learner_falls_back_to_its_task_loop():
    """A Dense stack with a Dropout layer is adapted task by task, not vectorised: the warning says so, and how to
    get the vectorised path back (issue 46 item 7)."""
    with pytest.warns(UserWarning, match=r"dropout=True.*falls back to its per-task loop.*slower than the vectorised"):
        learner = MetaLearner(
            dense_then(keras.layers.Dropout(0.5), keras.layers.Dense(1)), loss_fn=keras.losses.MeanSquaredError()
        )
    assert not learner.vectorized
    assert MetaLearner(
        dense_then(keras.layers.Dense(1)), loss_fn=keras.losses.MeanSquaredError()
    ).vectorized  # without it


HEAT_DOMAIN = pinn.Interval("x", 0.0, 1.0) * pinn.TimeDomain("t", 0.0, 1.0)
SINE = lambda x: tf.sin(np.pi * x["x"])


def heat(conditions=(), output_transform=None):
    return pinn.Problem(
        HEAT_DOMAIN,
        needs=("u_t", "u_xx"),
        residual=lambda d, x, p: d["u_t"] - 0.1 * d["u_xx"],
        conditions=list(conditions),
        output_transform=output_transform,
    )


def zero_network():
    """An MLP whose output is 0 everywhere (last layer zeroed): the trivial solution."""
    model = pinn.mlp(HEAT_DOMAIN, width=8, depth=1, seed=0)
    model.layers[-1].set_weights([np.zeros_like(w) for w in model.layers[-1].get_weights()])
    return model


def test_hard_initial_imposes_the_initial_value_exactly_and_composes():
    transform = pinn.hard_initial(SINE, time="t")
    x = {"x": tf.constant([0.25, 0.5, 0.5], tf.float64), "t": tf.constant([0.0, 0.0, 0.5], tf.float64)}
    n = tf.constant([[3.0], [-2.0], [4.0]], tf.float64)
    np.testing.assert_allclose(transform(x, n).numpy()[:, 0], [np.sin(np.pi / 4), 1.0, 1.0 + 0.5 * 4.0], rtol=1e-15)
    # bit for bit the transform the Allen-Cahn and KdV examples wrote by hand, so their results do not change
    rng = np.random.default_rng(0)
    x = {"x": tf.constant(rng.uniform(-1, 1, 50)), "t": tf.constant(rng.uniform(0, 1, 50))}
    n = tf.constant(rng.normal(size=(50, 1)))
    by_hand = (x["x"] ** 2 * tf.cos(np.pi * x["x"]))[:, None] + x["t"][:, None] * n
    helper = pinn.hard_initial(lambda x: x["x"] ** 2 * tf.cos(np.pi * x["x"]), time="t")(x, n)
    np.testing.assert_array_equal(helper.numpy(), by_hand.numpy())
    # a smooth time factor, a start time, an inner (hard boundary) transform, two fields
    boundary = lambda x, outputs: (x["x"] * (1 - x["x"]))[:, None] * outputs
    both = pinn.hard_initial(
        lambda x: tf.stack([SINE(x), 2 * SINE(x)], axis=1), start=0.5, factor=lambda s: 1 - tf.exp(-s), inner=boundary
    )
    x = {"x": tf.constant([0.0, 0.5], tf.float64), "t": tf.constant([0.5, 1.5], tf.float64)}
    u = both(x, tf.ones((2, 2), tf.float64)).numpy()
    np.testing.assert_allclose(u[0], [0.0, 0.0], atol=1e-15)  # x = 0 at t0: u0 = 0 and no network part
    np.testing.assert_allclose(u[1], [1.0 + (1 - np.exp(-1)) * 0.25, 2.0 + (1 - np.exp(-1)) * 0.25], rtol=1e-14)
    with pytest.raises(ValueError, match="time='tau' is not a coordinate"):
        pinn.hard_initial(SINE, time="tau")(x, tf.ones((2, 1), tf.float64))


def test_a_near_zero_field_with_a_nonzero_initial_condition_is_warned_about(caplog):
    soft = heat([pinn.Initial(SINE, count=16)])
    with caplog.at_level(logging.WARNING, logger="hodiff.pinn.trainer"):
        trainer_for(soft, zero_network(), interior=64).adam(2)
    message = [r.getMessage() for r in caplog.records if "near zero" in r.getMessage()]
    assert len(message) == 1 and "After Adam, the field 'u' is near zero everywhere" in message[0]
    assert "Initial condition 'initial'" in message[0] and "pinn.hard_initial(u0, time='t')" in message[0]
    rms = float(message[0].split("RMS ")[1].split(" ")[0])
    assert rms < 0.01, "Adam's two small steps leave the output near 0"
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="hodiff.pinn.trainer"):
        # the check alone (the end of every phase calls it): no warning for these
        trainer_for(heat([pinn.Initial(0.0, count=16)]), zero_network(), interior=64)._warn_if_trivial("Adam")  # u0 = 0
        trainer_for(heat(output_transform=pinn.hard_initial(SINE)), zero_network(), interior=64)._warn_if_trivial("x")
        trainer_for(soft, interior=64)._warn_if_trivial("Adam")  # a network that is not near zero
        trainer_for(soft, zero_network(), interior=64)._warn_if_trivial("Adam")
    assert len([r for r in caplog.records if "near zero" in r.getMessage()]) == 1, "only the last one"


def test_the_near_zero_warning_says_when_the_initial_terms_weight_is_zero(caplog):
    """With weights={'initial': 0} the initial condition is not imposed at all: the warning says so and how to fix
    it, rather than blaming the soft initial condition only (issue 46 item 5)."""
    unweighted = pinn.Problem(
        HEAT_DOMAIN,
        needs=("u_t", "u_xx"),
        residual=lambda d, x, p: d["u_t"] - 0.1 * d["u_xx"],
        conditions=[pinn.Initial(SINE, count=16, name="start")],
        weights={"start": 0.0},
    )
    with caplog.at_level(logging.WARNING, logger="hodiff.pinn.trainer"):
        trainer_for(unweighted, zero_network(), interior=64)._warn_if_trivial("Adam")
        trainer_for(heat([pinn.Initial(SINE, count=16, name="start")]), zero_network(), interior=64)._warn_if_trivial(
            "Adam"
        )
    first, second = [r.getMessage() for r in caplog.records if "near zero" in r.getMessage()]
    assert "the Initial term 'start' has loss weight 0 (weights={'start': 0})" in first
    assert "not imposed at all" in first and "positive weight" in first and "pinn.hard_initial(u0" in first
    assert "weight 0" not in second and "soft initial condition" in second


def test_lbfgs_trains_a_pure_neumann_problem_and_warns_the_solution_is_up_to_a_constant(caplog):
    """Only derivatives of u reach the loss, so the last bias does not: L-BFGS refused the trainer's own weights
    ("the loss does not depend on ['bias']") though the user passed none (issue 46 item 1)."""
    problem = pinn.Problem(
        SQUARE,
        needs=("u_xx", "u_yy"),
        residual=lambda d, x, p: (
            d["u_xx"] + d["u_yy"] + 2.0 * np.pi**2 * tf.cos(np.pi * x["x"]) * tf.cos(np.pi * x["y"])
        ),
        conditions=[pinn.Neumann(0.0, count=16)],
    )
    run = trainer_for(problem)
    run.adam(4)
    bias = run.model.layers[-1].bias.numpy().copy()
    with caplog.at_level(logging.WARNING, logger="hodiff.pinn.trainer"):
        result = run.lbfgs(5)
    assert result.nit >= 1 and np.isfinite(result.fun) and result.unconnected, result
    assert any("bias" in name for name in result.unconnected)
    np.testing.assert_array_equal(run.model.layers[-1].bias.numpy(), bias)  # a zero gradient: kept
    assert (
        "defined up to a constant" in caplog.text and "pinn.Dirichlet(" in caplog.text and "pinn.Data(" in caplog.text
    )
    v, w = tf.Variable(1.0), tf.Variable(3.0)
    with pytest.raises(ValueError, match="does not depend on .*unconnected='zero'"):  # a user's own variables
        minimize_lbfgs(lambda: tf.square(w - 1.0), [w, v], 5)
    result = minimize_lbfgs(lambda: tf.square(w - 1.0), [w, v], 20, unconnected="zero")
    assert abs(w.numpy() - 1.0) < 1e-5 and v.numpy() == 1.0 and result.unconnected == [v.name]


def test_the_model_output_is_checked_against_the_fields_when_the_data_is_built():
    """Two outputs for one field trained silently (predict gave two columns); an (N,) output ended in a raw
    StridedSlice error (issue 46 item 2)."""
    two = pinn.mlp(SQUARE, width=8, depth=1, outputs=2, seed=0)
    with pytest.raises(ValueError, match=r"returns 2 columns \(shape \(4, 2\).*1 field\(s\) \('u',\).*outputs=1"):
        trainer_for(laplace(), two)
    flat = keras.Sequential([keras.Input((2,)), keras.layers.Dense(4, activation="tanh"), keras.layers.Dense(1)])
    flat.add(keras.layers.Reshape(()))
    for problem in (laplace(), laplace(output_transform=lambda x, u: u[:, 0:1] * x["x"][:, None])):
        with pytest.raises(ValueError, match=r"returns shape \(4,\) for 4 points; it must return \(N, 1\).*Dense\(1\)"):
            trainer_for(problem, flat)
    trainer_for(laplace(fields=("u", "v")), two)  # as many outputs as fields: fine


@pytest.mark.parametrize("where", ["residual", "output transform", "condition"])
def test_a_float64_constant_in_a_float32_problem_is_named(where):
    """A float64 constant in a float32 residual or transform ended in a raw AddV2 / Mul error (issue 46 item 3)."""
    c = tf.constant(2.0, tf.float64)
    if where == "residual":
        problem = laplace(residual=lambda d, x, p: d["u_xx"] + d["u_yy"] + c)
    elif where == "output transform":
        problem = laplace(output_transform=lambda x, u: u * c)
    else:
        problem = pinn.Problem(
            SQUARE,
            needs=("u_xx", "u_yy"),
            residual=lambda d, x, p: d["u_xx"] + d["u_yy"],
            conditions=[pinn.Dirichlet(lambda x: x["x"] * c, count=8, name="wall")],
        )
    model = pinn.mlp(SQUARE, width=8, depth=1, seed=0, dtype="float32")
    message = rf"{where}.*mixes dtypes float32 and float64 \(in a (AddV2|Mul) op\).*tf.cast.*dtype='float64'"
    with pytest.raises(TypeError, match=message):
        trainer_for(problem, model)
    trainer_for(problem, pinn.mlp(SQUARE, width=8, depth=1, seed=0))  # float64: the fix
