"""Kernels more than one test module uses, written once.

:func:`vadd_cell`: the vector add as the body of a ``%%tile`` cell (the magic, export,
reproducer and profile tests run it); its line numbers are part of what those tests check:
with the import header the decorator is cell line 4, the loads lines 7-8, the store line 9;
without it the decorator is line 2, the def 3, ``bid`` 4, the loads 5-6, the store 7.
"""

from __future__ import annotations

IMPORT = "import cuda.tile as ct\n\n"


def vadd_cell(name: str = "vadd", *, header: str = IMPORT) -> str:
    """The vector add ``c = a + b`` in tiles of ``TILE``, as cell text defining ``name``."""
    return f"""{header}@ct.kernel
def {name}(a, b, c, TILE: ct.Constant[int]):
    bid = ct.bid(0)
    ta = ct.load(a, index=(bid,), shape=(TILE,))
    tb = ct.load(b, index=(bid,), shape=(TILE,))
    ct.store(c, index=(bid,), tile=ta + tb)
"""
