"""pinn.SeriesRestart: each basis interpolates its nodes and reproduces its span (derivatives included), converges
spectrally on smooth functions, holds boundary values, agrees in eager, graph and XLA, and refuses bad input."""

import numpy as np
import pytest
import tensorflow as tf

from hodiff import pinn
from hodiff.operators import partials

PLANE = pinn.Rectangle(("x", "y"), (0.0, 0.0), (2.0, 1.0)) * pinn.TimeDomain("t", 0.0, 1.0)
LINE = pinn.Interval("x", 0.0, 2.0) * pinn.TimeDomain("t", 0.0, 1.0)


def line_points(x, t=0.5):
    return tf.constant(np.column_stack([x, np.full(len(x), t)]), tf.float64)


def columns(points):
    return [points[:, i : i + 1] for i in range(points.shape[1])]


@pytest.mark.parametrize(
    "basis, function",
    [
        (pinn.Fourier(0.0, 2.0, 9), lambda x: 0.3 + tf.cos(np.pi * x) - 0.5 * tf.sin(4.0 * np.pi * x)),
        (pinn.Sine(0.0, 2.0, 7), lambda x: tf.sin(np.pi * x / 2.0) + 0.2 * tf.sin(7.0 * np.pi * x / 2.0)),
        (pinn.Cosine(0.0, 2.0, 6), lambda x: 1.0 - 0.4 * tf.cos(5.0 * np.pi * x / 2.0)),
        (pinn.Chebyshev(0.0, 2.0, 6), lambda x: (x - 0.5) ** 5 - 3.0 * x**2),
    ],
    ids=["fourier", "sine", "cosine", "chebyshev"],
)
def test_a_function_in_the_span_is_reproduced_with_its_derivatives(basis, function):
    restart = pinn.SeriesRestart(LINE, {"x": basis})
    previous = lambda points: function(columns(points)[0]) * (1.0 + columns(points)[1])  # noqa: E731
    series = restart(previous, 0.5)
    points = line_points(np.random.default_rng(0).uniform(0.0, 2.0, 30))
    exact = partials(lambda p: previous(p)[:, 0], points, ("x", "t"), ("", "x", "xx", "xxxx"))
    fitted = partials(lambda p: series(p)[:, 0], points, ("x", "t"), ("", "x", "xx", "xxxx", "t"))
    for key in exact:
        scale = np.abs(exact[key].numpy()).max()
        np.testing.assert_allclose(fitted[key].numpy(), exact[key].numpy(), atol=1e-11 * scale)
    assert np.abs(fitted["t"].numpy()).max() == 0.0  # the series is the window before at its end: no time


def test_the_bases_interpolate_at_their_nodes_and_are_orthogonal_there():
    rng = np.random.default_rng(1)
    for basis in (
        pinn.Fourier(1.0, 3.0, 8),
        pinn.Sine(-1.0, 1.0, 5),
        pinn.Cosine(0.0, 1.0, 5),
        pinn.Chebyshev(0, 1, 7),
    ):
        values = rng.normal(size=len(basis.nodes))
        restart = pinn.SeriesRestart(LINE, {"x": basis})
        nodes = line_points(basis.nodes)
        series = restart(lambda points, v=values: tf.constant(v[:, None]), 0.0)
        expected = values.copy()
        if isinstance(basis, pinn.Fourier):  # the Nyquist sine is zero at the nodes: least squares drops it
            expected -= np.mean(values * np.cos(np.pi * np.arange(8))) * np.cos(np.pi * np.arange(8))
        np.testing.assert_allclose(series(nodes).numpy()[:, 0], expected, atol=1e-12)
        matrix, weights = basis.node_matrix(), basis.node_weights()
        gram = matrix.T @ (weights[:, None] * matrix)
        np.testing.assert_allclose(gram - np.diag(np.diag(gram)), 0.0, atol=1e-12)
        evaluated = basis.functions(tf.constant(basis.nodes[:, None], tf.float64)).numpy()
        np.testing.assert_allclose(evaluated, matrix, atol=1e-13)


