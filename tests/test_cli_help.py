"""``python -m pinn_examples NAME --help``: the presets' values, without importing TensorFlow (issue 23.7)."""

import dataclasses
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ENVIRONMENT = {**os.environ, "PYTHONPATH": ROOT}

EVERY_EXAMPLE = """
import contextlib, io, sys
from pinn_examples import EXAMPLES
from pinn_examples.__main__ import main

for name in EXAMPLES:
    text = io.StringIO()
    try:
        with contextlib.redirect_stdout(text):
            main([name, "--help"])
    except SystemExit as exit:
        assert exit.code == 0, (name, exit.code)
    loaded = sorted(m for m in sys.modules if m.startswith(("tensorflow.", "keras.")))
    print(name, "usage:" in text.getvalue(), loaded[:3])
"""


def test_help_shows_every_preset_and_imports_no_tensorflow():
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "pinn_examples", "heat", "--help"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=ENVIRONMENT,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    help_text = " ".join(done.stdout.split())  # argparse wraps lines
    assert "--interior INT interior (collocation) points (default: 2048, fast: 256)" in help_text
    assert "--learning-rate FLOAT Adam learning rate (all presets: 0.001)" in help_text
    assert "--dtype {float32,float64} floating type of the network and the points (all presets: float32)" in help_text
    imported = [line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines() if line.startswith("import time:")]
    assert "numpy" in imported and not [m for m in imported if m.split(".")[0] in ("tensorflow", "keras", "hodiff")]
    assert "cuda" not in done.stderr and "oneDNN" not in done.stderr  # no TensorFlow log lines


def test_no_example_imports_tensorflow_for_its_help():
    """Every registered example (new ones too) builds its --help with TensorFlow and Keras never imported."""
    done = subprocess.run(
        [sys.executable, "-c", EVERY_EXAMPLE], capture_output=True, text=True, cwd=ROOT, env=ENVIRONMENT, timeout=300
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    from pinn_examples import EXAMPLES

    assert len(lines) == len(EXAMPLES)
    for line in lines:
        assert line.endswith("True []"), f"{line}: its module uses TensorFlow, Keras or hodiff at import time"


def test_the_listing_keeps_its_columns_for_long_names(capsys):
    from pinn_examples import EXAMPLES, describe
    from pinn_examples.__main__ import main

    assert main([]) == 0
    rows = [line for line in capsys.readouterr().out.splitlines() if line.startswith("  ")]
    assert len(rows) == len(EXAMPLES) and any(len(name) > 18 for name in EXAMPLES)
    starts = {row.index(describe(name)) for row, name in zip(rows, EXAMPLES)}
    assert len(starts) == 1  # every description in one column, kuramoto_sivashinsky's too
    from pinn_examples import format_wall_times, wall_times

    times = {name: format_wall_times(wall_times(name)) for name in EXAMPLES}
    columns = {row.index(times[name]) for row, name in zip(rows, EXAMPLES) if times[name]}
    assert columns == {2 + max(map(len, EXAMPLES)) + 2}  # the wall times in one column after the longest name


def test_the_listing_gives_the_recorded_wall_time_of_each_examples_presets(capsys):
    """The typical wall time on 2 cores of each preset, as recorded in the docs, is data of the example (its
    Example's wall_seconds), read from the source by the listing; none is shown where none is recorded (issue 46
    item 6)."""
    import importlib

    from pinn_examples import EXAMPLES, format_wall_times, wall_times
    from pinn_examples.__main__ import main

    assert main([]) == 0
    rows = dict(zip(EXAMPLES, [line for line in capsys.readouterr().out.splitlines() if line.startswith("  ")]))
    assert "default 2 min, paper 35 min" in rows["burgers"] and "default 16 s " in rows["heat"]
    assert "default 60 s, fast 7 s" in rows["poisson_inverse"]
    assert rows["maml_sinusoid"].split()[1] == "MAML,", "no time recorded: none shown"
    recorded = 0
    for name in EXAMPLES:
        example = getattr(importlib.import_module(f"pinn_examples.{name}"), "EXAMPLE", None)
        times = wall_times(name)
        assert times == (example.wall_seconds if example is not None else {}), name  # the literal the listing reads
        assert set(times) <= set(example.presets if example is not None else ()), name
        assert format_wall_times(times) in rows[name]
        recorded += bool(times)
    assert recorded >= 25
    with pytest.raises(ValueError, match=r"wall_seconds names \['huge'\], which are not presets"):
        dataclasses.replace(importlib.import_module("pinn_examples.heat").EXAMPLE, wall_seconds={"huge": 5.0})
    with pytest.raises(ValueError, match=r"wall_seconds\['default'\] = -1; give the recorded wall time in seconds"):
        dataclasses.replace(importlib.import_module("pinn_examples.heat").EXAMPLE, wall_seconds={"default": -1})
    with pytest.raises(SystemExit):
        main(["burgers", "--help"])
    help_text = " ".join(capsys.readouterr().out.split())
    assert "typical wall time on 2 CPU cores, as recorded in the docs: default 2 min, paper 35 min" in help_text
    listing = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "pinn_examples"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=ENVIRONMENT,
        timeout=120,
    )
    assert listing.returncode == 0 and "default 2 min, paper 35 min" in listing.stdout, listing.stderr
    imported = [line.rsplit("|", 1)[-1].strip() for line in listing.stderr.splitlines() if "import time:" in line]
    assert not [m for m in imported if m.split(".")[0] in ("tensorflow", "keras", "hodiff")]  # read, not imported
