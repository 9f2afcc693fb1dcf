"""The geometry check of every picture the tutorials show (issue 25).

While nbval runs a notebook, each cell's display outputs are kept (SVG and HTML pictures),
and every matplotlib figure the kernel turns into an image is checked there from its own text
extents (``tests/geometry_mpl.py``, sent into the kernel when the notebook starts).
``TILE_LAB_GEOMETRY_PAGES=<dir>`` also writes each notebook's pictures to
``<dir>/<notebook>-light.html`` and ``-dark.html`` to look at. After the
last notebook cell one test item per notebook, ``<notebook>::geometry``, reports the
problems of that notebook's pictures, measured on one headless-Chromium page for all the
notebooks (``tests/geometry_probe.py``; one browser start per run), naming the cell, the
output and the element of each. The notebooks run once: nothing is executed twice.
"""

from __future__ import annotations

import ast
import os
import sys
import time
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent.parent / "tests"
if str(TESTS) not in sys.path:
    sys.path.insert(0, str(TESTS))

import browser_env  # noqa: E402
import geometry_probe  # noqa: E402

_MPL_SOURCE = (TESTS / "geometry_mpl.py").read_text(encoding="utf-8")
_INSTALL = (
    "import sys as _s, types as _t\n"
    "if '_tl_geometry' not in _s.modules:\n"
    "    _m = _t.ModuleType('_tl_geometry')\n"
    "    exec(compile({src!r}, 'geometry_mpl.py', 'exec'), _m.__dict__)\n"
    "    _m.records = []\n"
    "    _m.install(_m.records)\n"
    "    _s.modules['_tl_geometry'] = _m\n"
    "del _s, _t\n"
)
_POP = "[__import__('_tl_geometry').records.pop(0) for _ in range(len(__import__('_tl_geometry').records))]"

# per notebook path: (cell label, [(output label, markup)], [figure problems])
_SEEN: dict[str, list[tuple[str, list[tuple[str, str]], list[str]]]] = {}


def _is_cell(item) -> bool:
    return type(item).__name__ == "IPyNbCell"


def _silent(kernel, code: str, expr: str | None = None, timeout: float = 60.0):
    """Run ``code`` in the notebook's kernel without output or history; ``expr``'s value."""
    kc = kernel.kc
    msg_id = kc.execute(code, silent=True, store_history=False, allow_stdin=False,
                        user_expressions={"v": expr} if expr else {})
    deadline = time.monotonic() + timeout
    while True:
        msg = kc.get_shell_msg(timeout=max(deadline - time.monotonic(), 0.1))
        if msg["parent_header"].get("msg_id") == msg_id:
            break
    content = msg["content"]
    if content.get("status") != "ok":
        raise RuntimeError(f"geometry hook failed in the kernel: {content.get('evalue')}")
    if expr is None:
        return None
    value = content["user_expressions"]["v"]
    if value.get("status") != "ok":
        raise RuntimeError(f"geometry hook failed in the kernel: {value.get('evalue')}")
    return ast.literal_eval(value["data"]["text/plain"])


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    if not _is_cell(item):
        yield
        return
    kernel = getattr(item.parent, "kernel", None)
    if kernel is not None and item.parent.nodeid not in _SEEN:
        _SEEN[item.parent.nodeid] = []
        _silent(kernel, _INSTALL.format(src=_MPL_SOURCE))
    yield
    first = next((ln.strip() for ln in item.cell.source.splitlines()
                  if ln.strip() and not ln.startswith("#")), "")
    label = f"{item.name} ({first[:60]})"
    pictures = []
    for k, out in enumerate(item.test_outputs or []):
        markup = geometry_probe.picture_of(out.get("data", {})) if "data" in out else None
        if markup is not None:
            pictures.append((f"output {k}", markup))
    figures: list[str] = []
    if kernel is not None and kernel.is_alive():
        for problems in _silent(kernel, "pass", _POP):
            figures.extend(problems)
    _SEEN.setdefault(item.parent.nodeid, []).append((label, pictures, figures))


class GeometryItem(pytest.Item):
    """Every picture of one notebook. These items run after the last notebook cell; the
    first of them measures every notebook's pictures on one Chromium page (one browser
    start for the whole run), then each reports the problems of its own notebook."""

    notebook: str  # the IPyNbFile's nodeid
    notebook_name: str

    def runtest(self) -> None:
        problems = _results().get(self.notebook, [])
        if problems:
            raise GeometryError(self.notebook_name, problems)
        if _SKIPPED and self.notebook in _PICTURED:
            pytest.skip(_SKIPPED[0])

    def repr_failure(self, excinfo):
        if isinstance(excinfo.value, GeometryError):
            return str(excinfo.value)
        return super().repr_failure(excinfo)

    def reportinfo(self):
        return self.path, None, f"{self.notebook_name}::geometry"


_RESULTS: dict[str, list[str]] = {}
_PICTURED: set[str] = set()
_SKIPPED: list[str] = []


def _results() -> dict[str, list[str]]:
    """Measure what the notebooks showed since the last call: ``{notebook: problems}``."""
    pending = dict(_SEEN)
    _SEEN.clear()
    pics = []
    for nb, cells in pending.items():
        problems = _RESULTS.setdefault(nb, [])
        problems.extend(f"{cell}: {p}" for cell, _, figs in cells for p in figs)
        mine = [(f"{cell}, {name}", markup) for cell, outs, _ in cells for name, markup in outs]
        pages = os.environ.get("TILE_LAB_GEOMETRY_PAGES")
        if pages:  # every picture on one page, to look at (light and dark)
            geometry_probe.write_pages(Path(pages) / Path(nb).stem, mine)
        pics.extend((nb, label, markup) for label, markup in mine)
        if mine:
            _PICTURED.add(nb)
    if pics:
        try:
            chromium = browser_env.chromium()
        except pytest.skip.Exception as why:
            _SKIPPED.append(str(why))
            return _RESULTS
        found = geometry_probe.measure([(f"{i}", m) for i, (_, _, m) in enumerate(pics)],
                                       chromium)
        for i, (nb, label, _) in enumerate(pics):
            _RESULTS[nb].extend(f"{label}: {p}" for p in dict.fromkeys(found[str(i)]))
    return _RESULTS


class GeometryError(AssertionError):
    def __init__(self, notebook: str, problems: list[str]):
        shown = problems[:60]
        more = f"\n  ... and {len(problems) - 60} more" if len(problems) > 60 else ""
        super().__init__(f"{notebook}: {len(problems)} picture geometry problem(s):\n  "
                         + "\n  ".join(shown) + more)


def pytest_collection_modifyitems(session, config, items):
    """One geometry item per notebook, all after the last notebook cell (kept off the
    notebook's own node, so moving them does not restart its kernel)."""
    cells = [i for i, item in enumerate(items) if _is_cell(item)]
    if not cells:
        return
    extra = []
    for nb in dict.fromkeys(items[i].parent for i in cells):
        geo = GeometryItem.from_parent(nb.parent, name=f"{nb.name}::geometry",
                                       nodeid=f"{nb.nodeid}::geometry")
        geo.notebook, geo.notebook_name = nb.nodeid, nb.name
        extra.append(geo)
    items[cells[-1] + 1:cells[-1] + 1] = extra
