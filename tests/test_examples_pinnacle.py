"""The PINNacle examples: poisson_nd, heat_nd, poisson_inverse, heat_inverse (closed-form truths), poisson2d_cg.

Fast presets train end to end and answer ``--evaluate``; the exact solutions (and coefficients)
solve the PDEs as the examples write them, by hodiff's derivatives in float64; the hard
conditions hold for any network; bad ``--evaluate`` input stops with a clear message. The
default presets against their targets are ``slow`` tests. (poisson2d_cg's finite-difference
reference has its convergence tests in ``test_fd_references.py``.)
"""

import json
import re

import numpy as np
import pytest
import tensorflow as tf

from pinn_examples import fd_references, heat_inverse, heat_nd, ns2d_cg, poisson2d_cg, poisson_inverse, poisson_nd
from pinn_examples.__main__ import main

MODULES = {
    "poisson_nd": poisson_nd,
    "heat_nd": heat_nd,
    "poisson_inverse": poisson_inverse,
    "heat_inverse": heat_inverse,
}
RUNS = {**MODULES, "poisson2d_cg": poisson2d_cg}  # the examples with a fast preset run and a default target
FIELDS = {
    "poisson_nd": ("u",),
    "heat_nd": ("u",),
    "poisson_inverse": ("u", "a"),
    "heat_inverse": ("u", "a"),
    "poisson2d_cg": ("u",),
}
IN_A_HOLE = {"poisson2d_cg": (0.4, -0.4)}  # a point of the bounding box outside the domain (a disk's centre)


def _exact_solution(name):
    """The truth as a solution function ``(N, d) -> (N, fields)`` of tensors."""
    if name == "poisson_nd":
        return lambda x: tf.reduce_sum(tf.sin(0.5 * np.pi * x), axis=1, keepdims=True)
    if name == "heat_nd":
        return lambda x: tf.exp(0.5 * tf.reduce_sum(x[:, :5] ** 2, axis=1, keepdims=True) + x[:, 5:6])
    if name == "poisson_inverse":
        return lambda x: tf.stack(list(poisson_inverse.exact(x[:, 0], x[:, 1]).values()), axis=1)
    return lambda x: tf.stack(list(heat_inverse.exact(x[:, 0], x[:, 1], x[:, 2]).values()), axis=1)


def _interior(problem, count=300, seed=3):
    return tf.constant(problem.domain.sample_interior(count, "random", seed), tf.float64)


@pytest.mark.parametrize("name", sorted(MODULES))
def test_exact_solution_solves_the_pde(name):
    module = MODULES[name]
    problem, _ = module.build(module.EXAMPLE.presets["fast"])
    (residual,) = problem.pde_residuals(_exact_solution(name), _interior(problem), {})
    assert np.max(np.abs(residual.numpy())) < 1e-9
    # and a plausible slip is seen: the solution scaled by 1.01 leaves a residual
    scaled = lambda x: 1.01 * _exact_solution(name)(x)
    assert np.max(np.abs(problem.pde_residuals(scaled, _interior(problem), {})[0].numpy())) > 1e-3


def test_pinnacle_sign_slip_in_the_poisson_inverse_source_is_not_consistent(monkeypatch):
    """PINNacle writes (2x + 1), (2y + 1) in f; with the truth that leaves a residual of order 1."""
    problem, _ = poisson_inverse.build(poisson_inverse.EXAMPLE.presets["fast"])
    x = _interior(problem)
    consistent = poisson_inverse.source

    def slipped(x, y):
        a = poisson_inverse.exact(x, y, ("a",))["a"]
        shift = 2.0 * (tf.cos(np.pi * x) * tf.sin(np.pi * y) + tf.sin(np.pi * x) * tf.cos(np.pi * y))
        return consistent(x, y) + 2.0 * np.pi * a**2 * shift  # (2x - 1) -> (2x + 1), (2y - 1) -> (2y + 1)

    monkeypatch.setattr(poisson_inverse, "source", slipped)
    assert np.max(np.abs(problem.pde_residuals(_exact_solution("poisson_inverse"), x, {})[0].numpy())) > 0.5


