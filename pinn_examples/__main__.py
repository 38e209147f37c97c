"""Runs an example by name: ``python -m pinn_examples NAME [options]``."""

import argparse
import importlib
import sys

EXAMPLES = {
    "burgers": ("pinn_examples.burgers", "viscous Burgers, shock at x = 0, against the Cole-Hopf solution"),
    "circle": ("pinn_examples.circle", "training loop with clipping, accumulation and non-finite skipping on a circle dataset"),
    "laplacian_check": ("pinn_examples.laplacian_check", "Laplacian of a Keras MLP by three methods, checked against scipy"),
}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m pinn_examples", description="hodiff examples")
    parser.add_argument("name", nargs="?", choices=sorted(EXAMPLES), help="example to run")
    args, rest = parser.parse_known_args(argv)
    if args.name is None:
        print("Examples:")
        for name, (_, summary) in sorted(EXAMPLES.items()):
            print(f"  {name:20s} {summary}")
        return 0
    module = importlib.import_module(EXAMPLES[args.name][0])
    return module.main(rest)


if __name__ == "__main__":
    sys.exit(main())
