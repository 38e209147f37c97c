"""Need names, the general condition and its thin uses, named residual terms: residuals of closed-form
solutions vanish (and wrong values do not) in eager, graph and XLA; bad input gets clear errors."""

import numpy as np
import pytest
import tensorflow as tf

from hodiff import pinn
from hodiff.checks import assert_close
from hodiff.pinn.names import parse_need

TWO_PI = 2 * np.pi
DOMAIN = pinn.Interval("x", 0.0, TWO_PI) * pinn.TimeDomain("t", 0.0, 1.0)
SQUARE = pinn.Rectangle(("x", "y"), (0.0, 0.0), (1.0, 1.0))


def wave(x):
    """u = sin(x) cos(t): u = 0 at x = 0, 2 pi; u_t(x, 0) = 0; periodic in x."""
    return (tf.sin(x[:, 0]) * tf.cos(x[:, 1]))[:, None]


def problem_with(condition, domain=DOMAIN, fields=("u",)):
    first = fields[0]
    return pinn.Problem(
        domain, needs=(first,), residual=lambda d, x, p: d[first], conditions=[condition], fields=fields
    )


def condition_residual(run, condition, solution, domain=DOMAIN, fields=("u",), seed=0):
    """The condition's residual at its sampled points, computed in the current execution mode."""
    problem = problem_with(condition, domain, fields)
    arrays = problem.sample_points(4, seed=seed)[condition.name]
    keys = sorted(arrays)

    def compute(*tensors):
        return problem.condition_residual(condition, solution, dict(zip(keys, tensors)))

    return run(compute, *[tf.constant(arrays[k]) for k in keys]).numpy(), arrays


# ---------------------------------------------------------------- names


def test_need_names_in_every_form():
    fields, coords = ("u", "u_vel", "p"), ("x1", "x2", "t")
    assert parse_need("u", fields, coords) == ("u", ())
    assert parse_need("u_vel", fields, coords) == ("u_vel", ()), "a whole field name wins"
    assert parse_need("u_t", fields, coords) == ("u", ("t",))
    assert parse_need("u_vel_x1_x1", fields, coords) == ("u_vel", ("x1", "x1"))
    assert parse_need("u_vel_x1x2", fields, coords) == ("u_vel", ("x1", "x2"))
    assert parse_need("p_x2t", fields, coords) == ("p", ("x2", "t"))
    assert parse_need(("u_vel", "x1", "x1"), fields, coords) == ("u_vel", ("x1", "x1"))
    assert parse_need(["p"], fields, coords) == ("p", ())
    assert parse_need("u_xt", ("u",), ("x", "t")) == ("u", ("x", "t"))


@pytest.mark.parametrize(
    "entry, fields, coords, message",
    [
        ("v_x", ("u",), ("x",), r"'v_x' starts with 'v', which is not one of fields \('u',\).*coordinates are"),
        ("u_yy", ("u",), ("x", "t"), r"'u_yy' differentiates by 'y'.*\('x', 't'\); the fields are \('u',\)"),
        ("u_vel_x3", ("u_vel",), ("x1", "x2"), r"differentiates by 'x3'.*\('x1', 'x2'\)"),
        ("u_xx", ("u",), ("x", "xx"), r"'u_xx' can be read as \('u', 'xx'\) or \('u', 'x', 'x'\).*tuples"),
        (("w", "x"), ("u",), ("x",), r"\('w', 'x'\) starts with 'w'"),
        (("u", "z"), ("u",), ("x",), r"differentiates by 'z'"),
        ((), ("u",), ("x",), r"must be a string such as 'u_xx' or a tuple"),
        (3, ("u",), ("x",), r"needs entry 3 must be a string"),
    ],
)
def test_need_name_errors_name_the_entry_fields_and_coords(entry, fields, coords, message):
    with pytest.raises(ValueError, match=message):
        parse_need(entry, fields, coords)