def test_source_formulas_agree_with_numpy_and_tensors():
    rng = np.random.default_rng(0)
    x, y, t = rng.uniform(-1, 1, 50), rng.uniform(-1, 1, 50), rng.uniform(0, 1, 50)
    np.testing.assert_allclose(
        heat_inverse.source(tf.constant(x), tf.constant(y), tf.constant(t)).numpy(), heat_inverse.source(x, y, t)
    )
    np.testing.assert_allclose(
        poisson_inverse.source(tf.constant(x), tf.constant(y)).numpy(), poisson_inverse.source(x, y)
    )


def test_heat_nd_neumann_condition_holds_for_the_exact_solution():
    problem, _ = heat_nd.build(heat_nd.EXAMPLE.presets["fast"])
    (sphere,) = problem.conditions
    arrays = {key: tf.constant(value) for key, value in sphere.sample(problem.domain, "random", 5).items()}
    assert np.allclose(np.linalg.norm(arrays["points"].numpy()[:, :5], axis=1), 1.0)
    residual = problem.condition_residual(sphere, _exact_solution("heat_nd"), arrays)
    assert np.max(np.abs(residual.numpy())) < 1e-10
    wrong = lambda x: 1.0 + _exact_solution("heat_nd")(x)  # du/dn = u - 1 there
    assert np.min(np.abs(problem.condition_residual(sphere, wrong, arrays).numpy())) > 0.99


def test_heat_nd_multiplicative_lift_turns_the_robin_condition_into_a_neumann_one():
    """u = u0 (1 + t N): du/dn - u = u0 t dN/dn on the sphere, zero for an N with no normal derivative."""
    problem, _ = heat_nd.build(heat_nd.EXAMPLE.presets["fast"])
    (sphere,) = problem.conditions
    arrays = {key: tf.constant(value) for key, value in sphere.sample(problem.domain, "random", 5).items()}
    named = lambda x: {name: x[:, i] for i, name in enumerate(heat_nd.COORDS)}
    radial = lambda x: 1.0 + 0.3 * x[:, 5] * tf.reduce_sum(x[:, :5] ** 2, axis=1)  # dN/dn = 0.6 t on the sphere
    in_time = lambda transform: lambda x: transform(named(x), tf.cos(x[:, 5:6]))  # N(t): no normal derivative
    residual = lambda solution: problem.condition_residual(sphere, solution, arrays).numpy().ravel()
    assert np.max(np.abs(residual(in_time(heat_nd.multiplicative_initial_condition)))) < 1e-12
    assert np.max(np.abs(residual(in_time(heat_nd.initial_condition)))) > 0.1  # the additive form needs dN/dn = N
    lifted = lambda x: heat_nd.multiplicative_initial_condition(named(x), radial(x)[:, None])
    points = arrays["points"].numpy()
    expected = np.exp(0.5) * points[:, 5] * 0.6 * points[:, 5]
    np.testing.assert_allclose(residual(lifted), expected, rtol=1e-10, atol=1e-14)


