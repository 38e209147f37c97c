"""heat2d_cg (PINNacle Heat2d-CG): the Robin terms sit on the right circles with the right data and
normals, a tiny run scores against the reference and answers --evaluate, bad flags are refused."""

import functools
import json

import numpy as np
import pytest

from pinn_examples import heat2d_cg, heat2d_cg_reference

# --no-lift: the lift is tested on its own below; in a tiny run it would only lengthen the compilation
TINY = [
    "--preset", "fast", "--interior", "64", "--boundary", "64", "--adam-steps", "20", "--lbfgs-iterations", "0",
    "--width", "8", "--depth", "2", "--steps-per-call", "10", "--log-every", "10", "--checkpoint-every", "10",
    "--no-progress", "--no-lift",
]  # fmt: skip


@pytest.fixture
def coarse_reference(monkeypatch):
    """The reference on the coarsest mesh and time steps (a second, not a minute)."""
    coarse = functools.partial(heat2d_cg_reference.heat2d_cg_reference, 5, 12)
    monkeypatch.setattr(heat2d_cg, "heat2d_cg_reference", coarse)
    return coarse


def test_the_robin_terms_sit_on_their_circles_with_their_data_and_normals_into_the_holes():
    settings = heat2d_cg.EXAMPLE.presets["default"]
    problem, _ = heat2d_cg.build(settings)
    terms = {condition.name: condition for condition in problem.conditions}
    assert set(terms) == {"large", "small", "rectangle"}
    assert sum(term.count for term in terms.values()) == pytest.approx(settings.boundary, abs=2)
    assert terms["large"].count / terms["small"].count == pytest.approx(11 / (6 * 0.4), rel=1e-2)
    for name, radius, value in (("large", 1.0, 5.0), ("small", 0.4, 1.0), ("rectangle", None, 0.1)):
        term = terms[name]
        assert (term.alpha, term.beta, term.value) == (1.0, 1.0, value)
        arrays = term.sample(problem.domain, "sobol", 0)
        points, normals = arrays["points"], arrays["normals"]
        assert points[:, 2].min() >= 0.0 and points[:, 2].max() <= 3.0
        if radius is None:
            on_edge = np.isclose(np.abs(points[:, 0]), 8.0) | np.isclose(np.abs(points[:, 1]), 12.0)
            assert on_edge.all()
            np.testing.assert_allclose(np.abs(normals[:, :2]).sum(axis=1), 1.0)
            continue
        centres = np.array([(x, y) for x, y, r in heat2d_cg_reference.DISKS if r == radius])
        offset = points[:, None, :2] - centres[None]
        nearest = np.argmin(np.linalg.norm(offset, axis=2), axis=1)
        radial = offset[np.arange(len(points)), nearest]
        np.testing.assert_allclose(np.linalg.norm(radial, axis=1), radius, atol=1e-9)
        np.testing.assert_allclose(normals[:, :2], -radial / radius, atol=1e-9)  # out of the domain: into the hole


def test_the_residual_vanishes_for_a_solution_of_the_heat_equation():
    import tensorflow as tf

    from hodiff.operators import partials

    points = tf.constant(np.random.default_rng(0).uniform(-1.0, 1.0, size=(20, 3)))
    u = lambda p: tf.exp(-2.0 * p[:, 2]) * tf.sin(p[:, 0]) * tf.cos(p[:, 1])  # noqa: E731
    d = partials(u, points, ("x", "y", "t"), ("t", "xx", "yy"))
    residual = heat2d_cg.residual({"u_t": d["t"], "u_xx": d["xx"], "u_yy": d["yy"]}, {}, {})
    np.testing.assert_allclose(residual.numpy(), 0.0, atol=1e-12)


