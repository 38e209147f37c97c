"""An example module is a statement, presets and a reference on public names only: a copy of it outside the
package runs with ``python FILE`` as ``python -m pinn_examples NAME`` runs it."""

import ast
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import pinn_examples

PACKAGE = Path(pinn_examples.__file__).parent


def private_imports(path):
    """The private names (a leading underscore) that ``path`` imports from other modules."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            module = node.module or ""
            if module == "__future__":
                continue
            found += [f"{module}.{a.name}" for a in node.names if a.name.startswith("_")]
            found += [module] if any(part.startswith("_") for part in module.split(".")) else []
        elif isinstance(node, ast.Import):
            found += [a.name for a in node.names if any(part.startswith("_") for part in a.name.split("."))]
    return found


@pytest.mark.parametrize("name", pinn_examples.EXAMPLES)
def test_every_example_imports_public_names_only(name):
    assert private_imports(PACKAGE / f"{name}.py") == []


@pytest.mark.parametrize(
    "name, flags",
    [
        (
            "poisson2d_cg",
            ["--adam-steps", "20", "--steps-per-call", "10", "--lbfgs-iterations", "5", "--interior", "64"],
        ),
        pytest.param("gray_scott", [], marks=pytest.mark.slow),  # a minute: two windows and the spectral reference
    ],
)
def test_a_copied_example_runs_as_a_file(name, flags, tmp_path):
    copy = tmp_path / "mine" / f"{name}.py"
    copy.parent.mkdir()
    shutil.copy(PACKAGE / f"{name}.py", copy)
    output = tmp_path / "run"
    command = [sys.executable, str(copy), "--preset", "fast", *flags, "--no-progress", "--output", str(output)]
    done = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    metrics = json.loads((output / "metrics.json").read_text())
    assert metrics["example"] == name and metrics["preset"] == "fast" and metrics["relative_l2_error"] < 10