def test_hard_conditions_hold_for_any_network():
    # heat_nd: u(x, 0) = exp(|x|^2 / 2)
    problem, model = heat_nd.build(heat_nd.EXAMPLE.presets["fast"])
    points = problem.domain.sample_initial(50, "random", 1)
    assert np.allclose(points[:, 5], 0.0)
    values = problem.solution(model)(tf.constant(points)).numpy()[:, 0]
    np.testing.assert_allclose(values, heat_nd.exact(points), rtol=1e-12)
    # poisson_inverse: a on the sides of the square
    problem, model = poisson_inverse.build(poisson_inverse.EXAMPLE.presets["fast"])
    side = np.linspace(0.0, 1.0, 11)
    sides = np.concatenate([np.stack([side, np.full_like(side, end)], 1) for end in (0.0, 1.0)])
    sides = np.concatenate([sides, sides[:, ::-1]])
    a = problem.solution(model)(tf.constant(sides)).numpy()[:, 1]
    np.testing.assert_allclose(a, poisson_inverse.exact(sides[:, 0], sides[:, 1])["a"], rtol=1e-12)
    # heat_inverse: u at t = 0 and on the sides, a on the sides (a = 2)
    problem, model = heat_inverse.build(heat_inverse.EXAMPLE.presets["fast"])
    rng = np.random.default_rng(2)
    initial = np.stack([rng.uniform(-1, 1, 20), rng.uniform(-1, 1, 20), np.zeros(20)], axis=1)
    walls = np.stack([np.repeat([-1.0, 1.0], 10), rng.uniform(-1, 1, 20), rng.uniform(0, 1, 20)], axis=1)
    walls = np.concatenate([walls, walls[:, [1, 0, 2]]])
    values = problem.solution(model)(tf.constant(np.concatenate([initial, walls]))).numpy()
    truth = heat_inverse.exact(*np.concatenate([initial, walls]).T)
    np.testing.assert_allclose(values[:20, 0], truth["u"][:20], atol=1e-12)
    np.testing.assert_allclose(values[20:, 0], 0.0, atol=1e-12)
    np.testing.assert_allclose(values[20:, 1], 2.0, atol=1e-12)


def test_heat_inverse_coefficient_does_not_depend_on_time():
    problem, model = heat_inverse.build(heat_inverse.EXAMPLE.presets["fast"])
    points = np.array([[0.3, -0.2, 0.0], [0.3, -0.2, 0.5], [0.3, -0.2, 1.0]])
    a = problem.solution(model)(tf.constant(points)).numpy()[:, 1]
    assert np.ptp(a) < 1e-12


def test_observations_are_fixed_and_noisy():
    points, values = poisson_inverse.observations()
    assert points.shape == (2500, 2) and np.unique(points[:, 0]).size == 50
    noise = values - poisson_inverse.exact(points[:, 0], points[:, 1], ("u",))["u"]
    assert 0.09 < np.std(noise) < 0.11
    np.testing.assert_array_equal(values, poisson_inverse.observations()[1])
    points, values = heat_inverse.observations()
    assert points.shape == (2500, 3) and points[:, 2].min() >= 0.0 and np.abs(points[:, :2]).max() <= 1.0
    noise = values - heat_inverse.exact(*points.T, ("u",))["u"]
    assert 0.09 < np.std(noise) < 0.11


def _evaluation_points(name):
    module = RUNS[name]
    problem, _ = module.build(module.EXAMPLE.presets["fast"])
    return problem.domain.sample_interior(7, "random", 11)