def test_chebyshev_converges_spectrally_on_a_smooth_function_with_a_wall_layer():
    layer = lambda x: 1.0 - tf.exp(-x / 0.05) + 0.3 * tf.sin(3.0 * x)  # noqa: E731 (a layer 0.05 thick at x = 0)
    points = line_points(np.linspace(0.0, 2.0, 401))
    exact = layer(columns(points)[0]).numpy()[:, 0]
    errors = []
    for samples in (16, 32, 64):
        series = pinn.SeriesRestart(LINE, {"x": pinn.Chebyshev(0.0, 2.0, samples)})(lambda p: layer(columns(p)[0]), 0.0)
        errors.append(np.abs(series(points).numpy()[:, 0] - exact).max())
    assert errors[0] > 1e-4 and errors[1] < 1e-6 * errors[0] and errors[2] < 1e-13, errors  # 9e-4, 6e-11, 4e-15


def test_chebyshev_holds_what_the_window_before_holds_on_the_edges_and_is_smooth_there():
    """A function zero on x = 0 and y = 0, 1 gives a series zero on those whole lines (not just at the nodes), and
    its derivatives at the corners are finite (the polynomials by recurrence, not cos(m arccos s))."""

    def previous(points):
        x, y, t = columns(points)
        return tf.concat([x * tf.sin(np.pi * y) * tf.exp(x), tf.exp(x + y) * y * (1.0 - y) * x], axis=1) * (1.0 + t)

    bases = {"x": pinn.Chebyshev(0.0, 2.0, 24), "y": pinn.Chebyshev(0.0, 1.0, 24)}
    series = pinn.SeriesRestart(PLANE, bases)(previous, 0.25)
    s = np.random.default_rng(3).uniform(0.0, 1.0, 40)
    edges = np.concatenate([np.column_stack([np.zeros(40), s]), np.column_stack([2 * s, np.zeros(40)])])
    edges = np.concatenate([edges, np.column_stack([2 * s, np.ones(40)])])
    values = series(tf.constant(np.column_stack([edges, np.full(len(edges), 0.25)]))).numpy()
    assert np.abs(values).max() < 1e-13
    corners = tf.constant([[0.0, 0.0, 0.25], [2.0, 1.0, 0.25], [2.0, 0.0, 0.25], [1.3, 0.4, 0.25]], tf.float64)
    for field in (0, 1):
        exact = partials(lambda p, f=field: previous(p)[:, f], corners, ("x", "y", "t"), ("x", "xx", "yy", "xy"))
        fitted = partials(lambda p, f=field: series(p)[:, f], corners, ("x", "y", "t"), ("x", "xx", "yy", "xy"))
        for key in exact:
            np.testing.assert_allclose(fitted[key].numpy(), exact[key].numpy(), rtol=1e-7, atol=1e-7)


def test_three_dimensions_several_fields_and_float32():
    space = pinn.Box({"x": (0.0, 1.0), "y": (0.0, 1.0), "z": (0.0, 1.0), "t": (0.0, 1.0)}, time="t")

    def previous(points):
        x, y, z, _ = columns(points)
        return tf.concat([tf.sin(np.pi * x) * (y - 0.3) ** 3 * tf.sin(2 * np.pi * z), x * y * z], axis=1)

    bases = {"z": pinn.Sine(0.0, 1.0, 4), "x": pinn.Sine(0.0, 1.0, 3), "y": pinn.Chebyshev(0.0, 1.0, 5)}
    for dtype, tolerance in (("float64", 1e-12), ("float32", 1e-5)):
        series = pinn.SeriesRestart(space, bases, dtype)(
            lambda p: tf.cast(previous(tf.cast(p, tf.float64)), p.dtype), 0.0
        )
        points = np.random.default_rng(4).uniform(0.0, 1.0, (20, 4))
        fitted = series(tf.constant(points, dtype)).numpy()
        assert fitted.dtype == np.dtype(dtype) and fitted.shape == (20, 2)
        np.testing.assert_allclose(fitted[:, 0], previous(tf.constant(points)).numpy()[:, 0], atol=tolerance)
    # x y z is not zero on the walls: its sine series in x and z is not it (the basis decides what is kept)
    assert np.abs(fitted[:, 1] - np.prod(points[:, :3], axis=1)).max() > 1e-2


