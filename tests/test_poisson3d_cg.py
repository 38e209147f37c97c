"""poisson3d_cg (PINNacle Poisson3d-CG): the loss is the Ritz energy on the cut-cell grid, the network's features
have the source's frequencies, the fast preset trains and answers --evaluate, bad input is refused.

The cut-cell reference has its convergence tests in ``test_cutcell_reference.py``; the default preset against its
target is a ``slow`` test.
"""

import json

import numpy as np
import pytest
import tensorflow as tf

from pinn_examples import cutcell_reference as cc
from pinn_examples import poisson3d_cg
from pinn_examples.__main__ import main


def smooth(x, y, z, ops=np):
    """A smooth field with no particular boundary behaviour (the energy is defined for any)."""
    return 0.3 * ops.cos(2.0 * x + 0.5) * ops.sin(3.0 * y) + 0.2 * z**2 - 0.1


def smooth_gradient(x, y, z):
    return (
        -0.6 * np.sin(2.0 * x + 0.5) * np.sin(3.0 * y),
        0.9 * np.cos(2.0 * x + 0.5) * np.cos(3.0 * y),
        0.4 * z,
    )


def test_loss_is_the_ritz_energy():
    """loss(u) - loss(0) = 2 E(u) / |domain|, E(u) = int 1/2 |grad u|^2 + 1/2 k^2 u^2 - f u over the domain.

    The loss at the default preset's points; E computed independently: the midpoint rule on 80 cells a side,
    each weighted by its fluid fraction (the cut-cell reference's geometry). k^2 swapped at z = 1/2, or a
    factor 2 on the gradient, changes the difference by far more than the tolerance."""
    settings = poisson3d_cg.EXAMPLE.presets["default"]
    problem, _ = poisson3d_cg.build(settings)
    points = tf.constant(problem.domain.sample_interior(settings.interior, settings.sampling, settings.seed))
    loss = lambda u: sum(float(v) for v in problem.loss_terms(u, {"interior": points}, {}).values())  # noqa: E731
    field = lambda p: smooth(p[:, 0], p[:, 1], p[:, 2], tf)[:, None]  # noqa: E731
    difference = loss(field) - loss(lambda p: 0.0 * p[:, :1])
    n = 80
    solid, _ = cc.solid_fractions(cc.CG3_BALLS, n)
    axis = (np.arange(n) + 0.5) / n
    x, y, z = np.meshgrid(axis, axis, axis, indexing="ij")
    u, gradient = smooth(x, y, z), smooth_gradient(x, y, z)
    density = 0.5 * sum(g**2 for g in gradient) + 0.5 * cc.cg3_k2(z) * u**2 - cc.cg3_source(x, y, z) * u
    fluid = 1.0 - solid
    energy, volume = np.sum(fluid * density) / n**3, np.sum(fluid) / n**3
    wanted = 2.0 * energy / volume
    assert abs(difference - wanted) < 1e-2 * abs(wanted), (difference, wanted)  # measured: 4.1e-3


def test_residuals_are_the_energy_density_point_by_point():
    """At each point: u_x, u_y, u_z and k u - f / k, with k^2 = 64 below z = 1/2 and 100 above."""
    problem, _ = poisson3d_cg.build(poisson3d_cg.EXAMPLE.presets["fast"])
    points = problem.domain.sample_interior(500, "random", 3)
    field = lambda p: smooth(p[:, 0], p[:, 1], p[:, 2], tf)[:, None]  # noqa: E731
    residuals = dict(zip(problem.residual_names, problem.pde_residuals(field, tf.constant(points), {})))
    x, y, z = points.T
    k = np.where(z < 0.5, 8.0, 10.0)
    for name, value in zip(("u_x", "u_y", "u_z"), smooth_gradient(x, y, z)):
        np.testing.assert_allclose(residuals[name].numpy(), value, rtol=1e-10, atol=1e-12)
    reaction = k * smooth(x, y, z) - cc.cg3_source(x, y, z) / k
    np.testing.assert_allclose(residuals["reaction"].numpy(), reaction, rtol=1e-10, atol=1e-10)
    # the domain: the balls' centres are outside, the cube's corners inside
    centres = np.array([ball[:3] for ball in cc.CG3_BALLS])
    assert not problem.domain.contains(centres).any() and problem.domain.contains([[0.0, 0.0, 0.0], [1, 1, 1]]).all()
    assert problem.domain.contains(points).all()


