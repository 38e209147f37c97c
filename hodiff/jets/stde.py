"""Differential operators as contractions of the k-th derivative tensor, exact and stochastic.

A linear operator of order ``k`` with constant coefficients, ``L u = sum T_{i_1...i_k}
u_{i_1...i_k}``, is a contraction of the ``k``-th derivative tensor of ``u`` with a symmetric
tensor ``T``. Written as ``T = sum_s w_s v_s^{(x)k}``, it is a weighted sum of univariate jets:
``L u = sum_s w_s D^k_{v_s} u`` (see :mod:`hodiff.jets`). So is every operator here:

- Laplacian, ``sum_i u_ii``: jets along the basis vectors ``e_i``;
- a sum of pure partials ``sum_i c_i d^k u / dx_i^k``: jets along ``e_i``, weights ``c_i``;
- a mixed second partial by polarisation, ``u_ij = (D^2_{e_i+e_j} - D^2_{e_i} - D^2_{e_j}) / 2``;
- the biharmonic ``Delta^2 u = sum_{i,j} u_iijj``, from ``u_iijj = (D^4_{e_i+e_j} + D^4_{e_i-e_j}
  - 2 D^4_{e_i} - 2 D^4_{e_j}) / 12``: ``d^2`` jets of order 4;
- a user's contraction, given as directions and weights (or a symmetric matrix for ``k = 2``).

The operators themselves are objects in :mod:`hodiff.operators`; this module holds their
decomposition into jets (:class:`Terms`) and the two jet evaluations every operator shares:
:func:`exact` sums all its terms; :func:`estimate` returns an unbiased :class:`~hodiff.Estimate`
from a few random jets per point:

- ``sampling="sparse"`` (SDGD-style): the operator is a sum of ``G`` terms (coordinates for the
  Laplacian, coordinate pairs for the biharmonic); sample ``B`` of them without replacement per
  point and scale by ``G / B``. Exact when ``B = G``.
- ``sampling="rademacher"`` or ``"gaussian"`` (Hutchinson-style, STDE's dense estimator): random
  directions ``v`` with ``E[v v^T] = I``, so ``E[D^2_v u] = tr H = Delta u``; for the biharmonic,
  Gaussian ``v`` has ``E[v_i v_j v_k v_l] = d_ij d_kl + d_ik d_jl + d_il d_jk``, so
  ``E[D^4_v u] = 3 Delta^2 u``.

Every estimate is reproducible: the samples come from stateless random ops seeded by ``seed``.

References:
  Shi, Hu, Lin and Kawaguchi, "Stochastic Taylor Derivative Estimator: efficient amortization for
  arbitrary differential operators", NeurIPS 2024 (arXiv:2412.00088).
  Hu, Shukla, Karniadakis and Kawaguchi, "Tackling the curse of dimensionality with
  physics-informed neural networks", Neural Networks 2024 (arXiv:2307.12306) (SDGD).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import keras
import numpy as np
import tensorflow as tf

from hodiff import _validate
from hodiff.estimators import Estimate, mean_and_stderr
from hodiff.jets.directions import SparseDirections
from hodiff.jets.propagation import forward_biharmonic
from hodiff.jets.taylor import check_order, directional_derivative, weighted_jets

__all__ = [
    "SAMPLINGS",
    "Decomposition",
    "Terms",
    "laplacian_terms",
    "biharmonic_terms",
    "pure_partials_terms",
    "mixed_partial_terms",
    "contraction_terms",
    "exact",
    "estimate",
]

SAMPLINGS = ("sparse", "rademacher", "gaussian")


class Terms(NamedTuple):
    """An operator as ``G`` groups of ``P`` weighted jets: ``L u = sum_g sum_p weights[g, p] D^k_{v_gp} u``.

    Direction ``v_gp`` has nonzero entries ``values[g, p, :]`` at coordinates ``indices[g, p, :]``.
    Sparse sampling draws whole groups. Arrays are numpy: ``indices`` ints ``(G, P, m)``,
    ``values`` floats ``(G, P, m)``, ``weights`` floats ``(G, P)``.
    """

    indices: np.ndarray
    values: np.ndarray
    weights: np.ndarray


@dataclass(frozen=True)
class Decomposition:
    """A linear differential operator of order ``order`` as weighted jets (see the module docstring).

    Built by :func:`laplacian_terms`, :func:`biharmonic_terms`, :func:`pure_partials_terms`,
    :func:`mixed_partial_terms` or :func:`contraction_terms`; each operator object of
    :mod:`hodiff.operators` that jets can evaluate holds one.

    Attributes:
      name: what it is, for messages.
      order: the derivative order ``k``.
      terms: function of ``d`` giving the :class:`Terms` that sparse sampling draws groups from.
      exact_terms: function of ``d`` giving the (possibly more compact) terms :func:`exact` sums.
      dense: function ``(z, d, distribution) -> (directions, weights)`` turning random vectors ``z``
        of shape ``(N, S, d)`` into ``P`` directions ``(N, S, P, d)`` and weights ``(P,)`` whose
        weighted jets have the operator as expectation; ``None`` when no dense estimator exists.
      forward: optional function ``(model, x, caller) -> (N, k)``, a dedicated one-pass exact
        propagation through a Keras chain that :func:`exact` uses for ``method="forward"``
        instead of summing the jets of ``exact_terms`` (the biharmonic's collapsed pass).
    """

    name: str
    order: int
    terms: Callable[[int], Terms]
    exact_terms: Callable[[int], Terms]
    dense: Callable[[tf.Tensor, int, str], tuple[tf.Tensor, list[float]]] | None = None
    forward: Callable[[Any, tf.Tensor, str], tf.Tensor] | None = None


def _basis_terms(weights: np.ndarray) -> Terms:
    d = len(weights)
    return Terms(np.arange(d).reshape(d, 1, 1), np.ones((d, 1, 1)), np.asarray(weights, float).reshape(d, 1))


def _hutchinson(z: tf.Tensor, d: int, distribution: str) -> tuple[tf.Tensor, list[float]]:
    return z[:, :, None, :], [1.0]


def laplacian_terms() -> Decomposition:
    """The Laplacian ``sum_i d^2 u / dx_i^2``: ``d`` jets of order 2 exactly.

    Sparse: ``B`` coordinates per point, scaled by ``d / B``. Dense: ``E[D^2_v u]`` with Rademacher
    (lower variance) or Gaussian ``v``.

    Example:
      ```python
      import tensorflow as tf
      from hodiff.jets import stde

      u = lambda x: tf.reduce_sum(x**2, axis=1)                  # Laplacian 2 d
      x = tf.random.normal((4, 3))
      tf.debugging.assert_near(stde.exact(u, x, stde.laplacian_terms(), method="nested"), tf.fill([4], 6.0))
      ```
    """
    return Decomposition(
        "laplacian", 2, lambda d: _basis_terms(np.ones(d)), lambda d: _basis_terms(np.ones(d)), _hutchinson
    )


def _biharmonic_groups(d: int) -> Terms:
    """Groups ``i <= j``: ``u_iiii`` for ``i = j``, ``2 u_iijj`` by polarisation for ``i < j``."""
    first, second = np.triu_indices(d)
    diagonal = (first == second)[:, None, None]
    indices = np.broadcast_to(np.stack([first, second], axis=-1)[:, None, :], (len(first), 4, 2)).copy()
    # 2 u_iijj = (D(e_i + e_j) + D(e_i - e_j) - 2 D(e_i) - 2 D(e_j)) / 6; u_iiii = D(e_i).
    pair_values = np.array([[1.0, 1.0], [1.0, -1.0], [1.0, 0.0], [0.0, 1.0]])
    diagonal_values = np.array([[1.0, 0.0], [0.0, 0.0], [0.0, 0.0], [0.0, 0.0]])
    values = np.where(diagonal, diagonal_values, pair_values)
    weights = np.where(diagonal[:, :, 0], [1.0, 0.0, 0.0, 0.0], [1 / 6, 1 / 6, -1 / 3, -1 / 3])
    return Terms(indices, values, weights)


def _biharmonic_exact(d: int) -> Terms:
    """``d^2`` jets: ``(4 - d) / 3 sum_i D(e_i) + 1/6 sum_{i<j} (D(e_i + e_j) + D(e_i - e_j))``."""
    first, second = np.triu_indices(d)
    diagonal = (first == second)[:, None, None]
    indices = np.broadcast_to(np.stack([first, second], axis=-1)[:, None, :], (len(first), 2, 2)).copy()
    values = np.where(diagonal, [[1.0, 0.0], [0.0, 0.0]], [[1.0, 1.0], [1.0, -1.0]])
    weights = np.where(diagonal[:, :, 0], [(4 - d) / 3, 0.0], [1 / 6, 1 / 6])
    return Terms(indices, values, weights)


def _biharmonic_dense(z: tf.Tensor, d: int, distribution: str) -> tuple[tf.Tensor, list[float]]:
    if distribution != "gaussian":
        raise ValueError(
            "estimate: the biharmonic's dense estimator needs sampling='gaussian': for Gaussian v, "
            "E[D^4_v u] = 3 Delta^2 u, but for Rademacher v, E[D^4_v u] = 3 Delta^2 u - 2 sum_i u_iiii (biased). "
            "Use sampling='gaussian' or sampling='sparse'."
        )
    return z[:, :, None, :], [1.0 / 3.0]


def biharmonic_terms() -> Decomposition:
    """The biharmonic ``Delta^2 u = sum_{i,j} u_iijj``, the Laplacian of the Laplacian (order 4).

    Exact: through a Keras chain (``method="forward"``), one collapsed pass
    (:func:`hodiff.jets.forward_biharmonic`, ``(d + 1)(d + 4) / 2`` rows per point); otherwise
    ``d^2`` jets of order 4 (``d`` along ``e_i``, two along ``e_i +- e_j`` per pair). Sparse:
    ``B`` of the ``d (d + 1) / 2`` groups ``{i <= j}`` per point (``u_iiii``, or ``2 u_iijj`` from
    four jets), scaled. Dense: Gaussian ``v`` only, ``D^4_v u / 3``.

    Example:
      ```python
      import tensorflow as tf
      from hodiff.jets import stde

      u = lambda x: tf.reduce_sum(x**2, axis=1) ** 2             # |x|^4: Delta^2 = 8 d (d + 2)
      x = tf.random.normal((2, 3), dtype=tf.float64)
      tf.debugging.assert_near(stde.exact(u, x, stde.biharmonic_terms(), method="nested"), [120.0, 120.0])
      ```
    """
    return Decomposition("biharmonic", 4, _biharmonic_groups, _biharmonic_exact, _biharmonic_dense, forward_biharmonic)


def _check_coefficients(coefficients: np.ndarray, d: int, what: str) -> None:
    if coefficients.shape != (d,):
        raise ValueError(
            f"apply/estimate: {what} has {coefficients.size} coefficients (shape {coefficients.shape}) but x has "
            f"d={d} columns; give one coefficient per coordinate."
        )


def pure_partials_terms(coefficients: Sequence[float] | np.ndarray, order: int) -> Decomposition:
    """``sum_i c_i d^k u / dx_i^k``: ``d`` jets of order ``k`` along the basis vectors.

    Args:
      coefficients: ``c``, one number per coordinate (checked against ``x`` when applied).
      order: ``k``, an int >= 1.

    Returns:
      A :class:`Decomposition`. Sparse sampling draws ``B`` coordinates; a dense estimator exists for
      ``k = 2`` (directions ``sqrt(c+) * v`` and ``sqrt(c-) * v``, ``c = c+ - c-``).

    Example:
      ```python
      import tensorflow as tf
      from hodiff.jets import stde

      u = lambda x: x[:, 0] ** 3 + x[:, 1] ** 3                  # u_xxx = u_yyy = 6
      operator = stde.pure_partials_terms([1.0, -2.0], order=3)
      tf.debugging.assert_near(stde.exact(u, tf.ones((2, 2)), operator, method="nested"), [-6.0, -6.0])
      ```
    """
    order = check_order(order, "pure_partials")
    c = np.asarray(coefficients, dtype=float)
    if c.ndim != 1 or c.size == 0:
        raise ValueError(
            f"pure_partials: coefficients must be a flat sequence, one per coordinate; got shape {c.shape}."
        )

    def terms(d: int) -> Terms:
        _check_coefficients(c, d, "pure_partials")
        return _basis_terms(c)

    def dense(z: tf.Tensor, d: int, distribution: str) -> tuple[tf.Tensor, list[float]]:
        if order != 2:
            raise ValueError(
                f"estimate: pure_partials of order {order} has no dense estimator (random directions mix in the "
                f"mixed partials); use sampling='sparse'."
            )
        _check_coefficients(c, d, "pure_partials")
        positive = tf.constant(np.sqrt(np.maximum(c, 0.0)), z.dtype)
        negative = tf.constant(np.sqrt(np.maximum(-c, 0.0)), z.dtype)
        return tf.stack([positive * z, negative * z], axis=2), [1.0, -1.0]

    return Decomposition(f"pure_partials(order={order})", order, terms, terms, dense)


def _matrix_dense(matrix: np.ndarray) -> Callable[[tf.Tensor, int, str], tuple[tf.Tensor, list[float]]]:
    """Dense estimator of ``tr(T H)``: ``T = Q L Q^T``, directions ``Q sqrt(L+-) v``, weights +-1."""
    eigenvalues, vectors = np.linalg.eigh(matrix)

    def dense(z: tf.Tensor, d: int, distribution: str) -> tuple[tf.Tensor, list[float]]:
        if matrix.shape != (d, d):
            raise ValueError(f"estimate: the contraction is {matrix.shape[0]}-dimensional but x has d={d} columns.")
        roots = [vectors * np.sqrt(np.maximum(sign * eigenvalues, 0.0)) for sign in (1.0, -1.0)]
        directions = [tf.einsum("nsd,ed->nse", z, tf.constant(root, z.dtype)) for root in roots]
        return tf.stack(directions, axis=2), [1.0, -1.0]

    return dense


def mixed_partial_terms(i: int, j: int) -> Decomposition:
    """The mixed second partial ``u_ij`` by polarisation: ``(D^2_{e_i+e_j} - D^2_{e_i} - D^2_{e_j}) / 2``.

    Args:
      i: first coordinate, an int >= 0 and ``< d``.
      j: second coordinate; ``i == j`` gives ``u_ii``.

    Returns:
      A :class:`Decomposition` of order 2 (three jets exactly; dense estimators sample
      ``tr(T H)`` with ``T = (e_i e_j^T + e_j e_i^T) / 2``).

    Example:
      ```python
      import tensorflow as tf
      from hodiff.jets import stde

      u = lambda x: x[:, 0] ** 2 * x[:, 2]                       # u_02 = 2 x_0
      x = tf.constant([[1.5, 0.0, 2.0]])
      tf.debugging.assert_near(stde.exact(u, x, stde.mixed_partial_terms(0, 2), method="nested"), [3.0])
      ```
    """
    for name, value in (("i", i), ("j", j)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 0:
            raise ValueError(f"mixed_partial: {name} must be a coordinate, an int >= 0; got {value!r}.")

    def terms(d: int) -> Terms:
        if max(i, j) >= d:
            raise ValueError(f"apply/estimate: mixed_partial({i}, {j}) needs d > {max(i, j)}, but x has d={d} columns.")
        if i == j:
            return Terms(np.array([[[i, i]]]), np.array([[[1.0, 0.0]]]), np.array([[1.0]]))
        indices = np.array([[[i, j], [i, j], [i, j]]])
        values = np.array([[[1.0, 1.0], [1.0, 0.0], [0.0, 1.0]]])
        return Terms(indices, values, np.array([[0.5, -0.5, -0.5]]))

    def dense(z: tf.Tensor, d: int, distribution: str) -> tuple[tf.Tensor, list[float]]:
        terms(d)
        matrix = np.zeros((d, d))
        matrix[i, j] += 0.5
        matrix[j, i] += 0.5
        return _matrix_dense(matrix)(z, d, distribution)

    return Decomposition(f"mixed_partial({i}, {j})", 2, terms, terms, dense)


def contraction_terms(
    order: int,
    directions: Any = None,
    weights: Any = None,
    matrix: Any = None,
) -> Decomposition:
    """A user's contraction ``sum_s w_s D^k_{v_s} u`` of the ``k``-th derivative tensor.

    The symmetric tensor ``T = sum_s w_s v_s^{(x)k}`` is given by its directions and weights, or,
    for ``k = 2``, as a symmetric matrix (``sum_ij T_ij u_ij``, diagonalised into ``d`` jets).

    Args:
      order: ``k``, an int >= 1.
      directions: ``(S, d)`` array, or a function of ``d`` returning ``(directions, weights)``.
      weights: ``(S,)`` array (default: all ones); not with a function.
      matrix: instead of directions, a symmetric ``(d, d)`` matrix (``order`` must be 2).

    Returns:
      A :class:`Decomposition`. Sparse sampling draws ``B`` of the ``S`` terms; a dense estimator
      exists for ``k = 2`` (through ``T``'s eigen-decomposition).

    Example:
      ```python
      import tensorflow as tf
      from hodiff.jets import stde

      u = lambda x: x[:, 0] * x[:, 1]                            # u_01 = 1
      operator = stde.contraction_terms(2, matrix=[[0.0, 1.0], [1.0, 0.0]])   # 2 u_01
      tf.debugging.assert_near(stde.exact(u, tf.ones((1, 2)), operator, method="nested"), [2.0])
      ```
    """
    caller = "contraction"
    order = check_order(order, caller)
    if (matrix is None) == (directions is None):
        raise ValueError(f"{caller}: give either directions (with optional weights) or matrix (order 2), not both.")
    if matrix is not None:
        t = np.asarray(matrix, dtype=float)
        if order != 2 or t.ndim != 2 or t.shape[0] != t.shape[1] or not np.allclose(t, t.T):
            raise ValueError(
                f"{caller}: matrix must be a symmetric (d, d) array and order 2; got shape {t.shape}, order {order}. "
                f"For order k > 2 give directions and weights."
            )
        eigenvalues, vectors = np.linalg.eigh(t)
        d_matrix = t.shape[0]

        def matrix_terms(d: int) -> Terms:
            if d != d_matrix:
                raise ValueError(f"apply/estimate: the matrix is {d_matrix}-dimensional but x has d={d} columns.")
            return Terms(np.tile(np.arange(d), (d, 1, 1)), vectors.T[:, None, :], eigenvalues[:, None])

        return Decomposition("contraction(matrix)", 2, matrix_terms, matrix_terms, _matrix_dense(t))

    def given(d: int) -> tuple[np.ndarray, np.ndarray]:
        if callable(directions):
            if weights is not None:
                raise ValueError(f"{caller}: a directions function returns (directions, weights); do not pass weights.")
            v, w = directions(d)
        else:
            v, w = directions, (np.ones(np.shape(directions)[0]) if weights is None else weights)
        v, w = np.asarray(v, dtype=float), np.asarray(w, dtype=float)
        if v.ndim != 2 or v.shape[1] != d or w.shape != (v.shape[0],):
            raise ValueError(
                f"apply/estimate: the contraction needs directions of shape (S, d={d}) and weights of shape (S,); "
                f"got {v.shape} and {w.shape}."
            )
        return v, w

    def terms(d: int) -> Terms:
        v, w = given(d)
        return Terms(np.tile(np.arange(d), (len(v), 1, 1)), v[:, None, :], w[:, None])

    def dense(z: tf.Tensor, d: int, distribution: str) -> tuple[tf.Tensor, list[float]]:
        if order != 2:
            raise ValueError(
                f"estimate: a contraction of order {order} has no dense estimator here; use sampling='sparse'."
            )
        v, w = given(d)
        return _matrix_dense(np.einsum("s,sd,se->de", w, v, v))(z, d, distribution)

    return Decomposition(f"contraction(order={order})", order, terms, terms, dense)


# ---------------------------------------------------------------------------------------------
# Evaluation.


def _weighted_sum(jets: tf.Tensor, weights: tf.Tensor, num_terms: int) -> tf.Tensor:
    """``jets`` ``(N, G * P, ...)`` and weights ``(G, P)`` or ``(N, G, P)`` -> ``(N, G, ...)``."""
    shape = tf.shape(jets)
    grouped = tf.reshape(jets, tf.concat([shape[:1], [-1, num_terms], shape[2:]], 0))
    if weights.shape.rank == 2:
        weights = weights[None]
    weights = tf.reshape(weights, tf.concat([tf.shape(weights), tf.ones_like(shape[2:])], 0))
    return tf.reduce_sum(grouped * weights, axis=2)


def exact(u: Any, x: tf.Tensor, operator: Decomposition, method: str = "forward", caller: str = "exact") -> tf.Tensor:
    """The exact value of ``operator`` applied to ``u`` at the points ``x``: every term's jet.

    Args:
      u: a Keras chain of Dense/elementwise layers (``method="forward"``) or any scalar field
        (``method="nested"``), as in :func:`hodiff.jets.taylor_coefficients`.
      x: points, shape ``(N, d)``.
      operator: a :class:`Decomposition`.
      method: ``"forward"`` (Taylor mode: the jets of every term in one stacked pass, or the
        operator's own collapsed pass, e.g. the biharmonic's) or ``"nested"`` (nested tapes along
        each direction).

    Returns:
      A tensor shaped like ``u(x)`` (``(N,)`` or ``(N, 1)``), in the dtype of ``x``.

    Example:
      ```python
      import keras, tensorflow as tf
      import hodiff
      from hodiff.jets import stde

      model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(8, "tanh"), keras.layers.Dense(1)])
      x = tf.random.normal((4, 3))
      by_jets = stde.exact(model, x, stde.laplacian_terms())
      tf.debugging.assert_near(by_jets, hodiff.laplacian(model, method="forward")(x), atol=1e-4)
      ```
    """
    x = _validate.as_differentiable(x, "x", caller)
    d = _validate.check_field_points(x, caller)
    terms = operator.exact_terms(d)
    if method == "forward" and operator.forward is not None and isinstance(u, (keras.Model, keras.layers.Layer)):
        return operator.forward(u, x, caller)
    directions = SparseDirections(
        tf.constant(terms.indices.reshape(-1, terms.indices.shape[2]), tf.int32),
        tf.constant(terms.values.reshape(-1, terms.values.shape[2]), x.dtype),
    )
    mixing = tf.constant(terms.weights.reshape(1, -1), x.dtype)  # one weighted sum of all the jets
    return weighted_jets(u, x, directions, mixing, operator.order, method, caller)[:, 0]


def _seed(seed: Any, stream: int) -> tf.Tensor:
    """A stateless seed; the draws use ``alg="philox"``, which XLA reproduces for a constant seed
    (the default ``"auto_select"`` draws differently under ``jit_compile=True`` even then)."""
    return tf.stack([tf.cast(seed, tf.int64), tf.constant(stream, tf.int64)])


def _sparse_draw(
    operator: Decomposition, x: tf.Tensor, num_samples: int, seed: Any, caller: str
) -> tuple[SparseDirections, tf.Tensor, int, int]:
    """``B`` distinct groups per point: their directions ``(N, B * P, m)``, weights ``(N, B, P)``, ``P``, ``G``."""
    d = x.shape[1]
    num_points = tf.shape(x)[0]
    terms = operator.terms(d)
    num_groups, num_terms, width = terms.indices.shape
    if num_samples > num_groups:
        raise ValueError(
            f"{caller}: num_samples={num_samples} sampled groups, but {operator.name} in d={d} dimensions has only "
            f"{num_groups} to sample from (coordinates for a sum over i, coordinate pairs for the biharmonic). "
            f"Use num_samples <= {num_groups}, or apply() for the exact value."
        )
    noise = tf.random.stateless_uniform(
        tf.stack([num_points, num_groups]), _seed(seed, 0), dtype=tf.float32, alg="philox"
    )
    picked = tf.math.top_k(noise, num_samples).indices  # (N, B): B distinct groups per point
    indices = tf.gather(tf.constant(terms.indices, tf.int32), picked)
    values = tf.gather(tf.constant(terms.values, x.dtype), picked)
    weights = tf.gather(tf.constant(terms.weights, x.dtype), picked)
    shape = tf.stack([num_points, num_samples * num_terms, width])
    return SparseDirections(tf.reshape(indices, shape), tf.reshape(values, shape)), weights, num_terms, num_groups


def _dense_draw(
    operator: Decomposition, x: tf.Tensor, num_samples: int, seed: Any, sampling: str, caller: str
) -> tuple[tf.Tensor, tf.Tensor, int]:
    """``S`` random vectors per point turned into directions ``(N, S * P, d)``, weights ``(1, P)``, ``P``."""
    if operator.dense is None:
        raise ValueError(f"{caller}: {operator.name} has no dense estimator; use sampling='sparse' or apply() (exact).")
    d = x.shape[1]
    num_points = tf.shape(x)[0]
    shape = tf.stack([num_points, num_samples, d])
    if sampling == "rademacher":
        signs = tf.random.stateless_uniform(shape, _seed(seed, 1), dtype=tf.float32, alg="philox") < 0.5
        z = tf.where(signs, tf.constant(1.0, x.dtype), tf.constant(-1.0, x.dtype))
    else:
        z = tf.random.stateless_normal(shape, _seed(seed, 2), dtype=x.dtype, alg="philox")
    directions, weights = operator.dense(z, d, sampling)
    flat = tf.reshape(directions, tf.stack([num_points, num_samples * len(weights), d]))
    return flat, tf.constant(weights, x.dtype)[None, :], len(weights)


def estimate(
    u: Any,
    x: tf.Tensor,
    operator: Decomposition,
    num_samples: int = 16,
    seed: Any = 0,
    sampling: str = "sparse",
    method: str = "forward",
    with_stderr: bool = True,
    caller: str = "estimate",
) -> Estimate:
    """An unbiased stochastic estimate of ``operator`` applied to ``u`` at each point, with its error.

    Args:
      u: a Keras chain (``method="forward"``) or any scalar field (``method="nested"``).
      x: points, shape ``(N, d)``.
      operator: a :class:`Decomposition`.
      num_samples: per point: the number of groups drawn (``"sparse"``, at most the number of
        groups, ``d`` for the Laplacian) or of random directions (dense samplings).
      seed: an int, or an int tensor (e.g. the training step, to resample every step without
        retracing). An int seed gives the same draws in eager, ``tf.function`` and XLA; a seed
        tensor gives the same draws on every call, but XLA's stream differs from TF's kernels.
      sampling: ``"sparse"`` (groups without replacement, scaled; SDGD-style), ``"rademacher"``
        or ``"gaussian"`` (dense random directions; STDE / Hutchinson-style).
      method: ``"forward"`` or ``"nested"``, as in :func:`exact`.
      with_stderr: ``False`` skips the standard error (``stderr`` is ``None``) and carries the
        top Taylor coefficient as one weighted sum over all samples (a collapsed jet): the same
        value, up to twice as fast for second-order operators (e.g. in a training loss).
      caller: name used in error messages.

    Returns:
      :class:`~hodiff.Estimate` shaped like ``u(x)``: the mean of the per-point samples and its
      standard error (for ``"sparse"`` with the finite-population factor ``sqrt(1 - B / G)``,
      zero when every group is drawn; one sample gives a stderr of 0, not an error estimate).

    References:
      Shi et al., "Stochastic Taylor Derivative Estimator", NeurIPS 2024 (arXiv:2412.00088).
      Hu et al., "Tackling the curse of dimensionality with physics-informed neural networks",
      2024 (arXiv:2307.12306).

    Example:
      ```python
      import tensorflow as tf
      from hodiff.jets import stde

      u = lambda x: tf.reduce_sum(x**2, axis=1)                  # H = 2I: every sample is exact
      x = tf.random.normal((3, 5))
      e = stde.estimate(u, x, stde.laplacian_terms(), num_samples=2, sampling="rademacher", method="nested")
      tf.debugging.assert_near(e.value, tf.fill([3], 10.0))
      ```
    """
    _validate.check_count(num_samples, "num_samples", caller)
    if sampling not in SAMPLINGS:
        raise ValueError(
            f"{caller}: sampling={sampling!r} is not an option; use 'sparse' (random coordinate subsets, SDGD), "
            f"'rademacher' or 'gaussian' (random dense directions, STDE/Hutchinson)."
        )
    x = _validate.as_differentiable(x, "x", caller)
    _validate.check_field_points(x, caller)
    if sampling == "sparse":
        directions, weights, num_terms, num_groups = _sparse_draw(operator, x, num_samples, seed, caller)
    else:
        directions, weights, num_terms = _dense_draw(operator, x, num_samples, seed, sampling, caller)
        num_groups = 0
    num_points = tf.shape(x)[0]
    weights = tf.broadcast_to(weights, tf.stack([num_points, num_samples, num_terms]))  # (N, B, P)
    scale = float(num_groups) if num_groups else 1.0
    if not with_stderr:  # one weighted sum of all the jets: a collapsed jet
        mixing = tf.reshape(weights, tf.stack([num_points, 1, num_samples * num_terms])) * (scale / num_samples)
        return Estimate(weighted_jets(u, x, directions, mixing, operator.order, method, caller)[:, 0], None)
    if num_terms == 1:
        jets = directional_derivative(u, x, directions, operator.order, method, caller)
        samples = _weighted_sum(jets, weights, num_terms)  # (N, B, ...)
    else:  # each sample is a weighted sum of its P jets
        blocks = tf.eye(num_samples, dtype=x.dtype)[None, :, :, None] * weights[:, None, :, :]
        mixing = tf.reshape(blocks, tf.stack([num_points, num_samples, num_samples * num_terms]))
        samples = weighted_jets(u, x, directions, mixing, operator.order, method, caller)
    rank = samples.shape.rank
    per_sample = tf.transpose(samples, [1, 0] + list(range(2, rank)))
    if not num_groups:
        return mean_and_stderr(per_sample)
    result = mean_and_stderr(scale * per_sample)
    return Estimate(result.value, result.stderr * np.sqrt(1.0 - num_samples / num_groups))
