"""docs/: the documentation site's sources cover what they claim to (the build itself, with
warnings as errors, and its link check run in .ci/run)."""

from __future__ import annotations

import re
from pathlib import Path

import tile_lab

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"


def _autosummary_names(page: Path) -> set[str]:
    blocks = re.findall(r"\.\. autosummary::\n(?:   :\w+:.*\n)*\n((?:   \S+\n)+)", page.read_text())
    return {name.strip() for block in blocks for name in block.splitlines()}


def test_the_api_reference_lists_every_public_name_of_tile_lab():
    listed = _autosummary_names(DOCS / "api" / "index.md")
    public = set(tile_lab.__all__) - {"__version__"}
    assert public - listed == set(), f"not in docs/api/index.md: {sorted(public - listed)}"
    assert listed - public == set(), f"not public: {sorted(listed - public)}"


def test_every_subpackage_page_documents_the_package_it_is_named_for():
    pages = sorted((DOCS / "api").glob("*.md"))
    toctree = (DOCS / "api" / "index.md").read_text()
    for page in pages:
        if page.name == "index.md":
            continue
        assert f".. automodule:: tile_lab.{page.stem}\n" in page.read_text(), page.name
        assert f"\n{page.stem}\n" in toctree, f"{page.name} is not in docs/api/index.md's toctree"


def test_every_feature_page_is_in_the_features_toctree():
    index = (DOCS / "features" / "index.md").read_text()
    toctree = index.split("```{toctree}", 1)[1].split("```", 1)[0].split()
    pages = {p.stem for p in (DOCS / "features").glob("*.md")} - {"index"}
    assert pages - set(toctree) == set()
