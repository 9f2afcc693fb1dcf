"""The "why" of a tuning result: profile its best and worst configs and show them side by
side (``tile_lab.profile_tuning``)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ..errors import ProfilerError
from .api import profile_kernel
from .data import compare_profiles


def profile_tuning(kernel: Any, result: Any, grid_fn: Callable[[Any], Sequence[int]],
                   args_fn: Callable[[Any], Sequence[Any]], *,
                   which: Sequence[str] = ("best", "worst"), **profile_options: Any) -> Any:
    """Profile ``result``'s best and worst configs (a ``TuningResult`` of ``kernel``, with
    the ``grid_fn``/``args_fn`` it was tuned with) and return them side by side (a
    displayable ``ProfileComparison``; its ``profiles`` hold the ``Profile`` objects).
    ``profile_options`` go to ``tile_lab.profile`` (e.g. ``timeout_s``, ``keep_report``)."""
    picks = {"best": result.best, "worst": result.worst}
    unknown = [w for w in which if w not in picks]
    if unknown:
        raise ValueError(f"which= takes 'best' and/or 'worst', not {unknown[0]!r}")
    profiles = {}
    for name in which:
        success = picks[name]
        if success is None:
            raise ProfilerError(f"the tuning result of {result.kernel_name} has no successful "
                                "config to profile")
        cfg = success.config
        prof = profile_kernel(kernel, grid_fn(cfg), args_fn(cfg), hints=cfg.hints() or None,
                       **profile_options)
        profiles[f"{name}: {cfg.label()} (tuned {success.time_s * 1e6:,.1f} µs)"] = prof
    return compare_profiles(profiles)
