"""Finding and running tools, their outputs kept on disk, versions, and the doctor's trap
detection."""

from __future__ import annotations

import json
import multiprocessing
import os
import shutil
import stat
import subprocess
from pathlib import Path

import pytest

from tile_lab.compile import toolchain
from tile_lab.errors import ToolchainError

# the tools tile_lab's dependencies install (cuobjdump is optional)
TOOLS = ("tileiras", "tileirdisasm", "ptxas", "nvdisasm", "nvcc")


@pytest.mark.parametrize("name", TOOLS)
def test_find_tool_finds_the_pip_tools(name):
    path = toolchain.find_tool(name)
    assert path.name == name and os.access(path, os.X_OK)


def test_missing_tool_names_its_pip_package(monkeypatch):
    monkeypatch.setattr(toolchain, "_pip_bin_dirs", lambda: [])
    monkeypatch.setenv("PATH", "/nonexistent")
    toolchain.find_tool.cache_clear()
    try:
        with pytest.raises(ToolchainError) as info:
            toolchain.find_tool("nvdisasm")
        assert "nvdisasm was not found" in info.value.message
        assert "nvidia-cuda-nvdisasm" in info.value.hint
        with pytest.raises(ToolchainError, match="unknown tool"):
            toolchain.find_tool("gcc")
    finally:
        toolchain.find_tool.cache_clear()


def test_run_tool_strips_cuda_home(monkeypatch):
    # `env` stands in for a CUDA tool: it prints the environment it was started with
    monkeypatch.setattr(toolchain, "find_tool", lambda name: Path(shutil.which("env")))
    monkeypatch.setenv("CUDA_HOME", "/opt/old-cuda")
    monkeypatch.setenv("CUDA_PATH", "/opt/old-cuda")
    monkeypatch.setenv("TILE_LAB_MARKER", "kept")
    out = toolchain.run_tool("tileiras", []).stdout.decode()
    assert "TILE_LAB_MARKER=kept" in out
    assert "CUDA_HOME" not in out and "CUDA_PATH" not in out


def test_run_tool_timeout_raises():
    with pytest.raises(ToolchainError, match="did not finish"):
        toolchain.run_tool("nvdisasm", ["--help"], timeout=1e-6)


def test_versions():
    versions = toolchain.tool_versions()
    assert versions["cuda.tile"].startswith("1.7")
    assert versions["tileiras"].startswith("13.")
    assert toolchain.parse_cuda_tool_version(
        "Cuda compilation tools, release 12.4, V12.4.131") == "12.4.131"


def test_tileiras_gpu_names():
    names = toolchain.tileiras_gpu_names()
    assert {"sm_80", "sm_90", "sm_100"} <= set(names)
    assert "sm_75" not in names


def _fake_toolkit(root: Path, version: str, *, with_json: bool) -> Path:
    (root / "bin").mkdir(parents=True)
    if with_json:
        (root / "version.json").write_text(json.dumps({"cuda": {"version": version}}))
    else:
        nvcc = root / "bin" / "nvcc"
        nvcc.write_text("#!/bin/sh\necho 'Cuda compilation tools, release "
                        f"{version.rsplit('.', 1)[0]}, V{version}'\n")
        nvcc.chmod(nvcc.stat().st_mode | stat.S_IXUSR)
    return root


@pytest.mark.parametrize("with_json", [True, False])
def test_cuda_home_version(tmp_path, with_json):
    home = _fake_toolkit(tmp_path / "cuda", "12.4.1", with_json=with_json)
    assert toolchain.cuda_home_version(home) == "12.4.1"


# -- the tools' outputs on disk (run_cached), with a fake tool run: runs are counted through
# -- the runner, never by time

