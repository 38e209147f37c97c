"""NS2d-CG (PINNacle): steady Navier-Stokes in a channel that widens at x = 2, nu = 0.01; fields u, v, p.

``u u_x + v u_y + p_x = nu (u_xx + u_yy)``, ``u v_x + v v_y + p_y = nu (v_xx + v_yy)``,
``u_x + v_y = 0`` on ``[0, 4] x [0, 2]`` minus ``[0, 2] x [1, 2]``: the inflow ``u = 4y(1 - y)``,
``v = 0`` enters at ``x = 0``, ``y`` in [0, 1]; the channel widens to [0, 2] at ``x = 2``; the
other walls are at rest. The outlet ``x = 4`` is free of stress, ``-p + 2 nu u_x = 0`` and
``u_y + v_x = 0`` (PINNacle writes ``p = 0`` there, which alone leaves the outflow velocity
undetermined; the stress-free outlet is the usual meaning of a pressure outlet, and with it p is
within ``2 nu u_x`` of 0 there). Re = 100 on the inlet's height and peak velocity: the flow
separates at the step's corner (2, 1) and the recirculation behind it reaches the outlet.

The walls and the inlet are hard constraints: ``u = 4y(1 - y) relu(1 - x/2)^3 + D N_u``,
``v = D N_v`` with ``D = tanh(2x) y (2 - y) s(x, y)`` and ``s = a + b + sqrt(a^2 + b^2)``,
``a = 1 - y``, ``b = x - 2``, the R-function union of the half-planes ``y < 1`` and ``x > 2``: zero
on both walls of the step and positive in the channel. Only products and elementwise functions,
no slicing or concatenation (which XLA cannot differentiate three times). The two outlet
conditions are loss terms. Reference: the staggered finite-volume solution by Newton
(:func:`pinn_examples.cavity_reference.solve_channel`), 128 cells per unit length, its own error
~1e-3 on (u, v) (refinement tests; the re-entrant corner limits it to first order). The error is
PINNacle's L2RE over (u, v, p) together (target 2e-2), with (u, v) in metrics.json as well.
"""

import keras
import numpy as np

from pinn_examples._runner import Example, Settings, grouped_targets, run
from pinn_examples.cavity_reference import NU, expanding_channel

VERTICES = ((0.0, 0.0), (4.0, 0.0), (4.0, 2.0), (2.0, 2.0), (2.0, 1.0), (0.0, 1.0))
OUTLET_POINTS = 256
CORNER = (2.0, 1.0)  # the step's re-entrant corner; the fluid fills 3 pi / 2 around it
OPENING = 1.5 * np.pi
CUTOFF = 0.3  # the corner modes' cutoff exp(-(r / CUTOFF)^4): < 1e-53 at r >= 1 (the inlet, outlet, top and bottom)
CORE = 0.5 / 128  # the corner pressure's r is sqrt(r^2 + CORE^2): the reference's resolution


def corner_exponent(even: bool, opening: float = OPENING) -> float:
    """The leading ``lambda`` in (0, 1) of the Stokes corner flows ``psi = r^(lambda + 1) f(phi)``, no slip on both walls.

    With the walls at ``phi = +-opening / 2``, an even ``f`` needs ``sin(lambda opening) = -lambda sin(opening)``,
    an odd one ``sin(lambda opening) = lambda sin(opening)``; solved by Newton's method from 0.5 and 0.95
    (0.5445 and 0.9085 for 3 pi / 2).
    """
    sign = 1.0 if even else -1.0
    lam = 0.5 if even else 0.95
    for _ in range(50):
        lam -= (np.sin(lam * opening) + sign * lam * np.sin(opening)) / (
            opening * np.cos(lam * opening) + sign * np.sin(opening)
        )
    return float(lam)


