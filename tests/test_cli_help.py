"""``python -m pinn_examples NAME --help``: the presets' values, without importing TensorFlow (issue 23.7)."""

import os
import subprocess
import sys

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
