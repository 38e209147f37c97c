"""The package layout: old import paths warn and hand back the moved objects for one release,
``import hodiff`` loads only the derivative core, and the public lists keep their names."""

import importlib
import os
import subprocess
import sys
import textwrap

import pytest

import hodiff
import hodiff.meta
import hodiff.pinn
import hodiff.pinn.geometry

MOVED = {
    "hodiff.transforms": "hodiff.training.transforms",
    "hodiff.step": "hodiff.training.step",
    "hodiff.stable": "hodiff.training.stable",
    "hodiff.monitor": "hodiff.training.monitor",
    "hodiff.multitask": "hodiff.training.multitask",
    "hodiff.penalties": "hodiff.training.penalties",
    "hodiff.lbfgs": "hodiff.training.lbfgs",
    "hodiff.meta_vectorized": "hodiff.meta.vectorized",
    "hodiff.meta_optimizers": "hodiff.meta.optimizers",
}


@pytest.mark.parametrize("old, new", sorted(MOVED.items()))
def test_old_module_paths_warn_and_return_the_moved_objects(old, new):
    alias, target = importlib.import_module(old), importlib.import_module(new)
    assert target.__all__ and sorted(alias.__all__) == sorted(target.__all__)
    for name in target.__all__:
        with pytest.warns(DeprecationWarning, match=f"{old}.{name} moved to {new}.{name}"):
            assert getattr(alias, name) is getattr(target, name)
    name = target.__all__[0]
    with pytest.warns(DeprecationWarning, match=new):
        exec(f"from {old} import {name} as imported", namespace := {})
    assert namespace["imported"] is getattr(target, name)
    with pytest.raises(AttributeError, match=f"moved to '{new}'"):
        alias.no_such_name  # noqa: B018


def test_old_module_names_as_attributes_of_hodiff_warn():
    for old, new in MOVED.items():
        with pytest.warns(DeprecationWarning, match=f"{old} moved to {new}"):
            module = hodiff.__getattr__(old.split(".")[1])
        assert module is importlib.import_module(old)
    with pytest.raises(AttributeError, match="no attribute 'no_such_name'"):
        hodiff.no_such_name  # noqa: B018


def test_import_hodiff_loads_the_core_only_and_the_rest_on_first_use():
    script = textwrap.dedent(
        """
        import sys, warnings
        import hodiff
        loaded = sorted(m for m in sys.modules if m.startswith(("hodiff.pinn", "hodiff.meta", "hodiff.training")))
        assert not loaded, loaded
        assert hodiff.pinn.Problem.__module__ == "hodiff.pinn.problem"
        from hodiff import meta, pinn
        assert pinn is sys.modules["hodiff.pinn"] and meta.MetaLearner is sys.modules["hodiff.meta.learner"].MetaLearner
        assert hodiff.TrainStep is sys.modules["hodiff.training.step"].TrainStep
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            transforms = hodiff.transforms
            chain = transforms.chain
        assert chain is sys.modules["hodiff.training.transforms"].chain
        messages = [str(w.message) for w in caught if w.category is DeprecationWarning]
        assert any("hodiff.transforms moved to hodiff.training.transforms" in m for m in messages), messages
        assert any("hodiff.transforms.chain moved" in m for m in messages), messages
        print("ok")
        """
    )
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=300)
    assert result.returncode == 0 and result.stdout.strip().endswith("ok"), result.stderr[-3000:]


def test_pinn_plumbing_is_not_public_and_warns():
    from hodiff.pinn import runlog, trainer

    for name, module in [("atomic_write", runlog), ("write_json", runlog), ("RunLog", runlog)]:
        assert name not in hodiff.pinn.__all__
        with pytest.warns(DeprecationWarning, match=f"hodiff.pinn.{name} moved to hodiff.pinn.runlog.{name}"):
            assert getattr(hodiff.pinn, name) is getattr(module, name)
    assert "relative_l2_error" not in hodiff.pinn.__all__
    if hasattr(trainer, "relative_l2_error"):
        with pytest.warns(DeprecationWarning, match="hodiff.pinn.relative_l2_error moved"):
            assert hodiff.pinn.relative_l2_error is trainer.relative_l2_error
    with pytest.raises(AttributeError, match="no attribute 'no_such_name'"):
        hodiff.pinn.no_such_name  # noqa: B018


# the public names before the packages were split: they stay importable from the same place
META_NAMES = [
    "FunctionalModel",
    "inner_loop",
    "MetaLearner",
    "MetaEvaluation",
    "META_VARIANTS",
    "INNER_OPTIMIZERS",
    "InnerOptimizer",
    "InnerSGD",
    "InnerMomentum",
    "InnerAdam",
]
GEOMETRY_NAMES = [
    "SAMPLING_METHODS",
    "CSG",
    "Ball",
    "Box",
    "Disk",
    "Ellipse",
    "Geometry",
    "Hypercube",
    "Hypersphere",
    "Interval",
    "Parameter",
    "PointCloud",
    "Polygon",
    "Rectangle",
    "Sphere",
    "TimeDomain",
    "Triangle",
    "unit_samples",
]


@pytest.mark.parametrize(
    "package, names", [(hodiff.meta, META_NAMES), (hodiff.pinn.geometry, GEOMETRY_NAMES)], ids=["meta", "geometry"]
)
def test_split_packages_export_the_same_public_names(package, names):
    assert set(names) <= set(package.__all__)
    for name in package.__all__:
        value = getattr(package, name)
        home = getattr(value, "__module__", None)
        assert home is None or home.startswith(package.__name__ + "."), (name, home)


def test_modules_of_the_split_packages_stay_small():
    root = os.path.dirname(hodiff.__file__)
    for folder in ("meta", "training", os.path.join("pinn", "geometry")):
        for name in os.listdir(os.path.join(root, folder)):
            if name.endswith(".py"):
                with open(os.path.join(root, folder, name)) as file:
                    assert sum(1 for _ in file) <= 750, f"{folder}/{name} does more than one job"
