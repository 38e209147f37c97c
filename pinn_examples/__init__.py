"""Runnable examples: ``python -m pinn_examples NAME``.

:data:`EXAMPLES` is the one registry: each name is the module ``pinn_examples.NAME``, whose
``main(argv)`` runs it and whose docstring's first line describes it (:func:`describe`), in the
listing of ``python -m pinn_examples`` and in the example's own ``--help``; the listing also gives
the typical wall time of its presets on 2 CPU cores (:func:`wall_times`), as recorded in the docs.
"""

import ast
import importlib.util
import os

# Before any example imports TensorFlow: its C++ info and XLA warnings would bury the example's output.
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

EXAMPLES = (
    "allen_cahn",
    "burgers",
    "burgers2d",
    "burgers_inverse",
    "circle",
    "deeponet",
    "gray_scott",
    "heat",
    "heat2d_cg",
    "heat2d_lt",
    "heat2d_ms",
    "heat2d_vc",
    "heat_inverse",
    "heat_nd",
    "helmholtz",
    "highdim",
    "insulated_plate",
    "kdv",
    "kovasznay",
    "kuramoto_sivashinsky",
    "laplace_holes",
    "laplacian_check",
    "lid_driven_cavity",
    "maml_omniglot",
    "maml_pinn",
    "maml_sinusoid",
    "ns2d_cg",
    "ns2d_lt",
    "poisson",
    "poisson2d_cg",
    "poisson2d_ms",
    "poisson3d_cg",
    "poisson_inverse",
    "poisson_lshape",
    "poisson_nd",
    "wave",
    "wave2d_cg",
    "wave2d_ms",
)


def _module_source(name: str) -> str:
    """The source of example ``name``'s module, read without importing it."""
    if name not in EXAMPLES:
        raise ValueError(f"no example {name!r}; the examples are {', '.join(EXAMPLES)}.")
    spec = importlib.util.find_spec(f"{__name__}.{name}")
    assert spec is not None and spec.origin is not None, name
    with open(spec.origin, encoding="utf-8") as file:
        return file.read()


def wall_times(name: str) -> dict[str, float]:
    """The typical wall time in seconds of example ``name``'s presets on 2 CPU cores, read without importing it.

    The ``wall_seconds={preset: seconds}`` of the module's ``Example(...)`` (a literal dict: figures recorded in
    the docs, not measured here); ``{}`` for an example with none recorded or without an ``Example``.

    Example:
      ```python
      from pinn_examples import wall_times

      assert wall_times("heat")["default"] > 0 and "fast" not in wall_times("heat")
      ```
    """
    for node in ast.walk(ast.parse(_module_source(name))):
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "Example":
            for keyword in node.keywords:
                if keyword.arg == "wall_seconds":
                    return dict(ast.literal_eval(keyword.value))
    return {}


def format_wall_times(times: dict[str, float]) -> str:
    """``{"default": 122, "paper": 2096}`` as ``"default 2 min, paper 35 min"`` (the default preset first).

    Example:
      ```python
      from pinn_examples import format_wall_times

      assert format_wall_times({"fast": 7, "default": 60}) == "default 60 s, fast 7 s"
      assert format_wall_times({"default": 2096.0}) == "default 35 min" and format_wall_times({}) == ""
      ```
    """
    order = sorted(times, key=lambda preset: (preset != "default", preset))

    def duration(seconds: float) -> str:
        return f"{seconds:.0f} s" if seconds < 100 else f"{seconds / 60:.0f} min"

    return ", ".join(f"{preset} {duration(times[preset])}" for preset in order)


def describe(name: str) -> str:
    """The first line of the docstring of example ``name``'s module, read without importing it.

    Example:
      ```python
      from pinn_examples import describe

      assert describe("heat").startswith("Heat equation")
      ```
    """
    docstring = ast.get_docstring(ast.parse(_module_source(name))) or ""
    return docstring.splitlines()[0] if docstring else ""
