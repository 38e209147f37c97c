"""The package layout: the modules' old paths and the old names are gone (0.1.0 keeps one name
per thing), ``import hodiff`` loads only the derivative core, and the public lists keep their names."""

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

REMOVED = {  # the modules' paths before the packages were split -> where they are now
    "hodiff.transforms": "hodiff.training.transforms",
    "hodiff.step": "hodiff.training.step",
    "hodiff.stable": "hodiff.training.stable",
    "hodiff.monitor": "hodiff.training.monitor",
    "hodiff.multitask": "hodiff.training.multitask",
    "hodiff.penalties": "hodiff.training.penalties",
    "hodiff.lbfgs": "hodiff.training.lbfgs",
    "hodiff.meta_vectorized": "hodiff.meta.vectorized",
    "hodiff.meta_optimizers": "hodiff.meta.optimizers",
    "hodiff.taylor": "hodiff.jets.propagation",
    "hodiff.stde": "hodiff.operators",
}


@pytest.mark.parametrize("old, new", sorted(REMOVED.items()))
def test_old_module_paths_are_gone(old, new):
    importlib.import_module(new)
    with pytest.raises(ModuleNotFoundError, match=f"No module named '{old}'"):
        importlib.import_module(old)
    with pytest.raises(AttributeError, match=f"module 'hodiff' has no attribute '{old.split('.')[1]}'"):
        getattr(hodiff, old.split(".")[1])
    assert old.split(".")[1] not in hodiff.__all__
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
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # nothing left to warn about
            assert not hasattr(hodiff, "transforms")
        print("ok")
        """
    )
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=300)
    assert result.returncode == 0 and result.stdout.strip().endswith("ok"), result.stderr[-3000:]


def test_pinn_plumbing_is_not_public():
    from hodiff.pinn import runlog

    for name in ("atomic_write", "write_json", "RunLog"):
        assert name not in hodiff.pinn.__all__ and hasattr(runlog, name)
        with pytest.raises(AttributeError, match=f"module 'hodiff.pinn' has no attribute '{name}'"):
            getattr(hodiff.pinn, name)
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
