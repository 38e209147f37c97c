"""Hard Dirichlet conditions from named boundary pieces: the transfinite lift and the distance product.

``hard_dirichlet(domain, {"circle": 1.0, "edges": 0.2})`` is an output transform that makes the
solution equal the given values on the named pieces of the domain's boundary, whatever the network
outputs (Sukumar & Srivastava 2022). With ``phi_i`` the approximate distance to piece ``i``
(:meth:`Geometry.distance <hodiff.pinn.Geometry.distance>` with ``where=`` the piece, or a function you
give) and ``g_i`` its value, the output is

    u = sum_i w_i g_i + (prod_i phi_i) N,    w_i = prod_{j != i} phi_j / sum_k prod_{j != k} phi_k,

the transfinite interpolation of the pieces' values (``w_i = 1`` on piece ``i``, 0 on the others) plus
the network's output times a function that vanishes on every piece. With one piece the lift is ``g``
itself. Fields the conditions do not hold (a pressure) are the network's outputs unchanged.

References:
  Sukumar & Srivastava (2022), "Exact imposition of boundary conditions with distance functions in
  physics-informed deep neural networks", CMAME 389, 114333 (section 5: transfinite interpolation).

Example:
  ```python
  import numpy as np
  import tensorflow as tf
  from hodiff import pinn

  square = pinn.Rectangle(("x", "y"), (-1.0, -1.0), (1.0, 1.0), name="edges")
  domain = square - pinn.Disk((0.0, 0.0), 0.3, name="circle")
  lift = pinn.hard_dirichlet(domain, {"circle": 1.0, "edges": 0.2})
  problem = pinn.Problem(domain, needs=("u", "u_xx", "u_yy"),
                         residual=lambda d, x, p: d["u_xx"] + d["u_yy"], output_transform=lift)
  u = problem.solution(pinn.mlp(domain, width=8, depth=2))
  on_circle = tf.constant([[0.3, 0.0], [0.0, -0.3]], tf.float64)
  on_edges = tf.constant([[1.0, 0.4], [-0.5, -1.0]], tf.float64)
  assert np.allclose(u(on_circle).numpy(), 1.0) and np.allclose(u(on_edges).numpy(), 0.2)
  ```
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import tensorflow as tf

__all__ = ["hard_dirichlet"]


def hard_dirichlet(
    domain: Any,
    values: Mapping[str, Any],
    fields: Sequence[str] = ("u",),
    constrained: Sequence[str] | None = None,
    distances: Mapping[str, Callable[[Any], tf.Tensor]] | None = None,
) -> Callable[[Any, tf.Tensor], tf.Tensor]:
    """An output transform (``Problem(..., output_transform=...)``) holding Dirichlet values on boundary pieces.

    Args:
      domain: the problem's domain; its boundary pieces are named (``domain.boundary_names``).
      values: ``{piece: value}``: the value of the constrained fields on each piece: a number, a function
        ``g(x) -> (N,)`` or ``(N, k)`` of the named coordinate columns (as a residual gets them), or a tuple
        of one number or function per constrained field.
      fields: the problem's fields, in the network's output order.
      constrained: the fields the values hold (default: every field); the others are the network's outputs.
      distances: ``{piece: phi(x) -> (N,)}``, optional: a distance function of your own for a piece (zero on
        it, positive inside the domain), e.g. ``(1 - x^2)(1 - y^2)`` for a square, which is smoother at its
        corners than the square's own distance; the other pieces use ``domain.distance(points, where=piece)``.

    Returns:
      ``transform(x, outputs) -> (N, len(fields))``.

    References:
      Sukumar & Srivastava (2022), CMAME 389, 114333, section 5.

    Example: see the module docstring.
    """
    fields = tuple(fields)
    constrained = fields if constrained is None else tuple(constrained)
    distances = dict(distances or {})
    _check(domain, values, fields, constrained, distances)
    pieces = list(values)
    columns = [fields.index(name) for name in constrained]
    place = np.zeros((len(constrained), len(fields)))  # (k, F): constrained field i into its column
    place[np.arange(len(constrained)), columns] = 1.0
    held = place.sum(axis=0)  # 1 on the constrained columns, 0 on the free ones

    def distance(piece: str, x: Any) -> tf.Tensor:
        value = distances[piece](x) if piece in distances else domain.distance(x.points, where=piece)
        return tf.reshape(tf.convert_to_tensor(value), [-1])

    def transform(x: Any, outputs: tf.Tensor) -> tf.Tensor:
        dtype = outputs.dtype
        phis = [tf.cast(distance(piece, x), dtype) for piece in pieces]
        others = [_product(phis[:i] + phis[i + 1 :], phis[i]) for i in range(len(pieces))]
        total = others[0] if len(others) == 1 else tf.add_n(others)
        lift = tf.add_n(
            [_value(values[p], x, len(constrained), dtype) * (w / total)[:, None] for p, w in zip(pieces, others)]
        )
        vanishing = _product(phis, phis[0])[:, None]
        lifted = tf.matmul(lift, tf.constant(place, dtype))
        return lifted + (vanishing * tf.constant(held, dtype) + tf.constant(1.0 - held, dtype)) * outputs

    return transform


def _product(factors: list[tf.Tensor], like: tf.Tensor) -> tf.Tensor:
    return math.prod(factors[1:], start=factors[0]) if factors else tf.ones_like(like)


def _value(value: Any, x: Any, count: int, dtype: Any) -> tf.Tensor:
    """A piece's value as an ``(N, count)`` tensor: numbers broadcast, functions evaluated at ``x``."""
    parts = value if isinstance(value, tuple) else (value,) * count if count > 1 else (value,)
    rows = tf.ones_like(tf.cast(x.points[:, :1], dtype))
    columns = []
    for part in parts:
        if callable(part):
            result = tf.cast(tf.convert_to_tensor(part(x)), dtype)
            columns.append(result[:, None] if result.shape.rank == 1 else result)
        else:
            columns.append(rows * tf.constant(float(part), dtype))
    return columns[0] if len(columns) == 1 else tf.concat(columns, axis=1)


