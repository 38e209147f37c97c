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


def _fields(
    prediction: np.ndarray | Mapping[str, np.ndarray], reference: np.ndarray | Mapping[str, np.ndarray] | None
) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray], bool]:
    """``({field: prediction}, {field: reference}, named)``; one unnamed field is keyed ``""``."""
    named = isinstance(prediction, Mapping)
    predictions = dict(prediction) if isinstance(prediction, Mapping) else {"": prediction}
    if reference is None:
        references: dict[str, np.ndarray] = {}
    elif isinstance(reference, Mapping):
        references = dict(reference)
    else:
        references = {next(iter(predictions)): reference}
    as_array = lambda values: np.asarray(values, dtype=np.float64)  # noqa: E731
    return (
        {field: as_array(values) for field, values in predictions.items()},
        {field: as_array(values) for field, values in references.items()},
        named,
    )


def _no_reference(panels: Sequence, label: str) -> None:
    for panel in panels:
        panel.set_axis_off()
    panels[0].text(0.5, 0.5, f"{label}no reference", ha="center", va="center", transform=panels[0].transAxes)


def plot_field(
    axes: dict[str, np.ndarray],
    prediction: np.ndarray | Mapping[str, np.ndarray],
    reference: np.ndarray | Mapping[str, np.ndarray] | None,
    path: str,
    title: str = "",
    vertical: str | None = None,
    slices: Mapping[str, Sequence[float]] | None = None,
) -> None:
    """Prediction, reference and absolute error of each field: maps over a 2-D grid, curves in 1-D.

    Over a 2-D grid each field gets a row of three panels (prediction, reference, absolute
    error), and with ``slices`` a second row of curves: prediction and reference along the other
    axis at chosen values of one axis (e.g. ``slices={"t": [0.25, 0.5, 0.75]}``: u(x) at three
    times, each at the grid value nearest the one asked for). On a 1-D grid (one axis) each
    field gets two panels: prediction and reference as curves, and the absolute error. NaN
    entries (grid points outside the domain) are left blank.

    Args:
      axes: one or two named 1-D coordinate arrays, e.g. ``{"x": ...}`` or ``{"x": ..., "t": ...}``;
        the values are indexed ``[first, second]``.
      prediction: values ``(len(first),)`` or ``(len(first), len(second))``, or ``{field: values}``
        for several fields.
      reference: the same shape, or ``{field: values}`` (a field without a reference gets only its
        prediction), or ``None``.
      path: the PNG file to write (atomically: written to a temporary file, then renamed).
      title: figure title.
      vertical: the axis drawn vertically in the maps; default the first, as in the usual x-t
        plots of Burgers' equation. Give the second (``"y"``) for a spatial domain, which is then
        drawn to scale, x across and y up.
      slices: ``{axis name: values}`` (2-D grids only): curves at those values of that axis.

    Example:
      ```python
      import os, tempfile
      import numpy as np
      from hodiff.pinn import plotting

      x, y = np.linspace(-1, 1, 21), np.linspace(-1, 1, 21)
      X, Y = np.meshgrid(x, y, indexing="ij")
      u = np.where(X**2 + Y**2 <= 1, 1 - X**2 - Y**2, np.nan)  # NaN outside the unit disk: blank
      path = os.path.join(tempfile.mkdtemp(), "field.png")
      plotting.plot_field({"x": x, "y": y}, {"u": u, "v": 2 * u}, {"u": u}, path, "two fields", slices={"y": [0.0]})
      assert open(path, "rb").read(4)[1:] == b"PNG"
      plotting.plot_field({"x": x}, np.sin(np.pi * x), np.sin(np.pi * x) + 1e-3, path, "one dimension")
      ```
    """
    if len(axes) not in (1, 2):
        raise ValueError(f"plot_field: axes must name one or two coordinates, got {list(axes)}.")
    predictions, references, named = _fields(prediction, reference)
    if len(axes) == 1:
        if slices:
            raise ValueError("plot_field: slices need a 2-D grid (two axes); a 1-D field is drawn as curves already.")
        _plot_curves(axes, predictions, references, named, path, title)
        return
    (first, first_values), (second, second_values) = list(axes.items())
    if vertical not in (None, first, second):
        raise ValueError(f"plot_field: vertical={vertical!r} is not one of the axes {first!r}, {second!r}.")
    cuts = [(name, float(value)) for name, values in (slices or {}).items() for value in values]
    for name, _ in cuts:
        if name not in axes:
            raise ValueError(f"plot_field: slices name {name!r}, which is not one of the axes {first!r}, {second!r}.")
    across_first = vertical == second  # spatial plot: the first axis runs across, to scale
    rows_per_field = 2 if cuts else 1
    columns = max(3, len(cuts))
    figure = _figure(figsize=(5 * columns, 4 * rows_per_field * len(predictions)))
    grid = figure.subplots(rows_per_field * len(predictions), columns, squeeze=False)
    for index, (field, predicted) in enumerate(predictions.items()):
        panels = grid[rows_per_field * index]
        for panel in panels[3:]:
            panel.set_axis_off()
        wanted = references.get(field)
        label = f"{field}: " if named else ""
        if wanted is None:
            shown = [(panels[0], predicted, "PINN prediction", "RdBu_r", _limits(predicted))]
            _no_reference(panels[1:3], label)
        else:
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
                mesh_grid, across, up = (first_values, second_values, masked.T), first, second
            else:
                mesh_grid, across, up = (second_values, first_values, masked), second, first
            mesh = panel.pcolormesh(*mesh_grid, shading="auto", cmap=colours, vmin=low, vmax=high)
            if across_first:
                panel.set_aspect("equal")
            panel.set_xlabel(across)
            panel.set_ylabel(up)
            panel.set_title(label + name)
            figure.colorbar(mesh, ax=panel)
        if cuts:
            slice_panels = grid[rows_per_field * index + 1]
            for panel in slice_panels[len(cuts) :]:
                panel.set_axis_off()
            for panel, (name, value) in zip(slice_panels, cuts):
                _plot_slice(panel, axes, name, value, predicted, wanted, label)
    figure.suptitle(title)
    _save(figure, path)


