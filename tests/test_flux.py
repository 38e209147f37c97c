"""hodiff.pinn.flux: fluxes through cuts and closed polygons against closed forms, and bad input."""

import numpy as np
import pytest
import tensorflow as tf

from hodiff import pinn
from hodiff.pinn.flux import gradient_field, polygon_flux, segment_flux

PLATE = pinn.Rectangle(("x", "y"), (0, 0), (2, 1)) - pinn.Disk((0.5, 0.5), 0.2)


def grad_xy(points):  # grad (x y) = (y, x): harmonic, so no sources
    return np.stack([points[:, 1], points[:, 0]], axis=1)


def test_segment_flux_of_a_harmonic_field_matches_its_closed_form():
    # x = a: integral of q_x = y over [0, 1]: 1/2, whatever a
    for a in (0.1, 1.0, 1.9):
        assert segment_flux(grad_xy, (a, 0.0), (a, 1.0)) == pytest.approx(0.5, abs=1e-13)
    # reversed: the normal turns over, and so does the flux
    assert segment_flux(grad_xy, (1.0, 1.0), (1.0, 0.0)) == pytest.approx(-0.5, abs=1e-13)
    # a slanted cut from (0, 0) to (1, 1), normal (1, -1)/sqrt 2: integral (y - x)/sqrt 2 ds = 0
    assert segment_flux(grad_xy, (0.0, 0.0), (1.0, 1.0)) == pytest.approx(0.0, abs=1e-13)
    # x = 0.5 crosses the disk on y in (0.3, 0.7): integral of y over [0, 0.3] and [0.7, 1] = 0.3
    assert segment_flux(grad_xy, (0.5, 0.0), (0.5, 1.0), domain=PLATE) == pytest.approx(
        0.3, abs=1e-8
    )  # ends to contains() tolerance
    # x = 0.6 crosses it on 0.5 +- sqrt(0.04 - 0.01)
    half = np.sqrt(0.03)
    expected = 0.5 - ((0.5 + half) ** 2 - (0.5 - half) ** 2) / 2
    assert segment_flux(grad_xy, (0.6, 0.0), (0.6, 1.0), domain=PLATE) == pytest.approx(expected, abs=1e-8)


def test_polygon_flux_is_zero_for_a_harmonic_field_and_the_area_for_a_unit_source():
    square = [(0.1, 0.2), (0.9, 0.2), (0.9, 0.8), (0.1, 0.8)]
    assert polygon_flux(grad_xy, square) == pytest.approx(0.0, abs=1e-13)
    source = lambda p: np.stack([p[:, 0], np.zeros(len(p))], axis=1)  # noqa: E731  div = 1
    triangle = [(0.0, 0.0), (2.0, 0.0), (0.0, 1.0)]
    assert polygon_flux(source, triangle) == pytest.approx(1.0, abs=1e-13)
    with pytest.raises(ValueError, match="clockwise"):
        polygon_flux(source, triangle[::-1])
    with pytest.raises(ValueError, match="3 or more"):
        polygon_flux(source, triangle[:2])


def test_gradient_field_of_a_solution_and_of_a_trainer():
    solution = lambda x: tf.stack([x[:, 0] ** 2 - x[:, 1] ** 2, x[:, 0] * x[:, 1]], axis=1)  # noqa: E731
    points = np.array([[0.5, 0.25], [1.0, -2.0]])
    np.testing.assert_allclose(gradient_field(solution)(points), 2 * points * [1, -1], atol=1e-12)
    np.testing.assert_allclose(gradient_field(solution, field=1)(points), points[:, ::-1], atol=1e-12)
    # the heat flux of u = 1 - x / 2 through x = 1 is 1/2 per unit height
    heat = lambda p: -gradient_field(solution)(p) / 4 - [[0.5, 0.0]] + gradient_field(solution)(p) / 4  # noqa: E731
    assert segment_flux(heat, (1.0, 0.0), (1.0, 1.0)) == pytest.approx(-0.5, abs=1e-12)
    with pytest.raises(ValueError, match="field='v' is not a field"):
        gradient_field(solution, field="v")


def test_segment_flux_rejects_bad_input():
    with pytest.raises(ValueError, match="same point"):
        segment_flux(grad_xy, (0.0, 0.0), (0.0, 0.0))
    with pytest.raises(ValueError, match="finite 2-D points"):
        segment_flux(grad_xy, (0.0, 0.0, 0.0), (1.0, 1.0))
    with pytest.raises(ValueError, match="vectors of the same shape"):
        segment_flux(lambda p: p[:, 0], (0.0, 0.0), (1.0, 0.0))
