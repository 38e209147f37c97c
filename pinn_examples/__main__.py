"""Runs an example by name: ``python -m pinn_examples NAME [options]``."""

import argparse
import importlib
import sys

from pinn_examples import EXAMPLES, describe


def main(argv=None) -> int:
    """Runs ``python -m pinn_examples NAME [flags]``; without NAME, lists the examples."""
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv and argv[0] in EXAMPLES:
        # Everything after the name, --help included, belongs to the example's own parser.
        return importlib.import_module(f"pinn_examples.{argv[0]}").main(argv[1:])
    listing = "\n".join(f"  {name:18s} {describe(name)}" for name in EXAMPLES)
    parser = argparse.ArgumentParser(
        prog="python -m pinn_examples",
        description="hodiff examples; NAME --help shows an example's own flags",
        epilog=f"examples:\n{listing}",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("name", nargs="?", choices=EXAMPLES, metavar="NAME", help="example to run (listed below)")
    parser.parse_args(argv)  # no known name here: --help, an unknown name or a stray flag end in parse_args
    print(f"Examples (python -m pinn_examples NAME --help for an example's flags):\n{listing}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