def test_a_baseline_is_kept_exactly_and_alone_outside_the_box():
    baseline = lambda x: tf.stack([1.0 - tf.exp(-(x["x"] ** 2)), 0.0 * x["x"]], axis=1)  # noqa: E731
    bump = lambda x: tf.cos(np.pi * x) * tf.cos(2.0 * np.pi * x)  # noqa: E731 (zero slope at -1/2, 1/2: in the span)
    inner = lambda x: tf.cast(tf.abs(x) < 0.5, x.dtype)  # noqa: E731

    def previous(points):
        x = columns(points)[0]
        change = inner(x) * bump(x + 0.5)
        return baseline({"x": x[:, 0]}) + tf.concat([0.2 * change, -change], axis=1)

    domain = pinn.Interval("x", -1.0, 1.0) * pinn.TimeDomain("t", 0.0, 1.0)
    series = pinn.SeriesRestart(domain, {"x": pinn.Cosine(-0.5, 0.5, 8)}, baseline=baseline)(previous, 0.0)
    points = line_points(np.array([-0.9, -0.6, -0.3, 0.0, 0.2, 0.45, 0.7, 1.0]))
    np.testing.assert_allclose(series(points).numpy(), previous(points).numpy(), atol=1e-12)


@pytest.mark.parametrize(
    "basis, orders",
    [
        (pinn.Fourier(0.0, 2.0, 9), [0, 1, 2, 3, 4, 1, 2, 3, 4]),
        (pinn.Sine(0.0, 2.0, 8), range(1, 9)),
        (pinn.Cosine(0.0, 2.0, 9), range(9)),
        (pinn.Chebyshev(0.0, 2.0, 9), range(9)),
    ],
    ids=["fourier", "sine", "cosine", "chebyshev"],
)
def test_the_filter_damps_each_mode_by_its_order_and_the_top_one_to_rounding(basis, orders):
    highest = max(orders)
    assert np.array_equal(basis.relative_orders(), np.asarray(orders) / highest)
    nodes = tf.constant(basis.nodes[:, None], tf.float64)
    modes = basis.functions(nodes).numpy()  # field m is the m-th function, sampled on the nodes
    previous = lambda points: tf.constant(modes, tf.float64)  # noqa: E731
    plain = pinn.SeriesRestart(LINE, {"x": basis}).coefficients(previous, 0.0)
    filtered = pinn.SeriesRestart(LINE, {"x": basis}, filter_order=8).coefficients(previous, 0.0)
    np.testing.assert_allclose(plain, np.eye(len(modes)), atol=1e-12)  # (modes, fields)
    damping = np.exp(np.log(np.finfo(float).eps) * (np.asarray(orders) / highest) ** 8)
    np.testing.assert_allclose(filtered, np.diag(damping), atol=1e-12)
    np.testing.assert_allclose(np.diag(filtered), damping, rtol=1e-9)
    assert np.diag(filtered)[np.argmax(orders)] == pytest.approx(np.finfo(float).eps)  # the top mode: to rounding
    assert np.all(damping[np.asarray(orders) <= 0.3 * highest] > 0.997)  # the low modes pass almost whole


def test_a_filter_order_must_be_even_and_not_negative():
    for order, message in ((3, "must be even"), (-2, "filter_order")):
        with pytest.raises(ValueError, match=message):
            pinn.SeriesRestart(LINE, {"x": pinn.Cosine(0.0, 2.0, 8)}, filter_order=order)


