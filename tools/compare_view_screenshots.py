"""Compare two sets of view screenshots pixel by pixel (before/after a change to the renderers).

Each set is a folder written by ``labextension/ui-test/screens.mjs``:
``<config>/[...]/<notebook>/cNN_oK.png`` (``config`` such as ``1400-light``; cell NN, output K).
Screenshots are paired by (config, notebook, file name). For each pair this reports whether the
images are identical, differ in size, or differ in some pixels (how many, and the bounding box);
for each differing pair it writes ``<out>/<config>/<notebook>/cNN_oK.png``: before | after |
the differing pixels in red over a faded after (sizes padded to the larger one).

    python tools/compare_view_screenshots.py BEFORE_DIR AFTER_DIR --out DIFF_DIR [--json F]

Prints one line per notebook and configuration (compared / identical / differing) and then
each difference. Exit status 0 whatever it finds: it measures, the reader judges.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
from PIL import Image


@dataclass(frozen=True)
class Pair:
    config: str
    notebook: str
    name: str
    status: str  # "identical", "size", "pixels", "only-before", "only-after"
    before_size: tuple[int, int] | None
    after_size: tuple[int, int] | None
    pixels: int  # differing pixels (after padding to the larger size)
    max_delta: int  # the largest difference of one colour channel (0-255) where both have pixels
    bbox: tuple[int, int, int, int] | None  # x0, y0, x1, y1 of the differing pixels
    diff_image: str | None


def _index(root: Path) -> dict[tuple[str, str, str], Path]:
    """(config, notebook, file name) -> path, for every PNG under ``root``."""
    found = {}
    for p in sorted(root.rglob("*.png")):
        rel = p.relative_to(root).parts
        if len(rel) >= 3:
            found[(rel[0], rel[-2], rel[-1])] = p
    return found


def _rgb(path: Path) -> np.ndarray:
    with Image.open(path) as im:
        return np.asarray(im.convert("RGB"), dtype=np.int16)


def _pad(a: np.ndarray, h: int, w: int) -> np.ndarray:
    out = np.full((h, w, 3), 255, dtype=np.int16)
    out[: a.shape[0], : a.shape[1]] = a
    return out


def compare(before: Path, after: Path, out: Path | None) -> list[Pair]:
    """Every screenshot pair of the two folders, compared; diff images under ``out``."""
    b_idx, a_idx = _index(before), _index(after)
    pairs = []
    for key in sorted(set(b_idx) | set(a_idx)):
        config, notebook, name = key
        if key not in a_idx or key not in b_idx:
            status = "only-before" if key in b_idx else "only-after"
            pairs.append(Pair(config, notebook, name, status, None, None, 0, 0, None, None))
            continue
        b, a = _rgb(b_idx[key]), _rgb(a_idx[key])
        bs, as_ = (b.shape[1], b.shape[0]), (a.shape[1], a.shape[0])
        h, w = max(b.shape[0], a.shape[0]), max(b.shape[1], a.shape[1])
        mask = np.any(_pad(b, h, w) != _pad(a, h, w), axis=2)
        pixels = int(mask.sum())
        ch, cw = min(b.shape[0], a.shape[0]), min(b.shape[1], a.shape[1])
        max_delta = int(np.abs(b[:ch, :cw] - a[:ch, :cw]).max()) if ch and cw else 0
        if pixels == 0 and bs == as_:
            pairs.append(Pair(config, notebook, name, "identical", bs, as_, 0, 0, None, None))
            continue
        ys, xs = np.nonzero(mask)
        bbox = None
        if pixels:
            bbox = (int(xs.min()), int(ys.min()), int(xs.max()) + 1, int(ys.max()) + 1)
        diff_path = None
        if out is not None:
            diff_path = out / config / notebook / name
            diff_path.parent.mkdir(parents=True, exist_ok=True)
            _diff_image(_pad(b, h, w), _pad(a, h, w), mask).save(diff_path)
        pairs.append(Pair(config, notebook, name, "size" if bs != as_ else "pixels", bs, as_,
                          pixels, max_delta, bbox, str(diff_path) if diff_path else None))
    return pairs


def _diff_image(b: np.ndarray, a: np.ndarray, mask: np.ndarray) -> Image.Image:
    faded = (a * 0.3 + 255 * 0.7).astype(np.uint8)
    faded[mask] = (220, 0, 0)
    gap = np.full((b.shape[0], 8, 3), 128, dtype=np.uint8)
    return Image.fromarray(np.concatenate([b.astype(np.uint8), gap, a.astype(np.uint8), gap, faded],
                                          axis=1))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], allow_abbrev=False)
    ap.add_argument("before", type=Path)
    ap.add_argument("after", type=Path)
    ap.add_argument("--out", type=Path,
                    help="folder for before|after|diff images of differing pairs")
    ap.add_argument("--json", type=Path, help="write every pair's result here")
    args = ap.parse_args(argv)
    pairs = compare(args.before, args.after, args.out)
    summary: dict[tuple[str, str], list[int]] = {}
    for p in pairs:
        s = summary.setdefault((p.notebook, p.config), [0, 0, 0])
        s[0] += 1
        s[1 if p.status == "identical" else 2] += 1
    for (notebook, config), (n, same, diff) in sorted(summary.items()):
        print(f"{notebook:40s} {config:12s} compared {n:3d}  identical {same:3d}  "
              f"differing {diff:3d}")
    for p in pairs:
        if p.status != "identical":
            print(f"  {p.status:11s} {p.config}/{p.notebook}/{p.name}: {p.before_size} -> "
                  f"{p.after_size}, {p.pixels} px (max channel delta {p.max_delta}), bbox {p.bbox}")
    if args.json:
        args.json.write_text(json.dumps([asdict(p) for p in pairs], indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