def corner_mode(x, y, even: bool, nu: float = NU, core: float = CORE):
    """``(u, v, p)``: a Stokes flow at the step's corner (2, 1) with no slip on both its walls, its velocity ~ ``r^lambda``.

    In polar coordinates ``r, phi`` about the corner, ``phi`` from the bisector of the fluid's 270 degrees (the
    direction ``(1, -1)``; the walls are at ``phi = +-3 pi / 4``, the solid at ``phi = pi``), the stream function
    is ``psi = r^(lambda + 1) f(phi)`` with ``f = cos((lambda + 1) phi) cos((lambda - 1) beta) - cos((lambda - 1) phi)
    cos((lambda + 1) beta)`` (even; ``sin`` for ``cos`` throughout: odd), ``beta = 3 pi / 4``: ``f(+-beta) = 0``,
    and ``f'(+-beta) = 0`` for ``lambda`` = :func:`corner_exponent`. ``u_r = r^lambda f'``, ``u_phi = -(lambda + 1)
    r^lambda f``. The first term of ``f`` is a potential flow; the second carries the vorticity ``Delta psi = 4 lambda
    B r^(lambda - 1) cos((lambda - 1) phi)`` (``B`` its coefficient; odd: ``sin``), whose harmonic conjugate gives
    ``p = -4 nu lambda B r^(lambda - 1) sin((lambda - 1) phi)`` (odd: ``+cos``), ``r`` there taken as
    ``sqrt(r^2 + core^2)``, finite at the corner.

    Args:
      x, y: the points (tensors).
      even: the mode with even ``f`` (``lambda = 0.5445``, the stronger singularity) or the odd one (``0.9085``).
      nu: the viscosity.
      core: the radius under which the pressure's ``r^(lambda - 1)`` levels off (0: the exact mode).

    Returns:
      ``(u, v, p)`` as tensors: ``nu (Laplacian u) = grad p`` and ``div u = 0`` (for ``p`` only where ``r`` is
      well above ``core``); ``u = v = 0`` on both walls of the step.

    References:
      Dean & Montagnon (1949), "On the steady motion of viscous liquid in a corner", Proc. Camb. Phil. Soc. 45;
      Moffatt (1964), "Viscous and resistive eddies near a sharp corner", J. Fluid Mech. 18.
    """
    import tensorflow as tf

    lam, beta = corner_exponent(even), 0.75 * np.pi
    trig, slope = (tf.cos, -1.0) if even else (tf.sin, 1.0)  # f's terms, and d/dphi of them: -sin, +cos
    other = tf.sin if even else tf.cos
    a, b = (float(np.cos(k * beta)) if even else float(np.sin(k * beta)) for k in (lam - 1.0, lam + 1.0))
    dx, dy = x - CORNER[0], y - CORNER[1]
    xi, eta = (dx - dy) / np.sqrt(2.0), (dx + dy) / np.sqrt(2.0)  # along the bisector, and turned by +90 degrees
    phi = tf.math.atan2(eta, xi)
    r2 = xi * xi + eta * eta
    power = r2 ** (0.5 * lam)
    f = a * trig((lam + 1.0) * phi) - b * trig((lam - 1.0) * phi)
    df = slope * (a * (lam + 1.0) * other((lam + 1.0) * phi) - b * (lam - 1.0) * other((lam - 1.0) * phi))
    u_r, u_phi = power * df, -(lam + 1.0) * power * f
    cos, sin = tf.cos(phi), tf.sin(phi)
    u_xi, u_eta = u_r * cos - u_phi * sin, u_r * sin + u_phi * cos
    pressure = -4.0 * nu * lam * (-b) * (r2 + core * core) ** (0.5 * (lam - 1.0))
    p = pressure * (tf.sin((lam - 1.0) * phi) if even else -tf.cos((lam - 1.0) * phi))
    return (u_xi + u_eta) / np.sqrt(2.0), (u_eta - u_xi) / np.sqrt(2.0), p


def residual(d, x, p):
    u, v = d["u"], d["v"]
    return {
        "momentum_x": u * d["u_x"] + v * d["u_y"] + d["p_x"] - NU * (d["u_xx"] + d["u_yy"]),
        "momentum_y": u * d["v_x"] + v * d["v_y"] + d["p_y"] - NU * (d["v_xx"] + d["v_yy"]),
        "continuity": d["u_x"] + d["v_y"],
    }


class Amplitudes(keras.layers.Layer):
    """Appends ``count`` trainable constants (starting at 0) to the network's outputs: ``(N, k) -> (N, k + count)``.

    Written as a matmul and a bias (no concatenation, which XLA cannot differentiate three times).
    """

    def __init__(self, count: int, **kwargs):
        super().__init__(**kwargs)
        self.count = count

    def build(self, input_shape):
        self.amplitudes = self.add_weight(shape=(self.count,), initializer="zeros", name="amplitudes")
        k = input_shape[-1]
        self.embed = np.eye(k, k + self.count)
        self.place = np.eye(self.count, k + self.count, k)

    def call(self, outputs):
        embed, place = (keras.ops.convert_to_tensor(m, outputs.dtype) for m in (self.embed, self.place))
        return keras.ops.matmul(outputs, embed) + keras.ops.matmul(self.amplitudes[None, :], place)

    def get_config(self):
        return {**super().get_config(), "count": self.count}


MODES = (True, False)  # the even and the odd corner mode, each with a trainable amplitude


