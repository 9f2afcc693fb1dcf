"""``python -m tile_lab.emulator [--sanitize] script.py [args...]``: run a cuTile program
with every ``ct.launch`` on the CPU emulator (see ``program.py``)."""

import sys

from .program import run_script

sys.exit(run_script(sys.argv[1:]))
