"""The README: its tour runs as written (in a real IPython shell, magics included), it stays a
five-minute read (at most 250 lines), every file it links to exists, and its picture is the
diagram tutorial 2 draws."""

from __future__ import annotations

import json
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
PICTURE = ROOT / "docs" / "_static" / "partition.svg"
MAX_LINES = 250


def _tour_cells() -> list[str]:
    text = README.read_text()
    tour = text.split("## A tour", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```python\n(.*?)```", tour, flags=re.S)


def _links(text: str) -> list[str]:
    """Markdown link and image targets, outside code blocks."""
    prose = re.sub(r"```.*?```", "", text, flags=re.S)
    return re.findall(r"\]\(([^)\s]+)\)", prose)


def _github_anchor(heading: str) -> str:
    """The id GitHub gives a heading: lower case, punctuation dropped, spaces to dashes."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


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


def test_readme_is_a_five_minute_read():
    lines = README.read_text().splitlines()
    assert len(lines) <= MAX_LINES, f"README.md is {len(lines)} lines (at most {MAX_LINES}): " \
        "move reference text into docs/ and link to it"


def _missing_links(readme: Path, root: Path) -> list[str]:
    """The README's links to files (relative to ``root``) or headings that are not there;
    links to other sites are not checked (offline)."""
    text = readme.read_text()
    headings = {_github_anchor(h) for h in re.findall(r"^#+ (.+)$", text, flags=re.M)}
    missing = []
    for link in _links(text):
        if re.match(r"[a-z]+:", link):
            continue
        path, _, anchor = link.partition("#")
        if (not path and anchor not in headings) or (path and not (root / path).exists()):
            missing.append(link)
    return missing


def test_every_link_of_the_readme_reaches_a_file_or_heading_that_exists():
    assert any(link.startswith("docs/") for link in _links(README.read_text())), \
        "the README links into docs/"
    assert _missing_links(README, ROOT) == []


def test_the_link_check_sees_a_missing_file_and_a_missing_heading(tmp_path):
    fake = tmp_path / "README.md"
    fake.write_text("# t\n\n## Set up\n\n[a](docs/nowhere.md) [b](#set-up) [c](#no-such) "
                    "[d](README.md) [e](https://example.org/x)\n")
    assert _missing_links(fake, tmp_path) == ["docs/nowhere.md", "#no-such"]


def test_the_readme_picture_is_tutorial_2s_stored_diagram():
    """docs/_static/partition.svg is the partition diagram notebook 02 stores (and nbval
    checks), with a white background so that it reads on dark pages too."""
    notebook = json.loads((ROOT / "notebooks" / "02_tile_space_and_partitions.ipynb").read_text())
    stored = [
        "".join(output["data"]["image/svg+xml"])
        for cell in notebook["cells"] if "tile_lab.partition((10, 16), (2, 4)" in "".join(
            cell["source"])
        for output in cell.get("outputs", []) if "image/svg+xml" in output.get("data", {})
    ]
    assert len(stored) == 1
    style = 'style="max-width:100%;height:auto'
    assert PICTURE.read_text() == stored[0].replace(style, style + ";background:#fff", 1)
    assert "docs/_static/partition.svg" in README.read_text()
