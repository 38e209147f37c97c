"""Times a PINN's Adam steps and L-BFGS iterations against the number of replicas (``docs/distributed.md``).

``python -m pinn_examples.replica_scaling [REPLICAS ...]`` runs one fresh process per replica
count (logical devices must be set before TensorFlow starts) on the Burgers example (float32,
4096 interior points, 20 x 4 tanh network) and prints a Markdown table: milliseconds per Adam
step and per L-BFGS iteration, after a warm-up that compiles. On a machine without GPUs the
replicas are logical CPU devices sharing its cores.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

SETTINGS = {"interior": 4096, "width": 20, "depth": 4, "steps_per_call": 50}
ADAM_STEPS, LBFGS_ITERATIONS = 500, 50


def measure(replicas: int) -> dict:
    """Milliseconds per Adam step and per L-BFGS iteration with ``replicas`` replicas (this process)."""
    import dataclasses

    from pinn_examples import burgers
    from pinn_examples.runner import Settings, make_strategy, make_trainer

    strategy = make_strategy(replicas)
    settings = dataclasses.replace(Settings(), **SETTINGS, log_every=SETTINGS["steps_per_call"])
    with strategy.scope() if strategy is not None else _null():
        problem, model = burgers.build(settings)
    trainer = make_trainer(problem, model, settings, progress=False, strategy=strategy)
    chunk = settings.steps_per_call
    trainer.adam(chunk)  # compiles
    start = time.perf_counter()
    trainer.adam(chunk + ADAM_STEPS)
    adam = (time.perf_counter() - start) / ADAM_STEPS
    trainer.lbfgs(LBFGS_ITERATIONS + chunk)  # history rows after `chunk` iterations (compiled by then) and at the end
    first, last = [row for row in trainer.history if row["phase"] == "lbfgs"][-2:]
    lbfgs = (last["seconds"] - first["seconds"]) / (last["step"] - first["step"])
    return {"replicas": replicas, "adam_ms": 1e3 * adam, "lbfgs_ms": 1e3 * lbfgs}


class _null:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--one"]:
        print(json.dumps(measure(int(argv[1]))))
        return 0
    rows = []
    for replicas in [int(a) for a in argv] or [1, 2, 4]:
        command = [sys.executable, "-m", "pinn_examples.replica_scaling", "--one", str(replicas)]
        output = subprocess.run(command, capture_output=True, text=True, check=True).stdout
        rows.append(json.loads(output.strip().splitlines()[-1]))
    base = rows[0]
    print("| replicas | ms per Adam step | speed-up | ms per L-BFGS iteration | speed-up |")
    print("|---:|---:|---:|---:|---:|")
    for row in rows:
        print(
            f"| {row['replicas']} | {row['adam_ms']:.1f} | {base['adam_ms'] / row['adam_ms']:.2f} | "
            f"{row['lbfgs_ms']:.1f} | {base['lbfgs_ms'] / row['lbfgs_ms']:.2f} |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
