"""Screenshot checks in a real browser: headless Chromium renders diagram HTML, and the
pixels of the screenshot must show the highlighted tile / the selected block's footprint
where the geometry says they are (and not elsewhere), in a light and a dark page."""

from __future__ import annotations

import json
from pathlib import Path

import browser_env
import numpy as np
import pytest
from test_render_diagram import highlight_on_page, ragged_copy

from tile_lab.render.diagram import partition
from tile_lab.widgets.diagram_browser import DiagramBrowser

pytestmark = pytest.mark.slow  # the first test of a process starts a browser (a few seconds)


def screenshot(html: str, size: tuple[float, float], tmp_path: Path, name: str) -> np.ndarray:
    """Render ``html`` in headless Chromium (this process's probe browser, at scale 1, no
    scrollbars, a window of the picture's size + 40 px); the screenshot as an RGB float
    array."""
    import matplotlib.image as mpimg

    browser_env.node_module("playwright-core")
    chromium = browser_env.chromium("probe")
    page = tmp_path / f"{name}.html"
    page.write_text(html, encoding="utf-8")
    png = tmp_path / f"{name}.png"
    w, h = int(size[0]) + 40, int(size[1]) + 40
    jobs = tmp_path / f"{name}.jobs.json"
    jobs.write_text(json.dumps([browser_env.probe_job(page, w, h, screenshot=png)]))
    (result,) = browser_env.probe(jobs, chromium)
    assert result["errors"] == [] and png.exists(), result
    img = mpimg.imread(png)[..., :3]
    assert img.shape[:2] == (h, w)
    return img


def page(body: str, background: str = "#ffffff", color: str = "#222222") -> str:
    return (f"<!doctype html><html><head><meta charset='utf-8'></head>"
            f"<body style='margin:0;background:{background};color:{color}'>{body}</body></html>")


def test_figure19_highlight_in_chromium(tmp_path):
    d = partition((10, 16), (2, 4), highlight=(1, 2))
    img = screenshot(page(d._repr_html_()), (d.scene.width, d.scene.height), tmp_path, "fig19")
    expected = highlight_on_page()

    def px(index):  # a pixel inside the element, away from the centred tile label
        x, y = d.element_xy("array", index)
        return img[int(y - 5), int(x - 5)]

    for inside in [(2, 8), (2, 11), (3, 8), (3, 11)]:  # the corners of tile (1, 2)
        assert np.abs(px(inside) - expected).max() < 0.05, inside
    for outside in [(0, 0), (2, 7), (2, 12), (1, 8), (4, 8), (9, 15)]:
        assert np.abs(px(outside) - expected).max() > 0.3, outside
    # the drawing is not cropped: the last element is on the page
    x, y = d.element_xy("array", (9, 15))
    assert x < img.shape[1] and y < img.shape[0]


def test_browser_output_moves_with_the_block_slider_in_chromium(tmp_path):
    b = DiagramBrowser(ragged_copy())
    b.block_sliders["x"].value = 1  # block (1, 0) loads a's tile (1, 0): rows 4–7, cols 0–3
    d = b.diagram
    img = screenshot(page(b.output.value, "#ffffff", "#000000"), (d.scene.width, d.scene.height),
                     tmp_path, "browser")
    load = np.array([0xE6, 0x9F, 0x00]) / 255  # palette colour of the first line (line 5)
    expected = 0.45 * load + 0.55 * 0.96  # 45 % fill over the array's 4 % black tint

    def px(index):
        x, y = d.element_xy("a", index)
        return img[int(y - 4), int(x - 4)]

    for inside in [(4, 0), (7, 3), (5, 2)]:
        assert np.abs(px(inside) - expected).max() < 0.06, inside
    for outside in [(0, 0), (3, 3), (8, 0), (4, 4)]:  # block (0, 0)'s tile, the neighbours
        assert np.abs(px(outside) - expected).max() > 0.15, outside


def test_text_and_lines_follow_a_dark_page(tmp_path):
    d = partition((10, 16), (2, 4), highlight=(1, 2))
    size = (d.scene.width, d.scene.height)
    light = screenshot(page(d._repr_html_(), "#ffffff", "#222222"), size, tmp_path, "light")
    dark = screenshot(page(d._repr_html_(), "#111111", "#dddddd"), size, tmp_path, "dark")
    # the title row: dark ink on the light page, light ink on the dark page
    title_light, title_dark = light[8:24, 10:300].mean(axis=2), dark[8:24, 10:300].mean(axis=2)
    assert title_light.min() < 0.3 and title_dark.max() > 0.7
    # a tile boundary line (between tiles (0, 0) and (0, 1)) is visible on both
    x, y = d.element_xy("array", (0, 4))
    x0 = int(x - d.layouts[0].sx / 2)
    strip_l, strip_d = light[int(y), x0 - 2:x0 + 3].mean(axis=1), dark[int(y), x0 - 2:x0 + 3] \
        .mean(axis=1)
    assert strip_l.min() < 0.5 and strip_d.max() > 0.5


def test_line_colours_switch_with_the_jupyterlab_dark_theme(tmp_path):
    from test_render_diagram import make_trace

    from tile_lab.render import palette
    from tile_lab.render.diagram import diagram

    # line 3 takes palette slot 0, line 4 slot 1: blue, lightened in the dark palette
    t = make_trace("two", (1,), [("x", (4, 4)), ("y", (4, 4))], lambda b: [
        ("load", "x", 3, 0, (0, 0), (4, 4)), ("load", "y", 4, 0, (0, 0), (4, 4))])
    d = diagram(t)
    body = d._repr_html_()
    html = ("<!doctype html><html><head><meta charset='utf-8'></head>"
            "<body data-jp-theme-light='false' style='margin:0;background:#111111;"
            f"color:#dddddd'>{body}</body></html>")
    img = screenshot(html, (d.scene.width, d.scene.height), tmp_path, "jp-dark")
    x, y = d.element_xy("y", (1, 1))
    got = img[int(y - 4), int(x - 4)]
    page_bg = 0.96 * 0x11 / 255 + 0.04 * 0xDD / 255  # the array's 4 % ink tint on the page

    def on_page(hex_colour):
        rgb = np.array([int(hex_colour[i:i + 2], 16) for i in (1, 3, 5)]) / 255
        return 0.45 * rgb + 0.55 * page_bg

    dark_blue, light_blue = palette.PALETTE_DARK[1], palette.PALETTE_LIGHT[1]
    assert dark_blue != light_blue
    assert np.abs(got - on_page(dark_blue)).max() < 0.06
    assert np.abs(got - on_page(light_blue)).max() > 0.1