def test_named_partials_of_multi_letter_fields_and_coords(run):
    domain = pinn.Rectangle(("x1", "x2"), (0.0, 0.0), (1.0, 1.0))
    needs = ("u_vel_x1x1", ("u_vel", "x2"), "p", "p_x1_x2")
    problem = pinn.Problem(
        domain,
        fields=("u_vel", "p"),
        needs=needs,
        residual=lambda d, x, p: d["u_vel_x1x1"] + d[("u_vel", "x2")] + d["p_x1_x2"] - d["p"],
    )
    solution = lambda x: tf.stack([tf.sin(x[:, 0]) * x[:, 1], tf.exp(x[:, 0] * x[:, 1])], axis=1)
    x = tf.constant(domain.sample_interior(8, seed=0))
    assert set(problem.named_partials(solution, x, needs)) == set(needs), "keys are the entries as written"
    # (tf.function cannot return a dict with both str and tuple keys, so a list comes back)
    d = dict(zip(needs, run(lambda x: [problem.named_partials(solution, x, needs)[k] for k in needs], x)))
    x1, x2 = x.numpy().T
    assert_close(d["u_vel_x1x1"], -np.sin(x1) * x2, rtol=1e-10)
    assert_close(d[("u_vel", "x2")], np.sin(x1), rtol=1e-10)
    assert_close(d["p_x1_x2"], (1 + x1 * x2) * np.exp(x1 * x2), rtol=1e-10)
    residual = run(lambda x: problem.pde_residuals(solution, x, {})[0], x)
    assert_close(residual, -np.sin(x1) * x2 + np.sin(x1) + x1 * x2 * np.exp(x1 * x2), rtol=1e-10)


# ---------------------------------------------------------------- the general condition


def test_wave_starts_at_rest_u_t_on_the_initial_line(run):
    at_rest = pinn.Condition(lambda d, x, n: d["u_t"], needs=("u_t",), on="initial", count=16, name="at_rest")
    residual, arrays = condition_residual(run, at_rest, wave)
    assert np.all(arrays["points"][:, 1] == 0.0) and residual.shape == (16,)
    assert_close(residual, np.zeros(16), rtol=0, atol=1e-12)
    moving = lambda x: (tf.sin(x[:, 0]) * tf.cos(x[:, 1] - 0.5))[:, None]  # u_t(x, 0) = sin(x) sin(0.5)
    residual, arrays = condition_residual(run, at_rest, moving)
    assert_close(residual, np.sin(arrays["points"][:, 0]) * np.sin(0.5), rtol=1e-10)


def test_outflow_pressure_on_the_right_side(run):
    flow = ("u", "v", "p")
    solution = lambda x: tf.stack([x[:, 1], -x[:, 0], (1 - x[:, 0]) * x[:, 1]], axis=1)  # p = 0 at x = 1
    right = lambda x: np.isclose(x["x"], 1.0)
    outflow = pinn.Condition(lambda d, x, n: d["p"], needs=("p",), where=right, count=8, name="outflow")
    residual, arrays = condition_residual(run, outflow, solution, SQUARE, flow)
    assert np.all(arrays["points"][:, 0] == 1.0) and np.all(arrays["normals"][:, 0] == 1.0)
    assert_close(residual, np.zeros(8), rtol=0, atol=1e-15)
    wrong = lambda x: tf.stack([x[:, 1], -x[:, 0], x[:, 1]], axis=1)
    residual, arrays = condition_residual(run, outflow, wrong, SQUARE, flow)
    assert_close(residual, arrays["points"][:, 1], rtol=1e-12)
    if "right" in getattr(SQUARE, "boundary_names", ()):  # the geometry's named pieces
        named = pinn.Condition(lambda d, x, n: d["p"], needs=("p",), where="right", count=8, name="outflow")
        residual, arrays = condition_residual(run, named, solution, SQUARE, flow)
        assert np.all(arrays["points"][:, 0] == 1.0)
        assert_close(residual, np.zeros(8), rtol=0, atol=1e-15)


def test_a_derivative_at_one_point(run):
    point = np.array([[1.0, 0.25]])
    slope = pinn.Condition(
        lambda d, x, n: d["u_x"] - tf.cos(x["x"]) * tf.cos(x["t"]), needs=("u_x",), on=point, name="slope"
    )
    residual, _ = condition_residual(run, slope, wave)
    assert residual.shape == (1,)
    assert_close(residual, [0.0], rtol=0, atol=1e-14)
    residual, _ = condition_residual(run, slope, lambda x: 2 * wave(x))
    assert_close(residual, [np.cos(1.0) * np.cos(0.25)], rtol=1e-12)
    same = pinn.Condition(lambda d, x, n: d["u_x"], needs=("u_x",), points=point, name="slope")
    np.testing.assert_array_equal(same.sample(DOMAIN, "sobol", 0)["points"], point)


