"""Window restarts: the solution of the window before as a series in space, fitted once on a grid.

Without a restart, time window ``k`` of :class:`~hodiff.pinn.TimeWindows` evaluates and
differentiates the frozen networks of all ``k`` windows before it, so the ``k``-th window costs
``k`` times the first. :class:`SeriesRestart` samples the window before at its end on a tensor grid
of nodes, fits a tensor-product series through the samples (one 1-D basis per spatial coordinate)
and hands the next window that series instead: every window then costs the same, and the series
is as differentiable as the network, under XLA too.

The bases (pick the one whose boundary behaviour is the solution's, so that the fit keeps what the
hard conditions hold exactly):

- :class:`Fourier`: ``cos(k w s)``, ``sin(k w s)`` on equispaced samples of one period, for a periodic
  coordinate;
- :class:`Sine`: ``sin(m pi (s - a) / (b - a))`` on the interior nodes of an equispaced grid: zero at both
  ends (Dirichlet walls);
- :class:`Cosine`: ``cos(m pi (s - a) / (b - a))`` on cell centres (DCT-II's nodes): zero slope at both ends
  (zero flux);
- :class:`Chebyshev`: ``T_m`` on the Chebyshev-Gauss-Lobatto nodes, ends included: any smooth function
  without conditions at the ends, spectrally accurate, the nodes clustered at the ends (wall layers); a
  value the window before holds exactly at an end (a wall, an inflow) the interpolant holds there too.

The series interpolates the samples (least squares for :class:`Fourier`, whose Nyquist sine is left
out), so a function in the span of the bases is reproduced to rounding.

References:
  Trefethen (2000), "Spectral Methods in MATLAB", SIAM (chapters 6 and 8: Chebyshev points and
  interpolation); Boyd (2001), "Chebyshev and Fourier Spectral Methods", Dover; Hesthaven & Warburton (2008),
  "Nodal Discontinuous Galerkin Methods", Springer (section 5.3: the exponential filter); Gottlieb & Hesthaven
  (2001), "Spectral methods for hyperbolic problems", J. Comput. Appl. Math. 128.

Example:
  ```python
  import numpy as np
  import tensorflow as tf
  from hodiff import pinn

  domain = pinn.Interval("x", 0.0, 1.0) * pinn.TimeDomain("t", 0.0, 1.0)
  restart = pinn.SeriesRestart(domain, {"x": pinn.Chebyshev(0.0, 1.0, 12)})
  previous = lambda points: tf.exp(points[:, :1]) * (1.0 + points[:, 1:])  # a window's solution
  series = restart(previous, 0.5)  # samples previous at t = 0.5 once
  x = tf.constant([[0.0, 0.5], [0.3, 0.5], [1.0, 0.5]], tf.float64)
  assert np.allclose(series(x).numpy()[:, 0], 1.5 * np.exp([0.0, 0.3, 1.0]), atol=1e-10)
  ```
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any, ClassVar, cast

import numpy as np
import tensorflow as tf
from numpy.polynomial import chebyshev

from hodiff import _validate

__all__ = ["Basis", "Chebyshev", "Cosine", "Fourier", "SeriesRestart", "Sine"]


def _check_basis(name: str, low: float, high: float, samples: int, least: int) -> None:
    _validate.check_count(samples, "samples", name, least)
    if not float(low) < float(high):
        raise ValueError(f"{name}: the interval [{low}, {high}] is empty; give low < high.")


class Basis:
    """A 1-D basis of :class:`SeriesRestart`: its ``nodes``, its ``functions(s) -> (N, functions)`` of an
    ``(N, 1)`` tensor, the same at the nodes as an exact ``node_matrix()``, the nodes' ``node_weights()``
    under which the functions are orthogonal, and where it holds, ``inside(s)`` (``None``: everywhere)."""

    samples: int

    @property
    def nodes(self) -> np.ndarray:
        """The ``samples`` nodes where the window before is sampled, ``(samples,)``."""
        raise NotImplementedError

    def functions(self, s: tf.Tensor) -> tf.Tensor:
        """The basis functions at the ``(N, 1)`` tensor ``s``, ``(N, functions)``, differentiable to any order."""
        raise NotImplementedError

    def node_matrix(self) -> np.ndarray:
        """The functions at the nodes, ``(samples, functions)``, with their phases reduced exactly (float64)."""
        raise NotImplementedError

    def node_weights(self) -> np.ndarray:
        """The nodes' weights, under which the functions are orthogonal on the nodes (here all 1)."""
        return np.ones(self.samples)

    def inside(self, s: tf.Tensor) -> tf.Tensor | None:
        """Where the series holds: ``None``, everywhere (a periodic basis)."""
        return None

    def relative_orders(self) -> np.ndarray:
        """Each function's order (its mode number) over the highest, ``(functions,)`` in ``[0, 1]``: what a
        spectral filter damps by."""
        raise NotImplementedError


