"""The GPU check (``benchmarks/gpu_check.sh``): every benchmark suite on ``--device /GPU:0`` with
quick settings, the derivative accuracy tests on the GPU with TF32 off, one JSON and one table.

Steps, each recorded with its exit status and seconds:

1. the device: TensorFlow must list a GPU (skipped by ``--dry-run``);
2. every suite (``--suites``, default all) as ``python -m benchmarks SUITE --quick --device D``
   (meta also times JAX on Finn et al.'s CNN in all 8 configurations, meta-batch 32), each in its
   own process under a time limit;
3. the derivative accuracy tests (``--tests``) with ``NVIDIA_TF32_OVERRIDE=0`` (float32 matmuls
   and convolutions in full precision, as the tolerances assume), on the GPU TensorFlow picks;
4. ``OUT/gpu_check.json`` (machine, steps, every suite's results, test counts) and
   ``OUT/gpu_check.md`` (one table).

``--dry-run`` runs the same steps on ``/CPU:0`` without the device check, so the script is
known to work before a GPU is at hand. Exit status 0 when every step passed.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import time
import xml.etree.ElementTree as ElementTree
from pathlib import Path

from benchmarks.__main__ import SUITES

ACCURACY_TESTS = (
    "tests/test_checks.py",
    "tests/test_derivatives.py",
    "tests/test_operators.py",
    "tests/test_taylor.py",
    "tests/test_meta.py",
    "tests/test_meta_cnn.py",
)
SUITE_ARGS = {  # on top of --quick: the CNN at full size with JAX beside it
    "meta": ["--cnn-peers", "--cnn-tasks", "32", "--cnn-filters", "64", "--cnn-configs", "8", "--cnn-repeats", "2"],
}
ENVIRONMENT = {
    "NVIDIA_TF32_OVERRIDE": "0",  # no TF32 in cuBLAS / cuDNN: the accuracy tests assume float32 matmuls
    "TF_FORCE_GPU_ALLOW_GROWTH": "true",  # TensorFlow and JAX share the GPU
    "XLA_PYTHON_CLIENT_PREALLOCATE": "false",
    "TF_CPP_MIN_LOG_LEVEL": "2",
}


def step(name: str, command: list[str], timeout: float, env: dict, log: Path) -> dict:
    """Runs ``command``, its output into ``log``; its exit status (124 past ``timeout``) and seconds."""
    print(f"== {name}: {shlex.join(command)}", flush=True)
    start = time.perf_counter()
    with open(log, "w") as file:
        try:
            status = subprocess.run(command, stdout=file, stderr=subprocess.STDOUT, env=env, timeout=timeout).returncode
        except subprocess.TimeoutExpired:
            status = 124
    seconds = time.perf_counter() - start
    print(f"   {'ok' if status == 0 else f'FAILED (exit {status})'} in {seconds:.0f} s, log {log}", flush=True)
    return {"name": name, "command": shlex.join(command), "status": status, "seconds": round(seconds, 1)}


def test_counts(junit: Path) -> dict:
    """Passed, failed, errors and skipped tests of a JUnit XML report (empty when missing)."""
    if not junit.exists():
        return {}
    root = ElementTree.parse(junit).getroot()
    suites = [root] if root.tag == "testsuite" else list(root)
    total = lambda key: sum(int(s.get(key, 0)) for s in suites)
    failed, errors, skipped = total("failures"), total("errors"), total("skipped")
    return {
        "passed": total("tests") - failed - errors - skipped,
        "failed": failed,
        "errors": errors,
        "skipped": skipped,
    }


def table(report: dict) -> str:
    lines = [
        f"GPU check ({'dry run on ' if report['dry_run'] else ''}{report['device']}), {report['when']}",
        "",
        "| step | status | seconds | result |",
        "|---|---|---|---|",
    ]
    for entry in report["steps"]:
        result = entry.get("summary", "")
        status = "ok" if entry["status"] == 0 else f"failed ({entry['status']})"
        lines.append(f"| {entry['name']} | {status} | {entry['seconds']:.0f} | {result} |")
    for name, suite in report["suites"].items():
        if suite and suite.get("markdown"):
            lines += ["", f"### {name}", "", suite["markdown"]]
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="benchmarks/gpu_check.sh", description=__doc__.splitlines()[0])
    parser.add_argument("--dry-run", action="store_true", help="the same steps on /CPU:0, no GPU needed")
    parser.add_argument("--device", default="/GPU:0")
    parser.add_argument("--out", type=Path, default=Path("gpu_check"), help="folder for the JSON, table and logs")
    parser.add_argument("--suites", default=",".join(SUITES), help="comma-separated suites (default all)")
    parser.add_argument("--suite-args", default="", help="extra arguments for every suite's command")
    parser.add_argument("--tests", default=" ".join(ACCURACY_TESTS), help="pytest arguments of the accuracy tests")
    parser.add_argument("--suite-timeout", type=float, default=240.0, help="seconds allowed per suite")
    parser.add_argument("--test-timeout", type=float, default=300.0, help="seconds allowed for the tests")
    args = parser.parse_args(argv)
    device = "/CPU:0" if args.dry_run else args.device
    suites = [s for s in args.suites.split(",") if s]
    unknown = [s for s in suites if s not in SUITES]
    if unknown:
        parser.error(f"--suites: {unknown} are not among {sorted(SUITES)}")
    args.out.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, **ENVIRONMENT}
    python = sys.executable
    steps, results = [], {}
    if not args.dry_run:
        probe = "import sys, tensorflow as tf; gpus = tf.config.list_logical_devices('GPU'); print(gpus)\n"
        probe += "sys.exit(not gpus)"
        steps.append(step("device", [python, "-c", probe], 300, env, args.out / "device.log"))
        if steps[-1]["status"] != 0:
            print("no GPU visible to TensorFlow: nothing else run (use --dry-run on a machine without one)")
    if not steps or steps[-1]["status"] == 0:
        for suite in suites:
            output = args.out / f"{suite}.json"
            command = [python, "-m", "benchmarks", suite, "--quick", "--device", device, "--output", str(output)]
            command += SUITE_ARGS.get(suite, []) + shlex.split(args.suite_args)
            entry = step(f"benchmarks {suite}", command, args.suite_timeout, env, args.out / f"{suite}.log")
            results[suite] = json.loads(output.read_text()) if entry["status"] == 0 and output.exists() else None
            steps.append(entry)
        junit = args.out / "tests.xml"
        command = [python, "-m", "pytest", *shlex.split(args.tests), "-m", "not slow", "-q", "-n", "0"]
        command += ["-p", "no:cacheprovider", f"--junitxml={junit}"]
        entry = step("accuracy tests (TF32 off)", command, args.test_timeout, env, args.out / "tests.log")
        entry["tests"] = test_counts(junit)
        entry["summary"] = ", ".join(f"{count} {kind}" for kind, count in entry["tests"].items())
        steps.append(entry)
    for entry in steps:
        suite = entry["name"].removeprefix("benchmarks ")
        if results.get(suite) and "markdown" in results[suite]:
            entry["summary"] = f"table below ({suite}.json)"
    report = {
        "dry_run": args.dry_run,
        "device": device,
        "when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "environment": ENVIRONMENT,
        "steps": steps,
        "suites": results,
    }
    (args.out / "gpu_check.json").write_text(json.dumps(report, indent=2) + "\n")
    (args.out / "gpu_check.md").write_text(table(report))
    print(f"wrote {args.out}/gpu_check.json and {args.out}/gpu_check.md")
    return 0 if all(entry["status"] == 0 for entry in steps) else 1


if __name__ == "__main__":
    sys.exit(main())
