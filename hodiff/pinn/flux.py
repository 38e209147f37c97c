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
- :func:`neumann_balance`: for a problem whose conditions fix only the normal derivative (a
  pure-Neumann problem), how far its sources are from balancing its boundary fluxes: when they
  do not, no solution exists and the loss cannot reach zero.

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

__all__ = ["gradient_field", "neumann_balance", "polygon_flux", "segment_flux"]

VectorField = Callable[[np.ndarray], Any]
BALANCED = 1e-2  # a mismatch under this fraction of the sources' and fluxes' sizes counts as balanced


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


def _pure_neumann(problem: Any) -> tuple[list, list] | None:
    """The problem's (Neumann, Periodic) conditions when it is a steady one-field problem whose conditions fix only
    the normal derivative (no value anywhere, no output transform), else ``None``."""
    from hodiff.pinn.conditions import Neumann, Periodic, Robin

    domain = problem.domain
    if len(problem.fields) != 1 or domain.extras or problem.output_transform is not None or problem.stochastic:
        return None
    neumann = [c for c in problem.conditions if isinstance(c, Neumann) and not isinstance(c, Robin)]
    periodic = [c for c in problem.conditions if type(c) is Periodic and c.derivatives >= 1]
    if not neumann or len(neumann) + len(periodic) != len(problem.conditions):
        return None
    if any(not partial for _, partial in problem.needs.values()):  # the residual reads u itself: u is not free
        return None
    return neumann, periodic


def _single(result: Any) -> np.ndarray:
    """A residual's one equation as a float64 ``(N,)`` array."""
    if isinstance(result, dict):
        (result,) = result.values()
    elif isinstance(result, (tuple, list)):
        (result,) = result
    return np.asarray(result, dtype=np.float64).reshape(-1)


def _laplacian_form(problem: Any, x: Any, count: int) -> tuple[float, np.ndarray] | None:
    """``(a, s)`` when the residual is ``a * laplacian(u) + s(x)`` at the points ``x`` (found by calling it on chosen
    values of its needs), else ``None``."""
    import tensorflow as tf

    from hodiff.pinn.names import NeededValues

    space = problem.domain.space
    seconds = {key for key, (_, partial) in problem.needs.items() if len(partial) == 2 and partial[0] == partial[1]}
    if {problem.needs[key][1][0] for key in seconds} != set(space):
        return None
    parameters = {name: tf.constant(value, tf.float64) for name, value in problem.parameters.items()}

    def residual(values: dict) -> np.ndarray:
        d = {key: tf.constant(values.get(key, np.zeros(count)), tf.float64) for key in problem.needs}
        return _single(problem.residual(NeededValues(d, "Problem"), x, parameters))

    try:
        source = residual({})
        effects = {key: residual({key: np.ones(count)}) - source for key in problem.needs}
        scale = max(1.0, float(np.max(np.abs(source))))
        coefficient = float(np.mean(effects[next(iter(seconds))]))
        for key, effect in effects.items():
            wanted = coefficient if key in seconds else 0.0
            if not np.allclose(effect, wanted, rtol=1e-6, atol=1e-9 * scale):
                return None
        rng = np.random.default_rng(0)
        values = {key: rng.normal(size=count) for key in problem.needs}
        laplacian = sum(values[key] for key in seconds)
        if coefficient == 0.0 or not np.allclose(
            residual(values) - source, coefficient * laplacian, rtol=1e-6, atol=1e-9 * scale
        ):
            return None
    except Exception:  # noqa: BLE001 - a residual these values do not suit is not of the form: nothing to say
        return None
    return coefficient, source


