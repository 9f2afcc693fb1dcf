"""The launches the tutorials make, recorded by running each notebook on the emulator.

``record(notebook, out)`` runs the notebook's jupytext source cell by cell in an IPython shell
(``%%tile`` cells included) with the GPU hidden, so every kernel runs on the emulator, and
writes the first launch of each kernel — its source, the globals it needs, the grid and copies
of the arguments — to ``out`` (a pickle, rewritten after every new kernel, so a notebook cut
off by a time limit still gives what it launched so far). ``rebuild(launch)`` turns a record
back into a kernel in a fresh namespace. ``bench/crosscheck_all.py`` runs the recorders in
parallel subprocesses, then crosschecks what they recorded on the GPU.

The recorder wraps ``tile_lab.emulator.runtime._launch``: the one funnel that every
``emulate``/``trace``/``sanitize``/``check``/``%%tile --emulate`` call passes through.
"""

from __future__ import annotations

import copy
import inspect
import linecache
import pickle
import sys
import types
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


@dataclass
class Launch:
    notebook: str
    kernel: str
    grid: tuple[int, ...]
    args: tuple
    module: str | None = None  # importable module defining the kernel (tile_lab.examples...)
    source: str = ""  # the kernel's source, when it was defined in the notebook
    first_line: int = 1  # its first line in the notebook cell (errors and lines match it)
    needs: dict[str, tuple] = field(default_factory=dict)  # global name -> how to rebuild it


def _code_names(code: types.CodeType) -> set[str]:
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _code_names(const)
    return names


def _needs(fn: types.FunctionType, seen: set[str]) -> dict[str, tuple]:
    """How to rebuild each global ``fn`` reads: ("module", name) | ("import", module, attr) |
    ("source", text, needs) | ("value", v)."""
    out: dict[str, tuple] = {}
    names = _code_names(fn.__code__)
    try:  # decorators and annotations (@ct.kernel, ct.Constant[int]) are not in the code
        import ast
        import textwrap

        tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
        names |= {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
    except (OSError, SyntaxError):
        pass
    for name in sorted(names):
        if name in seen or name not in fn.__globals__:
            continue
        value = fn.__globals__[name]
        if isinstance(value, types.ModuleType):
            out[name] = ("module", value.__name__)
            continue
        inner = _pyfunc(value)
        mod = (inner.__module__ if inner is not None else "") or ""
        if inner is not None and mod not in ("__main__", "builtins") and \
                not mod.startswith("<"):
            out[name] = ("import", mod, getattr(value, "__name__", name))
        elif inner is not None:
            seen.add(name)
            out[name] = ("source", inspect.getsource(inner), _needs(inner, seen))
        elif isinstance(value, (int, float, str, bool, tuple, type(None))):
            out[name] = ("value", value)
    return out


def _pyfunc(obj: Any) -> types.FunctionType | None:
    if isinstance(obj, types.FunctionType):
        return obj
    from tile_lab._cutile_compat import is_kernel, python_function

    return python_function(obj) if is_kernel(obj) else None


def _host(a: Any) -> Any:
    if isinstance(a, np.ndarray):
        return a.copy()
    if isinstance(a, (list, tuple)):
        return type(a)(_host(x) for x in a)
    from tile_lab.array_like import host_view, is_array_like

    if is_array_like(a):
        view = host_view(a)
        return None if view is None else np.array(view)
    return copy.copy(a)


def record(notebook: Path, out: Path) -> None:
    import os

    os.environ["CUDA_VISIBLE_DEVICES"] = ""  # the notebook takes its CPU paths
    from IPython.core.interactiveshell import InteractiveShell

    from tile_lab.emulator import runtime

    launches: dict[str, Launch] = {}
    real = runtime._launch

    def recording(kernel, grid, args, **kw):
        fn = _pyfunc(kernel)
        if fn is not None and fn.__name__ not in launches:
            mod = fn.__module__ or ""  # the function's, not the kernel object's class's
            from_module = mod != "__main__" and getattr(
                sys.modules.get(mod), fn.__name__, None) is kernel
            try:
                launches[fn.__name__] = Launch(
                    notebook.stem, fn.__name__, tuple(int(g) for g in grid), _host(tuple(args)),
                    module=mod if from_module else None,
                    source="" if from_module else inspect.getsource(fn),
                    first_line=inspect.getsourcelines(fn)[1],
                    needs={} if from_module else _needs(fn, {fn.__name__}))
                out.write_bytes(pickle.dumps(list(launches.values())))
            except Exception as exc:  # a kernel we cannot record: say so, keep going
                print(f"cannot record {fn.__name__}: {exc}", file=sys.stderr)
        return real(kernel, grid, args, **kw)

    runtime._launch = recording
    out.write_bytes(pickle.dumps([]))
    shell = InteractiveShell.instance()
    cells = code_cells(notebook.read_text())
    os.chdir(ROOT / "notebooks")  # notebooks read notebooks/data relative to themselves
    for source in cells:
        shell.run_cell(source, silent=True)


def code_cells(text: str) -> list[str]:
    """The code cells of a jupytext percent-format source (``# %%`` starts a cell,
    ``# %% [markdown]`` a markdown one; magics are written as they are): no jupytext needed."""
    cells: list[tuple[bool, list[str]]] = []
    for line in text.splitlines():
        if line.startswith("# %%"):
            cells.append(("[markdown]" not in line, []))
        elif cells:
            cells[-1][1].append(line)
    return ["\n".join(lines).strip("\n") for is_code, lines in cells if is_code]


def rebuild(launch: Launch) -> Any:
    """The kernel of a record, defined again in a fresh namespace."""
    import importlib

    if launch.module is not None:
        return getattr(importlib.import_module(launch.module), launch.kernel)
    ns: dict[str, Any] = {"__name__": f"tutorial_{launch.notebook}"}
    _define(ns, launch.needs, launch.notebook)
    _exec_source(ns, launch.source, f"<tutorial {launch.notebook}: {launch.kernel}>",
                 launch.first_line)
    return ns[launch.kernel]


def _define(ns: dict[str, Any], needs: dict[str, tuple], notebook: str) -> None:
    import importlib

    for name, how in needs.items():
        if how[0] == "module":
            ns[name] = importlib.import_module(how[1])
        elif how[0] == "import":
            ns[name] = getattr(importlib.import_module(how[1]), how[2])
        elif how[0] == "value":
            ns[name] = how[1]
        elif how[0] == "source":
            _define(ns, how[2], notebook)
            _exec_source(ns, how[1], f"<tutorial {notebook}: {name}>")


def _exec_source(ns: dict[str, Any], source: str, filename: str, first_line: int = 1) -> None:
    import textwrap

    text = "\n" * (first_line - 1) + textwrap.dedent(source)  # lines as in the cell
    lines = text.splitlines(keepends=True)
    linecache.cache[filename] = (len(text), None, lines, filename)  # cuTile reads it back
    exec(compile(text, filename, "exec"), ns)


if __name__ == "__main__":  # python bench/tutorial_launches.py NOTEBOOK.py OUT.pkl
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import tutorial_launches  # records must pickle as tutorial_launches.Launch, not __main__

    tutorial_launches.record(Path(sys.argv[1]), Path(sys.argv[2]))
