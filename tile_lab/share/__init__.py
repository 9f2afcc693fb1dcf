"""Sharing kernel work: ``export`` (one self-contained HTML file of inspect views, diagrams,
profiles, sanitizer reports and measurements; ``export_notebook`` for a whole notebook) and
``reproducer`` (a folder that reruns a kernel's compile and launch elsewhere). Saved traces
are ``Trace.save`` / ``tile_lab.load_trace``."""

from __future__ import annotations

from .bundle import export
from .reproducer import Reproducer, reproducer

__all__ = ["Reproducer", "export", "reproducer"]
