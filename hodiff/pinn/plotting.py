"""PNG plots of a solved PDE: prediction, reference and error on the test grid; loss history."""

from __future__ import annotations

from typing import Sequence

import numpy as np

__all__ = ["plot_field", "plot_history"]


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def plot_field(axes: dict[str, np.ndarray], prediction: np.ndarray, reference: np.ndarray, path: str, title: str = "") -> None:
    """Three panels over a 2-D grid: prediction, reference and absolute error.

    Args:
      axes: two named 1-D coordinate arrays, e.g. ``{"x": ..., "t": ...}``; the first is the
        vertical axis of the panels, as in the usual x-t plots of Burgers' equation.
      prediction: values ``(len(first), len(second))``.
      reference: same shape.
      path: the PNG file to write.
      title: figure title.
    """
    plt = _pyplot()
    (first, first_values), (second, second_values) = list(axes.items())[:2]
    figure, panels = plt.subplots(1, 3, figsize=(15, 4), constrained_layout=True)
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
    figure.savefig(path, dpi=110)
    plt.close(figure)


def plot_history(history: Sequence[dict], path: str, terms: Sequence[str]) -> None:
    """The total loss and each term against the step (log scale), Adam and L-BFGS phases marked."""
    plt = _pyplot()
    figure, axis = plt.subplots(figsize=(8, 4.5), constrained_layout=True)
    steps = np.array([row["step"] for row in history])
    for name in ("loss", *terms):
        axis.semilogy(steps, [row[name] for row in history], label=name, linewidth=2 if name == "loss" else 1)
    switch = [row["step"] for row in history if row["phase"] == "lbfgs"]
    if switch:
        axis.axvline(min(switch), color="gray", linestyle=":", label="L-BFGS from here")
    axis.set_xlabel("Adam step / L-BFGS iteration")
    axis.set_ylabel("mean squared residual")
    axis.legend()
    figure.savefig(path, dpi=110)
    plt.close(figure)
