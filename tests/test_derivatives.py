"""hodiff.derivatives against closed forms and scipy, in eager, graph and XLA, float32 and float64."""

import numpy as np
import pytest
import tensorflow as tf
from conftest import make_mlp, mlp_twins, points
from hypothesis import given, settings
from hypothesis import strategies as st

import hodiff
from hodiff.checks import assert_close, check_grads, default_tolerance, reference_hessian, reference_jacobian


def rosenbrock(x):
    return tf.reduce_sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


# --- the seed cases ------------------------------------------------------------------------------


def test_derivative_of_quadratic_at_3_is_8(run, dtype):
    slope = run(hodiff.grad(lambda x: x**2 + 2 * x + 1), tf.constant(3.0, dtype))
    assert slope.dtype == dtype and float(slope) == 8.0


def test_quartic_first_10_second_24(run, dtype):
    f = lambda x: x**4 + 2 * x**3
    x = tf.constant(1.0, dtype)
    assert float(run(hodiff.grad(f), x)) == 10.0
    assert float(run(hodiff.grad(hodiff.grad(f)), x)) == 24.0
    assert float(run(hodiff.nth_derivative(f, 2), x)) == 24.0
    assert float(run(hodiff.hessian(f), x)) == 24.0


def test_jacobian_of_square_is_diagonal(run, dtype):
    x = tf.constant([1.0, -2.0, 3.0], dtype)
    J = run(hodiff.jacobian(lambda x: x**2), x)
    np.testing.assert_array_equal(J.numpy(), np.diag([2.0, -4.0, 6.0]))


@pytest.mark.parametrize("mode_name", ["eager", "graph", "xla"])
def test_seed_cases_against_scipy(mode_name, dtype):
    check_grads(lambda x: x**2 + 2 * x + 1, (tf.constant(3.0, dtype),), modes=[mode_name])
    check_grads(lambda x: x**4 + 2 * x**3, (tf.constant(1.0, dtype),), modes=[mode_name])
    check_grads(lambda x: x**2, (tf.constant([1.0, -2.0, 3.0], dtype),), order=1, modes=[mode_name])


def test_rosenbrock_hessian_against_scipy(dtype):
    check_grads(rosenbrock, (tf.constant([0.5, -0.3, 1.2, 0.8], dtype),), order=2)


# --- transforms ----------------------------------------------------------------------------------


def test_value_and_grad_argnums_and_aux(run):
    f = lambda x, y: (tf.reduce_sum(x * y**2), {"y": y})
    x, y = tf.constant([1.0, 2.0]), tf.constant([3.0, 4.0])
    (value, aux), (gx, gy) = run(hodiff.value_and_grad(f, argnums=(0, 1), has_aux=True), x, y)
    assert float(value) == 41.0
    np.testing.assert_allclose(gx, [9.0, 16.0])
    np.testing.assert_allclose(gy, [6.0, 16.0])
    np.testing.assert_allclose(aux["y"], y)
    gy_only, aux = run(hodiff.grad(f, argnums=1, has_aux=True), x, y)
    np.testing.assert_allclose(gy_only, [6.0, 16.0])


def test_grad_of_nested_structure_and_variables(run):
    weights = {"w": tf.Variable([1.0, 2.0]), "b": tf.Variable(0.5)}
    loss = lambda p: tf.reduce_sum(p["w"] ** 2) + 3.0 * p["b"]
    g = run(hodiff.grad(loss), weights)
    np.testing.assert_allclose(g["w"], [2.0, 4.0])
    assert float(g["b"]) == 3.0


