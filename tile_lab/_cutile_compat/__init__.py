"""The one place tile_lab touches cuTile's private internals.

cuTile's public API compiles kernels for launch or exports cubins; it does not hand out
the intermediate stages (cuTile IR with source locations, Tile IR bytecode) that the
inspect view shows. Those come from ``cuda.tile._compile.compile_tile`` and friends,
which may change in any cuTile release, so:

* every private name is imported here (and in ``device.py`` beside it: the device side the
  emulator replaces; ``tileiras_choice.py``: which tileiras build cuTile's compiles run;
  ``tile_errors.py``: where a cuTile error points) and
  nowhere else in tile_lab;
* the supported cuTile range is pinned (``SUPPORTED``) and anything outside it fails
  loudly with the installed version in the message;
* ``tests/test_cutile_compat.py`` exercises each entry point, so an upgrade that breaks
  one fails there first.
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib.metadata
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from types import FunctionType
from typing import Any

from ..errors import ToolchainError

# cuTile versions whose internals this module was written against: (major, minor).
SUPPORTED = ((1, 7),)


def installed_version() -> str:
    """The installed cuda-tile version, or "missing"."""
    try:
        return importlib.metadata.version("cuda-tile")
    except importlib.metadata.PackageNotFoundError:
        try:
            from cuda.tile._version import __version__
            return str(__version__)
        except ImportError:
            return "missing"


def version_problem(version: str | None = None) -> str | None:
    """Why the installed (or given) cuTile version is unusable, or None when it is fine."""
    v = installed_version() if version is None else version
    if v == "missing":
        return "cuda-tile is not installed"
    try:
        major, minor = (int(x) for x in v.split(".")[:2])
    except ValueError:
        return f"cannot read the cuda-tile version {v!r}"
    if (major, minor) not in SUPPORTED:
        wanted = ", ".join(f"{a}.{b}.x" for a, b in SUPPORTED)
        return (f"tile_lab supports cuda-tile {wanted}, but cuda-tile {v} is installed "
                "(tile_lab uses cuTile internals that change between releases)")
    return None


def require_supported_cutile() -> None:
    """Raise ToolchainError unless the installed cuTile is in the supported range."""
    problem = version_problem()
    if problem:
        raise ToolchainError(problem, hint="pip install 'cuda-tile[tileiras]>=1.7,<1.8'")


# -- kernels and their parameters ------------------------------------------------------

def is_kernel(obj: Any) -> bool:
    """True for a ``@ct.kernel`` object."""
    import cuda.tile as ct
    return isinstance(obj, ct.kernel)


def python_function(kernel: Any) -> FunctionType:
    """The Python function a ``@ct.kernel`` wraps."""
    return kernel._annotated_function.pyfunc


@dataclass(frozen=True)
class ParamInfo:
    """What the kernel's annotations say about one parameter."""

    name: str
    constant: bool  # ct.Constant[...]
    annotation: Any  # the raw annotation (inspect.Parameter.empty when absent)
    is_tuple: bool = False
    array_index_dtype: Any = None  # from ct.ArrayAnnotation, when given
    static_shape_dims: tuple[int, ...] = ()
    static_stride_dims: tuple[int, ...] = ()
    scalar_dtype: Any = None  # from ct.ScalarAnnotation, when given
    # a tuple annotation's items (tuple[int, ct.Constant[int]]), or its one item type for
    # every position (tuple[ct.Constant[int], ...]); None when not given
    items: tuple[ParamInfo, ...] | None = None
    each: ParamInfo | None = None
    # a list parameter's ct.ListAnnotation(element=...): what it says of every array in it
    element: ParamInfo | None = None


def kernel_parameters(kernel: Any) -> list[ParamInfo]:
    """Parameters of a kernel, in order, as cuTile's annotation parser sees them."""
    ann_func = kernel._annotated_function
    return [_param_info(name, p.annotation, node)
            for (name, p), node in zip(ann_func.pysig.parameters.items(),
                                       ann_func.parameter_annotations, strict=True)]