@pytest.mark.parametrize("name", sorted(RUNS))
def test_fast_preset_trains_evaluates_and_refuses_bad_points(name, tmp_path, capsys):
    output = tmp_path / name
    assert main([name, "--preset", "fast", "--output", str(output), "--no-progress"]) == 0
    metrics = json.loads((output / "metrics.json").read_text())
    assert metrics["relative_l2_error"] < metrics["initial_relative_l2_error"]
    for field in FIELDS[name]:
        assert np.isfinite(metrics[f"relative_l2_error_{field}"])
    assert (output / "field.png").exists() and (output / "prediction.npz").exists()
    points = _evaluation_points(name)
    np.save(tmp_path / "points.npy", points)
    assert main([name, "--evaluate", str(tmp_path / "points.npy"), "--output", str(output)]) == 0
    with np.load(output / "evaluation.npz") as evaluation:
        assert set(evaluation.files) == {"points", "checkpoint", "step", *FIELDS[name]}
        assert all(evaluation[field].shape == (7,) for field in FIELDS[name])
    # the wrong number of columns names the coordinates to give
    np.save(tmp_path / "wrong.npy", points[:, :-1])
    with pytest.raises(SystemExit, match=r"columns.*give \d columns in that order"):
        main([name, "--evaluate", str(tmp_path / "wrong.npy"), "--output", str(output)])
    # a point outside the domain stops, unless --outside nan
    outside = points.copy()
    outside[0, 0] = 5.0
    if name in IN_A_HOLE:
        outside[1, :2] = IN_A_HOLE[name]
    np.save(tmp_path / "outside.npy", outside)
    with pytest.raises(SystemExit, match="outside"):
        main([name, "--evaluate", str(tmp_path / "outside.npy"), "--output", str(output)])
    assert main([name, "--evaluate", str(tmp_path / "outside.npy"), "--output", str(output), "--outside", "nan"]) == 0
    with np.load(output / "evaluation.npz") as evaluation:
        values = evaluation[FIELDS[name][0]]
        np.testing.assert_array_equal(np.isnan(values), [True, name in IN_A_HOLE, False, False, False, False, False])


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(RUNS))
def test_default_preset_meets_its_target(name, tmp_path):
    output = tmp_path / name
    assert main([name, "--output", str(output), "--no-progress"]) == 0
    metrics = json.loads((output / "metrics.json").read_text())
    assert metrics["target_met"] is True
    if "a" in FIELDS[name]:
        assert metrics["relative_l2_error_u"] <= 1e-2 and metrics["relative_l2_error_a"] <= 1e-2


def test_poisson2d_cg_output_is_fixed_on_the_edges_and_the_circles():
    problem, model = poisson2d_cg.build(poisson2d_cg.EXAMPLE.presets["fast"])
    solution = lambda points: problem.solution(model)(tf.constant(points)).numpy()[:, 0]
    edges, _ = problem.domain.sample_boundary(64, where="edges", seed=3)
    circles, _ = problem.domain.sample_boundary(64, where="circle", seed=4)
    assert np.all(np.isclose(np.abs(edges), 1.0).any(axis=1))
    np.testing.assert_allclose(solution(edges), fd_references.CG_EDGES, atol=1e-9)
    np.testing.assert_allclose(solution(circles), fd_references.CG_CIRCLES, atol=1e-9)
    inside = solution(problem.domain.sample_interior(64, seed=5))
    assert np.std(inside) > 1e-2, "inside, the network's output counts"


def test_poisson2d_cg_residual_is_the_screened_poisson_equation():
    """For u = sin 2x cos 3y, -Laplace(u) + 64 u - f = 77 u - f, with PINNacle's f."""
    problem, _ = poisson2d_cg.build(poisson2d_cg.EXAMPLE.presets["fast"])
    points = _interior(problem)
    u = lambda x: (tf.sin(2.0 * x[:, 0]) * tf.cos(3.0 * x[:, 1]))[:, None]
    (residual,) = problem.pde_residuals(u, points, {})
    x, y = points.numpy().T
    f = 10.0 * (1.0 + x**2 + 16.0 + y**2) * np.sin(np.pi * x) * np.sin(4.0 * np.pi * y)  # as PINNacle writes it
    np.testing.assert_allclose(residual.numpy(), 77.0 * np.sin(2 * x) * np.cos(3 * y) - f, rtol=1e-10, atol=1e-9)


def test_poisson2d_cg_reference_is_nan_exactly_outside_the_domain():
    axes, values = poisson2d_cg.reference()
    assert values.shape == (201, 201)
    problem, _ = poisson2d_cg.build(poisson2d_cg.EXAMPLE.presets["fast"])
    mesh = np.meshgrid(*axes.values(), indexing="ij")
    inside = problem.domain.contains(np.stack([m.ravel() for m in mesh], axis=1)).reshape(values.shape)
    np.testing.assert_array_equal(np.isfinite(values), inside)
    assert 0.6 < inside.mean() < 0.8  # the disks take pi (0.04 + 0.16 + 0.01 + 0.09) / 4 = 24% of the square
    np.testing.assert_allclose(values[0], 0.2)


