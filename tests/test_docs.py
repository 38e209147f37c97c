"""The docs site builds strictly (every page, every API reference entry). Code blocks in docs/
and in docstrings are executed by pytest-markdown-docs as tests of their own."""

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_mkdocs_build_strict_from_another_directory(tmp_path):
    """The build finds its snippets (the changelog) and sources from any working directory."""
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "mkdocs",
            "build",
            "--strict",
            "-f",
            str(ROOT / "mkdocs.yml"),
            "--site-dir",
            str(tmp_path / "site"),
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert (tmp_path / "site" / "api" / "index.html").exists()


def test_every_docs_page_is_in_the_nav():
    nav = (ROOT / "mkdocs.yml").read_text()
    for page in (ROOT / "docs").glob("*.md"):
        assert page.name in nav, f"{page.name} is not in mkdocs.yml's nav"


def test_demo_command_line_runs_end_to_end(tmp_path):
    """`make demo` runs `python -m pinn_examples burgers`; here with the fast preset."""
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pinn_examples",
            "burgers",
            "--preset",
            "fast",
            "--output",
            str(tmp_path),
            "--no-progress",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "burgers: relative L2 error" in result.stdout and "L-BFGS stopped after" in result.stdout
    assert (tmp_path / "metrics.json").exists() and (tmp_path / "field.png").exists()


def test_laplacian_check_example_agrees_with_scipy():
    result = subprocess.run(
        [sys.executable, "-m", "pinn_examples", "laplacian_check", "--points", "4"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "OK: exact methods agree with scipy" in result.stdout