def test_robin_on_both_ends(run):
    line = pinn.Interval("x", 0.0, 1.0)
    exact = lambda x: tf.exp(x[:, :1])
    # alpha u + beta du/dn with u = exp(x): n = -1 at x = 0, +1 at x = 1
    value = lambda x: tf.exp(x["x"]) * (2.0 + 3.0 * (2.0 * x["x"] - 1.0))
    robin = pinn.Robin(2.0, 3.0, value, count=8)
    residual, arrays = condition_residual(run, robin, exact, line)
    assert set(np.unique(arrays["points"])) == {0.0, 1.0}
    assert_close(residual, np.zeros(8), rtol=0, atol=1e-12)
    residual, arrays = condition_residual(run, pinn.Robin(2.0, lambda x: 3.0 + 0 * x["x"], 0.0, count=8), exact, line)
    x = arrays["points"][:, 0]
    assert_close(residual, np.exp(x) * (2.0 + 3.0 * (2.0 * x - 1.0)), rtol=1e-12)


def test_neumann_on_a_circle_with_normals(run):
    """du/dn = 2 r for u = x^2 + y^2 on a circle of radius r: given points and normals, and a Disk."""
    r, angle = 0.3, np.linspace(0, TWO_PI, 12, endpoint=False)
    normals = np.stack([np.cos(angle), np.sin(angle)], axis=1)
    points = 0.5 + r * normals
    squared = lambda x: tf.reduce_sum(tf.square(x - 0.5), axis=1, keepdims=True)
    flux = pinn.Condition(
        lambda d, x, n: d["u_x"] * n["x"] + d["u_y"] * n["y"] - 2 * r,
        needs=("u_x", "u_y"),
        on=points,
        normals=normals,
        name="flux",
    )
    residual, _ = condition_residual(run, flux, squared, SQUARE)
    assert_close(residual, np.zeros(12), rtol=0, atol=1e-12)
    residual, _ = condition_residual(run, flux, lambda x: 2 * squared(x), SQUARE)
    assert_close(residual, np.full(12, 2 * r), rtol=1e-12)
    if hasattr(pinn, "Disk"):
        disk = pinn.Disk((0.5, 0.5), r, names=("x", "y"))
        residual, arrays = condition_residual(run, pinn.Neumann(2 * r, count=16), squared, disk)
        assert_close(np.hypot(*(arrays["points"] - 0.5).T), np.full(16, r), rtol=1e-9)
        assert_close(residual, np.zeros(16), rtol=0, atol=1e-9)


# ---------------------------------------------------------------- the thin uses


def test_each_condition_vanishes_on_the_exact_solution_and_not_on_a_wrong_one(run):
    sign = lambda x: tf.sign(x["x"] - np.pi)
    cases = [
        (pinn.Dirichlet(0.0, count=8), pinn.Dirichlet(0.5, count=8), 0.5),
        (pinn.Neumann(lambda x: sign(x) * tf.cos(x["t"]), count=8), pinn.Neumann(0.0, count=8), None),
        (pinn.Initial(lambda x: tf.sin(x["x"]), count=8), pinn.Initial(0.0, count=8), None),
        (pinn.Periodic("x", count=8, derivatives=2), None, None),
    ]
    points = DOMAIN.sample_interior(8, seed=5)
    values = np.sin(points[:, 0]) * np.cos(points[:, 1])
    cases.append((pinn.Data(points, values), pinn.Data(points, values + 0.25), 0.25))
    for right, wrong, offset in cases:
        residual, _ = condition_residual(run, right, wave)
        np.testing.assert_allclose(residual, 0.0, rtol=0, atol=1e-12, err_msg=type(right).__name__)
        if wrong is not None:
            residual, _ = condition_residual(run, wrong, wave)
            assert np.max(np.abs(residual)) > 0.1, type(wrong).__name__
            if offset is not None:
                assert_close(residual, np.full_like(residual, -offset), rtol=0, atol=1e-12)
    shifted = lambda x: (tf.cos(x[:, 0] / 2) * tf.cos(x[:, 1]))[:, None]  # not periodic on [0, 2 pi]
    residual, _ = condition_residual(run, pinn.Periodic("x", count=8, derivatives=0), shifted)
    assert np.max(np.abs(residual)) > 0.1


