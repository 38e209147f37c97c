"""Side-by-side timing (candidates interleaved, so machine noise hits them alike) and the
command line and output every suite shares."""

import argparse
import json
import os
import platform
import time
from collections.abc import Callable
from pathlib import Path


def interleaved_median_seconds(
    candidates: dict[str, Callable[[], object]], repeats: int = 7, calls: int = 5
) -> dict[str, float]:
    """Median wall time of one call of each candidate; all are warmed up (compiled) first.

    Each repeat times ``calls`` back-to-back calls of every candidate in turn; a call's result
    is forced to the host (``.numpy()``, or ``block_until_ready()`` for JAX) so asynchronous
    work is counted.
    """

    def force(result):
        for leaf in result if isinstance(result, (list, tuple)) else [result]:
            getattr(leaf, "block_until_ready", getattr(leaf, "numpy", lambda: None))()

    for fn in candidates.values():
        force(fn())
    samples = {name: [] for name in candidates}
    for _ in range(repeats):
        for name, fn in candidates.items():
            start = time.perf_counter()
            for _ in range(calls):
                force(fn())
            samples[name].append((time.perf_counter() - start) / calls)
    return {name: sorted(times)[len(times) // 2] for name, times in samples.items()}


def suite_arguments(name: str, description: str, repeats: int, output: Path, argv=None) -> argparse.Namespace:
    """``--repeats``, ``--quick`` (2 repeats, no peers: a smoke run) and ``--output``."""
    parser = argparse.ArgumentParser(prog=f"python -m benchmarks {name}", description=description)
    parser.add_argument("--repeats", type=int, default=repeats)
    parser.add_argument("--quick", action="store_true", help="2 repeats, no peers (a smoke run)")
    parser.add_argument("--output", type=Path, default=output)
    args = parser.parse_args(argv)
    if args.quick:
        args.repeats = 2
    return args


def machine(**versions: str) -> dict:
    import tensorflow as tf

    return {"platform": platform.platform(), "cpus": os.cpu_count(), "tensorflow": tf.__version__, **versions}


def report(results: dict, table: str, output: Path) -> None:
    """Prints the Markdown table and writes the results as JSON."""
    print("\n" + table)
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(json.dumps(results, indent=2) + "\n")
    print(f"\nwrote {output}")
