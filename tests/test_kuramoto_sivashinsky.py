"""kuramoto_sivashinsky (PINNacle KS): the ETDRK4 reference converges and solves the example's equations;
the example runs through the runner's time windows, answers --evaluate, and refuses bad flags."""

import json

import numpy as np
import pytest

from pinn_examples import kuramoto_sivashinsky as ks
from pinn_examples.references import kuramoto_sivashinsky_etdrk4

TINY = [
    "--preset", "fast", "--interior", "64", "--adam-steps", "10", "--lbfgs-iterations", "0", "--width", "8",
    "--depth", "2", "--architecture", "mlp", "--no-factorization", "--no-progress",
]  # fmt: skip


def test_reference_converges_in_modes_and_step():
    x, t = np.linspace(0.0, 2.0 * np.pi, 64, endpoint=False), np.linspace(0.0, 0.5, 6)
    finest = kuramoto_sivashinsky_etdrk4(x, t, modes=256, dt=5e-5)
    in_modes = [np.abs(kuramoto_sivashinsky_etdrk4(x, t, modes=m, dt=1e-4) - finest).max() for m in (64, 128, 256)]
    in_step = [np.abs(kuramoto_sivashinsky_etdrk4(x, t, modes=256, dt=dt) - finest).max() for dt in (4e-4, 2e-4)]
    # spectral in the modes: 64 modes do not resolve the cells, 128 nearly, 256 to the time error
    assert in_modes[0] > 1.0 and 1e-3 < in_modes[1] < 3e-2 and in_modes[2] < 1e-7
    # fourth order in the step: halving it divides the error by about 16 (against dt = 5e-5: by 13)
    assert in_step[0] < 1e-5 and 9.0 < in_step[0] / in_step[1] < 20.0
    np.testing.assert_allclose(finest[:, 0], np.cos(x) * (1.0 + np.sin(x)), atol=1e-14)
    np.testing.assert_allclose(finest.mean(axis=0), 0.0, atol=1e-13)  # the mean of u is conserved


def test_reference_solves_the_examples_equations():
    """The example's residuals (both forms) vanish on the reference, u_t by finite differences in time."""
    n, h, time = 256, 1e-4, 0.2
    x = np.linspace(0.0, 2.0 * np.pi, n, endpoint=False)
    u = kuramoto_sivashinsky_etdrk4(x, time + h * np.arange(-2, 3), modes=256, dt=2.5e-5)
    k, spectrum = np.fft.rfftfreq(n, 1.0 / n), np.fft.rfft(u[:, 2])
    derivative = lambda order: np.fft.irfft((1j * k) ** order * spectrum, n=n)  # noqa: E731
    d = {"u": u[:, 2], "u_t": (u[:, 0] - 8 * u[:, 1] + 8 * u[:, 3] - u[:, 4]) / (12 * h), "u_x": derivative(1)}
    d.update(u_xx=derivative(2), u_xxxx=derivative(4), v=derivative(2), v_xx=derivative(4))
    split = ks.residual(d, {}, {})
    assert np.abs(split["ks"]).max() < 0.05 * np.abs(d["u_t"]).max()  # a 1% slip in a coefficient gives ~0.2
    np.testing.assert_allclose(split["curvature"], 0.0, atol=1e-12)
    np.testing.assert_allclose(ks.residual_fourth(d, {}, {}), split["ks"], atol=1e-12)


def test_reference_rejects_times_off_the_step_grid():
    with pytest.raises(ValueError, match="multiple of dt"):
        kuramoto_sivashinsky_etdrk4(np.zeros(2), np.array([0.00013]), dt=1e-4)


def test_initial_values_of_both_fields():
    import tensorflow as tf

    x = np.linspace(0.0, 2.0 * np.pi, 9)
    values = ks.initial({"x": tf.constant(x)}).numpy()
    np.testing.assert_allclose(values[:, 0], np.cos(x) * (1.0 + np.sin(x)), atol=1e-14)
    np.testing.assert_allclose(values[:, 1], -np.cos(x) - 4.0 * np.sin(x) * np.cos(x), atol=1e-14)  # u_xx


@pytest.mark.slow  # 25 s: XLA compiles the fourth-order step of each window
def test_fast_run_with_windows_and_evaluate(tmp_path):
    output = tmp_path / "run"
    assert ks.main([*TINY, "--output", str(output)]) == 0
    metrics = json.loads((output / "metrics.json").read_text())
    assert metrics["error_fields"] == ["u"] and [w["end"] for w in metrics["windows"]] == [0.5, 1.0]
    assert 0.0 < metrics["relative_l2_error"] == metrics["relative_l2_error_u"] < 2.0
    saved = np.load(output / "prediction.npz")
    x, t = np.meshgrid(saved["x"], saved["t"], indexing="ij")
    np.save(tmp_path / "points.npy", np.stack([x.ravel(), t.ravel()], 1))
    assert ks.main(["--output", str(output), "--evaluate", str(tmp_path / "points.npy")]) == 0
    evaluated = np.load(output / "evaluation.npz")
    np.testing.assert_allclose(evaluated["u"], saved["prediction"].ravel(), rtol=0, atol=1e-12)
    np.testing.assert_allclose(evaluated["u"].reshape(x.shape)[:, 0], saved["reference"][:, 0], atol=1e-12)


@pytest.mark.parametrize(
    "flags, message",
    [
        (["--architecture", "resnet"], "invalid choice"),
        (["--causal-bins", "0"], "out of range"),
        (["--time-windows", "0"], "out of range"),
        (["--time-windows", "2", "--replicas", "2"], "--time-windows trains on one device"),
    ],
)
def test_bad_flags_are_refused(flags, message, tmp_path, capsys):
    with pytest.raises(SystemExit):
        ks.main([*flags, "--output", str(tmp_path / "run")])
    assert message in capsys.readouterr().err


def test_the_fourier_restart_continues_the_window_before():
    """Window 1 starts from the Fourier series of window 0's solution at t = 1/2: equal to it there,
    derivatives included, and it no longer calls window 0's network."""
    import tensorflow as tf

    from hodiff import pinn
    from hodiff.operators import partials

    settings = ks.EXAMPLE.presets["fast"]
    problem, model = ks.build(settings)
    windows = ks.windows(settings)
    first = windows.problem(problem, 0).solution(pinn.windows.freeze(model))
    calls = []
    counted = lambda points: calls.append(1) or first(points)  # noqa: E731
    model.set_weights([w + 0.05 for w in model.get_weights()])
    second = windows.problem(problem, 1, counted).solution(model)
    assert len(calls) == 1  # the series was taken once, when window 1 was built
    points = tf.constant(np.stack([np.linspace(0.0, 2.0 * np.pi, 13), np.full(13, 0.5)], 1))
    before = partials(lambda p: first(p)[:, 0], points, ("x", "t"), ("", "x", "xxxx"))
    after = partials(lambda p: second(p)[:, 0], points, ("x", "t"), ("", "x", "xxxx"))
    for key in before:
        np.testing.assert_allclose(after[key].numpy(), before[key].numpy(), rtol=1e-7, atol=1e-9)
    assert len(calls) == 1