def test_dirichlet_and_initial_on_part_of_the_boundary():
    left = pinn.Dirichlet(0.0, count=16, where=lambda x: x["x"] < 1.0, name="left")
    points = left.sample(DOMAIN, "sobol", 3)["points"]
    assert points.shape == (16, 2) and np.all(points[:, 0] == 0.0)
    np.testing.assert_array_equal(points, left.sample(DOMAIN, "sobol", 3)["points"]), "deterministic per seed"
    assert not np.array_equal(points, left.sample(DOMAIN, "sobol", 4)["points"])
    half = pinn.Initial(0.0, count=16, where=lambda x: x["x"] > np.pi)
    assert np.all(half.sample(DOMAIN, "sobol", 0)["points"][:, 0] > np.pi)
    nowhere = pinn.Initial(0.0, count=4, where=lambda x: x["x"] > 10.0, name="nowhere")
    with pytest.raises(ValueError, match=r"Initial 'nowhere': where=.*selects no points on 'initial'"):
        nowhere.sample(DOMAIN, "sobol", 0)
    # without where, the points are the geometry's own (resume relies on the same points per seed)
    np.testing.assert_array_equal(
        pinn.Dirichlet(0.0, count=16).sample(DOMAIN, "sobol", 3)["points"], DOMAIN.sample_boundary(16, seed=3)[0]
    )


# ---------------------------------------------------------------- residual names


def test_dict_residuals_become_named_loss_terms():
    flow = pinn.Problem(
        SQUARE,
        fields=("u", "v", "p"),
        needs=("u_x", "v_y", "p_x", "p_y"),
        residual=lambda d, x, p: {"momentum_x": d["p_x"], "momentum_y": d["p_y"], "continuity": d["u_x"] + d["v_y"]},
        conditions=[pinn.Condition(lambda d, x, n: d["p"], needs=("p",), on=np.zeros((1, 2)), name="pressure")],
    )
    assert flow.residual_names == ("momentum_x", "momentum_y", "continuity")
    assert flow.term_names == ("momentum_x", "momentum_y", "continuity", "pressure")
    solution = lambda x: tf.stack([x[:, 0], -x[:, 1], x[:, 0] + 2 * x[:, 1]], axis=1)
    terms = flow.loss_terms(solution, flow.sample_points(8, seed=0), {})
    assert_close([terms[k] for k in flow.term_names], [1.0, 4.0, 0.0, 0.0], rtol=1e-12)
    single = pinn.Problem(SQUARE, needs=("u",), residual=lambda d, x, p: d["u"])
    assert single.residual_names == ("residual",)
    named = pinn.Problem(SQUARE, needs=("u",), residual=lambda d, x, p: (d["u"], 2 * d["u"]), residual_names=("a", "b"))
    assert named.term_names == ("a", "b")
    unnamed = pinn.Problem(SQUARE, needs=("u",), residual=lambda d, x, p: (d["u"], 2 * d["u"]))
    with pytest.raises(ValueError, match=r"returned 2 residuals but residual_names has 1"):
        unnamed.pde_residuals(lambda x: x[:, :1], tf.zeros((3, 2), tf.float64), {})


def test_parametric_problem_reads_the_parameter_column():
    if not hasattr(pinn, "Parameter"):
        pytest.skip("geometry has no Parameter yet")
    domain = pinn.Interval("x", 0.0, 1.0) * pinn.Parameter("k", 1.0, 3.0)
    assert "k" not in domain.space
    problem = pinn.Problem(
        domain,
        needs=("u_xx",),
        residual=lambda d, x, p: d["u_xx"] + x["k"] ** 2 * tf.sin(x["k"] * x["x"]),
        conditions=[pinn.Dirichlet(lambda x: tf.sin(x["k"] * x["x"]), count=16)],
    )
    exact = lambda x: tf.sin(x[:, 1:] * x[:, :1])
    points = problem.sample_points(16, seed=0)
    assert set(np.unique(points["boundary"]["points"][:, 0])) <= {0.0, 1.0}, "no boundary along k"
    terms = problem.loss_terms(exact, points, {})
    assert_close([terms["residual"], terms["boundary"]], [0.0, 0.0], rtol=0, atol=1e-20)


# ---------------------------------------------------------------- errors


