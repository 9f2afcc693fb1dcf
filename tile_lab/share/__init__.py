"""Sharing kernel work: ``reproducer`` (a folder that reruns a kernel's compile and launch
elsewhere). Saved traces are ``Trace.save`` / ``tile_lab.load_trace``."""

from __future__ import annotations

from .reproducer import Reproducer, reproducer

__all__ = ["Reproducer", "reproducer"]
