"""The marched examples (a SeriesRestart: one compiled step for every window) at their default settings: the one
problem of every window (TimeWindows.moving), traced in a graph as the training step traces it, gives each window's
own problem's solution and time derivative."""

import importlib

import numpy as np
import pytest
import tensorflow as tf

from hodiff import pinn

MARCHED = ("kuramoto_sivashinsky", "gray_scott", "ns2d_lt", "heat2d_lt")


@pytest.mark.parametrize("name", MARCHED)
def test_the_moving_problem_traced_in_a_graph_is_each_window_s(name):
    example = importlib.import_module(f"pinn_examples.{name}").EXAMPLE
    settings = example.presets["default"]
    problem, model = example.build(settings)
    windows = example.windows(settings)
    assert windows.one_graph
    moving, state = windows.moving(problem)
    solution = moving.solution(model)

    @tf.function(autograph=False)
    def traced(points):  # the transforms see the window's start as a tensor here, as in the training step
        with tf.GradientTape() as tape:
            tape.watch(points)
            values = solution(points)
        return values, tape.gradient(values, points)

    rng = np.random.default_rng(0)
    previous = None
    for k in range(2):
        state.enter(k, solution)
        if k:
            model.set_weights([w + 0.01 * rng.standard_normal(w.shape).astype(w.dtype) for w in model.get_weights()])
        window = windows.problem(problem, k, previous)
        points = tf.constant(window.domain.sample_interior(32, seed=k), model.weights[0].dtype)
        with tf.GradientTape() as tape:
            tape.watch(points)
            expected = window.solution(model)(points)
        tolerance = 1e-10 if model.weights[0].dtype == "float64" else 2e-5
        values, gradient = traced(points)
        np.testing.assert_allclose(values.numpy(), expected.numpy(), rtol=tolerance, atol=tolerance)
        expected_gradient = tape.gradient(expected, points).numpy()
        scale = np.abs(expected_gradient).max()
        np.testing.assert_allclose(gradient.numpy(), expected_gradient, atol=tolerance * scale)
        previous = window.solution(pinn.windows.freeze(model))
