"""``python -m benchmarks NAME [options]``: runs one benchmark suite and writes its JSON."""

import argparse
import importlib
import sys

SUITES = {
    "control": "benchmarks.control",
    "derivatives": "benchmarks.derivatives",
    "highdim": "benchmarks.highdim",
    "meta": "benchmarks.meta",
    "pinn": "benchmarks.pinn",
}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks")
    parser.add_argument("suite", choices=sorted(SUITES))
    args, rest = parser.parse_known_args(argv)
    return importlib.import_module(SUITES[args.suite]).main(rest)


if __name__ == "__main__":
    sys.exit(main())