def test_bad_conditions_get_clear_errors():
    residual = lambda d, x, p: d["u"]
    unknown = pinn.Condition(lambda d, x, n: d["w_x"], needs=("w_x",), name="wall")
    with pytest.raises(ValueError, match=r"condition 'wall': needs entry 'w_x' starts with 'w'.*fields \('u',\)"):
        pinn.Problem(DOMAIN, needs=("u",), residual=residual, conditions=[unknown])
    with pytest.raises(ValueError, match=r"condition 'wall' is on field 'v', which is not one of fields"):
        pinn.Problem(DOMAIN, needs=("u",), residual=residual, conditions=[pinn.Dirichlet(field="v", name="wall")])
    nowhere = pinn.Dirichlet(0.0, count=4, where=lambda x: x["x"] > 10.0, name="nowhere")
    with pytest.raises(ValueError, match=r"Dirichlet 'nowhere': .*where=.*has no points"):
        pinn.Problem(DOMAIN, needs=("u",), residual=residual, conditions=[nowhere]).sample_points(4)
    outside = pinn.Data(np.array([[1.0, 0.5], [9.0, 0.5]]), [0.0, 0.0], name="probe")
    with pytest.raises(ValueError, match=r"Data 'probe': 1 points lie outside the domain.*row 1"):
        pinn.Problem(DOMAIN, needs=("u",), residual=residual, conditions=[outside])
    at = pinn.Condition(residual, needs=("u",), on=np.zeros((2, 3)), name="at")
    with pytest.raises(ValueError, match=r"'at': points have 3 columns but the domain has coordinates"):
        pinn.Problem(DOMAIN, needs=("u",), residual=residual, conditions=[at])
    start = pinn.Condition(residual, needs=("u",), on="initial", name="start")
    with pytest.raises(ValueError, match=r"'start': on='initial' needs a time coordinate"):
        pinn.Problem(SQUARE, needs=("u",), residual=residual, conditions=[start])
    with pytest.raises(ValueError, match=r"on='edge' is not one of"):
        pinn.Condition(residual, needs=("u",), on="edge")
    with pytest.raises(ValueError, match=r"takes where as a predicate"):
        pinn.Condition(residual, needs=("u",), on="initial", where="left")
    with pytest.raises(ValueError, match=r"normals have shape \(1, 2\) but points \(2, 2\)"):
        pinn.Condition(residual, needs=("u",), on=np.zeros((2, 2)), normals=np.zeros((1, 2)))
    with pytest.raises(TypeError, match=r"needs must be a tuple of entries, e.g. \('u_x',\)"):
        pinn.Condition(residual, needs="u_x")
    shape = pinn.Condition(lambda d, x, n: tf.stack([d["u"], d["u"]], 1), needs=("u",), name="shape")
    problem = pinn.Problem(DOMAIN, needs=("u",), residual=residual, conditions=[shape])
    with pytest.raises(ValueError, match=r"Condition 'shape': residual must return one value per point"):
        problem.loss_terms(wave, problem.sample_points(4), {})


@pytest.mark.parametrize("count", [0, -5, 2.5, True, None])
@pytest.mark.parametrize(
    "build",
    [
        lambda count: pinn.Dirichlet(0.0, count=count),
        lambda count: pinn.Initial(0.0, count=count),
        lambda count: pinn.Neumann(0.0, count=count),
        lambda count: pinn.Robin(1.0, 1.0, count=count),
        lambda count: pinn.Periodic("x", count=count),
        lambda count: pinn.Condition(lambda d, x, n: d["u"], needs=("u",), on="interior", count=count),
    ],
    ids=["Dirichlet", "Initial", "Neumann", "Robin", "Periodic", "Condition"],
)
def test_a_condition_count_that_is_not_a_positive_int_is_refused_when_built(build, count):
    """Issue 46 item 4: Dirichlet(count=0) and count=-5 were accepted and failed only when the points were drawn."""
    with pytest.raises(ValueError, match=r"'[a-z_]+': count must be an int >= 1, got .*number of points drawn"):
        build(count)


def test_condition_counts_and_orders_that_are_accepted():
    assert pinn.Dirichlet(0.0, count=np.int64(3)).count == 3
    assert pinn.Condition(lambda d, x, n: d["u"], needs=("u",), on=np.zeros((2, 2)), count=0).count == 2  # points
    assert pinn.Periodic("x", count=4, derivatives=0).needs == (("u",),)
    with pytest.raises(ValueError, match=r"Periodic 'periodic': derivatives must be an int >= 0, got -1"):
        pinn.Periodic("x", derivatives=-1)


