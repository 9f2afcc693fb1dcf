"""Where a cuTile error points: the message, the kernel line and the call sites of cuTile's
``TileError`` objects (their private ``Loc``), and tileiras' error text.

Part of :mod:`tile_lab._cutile_compat`, the one place that touches cuTile's private API.
"""

from __future__ import annotations


def tile_error_message(exc: BaseException) -> str:
    return str(getattr(exc, "message", exc))


def tile_error_location(exc: BaseException) -> tuple[str, int, int | None] | None:
    """(filename, 1-based line, 0-based column) of a cuTile error, or None when unknown.

    For an error inside an inlined helper, the innermost location is returned.
    """
    loc = getattr(exc, "loc", None)
    if loc is None or loc.is_unknown() or not loc.filename or not loc.line:
        return None
    return loc.filename, int(loc.line), (int(loc.col) if loc.col is not None else None)


def locate_tile_error(exc: BaseException, filename: str, line: int, col: int,
                      function: str) -> None:
    """Give a cuTile error raised without a location (the emulator's ``ct.StaticException``)
    the kernel line it came from, so its text names that line as cuTile's own errors do."""
    from cuda.tile._exception import FunctionDesc, Loc

    if getattr(exc, "loc", None) is None or exc.loc.is_unknown():
        exc.loc = Loc(line=line, col=col, filename=filename,
                      function=FunctionDesc(function, filename, line, col + 1))


def tile_error_call_sites(exc: BaseException) -> list[tuple[str, int, int | None]]:
    """Every location of a cuTile error, innermost first, then its call sites."""
    out = []
    loc = getattr(exc, "loc", None)
    while loc is not None and not loc.is_unknown():
        if loc.filename and loc.line:
            out.append((loc.filename, int(loc.line),
                        int(loc.col) if loc.col is not None else None))
        loc = loc.call_site
    return out


def parse_tileiras_stderr(stderr: str) -> tuple[str, tuple[str, int, int | None] | None]:
    """tileiras' error text, cleaned, and the first source location it names."""
    from cuda.tile._compile import _parse_tileir_stderr

    message, loc = _parse_tileir_stderr(stderr)
    if loc.is_unknown() or not loc.filename or not loc.line:
        return message, None
    return message, (loc.filename, int(loc.line), int(loc.col) if loc.col else None)