def _param_info(name: str, annotation: Any, node: Any) -> ParamInfo:
    from cuda.tile._annotated_function import HomogeneousTupleNode, LeafAnnotationNode

    if isinstance(node, LeafAnnotationNode):
        arr = node.array
        # ct.ListAnnotation(element=...): cuTile has normalised element to an ArrayAnnotation
        element = None if node.list is None else ParamInfo(
            name=f"{name}[i]", constant=False, annotation=None,
            **_array_annotation_fields(node.list.element))
        return ParamInfo(
            name=name, constant=node.constant, annotation=annotation,
            **(_array_annotation_fields(arr) if arr is not None else {}),
            scalar_dtype=node.scalar.dtype if node.scalar is not None else None,
            element=element)
    if isinstance(node, HomogeneousTupleNode):
        return ParamInfo(name=name, constant=False, annotation=annotation, is_tuple=True,
                         each=_param_info(f"{name}[i]", None, node.each))
    return ParamInfo(name=name, constant=False, annotation=annotation, is_tuple=True,
                     items=tuple(_param_info(f"{name}[{i}]", None, item)
                                 for i, item in enumerate(node.items)))


def _array_annotation_fields(arr: Any) -> dict[str, Any]:
    return {"array_index_dtype": arr.index_dtype,
            "static_shape_dims": tuple(arr.static_shape_dims),
            "static_stride_dims": tuple(arr.static_stride_dims)}


# -- compiler options (kernel hints) ---------------------------------------------------

def hint_names() -> tuple[str, ...]:
    """Names accepted as kernel hints (``@ct.kernel(num_ctas=...)`` keywords)."""
    from cuda.tile._compiler_options import CompilerOptions
    return tuple(f.name for f in dataclasses.fields(CompilerOptions))


def compiler_options(kernel: Any, hints: dict[str, Any] | None = None) -> Any:
    """The kernel's own compiler options with ``hints`` applied on top.

    Raises ValueError for an out-of-range hint and TypeError for an unknown one.
    """
    base = kernel._compiler_options
    if not hints:
        return base
    return dataclasses.replace(base, **hints)


def options_as_dict(options: Any) -> dict[str, Any]:
    """Compiler options that differ from cuTile's defaults, as a plain dict."""
    from cuda.tile._compiler_options import CompilerOptions
    default = CompilerOptions()
    return {f.name: getattr(options, f.name) for f in dataclasses.fields(CompilerOptions)
            if getattr(options, f.name) != getattr(default, f.name)}


@dataclass(frozen=True)
class KernelFacts:
    """What tile_lab compiles a ``@ct.kernel`` from, gathered from cuTile in one call
    (:func:`kernel_facts`): its Python function, its parameters as cuTile's annotation
    parser sees them, its compiler options with the hints applied, and those options that
    differ from cuTile's defaults as plain data (an int as it is, a ``ct.ByTarget`` as its
    repr: what JSON holds, an Inspection's ``hints``; made when read, not per signature)."""

    function: FunctionType
    parameters: tuple[ParamInfo, ...]
    options: Any

    @property
    def name(self) -> str:
        return self.function.__name__

    @property
    def changed_options(self) -> dict[str, Any]:
        return {name: value if isinstance(value, (int, float, str, bool, type(None)))
                else repr(value) for name, value in options_as_dict(self.options).items()}


def kernel_facts(kernel: Any, hints: dict[str, Any] | None = None) -> KernelFacts | None:
    """The :class:`KernelFacts` of ``kernel`` with ``hints`` applied; None when it is no
    ``@ct.kernel``. Raises what :func:`compiler_options` raises for a bad hint."""
    if not is_kernel(kernel):
        return None
    return KernelFacts(python_function(kernel), tuple(kernel_parameters(kernel)),
                       compiler_options(kernel, hints))


def opt_level(options: Any, arch: str) -> int:
    """The ``-O`` level tileiras gets for ``arch`` (what cuTile itself would pass)."""
    return options.opt_level_for_target(arch)


# -- the front end: Python -> cuTile IR -> Tile IR bytecode ----------------------------

