"""Where and how a tuning run uses a Ray cluster (:class:`ClusterOptions`), and joining it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .ray_start import start_ray

__all__ = ["ClusterOptions", "connect"]


@dataclass(frozen=True)
class ClusterOptions:
    """Where and how a tuning run uses a Ray cluster.

    ``address``: None starts (or joins) a local Ray instance, as on a laptop; ``"auto"`` joins
    the cluster this machine belongs to; ``"ray://host:10001"`` a remote one.
    ``compile_workers``: at most this many compile tasks in flight (None: one per cluster CPU).
    ``gpus``: measuring actors, one GPU each (None: every GPU the cluster has; 0: measure in
    this process). ``task_retries``: how often a compile task is re-run after its worker died.
    ``actor_restarts``: how often a measuring actor is restarted after a config killed it.
    ``cross_check_top``: how many of the best configs are re-timed on one GPU at the end.
    ``gpus_per_actor``: the GPU share Ray reserves for each measuring actor (1: a GPU each).
    ``measure_timeout_s``: a config with no result after this long is a hang: it fails with the
    stack its process was in, and the process is restarted.
    ``start_timeout_s``: a measuring actor that has not started (or restarted) after this long
    is lost: the configs waiting for it fail, saying so, instead of waiting for ever.
    ``compile_timeout_s``: a compile job with no result after this long is cancelled and
    fails (a hung compiler, or a task Ray could never place).
    ``init_kwargs``: passed to ``ray.init`` (e.g. ``{"num_cpus": 2}``).
    """

    address: str | None = None
    compile_workers: int | None = None
    gpus: int | None = None
    task_retries: int = 3
    actor_restarts: int = 4
    cross_check_top: int = 3
    gpus_per_actor: float = 1.0
    measure_timeout_s: float = 600.0
    start_timeout_s: float = 300.0
    compile_timeout_s: float = 1800.0
    init_kwargs: dict[str, Any] = field(default_factory=dict)


def connect(options: ClusterOptions) -> Any:
    """``ray.init`` once per process (a no-op when Ray is already initialised)."""
    return start_ray(options.address, options.init_kwargs)
