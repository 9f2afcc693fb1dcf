"""The value of ``TILE_LAB_EMULATE``, parsed: shared by the start-up hook (``_startup.py``) and
the emulator's program switch (``emulator/program.py``), below both so neither imports the
other to read it. Standard library only: it runs inside every Python start-up that has the
variable set.
"""

from __future__ import annotations

import os

__all__ = ["ENV_VAR", "MODES_HELP", "mode_from_env"]

ENV_VAR = "TILE_LAB_EMULATE"
_OFF = ("", "0", "false", "no", "off")
_EMULATE = ("1", "true", "yes", "on", "emulate")
MODES_HELP = "use 1 (emulate every ct.launch), sanitize (sanitize every launch), or 0 (off)"


def mode_from_env(value: str | None = None) -> str | None:
    """``"emulate"``, ``"sanitize"`` or None for the value of ``TILE_LAB_EMULATE``; ValueError
    for anything else."""
    raw = os.environ.get(ENV_VAR, "") if value is None else value
    value = raw.strip().lower()
    if value in _OFF:
        return None
    if value == "sanitize":
        return "sanitize"
    if value in _EMULATE:
        return "emulate"
    raise ValueError(f"tile_lab: {ENV_VAR}={raw!r} is not a mode: {MODES_HELP}")
