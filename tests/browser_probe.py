"""Run pages through headless Chromium (``browser_probe.mjs``, playwright-core from
``labextension/node_modules``): hover an element, read the page with a script, screenshot.

One browser for the whole test process (each start costs seconds on a busy machine), and
one serving probe for all its job lists (``browser_env.probe``).
Screenshots land in ``test-artifacts/render/`` so a person can look at them."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import browser_env

HERE = Path(__file__).resolve().parent
ARTIFACTS = HERE.parent / "test-artifacts" / "render"  # git-ignored
DARK = ("<body data-jp-theme-light='false' style='margin:8px;background:#111111;"
        "color:#dddddd'>")
LIGHT = "<body style='margin:8px;background:#ffffff;color:#222222'>"


@dataclass
class Job:
    name: str  # file stem of the page and the screenshot
    body: str  # HTML fragment put in the page's body
    width: int = 1500
    height: int = 900
    dark: bool = False
    prepare: str | None = None  # JavaScript run first (e.g. to mark what to hover)
    hover: str | None = None  # CSS selector hovered before evaluating
    evaluate: str | None = None  # JavaScript expression (a function body's value)


def page_html(body: str, dark: bool = False) -> str:
    return ("<!doctype html><html><head><meta charset='utf-8'></head>"
            + (DARK if dark else LIGHT) + body + "</body></html>")


def mark_titled(prefix: str, last: bool = False) -> str:
    """JavaScript marking the first (``last``: the last) SVG group whose tooltip starts with
    ``prefix`` as the element to hover (``[data-probe]``)."""
    return ("(() => { const gs = [...document.querySelectorAll('g')].filter(g => "
            "g.querySelector(':scope > title')?.textContent.startsWith(" + json.dumps(prefix)
            + ")); const g = gs[" + ("gs.length - 1" if last else "0") + "]; "
            "if (g) g.setAttribute('data-probe', '1'); })()")


def run(jobs: list[Job], tmp_path: Path) -> list[dict]:
    """Each job's ``{"name", "value", "errors", "png"}`` (``png``: an RGB float array)."""
    import matplotlib.image as mpimg

    browser_env.node()
    browser_env.node_module("playwright-core")
    chromium = browser_env.chromium("probe")
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    specs = []
    for job in jobs:
        page = tmp_path / f"{job.name}.html"
        page.write_text(page_html(job.body, job.dark), encoding="utf-8")
        specs.append(browser_env.probe_job(
            page, job.width, job.height, prepare=job.prepare, hover=job.hover,
            evaluate=job.evaluate, screenshot=ARTIFACTS / f"{job.name}.png"))
    spec_file = tmp_path / "jobs.json"
    spec_file.write_text(json.dumps(specs), encoding="utf-8")
    results = browser_env.probe(spec_file, chromium)
    assert len(results) == len(jobs), results
    for res, spec, job in zip(results, specs, jobs):
        res["name"] = job.name
        res["png"] = mpimg.imread(spec["screenshot"])[..., :3]
        assert res["errors"] == [], res["errors"]
    return results
