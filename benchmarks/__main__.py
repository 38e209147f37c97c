"""``python -m benchmarks NAME [options]``: runs one benchmark suite and writes its JSON.

``python -m benchmarks all [--quick] [--device D] [--results DIR] [--doc PATH]`` runs every suite,
each in its own process (so no suite inherits another's TensorFlow state), and writes one
Markdown report (machine facts, every suite's table) into ``docs/benchmarks.md``.
"""

import argparse
import datetime
import importlib
import json
import subprocess
import sys
from pathlib import Path

SUITES = {
    "control": "benchmarks.control",
    "derivatives": "benchmarks.derivatives",
    "highdim": "benchmarks.highdim",
    "meta": "benchmarks.meta",
    "pinn": "benchmarks.pinn",
    "pinnacle": "benchmarks.pinnacle",
}
RESULTS = Path(__file__).parent / "results"
DOC = Path(__file__).parent.parent / "docs" / "benchmarks.md"


def run_all(argv) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks all", description="every suite, then one report")
    parser.add_argument("--quick", action="store_true", help="each suite's smoke run (2 repeats, no peers)")
    parser.add_argument("--device", default=None, help="TensorFlow device for every suite, e.g. /GPU:0")
    parser.add_argument("--results", type=Path, default=RESULTS, help="folder for the suites' JSON files")
    parser.add_argument("--doc", type=Path, default=DOC, help="the Markdown page to write the report into")
    parser.add_argument("--only", action="append", choices=sorted(SUITES), help="run only these suites")
    parser.add_argument("--timeout", type=float, default=3600.0, help="seconds allowed per suite")
    parser.add_argument(
        "--report-only", action="store_true", help="run nothing: write the report from the JSON files in --results"
    )
    args = parser.parse_args(argv)
    from benchmarks import report
    from benchmarks.timing import machine

    names = args.only or list(SUITES)
    suites, failures = {}, {}
    for name in names:
        output = args.results / f"{name}.json"
        command = [sys.executable, "-m", "benchmarks", name, "--output", str(output)]
        command += ["--quick"] if args.quick else []
        command += ["--device", args.device] if args.device else []
        if args.report_only:
            suites[name] = json.loads(output.read_text()) if output.exists() else None
            continue
        print(f"== {name}", flush=True)
        try:
            done = subprocess.run(command, timeout=args.timeout)
            if done.returncode != 0:
                failures[name] = f"exit status {done.returncode}."
        except subprocess.TimeoutExpired:
            failures[name] = f"stopped after {args.timeout:.0f} s."
        suites[name] = json.loads(output.read_text()) if output.exists() and name not in failures else None
    versions = {}
    for result in suites.values():
        for key in ("jax", "deepxde", "optax"):
            if result and key in result.get("machine", {}):
                versions[key] = result["machine"][key]
    when = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    shown = "python -m benchmarks all" + (" --quick" if args.quick else "")
    shown += " --report-only" if args.report_only else ""
    shown += f" --device {args.device}" if args.device else ""
    report.write(args.doc, report.render(machine(**versions), suites, failures, when, shown))
    print(f"wrote {args.doc}")
    return 1 if failures else 0


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["all"]:
        return run_all(argv[1:])
    parser = argparse.ArgumentParser(prog="python -m benchmarks")
    parser.add_argument("suite", choices=sorted(SUITES) + ["all"])
    args, rest = parser.parse_known_args(argv)
    return importlib.import_module(SUITES[args.suite]).main(rest)


if __name__ == "__main__":
    sys.exit(main())
