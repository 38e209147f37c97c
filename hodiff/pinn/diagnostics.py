"""Stall diagnostics: a run whose loss plateaus far above zero, or whose terms' gradients cancel, says so.

A PINN can settle on a wrong answer with a small, steady loss and no error. Two signs show it
cheaply, from the run's history and a few gradients:

- **plateau far above zero**: over the second half of a phase the loss fell by less than
  ``plateau`` (relative), and it is still above ``far_above`` times the first loss (at the start
  of training, or the first logged one);
  checked at the end of the Adam and the L-BFGS phase;
- **conflict** (cancellation): some weighted term's gradient is ``cancellation`` times longer
  than the gradient of the total, so the terms pull against each other and the optimiser sits at a
  compromise between them; the pairs with negative cosines are the conflicting terms. Checked
  when a phase ends far above zero: after Adam only on a plateau (Adam's own noise makes the
  ratio large while the loss still falls), after L-BFGS always;
- **conditions that cannot all hold**: a stalled pure-Neumann problem (conditions giving only the
  normal derivative) whose sources do not balance its boundary fluxes
  (:func:`~hodiff.pinn.flux.neumann_balance`: the mismatch of the integrals when the residual is
  ``a * laplacian(u) + s``, the case named otherwise).

:class:`StallDiagnostic` checks at the end of each phase (Adam, L-BFGS), logs a warning naming
the conflicting terms and what to try, and records it in ``trainer.run_info["diagnostics"]``
(saved with the checkpoints; the example runner copies it to ``metrics.json``). Every ``every``
steps it also adds the gradient norms to the history row (``gradient_norm_<term>``,
``gradient_norm_total``, ``gradient_cancellation``). The :class:`~hodiff.pinn.Trainer` adds one
by default (``Schedule(diagnose_every=...)``; 0 turns it off). The gradients are those of
:meth:`TrainingData.gradient_statistics <hodiff.pinn.TrainingData.gradient_statistics>`
(a compiled graph, with XLA only for stochastic problems, over all points, in the cross-replica
context under a strategy), computed only at those rows and when a phase ends far above zero.

Example:
  ```python
  import numpy as np
  from hodiff import pinn
  from hodiff.pinn.diagnostics import StallDiagnostic

  domain = pinn.Interval("x", 0.0, 1.0)
  clash = pinn.Problem(  # u(0) = 0 and u(0) = 1 cannot both hold
      domain,
      needs=("u_xx",),
      residual=lambda d, x, p: d["u_xx"],
      conditions=[pinn.Dirichlet(0.0, count=8, name="low"), pinn.Dirichlet(1.0, count=8, name="high")],
  )
  diagnostic = StallDiagnostic(every=100)
  trainer = pinn.Trainer(pinn.TrainingData(clash, interior=32), pinn.mlp(domain, width=8, depth=2),
                         schedule=pinn.Schedule(steps_per_call=50, log_every=50, progress=False),
                         callbacks=[diagnostic])
  trainer.lbfgs(100)
  finding = trainer.run_info["diagnostics"][-1]
  assert finding["kind"] == "conflict" and {"low", "high"} <= set(finding["terms"])
  assert "gradient_cancellation" in trainer.history[-1] or "gradient_norm_total" not in trainer.history[-1]
  ```
"""

from __future__ import annotations

import dataclasses
import logging
import math
from typing import TYPE_CHECKING, Any

import numpy as np

from hodiff import _validate
from hodiff.pinn.callbacks import Callback
from hodiff.pinn.flux import neumann_balance

if TYPE_CHECKING:
    from hodiff.pinn.trainer import Trainer

__all__ = ["StallDiagnostic", "gradient_check"]

logger = logging.getLogger(__name__)


def gradient_check(trainer: Trainer) -> dict[str, Any]:
    """The weighted terms' gradient norms, the total's, their ratio and the conflicting pairs, now.

    Returns:
      ``{"norms": {term: norm}, "total": norm, "cancellation": max term norm / total norm,
      "conflicts": [(term a, term b, cosine)]}``: ``conflicts`` lists the pairs whose gradients
      point against each other (cosine < -0.5) among the terms whose norm exceeds the total's,
      most opposed first.
    """
    statistics = trainer.data.gradients()
    names = list(trainer.problem.term_names)
    norms = {name: statistics[f"norm_{name}"] for name in names}
    total = statistics["norm_total"]
    cosines = np.asarray(statistics["cosines"])
    tiny = np.finfo(np.float64).tiny
    cancellation = max(norms.values()) / max(total, tiny) if norms else 0.0
    large = [i for i, name in enumerate(names) if norms[name] > total]
    pairs = [
        (names[i], names[j], float(cosines[i, j]))
        for a, i in enumerate(large)
        for j in large[a + 1 :]
        if cosines[i, j] < -0.5
    ]
    return {
        "norms": norms,
        "total": total,
        "cancellation": cancellation,
        "conflicts": sorted(pairs, key=lambda p: p[2]),
    }


