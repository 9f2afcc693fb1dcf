"""The public names of ``tile_lab`` stay what they are after any submodule is imported.

Importing a submodule binds its name on the package, so a subpackage named like a public
function (``tile_lab.tune`` once was) silently replaces the function for every later caller.
"""

from __future__ import annotations

import importlib
import pkgutil
import types

import tile_lab


def test_every_export_survives_importing_every_submodule():
    for info in pkgutil.iter_modules(tile_lab.__path__):
        if info.name != "__main__":
            importlib.import_module(f"tile_lab.{info.name}")
    shadowed = [name for name in tile_lab._EXPORTS
                if isinstance(getattr(tile_lab, name), types.ModuleType)]
    assert not shadowed, f"submodules shadow public names: {shadowed}"


def test_tune_is_the_function_after_importing_the_tuning_package():
    from tile_lab.tuning import Space  # noqa: F401

    assert callable(tile_lab.tune) and tile_lab.tune.__name__ == "tune"
