"""Side-by-side timing: candidates run interleaved, so machine noise hits them alike."""

import time
from typing import Callable


def interleaved_median_seconds(candidates: dict[str, Callable[[], object]], repeats: int = 7, calls: int = 5) -> dict[str, float]:
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