# ----------------------------------------------------------------------------- poisson2d_ms (Poisson2d-MS)
@pytest.fixture
def pinnacle_data():
    """PINNacle's coefficient files, where the checkout keeps them (``../shared/pinnacle`` or $HODIFF_PINNACLE_DATA)."""
    from pinn_examples import poisson2d_ms_reference

    try:
        poisson2d_ms_reference.coefficients()
    except FileNotFoundError as error:
        pytest.skip(str(error))


def test_poisson2d_ms_flux_has_the_source_as_divergence(pinnacle_data):
    from pinn_examples import poisson2d_ms, poisson2d_ms_reference

    table = poisson2d_ms.tables()
    rng = np.random.default_rng(4)
    x, y, h = rng.uniform(-10, 10, 500), rng.uniform(-10, 10, 500), 1e-5
    divergence = (poisson2d_ms.flux(x + h, y, table)[0] - poisson2d_ms.flux(x - h, y, table)[0]) / (2 * h)
    divergence += (poisson2d_ms.flux(x, y + h, table)[1] - poisson2d_ms.flux(x, y - h, table)[1]) / (2 * h)
    np.testing.assert_allclose(divergence, -poisson2d_ms_reference.source(x, y), atol=1e-8)
    # the tensor and numpy versions agree
    fx, fy = poisson2d_ms.flux(tf.constant(x), tf.constant(y), table)
    np.testing.assert_allclose(fx.numpy(), poisson2d_ms.flux(x, y, table)[0], rtol=1e-12)
    np.testing.assert_allclose(fy.numpy(), poisson2d_ms.flux(x, y, table)[1], rtol=1e-12)


def test_poisson2d_ms_loss_is_the_ritz_energy_up_to_a_constant(pinnacle_data):
    """loss(u) - loss(0) = 2 E(u) / area, E(u) = int 1/2 |grad u|^2 + g u + 1/2 oint u^2 (an independent quadrature)."""
    from pinn_examples import poisson2d_ms, poisson2d_ms_reference

    problem, _ = poisson2d_ms.build(poisson2d_ms.EXAMPLE.presets["default"])
    points = problem.sample_points(10000)
    weights = {name: problem.weights.get(name, 1.0) for name in problem.term_names}
    loss = lambda solution: sum(weights[k] * float(v) for k, v in problem.loss_terms(solution, points, {}).items())
    u = lambda x: 3.0 * tf.sin(0.2 * x[:, :1] + 0.4) * tf.cos(0.15 * x[:, 1:]) + 0.5
    # the energy on a finer midpoint grid, with g = -f / a from the reference module
    n = 400
    axis = poisson2d_ms.midpoints(n)
    gx, gy = np.meshgrid(axis, axis, indexing="ij")
    values = 3.0 * np.sin(0.2 * gx + 0.4) * np.cos(0.15 * gy) + 0.5
    ux, uy = 0.6 * np.cos(0.2 * gx + 0.4) * np.cos(0.15 * gy), -0.45 * np.sin(0.2 * gx + 0.4) * np.sin(0.15 * gy)
    cell = (20.0 / n) ** 2
    energy = np.sum(0.5 * (ux**2 + uy**2) + poisson2d_ms_reference.source(gx, gy) * values) * cell
    edges, _ = poisson2d_ms.edge_points(n)
    edge_values = 3.0 * np.sin(0.2 * edges[:, 0] + 0.4) * np.cos(0.15 * edges[:, 1]) + 0.5
    energy += 0.5 * np.sum(edge_values**2) * 20.0 / n
    zero = lambda x: 0.0 * x[:, :1]
    difference = loss(u) - loss(zero)
    assert abs(difference - 2.0 * energy / 400.0) < 2e-3 * abs(difference)


