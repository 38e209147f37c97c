"""The runnable examples: fast presets train and write their files; the CLI rejects bad input."""

import importlib
import json
import os

import numpy as np
import pytest

from pinn_examples import describe
from pinn_examples.__main__ import EXAMPLES, main

PDE_EXAMPLES = ["burgers", "heat", "poisson", "helmholtz", "allen_cahn", "burgers_inverse"]


@pytest.mark.parametrize("name", PDE_EXAMPLES)
def test_fast_preset_lowers_loss_and_error_and_writes_results(name, tmp_path):
    output = tmp_path / name
    assert main([name, "--preset", "fast", "--output", str(output), "--no-progress"]) == 0
    metrics = json.loads((output / "metrics.json").read_text())
    history = [line.split(",") for line in (output / "history.csv").read_text().splitlines()]
    loss = [float(row[history[0].index("loss")]) for row in history[1:]]
    assert loss[-1] < loss[0]
    with np.load(output / "prediction.npz") as saved:
        axes = [key for key in saved.files if key not in ("prediction", "reference")]
        assert saved["prediction"].shape == tuple(len(saved[a]) for a in axes)
    assert metrics["relative_l2_error"] < metrics["initial_relative_l2_error"]
    if name == "poisson":  # a healthy run: the stall diagnostic stays quiet
        assert metrics["diagnostics"] == []
    assert {"field.png", "history.png", "checkpoints"} <= set(os.listdir(output))
    assert_evaluate_reproduces_the_prediction(name, output)


def assert_evaluate_reproduces_the_prediction(name, output):
    """``--evaluate`` at some finite grid points of prediction.npz gives the trained run's values there."""
    with np.load(output / "prediction.npz") as saved:
        arrays = {key: saved[key] for key in saved.files}
    axes = [key for key in arrays if not key.startswith(("prediction", "reference"))]
    mesh = np.meshgrid(*(arrays[a] for a in axes), indexing="ij")
    chosen = np.flatnonzero(np.isfinite(arrays["prediction"].ravel()))[::97]
    points = np.stack([m.ravel()[chosen] for m in mesh], axis=1)
    np.save(output.parent / f"{name}-points.npy", points)
    assert main([name, "--evaluate", str(output.parent / f"{name}-points.npy"), "--output", str(output)]) == 0
    with np.load(output / "evaluation.npz") as evaluation:
        np.testing.assert_array_equal(evaluation["points"], points)
        fields = [key for key in evaluation.files if key not in ("points", "checkpoint", "step")]
        for field in fields:
            wanted = arrays.get(f"prediction_{field}", arrays["prediction"] if field == fields[0] else None)
            np.testing.assert_allclose(evaluation[field], wanted.ravel()[chosen], rtol=1e-4, atol=1e-5)


def test_unknown_example_and_bad_flags(tmp_path, capsys):
    with pytest.raises(SystemExit) as info:
        main(["burgerz"])
    assert info.value.code == 2 and "invalid choice: 'burgerz'" in capsys.readouterr().err
    for flags, message in (
        (["--adam-steps", "-5"], "give an integer >= 0"),
        (["--interior", "many"], "is not an integer"),
        (["--adam-steps", "150"], "multiple of --steps-per-call=100"),
        (["--preset", "huge"], "invalid choice"),
    ):
        with pytest.raises(SystemExit):
            main(["burgers", *flags, "--output", str(tmp_path / "bad")])
        assert message in capsys.readouterr().err
    assert not (tmp_path / "bad").exists(), "nothing is written for bad input"
    with pytest.raises(SystemExit, match="no checkpoints"):
        main(["heat", "--resume", "--output", str(tmp_path / "never")])


def test_listing_names_every_example_with_its_docstring(capsys):
    assert main([]) == 0
    listed = capsys.readouterr().out.splitlines()[1:]
    assert [line.split()[0] for line in listed] == list(EXAMPLES)
    for name, line in zip(EXAMPLES, listed):
        module = importlib.import_module(f"pinn_examples.{name}")
        assert line.endswith("  " + describe(name)) and module.__doc__.splitlines()[0] == describe(name)
    with pytest.raises(ValueError, match="no example 'burgerz'"):
        describe("burgerz")


@pytest.mark.parametrize("name", EXAMPLES)
def test_an_examples_help_describes_it_by_its_docstring(name, capsys):
    with pytest.raises(SystemExit) as info:
        main([name, "--help"])
    help_text = " ".join(capsys.readouterr().out.split())  # argparse rewraps the description
    assert info.value.code == 0 and " ".join(describe(name).split()) in help_text


def test_an_examples_help_shows_its_own_flags(capsys):
    with pytest.raises(SystemExit) as info:
        main(["burgers", "--help"])
    help_text = capsys.readouterr().out
    assert info.value.code == 0 and help_text.startswith("usage: python -m pinn_examples burgers")
    assert all(flag in help_text for flag in ("--adam-steps", "--causal-epsilon", "--overwrite", "--resume", "paper"))
    with pytest.raises(SystemExit) as info:
        main(["--help"])
    assert info.value.code == 0 and "NAME --help" in capsys.readouterr().out


@pytest.mark.parametrize(
    "argv",
    [
        ["circle", "--lr=nan"],
        ["circle", "--max-norm=inf"],
        ["maml_pinn", "--inner-lr=nan"],
        ["maml_pinn", "--adapt-lr=-1"],
        ["maml_sinusoid", "--seed=-1"],
        ["laplacian_check", f"--seed={2**32}"],
        ["laplacian_check", "--dim=0"],
        ["laplacian_check", "--dim=-2"],
        ["laplacian_check", "--points=-1"],
        ["laplacian_check", "--probes=0"],
        ["heat2d_ms", "--time-windows=100000"],
        ["heat", "--causal-epsilon=1e300"],
    ],
)
def test_the_other_examples_refuse_non_finite_and_out_of_range_flags(argv, capsys):
    with pytest.raises(SystemExit) as info:
        main(argv)
    assert info.value.code == 2 and f"argument {argv[1].split('=')[0]}: " in capsys.readouterr().err
