"""The derivative tower: several partial derivatives of a scalar field on shared nested tapes."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import tensorflow as tf

from hodiff import _validate

MultiIndex = tuple[int, ...]


def derivative_tower(
    u: Callable[[tf.Tensor], tf.Tensor],
    x: tf.Tensor,
    multi_indices: Sequence[MultiIndex],
    unconnected: str = "error",
    caller: str = "derivative_tower",
) -> tuple[dict[MultiIndex, tf.Tensor], bool]:
    """Computes the partial derivatives ``d^k u / dx_i dx_j ...`` of a scalar field, sharing tapes.

    Each multi-index is sorted (mixed partials of smooth fields commute), so ``(1, 0)`` and
    ``(0, 1)`` are one derivative. Every node of the derivative tree is differentiated once,
    by one reverse pass that yields all its ``d`` partials at once, and the tape of order
    ``k`` records only the computation below it.

    Args:
      u: scalar field, ``(N, d) -> (N,)`` or ``(N, 1)``.
      x: points, shape ``(N, d)``.
      multi_indices: the partials wanted; ``()`` is the value itself.
      unconnected: ``"error"`` or ``"zero"``.
      caller: name used in error messages.

    Returns:
      ``(nodes, as_column)``: a dict from sorted multi-index to a tensor of shape ``(N,)`` in
      the dtype of ``x`` (holding every node computed on the way), and whether ``u`` returned
      ``(N, 1)``.
    """
    _validate.check_unconnected(unconnected, caller)
    wanted = [tuple(sorted(m)) for m in multi_indices]
    # Nodes whose gradient is needed: every proper prefix of a wanted multi-index.
    to_differentiate = {m[:k] for m in wanted for k in range(len(m))}
    order = max((len(m) for m in wanted), default=0)

    def tower(depth: int) -> tuple[dict[MultiIndex, tf.Tensor], bool]:
        if depth == 0:
            values, as_column = _validate.check_per_point_values(u(x), x, "u", caller)
            return {(): tf.cast(values, x.dtype)}, as_column
        with tf.GradientTape(persistent=True) as tape:
            tape.watch(x)
            nodes, as_column = tower(depth - 1)
        for node in sorted(n for n in to_differentiate if len(n) == depth - 1):
            gradient = _validate.gradient(tape, nodes[node], [x], ["x"], unconnected, caller)[0]
            first = node[-1] if node else 0
            for i in range(first, x.shape[1]):  # sorted children only
                nodes[node + (i,)] = gradient[:, i]
        return nodes, as_column

    return tower(order)
