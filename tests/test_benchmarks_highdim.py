"""Smoke tests of ``python -m benchmarks highdim``: the routes it times compute the same operator.

Tiny networks and dimensions; values only, never timings.
"""

import sys
from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/ is not an installed package
from benchmarks import highdim  # noqa: E402
from hodiff.jets import stde  # noqa: E402

D, SAMPLES = 6, 3


@pytest.fixture(scope="module")
def setting():
    model = highdim.mlp(D, width=16, depth=2)
    x, f = highdim.problem_data(D, n=5)
    return model, x, f


@pytest.mark.parametrize("jit_compile", [False, True])
def test_routes_with_the_same_seed_compute_the_same_estimate(setting, jit_compile):
    """STDE sparse and SDGD draw the same coordinates, STDE Rademacher and Hutchinson the same probes."""
    model, x, _ = setting
    seed = tf.constant(7, tf.int64)
    values = {
        name: tf.function(highdim.laplacian_route(name, model, SAMPLES), jit_compile=jit_compile)(x, seed).numpy()
        for name in highdim.STOCHASTIC + highdim.TIMED_ONLY
    }
    np.testing.assert_allclose(values["sdgd_nested"], values["stde_sparse"], rtol=1e-4, atol=1e-5)
    np.testing.assert_array_equal(values["sdgd_nested_sorted_draw"], values["sdgd_nested"])  # the same draw
    np.testing.assert_allclose(values["hutchinson_hvp"], values["stde_rademacher"], rtol=1e-4, atol=1e-5)
    assert not np.allclose(values["stde_sparse"], values["stde_rademacher"])  # two different estimators


def test_all_coordinates_give_the_exact_laplacian(setting):
    model, x, _ = setting
    exact = stde.exact(model, x, stde.laplacian_terms(), method="nested").numpy()
    seed = tf.constant(3, tf.int64)
    for name in ("stde_sparse", "sdgd_nested", "forward_laplacian"):
        value = tf.function(highdim.laplacian_route(name, model, D))(x, seed).numpy()
        np.testing.assert_allclose(value, exact, rtol=1e-4, atol=1e-5, err_msg=name)


def test_training_steps_agree_and_update_the_weights(setting):
    """Equal estimators give equal losses step after step (XLA), and the weights move."""
    _, x, f = setting
    losses = {}
    for name in ("stde_sparse", "sdgd_nested"):
        model = highdim.mlp(D, width=16, depth=2)
        before = model.trainable_variables[0].numpy().copy()
        step = highdim.training_step(name, model, SAMPLES)
        losses[name] = [float(step(x, f)) for _ in range(2)]
        assert not np.array_equal(model.trainable_variables[0].numpy(), before)
    np.testing.assert_allclose(losses["sdgd_nested"], losses["stde_sparse"], rtol=1e-4)
    assert losses["stde_sparse"][0] != losses["stde_sparse"][1]  # each step draws afresh


def test_estimator_statistics_are_unbiased_and_equal_for_equal_estimators(setting):
    model, x, _ = setting
    stats = highdim.estimator_statistics(model, x[:2], SAMPLES, replicas=64, chunk=32)
    assert stats["sdgd_nested"]["variance"] == pytest.approx(stats["stde_sparse"]["variance"], rel=1e-3)
    assert stats["hutchinson_hvp"]["variance"] == pytest.approx(stats["stde_rademacher"]["variance"], rel=1e-3)
    for name in highdim.STOCHASTIC:
        assert stats[name]["variance"] > 0.0
        assert stats[name]["max_deviation_in_stderr"] < 5.0, name  # mean within 5 stderr of the exact value
        assert stats[name]["draws_per_point"] == 64


def test_biharmonic_routes_agree():
    model = highdim.mlp(2, width=8, depth=2, dtype="float64")
    x = highdim.problem_data(2, n=4, dtype=tf.float64)[0]
    values = {name: np.reshape(fn(x).numpy(), -1) for name, fn in highdim.biharmonic_routes(model).items()}
    for name, value in values.items():
        np.testing.assert_allclose(value, values["jets"], rtol=1e-8, err_msg=name)


def test_exact_route_is_skipped_with_a_memory_estimate_at_large_d():
    assert highdim.memory_estimate_bytes("forward_laplacian", 10_000) > highdim.MEMORY_BUDGET_BYTES
    assert highdim.memory_estimate_bytes("forward_laplacian", 1_000) < highdim.MEMORY_BUDGET_BYTES
    assert highdim.memory_estimate_bytes("stde_sparse", 10_000) < highdim.MEMORY_BUDGET_BYTES


def test_markdown_reports_skips_ratios_and_targets():
    row = {
        "D": 1000,
        "step_seconds": {"stde_sparse": 0.01, "stde_rademacher": 0.02, "sdgd_nested": 0.12, "hutchinson_hvp": 0.1},
        "step_memory_mib": {"stde_sparse": 10.0},
        "skipped": {"forward_laplacian": "needs at least 40 GiB"},
        "estimator": {name: {"variance": 2.0} for name in highdim.STOCHASTIC},
    }
    biharmonic = {
        "d": 8,
        "operator_seconds": {"jets": 0.01, "nested_laplacian_of_laplacian": 0.05, "nested_jets": 0.02},
        "max_relative_difference_vs_jets": {"jets": 0.0, "nested_jets": 1e-7},
    }
    results = {"highdim": [row], "biharmonic": [biharmonic]}
    results["targets"] = highdim.targets(results)
    assert results["targets"]["STDE >= 10x SDGD at D=1000"] == "12.0x (met)"
    assert "2.0x (not met)" in results["targets"]["biharmonic jets >= 3x four nested tapes (jets) at d=8"]
    table = highdim.markdown(results)
    assert "skipped: needs at least 40 GiB" in table and "| 12.0x |" in table
