"""Geometry: primitives, CSG, boundary pieces, normals, uniformity, distance functions, products, errors."""

import numpy as np
import pytest
import tensorflow as tf

from hodiff import pinn
from hodiff.checks import in_mode
from hodiff.pinn import (
    Ball,
    Box,
    Disk,
    Ellipse,
    Hypercube,
    Hypersphere,
    Interval,
    Parameter,
    PointCloud,
    Polygon,
    Rectangle,
    Sphere,
    TimeDomain,
    Triangle,
)

L_VERTICES = [(0, 0), (1, 0), (1, -1), (-1, -1), (-1, 1), (0, 1)]
SQUARE = Rectangle(("x", "y"), (-0.5, -0.5), (0.5, 0.5), name="outer")
HOLES = [Disk((sx * 0.3, sy * 0.3), 0.1, name="circles") for sx in (-1, 1) for sy in (-1, 1)]
PLATE = SQUARE - HOLES[0] - HOLES[1] - HOLES[2] - HOLES[3]
LENS = Disk((0, 0), 1.0) & Disk((1, 0), 1.0)
UNION = Disk((0, 0), 1.0, name="a") | Disk((1.5, 0), 1.0, name="b")

SHAPES = {
    "disk": Disk((0.2, -0.1), 0.7),
    "ellipse": Ellipse((0, 0), (2.0, 0.5)),
    "lshape": Polygon(L_VERTICES),
    "lshape_clockwise": Polygon(L_VERTICES[::-1]),
    "triangle": Triangle((0, 0), (1, 0), (0, 1)),
    "ball": Ball((0, 0, 0), 1.0),
    "hypersphere5": Hypersphere(np.zeros(5), 1.0),
    "hypercube4": Hypercube([0] * 4, [1, 2, 1, 1]),
    "plate": PLATE,
    "lens": LENS,
    "union": UNION,
    "lshape_csg": Rectangle(("x", "y"), (0, 0), (1, 1)) - Rectangle(("x", "y"), (0.5, 0.5), (1, 1)),
}


def test_membership_matches_closed_forms():
    rng = np.random.default_rng(0)
    p = rng.uniform(-1.2, 1.2, size=(4000, 2))
    x, y = p[:, 0], p[:, 1]
    np.testing.assert_array_equal(Disk((0, 0), 1.0).contains(p), x**2 + y**2 <= 1)
    np.testing.assert_array_equal(Ellipse((0, 0), (1.0, 0.5)).contains(p), x**2 + 4 * y**2 <= 1)
    lshape = (np.abs(x) <= 1) & (np.abs(y) <= 1) & ~((x > 0) & (y > 0))
    np.testing.assert_array_equal(Polygon(L_VERTICES).contains(p), lshape)
    np.testing.assert_array_equal(Polygon(L_VERTICES[::-1]).contains(p), lshape)
    np.testing.assert_array_equal(Triangle((0, 0), (1, 0), (0, 1)).contains(p), (x >= 0) & (y >= 0) & (x + y <= 1))
    plate = (np.abs(x) <= 0.5) & (np.abs(y) <= 0.5)
    for sx in (-1, 1):
        for sy in (-1, 1):
            plate &= (x - 0.3 * sx) ** 2 + (y - 0.3 * sy) ** 2 >= 0.01
    np.testing.assert_array_equal(PLATE.contains(p), plate)
    np.testing.assert_array_equal(LENS.contains(p), (x**2 + y**2 <= 1) & ((x - 1) ** 2 + y**2 <= 1))
    q = rng.uniform(-1.2, 1.2, size=(2000, 3))
    np.testing.assert_array_equal(Ball((0, 0, 0), 1.0).contains(q), np.sum(q**2, axis=1) <= 1)
    assert Sphere is Ball


