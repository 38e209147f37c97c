"""The relative L2 error of a solution against reference values, over all fields together and per field.

One definition for the library, the callbacks and the examples: PINNacle's L2RE,
``sqrt(sum_f ||p_f - r_f||^2) / sqrt(sum_f ||r_f||^2)`` over the chosen fields, and the same
ratio for each field on its own. Reference entries that are NaN (points outside the domain on
a grid) are left out.

References:
  Hao et al. (2024), "PINNacle: a comprehensive benchmark of physics-informed neural networks
  for solving PDEs", NeurIPS Datasets and Benchmarks (arXiv:2306.08827).

Example:
  ```python
  import numpy as np
  from hodiff.pinn.metrics import relative_l2_errors

  reference = {"u": np.array([1.0, np.nan]), "v": np.array([0.0, 2.0])}
  prediction = {"u": np.array([1.1, 5.0]), "v": np.array([0.0, 2.0])}
  errors = relative_l2_errors(prediction, reference)
  assert np.isclose(errors["relative_l2_error_u"], 0.1)
  assert np.isclose(errors["relative_l2_error"], 0.1 / np.sqrt(5.0))
  ```
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

__all__ = ["relative_l2_errors", "worse_than_zero"]


def relative_l2_errors(
    prediction: Mapping[str, Any], reference: Mapping[str, Any], fields: Sequence[str] | None = None
) -> dict[str, float]:
    """Relative L2 errors over the finite reference entries, all chosen fields together and per field.

    Args:
      prediction: ``{field: array}``, every field of ``reference`` included (same shapes).
      reference: ``{field: array}``; NaN entries are left out (with the prediction there).
      fields: the fields combined in ``relative_l2_error`` (default: all of ``reference``).

    Returns:
      ``{"relative_l2_error": sqrt(sum_f ||p_f - r_f||^2 / sum_f ||r_f||^2), "relative_l2_error_<f>": ...}``,
      NaN where the reference is all zero.

    Raises:
      ValueError: a field of ``reference`` or ``fields`` is missing from ``prediction`` or ``reference``,
        or a prediction's shape differs from its reference's.
    """
    chosen = tuple(reference if fields is None else fields)
    missing = [f for f in (*reference, *chosen) if f not in prediction or f not in reference]
    if missing:
        raise ValueError(
            f"relative_l2_errors: fields {sorted(set(missing))} are missing from the prediction {sorted(prediction)} "
            f"or the reference {sorted(reference)}; give both the same fields."
        )
    squares = {}
    for name, wanted in reference.items():
        wanted = np.asarray(wanted, dtype=np.float64)
        predicted = np.asarray(prediction[name], dtype=np.float64)
        if predicted.shape != wanted.shape:
            raise ValueError(
                f"relative_l2_errors: field {name!r} has prediction shape {predicted.shape} but reference shape "
                f"{wanted.shape}; compare values at the same points."
            )
        inside = np.isfinite(wanted)
        difference = predicted[inside] - wanted[inside]
        squares[name] = (float(np.sum(difference**2)), float(np.sum(wanted[inside] ** 2)))
    ratio = lambda numerator, denominator: float(np.sqrt(numerator / denominator)) if denominator else float("nan")  # noqa: E731
    errors = {"relative_l2_error": ratio(sum(squares[f][0] for f in chosen), sum(squares[f][1] for f in chosen))}
    errors.update({f"relative_l2_error_{name}": ratio(*pair) for name, pair in squares.items()})
    return errors


def worse_than_zero(
    prediction: Mapping[str, Any],
    reference: Mapping[str, Any],
    times: Any = None,
    edges: Sequence[float] | None = None,
    fields: Sequence[str] | None = None,
    marched: bool = True,
) -> str | None:
    """Says so when a prediction is worse than predicting zero everywhere, and from which time interval on.

    The zero prediction's relative L2 error is exactly 1, so a larger error means that the solution learnt
    less than nothing; in a time-marched run it usually grew in one window and was carried on by the next.

    Args:
      prediction: ``{field: (N,)}``, as :func:`relative_l2_errors`.
      reference: ``{field: (N,)}``, as :func:`relative_l2_errors`.
      times: ``(N,)`` the time of each point (``None``: a steady problem).
      edges: the bounds of the intervals (the time windows, or equal slices), ascending.
      fields: the fields combined (default: all of ``reference``).
      marched: whether the intervals are the time windows of a marched run (``True``) or slices of one run's
        time axis (``False``); it names them in the message.

    Returns:
      ``None`` when the error over all points is below 1; else a message with the error, the first interval
      whose own error passes 1 (or the worst one) and every interval's error.

    Example:
      ```python
      import numpy as np
      from hodiff.pinn.metrics import worse_than_zero

      t = np.linspace(0.0, 2.0, 9)
      exact = {"u": np.ones(9)}
      assert worse_than_zero({"u": np.ones(9)}, exact, t, (0.0, 1.0, 2.0)) is None
      grown = {"u": np.where(t > 1.0, 5.0, 1.0)}
      assert "window 2 of 2 (t in [1, 2])" in worse_than_zero(grown, exact, t, (0.0, 1.0, 2.0))
      ```
    """
    total = relative_l2_errors(prediction, reference, fields)["relative_l2_error"]
    if not total > 1.0:
        return None
    lost = f"the relative L2 error {total:.3g} is worse than predicting zero everywhere (1.0): the solution was lost."
    if times is None or edges is None:
        return lost + " Look at the loss terms in history.csv: one of them may be off by orders of magnitude."
    times = np.asarray(times, dtype=float)
    chosen = reference if fields is None else {f: reference[f] for f in fields}
    per_interval = []
    for k, (start, end) in enumerate(zip(edges[:-1], edges[1:])):
        inside = (times >= start) & ((times < end) if k < len(edges) - 2 else (times <= end))
        if not inside.any():
            per_interval.append(0.0)
            continue
        part = {name: np.asarray(prediction[name])[inside] for name in chosen}
        wanted = {name: np.asarray(values)[inside] for name, values in chosen.items()}
        per_interval.append(relative_l2_errors(part, wanted)["relative_l2_error"])
    passing = [k for k, error in enumerate(per_interval) if error > 1.0]
    first = passing[0] if passing else int(np.nanargmax(per_interval))
    listed = ", ".join(f"{error:.2g}" for error in per_interval)
    interval = "window" if marched else "time slice"
    advice = (
        "Later windows start from that one's end, so look at its training first (its loss terms in history.csv)."
        if marched
        else "Look at the residual there first (its loss terms in history.csv are the whole run's)."
    )
    return (
        f"{lost} The error passes 1 in {interval} {first + 1} of {len(per_interval)} (t in [{edges[first]:g}, "
        f"{edges[first + 1]:g}]); per {interval}: {listed}. {advice}"
    )
