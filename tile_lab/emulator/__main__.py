"""``python -m tile_lab.emulator [--sanitize] script.py [args...]``: run a cuTile program
with every ``ct.launch`` on the CPU emulator (see ``program.py``)."""

import sys

from .._startup import play_device_from_env
from .program import run_script

play_device_from_env()  # TILE_LAB_DEVICE=cpu: torch's CUDA device on the CPU, as under the hook
sys.exit(run_script(sys.argv[1:]))