@pytest.mark.parametrize("name", sorted(SHAPES))
def test_boundary_points_on_boundary_with_outward_unit_normals(name):
    shape = SHAPES[name]
    points, normals = shape.sample_boundary(400, seed=3)
    assert points.shape == normals.shape == (400, len(shape.coords))
    assert shape.contains(points).all()
    np.testing.assert_allclose(np.linalg.norm(normals, axis=1), 1.0, atol=1e-12)
    eps = 1e-5
    assert shape.contains(points - eps * normals).all(), "a small step against the normal stays inside"
    assert not shape.contains(points + eps * normals).any(), "a small step along the normal leaves"
    interior = shape.sample_interior(300, seed=4)
    assert interior.shape == (300, len(shape.coords)) and shape.contains(interior).all()


@pytest.mark.parametrize("method", ["random", "lhs", "sobol"])
def test_plate_area_by_monte_carlo_and_qmc_methods(method):
    """Square minus four disks: area 1 - 4 pi 0.01, as the fraction of bounding-box points inside."""
    unit = np.random.default_rng(1).uniform(-0.5, 0.5, size=(200_000, 2))
    area = PLATE.contains(unit).mean()
    assert abs(area - (1 - 0.04 * np.pi)) < 4 * np.sqrt(0.2 / 200_000)
    points = PLATE.sample_interior(1024, method=method, seed=2)
    assert PLATE.contains(points).all()
    np.testing.assert_array_equal(points, PLATE.sample_interior(1024, method=method, seed=2))
    counts = np.histogram(points[:, 0], bins=4, range=(-0.5, 0.5))[0]
    assert np.all(np.abs(counts - 256) < 60)


def binomial_ok(hits, total, p):
    return abs(hits - total * p) < 5 * np.sqrt(total * p * (1 - p))


def test_boundary_is_uniform_in_arc_length():
    count = 4000
    points, normals = PLATE.sample_boundary(count, seed=0)
    on_circle = np.abs(np.linalg.norm(np.abs(points) - 0.3, axis=1) - 0.1) < 1e-9
    circle, square = 4 * 2 * np.pi * 0.1, 4.0
    assert binomial_ok(on_circle.sum(), count, circle / (circle + square))
    # normals at the holes point into the holes (outward of the plate)
    centre = np.sign(points[on_circle]) * 0.3
    np.testing.assert_allclose(normals[on_circle], (centre - points[on_circle]) / 0.1, atol=1e-9)
    # union of two disks at distance 1.5: each keeps the arc outside the other, 2 pi - 2 acos(0.75)
    points, _ = UNION.sample_boundary(count, seed=1)
    assert binomial_ok((points[:, 0] < 0.75).sum(), count, 0.5)
    # L-shape from a CSG difference: total length 4, the removed corner's edges (length 1) are boundary
    lshape = SHAPES["lshape_csg"]
    points, normals = lshape.sample_boundary(count, seed=2)
    inner = (np.abs(points[:, 0] - 0.5) < 1e-12) & (points[:, 1] > 0.5) | (np.abs(points[:, 1] - 0.5) < 1e-12) & (
        points[:, 0] > 0.5
    )
    assert binomial_ok(inner.sum(), count, 1 / 4)
    # ellipse: the quarter arcs near the ends of the long axis get their share of the length
    ellipse = SHAPES["ellipse"]
    points, _ = ellipse.sample_boundary(count, seed=5)
    theta = np.linspace(0, 2 * np.pi, 100001)
    speed = np.hypot(2.0 * np.sin(theta), 0.5 * np.cos(theta))
    share = np.sum(speed[np.abs(np.cos(theta)) > np.sqrt(0.5)]) / np.sum(speed)
    assert binomial_ok((np.abs(points[:, 0]) > 2.0 * np.sqrt(0.5)).sum(), count, share)


def test_coincident_edges_are_not_doubled():
    """Two rectangles sharing their left edge: the shared edge is drawn once, at the usual density."""
    union = Rectangle(("x", "y"), (0, 0), (2, 1)) | Rectangle(("x", "y"), (0, 0), (1, 2))
    points, _ = union.sample_boundary(4000, seed=0)
    assert binomial_ok((np.abs(points[:, 0]) < 1e-12).sum(), 4000, 2 / 8)


