"""Deprecated module (one release): the forward propagation moved to :mod:`hodiff.jets`.

Use :func:`hodiff.laplacian` / :mod:`hodiff.operators` (``method="forward"``); the engine is
:mod:`hodiff.jets.propagation`. Every name here warns with a ``DeprecationWarning``.
"""

from hodiff import _deprecation, jets
from hodiff.jets import propagation, rules

__getattr__ = _deprecation.module_getattr(
    "hodiff.taylor",
    {
        "Jet": (propagation.Jet, "hodiff.jets.Jet"),
        "forward_jet": (jets.forward_jet, "hodiff.laplacian(model, method='forward') or hodiff.divergence"),
        "forward_laplacian": (jets.forward_laplacian, "hodiff.laplacian(model, method='forward')"),
        "forward_partials": (
            propagation.forward_partials,
            "hodiff.operators.Partials(coords, wanted)(model, method='forward')",
        ),
        "supported_layers": (rules.supported_layers, "hodiff.jets.rules.supported_layers"),
    },
)
