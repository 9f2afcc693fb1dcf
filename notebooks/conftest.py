"""The geometry check of every picture the tutorials show (issue 25).

While nbval runs a notebook, each cell's display outputs are kept (SVG and HTML pictures),
and every matplotlib figure the kernel turns into an image is checked there from its own text
extents (``tests/geometry_mpl.py``, sent into the kernel when the notebook starts).
``TILE_LAB_GEOMETRY_PAGES=<dir>`` also writes each notebook's pictures to
``<dir>/<notebook>-light.html`` and ``-dark.html`` to look at. After the
notebook's last cell one more test item, ``<notebook>::geometry``, measures all of its
pictures on one headless-Chromium page (``tests/geometry_probe.py``) and fails naming the
cell, the output and the element of every problem. The notebooks run once: nothing is
executed twice.
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
    """Every picture of one notebook, measured after its last cell ran."""

    def runtest(self) -> None:
        cells = _SEEN.pop(self.parent.nodeid, [])
        problems = [f"{cell}: {p}" for cell, _, figs in cells for p in figs]
        pics = [(f"{cell}, {name}", markup) for cell, outs, _ in cells for name, markup in outs]
        pages = os.environ.get("TILE_LAB_GEOMETRY_PAGES")
        if pages:  # every picture on one page, to look at (light and dark)
            geometry_probe.write_pages(Path(pages) / Path(self.parent.name).stem, pics)
        if pics:
            try:
                chromium = browser_env.chromium()
            except pytest.skip.Exception:
                if problems:
                    raise GeometryError(self.parent.name, problems) from None
                raise
            for label, found in geometry_probe.measure(pics, chromium).items():
                problems.extend(f"{label}: {p}" for p in dict.fromkeys(found))
        if problems:
            raise GeometryError(self.parent.name, problems)

    def repr_failure(self, excinfo):
        if isinstance(excinfo.value, GeometryError):
            return str(excinfo.value)
        return super().repr_failure(excinfo)

    def reportinfo(self):
        return self.path, None, f"{self.parent.name}::geometry"


class GeometryError(AssertionError):
    def __init__(self, notebook: str, problems: list[str]):
        shown = problems[:60]
        more = f"\n  ... and {len(problems) - 60} more" if len(problems) > 60 else ""
        super().__init__(f"{notebook}: {len(problems)} picture geometry problem(s):\n  "
                         + "\n  ".join(shown) + more)


def pytest_collection_modifyitems(session, config, items):
    out = []
    for i, item in enumerate(items):
        out.append(item)
        nxt = items[i + 1] if i + 1 < len(items) else None
        if _is_cell(item) and (nxt is None or nxt.parent is not item.parent):
            out.append(GeometryItem.from_parent(item.parent, name="geometry"))
    items[:] = out