def test_where_piece_names_predicates_and_operands():
    points, normals = PLATE.sample_boundary(200, where="circles", seed=0)
    assert np.allclose(np.linalg.norm(np.abs(points) - 0.3, axis=1), 0.1)
    points, normals = PLATE.sample_boundary(200, where="outer", seed=0)
    assert np.allclose(np.max(np.abs(points), axis=1), 0.5)
    points, normals = PLATE.sample_boundary(100, where=HOLES[3], seed=0)
    assert np.allclose(np.linalg.norm(points - HOLES[3].center, axis=1), 0.1)
    points, normals = PLATE.sample_boundary(100, where=lambda x: (x["x"] > 0.45) & (abs(x["y"]) < 0.4), seed=0)
    assert np.allclose(points[:, 0], 0.5) and np.allclose(normals[:, 0], 1.0)
    points, normals = SQUARE.sample_boundary(50, where="left")
    assert np.all(points[:, 0] == -0.5) and np.all(normals[:, 0] == -1)
    lshape = Polygon(L_VERTICES)
    points, normals = lshape.sample_boundary(30, where="edge1")
    assert np.allclose(points[:, 0], 1.0) and np.allclose(normals, [1, 0])
    assert set(Polygon(L_VERTICES, name="wall").boundary_names) == {f"edge{i}" for i in range(6)} | {"wall"}
    assert "edge5" in lshape.boundary_names


def test_products_with_time_and_parameter():
    domain = PLATE * TimeDomain("t", 0.0, 2.0) * Parameter("k", 1.0, 3.0)
    assert domain.coords == ("x", "y", "t", "k") and domain.space == ("x", "y")
    assert domain.time == "t" and domain.parameters == ("k",)
    interior = domain.sample_interior(512, seed=0)
    assert domain.contains(interior).all() and interior[:, 2].max() > 1.9 and interior[:, 3].min() < 1.1
    points, normals = domain.sample_boundary(512, where="circles", seed=1)
    assert domain.contains(points).all() and np.all(normals[:, 2:] == 0)
    assert np.ptp(points[:, 2]) > 1.9 and np.ptp(points[:, 3]) > 1.9, "boundary points at all times and values"
    initial = domain.sample_initial(64)
    assert np.all(initial[:, 2] == 0) and PLATE.contains(initial[:, :2]).all()
    assert not domain.contains(np.array([[0.0, 0.0, 2.5, 2.0]]))[0]
    # time first, as built
    flipped = TimeDomain("t", 0, 1) * Disk((0, 0), 1.0)
    assert flipped.coords == ("t", "x", "y")
    points, normals = flipped.sample_boundary(64)
    np.testing.assert_allclose(np.hypot(points[:, 1], points[:, 2]), 1.0)
    assert np.all(normals[:, 0] == 0)
    box = Interval("x", 0, 1) * Parameter("nu", 0.1, 1.0)
    points, normals = box.sample_boundary(40)
    assert set(np.unique(points[:, 0])) == {0.0, 1.0} and np.all(normals[:, 1] == 0)
    assert box.parameters == ("nu",) and box.space == ("x",)


def test_point_cloud():
    rng = np.random.default_rng(0)
    interior = rng.uniform(-1, 1, size=(500, 2))
    interior = interior[np.hypot(*interior.T) < 1]
    angle = np.linspace(0, 2 * np.pi, 100, endpoint=False)
    boundary = np.stack([np.cos(angle), np.sin(angle)], axis=1)
    labels = np.where(boundary[:, 0] > 0, "right", "left")
    cloud = PointCloud(interior, boundary, normals=boundary, labels=labels)
    assert cloud.coords == ("x", "y") and cloud.boundary_names == ("right", "left")
    picked = cloud.sample_interior(50, seed=1)
    assert len(np.unique(picked, axis=0)) == 50 and cloud.contains(picked).all()
    points, normals = cloud.sample_boundary(20, where="right")
    assert np.all(points[:, 0] > 0) and np.allclose(points, normals)
    assert cloud.contains(np.array([[0.0, 0.0]]))[0] and not cloud.contains(np.array([[3.0, 3.0]]))[0]
    with pytest.raises(ValueError, match="has 100"):
        cloud.sample_boundary(101)
    domain = cloud * TimeDomain("t", 0, 1)
    points, normals = domain.sample_boundary(10)
    assert points.shape == (10, 3) and np.all(normals[:, 2] == 0)
    assert domain.sample_interior(10).shape == (10, 3)