@dataclass(frozen=True)
class FrontendResult:
    cutile_ir: str  # cuTile IR text, one op per line, each ending in "// file:line:col"
    bytecode: bytes  # Tile IR bytecode (input of tileiras / tileirdisasm)
    symbol: str  # the mangled kernel symbol in the bytecode and cubin


def compile_frontend(kernel: Any, signature: Any, arch: str, options: Any) -> FrontendResult:
    """Run cuTile's front end for one signature, stopping before tileiras.

    ``return_cubin=False`` keeps cuTile from running tileiras (tile_lab runs it itself,
    with line info and remarks); it also never touches cuTile's disk cache.
    """
    from cuda.tile._compile import compile_tile

    result = compile_tile(kernel._annotated_function, [signature], sm_arch=arch,
                          compiler_options=options, return_final_ir=True,
                          return_bytecode=True, return_cubin=False)
    [block] = result.final_ir
    [sig] = result.kernel_signatures
    return FrontendResult(cutile_ir=block.to_string(include_loc=True),
                          bytecode=bytes(result.bytecode), symbol=sig.symbol)


def check_frontend(kernel: Any, signature: Any) -> None:
    """Parse and type-check ``kernel`` for one signature with cuTile's front end, stopping
    before Tile IR bytecode: raises cuTile's TileError for anything it rejects. Needs no
    tileiras and no GPU (the bytecode version is cuTile's newest rather than one asked of
    tileiras, and no target arch is checked)."""
    from cuda.tile._compile import _all_bytecode_versions, compile_tile

    compile_tile(kernel._annotated_function, [signature], sm_arch=None,
                 bytecode_version=max(_all_bytecode_versions()), return_final_ir=False,
                 return_bytecode=False, return_cubin=False)


def compile_cubin_like_cutile(kernel: Any, signature: Any, arch: str, options: Any) -> bytes:
    """cuTile's own end-to-end compile (front end + its tileiras call), for benchmarks."""
    from cuda.tile._compile import compile_tile

    result = compile_tile(kernel._annotated_function, [signature], sm_arch=arch,
                          compiler_options=options, return_cubin=True)
    return bytes(result.cubin)


@contextlib.contextmanager
def use_cache_dir(path: str) -> Iterator[None]:
    """Point cuTile's disk cubin cache at ``path`` for the duration (a cluster compile task
    collects what it compiled from there and ships it to the tuning process)."""
    from cuda.tile._cext import default_tile_context

    old = default_tile_context.config.cache_dir
    default_tile_context.config.cache_dir = path
    try:
        yield
    finally:
        default_tile_context.config.cache_dir = old


def cache_rows(cache_dir: str) -> Iterator[tuple[str, bytes, dict[str, Any] | None]]:
    """Every row of a cuTile disk cache: (key, cubin, metadata), keys as cuTile computes them."""
    from cutile_cache._cache import cache_entries, cache_lookup

    for entry in cache_entries(cache_dir):
        blob = cache_lookup(cache_dir, entry.key)
        if blob is not None:
            yield entry.key, bytes(blob), entry.metadata.to_dict()


def store_cache_rows(rows: Iterable[tuple[str, bytes, dict[str, Any] | None]]) -> int:
    """Write cache rows into this process's cuTile disk cache (where ``ct.launch`` looks);
    returns how many were written. A process with the disk cache disabled stores nothing."""
    from cuda.tile._cext import default_tile_context
    from cutile_cache._cache import cache_store

    cache_dir = default_tile_context.config.cache_dir
    if cache_dir is None:
        return 0
    count = 0
    for key, blob, metadata in rows:
        cache_store(cache_dir, key, blob, metadata)
        count += 1
    return count


def current_cache_dir() -> str | None:
    from cuda.tile._cext import default_tile_context

    return default_tile_context.config.cache_dir


def warm_compiler_queries() -> None:
    """Make cuTile run, now, the two tileiras queries its first compile in a process makes (the
    highest bytecode version tileiras reads, and its version string; both cached for the
    process). A tuner calls this while its workers compile, so its first measurement does not
    wait for them. A missing tileiras is not an error here: the compile reports it."""
    from cuda.tile._compile import (
        _get_compiler_version_string,
        _get_max_supported_bytecode_version,
        default_tile_context,
    )
    from cuda.tile._exception import TileCompilerError

    try:
        _get_max_supported_bytecode_version(default_tile_context.config.temp_dir)
        _get_compiler_version_string()
    except (TileCompilerError, FileNotFoundError, OSError):
        pass