@pytest.fixture
def tool(tmp_path, monkeypatch):
    """A fake "nvdisasm": writes ``out.bin`` (its input reversed) and prints the input; an
    input starting with b"bad" fails. Returns the list of runs and the tool's file."""
    exe = tmp_path / "bin" / "nvdisasm"
    exe.parent.mkdir()
    exe.write_bytes(b"version 1")
    runs: list[list[str]] = []

    def fake_run_tool(name, args, *, timeout=None, cwd=None, input=None):
        runs.append(list(args))
        data = (Path(cwd) / args[0]).read_bytes()
        if data.startswith(b"bad"):
            return subprocess.CompletedProcess(args, 2, b"", b"error: bad input in " + data)
        (Path(cwd) / "out.bin").write_bytes(data[::-1])
        return subprocess.CompletedProcess(args, 0, b"stdout:" + data, b"warning: none")

    monkeypatch.setattr(toolchain, "run_tool", fake_run_tool)
    monkeypatch.setattr(toolchain, "find_tool", lambda name: exe)
    monkeypatch.setenv("TILE_LAB_CACHE_DIR", str(tmp_path / "cache"))
    return runs, exe


def disasm(data: bytes, *args: str) -> toolchain.ToolRun:
    return toolchain.run_cached("nvdisasm", ["in.bin", *args], inputs={"in.bin": data},
                                outputs=("out.bin",))


def entries(where: Path) -> list[Path]:
    return sorted(p for p in where.glob("??/*") if not p.name.startswith(".tmp-"))


def test_a_hit_gives_the_same_bytes_without_running_the_tool(tool, tmp_path):
    runs, _ = tool
    first = disasm(b"cubin bytes")
    assert len(runs) == 1 and not first.cached
    assert first.files == {"out.bin": b"setyb nibuc"} and first.stdout == b"stdout:cubin bytes"
    again = disasm(b"cubin bytes")
    assert len(runs) == 1 and again.cached
    assert (again.returncode, again.stdout, again.stderr, dict(again.files), again.workdir) == \
        (0, first.stdout, first.stderr, dict(first.files), first.workdir)
    assert len(entries(tmp_path / "cache")) == 1


def test_changed_input_args_or_tool_is_a_miss(tool):
    runs, exe = tool
    disasm(b"one")
    disasm(b"two")  # another input
    disasm(b"one", "-g")  # other arguments
    assert len(runs) == 3
    exe.write_bytes(b"version 22")  # a reinstalled tool: other size and time
    disasm(b"one")
    assert len(runs) == 4
    disasm(b"one")
    disasm(b"two")
    assert len(runs) == 5  # "two" ran with the old tool only


def test_extra_is_part_of_the_key_and_none_is_never_cached(tool, tmp_path):
    runs, _ = tool
    run = lambda extra: toolchain.run_cached(  # noqa: E731
        "nvdisasm", ["in.bin"], inputs={"in.bin": b"x"}, extra=extra)
    run(b"header v1")
    run(b"header v1")
    run(b"header v2")
    assert len(runs) == 2
    run(None)
    run(None)
    assert len(runs) == 4


def test_a_failure_is_not_cached_and_fails_again_with_its_message(tool, tmp_path):
    runs, _ = tool
    for n in (1, 2):
        failed = disasm(b"bad bytes")
        assert failed.returncode == 2 and failed.stderr == b"error: bad input in bad bytes"
        assert not failed.files and len(runs) == n
    assert entries(tmp_path / "cache") == []