DISTANCE_SHAPES = ["disk", "ellipse", "lshape", "lshape_clockwise", "triangle", "ball", "plate", "lens", "lshape_csg"]


@pytest.mark.parametrize("name", DISTANCE_SHAPES)
def test_distance_zero_on_boundary_positive_inside_unit_gradient(name):
    shape = SHAPES[name]
    points, normals = shape.sample_boundary(200, seed=7)
    assert np.abs(shape.distance(tf.constant(points)).numpy()).max() < 1e-6
    interior = shape.sample_interior(300, seed=8)
    assert np.all(shape.distance(tf.constant(interior)).numpy() > 0)
    # just inside the boundary, away from corners: |grad phi| = 1 and grad phi = -normal
    near = tf.constant(points - 1e-4 * normals)
    with tf.GradientTape() as tape:
        tape.watch(near)
        phi = shape.distance(near)
    gradient = tape.gradient(phi, near).numpy()
    distances = np.abs(shape.distance(tf.constant(points)).numpy())
    assert np.all(distances < 1e-6)
    good = np.median(np.abs(np.linalg.norm(gradient, axis=1) - 1))
    assert good < 1e-2
    assert np.median(np.sum(gradient * -normals, axis=1)) > 0.99


def test_distance_where_selects_pieces_and_rejects_unions():
    points, _ = PLATE.sample_boundary(100, where="outer", seed=0)
    holes, _ = PLATE.sample_boundary(100, where="circles", seed=0)
    phi = PLATE.distance(tf.constant(points), where="outer").numpy()
    assert np.abs(phi).max() < 1e-6 and PLATE.distance(tf.constant(holes), where="outer").numpy().min() > 0.05
    hole = PLATE.distance(tf.constant(holes), where=HOLES[0]).numpy()
    assert np.sum(np.abs(hole) < 1e-9) == np.sum(np.linalg.norm(holes - HOLES[0].center, axis=1) < 0.1 + 1e-9)
    with pytest.raises(ValueError, match="passes through the interior"):
        UNION.distance(tf.constant(points))
    with pytest.raises(ValueError, match="predicate"):
        PLATE.distance(tf.constant(points), where=lambda x: x["x"] > 0)
    for mode in ("graph", "xla"):
        compiled = in_mode(lambda x: PLATE.distance(x, where="circles"), mode)(tf.constant(points))
        np.testing.assert_allclose(compiled.numpy(), PLATE.distance(tf.constant(points), where="circles").numpy())
    timed = Disk((0, 0), 1.0) * TimeDomain("t", 0, 1)
    value = timed.distance(tf.constant([[0.0, 0.0, 0.3]])).numpy()
    np.testing.assert_allclose(value, 0.5)


@pytest.mark.parametrize("mode", ["eager", "graph", "xla"])
def test_distance_third_derivative_in_every_mode(mode):
    """d^3 phi / dx^3 along a line, against a finite difference of the second derivative (float64)."""
    domain = Triangle((-1, -1), (1, -1), (-1, 1)) * TimeDomain("t", 0, 1)

    def third(x):
        with tf.GradientTape() as t3:
            t3.watch(x)
            with tf.GradientTape() as t2:
                t2.watch(x)
                with tf.GradientTape() as t1:
                    t1.watch(x)
                    phi = domain.distance(x)
                first = t1.gradient(phi, x)[:, 0]
            second = t2.gradient(first, x)[:, 0]
        return second, t3.gradient(second, x)[:, 0]

    x = np.array([[-0.5, 0.3, 0.5], [0.0, -0.6, 0.1], [-0.2, -0.2, 0.9]])
    h = 1e-4
    second, value = in_mode(third, mode)(tf.constant(np.concatenate([x, x + [h, 0, 0], x - [h, 0, 0]])))
    second, value = second.numpy(), value.numpy()
    np.testing.assert_allclose(value[:3], (second[3:6] - second[6:]) / (2 * h), rtol=1e-4, atol=1e-6)
    assert np.all(np.isfinite(value))


