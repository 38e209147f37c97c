"""PNG plots of a solved PDE: prediction, reference and error on the test grid; loss history.

The figures are built with matplotlib's object API (``matplotlib.figure.Figure``), never
``pyplot``: plotting sets no global backend and leaves no open figures, so it is safe inside a
notebook or an application with its own backend. matplotlib is imported when a plot is made.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["plot_field", "plot_history"]


def _figure(**kwargs) -> Figure:
    from matplotlib.figure import Figure

    return Figure(layout="constrained", **kwargs)


def _save(figure: Figure, path: str) -> None:
    """Writes ``figure`` as a PNG to a temporary file renamed to ``path``: a kill leaves the old plot whole."""
    from hodiff.pinn.runlog import atomic_write

    with atomic_write(path) as temporary:
        figure.savefig(temporary, dpi=110, format=os.path.splitext(path)[1][1:] or "png")


def plot_field(
    axes: dict[str, np.ndarray], prediction: np.ndarray, reference: np.ndarray, path: str, title: str = ""
) -> None:
    """Three panels over a 2-D grid: prediction, reference and absolute error.

    Args:
      axes: two named 1-D coordinate arrays, e.g. ``{"x": ..., "t": ...}``; the first is the
        vertical axis of the panels, as in the usual x-t plots of Burgers' equation.
      prediction: values ``(len(first), len(second))``.
      reference: same shape.
      path: the PNG file to write (atomically: written to a temporary file, then renamed).
      title: figure title.
    """
    (first, first_values), (second, second_values) = list(axes.items())[:2]
    figure = _figure(figsize=(15, 4))
    panels = figure.subplots(1, 3)
    error = np.abs(prediction - reference)
    limits = (min(prediction.min(), reference.min()), max(prediction.max(), reference.max()))
    for panel, values, name, kwargs in (
        (panels[0], prediction, "PINN prediction", {"vmin": limits[0], "vmax": limits[1], "cmap": "RdBu_r"}),
        (panels[1], reference, "reference", {"vmin": limits[0], "vmax": limits[1], "cmap": "RdBu_r"}),
        (panels[2], error, "absolute error", {"cmap": "magma"}),
    ):
        mesh = panel.pcolormesh(second_values, first_values, values, shading="auto", **kwargs)
        panel.set_xlabel(second)
        panel.set_ylabel(first)
        panel.set_title(name)
        figure.colorbar(mesh, ax=panel)
    figure.suptitle(title)
    _save(figure, path)


def plot_history(history: Sequence[dict], path: str, terms: Sequence[str]) -> None:
    """The total loss and each term against the step (log scale), Adam and L-BFGS phases marked.

    Args:
      history: rows with ``"step"``, ``"phase"``, ``"loss"`` and one value per term.
      path: the PNG file to write (atomically).
      terms: the loss-term names to draw besides the total.
    """
    figure = _figure(figsize=(8, 4.5))
    axis = figure.subplots()
    steps = np.array([row["step"] for row in history])
    for name in ("loss", *terms):
        axis.semilogy(steps, [row[name] for row in history], label=name, linewidth=2 if name == "loss" else 1)
    switch = [row["step"] for row in history if row["phase"] == "lbfgs"]
    if switch:
        axis.axvline(min(switch), color="gray", linestyle=":", label="L-BFGS from here")
    axis.set_xlabel("Adam step / L-BFGS iteration")
    axis.set_ylabel("mean squared residual")
    axis.legend()
    _save(figure, path)