@pytest.mark.usefixtures("pinnacle_data")
def test_poisson2d_ms_fast_preset_trains_evaluates_and_refuses_bad_input(tmp_path, monkeypatch, capsys):
    output = tmp_path / "poisson2d_ms"
    assert main(["poisson2d_ms", "--preset", "fast", "--output", str(output), "--no-progress"]) == 0
    metrics = json.loads((output / "metrics.json").read_text())
    assert metrics["relative_l2_error"] < metrics["initial_relative_l2_error"]
    # --evaluate at test-grid nodes on the edges, the corners and the interfaces gives the run's own prediction there
    with np.load(output / "prediction.npz") as run:
        x, y, prediction = run["x"], run["y"], run["prediction"]
    rows = [(0, 0), (100, 100), (20, 60), (40, 40), (100, 35), (0, 80), (57, 13)]
    points = np.array([[x[i], y[j]] for i, j in rows])
    np.save(tmp_path / "points.npy", points)
    assert main(["poisson2d_ms", "--evaluate", str(tmp_path / "points.npy"), "--output", str(output)]) == 0
    with np.load(output / "evaluation.npz") as evaluation:
        np.testing.assert_allclose(evaluation["u"], [prediction[i, j] for i, j in rows], rtol=1e-10)
    # an --interior that is not the square of a multiple of 5: refused when the flags are parsed (exit status 2)
    capsys.readouterr()
    with pytest.raises(SystemExit) as stop:
        main(["poisson2d_ms", "--preset", "fast", "--interior", "1000", "--output", str(tmp_path / "other")])
    assert stop.value.code == 2 and re.search(r"--interior 1000 is not n\^2.*--interior 900", capsys.readouterr().err)
    # the coefficient files missing: the message names the file and the fix
    monkeypatch.setenv("HODIFF_PINNACLE_DATA", str(tmp_path / "nowhere"))
    with pytest.raises(SystemExit, match=r"poisson_a_coef\.dat is missing.*HODIFF_PINNACLE_DATA"):
        main(["poisson2d_ms", "--preset", "fast", "--output", str(tmp_path / "other")])


@pytest.mark.slow
@pytest.mark.usefixtures("pinnacle_data")
def test_poisson2d_ms_default_preset_meets_its_target(tmp_path):
    output = tmp_path / "poisson2d_ms"
    assert main(["poisson2d_ms", "--output", str(output), "--no-progress"]) == 0
    metrics = json.loads((output / "metrics.json").read_text())
    assert metrics["target_met"] is True
    assert abs(metrics["quadrature_gap"]) < 1e-2, "the network has not learnt layers between the quadrature points"


def _coarse_channel():  # the default's 128 cells per unit take minutes; 16 are enough to see training progress
    return ns2d_cg.reference(cells=16, cache=None)


def test_ns2d_cg_hard_conditions_hold_for_any_network():
    problem, model = ns2d_cg.build(ns2d_cg.EXAMPLE.presets["fast"])
    s = np.linspace(0.0, 1.0, 11)
    inlet = np.stack([np.zeros_like(s), s], axis=1)
    walls = np.concatenate(
        [
            np.stack([4 * s, 0 * s], 1),  # bottom
            np.stack([2 * s, 0 * s + 1], 1),  # top of the narrow part
            np.stack([0 * s + 2, 1 + s], 1),  # the step
            np.stack([2 + 2 * s, 0 * s + 2], 1),  # top of the wide part
        ]
    )
    dtype = model.weights[0].dtype
    values = problem.solution(model)(tf.constant(np.concatenate([inlet, walls]), dtype)).numpy()
    np.testing.assert_allclose(values[:11, 0], 4 * s * (1 - s), atol=1e-6)
    np.testing.assert_allclose(values[:, 1], 0.0, atol=1e-6)
    np.testing.assert_allclose(values[11:, 0], 0.0, atol=1e-6)
    # ... and not inside, nor at the outlet, where u and v are free
    inside = np.array([[1.0, 0.5], [3.0, 1.5], [4.0, 0.7]])
    assert np.all(np.abs(problem.solution(model)(tf.constant(inside, dtype)).numpy()[:, :2]) > 1e-4)


