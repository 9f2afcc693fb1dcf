"""The ``%%tile`` cell magic: parse a cell line, hand it to the API, render the result.

``tile_magic.py`` is the magic itself; ``options.py`` parses the line, ``cells.py`` evaluates
a cell's ``--args``/``--grid`` expressions and locates their errors.
"""

from .tile_magic import TileMagics, register

__all__ = ["TileMagics", "register"]
