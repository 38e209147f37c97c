"""``benchmarks/gpu_check.sh --dry-run`` on the CPU, which runs ``python -m benchmarks meta --quick``
(the CNN part) and accuracy tests as the GPU check does, and writes its JSON and table."""

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).parent.parent


def test_gpu_check_dry_run_runs_the_quick_cnn_benchmark_and_the_tests(tmp_path):
    command = [
        str(ROOT / "benchmarks" / "gpu_check.sh"),
        "--dry-run",
        "--out",
        str(tmp_path),
        "--suites",
        "meta",
        "--suite-args",
        "--part cnn --cnn-tasks 2 --cnn-filters 8 --cnn-configs 1 --no-cnn-peers",
        "--tests",
        "tests/test_meta_tasks.py::test_sampling_is_a_pure_function_of_the_seed",
    ]
    done = subprocess.run(command, env={**os.environ, "PYTHON": sys.executable}, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads((tmp_path / "gpu_check.json").read_text())
    assert report["dry_run"] and report["device"] == "/CPU:0"
    assert report["environment"]["NVIDIA_TF32_OVERRIDE"] == "0"
    assert [step["name"] for step in report["steps"]] == ["benchmarks meta", "accuracy tests (TF32 off)"]
    assert report["steps"][1]["tests"] == {"passed": 1, "failed": 0, "errors": 0, "skipped": 0}
    assert "--device /CPU:0" in report["steps"][0]["command"] and "--quick" in report["steps"][0]["command"]
    rows = report["suites"]["meta"]["cnn"]["configurations"]
    assert list(rows) == ["5-way 1-shot, 1 step, second order"]
    assert rows["5-way 1-shot, 1 step, second order"]["iterations_per_second"]["hodiff"] > 0
    table = (tmp_path / "gpu_check.md").read_text()
    assert "| benchmarks meta | ok |" in table and "| 5-way 1-shot, 1 step, second order |" in table


def test_gpu_check_refuses_unknown_suites(tmp_path):
    done = subprocess.run(
        [str(ROOT / "benchmarks" / "gpu_check.sh"), "--dry-run", "--out", str(tmp_path), "--suites", "nope"],
        env={**os.environ, "PYTHON": sys.executable},
        capture_output=True,
        text=True,
    )
    assert done.returncode == 2 and "--suites" in done.stderr
