"""tools/compare_view_screenshots.py: pairs screenshots by (config, notebook, name) and tells
identical, pixel and size differences apart, with the differing pixels' box."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
from PIL import Image

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
import compare_view_screenshots as cmp


def _png(path: Path, pixels: np.ndarray) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(pixels.astype(np.uint8)).save(path)


def test_pairs_are_classified(tmp_path: Path) -> None:
    white = np.full((20, 30, 3), 255)
    dotted = white.copy()
    dotted[5:7, 10:13] = (250, 250, 250)  # a faint change: 6 pixels, delta 5
    for side, second, third in (("b", white, white), ("a", dotted, np.full((25, 30, 3), 255))):
        # the sides' notebook folders differ above the notebook (nb_before/, nb_after/)
        root = tmp_path / side / "1000-light" / f"nb_{side}" / "01_x"
        _png(root / "c01_o0.png", white)
        _png(root / "c02_o0.png", second)
        _png(root / "c03_o0.png", third)
    _png(tmp_path / "a" / "1000-light" / "nb_a" / "01_x" / "c04_o0.png", white)
    out = tmp_path / "diff"
    pairs = {p.name: p for p in cmp.compare(tmp_path / "b", tmp_path / "a", out)}
    assert pairs["c01_o0.png"].status == "identical"
    px = pairs["c02_o0.png"]
    assert (px.status, px.pixels, px.max_delta, px.bbox) == ("pixels", 6, 5, (10, 5, 13, 7))
    assert Path(px.diff_image).is_file()
    size = pairs["c03_o0.png"]
    assert (size.status, size.before_size, size.after_size) == ("size", (30, 20), (30, 25))
    assert pairs["c04_o0.png"].status == "only-after"
    # the command line: a line per notebook and configuration, and the JSON
    report = tmp_path / "r.json"
    assert cmp.main([str(tmp_path / "b"), str(tmp_path / "a"), "--json", str(report)]) == 0
    assert {r["status"] for r in json.loads(report.read_text())} == {
        "identical", "pixels", "size", "only-after"}
