"""Is a picture true to its geometry? Measure SVG/HTML pictures in headless Chromium.

:func:`measure` lays many pictures out on one page at notebook width (in the test process's
shared probe browser, else one Chromium start for all of them), runs ``geometry_probe.js``
in it and returns each picture's problems: negative, zero or NaN sizes; text overlapping
text; text outside its picture or cut by its pane; an outline drawn through a label; a
picture collapsed to a strip; a block tuple wrapping across lines. Each problem names the
element (tag, its text or its tooltip). Used by the render geometry tests and by
``notebooks/conftest.py`` on every picture the tutorials display.

Matplotlib figures are checked from matplotlib's own text extents (``geometry_mpl.py``).
"""

from __future__ import annotations

import html
import json
import re
import subprocess
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
SCRIPT = (HERE / "geometry_probe.js").read_text(encoding="utf-8")
WIDTH = 1000  # the browser window, as in the look at the tutorials
PANE = 900  # a JupyterLab output area in that window (prompt and margins taken off)
_RESULT = re.compile(r'<pre id="tl-geo-result">(.*?)</pre>', re.S)
_SCRIPT_TAG = re.compile(r"<script\b.*?</script>", re.S | re.I)


def picture_of(data: dict) -> str | None:
    """The markup JupyterLab would draw for one display output's ``data`` (HTML before SVG,
    as its renderers rank them), or None when the output is not a picture."""
    if "text/html" in data:
        body = data["text/html"]
    elif "image/svg+xml" in data:
        body = data["image/svg+xml"]
    else:
        return None
    body = "".join(body) if isinstance(body, list) else body
    return body if "<" in body else None


def write_pages(stem: Path, pictures: list[tuple[str, str]]) -> list[Path]:
    """``<stem>-light.html`` and ``<stem>-dark.html``: the pictures at notebook width under
    their labels, on JupyterLab's light and dark theme colours (``data-jp-theme-light``)."""
    stem.parent.mkdir(parents=True, exist_ok=True)
    out = []
    for theme, body in (("light", "<body style='margin:8px;background:#fff;color:#222'>"),
                        ("dark", "<body data-jp-theme-light='false' style='margin:8px;"
                                 "background:#111;color:#ddd'>")):
        parts = ["<!doctype html><html><head><meta charset='utf-8'></head>", body]
        for label, markup in pictures:
            parts.append(f"<p style='font:12px sans-serif;opacity:.6'>{html.escape(label)}</p>"
                         f"<div style='width:{PANE}px'>{markup}</div>")
        path = stem.parent / f"{stem.name}-{theme}.html"
        path.write_text("".join(parts) + "</body></html>", encoding="utf-8")
        out.append(path)
    return out


def measure(pictures: list[tuple[str, str]], chromium: str) -> dict[str, list[str]]:
    """``{label: problems}`` for ``(label, markup)`` pairs, all measured on one page."""
    if not pictures:
        return {}
    parts = ["<!doctype html><html><head><meta charset='utf-8'></head>"
             "<body style='margin:8px;background:#fff;color:#222'>"]
    for i, (_, markup) in enumerate(pictures):
        # the pictures' own scripts (widgets' loaders) are not what is measured
        parts.append(f"<div class='tl-geo-pic' data-pic='{i}' style='width:{PANE}px;"
                     f"margin:0 0 24px 0'>{_SCRIPT_TAG.sub('', markup)}</div>")
    parts.append(f"<pre id='tl-geo-result'></pre><script>{SCRIPT}</script></body></html>")
    with tempfile.TemporaryDirectory(prefix="tl-geo-") as tmp:
        page = Path(tmp) / "page.html"
        page.write_text("".join(parts), encoding="utf-8")
        text = _in_shared_browser(page, chromium)
        if text is not None:
            return _problems(json.loads(text), pictures)
        proc = subprocess.run(
            [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
             "--disable-background-networking", "--disable-component-update",
             "--hide-scrollbars", "--force-device-scale-factor=1",
             f"--window-size={WIDTH},900", f"--user-data-dir={tmp}/profile",
             "--dump-dom", page.as_uri()],
            capture_output=True, text=True, timeout=300)
    found = _RESULT.search(proc.stdout.replace("'", '"'))
    if found is None:
        m = re.search(r"<pre id=.tl-geo-result.>(.*?)</pre>", proc.stdout, re.S)
        found = m
    if found is None:
        raise RuntimeError(f"Chromium gave no geometry (rc {proc.returncode}): "
                           f"{proc.stderr[-2000:]}")
    return _problems(json.loads(html.unescape(found.group(1))), pictures)


def _problems(raw: dict, pictures: list[tuple[str, str]]) -> dict[str, list[str]]:
    return {label: raw.get(str(i), ["not measured"]) for i, (label, _) in enumerate(pictures)}


def _in_shared_browser(page: Path, chromium: str) -> str | None:
    """The page's result text, read in this process's shared probe browser
    (``browser_probe.mjs`` through ``browser_env.shared_browser``: a Chromium start is ~2 s of
    CPU, and the notebooks' checks alone started ~20 a run); None where Node or
    playwright-core is missing (then Chromium's command line measures it, as it did)."""
    import shutil

    import browser_env

    if shutil.which("node") is None or not (browser_env.EXT / "node_modules" /
                                            "playwright-core").is_dir():
        return None
    if browser_env.shared_browser("probe", chromium) is None:
        return None
    jobs = page.with_name("jobs.json")
    # the window the command line gave: 1000 x 900 at scale 1 (scrollbars hidden: headless)
    jobs.write_text(json.dumps([browser_env.probe_job(
        page, WIDTH, 900, evaluate="document.getElementById('tl-geo-result').textContent")]),
        encoding="utf-8")
    value = browser_env.probe(jobs, chromium)[0]["value"]
    if not value:
        raise RuntimeError("the geometry script wrote no result (did it throw?)")
    return value