def test_distance_float32_and_box_faces():
    box = Rectangle(("x", "y"), (0, 0), (2, 1))
    value = box.distance(tf.constant([[1.0, 0.5]], tf.float32))
    assert value.dtype == tf.float32 and 0.3 < float(value[0]) <= 0.5
    cube = Hypercube([0, 0, 0], [1, 1, 1])
    points, _ = cube.sample_boundary(50)
    assert np.abs(cube.distance(tf.constant(points)).numpy()).max() < 1e-12
    interval = Interval("x", -1, 1)
    np.testing.assert_allclose(interval.distance(tf.constant([[0.0]])).numpy(), [np.sqrt(0.5)])


def test_errors_are_clear():
    for bad, match in [
        ([(0, 0), (1, 0)], "3 or more"),
        ([(0, 0), (1, 0), (1, 1), (0, 0), (0, 1)], "repeat"),
        ([(0, 0), (1, 0), (2, 0)], "overlap"),
        ([(0, 0), (1, 1), (1, 0), (0, 1)], "cross"),
        ([(0, 0), (2, 0), (1, 0), (1, 1)], "not simple"),
    ]:
        with pytest.raises(ValueError, match=match):
            Polygon(bad)
    empty = Disk((0, 0), 1.0) - Rectangle(("x", "y"), (-2, -2), (2, 2))
    with pytest.raises(ValueError, match="empty or too small"):
        empty.sample_interior(10)
    with pytest.raises(ValueError, match="intersection .* is empty"):
        Disk((0, 0), 1.0) & Disk((5, 0), 1.0)
    with pytest.raises(ValueError, match=r"not a boundary piece.*'outer'.*'circles'"):
        PLATE.sample_boundary(10, where="inlet")
    with pytest.raises(ValueError, match="has no points"):
        PLATE.sample_boundary(10, where=lambda x: x["x"] > 5)
    with pytest.raises(ValueError, match=r"shape \(N, 2\)"):
        PLATE.contains(np.zeros((3, 3)))
    with pytest.raises(ValueError, match="must match"):
        Disk((0, 0), 1.0) | Disk((0, 0), 1.0, names=("u", "v"))
    with pytest.raises(ValueError, match="without time"):
        (Disk((0, 0), 1.0) * TimeDomain("t", 0, 1)) - Disk((0, 0), 0.5)
    with pytest.raises(ValueError, match="TimeDomain"):
        Disk((0, 0), 1.0) * Interval("z", 0, 1)
    with pytest.raises(ValueError, match="no time coordinate"):
        Disk((0, 0), 1.0).sample_initial(4)
    with pytest.raises(ValueError, match="radius"):
        Disk((0, 0), -1.0)
    with pytest.raises(ValueError, match="analytic"):
        PointCloud(np.zeros((3, 2)) + np.arange(3)[:, None]).distance(tf.zeros((1, 2)))
    assert isinstance(Box({"x": (0, 1)}), type(Interval("x", 0, 1)))


def test_exact_maps_are_uniform_in_volume_and_area():
    count = 4096
    # sphere surface: z is uniform on [-1, 1] (Archimedes), and normals are the radial directions
    points, normals = Ball((0, 0, 0), 2.0).sample_boundary(count, seed=0)
    np.testing.assert_allclose(normals, points / 2.0, atol=1e-12)
    assert binomial_ok((points[:, 2] > 1.0).sum(), count, 0.25)
    # interior of a 5-ball: P(|x| < r/2) = 2^-5; of a disk: 1/4 (every method)
    inner = np.linalg.norm(Hypersphere(np.zeros(5), 1.0).sample_interior(count, seed=1), axis=1) < 0.5
    assert binomial_ok(inner.sum(), count, 0.5**5)
    for method in ("random", "lhs", "sobol"):
        points = Disk((1, 1), 1.0).sample_interior(count, method=method, seed=2)
        assert binomial_ok((np.linalg.norm(points - 1, axis=1) < 0.5).sum(), count, 0.25)
    # the 5-sphere's surface: each coordinate's sign is balanced
    points, normals = Hypersphere(np.zeros(5), 1.0).sample_boundary(count, seed=3)
    np.testing.assert_allclose(np.linalg.norm(points, axis=1), 1.0)
    assert all(binomial_ok((points[:, j] > 0).sum(), count, 0.5) for j in range(5))