@pytest.mark.parametrize("damage", ["truncate", "flip", "empty", "foreign"])
def test_a_corrupt_entry_is_a_miss_and_is_made_again(tool, tmp_path, damage):
    runs, _ = tool
    good = disasm(b"cubin")
    [entry] = entries(tmp_path / "cache")
    data = entry.read_bytes()
    entry.write_bytes({"truncate": data[:len(data) // 2],
                       "flip": data[:40] + bytes([data[40] ^ 1]) + data[41:],
                       "empty": b"",
                       "foreign": b"not an entry at all" * 3}[damage])
    again = disasm(b"cubin")
    assert len(runs) == 2 and not again.cached and again.files == good.files
    assert disasm(b"cubin").cached and len(runs) == 2  # made again, whole


def _write_many(where: str, digest: str, fill: bytes, n: int) -> None:
    for _ in range(n):
        toolchain._write(Path(where), digest, toolchain.ToolRun(
            0, fill * 300_000, b"", {"out.bin": fill * 1000}, "/w"))


def test_concurrent_writers_leave_a_whole_entry(tmp_path):
    where, digest = tmp_path / "cache", "ab" + "0" * 62
    ctx = multiprocessing.get_context("fork")
    writers = [ctx.Process(target=_write_many, args=(str(where), digest, fill, 30))
               for fill in (b"a", b"b")]
    for w in writers:
        w.start()
    seen = set()
    while any(w.is_alive() for w in writers):
        hit = toolchain._read(where, digest)
        if hit is not None:  # never a mix of the two writers, never cut short
            assert hit.stdout in (b"a" * 300_000, b"b" * 300_000)
            assert hit.files["out.bin"] == hit.stdout[:1000]
            seen.add(hit.stdout[:1])
    for w in writers:
        w.join(timeout=60)
        assert w.exitcode == 0
    final = toolchain._read(where, digest)
    assert final is not None and final.stdout[:1] in (b"a", b"b")
    assert [p.name for p in (where / "ab").iterdir()] == [digest]  # no temporary left


def test_eviction_keeps_the_bound_and_drops_the_least_recently_used(tool, tmp_path,
                                                                      monkeypatch):
    runs, _ = tool
    where = tmp_path / "cache"
    inputs = [b"%d" % i + b"x" * 4999 for i in range(7)]

    def entry(data: bytes) -> Path:
        digest = toolchain.cache_key(["nvdisasm"], ["in.bin"], {"in.bin": data}, ("out.bin",))
        return where / digest[:2] / digest

    for i, data in enumerate(inputs[:6]):
        disasm(data)
        os.utime(entry(data), ns=(i * 10**9, i * 10**9))  # used in this order, long ago
    size = entry(inputs[0]).stat().st_size
    monkeypatch.setenv("TILE_LAB_CACHE_MAX_MB", str(3.5 * size / 2**20))  # room for 3
    assert disasm(inputs[0]).cached  # used now: the most recent
    disasm(inputs[6])  # a new entry: the bound is kept from here
    kept = entries(where)
    assert sorted(kept) == sorted(entry(inputs[i]) for i in (0, 5, 6))
    assert sum(p.stat().st_size for p in kept) <= 3.5 * size
    n = len(runs)
    disasm(inputs[1])
    assert len(runs) == n + 1  # it went


def test_the_off_switch_and_a_bad_value(tool, tmp_path, monkeypatch):
    runs, _ = tool
    monkeypatch.setenv("TILE_LAB_CACHE_DIR", "off")
    assert toolchain.cache_directory() is None
    disasm(b"cubin")
    disasm(b"cubin")
    assert len(runs) == 2 and not (tmp_path / "cache").exists()
    monkeypatch.setenv("TILE_LAB_CACHE_DIR", "relative/dir")
    with pytest.raises(ToolchainError, match=r"TILE_LAB_CACHE_DIR='relative/dir': use off"):
        disasm(b"cubin")


def test_the_default_folder_is_the_users_cache(monkeypatch, tmp_path):
    monkeypatch.delenv("TILE_LAB_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert toolchain.cache_directory() == tmp_path / "tile_lab" / "tools"


def test_an_unwritable_cache_only_costs_time(tool, tmp_path, monkeypatch):
    runs, _ = tool
    blocker = tmp_path / "file"
    blocker.write_text("a file where the folder should be")
    monkeypatch.setenv("TILE_LAB_CACHE_DIR", str(blocker / "cache"))
    assert disasm(b"cubin").files == {"out.bin": b"nibuc"}
    assert disasm(b"cubin").files == {"out.bin": b"nibuc"} and len(runs) == 2
