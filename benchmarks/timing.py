"""Side-by-side timing (candidates interleaved, so machine noise hits them alike), the command
line and output every suite shares, machine facts, and the roofline helpers (FLOPs of a compiled
function, this machine's measured matmul peak)."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import re
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
    samples: dict[str, list[float]] = {name: [] for name in candidates}
    for _ in range(repeats):
        for name, fn in candidates.items():
            start = time.perf_counter()
            for _ in range(calls):
                force(fn())
            samples[name].append((time.perf_counter() - start) / calls)
    return {name: sorted(times)[len(times) // 2] for name, times in samples.items()}


def suite_arguments(
    name: str,
    description: str,
    repeats: int,
    output: Path,
    argv=None,
    extra: Callable[[argparse.ArgumentParser], None] | None = None,
) -> argparse.Namespace:
    """``--repeats``, ``--quick`` (2 repeats, no peers: a smoke run), ``--output`` and ``--device``.

    ``--device`` (e.g. ``/CPU:0``, ``/GPU:0``; default: TensorFlow's choice) is applied by
    :func:`on_device` around everything a suite builds and times. ``extra(parser)`` adds a
    suite's own options.
    """
    parser = argparse.ArgumentParser(prog=f"python -m benchmarks {name}", description=description)
    parser.add_argument("--repeats", type=int, default=repeats)
    parser.add_argument("--quick", action="store_true", help="2 repeats, no peers (a smoke run)")
    parser.add_argument("--output", type=Path, default=output)
    parser.add_argument("--device", default=None, help="TensorFlow device to run on, e.g. /CPU:0 or /GPU:0")
    if extra is not None:
        extra(parser)
    args = parser.parse_args(argv)
    if args.quick:
        args.repeats = 2
    return args


def on_device(device: str | None):
    """``tf.device(device)``, or no placement at all for ``None``."""
    import tensorflow as tf

    return tf.device(device) if device else contextlib.nullcontext()


def cpu_model() -> str:
    """The CPU model name from ``/proc/cpuinfo`` (the platform's processor string elsewhere)."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def machine(**versions: str) -> dict:
    """Platform, CPU model, cores, devices and library versions (peers passed as ``versions``)."""
    import keras
    import numpy as np
    import tensorflow as tf

    return {
        "platform": platform.platform(),
        "cpu": cpu_model(),
        "cpus": os.cpu_count(),
        "devices": [d.name for d in tf.config.list_logical_devices()],
        "python": platform.python_version(),
        "tensorflow": tf.__version__,
        "keras": keras.__version__,
        "numpy": np.__version__,
        **versions,
    }


_DOT = re.compile(r"=\s*\w+\[([\d,]*)\]\S*\s+dot\(\s*\w+\[([\d,]*)\]\S*\s+[^,]+,.*?lhs_contracting_dims=\{([\d,]*)\}")


_SHAPE = re.compile(r"%?([\w.\-]+)(?: =|:) \w+\[([\d,]*)\]")
_NAMED_DOT = re.compile(r"=\s*\w+\[([\d,]*)\]\S*\s+dot\(%([\w.\-]+), [^)]*\),.*?lhs_contracting_dims=\{([\d,]*)\}")


def hlo_matmul_flops(hlo_text: str) -> int:
    """Matmul FLOPs (2 per multiply-add) of the ``dot`` instructions in an HLO module's text.

    Each instruction counts once: a dot inside a loop body counts once, not once per iteration.
    Elementwise work (tanh, the Adam update) is not counted. Reads both the text of the HLO
    before optimisation (operand shapes written inline) and after (operands named only).
    """
    shapes = {name: dims for name, dims in _SHAPE.findall(hlo_text)}
    matches = [match.groups() for match in _DOT.finditer(hlo_text)]
    matches += [(out, shapes.get(lhs, ""), axes) for out, lhs, axes in _NAMED_DOT.findall(hlo_text)]
    total = 0
    for out_shape, lhs_shape, contracting in matches:
        dims = [int(v) for v in lhs_shape.split(",") if v]
        size = 1
        for v in out_shape.split(","):
            if v:
                size *= int(v)
        reduced = 1
        for axis in contracting.split(","):
            if axis:
                reduced *= dims[int(axis)]
        total += 2 * size * reduced
    return total


def matmul_flops(fn: Callable, *args, optimized: bool = False) -> int:
    """Matmul FLOPs of one call of ``fn(*args)`` compiled with XLA, counted from its HLO: as
    traced, or with ``optimized`` after XLA's optimisations (what runs: shared work merged)."""
    import tensorflow as tf

    compiled = fn if hasattr(fn, "experimental_get_compiler_ir") else tf.function(fn, jit_compile=True)
    stage = "optimized_hlo" if optimized else "hlo"
    return hlo_matmul_flops(compiled.experimental_get_compiler_ir(*args)(stage=stage))


def matmul_peak_flops(size: int = 2048, dtype: str = "float32", repeats: int = 5) -> float:
    """This machine's measured matmul rate (FLOP/s): the best of ``repeats`` ``size``-square matmuls."""
    import tensorflow as tf

    a = tf.random.stateless_normal((size, size), seed=[0, 1], dtype=dtype)
    b = tf.random.stateless_normal((size, size), seed=[0, 2], dtype=dtype)
    product = tf.function(lambda: tf.reduce_sum(tf.matmul(a, b)))
    product().numpy()
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        product().numpy()
        best = min(best, time.perf_counter() - start)
    return 2.0 * size**3 / best


def report(results: dict, table: str, output: Path) -> None:
    """Prints the Markdown table and writes the results (with the table) as JSON."""
    print("\n" + table)
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(json.dumps({**results, "markdown": table}, indent=2) + "\n")
    print(f"\nwrote {output}")


def run_in_child(target: Callable, args: tuple, budget_seconds: float) -> object:
    """``target(queue, *args)`` in a fresh (spawned) process; what it puts on ``queue``, or
    ``None`` when it puts nothing or runs past ``budget_seconds`` (then it is stopped: a child
    process can be stopped, a compiling thread cannot)."""
    import multiprocessing

    context = multiprocessing.get_context("spawn")
    queue = context.Queue()
    child = context.Process(target=target, args=(queue, *args))
    child.start()
    child.join(budget_seconds)
    if child.is_alive():
        child.terminate()
        child.join()
        return None
    return queue.get() if not queue.empty() else None
