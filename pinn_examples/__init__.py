"""Runnable examples: ``python -m pinn_examples NAME``.

:data:`EXAMPLES` is the one registry: each name is the module ``pinn_examples.NAME``, whose
``main(argv)`` runs it and whose docstring's first line describes it (:func:`describe`), in the
listing of ``python -m pinn_examples`` and in the example's own ``--help``.
"""

import ast
import importlib.util
import os

# Before any example imports TensorFlow: its C++ info and XLA warnings would bury the example's output.
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

EXAMPLES = (
    "allen_cahn",
    "burgers",
    "burgers_inverse",
    "circle",
    "deeponet",
    "gray_scott",
    "heat",
    "heat2d_cg",
    "heat2d_lt",
    "heat2d_ms",
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
)


def describe(name: str) -> str:
    """The first line of the docstring of example ``name``'s module, read without importing it.

    Example:
      ```python
      from pinn_examples import describe

      assert describe("heat").startswith("Heat equation")
      ```
    """
    if name not in EXAMPLES:
        raise ValueError(f"no example {name!r}; the examples are {', '.join(EXAMPLES)}.")
    spec = importlib.util.find_spec(f"{__name__}.{name}")
    assert spec is not None and spec.origin is not None, name
    with open(spec.origin, encoding="utf-8") as file:
        docstring = ast.get_docstring(ast.parse(file.read())) or ""
    return docstring.splitlines()[0] if docstring else ""