@dataclasses.dataclass(frozen=True)
class _OnInterval(Basis):
    """A basis on ``[low, high]`` with ``samples >= least`` nodes, zero outside the interval."""

    low: float
    high: float
    samples: int
    least: ClassVar[int] = 1

    def __post_init__(self):
        _check_basis(type(self).__name__, self.low, self.high, self.samples, self.least)

    def inside(self, s: tf.Tensor) -> tf.Tensor | None:
        """1 where ``s`` lies in ``[low, high]``, 0 elsewhere, as ``s``'s dtype."""
        return tf.cast((s >= self.low) & (s <= self.high), s.dtype)

    def relative_orders(self) -> np.ndarray:
        """``m / (samples - 1)`` for the functions ``m = 0 .. samples - 1`` (:class:`Cosine`, :class:`Chebyshev`)."""
        return np.arange(self.samples) / max(1, self.samples - 1)


@dataclasses.dataclass(frozen=True)
class Fourier(Basis):
    """``1, cos(k w (s - low)), sin(k w (s - low))``, ``w = 2 pi / period``, ``k < samples / 2``, fitted at
    ``samples`` equispaced nodes of ``[low, low + period)``; periodic, so it holds everywhere.

    Args:
      low: where the sampled period starts.
      period: the period, > 0.
      samples: nodes per period, >= 2.
    """

    low: float
    period: float
    samples: int

    def __post_init__(self):
        _check_basis("Fourier", self.low, self.low + self.period, self.samples, 2)

    @property
    def nodes(self) -> np.ndarray:
        return self.low + self.period * np.arange(self.samples) / self.samples

    def functions(self, s: tf.Tensor) -> tf.Tensor:
        k = tf.constant(np.arange(1, (self.samples + 1) // 2)[None, :], s.dtype)
        phase = (s - self.low) * (2.0 * np.pi / self.period) * k
        return tf.concat([tf.ones_like(s), tf.cos(phase), tf.sin(phase)], axis=1)

    def node_matrix(self) -> np.ndarray:
        j, k = np.arange(self.samples)[:, None], np.arange(1, (self.samples + 1) // 2)[None, :]
        phase = 2.0 * np.pi * (j * k % self.samples) / self.samples
        return np.concatenate([np.ones((self.samples, 1)), np.cos(phase), np.sin(phase)], axis=1)

    def relative_orders(self) -> np.ndarray:
        k = np.arange(1, (self.samples + 1) // 2) / max(1, (self.samples + 1) // 2 - 1)
        return np.concatenate([[0.0], k, k])


@dataclasses.dataclass(frozen=True)
class Sine(_OnInterval):
    """``sin(m pi (s - low) / (high - low))``, ``m = 1 .. samples``, fitted at the ``samples`` interior nodes
    of the grid of spacing ``(high - low) / (samples + 1)``: zero at both ends.

    Args:
      low: the interval's lower end.
      high: its upper end, ``> low``.
      samples: interior nodes, >= 1.
    """

    @property
    def nodes(self) -> np.ndarray:
        return self.low + (self.high - self.low) * np.arange(1, self.samples + 1) / (self.samples + 1)

    def functions(self, s: tf.Tensor) -> tf.Tensor:
        m = tf.constant(np.arange(1, self.samples + 1)[None, :], s.dtype)
        return tf.sin((s - self.low) * (np.pi / (self.high - self.low)) * m)

    def node_matrix(self) -> np.ndarray:
        j, m = np.arange(1, self.samples + 1)[:, None], np.arange(1, self.samples + 1)[None, :]
        return np.sin(np.pi * (j * m % (2 * self.samples + 2)) / (self.samples + 1))

    def relative_orders(self) -> np.ndarray:
        return np.arange(1, self.samples + 1) / self.samples


@dataclasses.dataclass(frozen=True)
class Cosine(_OnInterval):
    """``cos(m pi (s - low) / (high - low))``, ``m = 0 .. samples - 1``, fitted at the ``samples`` cell centres
    of ``[low, high]``: zero slope at both ends.

    Args:
      low: the interval's lower end.
      high: its upper end, ``> low``.
      samples: cells, >= 1.
    """

    @property
    def nodes(self) -> np.ndarray:
        return self.low + (self.high - self.low) * (np.arange(self.samples) + 0.5) / self.samples

    def functions(self, s: tf.Tensor) -> tf.Tensor:
        m = tf.constant(np.arange(self.samples)[None, :], s.dtype)
        return tf.cos((s - self.low) * (np.pi / (self.high - self.low)) * m)

    def node_matrix(self) -> np.ndarray:
        j, m = np.arange(self.samples)[:, None], np.arange(self.samples)[None, :]
        return np.cos(np.pi * ((2 * j + 1) * m % (4 * self.samples)) / (2 * self.samples))


@dataclasses.dataclass(frozen=True)
class Chebyshev(_OnInterval):
    """``T_m((2 s - low - high) / (high - low))``, ``m = 0 .. samples - 1``, fitted at the ``samples``
    Chebyshev-Gauss-Lobatto nodes of ``[low, high]`` (both ends included); the polynomials by the
    recurrence ``T_{k+j} = 2 T_k T_j - T_{k-j}`` (doubling the degree each round), their derivatives of any
    order by the Chebyshev derivative's matrix (one product per order, finite at the ends, unlike
    ``cos(m arccos s)``'s; cheaper to trace, compile and run than taping the recurrence).

    Args:
      low: the interval's lower end.
      high: its upper end, ``> low``.
      samples: nodes, >= 2.
    """

    least = 2

    @property
    def nodes(self) -> np.ndarray:
        unit = -np.cos(np.pi * np.arange(self.samples) / (self.samples - 1))
        unit[[0, -1]] = -1.0, 1.0
        return 0.5 * (self.low + self.high) + 0.5 * (self.high - self.low) * unit

    def functions(self, s: tf.Tensor) -> tf.Tensor:
        unit = (2.0 * s - (self.low + self.high)) / (self.high - self.low)
        return _chebyshev_polynomials(unit, self.samples)

    def node_matrix(self) -> np.ndarray:  # T_m(-cos(pi j / n)) = cos(m pi (n - j) / n), n = samples - 1
        n = self.samples - 1
        j, m = np.arange(self.samples)[:, None], np.arange(self.samples)[None, :]
        return np.cos(np.pi * ((n - j) * m % (2 * n)) / n)

    def node_weights(self) -> np.ndarray:
        """1, and 1/2 at both ends (the Gauss-Lobatto rule's), under which the ``T_m`` are orthogonal on the nodes."""
        weights = np.ones(self.samples)
        weights[[0, -1]] = 0.5
        return weights


def _chebyshev_polynomials(unit: tf.Tensor, samples: int) -> tf.Tensor:
    """``T_0 .. T_{samples - 1}`` at the ``(N, 1)`` column ``unit``, ``(N, samples)``, differentiated analytically:
    ``dT_m / du = sum_k D_km T_k`` (the Chebyshev derivative's matrix ``D``), so that a derivative of any order is
    one more product with ``D`` rather than a pass back through the recurrence that built the polynomials."""
    derivative = np.zeros((samples, samples))
    derivative[: samples - 1] = chebyshev.chebder(np.eye(samples), axis=0)

    @tf.custom_gradient
    def polynomials(unit: tf.Tensor) -> tuple[tf.Tensor, Callable]:
        values = _chebyshev_recurrence(unit, samples)

        def gradient(upstream: tf.Tensor) -> tf.Tensor:
            slopes = tf.matmul(values, tf.constant(derivative, values.dtype))
            return tf.reduce_sum(upstream * slopes, axis=1, keepdims=True)

        return values, gradient

    return polynomials(unit)


def _chebyshev_recurrence(unit: tf.Tensor, samples: int) -> tf.Tensor:
    """``T_0 .. T_{samples - 1}`` at ``unit``, ``(N, samples)``: ``T_{k+j} = 2 T_k T_j - T_{k-j}``, ``j = 1 .. k``,
    doubling the degree each round (``_chebyshev_polynomials`` differentiates the result, not these steps)."""
    polynomials = tf.concat([tf.ones_like(unit), unit], axis=1)
    while polynomials.shape[1] < samples:
        k = polynomials.shape[1] - 1
        count = min(k, samples - k - 1)
        pick, back, last = np.zeros((k + 1, count)), np.zeros((k + 1, count)), np.zeros((k + 1, 1))
        pick[np.arange(1, count + 1), np.arange(count)] = 1.0
        back[k - np.arange(1, count + 1), np.arange(count)] = 1.0
        last[k, 0] = 1.0
        top, lower, mirrored = (tf.matmul(polynomials, tf.constant(m, unit.dtype)) for m in (last, pick, back))
        polynomials = tf.concat([polynomials, 2.0 * top * lower - mirrored], axis=1)
    return polynomials


def _check_velocity(velocity: Any, bases: Mapping[str, Basis]) -> tuple[int, int] | None:
    """``divergence_free`` checked: ``None``, or two different field indices with two Chebyshev bases."""
    if velocity is None:
        return None
    if not (
        isinstance(velocity, (tuple, list))
        and len(velocity) == 2
        and all(isinstance(k, (int, np.integer)) and not isinstance(k, bool) and k >= 0 for k in velocity)
        and velocity[0] != velocity[1]
    ):
        raise ValueError(
            f"SeriesRestart: divergence_free must be None or (i, j), the indices of the fields u and v (two different "
            f"ints >= 0); got {velocity!r}."
        )
    if len(bases) != 2 or not all(isinstance(basis, Chebyshev) for basis in bases.values()):
        raise ValueError(
            f"SeriesRestart: divergence_free needs a 2-D flow with a Chebyshev basis on both spatial coordinates; got "
            f"{ {name: type(basis).__name__ for name, basis in bases.items()} }."
        )
    return int(velocity[0]), int(velocity[1])


def _fit(basis: Basis) -> np.ndarray:
    """``(functions, samples)``: the coefficients of the series through values at the basis' nodes.

    Every basis is orthogonal on its nodes under their weights (1, and 1/2 at Chebyshev's ends), so the fit is
    the weighted transpose over the norms: the least-squares fit (interpolation where square), without the
    rounding of a general solve (a series differentiated four times amplifies it by the highest mode's fourth
    power). The functions at the nodes come with their phases reduced exactly, as an FFT's twiddles."""
    matrix = basis.node_matrix()
    weighted = matrix * basis.node_weights()[:, None]
    return weighted.T / np.einsum("jm,jm->m", weighted, matrix)[:, None]


class SeriesRestart:
    """``restart(previous, start)`` for :class:`~hodiff.pinn.TimeWindows`: the window before at ``t = start``
    as a tensor-product series in space (see the module docstring).

    Args:
      domain: the problem's domain: its spatial coordinates and its time coordinate.
      bases: one basis per spatial coordinate of ``domain``, by name (:class:`Fourier`, :class:`Sine`,
        :class:`Cosine`, :class:`Chebyshev`).
      dtype: the dtype of the points the window's solution takes and of the series.
      baseline: ``baseline(x) -> (N, fields)``, optional, ``x`` the named coordinate columns (a dict of
        ``(N,)`` tensors): the series fits ``previous - baseline`` and the restart is ``baseline`` plus it.
        Outside the bases' box (a non-periodic basis's ``[low, high]``) the series is 0: the restart there is
        the baseline (0 without one), for solutions that change only inside a box.
      divergence_free: ``(i, j)``, optional, for a 2-D flow with :class:`Chebyshev` bases on both spatial
        coordinates ``(x, y)`` (the domain's order): fields ``i`` and ``j`` are the velocity ``(u, v)``, and the
        restart's velocity is made exactly divergence-free, the curl ``(psi_y, -psi_x)`` of the stream function
        ``psi = int u dy - int v(x, y_low) dx``: ``u`` is the fitted series itself, and so is ``v`` on the edge
        ``y = y_low``; elsewhere ``v`` is what continuity makes of ``u`` (the fitted ``v`` of a divergence-free
        flow, up to the fit's error); with a ``baseline``, this holds for the fitted part. An interpolant of a
        divergence-free field is not divergence-free, and a window that adds a divergence-free correction
        (:class:`~hodiff.pinn.StreamFunction`) cannot remove the divergence a restart hands it. ``None``
        (default): every field is fitted alike.
      filter_order: the exponential spectral filter's order ``p``, an even number, or 0 (default: none): each
        coefficient is damped by ``exp(-alpha eta^p)`` along every coordinate, ``eta`` its mode's order over the
        highest (:meth:`Basis.relative_orders`) and ``alpha = -ln(eps) = 36.04`` (the highest mode to rounding).
        With ``p = 8`` a mode at ``eta = 0.3`` loses 0.24%, at ``eta = 0.5`` 13%, and the highest all but
        rounding: for a wave handed on window after window, whose top modes' curvature a window cannot fit
        (Hesthaven & Warburton 2008, section 5.3; Gottlieb & Hesthaven 2001).

    Calling it samples ``previous`` once, on the grid of the bases' nodes at ``t = start``, and returns
    ``series(points) -> (N, fields)`` over the domain's ``(N, d)`` points (time ignored).

    Example: see the module docstring.
    """

    def __init__(
        self,
        domain: Any,
        bases: Mapping[str, Basis],
        dtype: Any = "float64",
        baseline: Callable[[dict], tf.Tensor] | None = None,
        divergence_free: tuple[int, int] | None = None,
        filter_order: int = 0,
    ):
        space = [name for name in domain.coords if name != domain.time]
        if domain.time is None or sorted(bases) != sorted(space):
            raise ValueError(
                f"SeriesRestart: bases must give one basis for each spatial coordinate of a time-dependent domain, "
                f"{space}; got {sorted(bases)}" + ("" if domain.time else " (the domain has no time coordinate)")
            )
        for name, basis in bases.items():
            if not isinstance(basis, Basis):
                raise TypeError(
                    f"SeriesRestart: the basis of {name!r} must be a Fourier, Sine, Cosine or Chebyshev, got "
                    f"{type(basis).__name__}."
                )
        if baseline is not None and not callable(baseline):
            raise TypeError(
                f"SeriesRestart: baseline must be a function baseline(x) -> (N, fields) or None, got {baseline!r}."
            )
        _validate.check_finite_number(filter_order, "filter_order", "SeriesRestart", 0, integer=True)
        if filter_order % 2:
            raise ValueError(
                f"SeriesRestart: filter_order={filter_order} must be even (the filter damps +k and -k alike), "
                "e.g. 8; or 0 for none."
            )
        self.filter_order = int(filter_order)
        self.coords, self.time = tuple(domain.coords), domain.time
        self.bases = {name: bases[name] for name in space}  # in the domain's column order
        self.dtype = tf.as_dtype(dtype)
        self.baseline = baseline
        self.fits = {name: _fit(basis) for name, basis in self.bases.items()}
        self.divergence_free = _check_velocity(divergence_free, self.bases)
        self.evaluated = dict(self.bases)
        if self.divergence_free is not None:  # psi's integral in y is one degree higher
            y = cast(Chebyshev, self.bases[space[1]])
            self.evaluated[space[1]] = dataclasses.replace(y, samples=y.samples + 1)

    def __call__(self, previous: Callable[[tf.Tensor], tf.Tensor], start: float) -> Callable[[tf.Tensor], tf.Tensor]:
        return self.series(tf.constant(self.coefficients(previous, start), self.dtype))

    def coefficients(self, previous: Callable[[tf.Tensor], tf.Tensor], start: Any) -> np.ndarray:
        """The series' coefficients: ``previous`` sampled once on the nodes' grid at ``t = start`` and fitted
        (a numpy array whose shape depends only on the bases and the number of fields)."""
        grids = np.meshgrid(*(basis.nodes for basis in self.bases.values()), indexing="ij")
        columns = {name: grid.ravel() for name, grid in zip(self.bases, grids)}
        columns[self.time] = np.full(grids[0].size, float(start))
        points = tf.constant(np.stack([columns[name] for name in self.coords], axis=1), self.dtype)
        values = np.asarray(previous(points), np.float64)
        if self.baseline is not None:
            values = values - np.asarray(self.baseline(self._named(points)), np.float64)
        coefficients = values.reshape(*grids[0].shape, values.shape[-1])
        for axis, fit in enumerate(self.fits.values()):
            coefficients = np.moveaxis(np.tensordot(fit, coefficients, axes=([1], [axis])), 0, axis)
        if self.filter_order:
            for axis, basis in enumerate(self.bases.values()):
                damping = np.exp(np.log(np.finfo(np.float64).eps) * basis.relative_orders() ** self.filter_order)
                coefficients = coefficients * damping.reshape(
                    [-1 if i == axis else 1 for i in range(coefficients.ndim)]
                )
        if self.divergence_free is not None:
            coefficients = self._curl(coefficients, self.divergence_free)
        return coefficients

    def _curl(self, coefficients: np.ndarray, velocity: tuple[int, int]) -> np.ndarray:
        """The ``(nx, ny + 1, fields)`` coefficients, ``(u, v)`` replaced by the curl of ``psi``."""
        (i, j), (x, y) = velocity, (cast(Chebyshev, basis) for basis in self.bases.values())
        if max(i, j) >= coefficients.shape[2]:
            raise ValueError(
                f"SeriesRestart: divergence_free={velocity} names a field the window's solution does not "
                f"have (it has {coefficients.shape[2]}); give the indices of u and v among its outputs."
            )
        rows = coefficients.shape[0]
        psi = chebyshev.chebint(coefficients[:, :, i], lbnd=-1, scl=0.5 * (y.high - y.low), axis=1)  # 0 on y_low
        edge_v = coefficients[:, :, j] @ (-1.0) ** np.arange(y.samples)  # v on y = y_low, T_m(-1) = (-1)^m
        curl = np.zeros((rows, y.samples + 1, coefficients.shape[2]))
        curl[:, :-1] = coefficients  # u = psi_y is the fitted u exactly; the other fields as fitted
        curl[:, :, j] = 0.0
        curl[: rows - 1, :, j] = -chebyshev.chebder(psi, scl=2.0 / (x.high - x.low), axis=0)
        curl[:, 0, j] += edge_v
        return curl

    def _named(self, points: tf.Tensor) -> dict[str, tf.Tensor]:
        """The ``(N,)`` coordinate columns by name, picked by products with constant columns."""
        eye = np.eye(len(self.coords))
        pick = lambda i: tf.reshape(tf.matmul(points, tf.constant(eye[:, [i]], points.dtype)), [-1])
        return {name: pick(i) for i, name in enumerate(self.coords)}

    def series(self, coefficients: Any) -> Callable[[tf.Tensor], tf.Tensor]:
        """``series(points) -> (N, fields)`` with the given :meth:`coefficients` (a tensor, or a variable that a
        time-marching run assigns each window's coefficients to, so that one traced graph serves every window)."""

        def series(points: tf.Tensor) -> tf.Tensor:
            named = self._named(points)
            columns = [tf.reshape(named[name], [-1, 1]) for name in self.bases]
            functions = [basis.functions(s) for basis, s in zip(self.evaluated.values(), columns)]
            values = tf.tensordot(functions[0], coefficients, axes=[[1], [0]])  # (N, M_2 ... M_d, fields)
            for later in functions[1:]:
                shape = [-1, later.shape[1]] + [1] * (values.shape.rank - 2)
                values = tf.reduce_sum(values * tf.reshape(later, shape), axis=1)
            for basis, s in zip(self.bases.values(), columns):
                inside = basis.inside(s)
                values = values if inside is None else values * inside
            if self.baseline is not None:
                values = values + tf.cast(self.baseline(named), values.dtype)
            return values

        return series
