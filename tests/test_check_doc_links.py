"""tools/check_doc_links.py: the built documentation site's links, checked offline."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("check_doc_links",
                                               ROOT / "tools" / "check_doc_links.py")
check_doc_links = importlib.util.module_from_spec(_spec)
sys.modules["check_doc_links"] = check_doc_links  # its dataclasses look their module up
_spec.loader.exec_module(check_doc_links)


def _site(tmp_path: Path) -> Path:
    (tmp_path / "api").mkdir(parents=True)
    (tmp_path / "index.html").write_text(
        '<a href="api/tune.html#tile_lab.tune">tune</a> <a href="api/">api</a>'
        '<a href="#top" id="top">top</a> <img src="_static/missing.svg">'
        '<a href="https://example.org/x">elsewhere</a> <a href="mailto:a@b.c">mail</a>')
    (tmp_path / "api" / "index.html").write_text('<a href="../index.html#nowhere">back</a>')
    (tmp_path / "api" / "tune.html").write_text(
        '<dt id="tile_lab.tune"></dt><a name="old"></a><a href="tune.html#old">old</a>'
        '<a href="../../outside.html">out</a>')
    (tmp_path.parent / "outside.html").write_text("")
    return tmp_path


def test_links_to_missing_files_anchors_and_outside_the_site_are_broken(tmp_path):
    report = check_doc_links.check(_site(tmp_path / "site"))
    assert report.pages == 3
    assert sorted(report.broken) == [
        "api/index.html: ../index.html#nowhere (no id 'nowhere' on index.html)",
        "api/tune.html: ../../outside.html (outside the site)",
        "index.html: _static/missing.svg (no such file)",
    ]
    # tune#tile_lab.tune, api/, #top, the image, ../index.html#nowhere, tune#old, outside
    assert report.internal == 7
    assert report.external == ("https://example.org/x",)


def test_main_exits_1_on_a_broken_link_and_0_on_a_whole_site(tmp_path, capsys):
    site = _site(tmp_path / "site")
    assert check_doc_links.main([str(site)]) == 1
    assert "3 broken" in capsys.readouterr().out
    (site / "_static").mkdir()
    (site / "_static" / "missing.svg").write_text("<svg/>")
    (site / "api" / "index.html").write_text('<a href="../index.html#top">back</a>')
    (site / "api" / "tune.html").write_text('<dt id="tile_lab.tune"></dt>')
    assert check_doc_links.main([str(site), "--external"]) == 0
    out = capsys.readouterr().out
    assert "0 broken" in out and "external (not fetched): https://example.org/x" in out


def test_an_empty_folder_is_an_error_not_a_pass(tmp_path):
    try:
        check_doc_links.check(tmp_path)
    except FileNotFoundError as error:
        assert "build the site first" in str(error)
    else:
        raise AssertionError("no pages passed the check")