def test_an_unknown_where_piece_is_refused_when_the_problem_is_built():
    """Issue 46 item 4: an unknown piece name was found only when the points were drawn (training's start)."""
    residual = lambda d, x, p: d["u"]
    problem = lambda condition, domain=SQUARE: pinn.Problem(
        domain, needs=("u",), residual=residual, conditions=[condition]
    )
    with pytest.raises(ValueError, match=r"Dirichlet 'boundary': .*where='rigth' is not a boundary piece.*'right'"):
        problem(pinn.Dirichlet(0.0, count=4, where="rigth"))
    with pytest.raises(ValueError, match=r"Neumann 'neumann': .*where='top' .*not a boundary piece"):
        problem(pinn.Neumann(0.0, count=4, where=["left", "top"]), DOMAIN)  # the interval's pieces are left/right
    with pytest.raises(ValueError, match=r"where=\[\] must be a piece name or a non-empty list"):
        problem(pinn.Dirichlet(0.0, count=4, where=[]))
    plate = pinn.Rectangle(("x", "y"), (0, 0), (2, 2), name="plate") - pinn.Rectangle(("x", "y"), (0.5, 0.5), (1, 1))
    with pytest.raises(ValueError, match=r"Dirichlet 'boundary': .*where='left' is ambiguous.*'plate.left'"):
        problem(pinn.Dirichlet(0.0, count=4, where="left"), plate)
    other = pinn.Rectangle(("a", "b"), (0, 0), (1, 1))
    with pytest.raises(ValueError, match=r"Dirichlet 'boundary': where=.* has coordinates \('a', 'b'\).*\('x', 'y'\)"):
        problem(pinn.Dirichlet(0.0, count=4, where=other))
    for where in ("right", ["left", "right"], "plate.left", lambda x: x["x"] > 0.5):  # accepted, and drawn
        built = problem(pinn.Dirichlet(0.0, count=4, where=where), plate if where == "plate.left" else SQUARE)
        assert built.sample_points(4)["boundary"]["points"].shape == (4, 2)


def test_a_partial_missing_from_needs_is_found_when_the_problem_is_built():
    """Issue 46 item 4: a residual reading an entry not in needs failed only at the first training step."""
    with pytest.raises(KeyError, match=r"Problem: the residual reads d\['u_t'\].*needs=\('u_xx', 'u_t'\)"):
        pinn.Problem(DOMAIN, needs=("u_xx",), residual=lambda d, x, p: d["u_t"] - d["u_xx"])
    system = lambda d, x, p: {"a": d["u_x"], "b": d["v_x"]}
    with pytest.raises(KeyError, match=r"reads d\['v_x'\]"):
        pinn.Problem(DOMAIN, needs=("u_x",), residual=system, fields=("u", "v"), residual_names=("a", "b"))
    wall = pinn.Condition(lambda d, x, n: d["u_x"] * n["x"], needs=("u",), name="wall")
    with pytest.raises(KeyError, match=r"Condition 'wall': the residual reads d\['u_x'\]"):
        pinn.Problem(DOMAIN, needs=("u",), residual=lambda d, x, p: d["u"], conditions=[wall])
    # a residual that fails on dummy values for another reason is left to its first real evaluation
    odd = lambda d, x, p: d["u"] + x.points[:, 5]
    assert pinn.Problem(DOMAIN, needs=("u",), residual=odd).term_names == ("residual",)


def test_periodic_on_a_domain_that_is_not_a_box_in_its_coordinate_is_refused():
    # on a disk, the pairs at x = -1 and x = 1 were corners of the bounding box, outside the domain
    disk = pinn.Disk((0, 0), 1.0)
    problem = pinn.Problem(disk, needs=("u",), residual=lambda d, x, p: d["u"], conditions=[pinn.Periodic("x", 8)])
    with pytest.raises(ValueError, match=r"Periodic 'periodic': .* outside the domain .*a box in x"):
        problem.sample_points(4)
    pairs = pinn.Periodic("x", 8).sample(pinn.Rectangle(("x", "y"), (0, 0), (1, 2)), "sobol", 0)
    assert pairs["points"].shape == (8, 2) and np.all(pairs["partners"][:, 0] == 1.0)