def test_features_have_the_source_frequencies():
    """The network is a function of cos / sin of 10 pi y (and lower): shifting y by 0.2 changes only the low
    features' part, which is checked by building a network whose low y frequencies are dropped."""
    frequencies = dict(poisson3d_cg.FREQUENCIES)
    try:
        poisson3d_cg.FREQUENCIES = {**frequencies, "y": (10 * np.pi,), "z": (5 * np.pi,)}
        problem, model = poisson3d_cg.build(poisson3d_cg.EXAMPLE.presets["fast"])
    finally:
        poisson3d_cg.FREQUENCIES = frequencies
    p = np.random.default_rng(0).uniform(0.0, 0.6, size=(20, 3))
    u = lambda q: model(tf.constant(q)).numpy()[:, 0]  # noqa: E731
    np.testing.assert_allclose(u(p + [0.0, 0.2, 0.4]), u(p), atol=1e-12)  # periods 0.2 in y and 0.4 in z
    assert np.abs(u(p + [0.0, 0.1, 0.0]) - u(p)).max() > 1e-3


@pytest.fixture
def coarse_reference(monkeypatch):
    """The reference at h = 1/40 and 2,000 test points: the default h = 1/160 takes minutes."""
    monkeypatch.setattr(poisson3d_cg, "REFERENCE_CELLS", 40)
    monkeypatch.setattr(poisson3d_cg, "TEST_POINTS", 2000)


@pytest.mark.usefixtures("coarse_reference")
def test_fast_preset_trains_evaluates_and_refuses_bad_input(tmp_path, capsys):
    output = tmp_path / "poisson3d_cg"
    assert main(["poisson3d_cg", "--preset", "fast", "--output", str(output), "--no-progress"]) == 0
    metrics = json.loads((output / "metrics.json").read_text())
    assert metrics["relative_l2_error"] < metrics["initial_relative_l2_error"]
    assert metrics["error_points"] == 2000 and np.isfinite(metrics["quadrature_gap"]) and metrics["energy"] < 0
    for picture in ("field.png", "slices.png", "prediction.npz"):
        assert (output / picture).exists()
    with np.load(output / "prediction.npz") as run:  # the plane z = 0.6: NaN in the two large balls
        assert run["prediction"].shape == (40, 40)
        assert np.isnan(run["prediction"][15, 11]) and np.isfinite(run["prediction"][0, 0])
    # --evaluate at points in the domain, one in a ball
    points = np.array([[0.1, 0.1, 0.1], [0.9, 0.5, 0.45], [0.5, 0.95, 0.55], [0.4, 0.3, 0.6], [1.0, 0.0, 1.0]])
    np.save(tmp_path / "points.npy", points)
    evaluate = ["poisson3d_cg", "--evaluate", str(tmp_path / "points.npy"), "--output", str(output)]
    with pytest.raises(SystemExit, match=r"1 of 5 points are outside.*row 3: x=0.4, y=0.3, z=0.6.*--outside nan"):
        main(evaluate)
    assert main([*evaluate, "--outside", "nan"]) == 0
    with np.load(output / "evaluation.npz") as evaluation:
        values = evaluation["u"]
    assert np.isnan(values[3]) and np.all(np.isfinite(np.delete(values, 3)))
    # the run's own prediction at the points in the domain (the first picture point of field.png's plane)
    problem, model = poisson3d_cg.build(poisson3d_cg.EXAMPLE.presets["fast"])
    tf.train.Checkpoint(model=model).restore(tf.train.latest_checkpoint(str(output / "checkpoints"))).expect_partial()
    fluid = np.delete(points, 3, axis=0)
    np.testing.assert_allclose(np.delete(values, 3), problem.solution(model)(tf.constant(fluid)).numpy()[:, 0])
    np.save(tmp_path / "wrong.npy", points[:, :2])
    with pytest.raises(SystemExit, match=r"give 3 columns in that order"):
        main(["poisson3d_cg", "--evaluate", str(tmp_path / "wrong.npy"), "--output", str(output)])
    capsys.readouterr()
    with pytest.raises(SystemExit) as stop:  # refused when the flags are parsed (Example.check): exit status 2
        main(["poisson3d_cg", "--preset", "fast", "--adaptive-weights", "--output", str(tmp_path / "other")])
    assert stop.value.code == 2 and "leave out --adaptive-weights" in capsys.readouterr().err


@pytest.mark.slow
def test_default_preset_meets_its_target(tmp_path):
    output = tmp_path / "poisson3d_cg"
    assert main(["poisson3d_cg", "--output", str(output), "--no-progress"]) == 0
    metrics = json.loads((output / "metrics.json").read_text())
    assert metrics["target_met"] is True
    assert abs(metrics["quadrature_gap"]) < 5e-3 * abs(metrics["energy"]), "the network has not fooled its points"