@pytest.mark.parametrize("method", ["sobol", "random", "lhs"])
def test_boundary_points_split_between_faces_in_proportion(method):
    # two points on an interval: one at each end (a random choice of faces could put both on one)
    for domain in (Interval("x", -1, 1), Interval("x", 0, 1) * TimeDomain("t", 0, 1)):
        for seed in range(5):
            points, normals = domain.sample_boundary(2, method=method, seed=seed)
            assert sorted(normals[:, 0]) == [-1.0, 1.0]
    # a rectangle 2 x 1: its sides take 1/3 and its ends 1/6 of the points each, within a point
    counts = [0, 0, 0, 0]
    rectangle = Rectangle(("x", "y"), (0, 0), (2, 1))
    for count in (6, 7, 30, 101):
        points, normals = rectangle.sample_boundary(count, method=method, seed=1)
        counts = [np.sum(normals[:, 0] == -1), np.sum(normals[:, 0] == 1), np.sum(normals[:, 1] == -1)]
        counts.append(np.sum(normals[:, 1] == 1))
        np.testing.assert_allclose(counts, np.array([1, 1, 2, 2]) * count / 6, atol=1.5)
    # the general path (pieces of a polygon, drawn in batches) splits the same way
    points, normals = Triangle((0, 0), (1, 0), (0, 1)).sample_boundary(3, method=method)
    assert len(np.unique(normals.round(6), axis=0)) == 3


def test_time_is_independent_of_position_in_a_product():
    # the time column and the spatial part come from different Sobol dimensions: every
    # half of the disk is sampled at early and at late times alike
    points = (Disk((0, 0), 1.0) * TimeDomain("t", 0, 1)).sample_interior(1024, seed=0)
    counts = np.histogram2d(points[:, 1] > 0, points[:, 2] > 0.5, bins=2)[0]
    np.testing.assert_allclose(counts, 256, atol=30)


def test_csg_distance_refuses_box_faces_that_are_whole_planes():
    # a 3-D box's face functions are planes: subtracted from a ball they vanished at inside points such as
    # (0.5, -0.5, 0) and were negative at the centre
    ball = Ball((0, 0, 0), 1.0)
    domain = ball - Box({"x": (0.5, 2.0), "y": (0.5, 2.0), "z": (0.5, 2.0)})
    x = tf.constant([[0.5, -0.5, 0.0], [0.0, 0.0, 0.0]])
    with pytest.raises(ValueError, match="3-D box operand.*where="):
        domain.distance(x)
    np.testing.assert_allclose(domain.distance(x, where=ball).numpy(), [0.25, 0.5])
    with pytest.raises(ValueError, match="1-D box operand"):
        (Interval("x", 0, 3) - Interval("x", 1, 2)).distance(tf.constant([[0.5]]))


def test_csg_distance_is_positive_inside_a_hole_in_a_hole_and_disjoint_disks():
    # the R-equivalence of signed factors was negative at these inside points (its sign is the product of theirs)
    ring_and_island = Disk((0, 0), 1.0) - (Disk((0, 0), 0.6) - Disk((0, 0), 0.3))
    x = np.array([[0.8, 0.0], [0.1, 0.0], [0.0, 0.2]])
    assert ring_and_island.contains(x).all()
    assert np.all(ring_and_island.distance(tf.constant(x)).numpy() > 0)
    pair = Disk((0, 0), 1.0) | Disk((3, 0), 1.0)
    values = in_mode(lambda x: pair.distance(x), "xla")(tf.constant([[0.5, 0.0], [3.2, 0.1], [5.0, 0.0]]))
    assert np.all(values.numpy()[:2] > 0) and values.numpy()[2] < 0, "negative outside"