def neumann_balance(problem: Any, count: int = 4096, seed: int = 0) -> dict[str, Any] | None:
    """How far the sources of a pure-Neumann problem are from balancing its boundary fluxes.

    A steady problem ``a * laplacian(u) + s(x) = 0`` whose conditions give only the outward normal
    derivative, ``du/dn = g`` (:class:`~hodiff.pinn.Neumann` on the whole boundary, faces paired by
    :class:`~hodiff.pinn.Periodic` adding nothing), has a solution only when integrating the
    equation over the domain gives zero (the divergence theorem)::

        a * integral(g ds over the boundary) + integral(s dx over the domain) = 0

    Otherwise the conditions cannot all hold: the loss cannot reach zero, and training stalls at a
    compromise (the :class:`~hodiff.pinn.diagnostics.StallDiagnostic` names this). The integrals are
    means over ``count`` Sobol points times :meth:`Geometry.measure <hodiff.pinn.geometry.Geometry.measure>`
    and :meth:`~hodiff.pinn.geometry.Geometry.boundary_measure`.

    Args:
      problem: a :class:`~hodiff.pinn.Problem`.
      count: points for each integral.
      seed: the Sobol points' seed.

    Returns:
      ``None`` unless the problem is a steady, one-field problem whose conditions are all
      :class:`~hodiff.pinn.Neumann` (and :class:`~hodiff.pinn.Periodic` with derivatives), covering
      the boundary once, with no output transform and a residual that does not read ``u`` itself.
      Else a dict: ``"conditions"`` (the Neumann conditions' names); and, when the residual is
      ``a * laplacian(u) + s(x)`` (checked by calling it on chosen values), ``"coefficient"``
      (``a``), ``"sources"`` (``integral s dx``), ``"fluxes"`` (``a * integral g ds``),
      ``"mismatch"`` (their sum), ``"relative"`` (``|mismatch|`` over
      ``integral |s| dx + |a| integral |g| ds``) and ``"balanced"`` (relative under 1e-2); these
      are ``None`` when the residual has another form.

    Example:
      ```python
      from hodiff import pinn
      from hodiff.pinn.flux import neumann_balance

      square = pinn.Rectangle(("x", "y"), (0, 0), (1, 1))
      heated = pinn.Problem(  # -laplacian(u) = 1 with insulated walls: the heat has nowhere to go
          square, needs=("u_xx", "u_yy"), residual=lambda d, x, p: d["u_xx"] + d["u_yy"] + 1.0,
          conditions=[pinn.Neumann(0.0, count=16)],
      )
      check = neumann_balance(heated)
      assert not check["balanced"] and abs(check["sources"] - 1.0) < 1e-9 and check["fluxes"] == 0.0
      cooled = pinn.Problem(  # ... unless it leaves through the walls: du/dn = -1/4 on each of the 4 sides
          square, needs=("u_xx", "u_yy"), residual=lambda d, x, p: d["u_xx"] + d["u_yy"] + 1.0,
          conditions=[pinn.Neumann(-0.25, count=16)],
      )
      assert neumann_balance(cooled)["balanced"]
      ```
    """
    import tensorflow as tf

    from hodiff.pinn.conditions import named_columns
    from hodiff.pinn.names import NeededValues

    found = _pure_neumann(problem)
    if found is None:
        return None
    neumann, periodic = found
    domain = problem.domain
    try:
        covered = sum(domain.boundary_measure(where=c.where, seed=seed) for c in neumann)
        for condition in periodic:
            low, high = domain.bounds[condition.coord]
            faces = lambda x, c=condition.coord, a=low, b=high: np.isclose(x[c], a) | np.isclose(x[c], b)
            covered += domain.boundary_measure(where=faces, seed=seed)
        total = domain.boundary_measure(seed=seed)
    except ValueError:  # a domain without a measurable boundary (a point cloud)
        return None
    if abs(covered - total) > BALANCED * total:  # a free part of the boundary, or conditions that overlap
        return None
    result: dict[str, Any] = {"conditions": [c.name for c in neumann]}
    result.update(dict.fromkeys(("coefficient", "sources", "fluxes", "mismatch", "relative", "balanced")))
    interior = tf.constant(domain.sample_interior(count, "sobol", seed), tf.float64)
    form = _laplacian_form(problem, named_columns(interior, domain.coords), count)
    if form is None:
        return result
    coefficient, source = form
    volume = domain.measure(seed=seed)
    sources, fluxes, scale = volume * float(np.mean(source)), 0.0, volume * float(np.mean(np.abs(source)))
    for condition in neumann:
        points, normals = domain.sample_boundary(count, "sobol", seed, where=condition.where)
        x = tf.constant(points, tf.float64)
        zeros = tf.zeros([count], tf.float64)
        d = NeededValues({key: zeros for key in condition.needs_for(domain.coords)}, f"Neumann {condition.name!r}")
        n = {c: tf.constant(normals[:, i], tf.float64) for i, c in enumerate(domain.coords)}
        try:
            g = -_single(condition.evaluate(d, named_columns(x, domain.coords), n, {"points": x}))
        except Exception:  # noqa: BLE001 - a value function these points do not suit: nothing to say
            return result
        g = np.broadcast_to(g, (count,))
        measure = coefficient * domain.boundary_measure(where=condition.where, seed=seed)
        fluxes += measure * float(np.mean(g))
        scale += abs(measure) * float(np.mean(np.abs(g)))
    mismatch = sources + fluxes
    relative = abs(mismatch) / scale if scale > 0 else 0.0
    result.update(
        coefficient=coefficient,
        sources=sources,
        fluxes=fluxes,
        mismatch=mismatch,
        relative=relative,
        balanced=bool(relative < BALANCED),
    )
    return result