def test_ns2d_cg_equations_agree_with_the_reference():
    """The example's residual on the finite-volume flow (differences on its 32-cell grid) is small; nu off by
    a factor 2 is not."""
    from pinn_examples import cavity_reference

    cells, h = 32, 1.0 / 32
    x, y = 2.5 + (np.arange(32) + 0.5) * h, 0.2 + (np.arange(51) + 0.5) * h  # behind the step, off the walls
    flow = cavity_reference.interpolate(cavity_reference.solve_channel(cells), x, y, h=h)
    d = {name: flow[name] for name in ("u", "v")}
    grad = lambda f, axis: np.gradient(f, h, axis=axis)
    for name in ("u", "v", "p"):
        d[f"{name}_x"], d[f"{name}_y"] = grad(flow[name], 0), grad(flow[name], 1)
    for name in ("u", "v"):
        d[f"{name}_xx"], d[f"{name}_yy"] = grad(d[f"{name}_x"], 0), grad(d[f"{name}_y"], 1)
    inner = (slice(2, -2), slice(2, -2))
    scale = np.abs(d["u"] * d["u_x"]).max()
    residuals = ns2d_cg.residual(d, None, None)
    for name, value in residuals.items():
        assert np.abs(value[inner]).max() < 0.05 * scale, name
    viscous = ns2d_cg.NU * (d["u_xx"] + d["u_yy"])
    assert np.abs((residuals["momentum_x"] + viscous)[inner]).max() > 0.2 * scale  # nu -> 2 nu shows


def test_ns2d_cg_fast_preset_trains_evaluates_and_refuses_bad_points(tmp_path, monkeypatch):
    monkeypatch.setattr(ns2d_cg.EXAMPLE, "reference", _coarse_channel)
    output = tmp_path / "ns2d_cg"
    assert main(["ns2d_cg", "--preset", "fast", "--output", str(output), "--no-progress"]) == 0
    metrics = json.loads((output / "metrics.json").read_text())
    assert metrics["error_fields"] == ["u", "v", "p"]
    assert metrics["relative_l2_error"] < metrics["initial_relative_l2_error"]
    assert all(np.isfinite(metrics[f"relative_l2_error_{field}"]) for field in "uvp")
    assert 0 < metrics["relative_l2_error_uv"] and metrics["target_metric"] == "target_ratio"
    expected = max(metrics["relative_l2_error"] / 2e-2, metrics["relative_l2_error_uv"] / 1e-2)
    assert metrics["target_ratio"] == pytest.approx(expected)
    history = (output / "history.csv").read_text().splitlines()[0].split(",")
    assert {"momentum_x", "momentum_y", "continuity", "outlet_normal", "outlet_shear"} <= set(history)
    with np.load(output / "prediction.npz") as prediction:  # NaN in the solid block [0, 2] x [1, 2]
        assert np.isnan(prediction["prediction_u"][50, 75]) and np.isfinite(prediction["prediction_u"][150, 75])
    points = np.array([[0.5, 0.5], [3.0, 1.5], [2.0, 1.0], [4.0, 0.2], [1.0, 1.5]])  # the last is in the block
    np.save(tmp_path / "points.npy", points)
    with pytest.raises(SystemExit, match="outside"):
        main(["ns2d_cg", "--evaluate", str(tmp_path / "points.npy"), "--output", str(output)])
    arguments = ["ns2d_cg", "--evaluate", str(tmp_path / "points.npy"), "--output", str(output), "--outside", "nan"]
    assert main(arguments) == 0
    with np.load(output / "evaluation.npz") as evaluation:
        assert set(evaluation.files) == {"points", "checkpoint", "step", "u", "v", "p"}
        assert np.isnan(evaluation["p"][4]) and np.all(np.isfinite(evaluation["p"][:4]))
        np.testing.assert_allclose(evaluation["v"][2], 0.0, atol=1e-6)  # the corner is a wall
    np.save(tmp_path / "wrong.npy", points[:, :1])
    with pytest.raises(SystemExit, match=r"give 2 columns in that order"):
        main(["ns2d_cg", "--evaluate", str(tmp_path / "wrong.npy"), "--output", str(output)])