@pytest.mark.parametrize(
    "bases",
    [
        {"x": pinn.Chebyshev(0.0, 2.0, 12), "y": pinn.Sine(0.0, 1.0, 11)},
        {"x": pinn.Fourier(0.0, 2.0, 12), "y": pinn.Chebyshev(0.0, 1.0, 10)},
    ],
    ids=["chebyshev-sine", "fourier-chebyshev"],
)
def test_graph_and_xla_agree_with_eager_fourth_derivatives_included(bases):
    """Up to fourth derivatives, every basis: under XLA a slice's gradient is XLA's DynamicUpdateSlice, whose gradient
    hodiff registers (TensorFlow has none), and the Chebyshev polynomials are differentiated by the derivative's
    matrix, not through their recurrence."""

    def previous(points):
        x, y, _ = columns(points)
        return tf.exp(-((x - 1.0) ** 2) - y) * tf.sin(np.pi * y)

    series = pinn.SeriesRestart(PLANE, bases)(previous, 0.0)
    points = tf.constant(np.random.default_rng(5).uniform(0.0, 1.0, (16, 3)) * [2.0, 1.0, 1.0])
    orders = ("", "xx", "yy", "xy", "xxx", "xyy", "xxxx", "yyyy")
    derivatives = lambda p: tf.stack(list(partials(lambda q: series(q)[:, 0], p, ("x", "y", "t"), orders).values()))  # noqa: E731
    eager = derivatives(points).numpy()
    for compiled in (tf.function(derivatives), tf.function(derivatives, jit_compile=True)):
        np.testing.assert_allclose(compiled(points).numpy(), eager, rtol=1e-12, atol=1e-12 * np.abs(eager).max())


def swirl(points):
    """A divergence-free flow ``(psi_y, -psi_x)`` with ``psi = sin(x) y^2 (1 - y)^2 e^y + 0.3 x`` (not a polynomial:
    no finite series holds it), and a third field."""
    x, y, _ = columns(points)
    psi_y = tf.sin(x) * (2.0 * y * (1.0 - y) ** 2 - 2.0 * y**2 * (1.0 - y) + y**2 * (1.0 - y) ** 2) * tf.exp(y)
    psi_x = tf.cos(x) * y**2 * (1.0 - y) ** 2 * tf.exp(y) + 0.3
    return tf.concat([psi_y, -psi_x, tf.cos(x * y)], axis=1)


@pytest.mark.parametrize("nodes", [8, 16])
def test_a_divergence_free_restart_is_a_curl_and_keeps_u_exactly(nodes):
    bases = {"x": pinn.Chebyshev(0.0, 2.0, nodes), "y": pinn.Chebyshev(0.0, 1.0, nodes)}
    curl = pinn.SeriesRestart(PLANE, bases, divergence_free=(0, 1))(swirl, 0.5)
    plain = pinn.SeriesRestart(PLANE, bases)(swirl, 0.5)
    points = tf.constant(np.random.default_rng(2).uniform(0.0, 1.0, (300, 3)) * [2.0, 1.0, 1.0])

    def divergence(series):
        with tf.GradientTape(persistent=True) as tape:
            tape.watch(points)
            values = series(points)
            u, v = values[:, 0], values[:, 1]
        return (tape.gradient(u, points)[:, 0] + tape.gradient(v, points)[:, 1]).numpy()

    scale = np.abs(swirl(points).numpy()).max(axis=0)
    assert np.abs(divergence(curl)).max() < 1e-13 * scale[0]
    if nodes == 8:  # the plain fit of the same samples is not divergence-free
        assert np.abs(divergence(plain)).max() > 1e-5 * scale[0]
    exact, values, fitted = swirl(points).numpy(), curl(points).numpy(), plain(points).numpy()
    np.testing.assert_array_equal(values[:, [0, 2]], fitted[:, [0, 2]])  # u and the other field: the plain fit
    assert np.abs(values[:, 1] - exact[:, 1]).max() < (3e-6 if nodes == 8 else 1e-13) * scale[1]  # v from continuity
    for jit_compile in (False, True):  # graph and XLA agree with eager
        compiled = tf.function(lambda p: curl(p), jit_compile=jit_compile)(points).numpy()
        np.testing.assert_allclose(compiled, values, rtol=1e-12, atol=1e-14)


def test_a_divergence_free_restart_keeps_v_on_its_lower_edge():
    def flow(points):  # psi = x^2 y + x y^3 - 0.5 x: a cubic, held exactly by 5 nodes a side; v = 0.5 - 2xy - y^3
        x, y, _ = columns(points)
        return tf.concat([x**2 + 3.0 * x * y**2, 0.5 - 2.0 * x * y - y**3], axis=1)

    bases = {"x": pinn.Chebyshev(0.0, 2.0, 5), "y": pinn.Chebyshev(0.0, 1.0, 5)}
    series = pinn.SeriesRestart(PLANE, bases, divergence_free=(0, 1))(flow, 0.0)
    points = tf.constant(np.random.default_rng(3).uniform(0.0, 1.0, (50, 3)) * [2.0, 1.0, 1.0])
    np.testing.assert_allclose(series(points).numpy(), flow(points).numpy(), atol=1e-13)
    swapped = pinn.SeriesRestart(PLANE, bases, divergence_free=(1, 0))(lambda p: flow(p)[:, ::-1], 0.0)
    np.testing.assert_allclose(swapped(points).numpy(), flow(points).numpy()[:, ::-1], atol=1e-13)


