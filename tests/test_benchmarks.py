"""Smoke tests of the benchmark harness: the report, the FLOP count, the suites' command lines.

Timings are never asserted; the suites themselves run under ``python -m benchmarks``.
"""

import json
import sys
from pathlib import Path

import pytest
import tensorflow as tf

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks import __main__ as cli  # noqa: E402
from benchmarks import report, timing  # noqa: E402


def test_matmul_flops_counts_every_dot_of_the_hlo():
    f = tf.function(lambda x, w: tf.reduce_sum(tf.tanh(x @ w) @ tf.transpose(w)), jit_compile=True)
    x, w = tf.ones((10, 3)), tf.ones((3, 4))
    assert timing.matmul_flops(f, x, w) == 2 * 10 * 3 * 4 + 2 * 10 * 4 * 3


def test_suite_arguments_take_a_device_and_extra_options():
    args = timing.suite_arguments(
        "x",
        "d",
        5,
        Path("o.json"),
        ["--device", "/CPU:0", "--quick", "--n", "3"],
        extra=lambda parser: parser.add_argument("--n", type=int),
    )
    assert (args.device, args.repeats, args.n) == ("/CPU:0", 2, 3)
    with timing.on_device(args.device):
        assert "CPU:0" in tf.constant(1.0).device


def test_machine_facts_name_the_cpu_and_the_libraries():
    facts = timing.machine(jax="0.0")
    assert facts["cpus"] >= 1 and facts["cpu"] and facts["tensorflow"] == tf.__version__ and facts["jax"] == "0.0"


def test_report_replaces_only_the_generated_part(tmp_path):
    doc = tmp_path / "page.md"
    doc.write_text("# Title\n\nhand-written\n")
    first = report.render({"cpus": 2}, {"a": {"markdown": "| t |"}}, {}, "now", "cmd")
    report.write(doc, first)
    assert "hand-written" in doc.read_text() and "| t |" in doc.read_text()
    second = report.render({"cpus": 2}, {"a": None, "b": {"x": 1}}, {"a": "exit status 1."}, "later", "cmd")
    report.write(doc, second)
    text = doc.read_text()
    assert text.count(report.BEGIN) == 1 and "| t |" not in text and "exit status 1." in text and '"x": 1' in text
    assert text.startswith("# Title\n\nhand-written\n")


def test_all_writes_the_report_from_existing_results(tmp_path):
    (tmp_path / "pinn.json").write_text(json.dumps({"machine": {"jax": "9.9"}, "markdown": "| pinn table |"}))
    doc = tmp_path / "benchmarks.md"
    status = cli.main(["all", "--report-only", "--results", str(tmp_path), "--doc", str(doc)])
    text = doc.read_text()
    assert status == 0 and "| pinn table |" in text and "| jax | 9.9 |" in text
    assert "### `python -m benchmarks control`" in text and "No results." in text


@pytest.mark.parametrize("argv", [["nosuch"], ["all", "--only", "nosuch"]])
def test_unknown_suites_are_refused(argv):
    with pytest.raises(SystemExit):
        cli.main(argv)


def test_pinnacle_table_and_its_own_section(tmp_path):
    from benchmarks import pinnacle

    rows = {
        "poisson_inverse": {
            "relative_l2_error": 4e-3,
            "relative_l2_error_u": 2e-3,
            "relative_l2_error_a": 8e-3,
            "target_met": True,
            "wall_seconds_total": 70.0,
            "wall_seconds": 60.0,
            "cpu_seconds": 100.0,
            "peak_rss_mib": 900.0,
            "load_average": 2.0,
        },
        "heat_nd": {"example": "heat_nd", "failure": "stopped after 5 s"},
    }
    table = pinnacle.markdown(rows)
    assert "| `poisson_inverse` | PInv | 4.00e-03 | u 2.00e-03, a 8.00e-03 |" in table
    assert "| yes |" in table and "2.5e-02" in table and "not run to the end: stopped after 5 s" in table
    assert table.index("heat_nd") < table.index("poisson_inverse")  # the order of PROBLEMS
    assert "not measured through this benchmark" not in table
    rows["poisson_inverse"]["measured_by"] = "python -m pinn_examples poisson_inverse"
    assert table + "\n\nRows not measured through this benchmark (same default preset):\n\n" + (
        "- `poisson_inverse`: python -m pinn_examples poisson_inverse."
    ) == pinnacle.markdown(rows)
    doc = tmp_path / "benchmarks.md"
    doc.write_text("# Benchmarks\n\nhand-written\n")
    pinnacle.write_section(doc, "first")
    pinnacle.write_section(doc, "second")
    text = doc.read_text()
    assert text.count(pinnacle.BEGIN) == 1 and "second" in text and "first" not in text and "hand-written" in text
    with pytest.raises(SystemExit):
        pinnacle.main(["--only", "nosuch"])


