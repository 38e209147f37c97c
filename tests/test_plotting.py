"""hodiff.pinn.plotting has no side effects: it never calls ``matplotlib.use`` or opens pyplot
figures, and no hodiff module imports matplotlib when hodiff is imported.

(Keras itself imports ``matplotlib.pyplot`` when it is installed, so "matplotlib is not in
``sys.modules`` after ``import hodiff``" cannot hold in a process with Keras; the tests check
hodiff's own imports instead.)"""

import ast
import subprocess
import sys
from pathlib import Path

import pytest

import hodiff

SCRIPT = """
import sys
import numpy as np
import matplotlib
matplotlib.use = lambda *a, **k: sys.exit("plotting called matplotlib.use")
import hodiff, hodiff.pinn
assert "hodiff.pinn.plotting" not in sys.modules, "import hodiff imported the plotting module"
from hodiff.pinn import plotting
axes = {"x": np.linspace(0, 1, 5), "t": np.linspace(0, 1, 4)}
plotting.plot_field(axes, np.ones((5, 4)), np.zeros((5, 4)), sys.argv[1] + "/field.png", "title")
plotting.plot_history([{"phase": "adam", "step": 1, "loss": 1.0, "r": 1.0},
                       {"phase": "lbfgs", "step": 2, "loss": 0.5, "r": 0.5}], sys.argv[1] + "/history.png", ["r"])
import matplotlib.pyplot
assert matplotlib.pyplot.get_fignums() == [], "plotting left pyplot figures open"
"""


def test_plots_are_made_without_matplotlib_use_or_pyplot_figures(tmp_path):
    result = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=300,
        env={"TF_CPP_MIN_LOG_LEVEL": "3", "PATH": ""},
    )
    assert result.returncode == 0, result.stderr[-2000:]
    for name in ("field.png", "history.png"):
        assert (tmp_path / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_no_hodiff_module_imports_matplotlib_at_import_time():
    for path in Path(hodiff.__file__).parent.rglob("*.py"):
        tree = ast.parse(path.read_text())
        for node in tree.body:  # module level only: imports inside functions run when a plot is made
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else ([node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            )
            assert not any(name.split(".")[0] == "matplotlib" for name in names), f"{path} imports matplotlib"


def test_two_fields_with_nan_outside_the_domain_are_plotted_masked(tmp_path, monkeypatch):
    import numpy as np
    from matplotlib.figure import Figure

    from hodiff.pinn import plotting

    x, y = np.linspace(-1, 1, 9), np.linspace(-1, 1, 7)
    X, Y = np.meshgrid(x, y, indexing="ij")
    u = np.where(X**2 + Y**2 <= 1, X + Y, np.nan)
    drawn = []
    original = Figure.savefig
    monkeypatch.setattr(Figure, "savefig", lambda figure, *a, **k: (drawn.append(figure), original(figure, *a, **k)))
    plotting.plot_field({"x": x, "y": y}, {"u": u, "v": 2 * u}, {"u": u, "v": 2 * u + 0.1}, tmp_path / "f.png", "t")
    assert (tmp_path / "f.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    panels = [axis for axis in drawn[0].axes if axis.get_title()]  # the colour bars have no title
    assert [axis.get_title() for axis in panels] == [
        f"{field}: {name}" for field in "uv" for name in ("PINN prediction", "reference", "absolute error")
    ]
    for axis in panels:
        shown = axis.collections[0].get_array()
        assert np.ma.isMaskedArray(shown) and shown.mask.ravel().tolist() == np.isnan(u).ravel().tolist()
        assert np.all(np.isfinite(shown.compressed())), "the colour limits come from the finite values"
    assert panels[5].collections[0].norm.vmax == pytest.approx(0.1)  # v's error, outside left out


def test_a_spatial_field_can_be_drawn_x_across_and_y_up_to_scale(tmp_path, monkeypatch):
    import numpy as np
    from matplotlib.figure import Figure

    from hodiff.pinn import plotting

    x, y = np.linspace(0, 2, 9), np.linspace(0, 1, 5)
    u = x[:, None] + 10 * y[None, :]  # indexed [x, y]
    drawn = []
    original = Figure.savefig
    monkeypatch.setattr(Figure, "savefig", lambda figure, *a, **k: (drawn.append(figure), original(figure, *a, **k)))
    plotting.plot_field({"x": x, "y": y}, u, u, tmp_path / "f.png", vertical="y")
    prediction = drawn[0].axes[0]
    assert (prediction.get_xlabel(), prediction.get_ylabel()) == ("x", "y")
    assert prediction.get_aspect() == 1.0
    mesh = prediction.collections[0].get_array().reshape(len(y), len(x))  # rows go up in y
    np.testing.assert_array_equal(mesh, u.T)
    plotting.plot_field({"x": x, "t": y}, u, u, tmp_path / "g.png")  # default: first axis up, as in x-t plots
    assert (drawn[1].axes[0].get_xlabel(), drawn[1].axes[0].get_ylabel()) == ("t", "x")
    with pytest.raises(ValueError, match="vertical='z' is not one of the axes 'x', 'y'"):
        plotting.plot_field({"x": x, "y": y}, u, u, tmp_path / "h.png", vertical="z")
