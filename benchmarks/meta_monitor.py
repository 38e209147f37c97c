"""``python -m benchmarks meta --part monitor``: what the default gradient monitoring costs a meta-step.

Issue 46 (item 7): the default ``MetaLearner(monitor=True)`` must cost at most 5% of a meta-step
over ``monitor=False``. On the sinusoid setting of :mod:`benchmarks.meta` (MLP 1-40-40-1 ReLU,
25 tasks of 10 + 10 points, one second-order inner step, Adam), one ``meta_step`` call per
meta-iteration, side by side (the candidates' order rotated every round, median seconds per
call), for the vectorised learner and the task loop:

- **monitor on** (the default), as users call it: the statistics are returned, not read;
- **monitor off** (``monitor=False``): no statistics at all;
- **monitor on, read every call**: ``out["gradient_stats"]["global_norm"]`` read after each call,
  which computes the statistics of that call's gradients (one more small compiled call).

Writes ``benchmarks/results/meta_monitor.json``: seconds per call and iterations per second of each
route, ``monitor_cost`` (on / off - 1, per learner), ``read_cost`` (read every call / off - 1) and
whether the 5% target is met, and prints a Markdown table.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import tensorflow as tf

from benchmarks.meta import learner, rotated_median_seconds
from pinn_examples.maml_sinusoid import sample_tasks

RESULTS = Path(__file__).parent / "results" / "meta_monitor.json"
TARGET = 0.05  # the default monitor's cost over monitor=False, a fraction of a meta-step
LEARNERS = {"vectorised (XLA)": True, "task loop (XLA)": False}
ROUTES = ("monitor on (default)", "monitor=False", "monitor on, statistics read every call")


def run_monitor(repeats: int, calls: int = 20) -> tuple[dict, list[str]]:
    """Times the routes (``repeats`` rotated rounds of ``calls`` calls each); returns the results and table lines."""
    batch = [tf.constant(a) for a in sample_tasks(np.random.default_rng(0), 25, 10, 10)[:4]]
    candidates = {}
    for kind, vectorize in LEARNERS.items():
        on, off, read = (learner(vectorize=vectorize, monitor=monitor) for monitor in (True, False, True))
        for one in (on, off):
            one.meta_step(*batch)  # traced and compiled before timing
        read.meta_step(*batch)["gradient_stats"]["global_norm"]  # the step and the statistics' own function
        candidates[f"{kind}, {ROUTES[0]}"] = lambda on=on: on.meta_step(*batch)["loss"]
        candidates[f"{kind}, {ROUTES[1]}"] = lambda off=off: off.meta_step(*batch)["loss"]
        candidates[f"{kind}, {ROUTES[2]}"] = lambda read=read: read.meta_step(*batch)["gradient_stats"]["global_norm"]
    seconds = rotated_median_seconds(candidates, repeats=repeats, calls=calls)
    results: dict = {
        "setting": "second-order MAML, MLP 1-40-40-1 ReLU, 25 tasks x (10 support + 10 query), 1 inner step, Adam; "
        "one meta_step call per meta-iteration",
        "seconds_per_call": seconds,
        "iterations_per_second": {name: 1.0 / s for name, s in seconds.items()},
        "target_monitor_cost": TARGET,
    }
    lines = [
        "| learner | monitor on (default) | monitor=False | on, read every call | monitor cost | read cost | "
        f"target (<= {TARGET:.0%}) |",
        "|---|---|---|---|---|---|---|",
    ]
    for kind in LEARNERS:
        on, off, read = (seconds[f"{kind}, {route}"] for route in ROUTES)
        cost, read_cost = on / off - 1.0, read / off - 1.0
        results[kind] = {"monitor_cost": cost, "read_cost": read_cost, "target_met": cost <= TARGET}
        lines.append(
            f"| {kind} | {1e3 * on:.3f} ms | {1e3 * off:.3f} ms | {1e3 * read:.3f} ms | {cost:+.1%} | "
            f"{read_cost:+.1%} | {'met' if cost <= TARGET else 'missed'} |"
        )
    return results, lines
