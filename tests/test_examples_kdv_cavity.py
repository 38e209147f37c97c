"""kdv and lid_driven_cavity: fast presets lower loss and error; the references solve their PDEs."""

import json

import numpy as np

from pinn_examples.__main__ import main
from pinn_examples.references import kdv_etdrk4


def _check_run(output, fields):
    metrics = json.loads((output / "metrics.json").read_text())
    history = [line.split(",") for line in (output / "history.csv").read_text().splitlines()]
    loss = [float(row[history[0].index("loss")]) for row in history[1:]]
    assert loss[-1] < loss[0]
    assert metrics["relative_l2_error"] < 0.7 * metrics["initial_relative_l2_error"]
    assert all(f"relative_l2_error_{field}" in metrics for field in fields)
    return metrics


def test_kdv_fast_preset_lowers_loss_and_error(tmp_path):
    output = tmp_path / "kdv"
    assert main(["kdv", "--preset", "fast", "--output", str(output), "--no-progress"]) == 0
    _check_run(output, ["u"])


def test_cavity_fast_preset_lowers_loss_and_error(tmp_path, monkeypatch):
    from pinn_examples import cavity_reference, lid_driven_cavity

    def coarse_reference():  # the default's 192-cell solve takes a minute; 32 cells are enough to see progress
        x = np.linspace(0.0, 1.0, 41)
        return {"x": x, "y": x}, cavity_reference.lid_driven_cavity(x, x, cells=32, cache=None)

    monkeypatch.setattr(lid_driven_cavity.EXAMPLE, "reference", coarse_reference)
    output = tmp_path / "cavity"
    assert main(["lid_driven_cavity", "--preset", "fast", "--output", str(output), "--no-progress"]) == 0
    metrics = _check_run(output, ["u", "v", "p"])
    assert metrics["error_fields"] == ["u", "v", "p"]  # PINNacle's L2RE: the fields together
    errors = {group: metrics[f"relative_l2_error{group}"] for group in ("", "_uv")}
    assert metrics["target_ratio"] == max(errors[""] / 2e-2, errors["_uv"] / 1e-2)
    history = (output / "history.csv").read_text().splitlines()[0].split(",")
    assert {"momentum_x", "momentum_y", "continuity", "pressure_gauge"} <= set(history)


def test_kdv_reference_solves_the_equation():
    modes, dt = 256, 1e-3
    x, t = -1.0 + 2.0 * np.arange(modes) / modes, np.arange(0.0, 1.0 + dt / 2, dt)
    u = kdv_etdrk4(x, t, modes=modes, dt=dt / 4)
    k = np.pi * np.fft.fftfreq(modes, d=1.0 / modes)
    spectrum = np.fft.fft(u, axis=0)
    u_x = np.real(np.fft.ifft(1j * k[:, None] * spectrum, axis=0))
    u_xxx = np.real(np.fft.ifft((1j * k[:, None]) ** 3 * spectrum, axis=0))
    u_t = (u[:, 2:] - u[:, :-2]) / (2 * dt)  # second order in dt
    residual = u_t + (u * u_x + 0.0025 * u_xxx)[:, 1:-1]
    assert np.abs(residual).max() < 1e-3 * np.abs(u_t).max()


def test_cavity_reference_solves_the_equations():
    from pinn_examples import cavity_reference

    cells = 64
    h = 1.0 / cells
    centres = (np.arange(cells) + 0.5) * h
    flow = cavity_reference.interpolate(cavity_reference.solve(cells), centres, centres)
    u, v, p = flow["u"], flow["v"], flow["p"]
    d = lambda f, axis: np.gradient(f, h, axis=axis)
    u_x, u_y, v_x, v_y = d(u, 0), d(u, 1), d(v, 0), d(v, 1)
    momentum_x = u * u_x + v * u_y + d(p, 0) - 0.01 * (d(u_x, 0) + d(u_y, 1))
    momentum_y = u * v_x + v * v_y + d(p, 1) - 0.01 * (d(v_x, 0) + d(v_y, 1))
    inner = (slice(4, -4), slice(4, -4))  # one-sided differences near the walls are first order
    convection, stretching = np.abs(u * u_x).max(), np.abs(u_x).max()
    checks = (("momentum_x", momentum_x, convection), ("momentum_y", momentum_y, convection))
    for name, r, scale in (*checks, ("continuity", u_x + v_y, stretching)):
        # measured ~1e-2 (O(h^2) of the differences here); nu = 0.02 instead of 0.01 gives 0.5
        assert np.abs(r[inner]).max() < 0.03 * scale, name
