"""Reaching Ray for :mod:`tile_lab.tuning.cluster`: importing it (an optional extra) and
starting or joining an instance, within bounds.

Ray gives a local raylet a fixed 30 s to register with its GCS, and the raylet gives its
dashboard agent a fixed 15 s to write its port file (neither configurable in Ray 2.60:
``RAY_raylet_start_wait_time_s``, which tile_lab used to set, changes neither); a machine
busy with other jobs can miss them, and such a start fails but leaves its processes
running. :func:`start_ray` stops them and tries again, three attempts in all (the load that
makes a start miss comes and goes: test workers collecting, browsers starting), and a last
failure is a
:class:`ClusterError` that says what happened.
"""

from __future__ import annotations

import contextlib
from typing import Any

from ..errors import TileLabError


class ClusterError(TileLabError):
    """Ray is missing, or the cluster cannot be reached."""


def ray_module() -> Any:
    try:
        import ray
    except ImportError as e:
        raise ClusterError("tuning on a cluster needs Ray: pip install \"tile_lab[cluster]\" "
                           "(or pip install ray); without a cluster, tune() compiles in a "
                           "local process pool") from e
    return ray


def start_ray(address: str | None, init_kwargs: dict[str, Any]) -> Any:
    """``ray.init`` once per process (a no-op when Ray is already initialised): a local
    instance when ``address`` is None, else the cluster there. Returns the ``ray`` module."""
    ray = ray_module()
    if not ray.is_initialized():
        kwargs = {"include_dashboard": False, "log_to_driver": False, **init_kwargs}
        try:
            if address is None:
                _start_local(ray, kwargs)
            else:
                ray.init(address=address, **kwargs)
        except ConnectionError as e:
            raise ClusterError(f"cannot reach the Ray cluster at {address!r}: {e}") from e
    return ray


def _start_local(ray: Any, kwargs: dict[str, Any], attempts: int = 3) -> None:
    import psutil  # a dependency of Ray's


    me = psutil.Process()
    for attempt in range(1, attempts + 1):
        before = {p.pid for p in me.children(recursive=True)}
        try:
            ray.init(**kwargs)
            return
        except Exception as e:
            if "timed out during startup" not in str(e):
                raise
            # the half-started instance (GCS, raylet, reaper) would outlive the failure
            left = [p for p in me.children(recursive=True) if p.pid not in before]
            for p in left:
                with contextlib.suppress(psutil.Error):
                    p.kill()
            psutil.wait_procs(left, timeout=10)
            if attempt == attempts:
                raise ClusterError(f"a local Ray instance did not start ({attempts} attempts; "
                                   f"Ray: {e}): is the machine very busy?") from e
