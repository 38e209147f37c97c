"""Point sampling in the unit cube: random, Latin hypercube and scrambled Sobol points.

Every geometry maps these unit samples onto its interior and boundary pieces;
:func:`unit_samples` is the one place that draws them, so a seed gives the same points everywhere.

Example:
  ```python
  from hodiff.pinn.geometry import unit_samples

  points = unit_samples(8, 2, "sobol", seed=0)
  assert points.shape == (8, 2) and ((0 <= points) & (points < 1)).all()
  ```
"""

from __future__ import annotations

import math

import numpy as np
from scipy.stats import qmc

__all__ = ["SAMPLING_METHODS", "unit_samples"]


SAMPLING_METHODS = ("random", "lhs", "sobol")
MAX_CANDIDATES = 4_000_000  # rejection sampling gives up after this many candidates


def unit_samples(count: int, dimension: int, method: str, seed: int) -> np.ndarray:
    """``count`` points in the unit cube ``[0, 1]^dimension``.

    Args:
      count: number of points, >= 1.
      dimension: number of coordinates (0 gives an empty ``(count, 0)`` array).
      method: ``"random"`` (uniform), ``"lhs"`` (Latin hypercube) or ``"sobol"`` (scrambled
        Sobol; a power of two keeps its balance properties).
      seed: an int; the same seed gives the same points.

    Returns:
      Array of shape ``(count, dimension)``, float64.
    """
    if method not in SAMPLING_METHODS:
        raise ValueError(
            f"sampling method {method!r} is not one of {SAMPLING_METHODS}; use 'sobol' or 'lhs' for even "
            f"coverage, 'random' for i.i.d. points."
        )
    if not isinstance(count, (int, np.integer)) or count < 1:
        raise ValueError(
            f"the number of points must be an int >= 1, got {count!r}; a condition or domain with no points has "
            f"nothing to train on."
        )
    if dimension == 0:
        return np.zeros((count, 0))
    if method == "random":
        return np.random.default_rng(seed).uniform(size=(count, dimension))
    if method == "lhs":
        return qmc.LatinHypercube(d=dimension, seed=seed).random(count)
    sampler = qmc.Sobol(d=dimension, scramble=True, seed=seed)
    exponent = int(np.ceil(np.log2(count)))
    return sampler.random_base2(exponent)[:count]


def batches(dimension: int, method: str, seed: int, first: int):
    """Successive batches of unit samples (a continuing Sobol sequence for ``"sobol"``)."""
    unit_samples(1, 0, method, seed)  # validates method
    size = 1 << int(np.ceil(np.log2(max(first, 2))))
    rng = np.random.default_rng(seed)
    sobol = qmc.Sobol(d=max(dimension, 1), scramble=True, seed=seed) if method == "sobol" else None
    round_ = 0
    while True:
        if dimension == 0:
            batch = np.zeros((size, 0))
        elif sobol is not None:
            batch = sobol.random(size)
        elif method == "lhs":
            batch = qmc.LatinHypercube(d=dimension, seed=seed + 7919 * round_).random(size)
        else:
            batch = rng.uniform(size=(size, dimension))
        yield batch
        round_ += 1
        size = min(size * 2, 1 << 18)


def piece_choice(measures: np.ndarray, start: int, size: int) -> np.ndarray:
    """Which piece each of candidates ``start .. start + size - 1`` lies on, in proportion to ``measures``.

    Deterministic and stratified: candidate ``i`` takes the piece whose share of the total measure
    holds ``frac(1/2 + i (sqrt(5) - 1) / 2)`` (a golden-ratio sequence), so every run of candidates
    splits between the pieces within a point or two of their shares (two points on an interval: one
    per end), whatever the sampling method.
    """
    shares = np.cumsum(measures) / np.sum(measures)
    u = np.mod(0.5 + np.arange(start, start + size) * ((math.sqrt(5.0) - 1.0) / 2.0), 1.0)
    return np.minimum(np.searchsorted(shares, u, side="right"), len(measures) - 1)