def test_grad_wrt_keras_model_weights_matches_tape(run):
    model = make_mlp(3, dtype="float32")
    x = points(8, 3, tf.float32)
    loss = lambda weights, x: tf.reduce_mean(model(x) ** 2)
    # Inside a compiled step the variables are captured, not passed as tf.function arguments.
    g = run(lambda x: hodiff.grad(loss)(model.trainable_variables, x), x)
    with tf.GradientTape() as tape:
        value = tf.reduce_mean(model(x) ** 2)
    expected = tape.gradient(value, model.trainable_variables)
    for a, b in zip(g, expected):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_jvp_and_vjp_against_jacobian(run, dtype):
    f = lambda x, y: tf.stack([x[0] * y, tf.sin(x[1]) * y, x[0] ** 2])
    x, y = tf.constant([0.3, -1.2], dtype), tf.constant(2.0, dtype)
    vx, vy = tf.constant([1.0, 2.0], dtype), tf.constant(-0.5, dtype)
    out, tangent = run(lambda x, y, vx, vy: hodiff.jvp(f, (x, y), (vx, vy)), x, y, vx, vy)
    Jx, Jy = hodiff.jacobian(f, argnums=(0, 1))(x, y)
    np.testing.assert_allclose(tangent, Jx.numpy() @ vx.numpy() + Jy.numpy() * vy.numpy(), rtol=1e-6)

    def pullback(x, y):
        out, vjp_fn = hodiff.vjp(f, x, y)
        return vjp_fn(tf.constant([1.0, 0.0, 2.0], dtype)), vjp_fn(tf.ones(3, dtype))

    (cx, cy), (ones_x, _) = run(pullback, x, y)
    np.testing.assert_allclose(cx, np.array([1.0, 0.0, 2.0]) @ Jx.numpy(), rtol=1e-6)
    np.testing.assert_allclose(cy, np.array([1.0, 0.0, 2.0]) @ Jy.numpy(), rtol=1e-6)
    np.testing.assert_allclose(ones_x, Jx.numpy().sum(axis=0), rtol=1e-6)


def test_jacobian_of_mlp_against_scipy(run):
    model = make_mlp(3, 2, width=8)
    x = points(2, 3)
    expected, error = reference_jacobian(model, [x])
    assert_close(run(hodiff.jacobian(model), x), expected, 1e-7, what="jacobian", reference_error=error)


def test_batch_jacobian_against_scipy_per_example(run, dtype):
    model64, model32 = mlp_twins(3, 2, width=8)
    model = model64 if dtype == tf.float64 else model32
    x = points(5, 3, dtype)
    J = run(hodiff.batch_jacobian(model), x)
    assert J.shape == (5, 2, 3)
    for n in range(5):
        expected, _ = reference_jacobian(lambda p: model64(p[None])[0], [tf.cast(x[n], tf.float64)])
        assert_close(J[n], expected, default_tolerance(dtype), what=f"batch_jacobian row {n}")


def test_batch_jacobian_keeps_multi_dimensional_shapes(run):
    f = lambda x: tf.einsum("nij,nj->ni", x, x[:, 0, :])[:, :, None] * tf.ones((1, 1, 2))
    x = tf.random.stateless_normal((3, 2, 4), seed=[1, 2])
    J = run(hodiff.batch_jacobian(f), x)
    assert J.shape == (3, 2, 2, 2, 4)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = f(x)
    np.testing.assert_allclose(J, tape.batch_jacobian(y, x), rtol=1e-6)


def test_hessian_of_matrix_argument_has_doubled_shape(run):
    f = lambda W: tf.reduce_sum(tf.sin(W) ** 2) * tf.reduce_sum(W)
    W = tf.constant([[0.1, 0.2], [0.3, -0.4]], tf.float64)
    H = run(hodiff.hessian(f), W)
    assert H.shape == (2, 2, 2, 2)
    expected, error = reference_hessian(f, [W])
    assert_close(H, expected, 1e-6, what="hessian", reference_error=error)


def test_batch_hessian_of_mlp_against_scipy(run, dtype):
    model64, model32 = mlp_twins(3)
    model = model64 if dtype == tf.float64 else model32
    x = points(4, 3, dtype)
    H = run(hodiff.batch_hessian(model), x)
    assert H.shape == (4, 3, 3)
    for n in range(4):
        expected, error = reference_hessian(lambda p: model64(p[None])[0, 0], [tf.cast(x[n], tf.float64)])
        assert_close(H[n], expected, default_tolerance(dtype, 2), what=f"batch_hessian row {n}", reference_error=error)


