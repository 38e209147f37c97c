"""``python -m benchmarks meta --part cnn --quick``: the CNN rows run and are written (no timing asserted)."""

import json

from benchmarks.meta import main


def test_quick_cnn_benchmark_writes_its_table(tmp_path):
    output = tmp_path / "meta.json"
    assert main(["--quick", "--part", "cnn", "--output", str(output)]) == 0
    results = json.loads(output.read_text())
    rows = results["cnn"]["configurations"]
    assert list(rows) == ["5-way 1-shot, 1 step, second order"]
    assert rows["5-way 1-shot, 1 step, second order"]["iterations_per_second"]["hodiff"] > 0
    assert "| 5-way 1-shot, 1 step, second order |" in results["markdown"]
