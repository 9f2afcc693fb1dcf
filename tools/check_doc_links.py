"""Check the links of the built documentation site, offline.

Every link and resource of every page under the build folder (``<a href>``, ``<link href>``,
``<img src>``, ``<script src>``, ``<iframe src>``, ``<source src>``) that points inside the site
must reach a file that exists, and a ``#fragment`` must name an ``id`` (or ``<a name>``) on the
page it points at. Links to other sites are counted and listed, not fetched: CI has no network,
and a link checker that needs one would fail there for reasons that are not the site's.

    python tools/check_doc_links.py docs/_build/html            # exit 1 on a broken link
    python tools/check_doc_links.py docs/_build/html --external # also list the external links
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

# (tag, attribute) pairs whose value is a URL the page needs or offers
LINK_ATTRIBUTES = {("a", "href"), ("link", "href"), ("img", "src"), ("script", "src"),
                   ("iframe", "src"), ("source", "src")}
# schemes that never name a file of the site
NOT_FILES = ("mailto", "data", "javascript", "tel")


@dataclass
class Page:
    """What one HTML page offers (its anchors) and asks for (its links)."""

    anchors: set[str] = field(default_factory=set)
    links: list[str] = field(default_factory=list)


class _PageParser(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.page = Page()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for name, value in attrs:
            if value is None:
                continue
            if name == "id" or (tag == "a" and name == "name"):
                self.page.anchors.add(value)
            if (tag, name) in LINK_ATTRIBUTES:
                self.page.links.append(value)


def read_page(path: Path) -> Page:
    parser = _PageParser()
    parser.feed(path.read_text(encoding="utf-8", errors="replace"))
    return parser.page


@dataclass(frozen=True)
class Report:
    pages: int
    internal: int  # links into the site, checked
    external: tuple[str, ...]  # links to other sites, not fetched (sorted, unique)
    broken: tuple[str, ...]  # "page: link (why)"


def _target(page: Path, url: str) -> tuple[Path, str]:
    parts = urlsplit(url)
    path = unquote(parts.path)
    target = page if not path else (page.parent / path).resolve()
    if path.endswith("/") or target.is_dir():
        target = target / "index.html"
    return target, unquote(parts.fragment)


def _links(root: Path, pages: dict[Path, Page]) -> Iterator[tuple[Path, str]]:
    for path, page in sorted(pages.items()):
        for url in page.links:
            yield path, url


def check(root: Path) -> Report:
    """Read every page under ``root`` and check each of its links into the site."""
    root = root.resolve()
    pages = {p.resolve(): read_page(p) for p in sorted(root.rglob("*.html"))}
    if not pages:
        raise FileNotFoundError(f"no HTML pages under {root}: build the site first")
    internal, external, broken = 0, set(), []
    for path, url in _links(root, pages):
        scheme = urlsplit(url).scheme
        if scheme in NOT_FILES:
            continue
        if scheme or url.startswith("//"):
            external.add(url)
            continue
        internal += 1
        target, fragment = _target(path, url)
        where = path.relative_to(root)
        if not target.exists():
            broken.append(f"{where}: {url} (no such file)")
        elif not target.is_relative_to(root):
            broken.append(f"{where}: {url} (outside the site)")
        elif fragment and target.suffix == ".html":
            anchors = pages[target].anchors if target in pages else read_page(target).anchors
            if fragment not in anchors:
                broken.append(f"{where}: {url} (no id {fragment!r} on {target.name})")
    return Report(len(pages), internal, tuple(sorted(external)), tuple(broken))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], allow_abbrev=False)
    parser.add_argument("site", type=Path, help="the built HTML folder (docs/_build/html)")
    parser.add_argument("--external", action="store_true", help="list the external links")
    options = parser.parse_args(argv)
    report = check(options.site)
    for line in report.broken:
        print(f"broken: {line}")
    if options.external:
        for url in report.external:
            print(f"external (not fetched): {url}")
    print(f"{report.pages} pages, {report.internal} links inside the site checked, "
          f"{len(report.broken)} broken; {len(report.external)} external links not fetched "
          "(no network in CI)")
    return 1 if report.broken else 0


if __name__ == "__main__":
    sys.exit(main())