@pytest.mark.parametrize("hvp_mode", hodiff.HVP_MODES)
def test_hvp_equals_hessian_times_vector(run, dtype, hvp_mode):
    x = tf.constant([0.5, -0.3, 1.2, 0.8], dtype)
    v = tf.constant([1.0, -2.0, 0.5, 3.0], dtype)
    Hv = run(lambda x, v: hodiff.hvp(rosenbrock, x, v, mode=hvp_mode), x, v)
    expected, _ = reference_hessian(rosenbrock, [x])
    assert_close(Hv, expected @ v.numpy().astype(np.float64), default_tolerance(dtype, 2), what="hvp")


@pytest.mark.parametrize("hvp_mode", hodiff.HVP_MODES)
def test_hvp_over_model_weights(run, hvp_mode):
    """H v over a model's weights equals scipy's derivative of the tape gradient along v."""
    model = make_mlp(2, width=4, depth=1)
    x = points(6, 2)
    weights = model.trainable_variables
    loss = lambda _: tf.reduce_mean(model(x) ** 2)
    directions = [tf.cast(tf.linspace(-1.0, 1.0, tf.size(w)), tf.float64) for w in weights]
    directions = [tf.reshape(v, w.shape) for v, w in zip(directions, weights)]
    products = run(lambda: hodiff.hvp(loss, weights, directions, mode=hvp_mode))
    start = [w.numpy() for w in weights]

    def gradient_along(t):  # plain-tape gradient at w + t v, flattened; scipy differentiates in t
        for w, w0, v in zip(weights, start, directions):
            w.assign(w0 + float(t) * v.numpy())
        with tf.GradientTape() as tape:
            value = tf.reduce_mean(model(x) ** 2)
        return np.concatenate([g.numpy().ravel() for g in tape.gradient(value, weights)])

    import scipy.differentiate

    cache = {}

    def elementwise(ts, components):  # gradient component components[i] at t = ts[i]
        out = np.empty(np.shape(ts))
        components = np.broadcast_to(components, out.shape)
        for index in np.ndindex(out.shape):
            t = float(ts[index])
            if t not in cache:
                cache[t] = gradient_along(t)
            out[index] = cache[t][int(components[index])]
        return out

    size = sum(int(np.prod(w.shape)) for w in weights)
    result = scipy.differentiate.derivative(elementwise, np.zeros(size), args=(np.arange(size),))
    for w, w0 in zip(weights, start):
        w.assign(w0)
    actual = np.concatenate([p.numpy().ravel() for p in products])
    assert_close(actual, result.df, 1e-6, what="hvp over weights", reference_error=result.error)


def test_nth_derivative_of_sin_cycles(run, dtype):
    x = tf.constant([0.0, 0.7, 2.0], dtype)
    derivatives = [tf.sin, tf.cos, lambda t: -tf.sin(t), lambda t: -tf.cos(t)]
    for n in range(6):
        actual = run(hodiff.nth_derivative(tf.sin, n), x)
        np.testing.assert_allclose(actual, derivatives[n % 4](x), rtol=1e-5, atol=1e-6)


def test_nth_derivative_zero_beyond_degree(run):
    x = tf.constant([1.0, 2.0], tf.float64)
    np.testing.assert_array_equal(run(hodiff.nth_derivative(lambda t: t**2, 3, unconnected="zero"), x), [0.0, 0.0])
    np.testing.assert_array_equal(run(hodiff.nth_derivative(lambda t: t**2, 3), x), [0.0, 0.0])  # as in JAX
    np.testing.assert_array_equal(run(hodiff.nth_derivative(lambda t: 5 * t, 4), x), [0.0, 0.0])
    orders = run(hodiff.elementwise_derivatives(lambda t: t**2, 3), x)
    np.testing.assert_array_equal(np.stack(orders), [[1.0, 4.0], [2.0, 4.0], [2.0, 2.0], [0.0, 0.0]])


