"""PNG plots of a solved PDE: prediction, reference and error on the test grid; loss history.

The figures are built with matplotlib's object API (``matplotlib.figure.Figure``), never
``pyplot``: plotting sets no global backend and leaves no open figures, so it is safe inside a
notebook or an application with its own backend. matplotlib is imported when a plot is made.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
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


def _limits(*arrays: np.ndarray) -> tuple[float, float]:
    """The smallest and largest finite value of ``arrays`` (``(0, 1)`` when there is none)."""
    finite = np.concatenate([np.asarray(a, dtype=np.float64)[np.isfinite(a)] for a in arrays])
    return (float(finite.min()), float(finite.max())) if finite.size else (0.0, 1.0)


def plot_field(
    axes: dict[str, np.ndarray],
    prediction: np.ndarray | Mapping[str, np.ndarray],
    reference: np.ndarray | Mapping[str, np.ndarray] | None,
    path: str,
    title: str = "",
    vertical: str | None = None,
) -> None:
    """Prediction, reference and absolute error over a 2-D grid: one row of three panels per field.

    NaN entries (grid points outside the domain) are left blank.

    Args:
      axes: two named 1-D coordinate arrays, e.g. ``{"x": ..., "t": ...}``; the values are indexed
        ``[first, second]``.
      prediction: values ``(len(first), len(second))``, or ``{field: values}`` for several fields.
      reference: the same shape, or ``{field: values}`` (a field without a reference gets only its
        prediction panel), or ``None``.
      path: the PNG file to write (atomically: written to a temporary file, then renamed).
      title: figure title.
      vertical: the axis drawn vertically; default the first, as in the usual x-t plots of
        Burgers' equation. Give the second (``"y"``) for a spatial domain, which is then drawn
        to scale, x across and y up.

    Example:
      ```python
      import os, tempfile
      import numpy as np
      from hodiff.pinn import plotting

      x, y = np.linspace(-1, 1, 21), np.linspace(-1, 1, 21)
      X, Y = np.meshgrid(x, y, indexing="ij")
      u = np.where(X**2 + Y**2 <= 1, 1 - X**2 - Y**2, np.nan)  # NaN outside the unit disk: blank
      path = os.path.join(tempfile.mkdtemp(), "field.png")
      plotting.plot_field({"x": x, "y": y}, {"u": u, "v": 2 * u}, {"u": u}, path, "two fields")
      assert open(path, "rb").read(4)[1:] == b"PNG"
      ```
    """
    (first, first_values), (second, second_values) = list(axes.items())[:2]
    if vertical not in (None, first, second):
        raise ValueError(f"plot_field: vertical={vertical!r} is not one of the axes {first!r}, {second!r}.")
    across_first = vertical == second  # spatial plot: the first axis runs across, to scale
    named = isinstance(prediction, Mapping)
    predictions = dict(prediction) if isinstance(prediction, Mapping) else {"": prediction}
    if reference is None:
        references: dict[str, np.ndarray] = {}
    elif isinstance(reference, Mapping):
        references = dict(reference)
    else:
        references = {next(iter(predictions)): reference}
    figure = _figure(figsize=(15, 4 * len(predictions)))
    rows = figure.subplots(len(predictions), 3, squeeze=False)
    for panels, (field, predicted) in zip(rows, predictions.items()):
        predicted = np.asarray(predicted, dtype=np.float64)
        wanted = references.get(field)
        label = f"{field}: " if named else ""
        if wanted is None:
            shown = [(panels[0], predicted, "PINN prediction", "RdBu_r", _limits(predicted))]
            for panel in panels[1:]:
                panel.set_axis_off()
            panels[1].text(0.5, 0.5, f"{label}no reference", ha="center", va="center", transform=panels[1].transAxes)
        else:
            wanted = np.asarray(wanted, dtype=np.float64)
            limits = _limits(predicted, wanted)
            error = np.abs(predicted - wanted)
            shown = [
                (panels[0], predicted, "PINN prediction", "RdBu_r", limits),
                (panels[1], wanted, "reference", "RdBu_r", limits),
                (panels[2], error, "absolute error", "magma", _limits(error)),
            ]
        for panel, values, name, colours, (low, high) in shown:
            masked = np.ma.masked_invalid(values)  # outside the domain: blank
            if across_first:
                grid, across, up = (first_values, second_values, masked.T), first, second
            else:
                grid, across, up = (second_values, first_values, masked), second, first
            mesh = panel.pcolormesh(*grid, shading="auto", cmap=colours, vmin=low, vmax=high)
            if across_first:
                panel.set_aspect("equal")
            panel.set_xlabel(across)
            panel.set_ylabel(up)
            panel.set_title(label + name)
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
