"""Deprecated module (one release): the forward propagation moved to :mod:`hodiff.jets`.

Use :func:`hodiff.laplacian` / :mod:`hodiff.operators` (``method="forward"``); the engine is
:mod:`hodiff.jets.propagation`. Every name here warns with a ``DeprecationWarning``.
"""

from hodiff.jets import _deprecation, propagation, rules
from hodiff.jets import forward_jet as _forward_jet
from hodiff.jets import forward_laplacian as _forward_laplacian

__getattr__ = _deprecation.module_getattr(
    "hodiff.taylor",
    {
        "Jet": (propagation.Jet, "hodiff.jets.Jet"),
        "forward_jet": (_forward_jet.__wrapped__, "hodiff.laplacian(model, method='forward') or hodiff.divergence"),
        "forward_laplacian": (_forward_laplacian.__wrapped__, "hodiff.laplacian(model, method='forward')"),
        "forward_partials": (
            propagation.forward_partials,
            "hodiff.operators.Partials(coords, wanted)(model, method='forward')",
        ),
        "supported_layers": (rules.supported_layers, "hodiff.jets.rules.supported_layers"),
    },
)