# --- a derivative of a derivative that does not depend on the argument is zero, as in JAX ---------


def test_nested_derivative_of_a_constant_derivative_is_zero(run, dtype):
    x = tf.constant(2.0, dtype)
    for result in (
        run(hodiff.hessian(lambda a: 3 * a), x),
        run(lambda x: hodiff.hessian(lambda a, b: a * b * b)(x, x), x),  # d/da (b b) = 0
        run(hodiff.grad(hodiff.grad(lambda a: 3 * a)), x),
        run(hodiff.grad(hodiff.grad(hodiff.grad(lambda a: a**2))), x),
    ):
        assert result.shape == () and result.dtype == dtype and float(result) == 0.0
    v = tf.constant([1.0, -2.0, 0.5], dtype)
    for result in (
        run(hodiff.hessian(lambda a: tf.reduce_sum(3 * a)), v),
        run(hodiff.jacobian(hodiff.jacobian(lambda a: 3 * a)), v),
    ):
        assert result.dtype == dtype and float(tf.reduce_max(tf.abs(result))) == 0.0
    assert run(hodiff.hessian(lambda a: tf.reduce_sum(3 * a)), v).shape == (3, 3)
    assert run(hodiff.jacobian(hodiff.jacobian(lambda a: 3 * a)), v).shape == (3, 3, 3)


def test_nested_derivative_blocks_and_products_are_zero_where_unconnected(run):
    x = tf.constant(3.0, tf.float64)
    blocks = run(lambda x: hodiff.hessian(lambda a, b: a * b, (0, 1))(x, x), x)  # no unconnected="zero" needed
    assert [[float(b) for b in row] for row in blocks] == [[0.0, 1.0], [1.0, 0.0]]
    v = tf.constant([1.0, 2.0], tf.float64)
    linear = lambda a: tf.reduce_sum(3 * a) + a[0] ** 2  # H = [[2, 0], [0, 0]]
    for mode in hodiff.HVP_MODES:
        product = run(lambda v, mode=mode: hodiff.hvp(linear, v, tf.ones_like(v), mode=mode), v)
        np.testing.assert_array_equal(product, [2.0, 0.0])
    points = tf.constant([[1.0, 2.0], [3.0, 4.0]], tf.float64)
    hessians = run(hodiff.batch_hessian(lambda p: 3 * p[:, 0] + p[:, 1] ** 2), points)
    np.testing.assert_array_equal(hessians, [[[0.0, 0.0], [0.0, 2.0]]] * 2)
    nested = run(hodiff.batch_jacobian(hodiff.batch_jacobian(lambda p: 3 * p)), points)  # inner: constant 3 I
    np.testing.assert_array_equal(nested, np.zeros((2, 2, 2, 2)))
    _, tangent = run(lambda v: hodiff.jvp(lambda a: hodiff.jvp(lambda b: 3 * b, (a,), (v,))[1], (v,), (v,)), v)
    np.testing.assert_array_equal(tangent, [0.0, 0.0])


def test_first_order_derivative_of_an_unused_argument_still_raises(run):
    x, y = tf.constant(1.0, tf.float64), tf.constant(2.0, tf.float64)
    unused = r"does not depend on `args\[0\]`.*unconnected='zero'"
    with pytest.raises(ValueError, match=unused):
        run(lambda x, y: hodiff.grad(lambda a, b: b)(x, y), x, y)
    with pytest.raises(ValueError, match=unused):
        run(lambda x, y: hodiff.jacobian(lambda a, b: b)(x, y), x, y)
    with pytest.raises(ValueError, match="does not depend on `primals`"):
        run(lambda x: hodiff.jvp(lambda a: tf.constant(1.0, tf.float64), (x,), (x,))[1], x)
    # f(a, b) = b^2 never uses a: d/da of its derivative in b is the first-order case again
    with pytest.raises(ValueError, match=unused):
        run(lambda x, y: hodiff.jacobian(hodiff.grad(lambda a, b: b**2, 1), 0)(x, y), x, y)


# --- property-based: random polynomials and random MLPs ------------------------------------------


