"""Conservation checks on a trained solution: the flux of a vector field through a cut or a closed curve.

For a conserved quantity (heat in a steady conductor, mass in incompressible flow) the flux through
every cut across the domain is the same, and the flux out of any closed curve that holds no source
is zero. A PINN can fit its loss and still break both; these functions measure them (2-D domains).

- :func:`gradient_field`: ``points -> grad u`` of a trained solution (``q = -k grad u`` is a heat flux).
- :func:`segment_flux`: ``integral q . n ds`` over the part of a segment inside a domain,
  ``n`` the segment's direction turned clockwise (from ``(0, 0)`` to ``(0, 1)``: ``n = (1, 0)``).
  Gauss-Legendre quadrature on each piece of the segment inside the domain (the ends of the
  pieces found by bisection on ``domain.contains``, to its tolerance, ~1e-9 of the domain size), so
  holes the cut crosses are left out.
- :func:`polygon_flux`: the flux out of a closed polygon (counter-clockwise vertices): the sum of
  its edges' fluxes.

Example:
  ```python
  import numpy as np
  from hodiff import pinn
  from hodiff.pinn.flux import polygon_flux, segment_flux

  plate = pinn.Rectangle(("x", "y"), (0, 0), (2, 1)) - pinn.Disk((0.5, 0.5), 0.2)
  q = lambda p: np.stack([np.ones(len(p)), np.zeros(len(p))], axis=1)  # a uniform flow along x
  assert abs(segment_flux(q, (0.5, 0.0), (0.5, 1.0), domain=plate) - 0.6) < 1e-8  # the disk blocks 0.4
  assert abs(polygon_flux(q, [(0.1, 0.1), (0.9, 0.1), (0.9, 0.9), (0.1, 0.9)])) < 1e-12  # nothing is created
  ```
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

__all__ = ["gradient_field", "polygon_flux", "segment_flux"]

VectorField = Callable[[np.ndarray], Any]


def gradient_field(solution: Any, field: int = 0, dtype: Any = None) -> Callable[[np.ndarray], np.ndarray]:
    """``points (N, d) -> (N, d)`` gradient of output ``field`` of a trained solution.

    Args:
      solution: a :class:`~hodiff.pinn.Trainer` (its ``solution``, output transform included) or a
        function ``x (N, d) tensor -> (N, fields)`` such as ``problem.solution(model)``.
      field: the output column (an index, or a field name with a trainer).
      dtype: the points' dtype (default: the trainer's, else float64).

    Returns:
      A function of numpy points returning the numpy gradient, compiled once (XLA).
    """
    import tensorflow as tf

    from hodiff.derivatives import batch_jacobian

    function = getattr(solution, "solution", solution)
    if isinstance(field, str):
        fields = tuple(getattr(getattr(solution, "problem", None), "fields", ()))
        if field not in fields:
            raise ValueError(
                f"gradient_field: field={field!r} is not a field of the solution {fields or '(no problem known)'}; "
                "give a Trainer with that field, or the column index."
            )
        field = fields.index(field)
    dtype = tf.as_dtype(dtype or getattr(solution, "dtype", None) or tf.float64)
    jacobian = tf.function(batch_jacobian(function), jit_compile=True, reduce_retracing=True, autograph=False)

    def gradient(points: np.ndarray) -> np.ndarray:
        return jacobian(tf.constant(np.asarray(points), dtype)).numpy()[:, field, :]

    return gradient


def _pieces_inside(domain: Any, start: np.ndarray, end: np.ndarray, samples: int) -> list[tuple[float, float]]:
    """The parameter intervals ``[t0, t1]`` of ``start + t (end - start)`` that lie in ``domain``."""
    t = np.linspace(0.0, 1.0, samples)
    inside = np.asarray(domain.contains(start + t[:, None] * (end - start)), dtype=bool)

    def crossing(a: float, b: float, inside_a: bool) -> float:
        for _ in range(60):  # bisection to the double precision of t
            middle = 0.5 * (a + b)
            if bool(domain.contains((start + middle * (end - start))[None])[0]) == inside_a:
                a = middle
            else:
                b = middle
        return 0.5 * (a + b)

    edges = [0.0] if inside[0] else []  # alternately where a piece begins and where it ends
    for i in range(1, samples):
        if inside[i] != inside[i - 1]:
            edges.append(crossing(t[i - 1], t[i], bool(inside[i - 1])))
    if inside[-1]:
        edges.append(1.0)
    return [(a, b) for a, b in zip(edges[::2], edges[1::2]) if b > a]


def segment_flux(
    vector_field: VectorField,
    start: Sequence[float],
    end: Sequence[float],
    domain: Any = None,
    order: int = 64,
    samples: int = 1025,
) -> float:
    """The flux ``integral q . n ds`` of ``vector_field`` through the segment from ``start`` to ``end``.

    Args:
      vector_field: ``q(points (N, 2)) -> (N, 2)`` (numpy in, array-like out), e.g. the heat flux
        ``lambda p: -gradient_field(trainer)(p)``.
      start: the segment's first end ``(x, y)``.
      end: its other end; the normal is the direction ``end - start`` turned clockwise.
      domain: a geometry with ``contains``: only the parts of the segment inside it count (a cut
        across a plate with holes); ``None`` integrates over the whole segment.
      order: Gauss-Legendre points per piece inside the domain.
      samples: points of the search for the pieces' ends (a piece shorter than
        ``length / samples`` may be missed).

    Returns:
      The flux, a float.

    Raises:
      ValueError: ``start`` and ``end`` are not distinct 2-D points, or ``vector_field`` returns the
        wrong shape.
    """
    a, b = np.asarray(start, dtype=np.float64), np.asarray(end, dtype=np.float64)
    if a.shape != (2,) or b.shape != (2,) or not np.all(np.isfinite([*a, *b])):
        raise ValueError(f"segment_flux: start and end must be finite 2-D points (x, y), got {start} and {end}.")
    length = float(np.hypot(*(b - a)))
    if length == 0.0:
        raise ValueError(f"segment_flux: start and end are the same point {a.tolist()}; give a segment.")
    normal = np.array([b[1] - a[1], a[0] - b[0]]) / length
    pieces = [(0.0, 1.0)] if domain is None else _pieces_inside(domain, a, b, samples)
    if not pieces:
        return 0.0
    nodes, weights = np.polynomial.legendre.leggauss(order)
    t = np.concatenate([t0 + (t1 - t0) * (nodes + 1) / 2 for t0, t1 in pieces])
    w = np.concatenate([(t1 - t0) / 2 * weights for t0, t1 in pieces]) * length
    points = a + t[:, None] * (b - a)
    values = np.asarray(vector_field(points), dtype=np.float64)
    if values.shape != points.shape:
        raise ValueError(
            f"segment_flux: vector_field must map points {points.shape} to vectors of the same shape; it returned "
            f"shape {values.shape}."
        )
    return float(np.sum(w * (values @ normal)))


def polygon_flux(
    vector_field: VectorField, vertices: Sequence[Sequence[float]], domain: Any = None, **options
) -> float:
    """The flux of ``vector_field`` out of the closed polygon ``vertices`` (counter-clockwise).

    Zero for a field without sources inside the polygon (divergence-free). Arguments as in
    :func:`segment_flux`, whose ``options`` (``order``, ``samples``) apply to every edge.

    Raises:
      ValueError: fewer than 3 vertices, or clockwise ones (the flux would come out with the wrong sign).
    """
    corners = np.asarray(vertices, dtype=np.float64)
    if corners.ndim != 2 or corners.shape[1] != 2 or len(corners) < 3:
        raise ValueError(f"polygon_flux: vertices must be 3 or more (x, y) points, got shape {corners.shape}.")
    following = np.roll(corners, -1, axis=0)
    if np.sum(corners[:, 0] * following[:, 1] - following[:, 0] * corners[:, 1]) <= 0:
        raise ValueError("polygon_flux: the vertices run clockwise (or enclose no area); list them counter-clockwise.")
    return sum(segment_flux(vector_field, a, b, domain, **options) for a, b in zip(corners, following))