def test_a_window_is_built_from_one_sample_of_the_window_before():
    calls = []

    def previous(points):
        calls.append(points.shape[0])
        return tf.sin(np.pi * points[:, :1] / 2.0)

    windows = pinn.TimeWindows(
        2, initial=lambda x: tf.sin(np.pi * x["x"] / 2.0), restart=pinn.SeriesRestart(LINE, {"x": pinn.Sine(0, 2, 15)})
    )
    problem = pinn.Problem(LINE, needs=("u", "u_t", "u_xx"), residual=lambda d, x, p: d["u_t"] - d["u_xx"])
    window = windows.problem(problem, 1, previous)
    assert calls == [15]  # the 15 nodes, once, when the window was built
    model = pinn.mlp(LINE, width=4, depth=1, dtype="float64")
    points = line_points(np.linspace(0.0, 2.0, 5), t=0.5)
    np.testing.assert_allclose(
        window.solution(model)(points).numpy()[:, 0], np.sin(np.pi * points.numpy()[:, 0] / 2.0), atol=1e-12
    )
    assert calls == [15]


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda: pinn.Chebyshev(0.0, 1.0, 1), "Chebyshev: samples must be an int >= 2"),
        (lambda: pinn.Sine(0.0, 1.0, 2.5), "Sine: samples must be an int >= 1"),
        (lambda: pinn.Cosine(1.0, 1.0, 4), r"Cosine: the interval \[1.0, 1.0\] is empty; give low < high"),
        (lambda: pinn.Fourier(0.0, -1.0, 4), "Fourier: the interval"),
        (
            lambda: pinn.SeriesRestart(PLANE, {"x": pinn.Sine(0, 2, 3)}),
            r"one basis for each spatial coordinate.*\['x', 'y'\]",
        ),
        (
            lambda: pinn.SeriesRestart(
                pinn.Rectangle(("x", "y"), (0, 0), (1, 1)), {"x": pinn.Sine(0, 1, 3), "y": pinn.Sine(0, 1, 3)}
            ),
            "no time coordinate",
        ),
        (
            lambda: pinn.SeriesRestart(LINE, {"x": np.linspace(0, 1, 4)}),
            "the basis of 'x' must be a Fourier, Sine, Cosine or Chebyshev",
        ),
        (lambda: pinn.SeriesRestart(LINE, {"x": pinn.Sine(0, 2, 3)}, baseline=1.0), "baseline must be a function"),
        (
            lambda: pinn.SeriesRestart(
                PLANE, {"x": pinn.Chebyshev(0, 2, 4), "y": pinn.Chebyshev(0, 1, 4)}, divergence_free=(1, 1)
            ),
            r"divergence_free must be None or \(i, j\), the indices of the fields u and v",
        ),
        (
            lambda: pinn.SeriesRestart(
                PLANE, {"x": pinn.Chebyshev(0, 2, 4), "y": pinn.Sine(0, 1, 4)}, divergence_free=(0, 1)
            ),
            "divergence_free needs a 2-D flow with a Chebyshev basis on both spatial coordinates",
        ),
        (
            lambda: pinn.SeriesRestart(
                PLANE, {"x": pinn.Chebyshev(0, 2, 4), "y": pinn.Chebyshev(0, 1, 4)}, divergence_free=(0, 3)
            )(lambda p: p[:, :2], 0.0),
            r"divergence_free=\(0, 3\) names a field the window's solution does not have \(it has 2\)",
        ),
    ],
)
def test_bad_input_is_refused_with_the_argument_named(make, message):
    with pytest.raises((ValueError, TypeError), match=message):
        make()