@settings(max_examples=8, deadline=None)
@given(
    coefficients=st.lists(st.floats(-3, 3), min_size=2, max_size=5),
    point=st.floats(-1.5, 1.5),
)
def test_random_polynomials_against_scipy(coefficients, point):
    def polynomial(x):  # Horner's form (tf.pow's gradient of x**0 at 0 is NaN)
        value = tf.zeros_like(x)
        for c in reversed(coefficients):
            value = value * x + c
        return value

    check_grads(polynomial, (tf.constant(point, tf.float64),), order=2, atol=1e-6)


@settings(max_examples=5, deadline=None)
@given(
    width=st.integers(2, 8),
    activation=st.sampled_from(["tanh", "sigmoid", "softplus", "gelu"]),
    seed=st.integers(0, 1000),
)
def test_random_mlps_against_scipy(width, activation, seed):
    model = make_mlp(3, width=width, depth=2, activation=activation, seed=seed)
    x = points(1, 3, seed=seed)[0]
    check_grads(lambda p: model(p[None])[0, 0], (x,), order=2)


@pytest.mark.slow
@settings(max_examples=60, deadline=None)
@given(
    d=st.integers(1, 6),
    width=st.integers(2, 32),
    depth=st.integers(1, 4),
    # C^2 activations only: elu's second derivative jumps at 0, and finite differences that
    # straddle the jump are no reference (scipy's own error estimate then equals the gap).
    activation=st.sampled_from(["tanh", "sigmoid", "softplus", "gelu", "silu"]),
    seed=st.integers(0, 10_000),
)
def test_many_random_mlps_against_scipy(d, width, depth, activation, seed):
    """The long sweep (make slow): gradients, Hessians, HVPs and Laplacians of random MLPs."""
    from hodiff.checks import check_laplacian

    model = make_mlp(d, width=width, depth=depth, activation=activation, seed=seed)
    x = points(3, d, seed=seed)
    check_grads(lambda p: model(p[None])[0, 0], (x[0],), order=2)
    check_laplacian(model, x, methods=("nested", "forward"))


# --- aliased arguments: every position is its own variable ----------------------------------------


def test_grad_argnums_with_one_tensor_passed_three_times(run):
    """JAX's test_grad_argnums: f(x, y, z, flag) = 1 + x + y + z, x = y = z = one tensor."""

    def f(x, y, z, flag=False):
        assert flag
        return 1.0 + x + y + z

    x = tf.constant(1.0, tf.float64)
    assert float(run(lambda x: hodiff.grad(f)(x, x, x, flag=True), x)) == 1.0
    assert float(run(lambda x: hodiff.grad(f, argnums=1)(x, x, x, flag=True), x)) == 1.0
    assert float(run(lambda x: hodiff.grad(f, argnums=-1)(x, x, x, flag=True), x)) == 1.0
    gradients = run(lambda x: hodiff.grad(f, argnums=(2, 0))(x, x, x, flag=True), x)
    assert [float(g) for g in gradients] == [1.0, 1.0]


def test_aliased_product_derivatives_are_partials(run):
    x = tf.constant(3.0, tf.float64)
    product = lambda x, y: x * y
    assert float(run(lambda x: hodiff.grad(product, 0)(x, x), x)) == 3.0
    assert [float(g) for g in run(lambda x: hodiff.grad(product, (0, 1))(x, x), x)] == [3.0, 3.0]
    value, slope = run(lambda x: hodiff.value_and_grad(product, 1)(x, x), x)
    assert float(value) == 9.0 and float(slope) == 3.0
    # d^2 (x y) / dx^2 = 0 and the mixed block is 1.
    assert float(run(lambda x: hodiff.hessian(product, 0)(x, x), x)) == 0.0
    blocks = run(lambda x: hodiff.hessian(product, (0, 1))(x, x), x)
    assert [[float(b) for b in row] for row in blocks] == [[0.0, 1.0], [1.0, 0.0]]