def test_boundary_names_are_qualified_by_shape_and_ambiguous_names_refused():
    """Issue 23.1: on a plate with a round and a square hole, "left" also named the square hole's left face."""
    unnamed = (
        Rectangle(("x", "y"), (0, 0), (2, 1)) - Disk((0.5, 0.5), 0.2) - Rectangle(("x", "y"), (1.3, 0.4), (1.5, 0.6))
    )
    for face in ("left", "right", "top", "bottom"):
        with pytest.raises(ValueError, match=rf"where='{face}' is ambiguous.*'rectangle1.{face}', 'rectangle2.{face}'"):
            unnamed.sample_boundary(16, where=face)
    left, normals = unnamed.sample_boundary(64, where="rectangle1.left")
    assert np.all(left[:, 0] == 0.0) and np.all(normals[:, 0] == -1.0)
    square_left, normals = unnamed.sample_boundary(64, where="rectangle2.left")
    assert np.all(square_left[:, 0] == 1.3) and np.all(normals[:, 0] == 1.0), "into the hole"
    circle, _ = unnamed.sample_boundary(64, where="disk")
    np.testing.assert_allclose(np.hypot(circle[:, 0] - 0.5, circle[:, 1] - 0.5), 0.2)
    # names given to the operands qualify the pieces; a list selects several
    plate = (
        Rectangle(("x", "y"), (0, 0), (2, 1), name="plate")
        - Disk((0.5, 0.5), 0.2, name="hole")
        - Rectangle(("x", "y"), (1.3, 0.4), (1.5, 0.6), name="square")
    )
    assert {"plate.left", "square.left", "hole", "square", "plate"} <= set(plate.boundary_names)
    assert "left" not in plate.boundary_names
    ends, _ = plate.sample_boundary(200, where=["plate.left", "plate.right"], seed=1)
    assert set(np.unique(ends[:, 0])) == {0.0, 2.0} and abs(np.mean(ends[:, 0] == 0.0) - 0.5) < 0.1
    holes, _ = plate.sample_boundary(300, where=("hole", "square"), seed=2)
    on_circle = np.isclose(np.hypot(holes[:, 0] - 0.5, holes[:, 1] - 0.5), 0.2)
    on_square = (holes[:, 0] >= 1.3 - 1e-12) & (holes[:, 0] <= 1.5 + 1e-12)
    assert np.all(on_circle | on_square) and on_circle.any() and on_square.any()
    # a condition's where= goes the same way, and the distance function takes the names and lists too
    with pytest.raises(ValueError, match=r"Dirichlet 'inlet'.*ambiguous.*\['plate.left', 'square.left'\]"):
        pinn.Dirichlet(1.0, count=16, where="left", name="inlet").sample(plate, "sobol", 0)
    inlet = pinn.Dirichlet(1.0, count=64, where="plate.left", name="inlet").sample(plate, "sobol", 0)
    assert np.all(inlet["points"][:, 0] == 0.0)
    x = tf.constant(np.array([[0.0, 0.3], [1.3, 0.5], [2.0, 0.5]]))
    phi = plate.distance(x, where=["plate.left", "square.left"]).numpy()
    assert abs(phi[0]) < 1e-6 and abs(phi[1]) < 1e-6 and phi[2] > 0.1
    with pytest.raises(ValueError, match="ambiguous"):
        plate.distance(x, where="left")
    # an unambiguous bare name keeps working: one shape's faces, and a name shared on purpose
    assert np.all(SQUARE.sample_boundary(8, where="left")[0][:, 0] == -0.5)
    assert np.all(
        (Rectangle(("x", "y"), (0, 0), (1, 1)) - Disk((0.5, 0.5), 0.2)).sample_boundary(8, where="left")[0][:, 0] == 0
    )
    assert len(PLATE.sample_boundary(8, where="circles")[0]) == 8
    with pytest.raises(ValueError, match="list of piece names"):
        plate.sample_boundary(8, where=["plate.left", 3])
