"""Importing this module registers every renderer and view with :mod:`tile_lab.display`.

``tile_lab/__init__.py`` imports it (through ``display.set_renderer_loader``) the first time a
notebook displays a data object, so ``import tile_lab`` stays cheap. A renderer module that
draws a data type is listed here; ``tests/test_display.py`` checks that every data type with
a ``_repr_mimebundle_`` that asks :func:`tile_lab.display.mimebundle` finds one.
"""

from . import (  # noqa: F401 (importing them registers their renderers)
    check_view,
    compare_view,
    crosscheck,
    doctor_view,
    html,
    profile_view,
    sanitizer_view,
    triton_pair,
    tune_plots,
)
