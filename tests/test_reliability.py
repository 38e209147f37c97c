"""Runs that cannot be fooled (issue 20): safe loading, one writer per run, provenance, crash-safe
Keras backups, readable errors. Each test here failed on the code before its fix."""

import json
import zipfile

import keras
import numpy as np
import pytest
import tensorflow as tf

from hodiff import pinn
from hodiff.pinn.saving import load_solution, save_solution

LINE = pinn.Interval("x", 0.0, 1.0)
POINTS = np.linspace(0.0, 1.0, 7)[:, None]


@keras.saving.register_keras_serializable(package="tests_reliability")
def through_points(x, outputs):
    """Reads the whole point tensor (``x.points``), as a high-dimensional transform does."""
    return tf.reduce_sum(x.points, axis=1, keepdims=True) * (1.0 - x["x"][:, None]) * outputs


def poisson(transform):
    return pinn.Problem(LINE, needs=("u_xx",), residual=lambda d, x, p: d["u_xx"] + 1.0, output_transform=transform)


def tamper(path, reference):
    """Rewrites the output transform's reference in a saved .keras file (a zip holding config.json)."""
    with zipfile.ZipFile(path) as archive:
        members = {name: archive.read(name) for name in archive.namelist()}
    config = json.loads(members["config.json"])

    def visit(node):
        if isinstance(node, dict):
            if node.get("class_name") == "OutputTransform":
                node["config"]["transform"] = reference
            for value in node.values():
                visit(value)
        elif isinstance(node, list):
            for value in node:
                visit(value)

    visit(config)
    members["config.json"] = json.dumps(config).encode()
    with zipfile.ZipFile(path, "w") as archive:
        for name, data in members.items():
            archive.writestr(name, data)


# ----------------------------------------------------------------------------- 1, 2: safe loading
@pytest.mark.parametrize(
    "reference",
    [
        {"module": "builtins", "name": "print"},
        {"module": "tests_reliability_evil_module", "name": "transform"},
        {"registered_name": "tests_reliability>not_registered"},
    ],
)
def test_loading_a_tampered_solution_refuses_what_it_names_before_importing(reference, tmp_path, monkeypatch):
    path = tmp_path / "solution.keras"
    save_solution(path, poisson(through_points), pinn.mlp(LINE, width=4, depth=1))
    tamper(path, reference)
    evil = tmp_path / "tests_reliability_evil_module.py"
    evil.write_text(
        f"open({str(tmp_path / 'imported')!r}, 'w').close()\ndef transform(x, outputs):\n    return outputs\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    called = []
    monkeypatch.setattr("builtins.print", lambda *a, **k: called.append(a))
    with pytest.raises(ValueError, match="load_solution: .*output transform") as info:
        load_solution(path)
    message = str(info.value)
    if "module" in reference:
        assert f"{reference['module']}.{reference['name']}" in message and "register_keras_serializable" in message
        assert "safe_mode=False" in message
    assert not (tmp_path / "imported").exists(), "the named module was imported (its code ran)"
    assert called == [], "the named function was called"


def test_a_transform_using_x_points_predicts_the_same_after_save_and_load(tmp_path):
    model = pinn.mlp(LINE, width=4, depth=1, dtype="float64")
    problem = poisson(through_points)
    path = tmp_path / "solution.keras"
    save_solution(path, problem, model)
    before = problem.solution(model)(tf.constant(POINTS)).numpy()
    np.testing.assert_allclose(load_solution(path)(POINTS).numpy(), before, rtol=1e-14, atol=0)
    assert np.abs(before).max() > 0
