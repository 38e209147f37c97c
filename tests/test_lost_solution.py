"""A run that ends worse than predicting zero says so, naming the time window where the error passed 1
(issue 45: heat2d_lt ended at 28 times the zero prediction's error without a word)."""

import json

import numpy as np

from hodiff.pinn.metrics import worse_than_zero
from pinn_examples import heat2d_ms, runner

TINY = [
    "--preset", "fast", "--interior", "64", "--adam-steps", "10", "--lbfgs-iterations", "0", "--width", "8",
    "--depth", "2", "--steps-per-call", "10", "--log-every", "10", "--checkpoint-every", "10", "--no-progress",
]  # fmt: skip


def test_the_interval_where_the_error_passes_one_is_named():
    t = np.linspace(0.0, 3.0, 301)
    exact = {"u": np.sin(t) + 2.0, "v": np.ones_like(t)}
    assert worse_than_zero({"u": exact["u"] * 1.5, "v": exact["v"]}, exact, t, (0.0, 1.0, 2.0, 3.0)) is None
    grown = {"u": np.where(t >= 1.0, 30.0 * exact["u"], exact["u"]), "v": exact["v"]}
    message = worse_than_zero(grown, exact, t, (0.0, 1.0, 2.0, 3.0))
    assert "worse than predicting zero" in message and "window 2 of 3 (t in [1, 2])" in message
    assert "per window: 0, " in message
    # one run's time axis cut into slices: named as slices, without the advice about later windows
    sliced = worse_than_zero(grown, exact, t, (0.0, 1.0, 2.0, 3.0), marched=False)
    assert "time slice 2 of 3 (t in [1, 2])" in sliced and "window" not in sliced
    # only the fields scored count; a steady problem gets the message without windows
    assert worse_than_zero(grown, exact, t, (0.0, 3.0), fields=("v",)) is None
    steady = worse_than_zero({"u": -3.0 * exact["u"]}, {"u": exact["u"]})
    assert "worse than predicting zero" in steady and "window" not in steady


def test_a_marched_run_worse_than_zero_says_so_and_names_the_window(tmp_path, monkeypatch, capsys):
    trained = runner.fit

    def far_off_in_the_second_window(*args, **kwargs):
        fitted = trained(*args, **kwargs)
        times = fitted.solution.points[:, 2]
        fitted.solution.values = {"u": np.where(times > 2.5, 50.0, 0.0)}  # zero in the first window
        return fitted

    monkeypatch.setattr(runner, "fit", far_off_in_the_second_window)
    output = tmp_path / "run"
    assert heat2d_ms.main([*TINY, "--time-windows", "2", "--output", str(output)]) in (0, 3)
    printed = capsys.readouterr().out
    assert "heat2d_ms: WARNING: the relative L2 error" in printed
    assert "window 2 of 2 (t in [2.5, 5])" in printed
    assert json.loads((output / "metrics.json").read_text())["worse_than_zero"] is True