def empty_module_bytecode() -> bytes:
    """Tile IR bytecode of a module with no functions (oldest bytecode version, which
    every tileiras 13.x reads): the doctor's smoke test for tileiras, the same probe
    cuTile runs to find tileiras' bytecode version."""
    import cuda.tile._bytecode as bc
    from cuda.tile._bytecode.version import BytecodeVersion

    buf = bytearray()
    with bc.write_bytecode(num_functions=0, buf=buf, version=BytecodeVersion.V_13_1):
        pass
    return bytes(buf)


# -- errors ----------------------------------------------------------------------------

def is_tile_error(exc: BaseException) -> bool:
    """True for cuTile's compile-time errors (syntax, typing, tileiras, ...)."""
    from cuda.tile._exception import TileError
    return isinstance(exc, TileError)


def is_kernel_rejection(exc: BaseException) -> bool:
    """True for a cuTile error that rejects the kernel itself (typing, syntax, values,
    static evaluation and assertions, unsupported calls and features). Not an InternalError
    (e.g. for a kernel whose source cuTile cannot read), which says nothing about the kernel."""
    from cuda.tile._exception import InternalError, TileError

    return isinstance(exc, TileError) and not isinstance(exc, InternalError)


# The TypeErrors cuTile 1.7's launcher raises from its argument checks, which it runs before
# it looks at any array's memory (and so before it needs a CUDA driver).
_LAUNCH_ARGUMENT_ERRORS = (
    "Kernel expects ", "Received a tuple of length ", "Received a non-tuple argument",
    "Invalid kernel argument #", "Invalid item #", "Constant annotation cannot be combined",
    "Empty lists are not supported", "Expected list items to be arrays",
    "Argument nesting exceeds", "a CUDA stream cannot be passed")
_DRIVER: list[bool] = []


def _driver_loads() -> bool:
    if not _DRIVER:
        try:
            import cuda.tile._load_libcuda  # noqa: F401 (what cuTile's launcher loads)
            _DRIVER.append(True)
        except OSError:
            _DRIVER.append(False)
    return _DRIVER[0]


def check_launch_arguments(kernel: Any, args: Iterable[Any]) -> None:
    """Run the checks ``ct.launch`` makes of its arguments before compiling (count, tuple
    arity and nesting, ``Constant`` values, unsupported objects) and raise the TypeError
    cuTile raises there, unchanged. Host arrays (NumPy, torch CPU tensors) are the
    emulator's own arguments: with a CUDA driver, where cuTile would go on to reject their
    host memory, these arguments are not checked."""
    from cuda.tile._cext import CallingConvention, get_parameter_constraints_from_pyargs

    args = tuple(args)
    if _driver_loads() and any(_host_array(a) for a in args):
        return
    try:
        # v2: the convention that accepts tuple parameters (the launcher picks it for them)
        get_parameter_constraints_from_pyargs(kernel, args, CallingConvention.cutile_python_v2())
    except TypeError as exc:
        if str(exc).startswith(_LAUNCH_ARGUMENT_ERRORS):
            raise
    except Exception:
        return


def is_parameter_error(exc: BaseException) -> bool:
    """True for the TypeError cuTile's compile raises when a parameter's annotation does not
    fit it (``Constant`` combined with ``ScalarInt64``, ``ArrayAnnotation`` on a scalar...),
    which ``ct.launch`` raises as it is."""
    if not isinstance(exc, TypeError):
        return False
    import cuda.tile._annotated_function as annotated
    import cuda.tile._compile as compile_module

    ours = {compile_module.__file__, annotated.__file__}
    tb = exc.__traceback__
    while tb is not None:
        code = tb.tb_frame.f_code
        if code.co_filename in ours and code.co_name in ("_create_parameter", "validate"):
            return True
        tb = tb.tb_next
    return False