@pytest.mark.parametrize("h", [1.0, 2.25])
def test_the_lift_is_the_robin_layer_of_a_half_space_and_vanishes_at_the_start(h):
    import tensorflow as tf

    from hodiff.operators import partials

    rng = np.random.default_rng(0)
    points = tf.constant(np.column_stack([rng.uniform(0.0, 3.0, 30), rng.uniform(1e-3, 3.0, 30)]))
    layer = lambda p: heat2d_cg.half_space(p[:, 0], p[:, 1], 5.0, h)  # noqa: E731
    d = partials(layer, points, ("d", "t"), ("t", "dd"))
    np.testing.assert_allclose(d["t"] - d["dd"], 0.0, atol=1e-12)  # v_t = v_dd
    wall = tf.constant(np.column_stack([np.zeros(5), [1e-4, 1e-2, 0.5, 1.0, 3.0]]))
    d = partials(layer, wall, ("d", "t"), ("d",))
    np.testing.assert_allclose(-d["d"], 5.0 - h * layer(wall).numpy(), atol=1e-12)  # -v_d = g - h v at d = 0
    # u ~ g (2 sqrt(t / pi) - h t) at the wall early on; the lift is zero at t = 0 and finite there
    np.testing.assert_allclose(layer(wall).numpy()[0], 5 * (2 * np.sqrt(1e-4 / np.pi) - h * 1e-4), rtol=1e-3)
    x = {"x": tf.constant([1.0, 2.0, -8.0], tf.float64), "y": tf.constant([0.0, -1.5, 5.0], tf.float64)}
    x["t"] = tf.zeros(3, tf.float64)
    np.testing.assert_array_equal(heat2d_cg.lift(x).numpy(), 0.0)
    x["t"] = tf.constant([0.5, 0.5, 0.5], tf.float64)
    lifted = heat2d_cg.lift(x).numpy()[:, 0]
    assert lifted[0] > lifted[1] > lifted[2] > 0.0  # on a large circle, between circles, on the rectangle


def test_each_circle_s_own_layer_meets_its_robin_condition():
    import tensorflow as tf

    from hodiff.operators import partials

    for cx, cy, radius in (heat2d_cg_reference.DISKS[0], heat2d_cg_reference.DISKS[-1]):  # a large, a small one
        g = 5.0 if radius == 1.0 else 1.0
        angle, t = np.linspace(0.0, 2.0 * np.pi, 7), np.linspace(0.01, 3.0, 7)
        on = tf.constant(np.column_stack([cx + radius * np.cos(angle), cy + radius * np.sin(angle), t]))
        own = lambda p: heat2d_cg.circle_layer(p[:, 0], p[:, 1], p[:, 2], (cx, cy, radius))  # noqa: B023, E731
        d = partials(own, on, ("x", "y", "t"), ("x", "y"))
        outward = -(np.cos(angle) * d["x"].numpy() + np.sin(angle) * d["y"].numpy())  # du/dn, n into the hole
        np.testing.assert_allclose(outward, g - own(on).numpy(), atol=1e-12)


def test_a_tiny_run_scores_at_the_test_points_and_answers_evaluate(tmp_path, coarse_reference):
    output = tmp_path / "run"
    assert heat2d_cg.main([*TINY, "--output", str(output)]) == 0
    metrics = json.loads((output / "metrics.json").read_text())
    reference = coarse_reference()
    assert metrics["error_points"] == len(reference["u"]) > 100_000
    assert 0.1 < metrics["relative_l2_error"] < 10.0  # an untrained network: finite, far from the reference
    saved = np.load(output / "prediction.npz")
    assert saved["prediction"].shape == saved["reference"].shape == (161, 241)
    assert np.array_equal(np.isnan(saved["prediction"]), np.isnan(saved["reference"]))  # blank in the holes
    points = reference["points"][::5000]
    points[:3, 2] = 0.0  # the hard initial condition: u = 0 at t = 0 whatever the network
    np.save(tmp_path / "points.npy", points)
    assert heat2d_cg.main(["--output", str(output), "--evaluate", str(tmp_path / "points.npy")]) == 0
    evaluated = np.load(output / "evaluation.npz")
    assert evaluated["u"].shape == (len(points),) and np.isfinite(evaluated["u"]).all()
    np.testing.assert_array_equal(evaluated["u"][:3], 0.0)
    assert np.all(evaluated["u"][3:] != 0.0)


@pytest.mark.parametrize(
    "flags, message",
    [(["--boundary", "0"], "--boundary: '0' is out of range"), (["--fourier-scale", "-1"], "--fourier-scale")],
)
def test_bad_flags_are_refused(flags, message, tmp_path, capsys):
    with pytest.raises(SystemExit) as stop:
        heat2d_cg.main([*flags, "--output", str(tmp_path / "run")])
    assert stop.value.code == 2
    assert message in capsys.readouterr().err