def _check(domain: Any, values: Any, fields: tuple, constrained: tuple, distances: dict) -> None:
    if not isinstance(values, Mapping) or not values:
        raise TypeError(
            f"hard_dirichlet: values must be a dict {{piece: value}} naming at least one boundary piece, got "
            f"{values!r}."
        )
    names = tuple(getattr(domain, "boundary_names", ()))
    unknown = [piece for piece in [*values, *distances] if piece not in names]
    if unknown:
        raise ValueError(f"hard_dirichlet: {unknown} are not boundary pieces of {domain!r}; its pieces are {names}.")
    extra = [piece for piece in distances if piece not in values]
    if extra:
        raise ValueError(f"hard_dirichlet: distances names {extra}, which values does not; give both for a piece.")
    missing = [name for name in constrained if name not in fields]
    if missing or not constrained:
        raise ValueError(
            f"hard_dirichlet: constrained={constrained!r} must name some of the fields {fields} (missing: {missing})."
        )
    for piece, value in values.items():
        parts = value if isinstance(value, tuple) else (value,)
        if isinstance(value, tuple) and len(value) != len(constrained):
            raise ValueError(
                f"hard_dirichlet: the value of {piece!r} has {len(value)} entries for {len(constrained)} constrained "
                f"fields {constrained}; give one number or function per field."
            )
        for part in parts:
            if not callable(part) and not (isinstance(part, (int, float)) and not isinstance(part, bool)):
                raise TypeError(
                    f"hard_dirichlet: the value of {piece!r} must be a number or a function g(x), got {part!r}."
                )
            if not callable(part) and not math.isfinite(part):
                raise ValueError(f"hard_dirichlet: the value of {piece!r} is {part}; give a finite number.")