@dataclasses.dataclass
class StallDiagnostic(Callback):
    """Warns when a phase ends on a plateau far above zero or with conflicting terms (see the module).

    Args:
      every: steps between the history rows that get the gradient norms (rows whose step is a
        multiple of it); 0 adds none.
      cancellation: a term's gradient norm this many times the total's counts as a conflict.
      plateau: a relative fall of the loss over a phase's second half below this is a plateau.
      far_above: a loss above this fraction of the first loss seen (the first logged one, or that at the
        start of the phase or of Adam, whichever is larger) is "far above zero".
    """

    every: int = 1000
    cancellation: float = 10.0
    plateau: float = 0.1
    far_above: float = 1e-2

    def __post_init__(self):
        name = type(self).__name__
        _validate.check_finite_number(self.every, "every", name, 0, integer=True)
        _validate.check_finite_number(self.cancellation, "cancellation", name, 1)
        _validate.check_finite_number(self.plateau, "plateau", name, 0)
        _validate.check_finite_number(self.far_above, "far_above", name, 0)

    def on_phase_begin(self, trainer: Trainer, phase: str) -> None:
        self.__dict__.setdefault("_start", {})[phase] = float(trainer.final_loss)

    def metrics(self, trainer: Trainer, row: dict[str, Any]) -> dict[str, float]:
        if not self.every or row["step"] % self.every or not row["step"]:
            return {}
        check = gradient_check(trainer)
        return {
            **{f"gradient_norm_{name}": value for name, value in check["norms"].items()},
            "gradient_norm_total": check["total"],
            "gradient_cancellation": check["cancellation"],
        }

    def on_phase_end(self, trainer: Trainer, phase: str, result: Any) -> None:
        rows = [row for row in trainer.history if math.isfinite(row.get("loss", math.nan))]
        start = next((i for i, row in enumerate(rows) if row["phase"] == phase), len(rows))
        mine = [row["loss"] for row in rows[max(start - 1, 0) :]]  # the phase's rows, from the row before it
        if len(mine) < 2:
            return
        starts = self.__dict__.get("_start", {})
        loss, first = float(trainer.final_loss), max(rows[0]["loss"], starts.get(phase, 0.0), starts.get("adam", 0.0))
        if not loss > self.far_above * first:
            return
        half = len(mine) // 2
        before, after = min(mine[:half]), min(mine[half:])
        fall = (before - after) / before if before > 0 else 0.0
        plateau = fall < self.plateau
        if not plateau and phase == "adam":  # Adam is still moving: L-BFGS decides
            return
        check = gradient_check(trainer)
        conflict = check["cancellation"] >= self.cancellation
        if not (plateau or conflict):
            return
        step = int(rows[-1]["step"])
        balance = neumann_balance(trainer.problem)
        finding = {
            "phase": phase,
            "step": step,
            "kind": "conflict" if conflict else "plateau",
            "loss": loss,
            "first_loss": first,
            "fall_over_second_half": fall,
            "cancellation": check["cancellation"],
            "terms": sorted({name for a, b, _ in check["conflicts"] for name in (a, b)}),
            "message": self._message(phase, loss, first, fall, check, conflict, _balance_text(balance)),
            "neumann_balance": balance,
        }
        findings = [f for f in trainer.run_info.get("diagnostics", []) if (f["phase"], f["step"]) != (phase, step)]
        trainer.run_info["diagnostics"] = [*findings, finding]
        trainer.save_run_info()
        logger.warning("%s", finding["message"])

    def _message(
        self, phase: str, loss: float, first: float, fall: float, check: dict, conflict: bool, cause: str
    ) -> str:
        name = "L-BFGS" if phase == "lbfgs" else "Adam"
        text = (
            f"training may have stalled: after the {name} phase the loss is {loss:.3g}, {loss / first:.2g} of the "
            f"first logged loss ({first:.3g}), and it fell by {max(fall, 0.0):.1%} over the phase's second half."
            + cause
        )
        norms = ", ".join(f"{term} {value:.2e}" for term, value in check["norms"].items())
        if conflict:
            pairs = "; ".join(f"{a} vs {b} (cosine {c:.2f})" for a, b, c in check["conflicts"]) or "no single pair"
            text += (
                f" The loss terms' gradients cancel: the largest term gradient is {check['cancellation']:.3g} times "
                f"the total's ({norms}; total {check['total']:.2e}); conflicting terms: {pairs}. The optimum is a "
                "compromise between them: check that the conditions agree (a where= that also selects another "
                "shape's faces, data against a condition), impose conditions exactly (a lift in output_transform for "
                "Dirichlet, a hard initial condition), train in float64 with L-BFGS, or reweight the terms."
            )
        else:
            text += (
                f" Gradient norms: {norms}; total {check['total']:.2e}. Try float64 with L-BFGS, hard conditions "
                "(output_transform), more points where the residual is large, or a wider network."
            )
        return text + " See docs/pinn-training.md#when-training-stalls."


def _balance_text(balance: dict[str, Any] | None) -> str:
    """What :func:`~hodiff.pinn.flux.neumann_balance` found, for the stall warning: the conditions that cannot all
    hold, with the integrals when they were computed; nothing for a problem that is not pure-Neumann or balances."""
    if balance is None or balance["balanced"]:
        return ""
    names = ", ".join(repr(name) for name in balance["conditions"])
    if balance["mismatch"] is None:
        return (
            f" The conditions give only the normal derivative of the field (Neumann {names}, no value anywhere): such "
            "a problem has a solution only when its sources balance its boundary fluxes (for a * laplacian(u) + s = 0 "
            "with du/dn = g: a * integral(g ds) + integral(s dx) = 0; integrate your residual over the domain for "
            "yours). If they do not, the conditions cannot all hold and the loss cannot reach zero: change the source "
            "or the fluxes so that they balance, or replace a Neumann condition by a value (Dirichlet) somewhere."
        )
    return (
        f" The conditions cannot all hold: they give only the normal derivative of the field (Neumann {names}), and "
        "such a problem has a solution only when its sources balance its boundary fluxes. Integrating the residual "
        f"a * laplacian(u) + s (a = {balance['coefficient']:.3g}) over the domain gives a * integral(g ds) + "
        f"integral(s dx) = {balance['fluxes']:.3g} + {balance['sources']:.3g} = {balance['mismatch']:.3g}, not 0 "
        f"({balance['relative']:.0%} of their sizes), so the loss cannot reach zero. Change the source or the "
        "boundary fluxes g so that they balance, or replace a Neumann condition by a value (Dirichlet) somewhere."
    )