def _plot_slice(
    panel, axes: dict[str, np.ndarray], name: str, value: float, predicted: np.ndarray, wanted, label: str
) -> None:
    """Prediction (and reference, dashed) along the other axis at the grid value of ``name`` nearest ``value``."""
    (first, _), (second, _) = list(axes.items())
    along = second if name == first else first
    values = np.asarray(axes[name], dtype=np.float64)
    index = int(np.argmin(np.abs(values - value)))
    cut = (lambda array: array[index, :]) if name == first else (lambda array: array[:, index])
    panel.plot(axes[along], cut(predicted), label="PINN prediction", linewidth=2)
    if wanted is not None:
        panel.plot(axes[along], cut(wanted), "--", color="black", label="reference", linewidth=1)
    panel.set_xlabel(along)
    panel.set_title(f"{label}{name} = {values[index]:.3g}")
    panel.legend()


def _plot_curves(
    axes: dict[str, np.ndarray],
    predictions: dict[str, np.ndarray],
    references: dict[str, np.ndarray],
    named: bool,
    path: str,
    title: str,
) -> None:
    """A 1-D field: prediction and reference as curves, then the absolute error, one row per field."""
    ((name, coordinate),) = axes.items()
    figure = _figure(figsize=(10, 3.5 * len(predictions)))
    rows = figure.subplots(len(predictions), 2, squeeze=False)
    for (curves, errors), (field, predicted) in zip(rows, predictions.items()):
        label = f"{field}: " if named else ""
        wanted = references.get(field)
        curves.plot(coordinate, predicted, label="PINN prediction", linewidth=2)
        if wanted is None:
            _no_reference([errors], label)
        else:
            curves.plot(coordinate, wanted, "--", color="black", label="reference", linewidth=1)
            errors.plot(coordinate, np.abs(predicted - wanted), color="tab:red")
            errors.set_xlabel(name)
            errors.set_title(label + "absolute error")
        curves.set_xlabel(name)
        curves.set_title(label + ("PINN prediction and reference" if wanted is not None else "PINN prediction"))
        curves.legend()
    figure.suptitle(title)
    _save(figure, path)


def plot_history(history: Sequence[dict], path: str, terms: Sequence[str], lbfgs_start: int | None = None) -> None:
    """The total loss and each term against the step (log scale), the start of L-BFGS marked.

    When loss weights changed during the run (``weight_<term>`` columns that are not constant:
    :class:`~hodiff.pinn.AdaptiveWeights`, :class:`~hodiff.pinn.GradNormWeights`), a second panel
    below draws them against the step.

    Args:
      history: rows with ``"step"``, ``"phase"``, ``"loss"`` and one value per term; L-BFGS rows
        count their iterations on from the Adam steps (as :class:`~hodiff.pinn.Trainer` logs them).
      path: the PNG file to write (atomically).
      terms: the loss-term names to draw besides the total.
      lbfgs_start: the step at which L-BFGS started (the Adam steps taken). Default: the last Adam
        row before the first L-BFGS row (the Trainer logs the step Adam ends at when the step count is
        a multiple of ``log_every`` or Adam stopped early), or 0 when L-BFGS ran alone.
    """
    moving = changing_weights(history, terms)
    figure = _figure(figsize=(8, 7.5 if moving else 4.5))
    axis, *below = figure.subplots(2 if moving else 1, 1, sharex=True, squeeze=False)[:, 0]
    steps = np.array([row["step"] for row in history])
    for name in ("loss", *terms):
        axis.semilogy(steps, [row[name] for row in history], label=name, linewidth=2 if name == "loss" else 1)
    start = lbfgs_start if lbfgs_start is not None else _lbfgs_start(history)
    if start is not None:
        axis.axvline(start, color="gray", linestyle=":", label="L-BFGS from here")
    axis.set_ylabel("mean squared residual")
    axis.legend()
    if moving:
        for name in moving:
            below[0].semilogy(steps, [row.get(f"weight_{name}", np.nan) for row in history], label=f"weight {name}")
        below[0].set_ylabel("loss weight")
        below[0].legend()
    (below[0] if moving else axis).set_xlabel("Adam step / L-BFGS iteration")
    _save(figure, path)


def changing_weights(history: Sequence[dict], terms: Sequence[str]) -> list[str]:
    """The terms whose loss weight (history column ``weight_<term>``) is not the same in every row."""
    columns = {name: {row[f"weight_{name}"] for row in history if f"weight_{name}" in row} for name in terms}
    return [name for name, values in columns.items() if len(values) > 1]


def _lbfgs_start(history: Sequence[dict]) -> int | None:
    """The step L-BFGS started at: the last Adam row before the first L-BFGS row; 0 without one; None
    without L-BFGS rows. (The first L-BFGS row is logged ``log_every`` iterations after the start.)"""
    phases = [row["phase"] for row in history]
    if "lbfgs" not in phases:
        return None
    before = [row["step"] for row in history[: phases.index("lbfgs")] if row["phase"] == "adam"]
    return int(before[-1]) if before else 0