def test_aliased_vector_jacobian_jvp_and_vjp(run):
    v = tf.constant([1.0, 2.0], tf.float64)
    g = lambda a, b: a * b
    np.testing.assert_array_equal(run(lambda v: hodiff.jacobian(g, 0)(v, v), v), np.diag([1.0, 2.0]))
    _, tangent = run(lambda v: hodiff.jvp(g, (v, v), (tf.ones(2, tf.float64), tf.zeros(2, tf.float64))), v)
    np.testing.assert_array_equal(tangent, [1.0, 2.0])

    def pullback(v):
        _, vjp_fn = hodiff.vjp(g, v, v)
        return vjp_fn(tf.ones(2, tf.float64))

    first, second = run(pullback, v)
    np.testing.assert_array_equal(first, [1.0, 2.0])
    np.testing.assert_array_equal(second, [1.0, 2.0])


def test_aliased_variables_and_nested_leaves(run):
    w = tf.Variable(3.0, dtype=tf.float64)
    product = lambda p: p[0] * p[1]
    gradient = run(lambda: hodiff.grad(product)([w, w]))
    assert [float(g) for g in gradient] == [3.0, 3.0]
    assert float(run(lambda: hodiff.grad(lambda x, y: x * y, 0)(w, w))) == 3.0
    # hvp of p0^2 p1 at p0 = p1 = w: H = [[2 p1, 2 p0], [2 p0, 0]] = [[6, 6], [6, 0]].
    cubic = lambda p: p[0] ** 2 * p[1]
    ones = [tf.constant(1.0, tf.float64)] * 2
    for hvp_mode in hodiff.HVP_MODES:
        product_vector = run(lambda m=hvp_mode: hodiff.hvp(cubic, [w, w], ones, mode=m))
        assert [float(p) for p in product_vector] == [12.0, 6.0]
    t = tf.constant(2.0, tf.float64)
    gradient = run(lambda t: hodiff.grad(lambda p: p["a"] * p["b"] ** 2)({"a": t, "b": t}), t)
    assert float(gradient["a"]) == 4.0 and float(gradient["b"]) == 8.0


def test_closure_reads_of_a_variable_still_count():
    """A Variable passed once is watched as itself, so a model reading it by closure is seen."""
    w = tf.Variable(2.0, dtype=tf.float64)
    assert float(hodiff.grad(lambda _: w**3)(w)) == 12.0
    assert float(hodiff.hvp(lambda _: w**3, w, tf.constant(1.0, tf.float64))) == 12.0


# --- composition --------------------------------------------------------------------------------


def test_hessian_is_jacobian_of_grad_with_argnums_and_aux(run):
    f = lambda x, y: (tf.reduce_sum(x**2 * y), {"seen": y})
    x, y = tf.constant([1.0, 2.0], tf.float64), tf.constant([3.0, 4.0], tf.float64)
    H, aux = run(hodiff.hessian(f, argnums=1, has_aux=True, unconnected="zero"), x, y)
    np.testing.assert_array_equal(H, np.zeros((2, 2)))
    np.testing.assert_array_equal(aux["seen"], y)
    (hxx, hxy), (hyx, hyy) = run(hodiff.hessian(lambda x, y: f(x, y)[0], argnums=(0, 1), unconnected="zero"), x, y)
    np.testing.assert_array_equal(hxx, np.diag([6.0, 8.0]))
    np.testing.assert_array_equal(hxy, np.diag([2.0, 4.0]))
    np.testing.assert_array_equal(hyx, np.diag([2.0, 4.0]))
    np.testing.assert_array_equal(hyy, np.zeros((2, 2)))


def test_jacobian_has_aux_and_structured_outputs(run):
    f = lambda x: ({"square": x**2, "cube": x**3}, tf.reduce_sum(x))
    x = tf.constant([1.0, 2.0], tf.float64)
    J, aux = run(hodiff.jacobian(f, has_aux=True), x)
    assert float(aux) == 3.0
    np.testing.assert_array_equal(J["square"], np.diag([2.0, 4.0]))
    np.testing.assert_array_equal(J["cube"], np.diag([3.0, 12.0]))


