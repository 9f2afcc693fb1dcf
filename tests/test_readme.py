"""The README's tour runs as written (in a real IPython shell, magics included)."""

from __future__ import annotations

import re
from pathlib import Path

README = Path(__file__).resolve().parent.parent / "README.md"


def _tour_cells() -> list[str]:
    text = README.read_text()
    tour = text.split("## A tour", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```python\n(.*?)```", tour, flags=re.S)


def test_readme_tour_runs_and_shows_the_inspect_view():
    from IPython.core.interactiveshell import InteractiveShell

    cells = _tour_cells()
    assert len(cells) >= 2
    shell = InteractiveShell.instance()
    shown = []
    shell.display_pub.publish = lambda data, **kw: shown.append(data)
    for cell in cells:
        result = shell.run_cell(cell)
        assert result.success, result.error_in_exec or result.error_before_exec
    assert "vector_add" in shell.user_ns
    views = [d for d in shown if "application/vnd.tile-lab.v1+json" in d]
    assert views and "load_view_tko" in views[-1]["text/html"]
