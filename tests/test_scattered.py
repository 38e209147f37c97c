"""ScatteredExample: an example scored at fixed points, whose grid reference is its picture's slice."""

import dataclasses

import numpy as np
import pytest

from pinn_examples import poisson_nd, scattered


def test_the_grid_reference_of_a_scattered_example_is_its_picture():
    axes, values = poisson_nd.EXAMPLE.reference()
    picture_axes, points, picture_values = poisson_nd.picture()
    assert list(axes) == list(picture_axes) and set(values) == {"u"}
    shape = tuple(len(axis) for axis in axes.values())
    assert values["u"].shape == shape and len(points) == np.prod(shape)
    np.testing.assert_array_equal(values["u"], picture_values["u"])


def test_a_scattered_example_refuses_a_reference_of_its_own():
    own = dataclasses.replace(poisson_nd.EXAMPLE, reference=lambda: ({}, {}))
    with pytest.raises(ValueError, match=r"'poisson_nd'.*leave Example\(reference=...\) out"):
        scattered.ScatteredExample(own, poisson_nd.test_set, poisson_nd.picture)
