"""The modules MWEM's driver left (now in fastmwem.release.mwem) still re-export its objects."""

import importlib
import warnings

import pytest

OLD_TO_NEW = {
    "fastmwem.release.config": "fastmwem.release.mwem.config",
    "fastmwem.release.plan": "fastmwem.release.mwem.plan",
    "fastmwem.release.annealing": "fastmwem.release.mwem.annealing",
    "fastmwem.release.defaults": "fastmwem.release.mwem.auto",
    "fastmwem.release.resources": "fastmwem.release.mwem.resources",
    "fastmwem.release.noise": "fastmwem.release.mwem.rounds",
}


@pytest.mark.parametrize("old, new", sorted(OLD_TO_NEW.items()))
def test_an_old_path_re_exports_the_same_objects_without_a_warning(old, new):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        shim = importlib.reload(importlib.import_module(old))  # reload: the import runs here
    module = importlib.import_module(new)
    assert "deprecated location; import from fastmwem.release.mwem" in shim.__doc__.lower()
    assert shim.__all__
    for name in shim.__all__:
        assert getattr(shim, name) is getattr(module, name), name


def test_the_package_keeps_the_old_module_s_names():
    from fastmwem.release.mwem import MWEMConfig, choose_model, mwem, plan_setup, run_plan
    from fastmwem.release.mwem.run import mwem as run_mwem

    assert mwem is run_mwem
    assert all(callable(f) for f in (MWEMConfig, choose_model, plan_setup, run_plan))