def test_jvp_and_vjp_has_aux(run):
    x = tf.constant([1.0, 2.0], tf.float64)
    f = lambda x: (x**2, tf.reduce_sum(x))
    out, tangent, aux = run(lambda x: hodiff.jvp(f, (x,), (tf.ones(2, tf.float64),), has_aux=True), x)
    np.testing.assert_array_equal(tangent, [2.0, 4.0])
    assert float(aux) == 3.0

    def pullback(x):
        out, vjp_fn, aux = hodiff.vjp(f, x, has_aux=True)
        return vjp_fn(tf.ones(2, tf.float64))[0], aux

    cotangent, aux = run(pullback, x)
    np.testing.assert_array_equal(cotangent, [2.0, 4.0])
    assert float(aux) == 3.0


def test_elementwise_derivatives_give_every_order(run, dtype):
    x = tf.constant([0.0, 0.7], dtype)
    orders = run(hodiff.elementwise_derivatives(tf.sin, 3), x)
    expected = [tf.sin(x), tf.cos(x), -tf.sin(x), -tf.cos(x)]
    for actual, reference in zip(orders, expected):
        np.testing.assert_allclose(actual, reference, rtol=1e-6, atol=1e-7)


def test_batch_jacobian_of_zero_points_is_empty(run):
    x = tf.zeros((0, 3), tf.float64)
    J = run(hodiff.batch_jacobian(lambda x: tf.concat([x**2, x[:, :1]], axis=1)), x)
    assert J.shape == (0, 4, 3)


@pytest.mark.parametrize("rows", [0, 1, 2])
def test_nested_batch_jacobian_of_a_batch_of_unknown_size(mode, rows):
    """Issue 46 item 12: under XLA with the batch size unknown at tracing, a nested batch_jacobian failed at
    0 and 1 rows; in eager mode the weight gradient through an empty batch was None (graph mode: zeros)."""
    w = tf.Variable([[1.0, 2.0], [0.5, -1.0]], dtype=tf.float64)
    second = hodiff.batch_jacobian(hodiff.batch_jacobian(lambda x: tf.tanh(x @ w)))

    def loss(x):
        with tf.GradientTape() as tape:
            H = second(x)
            total = tf.reduce_sum(H**2)
        return H, tape.gradient(total, w)

    if mode != "eager":
        spec = [tf.TensorSpec([None, 2], tf.float64)]
        loss = tf.function(loss, input_signature=spec, jit_compile=mode == "xla")
    x = tf.fill([rows, 2], tf.constant(0.3, tf.float64))
    H, gradient = loss(x)
    assert H.shape == (rows, 2, 2, 2)
    assert gradient is not None
    single = [second(x[i : i + 1]) for i in range(rows)]  # eager, one row at a time
    np.testing.assert_allclose(H.numpy(), np.concatenate(single) if rows else np.zeros((0, 2, 2, 2)), rtol=1e-12)
    if rows == 0:
        np.testing.assert_array_equal(gradient, np.zeros((2, 2)))


def test_batch_jacobian_of_a_wide_output_is_vectorised(run):
    """More output entries per example than batch_jacobian writes out one pass each: the vectorised path."""
    x = tf.constant([[1.0, 2.0], [3.0, 4.0]], tf.float64)
    scales = tf.range(1.0, 71.0, dtype=tf.float64)
    J = run(hodiff.batch_jacobian(lambda x: x[:, :1] * x[:, 1:] * scales), x)  # (2, 70, 2)
    expected = np.stack([np.outer(scales, [b, a]) for a, b in x.numpy()])
    np.testing.assert_allclose(J, expected, rtol=1e-12)


def test_batch_jacobian_has_aux(run):
    x = tf.constant([[1.0, 2.0]], tf.float64)
    J, aux = run(hodiff.batch_jacobian(lambda x: (x**2, tf.reduce_sum(x)), has_aux=True), x)
    np.testing.assert_array_equal(J[0], np.diag([2.0, 4.0]))
    assert float(aux) == 3.0
