#!/usr/bin/env bash
# The GPU check: every benchmark suite on /GPU:0 (quick settings, about 8 minutes on a GPU), the
# derivative accuracy tests on the GPU with TF32 off, one JSON and one table (OUT/gpu_check.json,
# OUT/gpu_check.md). Run from the repository root:
#   benchmarks/gpu_check.sh [--out DIR]      on a machine with a GPU
#   benchmarks/gpu_check.sh --dry-run        the same steps on the CPU, to check the script itself
# Options: see `benchmarks/gpu_check.sh --help` (benchmarks/gpu_check.py).
set -euo pipefail
cd "$(dirname "$0")/.."
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
exec "${PYTHON:-python}" -m benchmarks.gpu_check "$@"
