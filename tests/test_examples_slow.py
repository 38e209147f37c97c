"""Full accuracy runs of the examples (``make slow``); their numbers are recorded in docs/examples.md."""

import json

import pytest

from pinn_examples.__main__ import main

TARGETS = [
    ("burgers", [], 5e-3),
    ("heat", [], 1e-3),
    ("poisson", [], 1e-3),
    ("helmholtz", [], 1e-2),
    ("burgers_inverse", [], 1e-2),
    pytest.param("burgers", ["--preset", "paper"], 5e-4, id="burgers-paper"),
    ("allen_cahn", [], 1e-2),
    ("laplace_holes", [], 5e-3),
    ("poisson_lshape", [], 1e-2),
    ("wave", [], 1e-2),
    ("kovasznay", [], 1e-3),
    ("lid_driven_cavity", [], 2e-2),  # on (u, v, p); 1e-2 on (u, v) below
    ("kdv", [], 2e-2),
    ("insulated_plate", [], 1e-2),
]


@pytest.mark.slow
@pytest.mark.parametrize("name, flags, target", TARGETS)
def test_default_preset_reaches_its_target(name, flags, target, tmp_path):
    assert main([name, *flags, "--output", str(tmp_path), "--no-progress"]) == 0
    metrics = json.loads((tmp_path / "metrics.json").read_text())
    assert metrics["relative_l2_error"] <= target
    if name == "burgers_inverse":
        assert metrics["nu_relative_error"] <= 0.01
    if name == "lid_driven_cavity":
        assert metrics["relative_l2_error_uv"] <= 1e-2
    if name == "insulated_plate":  # the heat flux through every cut is the finite elements' flux
        assert metrics["flux_deviation"] <= 0.02


@pytest.mark.slow
def test_maml_pinn_adapts_at_least_three_times_faster(tmp_path):
    assert main(["maml_pinn", "--output", str(tmp_path)]) == 0
    assert json.loads((tmp_path / "metrics.json").read_text())["speedup"] >= 3.0
