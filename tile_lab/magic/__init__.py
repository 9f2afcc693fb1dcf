"""The ``%%tile`` cell magic: register the cell, parse its line, hand both to the core.

``tile_magic.py`` is the magic itself; :mod:`tile_lab.cell` carries the cell out.
"""

from .tile_magic import TileMagics, register

__all__ = ["TileMagics", "register"]
