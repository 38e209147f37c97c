"""Runs an example by name: ``python -m pinn_examples NAME [options]``.

``NAME --help`` imports the example's module with TensorFlow and Keras deferred: ``import
tensorflow as tf`` at the top of a module binds a placeholder that imports the real module on
first use, and building the help never uses it, so the help starts in well under a second and
prints no TensorFlow log lines. (An example whose module *uses* TensorFlow, Keras or ``hodiff``
at import time, outside its functions, loads TensorFlow for ``--help`` too.)
"""

import argparse
import importlib
import sys
import types

from pinn_examples import EXAMPLES, describe, format_wall_times, wall_times

HELP_FLAGS = ("-h", "--help")
DEFERRED = ("tensorflow", "keras")  # what --help does not import: seconds of start-up and log lines


class _Deferred(types.ModuleType):
    """A placeholder in ``sys.modules`` for a module not imported yet: the first attribute read imports it."""

    def __getattr__(self, attribute: str):
        if sys.modules.get(self.__name__) is self:
            del sys.modules[self.__name__]
        module = importlib.import_module(self.__name__)
        self.__dict__.update(module.__dict__)
        return getattr(module, attribute)


def defer_imports(names=DEFERRED) -> None:
    """Puts a :class:`_Deferred` placeholder in ``sys.modules`` for each of ``names`` not imported yet."""
    for name in names:
        if name not in sys.modules:
            sys.modules[name] = _Deferred(name)


def main(argv=None) -> int:
    """Runs ``python -m pinn_examples NAME [flags]``; without NAME, lists the examples."""
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv and argv[0] in EXAMPLES:
        # Everything after the name, --help included, belongs to the example's own parser.
        if any(flag in HELP_FLAGS for flag in argv[1:]):
            defer_imports()
        return importlib.import_module(f"pinn_examples.{argv[0]}").main(argv[1:])
    width = max(map(len, EXAMPLES))  # the longest name sets the column, and the longest times the next
    times = {name: format_wall_times(wall_times(name)) for name in EXAMPLES}
    span = max(map(len, times.values()))
    listing = "\n".join(f"  {name:{width}s}  {times[name]:{span}s}  {describe(name)}" for name in EXAMPLES)
    parser = argparse.ArgumentParser(
        prog="python -m pinn_examples",
        description="hodiff examples; NAME --help shows an example's own flags",
        epilog=f"examples (and the typical wall time of their presets on 2 CPU cores, from the docs):\n{listing}",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("name", nargs="?", choices=EXAMPLES, metavar="NAME", help="example to run (listed below)")
    parser.parse_args(argv)  # no known name here: --help, an unknown name or a stray flag end in parse_args
    print(
        "Examples (python -m pinn_examples NAME --help for an example's flags), with the typical wall time of their "
        f"presets on 2 CPU cores as recorded in the docs (blank where none is recorded):\n{listing}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