def native_dtype(value: Any) -> Any:
    """The cuTile dtype a foreign dtype object stands for in a kernel (``torch.float32`` ->
    ``ct.float32``, as cuTile reads it), or None for anything else."""
    from cuda.tile._cext import foreign_dtype_object_to_native

    try:
        return foreign_dtype_object_to_native(value)
    except Exception:
        return None


def _host_array(value: Any) -> bool:
    if isinstance(value, (tuple, list)):
        return any(_host_array(v) for v in value)
    device = getattr(value, "device", None)
    if getattr(device, "type", None) == "cuda":
        return False  # asked first: torch's CUDA float8 tensors raise KeyError, not
        # AttributeError, for __cuda_array_interface__ (so hasattr does not answer)
    if hasattr(value, "__cuda_array_interface__"):
        return False
    return hasattr(value, "__array_interface__") or hasattr(value, "__dlpack__")


@contextlib.contextmanager
def signatures_without_driver(constraints_of: Any) -> Iterator[None]:
    """Make ``ct.compilation.KernelSignature.from_kernel_args`` work without a CUDA driver.

    cuTile derives the parameter constraints of example arguments in its C extension, which
    loads libcuda to look at the arrays' memory; on a CPU-only machine that fails with
    OSError before any compile (tileiras itself needs no GPU). Inside this block such a
    call gets its constraints from ``constraints_of(kernel, args, calling_convention)``
    instead (tile_lab's
    signature builder) and builds the signature as cuTile does (calling convention and
    symbol as asked; the mangled kernel name by default). cuTile's own argument errors
    (TypeError) still come from cuTile."""
    from cuda.tile.compilation import KernelSignature

    original = KernelSignature.__dict__["from_kernel_args"]

    def from_kernel_args(kernel: Any, kernel_args: Any, calling_convention: Any, *,
                         symbol: str | None = None) -> Any:
        try:
            return original.__func__(kernel, kernel_args, calling_convention, symbol=symbol)
        except OSError:  # no CUDA driver: cuTile's checks passed, its device query did not
            pass
        sig = KernelSignature(constraints_of(kernel, kernel_args, calling_convention),
                              calling_convention, symbol)
        return sig if symbol is not None else sig.with_mangled_symbol(
            python_function(kernel).__name__)

    KernelSignature.from_kernel_args = staticmethod(from_kernel_args)
    try:
        yield
    finally:
        KernelSignature.from_kernel_args = original


# -- the local GPU (through cuTile's driver bindings; no CuPy needed) ------------------

def gpu_compute_capability(device: int = 0) -> tuple[int, int] | None:
    """(major, minor) of GPU ``device``, or None without a GPU or a driver."""
    try:
        from cuda.tile._cext import get_compute_capability
        major, minor = get_compute_capability(device)
        return int(major), int(minor)
    except Exception:  # no libcuda, no device, driver error: all mean "no usable GPU"
        return None


def driver_cuda_version() -> tuple[int, int] | None:
    """The CUDA version the installed driver supports, e.g. (13, 0); None without one."""
    try:
        from cuda.tile._cext import get_driver_version
        v = get_driver_version()
    except Exception:  # no libcuda: no driver
        return None
    if isinstance(v, tuple) and len(v) >= 2:
        return int(v[0]), int(v[1])
    if isinstance(v, int):  # cuDriverGetVersion style: 13000 -> 13.0
        return v // 1000, (v % 1000) // 10
    return None


# the locations of cuTile's errors (their Loc objects), in tile_errors.py beside this
from .tile_errors import (  # noqa: E402, F401 (re-exported: compat.tile_error_message etc.)
    locate_tile_error,
    parse_tileiras_stderr,
    tile_error_call_sites,
    tile_error_location,
    tile_error_message,
)

# cuTile's compiler imports torch (2.5-3 s of CPU, inside C code that swallowed a Ctrl-C) on
# its first dtype question; torch_deferral.py answers without torch until torch is imported:
# installed before any compile in this process
from .torch_deferral import defer_torch_import  # noqa: E402

defer_torch_import()
