"""tile_lab.compile.pipeline's scheduling of the disassemblies: ``OnFirstRead``, the Future
whose work waits for its first reader (the SASS of a compile outside an IPython session)."""

from __future__ import annotations

import threading
from concurrent.futures import CancelledError

import pytest

from tile_lab.compile.pipeline import OnFirstRead


def test_the_work_runs_once_on_the_first_read_and_every_reader_gets_its_value():
    calls = []
    future = OnFirstRead(lambda: calls.append(threading.current_thread().name) or 42)
    assert not future.done() and calls == []
    assert future.result() == 42 and future.result() == 42
    assert future.exception() is None and future.done()
    assert calls == ["MainThread"]


def test_an_error_reaches_every_reader_and_the_work_is_not_run_again():
    calls = []

    def failing():
        calls.append(1)
        raise RuntimeError("nvdisasm crashed")

    future = OnFirstRead(failing)
    for _ in range(2):
        with pytest.raises(RuntimeError, match="nvdisasm crashed"):
            future.result()
    assert isinstance(future.exception(), RuntimeError) and calls == [1]


def test_a_keyboard_interrupt_leaves_the_work_for_the_next_read():
    calls = []

    def interrupted_once():
        calls.append(1)
        if len(calls) == 1:
            raise KeyboardInterrupt
        return "sass"

    future = OnFirstRead(interrupted_once)
    with pytest.raises(KeyboardInterrupt):
        future.result()
    assert not future.done()
    assert future.result() == "sass" and calls == [1, 1]


def test_cancelled_before_any_read_it_never_runs():
    calls = []
    future = OnFirstRead(lambda: calls.append(1))
    assert future.cancel()
    with pytest.raises(CancelledError):
        future.result()
    assert calls == []


def test_readers_meanwhile_wait_for_the_one_run():
    started, release, calls = threading.Event(), threading.Event(), []

    def slow():
        calls.append(1)
        started.set()
        assert release.wait(timeout=60)
        return "done"

    future = OnFirstRead(slow)
    results = []
    first = threading.Thread(target=lambda: results.append(future.result()))
    first.start()
    assert started.wait(timeout=60)
    second = threading.Thread(target=lambda: results.append(future.result()))
    second.start()
    second.join(timeout=0.2)
    assert second.is_alive()  # waiting on the run in the first reader
    release.set()
    first.join(timeout=60)
    second.join(timeout=60)
    assert results == ["done", "done"] and calls == [1]
