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


def _drawn_figures(monkeypatch):
    from matplotlib.figure import Figure

    drawn = []
    original = Figure.savefig
    monkeypatch.setattr(Figure, "savefig", lambda figure, *a, **k: (drawn.append(figure), original(figure, *a, **k)))
    return drawn


def test_a_one_dimensional_problem_is_drawn_as_curves_one_row_per_field(tmp_path, monkeypatch):
    import numpy as np

    from hodiff.pinn import plotting

    drawn = _drawn_figures(monkeypatch)
    x = np.linspace(0, 1, 11)
    u, v = np.sin(np.pi * x), x**2
    plotting.plot_field({"x": x}, {"u": u + 0.01, "v": v}, {"u": u}, tmp_path / "f.png", "1-D")
    assert (tmp_path / "f.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    curves, errors, v_curves, v_errors = drawn[0].axes
    assert curves.get_title() == "u: PINN prediction and reference" and errors.get_title() == "u: absolute error"
    (predicted, reference), (error,) = curves.get_lines(), errors.get_lines()
    np.testing.assert_allclose(predicted.get_ydata(), u + 0.01)
    np.testing.assert_allclose(reference.get_ydata(), u)
    np.testing.assert_allclose(error.get_ydata(), 0.01, rtol=1e-9)
    assert v_curves.get_title() == "v: PINN prediction" and not v_errors.axison, "v has no reference"
    plotting.plot_field({"x": x}, u, None, tmp_path / "g.png")  # one unnamed field, no reference
    assert [line.get_label() for line in drawn[1].axes[0].get_lines()] == ["PINN prediction"]
    with pytest.raises(ValueError, match="slices need a 2-D grid"):
        plotting.plot_field({"x": x}, u, u, tmp_path / "h.png", slices={"x": [0.5]})


def test_time_slices_show_the_columns_nearest_the_times_asked_for(tmp_path, monkeypatch):
    import numpy as np

    from hodiff.pinn import plotting

    drawn = _drawn_figures(monkeypatch)
    x, t = np.linspace(-1, 1, 9), np.linspace(0, 1, 11)
    u = np.sin(np.pi * x)[:, None] * np.exp(-t)[None, :]  # indexed [x, t]
    plotting.plot_field({"x": x, "t": t}, {"u": u, "v": 2 * u}, {"u": u}, tmp_path / "f.png", slices={"t": [0.52, 1.0]})
    titled = [axis for axis in drawn[0].axes if axis.get_title()]
    slice_panels = [axis for axis in titled if " = " in axis.get_title()]
    assert [axis.get_title() for axis in slice_panels] == ["u: t = 0.5", "u: t = 1", "v: t = 0.5", "v: t = 1"]
    predicted, reference = slice_panels[0].get_lines()
    np.testing.assert_allclose(predicted.get_xdata(), x)
    np.testing.assert_allclose(predicted.get_ydata(), u[:, 5])  # t = 0.5, the grid value nearest 0.52
    np.testing.assert_allclose(reference.get_ydata(), u[:, 5])
    assert len(slice_panels[3].get_lines()) == 1, "v has no reference: its prediction only"
    plotting.plot_field({"x": x, "t": t}, u, u, tmp_path / "g.png", slices={"x": [0.0]})  # u(t) at x = 0
    (cut,) = [axis for axis in drawn[1].axes if axis.get_title() == "x = 0"]
    np.testing.assert_allclose(cut.get_lines()[0].get_ydata(), u[4, :])
    with pytest.raises(ValueError, match="slices name 'y'"):
        plotting.plot_field({"x": x, "t": t}, u, u, tmp_path / "h.png", slices={"y": [0.0]})


def test_the_lbfgs_marker_sits_where_lbfgs_starts(tmp_path, monkeypatch):
    from hodiff.pinn import plotting

    drawn = _drawn_figures(monkeypatch)
    row = lambda phase, step: {"phase": phase, "step": step, "loss": 1.0 / step, "r": 1.0 / step}  # noqa: E731
    adam_then_lbfgs = [row("adam", 100), row("adam", 200), row("lbfgs", 250), row("lbfgs", 300)]

    def marker(figure):
        lines = [line for line in figure.axes[0].get_lines() if line.get_label() == "L-BFGS from here"]
        return [float(line.get_xdata()[0]) for line in lines]

    plotting.plot_history(adam_then_lbfgs, tmp_path / "h.png", ["r"])
    assert marker(drawn[0]) == [200.0], "at the last Adam step, not at the first L-BFGS row (250)"
    plotting.plot_history(adam_then_lbfgs, tmp_path / "h.png", ["r"], lbfgs_start=230)
    assert marker(drawn[1]) == [230.0]
    plotting.plot_history([row("lbfgs", 50), row("lbfgs", 100)], tmp_path / "h.png", ["r"])
    assert marker(drawn[2]) == [0.0], "L-BFGS alone starts at 0"
    plotting.plot_history(adam_then_lbfgs[:2], tmp_path / "h.png", ["r"])
    assert marker(drawn[3]) == []


def test_changing_loss_weights_get_their_own_panel(tmp_path, monkeypatch):
    import numpy as np

    from hodiff.pinn import plotting

    drawn = _drawn_figures(monkeypatch)
    rows = [
        {"phase": "adam", "step": s, "loss": 1.0 / s, "r": 1.0 / s, "b": 0.1 / s, "weight_r": w, "weight_b": 1.0}
        for s, w in ((100, 1.0), (200, 2.5), (300, 4.0))
    ]
    plotting.plot_history(rows, tmp_path / "h.png", ["r", "b"])
    assert len(drawn[0].axes) == 2
    (line,) = drawn[0].axes[1].get_lines()  # only the weight that moved
    assert line.get_label() == "weight r"
    np.testing.assert_allclose(line.get_ydata(), [1.0, 2.5, 4.0])
    plotting.plot_history([{**row, "weight_r": 1.0} for row in rows], tmp_path / "h.png", ["r", "b"])
    assert len(drawn[1].axes) == 1, "constant weights: the loss panel only"
