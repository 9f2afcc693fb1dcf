"""Which tileiras cuTile's own compiles run: one build picked for this process, for comparing
the code of two tileiras builds side by side (``bench/tileiras_ab.py``).

cuTile looks for tileiras once per process (the pip wheel first, then ``PATH``, then
``CUDA_HOME``) and caches what it found, with that build's version line and the newest
bytecode version it reads; changing ``PATH`` later changes nothing. :func:`select_tileiras`
replaces the lookup and forgets those cached answers. Kernels compiled before keep their
cubins (a kernel object's JIT cache is its own: ``replace_hints`` gives a new object that
compiles again), and cuTile's disk cache keys every cubin by the version line, so the cubins
of two builds never mix there.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

from ..errors import ToolchainError

# cuTile's lookup as it was before the first select_tileiras (restored by select_tileiras(None))
_CUTILE_LOOKUP: Any = None


def _forget(compile_module: Any) -> None:
    """Clear cuTile's per-process answers about its compiler (functools caches), so the next
    compile asks the build now selected."""
    for name in ("_find_compiler_bin", "_get_compiler_version_string",
                 "_find_tileirdisasm_bin", "_get_max_supported_bytecode_version"):
        cached = getattr(compile_module, name)
        if hasattr(cached, "cache_clear"):
            cached.cache_clear()


def tileiras_in(folder: str | os.PathLike[str]) -> Path:
    """The tileiras executable in ``folder`` (a toolkit's ``bin``: tileiras runs the ptxas
    beside it and loads ``../lib/libnvvm.so.4``). ToolchainError naming the folder if none."""
    found = shutil.which("tileiras", path=str(folder))
    if not found:
        raise ToolchainError(f"no tileiras executable in {os.fspath(folder)!r}",
                             hint="give the folder that holds tileiras, with ptxas beside it "
                                  "and libnvvm.so.4 in ../lib (a CUDA 13 toolkit's bin)")
    return Path(found).absolute()


def select_tileiras(folder: str | os.PathLike[str] | None) -> str | None:
    """Make cuTile's next compiles in this process run the tileiras in ``folder`` (None: the
    one cuTile finds itself, as before any call, looked for at the next compile); return
    that build's ``--version`` line ("Cuda compilation tools, release 13.4, V13.4.92"), or
    None for cuTile's own. CUDA_HOME and CUDA_PATH are not passed to a chosen build (an older
    toolkit there makes tileiras fail)."""
    global _CUTILE_LOOKUP
    from cuda.tile import _compile

    if _CUTILE_LOOKUP is None:
        _CUTILE_LOOKUP = _compile._find_compiler_bin
    if folder is None:
        _compile._find_compiler_bin = _CUTILE_LOOKUP
        _forget(_compile)
        return None
    exe = tileiras_in(folder)
    chosen = _compile._CompilerBinary(str(exe), os.environ.get("PATH", ""),
                                      os.environ.get("LD_LIBRARY_PATH", ""),
                                      pass_cuda_home_var=False)

    def lookup() -> Any:
        return chosen

    _compile._find_compiler_bin = lookup  # cuTile's functions look it up by name at each call
    _forget(_compile)
    text = _compile._get_compiler_version_string()
    if not text:
        raise ToolchainError(f"tileiras at {folder!r} did not print its version",
                             hint="run it with --version to see why")
    lines = [ln.strip() for ln in text.splitlines() if "release" in ln]
    return lines[0] if lines else text.strip().splitlines()[-1]