def test_pinnacle_deepxde_rows_beside_hodiffs():
    from benchmarks import pinnacle

    rows = {
        "poisson2d_cg": {"relative_l2_error": 1e-3, "wall_seconds_total": 1000.0},
        "ns2d_cg": {
            "relative_l2_error": 2e-1,
            "wall_seconds_total": 600.0,
            "deepxde": {
                "relative_l2_error": 4e-1,
                "relative_l2_error_u": 3e-1,
                "relative_l2_error_p": 9e-1,
                "iterations": 5000,
                "wall_seconds": 590.0,
                "wall_seconds_total": 600.0,
                "peak_rss_mib": 800.0,
            },
        },
        "poisson_inverse": {"relative_l2_error": 1e-2, "deepxde": {"failure": "exit status 1"}},
    }
    table = pinnacle.deepxde_markdown(rows)
    lines = table.splitlines()
    assert len(lines) == 4  # header, rule, ns2d_cg, poisson_inverse: poisson2d_cg has no DeepXDE row
    assert lines[2].startswith("| `ns2d_cg` | 2.00e-01 | 600 | 4.00e-01 (u 3.0e-01, p 9.0e-01) | 5000 | 600 (590) |")
    assert lines[2].endswith("| 0.5 |") and "not run to the end: exit status 1" in lines[3]


@pytest.mark.parametrize("name, fields", [("poisson_inverse", {"u", "a"}), ("ns2d_cg", {"u", "v", "p"})])
def test_pinnacle_deepxde_trains_and_scores_a_problem(tmp_path, name, fields):
    """A few DeepXDE iterations: the harness runs and scores on the example's grid (ns2d_cg: a polygon, whose
    boundary DeepXDE samples in float64).

    In a child process, as the benchmark runs it: DeepXDE's seeding turns on TensorFlow's op
    determinism for the whole process (and with it Keras turns XLA off)."""
    pytest.importorskip("deepxde")
    import json
    import subprocess
    import sys

    output = tmp_path / f"{name}-deepxde.json"
    command = [sys.executable, "-m", "benchmarks.pinnacle_deepxde", name, "--seconds", "60"]
    done = subprocess.run(command + ["--iterations", "3", "--output", str(output)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(output.read_text())
    assert result["iterations"] == 3 and set(result) >= {f"relative_l2_error_{field}" for field in fields}
    assert 0.0 < result["relative_l2_error"] < 10.0


def test_meta_monitor_part_writes_the_cost_of_the_default_monitor(tmp_path):
    """``python -m benchmarks meta --part monitor`` (issue 46 item 7): the default monitor against monitor=False and
    against reading the statistics every call, for both learners; the values are not asserted (no timings)."""
    from benchmarks import meta

    output = tmp_path / "monitor.json"
    assert meta.main(["--part", "monitor", "--quick", "--output", str(output)]) == 0
    results = json.loads(output.read_text())["monitor"]
    assert results["target_monitor_cost"] == 0.05 and len(results["seconds_per_call"]) == 6
    for kind in ("vectorised (XLA)", "task loop (XLA)"):
        assert set(results[kind]) == {"monitor_cost", "read_cost", "target_met"}
        assert all(f"{kind}, {route}" in results["seconds_per_call"] for route in ("monitor=False",))