def walls(x, outputs):
    """u, v exact on the inlet and the walls, the corner modes lifted; p as the network gives it plus its lift.

    ``(u, v, p) = [lift, 0, 0] + sum_k A_k chi (U_k, V_k, P_k) + [D, D, 1] * (N_u, N_v, N_p)``: ``outputs`` holds
    the network's ``N`` and the amplitudes ``A_k`` of the :func:`corner_mode` s (constant columns of
    :class:`Amplitudes`), ``chi = exp(-(r / CUTOFF)^4)``, ``r`` the distance from the corner. The modes vanish on
    the step's walls and ``chi`` elsewhere on the boundary, so the walls and the inlet stay exact.
    """
    import tensorflow as tf

    s, t = x["x"][:, None], x["y"][:, None]
    a, b = 1.0 - t, s - 2.0
    step = a + b + tf.sqrt(a * a + b * b + 1e-12)  # R-union of y < 1 and x > 2: zero on the step's walls
    distance = tf.tanh(2.0 * s) * t * (2.0 - t) * step
    lift = 4.0 * t * (1.0 - t) * tf.nn.relu(1.0 - 0.5 * s) ** 3
    dtype = outputs.dtype.as_numpy_dtype
    columns = np.eye(3 + len(MODES), dtype=dtype)
    first, second, third = (columns[None, k, :3] for k in range(3))
    network = tf.matmul(outputs, columns[:, :3])
    r2 = (b * b + a * a) / CUTOFF**2
    chi = tf.exp(-r2 * r2)
    fields = lift * first + (distance * (first + second) + third) * network
    for k, even in enumerate(MODES):
        amplitude = tf.matmul(outputs, columns[:, 3 + k : 4 + k])
        u, v, p = corner_mode(s, t, even)
        fields += amplitude * chi * (u * first + v * second + p * third)
    return fields


def outlet_conditions():
    """The stress-free outlet ``x = 4``: ``-p + 2 nu u_x = 0`` and ``u_y + v_x = 0`` at evenly spaced points."""
    from hodiff import pinn

    y = (np.arange(OUTLET_POINTS) + 0.5) * 2.0 / OUTLET_POINTS
    points = np.stack([np.full(OUTLET_POINTS, 4.0), y], axis=1)
    return [
        pinn.Condition(lambda d, x, n: -d["p"] + 2.0 * NU * d["u_x"], ("p", "u_x"), on=points, name="outlet_normal"),
        pinn.Condition(lambda d, x, n: d["u_y"] + d["v_x"], ("u_y", "v_x"), on=points, name="outlet_shear"),
    ]


def build(settings: Settings):
    from hodiff import pinn

    domain = pinn.Polygon(VERTICES)
    problem = pinn.Problem(
        domain,
        needs=("u", "v", "u_x", "u_y", "v_x", "v_y", "p_x", "p_y", "u_xx", "u_yy", "v_xx", "v_yy"),
        residual=residual,
        fields=("u", "v", "p"),
        residual_names=("momentum_x", "momentum_y", "continuity"),
        conditions=outlet_conditions(),
        output_transform=walls,
    )
    network = pinn.mlp(
        domain, outputs=3, width=settings.width, depth=settings.depth, dtype=settings.dtype, seed=settings.seed
    )
    points = keras.Input(shape=(2,), dtype=settings.dtype)
    return problem, keras.Model(points, Amplitudes(len(MODES), dtype=settings.dtype)(network(points)))


def reference(cells: int = 128, cache: str | None = "~/.cache/hodiff"):
    """The test grid (spacing 0.02, walls and the step's corner included) and the reference on it (NaN outside)."""
    x, y = np.linspace(0.0, 4.0, 201), np.linspace(0.0, 2.0, 101)
    return {"x": x, "y": y}, expanding_channel(x, y, cells=cells, cache=cache)


TARGETS = {("u", "v", "p"): 2e-2, ("u", "v"): 1e-2}  # PINNacle's L2RE over these fields together


EXAMPLE = Example(
    name="ns2d_cg",
    build=build,
    reference=reference,
    presets={
        "default": Settings(interior=2048, adam_steps=1000, lbfgs_iterations=20000, width=40, depth=4, dtype="float64"),
        "fast": Settings(interior=256, adam_steps=100, lbfgs_iterations=30, width=16, depth=2, checkpoint_every=100),
    },
    target={"default": 1.0},
    target_metric="target_ratio",
    extra_metrics=lambda trainer: grouped_targets(EXAMPLE, trainer, TARGETS),
)


def main(argv=None) -> int:
    return run(EXAMPLE, argv)
