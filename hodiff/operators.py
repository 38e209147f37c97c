"""Differential operators on fields as objects, each evaluated by a chosen method.

A *field* is a function of a batch of points ``x`` of shape ``(N, d)``: a scalar field ``u``
returns ``(N,)`` or ``(N, 1)``, a vector field ``v`` returns ``(N, d)``. Rows must be
independent (a Keras MLP applied to points is). Every operator is one object with one calling
convention: ``operator(u, method=...)`` is a function of ``x`` returning one value per point,
and ``operator.estimate(u, ...)`` a function of ``x`` returning an :class:`~hodiff.Estimate`
(value and standard error):

```python
import keras, tensorflow as tf
from hodiff import operators

model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(16, "tanh"), keras.layers.Dense(1)])
x = tf.random.normal((8, 3))
exact = operators.Laplacian()(model, method="forward")(x)                   # (8, 1), Taylor mode
same = operators.Laplacian()(model, method="nested")(x)                     # (8, 1), nested tapes
noisy = operators.Laplacian()(model, method="stochastic", num_samples=2, seed=0)(x)
tf.debugging.assert_near(exact, same, atol=1e-4)
```

Methods (which one for which size: ``docs/operators.md``):

- ``"nested"``: exact, nested ``GradientTape`` s; any differentiable field.
- ``"forward"``: exact, forward (Taylor-mode) jets through a Keras chain of Dense and
  elementwise layers (:mod:`hodiff.jets`); pass the Keras model itself.
- ``"stochastic"``: an unbiased estimate from ``num_samples`` random jets per point (STDE /
  SDGD, :mod:`hodiff.jets.stde`), the jets by ``jets="nested"`` or ``"forward"``.
- ``"hutchinson"`` (Laplacian and divergence): an unbiased estimate by Hessian- (Jacobian-)
  vector products with Rademacher probes.

One dtype rule holds for every operator and method: results come in the dtype of the points
``x``, whatever the field computes in (a ``mixed_float16`` Keras model included); the forward
path propagates in the wider of the two dtypes.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import tensorflow as tf

from hodiff import _validate
from hodiff._tower import MultiIndex, derivative_tower
from hodiff.derivatives import hvp, vjp
from hodiff.estimators import Estimate, mean_and_stderr, rademacher
from hodiff.jets import propagation, stde
from hodiff.jets.stde import SAMPLINGS

Field = Callable[[tf.Tensor], tf.Tensor]

__all__ = [
    "METHODS",
    "OPERATOR_METHODS",
    "SAMPLINGS",
    "Operator",
    "Laplacian",
    "Divergence",
    "Biharmonic",
    "Partials",
    "PurePartials",
    "MixedPartial",
    "Contraction",
    "laplacian",
    "divergence",
    "partials",
]

METHODS = ("nested", "forward", "stochastic", "hutchinson")
OPERATOR_METHODS = METHODS  # the name of earlier releases
JETS = ("nested", "forward")


class Operator:
    """A linear differential operator on fields; subclasses say which methods evaluate it.

    Call it with a field to get a function of the points: ``operator(u, method)(x)``.

    Attributes:
      name: what it is, for messages.
      methods: the methods that evaluate it (a subset of :data:`METHODS`).
      decomposition: the operator as weighted jets (:class:`hodiff.jets.stde.Decomposition`), for
        the jet-based exact sums and the ``"stochastic"`` method; ``None`` where it has none.
    """

    name: str = "operator"
    methods: tuple[str, ...] = ("nested", "forward", "stochastic")
    decomposition: stde.Decomposition | None = None

    @property
    def order(self) -> int:
        """The derivative order ``k``."""
        assert self.decomposition is not None
        return self.decomposition.order

    def terms(self, d: int) -> stde.Terms:
        """The jets that ``"stochastic"`` with ``sampling="sparse"`` draws groups from (see :mod:`hodiff.jets.stde`)."""
        assert self.decomposition is not None
        return self.decomposition.terms(d)

    def exact_terms(self, d: int) -> stde.Terms:
        """The jets whose weighted sum is the operator (the exact jet-based methods)."""
        assert self.decomposition is not None
        return self.decomposition.exact_terms(d)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name})"

    def __call__(
        self,
        u: Any,
        method: str = "nested",
        *,
        num_samples: int = 16,
        seed: Any = 0,
        sampling: str = "sparse",
        jets: str = "nested",
        unconnected: str = "error",
    ) -> Callable[[tf.Tensor], Any]:
        """The operator applied to ``u``, as a function of the points ``x`` ``(N, d)``.

        Args:
          u: the field: a Keras chain for ``method="forward"`` (or ``jets="forward"``), any
            differentiable function otherwise.
          method: one of :attr:`methods`: ``"nested"``, ``"forward"``, ``"stochastic"`` or
            ``"hutchinson"`` (see the module docstring).
          num_samples: per point, for the stochastic methods: groups drawn (``sampling="sparse"``,
            at most the number of groups, ``d`` for the Laplacian), random directions or probes.
          seed: an int or int tensor seeding the stochastic methods (the same seed, the same draw).
          sampling: ``"sparse"``, ``"rademacher"`` or ``"gaussian"`` (``"stochastic"`` only).
          jets: how ``"stochastic"`` computes each jet: ``"nested"`` (tapes, any field) or
            ``"forward"`` (Taylor mode through a Keras chain).
          unconnected: ``"error"`` (default) or ``"zero"``, for the tape-based methods.

        Returns:
          A function of ``x`` returning the operator's value at every point, shaped like
          ``u(x)`` (``(N,)`` or ``(N, k)``; a dict for :class:`Partials`), in ``x``'s dtype.
        """
        self._check(method, num_samples, sampling, jets, unconnected, self.methods)
        options = dict(num_samples=num_samples, seed=seed, sampling=sampling, jets=jets, unconnected=unconnected)

        def operator_u(x: tf.Tensor) -> Any:
            if method in ("stochastic", "hutchinson"):
                return self._estimate(u, x, method, with_stderr=False, **options).value
            return (self._forward if method == "forward" else self._nested)(u, x, unconnected)

        return operator_u

    def estimate(
        self,
        u: Any,
        method: str = "stochastic",
        *,
        num_samples: int = 16,
        seed: Any = 0,
        sampling: str = "sparse",
        jets: str = "nested",
        unconnected: str = "error",
    ) -> Callable[[tf.Tensor], Estimate]:
        """A stochastic method with its standard error: a function of ``x`` returning an :class:`~hodiff.Estimate`.

        Arguments as for calling the operator; ``method`` is ``"stochastic"`` or ``"hutchinson"``.
        For ``sampling="sparse"`` the standard error has the finite-population factor
        ``sqrt(1 - B / G)`` (zero when every group is drawn); one sample gives a stderr of 0.

        Example:
          ```python
          import tensorflow as tf
          from hodiff import operators

          u = lambda x: tf.reduce_sum(x**2, axis=1)                  # H = 2I: every sample is exact
          e = operators.Laplacian().estimate(u, num_samples=2, sampling="rademacher")(tf.ones((3, 5)))
          tf.debugging.assert_near(e.value, tf.fill([3], 10.0))
          ```
        """
        stochastic = tuple(m for m in self.methods if m in ("stochastic", "hutchinson"))
        self._check(method, num_samples, sampling, jets, unconnected, stochastic)
        options = dict(num_samples=num_samples, seed=seed, sampling=sampling, jets=jets, unconnected=unconnected)
        return lambda x: self._estimate(u, x, method, with_stderr=True, **options)

    def _check(
        self, method: str, num_samples: Any, sampling: str, jets: str, unconnected: str, allowed: Sequence[str]
    ) -> None:
        caller = self.name
        if method not in allowed:
            raise ValueError(
                f"{caller}: method={method!r} is not an option for {type(self).__name__}; use one of "
                f"{tuple(allowed)}: 'nested' (exact, nested tapes), 'forward' (exact, Taylor-mode through a Keras "
                f"chain of Dense/activation layers), 'stochastic' (unbiased estimate by random jets) or "
                f"'hutchinson' (unbiased estimate by probes); set num_samples and seed for the estimates."
            )
        _validate.check_unconnected(unconnected, caller)
        if method in ("stochastic", "hutchinson"):
            _validate.check_count(num_samples, "num_samples", caller)
        if sampling not in SAMPLINGS:
            raise ValueError(
                f"{caller}: sampling={sampling!r} is not an option; use 'sparse' (random coordinate subsets, SDGD), "
                f"'rademacher' or 'gaussian' (random dense directions, STDE/Hutchinson)."
            )
        if jets not in JETS:
            raise ValueError(f"{caller}: jets={jets!r} is not an option; use 'nested' or 'forward'.")

    # The methods; a subclass overrides those it evaluates differently from its jets.

    def _nested(self, u: Any, x: tf.Tensor, unconnected: str) -> Any:
        assert self.decomposition is not None
        return stde.exact(u, x, self.decomposition, "nested", self.name)

    def _forward(self, u: Any, x: tf.Tensor, unconnected: str) -> Any:
        assert self.decomposition is not None
        return stde.exact(u, x, self.decomposition, "forward", self.name)

    def _estimate(self, u: Any, x: tf.Tensor, method: str, with_stderr: bool, **options: Any) -> Estimate:
        assert self.decomposition is not None
        return stde.estimate(
            u,
            x,
            self.decomposition,
            options["num_samples"],
            options["seed"],
            options["sampling"],
            options["jets"],
            with_stderr,
            self.name,
        )


def _parse_partial(name: str | Sequence[str], coords: Sequence[str], caller: str) -> MultiIndex:
    """Turns ``"xxt"`` (single-letter coords) or ``("x1", "x1")`` into a multi-index."""
    index = []
    for letter in name:
        if letter not in coords:
            raise ValueError(
                f"{caller}: wanted {name!r} uses {letter!r}, which is not one of coords "
                f"{tuple(coords)}. Use the coordinate names given in coords; for names longer "
                f"than one letter, write the partial as a tuple, e.g. ('x1', 'x1')."
            )
        index.append(list(coords).index(letter))
    return tuple(index)


def _shape_like_field(values: tf.Tensor, as_column: bool) -> tf.Tensor:
    return values[:, None] if as_column else values


def _replicated_points(
    x: tf.Tensor, num_probes: int, seed: Any, unconnected: str, caller: str
) -> tuple[tf.Tensor, tf.Tensor, tf.Tensor]:
    """Validates the inputs of a per-point estimator; returns ``(x, points, probes)``.

    ``points`` stacks ``num_probes`` copies of ``x``, with one Rademacher probe per copy.
    """
    _validate.check_count(num_probes, "num_probes", caller)
    _validate.check_unconnected(unconnected, caller)
    x = _validate.as_differentiable(x, "x", caller)
    _validate.check_field_points(x, caller)
    replicated = tf.tile(x, [num_probes, 1])
    return x, replicated, rademacher(tf.shape(replicated), seed, x.dtype)


def _per_point(samples: tf.Tensor, num_probes: int, num_points: Any) -> Estimate:
    return mean_and_stderr(tf.reshape(samples, tf.stack([num_probes, num_points])))


class Laplacian(Operator):
    """The Laplacian ``sum_i d^2 u / dx_i^2`` of a scalar field.

    Methods: ``"nested"`` (exact; nested tapes, ``d`` reverse passes over the gradient),
    ``"forward"`` (exact; the forward Laplacian: value, gradient and Laplacian through a Keras
    chain in one pass, about ``d`` forward passes), ``"stochastic"`` (STDE / SDGD random jets:
    sparse ``B`` coordinates scaled by ``d / B``, or dense Rademacher / Gaussian directions)
    and ``"hutchinson"`` (``E[v^T H v]`` with Rademacher probes, by Hessian-vector products).

    References:
      Li et al., "Forward Laplacian", Nature Machine Intelligence 2024 (arXiv:2307.08214).
      Shi et al., "Stochastic Taylor Derivative Estimator", NeurIPS 2024 (arXiv:2412.00088).
      Hutchinson, "A stochastic estimator of the trace of the influence matrix", 1989.

    Example:
      ```python
      import tensorflow as tf
      from hodiff.operators import Laplacian

      u = lambda x: tf.reduce_sum(x**2, axis=1)      # Laplacian = 2 d
      x = tf.random.normal((4, 3))
      tf.debugging.assert_near(Laplacian()(u)(x), tf.fill([4], 6.0))
      ```
    """

    name = "laplacian"
    methods = METHODS
    decomposition = stde.laplacian_terms()

    def _nested(self, u: Any, x: tf.Tensor, unconnected: str) -> tf.Tensor:
        x = _validate.as_differentiable(x, "x", self.name)
        d = _validate.check_field_points(x, self.name)
        nodes, as_column = derivative_tower(u, x, [(i, i) for i in range(d)], unconnected, self.name)
        return _shape_like_field(tf.add_n([nodes[(i, i)] for i in range(d)]), as_column)

    def _forward(self, u: Any, x: tf.Tensor, unconnected: str) -> tf.Tensor:
        x = _validate.as_differentiable(x, "x", self.name)
        _validate.check_field_points(x, self.name)
        jet = propagation.forward_jet(u, x, caller=self.name, need_jacobian=False)
        _validate.check_per_point_values(jet.laplacian, x, "u", self.name)
        return jet.laplacian

    def _estimate(self, u: Any, x: tf.Tensor, method: str, with_stderr: bool, **options: Any) -> Estimate:
        if method == "stochastic":
            return super()._estimate(u, x, method, with_stderr, **options)
        caller = self.name
        num_probes, unconnected = options["num_samples"], options["unconnected"]
        x, points, probes = _replicated_points(x, num_probes, options["seed"], unconnected, caller)
        as_column = []

        def total(p):
            values, column = _validate.check_per_point_values(u(p), p, "u", caller)
            as_column.append(column)
            return tf.reduce_sum(tf.cast(values, p.dtype))

        hessian_probes = hvp(total, points, probes, unconnected=unconnected)
        estimate = _per_point(tf.reduce_sum(probes * hessian_probes, axis=1), num_probes, tf.shape(x)[0])
        if as_column[0]:
            return Estimate(estimate.value[:, None], estimate.stderr[:, None])
        return estimate


class Divergence(Operator):
    """The divergence ``sum_i dv_i / dx_i`` of a vector field ``v: (N, d) -> (N, d)``.

    Methods: ``"nested"`` (exact; ``d`` reverse passes on one tape), ``"forward"`` (exact; the
    Jacobian by forward propagation through a Keras chain) and ``"hutchinson"`` (``E[e^T J e]``,
    one reverse pass over ``num_samples`` copies of the batch). Results have shape ``(N,)``.

    Example:
      ```python
      import tensorflow as tf
      from hodiff.operators import Divergence

      v = lambda x: x * tf.reduce_sum(x, axis=1, keepdims=True)   # div = (d + 1) * sum(x)
      tf.debugging.assert_near(Divergence()(v)(tf.constant([[1.0, 2.0, 3.0]])), [24.0])
      ```
    """

    name = "divergence"
    methods = ("nested", "forward", "hutchinson")

    def _nested(self, v: Any, x: tf.Tensor, unconnected: str) -> tf.Tensor:
        x = _validate.as_differentiable(x, "x", self.name)
        d = _validate.check_field_points(x, self.name)
        with tf.GradientTape(persistent=True) as tape:
            tape.watch(x)
            values = v(x)
            _validate.check_vector_field(values, x, self.name)
            columns = [values[:, i] for i in range(d)]
        diagonal = []
        for i, column in enumerate(columns):
            diagonal.append(_validate.gradient(tape, column, [x], ["x"], unconnected, self.name)[0][:, i])
        return tf.add_n(diagonal)

    def _forward(self, v: Any, x: tf.Tensor, unconnected: str) -> tf.Tensor:
        x = _validate.as_differentiable(x, "x", self.name)
        _validate.check_field_points(x, self.name)
        jet = propagation.forward_jet(v, x, caller=self.name, need_laplacian=False)
        _validate.check_vector_field(jet.value, x, self.name)
        return tf.linalg.trace(jet.jacobian)

    def _estimate(self, u: Any, x: tf.Tensor, method: str, with_stderr: bool, **options: Any) -> Estimate:
        caller = self.name
        num_probes, unconnected = options["num_samples"], options["unconnected"]
        x, points, probes = _replicated_points(x, num_probes, options["seed"], unconnected, caller)

        def field(p):
            values = u(p)
            _validate.check_vector_field(values, p, caller)
            return tf.cast(values, p.dtype)

        _, pullback = vjp(field, points, unconnected=unconnected)
        jacobian_probes = pullback(probes)[0]
        return _per_point(tf.reduce_sum(probes * jacobian_probes, axis=1), num_probes, tf.shape(x)[0])


class Biharmonic(Operator):
    """The biharmonic ``Delta^2 u = sum_{i,j} u_iijj``, the Laplacian of the Laplacian (order 4).

    Methods: ``"forward"`` (exact; one collapsed Taylor pass through a Keras chain,
    ``(d + 1)(d + 4) / 2`` rows per point, :func:`hodiff.jets.propagation.forward_biharmonic`),
    ``"nested"`` (exact; ``d^2`` order-4 jets by nested tapes along ``e_i`` and ``e_i +- e_j``)
    and ``"stochastic"`` (sparse: ``B`` of the ``d (d + 1) / 2`` pairs ``i <= j``; dense:
    Gaussian directions only, ``D^4_v u / 3``).

    Example:
      ```python
      import tensorflow as tf
      from hodiff.operators import Biharmonic

      u = lambda x: tf.reduce_sum(x**2, axis=1) ** 2             # |x|^4: Delta^2 = 8 d (d + 2)
      x = tf.random.normal((2, 3), dtype=tf.float64)
      tf.debugging.assert_near(Biharmonic()(u, method="nested")(x), [120.0, 120.0])
      ```
    """

    name = "biharmonic"
    decomposition = stde.biharmonic_terms()


class PurePartials(Operator):
    """``sum_i c_i d^k u / dx_i^k``: ``d`` jets of order ``k`` along the basis vectors.

    Methods ``"nested"``, ``"forward"`` (jets) and ``"stochastic"`` (sparse: ``B`` coordinates;
    dense for ``k = 2`` only).

    Args:
      coefficients: ``c``, one number per coordinate (checked against ``x`` when applied).
      order: ``k``, an int >= 1.

    Example:
      ```python
      import tensorflow as tf
      from hodiff.operators import PurePartials

      u = lambda x: x[:, 0] ** 3 + x[:, 1] ** 3                  # u_xxx = u_yyy = 6
      third = PurePartials([1.0, -2.0], order=3)(u, method="nested")(tf.ones((2, 2)))
      tf.debugging.assert_near(third, [-6.0, -6.0])
      ```
    """

    def __init__(self, coefficients: Sequence[float] | np.ndarray, order: int):
        self.decomposition = stde.pure_partials_terms(coefficients, order)
        self.name = self.decomposition.name


class MixedPartial(Operator):
    """The mixed second partial ``u_ij`` by polarisation, ``(D^2_{e_i+e_j} - D^2_{e_i} - D^2_{e_j}) / 2``.

    Methods ``"nested"``, ``"forward"`` (three jets) and ``"stochastic"``.

    Args:
      i: first coordinate, an int >= 0 and ``< d``.
      j: second coordinate; ``i == j`` gives ``u_ii``.

    Example:
      ```python
      import tensorflow as tf
      from hodiff.operators import MixedPartial

      u = lambda x: x[:, 0] ** 2 * x[:, 2]                       # u_02 = 2 x_0
      x = tf.constant([[1.5, 0.0, 2.0]])
      tf.debugging.assert_near(MixedPartial(0, 2)(u, method="nested")(x), [3.0])
      ```
    """

    def __init__(self, i: int, j: int):
        self.decomposition = stde.mixed_partial_terms(i, j)
        self.name = self.decomposition.name


class Contraction(Operator):
    """A user's contraction ``sum_s w_s D^k_{v_s} u`` of the ``k``-th derivative tensor.

    The symmetric tensor ``T = sum_s w_s v_s^{(x)k}`` is given by its directions and weights,
    or, for ``k = 2``, as a symmetric matrix (``sum_ij T_ij u_ij``). Methods ``"nested"``,
    ``"forward"`` and ``"stochastic"`` (dense for ``k = 2`` only).

    Args:
      order: ``k``, an int >= 1.
      directions: ``(S, d)`` array, or a function of ``d`` returning ``(directions, weights)``.
      weights: ``(S,)`` array (default: all ones); not with a function.
      matrix: instead of directions, a symmetric ``(d, d)`` matrix (``order`` must be 2).

    References:
      Dangel, Siebert, Zeinhofer and Walther, "Collapsing Taylor mode automatic
      differentiation", 2025 (arXiv:2505.13644).

    Example:
      ```python
      import tensorflow as tf
      from hodiff.operators import Contraction

      u = lambda x: x[:, 0] * x[:, 1]                            # u_01 = 1
      twice_u01 = Contraction(2, matrix=[[0.0, 1.0], [1.0, 0.0]])
      tf.debugging.assert_near(twice_u01(u, method="nested")(tf.ones((1, 2))), [2.0])
      ```
    """

    def __init__(self, order: int, directions: Any = None, weights: Any = None, matrix: Any = None):
        self.decomposition = stde.contraction_terms(order, directions, weights, matrix)
        self.name = self.decomposition.name


class Partials(Operator):
    """Named partial derivatives of a scalar field, all from one evaluation.

    Methods: ``"nested"`` (one set of shared tapes for every partial, any order and mixed) and
    ``"forward"`` (one Taylor-mode pass through a Keras chain for values, first partials and
    pure second partials: a PINN residual's ``u, u_t, u_x, u_xx``).

    Args:
      coords: one name per column of ``x``, e.g. ``("x", "t")``.
      wanted: partials by name: ``"x"``, ``"xx"``, ``"xxxx"``, mixed ``"xt"``, or tuples of
        names for multi-letter coordinates; ``""`` is the field value itself.

    Calling it returns a function of ``x`` returning a dict from each wanted name to a tensor
    shaped like ``u(x)``.

    Example:
      ```python
      import tensorflow as tf
      from hodiff.operators import Partials

      u = lambda x: tf.sin(x[:, 0]) * tf.exp(-x[:, 1])           # u(x, t)
      d = Partials(("x", "t"), ("", "t", "xx"))(u)(tf.constant([[0.5, 0.1], [1.0, 0.2]]))
      tf.debugging.assert_near(d["xx"], -d[""])                  # u_xx = -u
      ```
    """

    methods = ("nested", "forward")

    def __init__(self, coords: Sequence[str], wanted: Sequence[str | Sequence[str]]):
        if isinstance(wanted, str):
            raise TypeError(
                f"partials: wanted must be a tuple of names, e.g. ({wanted!r},), not the string {wanted!r}."
            )
        self.name = "partials"
        self.coords = tuple(coords)
        self.wanted = tuple(wanted)

    def _indices(self, x: tf.Tensor) -> tuple[tf.Tensor, dict[str | tuple[str, ...], MultiIndex]]:
        x = _validate.as_differentiable(x, "x", self.name)
        d = _validate.check_field_points(x, self.name)
        coords = self.coords
        if len(coords) != d or len(set(coords)) != len(coords):
            raise ValueError(f"{self.name}: coords must name each of the {d} columns of x once; got {coords}.")
        indices = {
            name if isinstance(name, str) else tuple(name): _parse_partial(name, coords, self.name)
            for name in self.wanted
        }
        return x, indices

    def _nested(self, u: Any, x: tf.Tensor, unconnected: str) -> dict:
        x, indices = self._indices(x)
        nodes, as_column = derivative_tower(u, x, list(indices.values()), unconnected, self.name)
        return {name: _shape_like_field(nodes[tuple(sorted(i))], as_column) for name, i in indices.items()}

    def _forward(self, u: Any, x: tf.Tensor, unconnected: str) -> dict:
        x, indices = self._indices(x)
        if any(len(i) > 2 or len(set(i)) > 1 for i in indices.values()):
            raise ValueError(
                f"{self.name}: method='forward' gives values, first partials and pure second partials "
                f"(e.g. 'x', 'xx'); got {tuple(indices)}. Use method='nested' for mixed or higher partials."
            )
        first = sorted({i[0] for i in indices.values() if len(i) == 1})
        second = sorted({i[0] for i in indices.values() if len(i) == 2})
        value, firsts, seconds = propagation.forward_partials(u, x, first, second, caller=self.name)
        _validate.check_per_point_values(value, x, "u", self.name)
        return {name: value if not i else (firsts if len(i) == 1 else seconds)[i[0]] for name, i in indices.items()}


# ---------------------------------------------------------------------------------------------
# The functions of the README: an operator applied to a field, a function of x.


def laplacian(
    u: Field,
    method: str = "nested",
    num_probes: int = 16,
    seed: Any = 0,
    unconnected: str = "error",
) -> Field:
    """Transforms a scalar field into its Laplacian: ``Laplacian()(u, method, ...)``.

    Args:
      u: scalar field, ``(N, d) -> (N,)`` or ``(N, 1)``; the Keras model itself for ``"forward"``.
      method: ``"nested"``, ``"forward"``, ``"stochastic"`` or ``"hutchinson"`` (see :class:`Laplacian`).
      num_probes: samples per point for the stochastic methods.
      seed: seed of the stochastic methods (the same seed gives the same estimate).
      unconnected: ``"error"`` (default) or ``"zero"`` (e.g. a linear field).

    Returns:
      A function of ``x`` (``(N, d)``) returning the Laplacian shaped like ``u(x)``.

    Example:
      ```python
      import tensorflow as tf
      from hodiff import laplacian

      u = lambda x: tf.reduce_sum(x**2, axis=1)      # Laplacian = 2 d
      x = tf.random.normal((4, 3))
      tf.debugging.assert_near(laplacian(u)(x), tf.fill([4], 6.0))
      ```
    """
    return Laplacian()(u, method, num_samples=num_probes, seed=seed, unconnected=unconnected)


def divergence(
    v: Field,
    method: str = "nested",
    num_probes: int = 16,
    seed: Any = 0,
    unconnected: str = "error",
) -> Field:
    """Transforms a vector field ``v: (N, d) -> (N, d)`` into its divergence: ``Divergence()(v, method, ...)``.

    Args:
      v: vector field returning ``(N, d)``.
      method: ``"nested"``, ``"forward"`` or ``"hutchinson"`` (see :class:`Divergence`).
      num_probes: probes per point for ``"hutchinson"``.
      seed: seed of the probes for ``"hutchinson"``.
      unconnected: ``"error"`` (default) or ``"zero"``.

    Returns:
      A function of ``x`` returning the divergence, shape ``(N,)``.

    Example:
      ```python
      import tensorflow as tf
      from hodiff import divergence

      v = lambda x: x * tf.reduce_sum(x, axis=1, keepdims=True)   # div = (d + 1) * sum(x)
      x = tf.constant([[1.0, 2.0, 3.0]])
      tf.debugging.assert_near(divergence(v)(x), [24.0])
      ```
    """
    return Divergence()(v, method, num_samples=num_probes, seed=seed, unconnected=unconnected)


def partials(
    u: Field,
    x: tf.Tensor,
    coords: Sequence[str],
    wanted: Sequence[str | Sequence[str]],
    unconnected: str = "error",
) -> dict[str | tuple[str, ...], tf.Tensor]:
    """Named partial derivatives of a scalar field at collocation points, sharing tapes.

    ``Partials(coords, wanted)(u)(x)`` at once (nested tapes), as the README writes it.

    Args:
      u: scalar field, ``(N, d) -> (N,)`` or ``(N, 1)``, e.g. a Keras model.
      x: points, shape ``(N, d)``.
      coords: one name per column of ``x``, e.g. ``("x", "t")``.
      wanted: partials by name: ``"x"``, ``"xx"``, ``"xxxx"``, mixed ``"xt"``, or tuples of
        names for multi-letter coordinates; ``""`` is the field value itself.
      unconnected: ``"error"`` (default) or ``"zero"`` (e.g. ``"xxx"`` of a quadratic).

    Returns:
      A dict from each wanted name to a tensor shaped like ``u(x)`` (``(N,)`` or ``(N, 1)``).

    Example:
      ```python
      import tensorflow as tf
      from hodiff import partials

      u = lambda x: tf.sin(x[:, 0]) * tf.exp(-x[:, 1])           # u(x, t)
      x = tf.constant([[0.5, 0.1], [1.0, 0.2]])
      d = partials(u, x, coords=("x", "t"), wanted=("", "t", "xx", "xt"))
      tf.debugging.assert_near(d["t"], -d[""])                   # u_t = -u
      tf.debugging.assert_near(d["xx"], -d[""])                  # u_xx = -u
      ```
    """
    return Partials(coords, wanted)(u, unconnected=unconnected)(x)