@pytest.mark.slow
def test_ns2d_cg_default_preset_meets_both_targets(tmp_path):
    output = tmp_path / "ns2d_cg"
    assert main(["ns2d_cg", "--output", str(output), "--no-progress"]) == 0
    metrics = json.loads((output / "metrics.json").read_text())
    assert metrics["relative_l2_error"] <= 2e-2 and metrics["relative_l2_error_uv"] <= 1e-2


def test_poisson_inverse_forward_solver_converges_at_order_two():
    errors = []
    for n in (13, 25, 49):
        axis = np.linspace(0.0, 1.0, n)
        x, y = np.meshgrid(axis, axis, indexing="ij")
        u = poisson_inverse.forward_solve(lambda p, q: poisson_inverse.exact(p, q, ("a",))["a"], np.zeros((n, n)), n)
        errors.append(np.max(np.abs(u - poisson_inverse.exact(x, y, ("u",))["u"])))
    orders = np.log2(np.array(errors[:-1]) / np.array(errors[1:]))
    np.testing.assert_allclose(orders, 2.0, atol=0.1)
    assert errors[-1] < 5e-4


def test_poisson_inverse_noise_floor_is_least_squares_and_above_the_target_with_free_sides():
    axis = np.linspace(0.0, 1.0, 50)
    rms_u = np.sqrt(np.mean(poisson_inverse.exact(axis[:, None], axis[None, :], ("u",))["u"] ** 2))
    one = poisson_inverse.noise_floor(0)  # a = A + c * bubble, u's sides known: one parameter
    assert one["parameters"] == 1
    np.testing.assert_allclose(one["u"], 0.1 * np.sqrt(1 / 2500) / rms_u, rtol=1e-6)  # sigma^2 p / N
    assert 2e-3 < one["a_bias"] < 3e-3 and one["a_bias"] < one["a"] < 1e-2
    quadratic = poisson_inverse.noise_floor(2)
    assert quadratic["parameters"] == 6 and quadratic["a"] > 3e-2  # a is seen weakly through u
    free_sides = poisson_inverse.noise_floor(0, 0)  # plus u's four corners and one mode per side
    assert free_sides["parameters"] == 9 and free_sides["u"] > 1e-2


def test_poisson_inverse_target_is_the_floor_of_its_model_class():
    floor = poisson_inverse.noise_floor(*poisson_inverse.FLOOR_MODEL)
    assert floor["parameters"] == 11  # a's constant and two tilts; u's four corners and one mode per side
    for field, value in poisson_inverse.FLOOR.items():
        np.testing.assert_allclose(value, floor[field], rtol=1e-3)
    assert poisson_inverse.EXAMPLE.target == {"default": 1.1}  # within 10% of the floor
    assert poisson_inverse.EXAMPLE.target_metric == "floor_ratio"


def test_poisson_inverse_least_squares_fit_of_the_model_class():
    """Noise-free samples: the fit is the model's own bias (and the solver's h^2); this problem's draw: twice the
    floor on a."""
    axis = np.linspace(0.0, 1.0, 50)
    clean = poisson_inverse.exact(*np.meshgrid(axis, axis, indexing="ij"), ("u",))["u"].ravel()
    exact_fit = poisson_inverse.least_squares_fit(*poisson_inverse.FLOOR_MODEL, samples=clean)
    assert exact_fit["data"] < 1e-6 and exact_fit["a"] < 4e-3 and exact_fit["u"] < 1e-3
    drawn = poisson_inverse.least_squares_fit(*poisson_inverse.FLOOR_MODEL)
    assert 0.0095 < drawn["data"] < 0.0099  # the noise's variance, less the 11 fitted directions
    np.testing.assert_allclose([drawn["u"], drawn["a"]], [1.47e-2, 4.23e-2], rtol=1e-2)
