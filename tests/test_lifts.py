"""Hard Dirichlet conditions from boundary pieces (hodiff.pinn.lifts): the transfinite lift of Sukumar &
Srivastava (2022) against hand-written lifts and closed forms, in eager, graph and XLA."""

import numpy as np
import pytest
import tensorflow as tf

from hodiff import pinn
from hodiff.pinn.conditions import named_columns
from pinn_examples import laplace_holes
from pinn_examples.fd_references import CG_CIRCLES, CG_EDGES
from pinn_examples.poisson2d_cg import domain_and_parts, smooth_square

DOMAIN, _, HOLES = domain_and_parts()


def network(points):
    """Any smooth 'network' output, (N, 1)."""
    return tf.sin(2.0 * points[:, :1] + points[:, 1:]) + 0.3 * points[:, :1] ** 2


def poisson2d_cg_by_hand(x, u):
    """poisson2d_cg's lift as it was written before hard_dirichlet."""
    points = tf.stack([x["x"], x["y"]], axis=1)
    to_circles = DOMAIN.distance(points, where=HOLES)
    to_square = (1.0 - x["x"] ** 2) * (1.0 - x["y"] ** 2)
    lift = (CG_EDGES * to_circles + CG_CIRCLES * to_square) / (to_square + to_circles)
    return lift[:, None] + (to_square * to_circles)[:, None] * u


def laplace_and_value(transform, points):
    with tf.GradientTape(persistent=True) as outer:
        outer.watch(points)
        with tf.GradientTape() as inner:
            inner.watch(points)
            u = transform(named_columns(points, ("x", "y")), network(points))
        first = inner.gradient(u, points)
    second = outer.batch_jacobian(first, points)
    return u[:, 0], tf.linalg.trace(second)


def test_the_lift_of_poisson2d_cg_equals_the_hand_written_one_with_its_laplacian(run):
    lift = pinn.hard_dirichlet(DOMAIN, {"circle": CG_CIRCLES, "edges": CG_EDGES}, distances={"edges": smooth_square})
    points = tf.constant(DOMAIN.sample_interior(200, seed=4))
    mine = run(lambda p: laplace_and_value(lift, p), points)
    theirs = run(lambda p: laplace_and_value(poisson2d_cg_by_hand, p), points)
    for a, b in zip(mine, theirs):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-12, atol=1e-12)


def test_the_lift_of_laplace_holes_equals_the_hand_written_one(run):
    domain, _, holes = laplace_holes.domain_and_parts()

    def by_hand(x, u):
        points = tf.stack([x["x"], x["y"]], axis=1)
        to_holes = domain.distance(points, where=holes)
        to_square = 4.0 * (0.25 - x["x"] ** 2) * (0.25 - x["y"] ** 2)
        lift = to_holes / (to_square + to_holes)
        return lift[:, None] + (to_square * to_holes)[:, None] * u

    problem, _ = laplace_holes.build(laplace_holes.EXAMPLE.presets["default"])
    points = tf.constant(domain.sample_interior(200, seed=4))
    mine = run(lambda p: laplace_and_value(problem.output_transform, p), points)
    theirs = run(lambda p: laplace_and_value(by_hand, p), points)
    for a, b in zip(mine, theirs):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-12, atol=1e-12)


def test_each_piece_gets_its_value_and_the_free_field_is_the_network_s():
    """u, v held on three sides of a rectangle (a function on the left), nothing on the right, p free."""
    box = pinn.Rectangle(("x", "y"), (0.0, 0.0), (2.0, 1.0))
    inflow = lambda x: x["y"] * (1.0 - x["y"])  # noqa: E731
    values = {"left": (inflow, 0.0), "top": (1.0, -0.5), "bottom": (0.0, 0.0)}
    lift = pinn.hard_dirichlet(box, values, fields=("u", "v", "p"), constrained=("u", "v"))
    y = np.linspace(0.1, 0.9, 5)
    x = np.linspace(0.1, 1.9, 5)
    sides = {
        "left": np.stack([0 * y, y], 1),
        "top": np.stack([x, 1 + 0 * x], 1),
        "bottom": np.stack([x, 0 * x], 1),
        "right": np.stack([2 + 0 * y, y], 1),
    }
    outputs = lambda p: tf.concat([network(p), 2.0 * network(p), network(p) - 1.0], axis=1)  # noqa: E731
    for side, array in sides.items():
        points = tf.constant(array)
        result = lift(named_columns(points, ("x", "y")), outputs(points)).numpy()
        np.testing.assert_allclose(result[:, 2], outputs(points).numpy()[:, 2], rtol=0, atol=1e-15)  # p is free
        if side == "left":
            np.testing.assert_allclose(result[:, :2], np.stack([y * (1 - y), 0 * y], 1), atol=1e-10)
        elif side == "top":
            np.testing.assert_allclose(result[:, :2], np.tile([1.0, -0.5], (5, 1)), atol=1e-10)
        elif side == "bottom":
            np.testing.assert_allclose(result[:, :2], 0.0, atol=1e-10)
        else:  # not held: the network's outputs reach the right side
            assert np.abs(result[:, :2]).min() > 1e-3


def test_the_weights_sum_to_one_so_one_value_everywhere_is_that_value_plus_the_distance_product():
    lift = pinn.hard_dirichlet(DOMAIN, {"circle1": 3.0, "circle2": 3.0, "edges": 3.0})
    points = tf.constant(DOMAIN.sample_interior(100, seed=2))
    x = named_columns(points, ("x", "y"))
    product = (
        DOMAIN.distance(points, where="circle1")
        * DOMAIN.distance(points, where="circle2")
        * DOMAIN.distance(points, where="edges")
    )
    expected = 3.0 + product[:, None] * network(points)
    np.testing.assert_allclose(lift(x, network(points)).numpy(), expected.numpy(), rtol=1e-12)
    one = pinn.hard_dirichlet(DOMAIN, {"edges": lambda x: x["x"] ** 2})  # one piece: the lift is g itself
    expected = (x["x"] ** 2)[:, None] + DOMAIN.distance(points, where="edges")[:, None] * network(points)
    np.testing.assert_allclose(one(x, network(points)).numpy(), expected.numpy(), rtol=1e-12)


@pytest.mark.parametrize(
    "arguments, error, message",
    [
        (({"hole": 1.0},), ValueError, r"\['hole'\] are not boundary pieces"),
        (({},), TypeError, "at least one boundary piece"),
        (({"edges": (1.0, 2.0)},), ValueError, "has 2 entries for 1 constrained"),
        (({"edges": "1"},), TypeError, "must be a number or a function"),
        (({"edges": float("nan")},), ValueError, "give a finite number"),
        (({"edges": 1.0}, ("u",), ("p",)), ValueError, "must name some of the fields"),
        (({"edges": 1.0}, ("u",), None, {"circle": smooth_square}), ValueError, "which values does not"),
    ],
)
def test_bad_lifts_are_named(arguments, error, message):
    with pytest.raises(error, match=message):
        pinn.hard_dirichlet(DOMAIN, *arguments)
