"""Jupyter's stop button in a real kernel (jupyter_client + ipykernel): ONE interrupt stops
an emulated block that never ends, within 2 s, with a message naming the block and the cell
line it was on; the kernel survives and the arrays keep the completed blocks' writes."""

from __future__ import annotations

import time

import pytest

jupyter_client = pytest.importorskip("jupyter_client")
pytest.importorskip("ipykernel")
from real_kernel import shown, started_kernel  # noqa: E402

SETUP = """\
%load_ext tile_lab
import numpy as np
import cuda.tile as ct
import tile_lab
x = np.zeros(64, dtype=np.float32)
"""

SPIN_MAGIC = """\
%%tile --emulate --args "x, 8" --grid "(8,)"
@ct.kernel
def spin(x, TILE: ct.Constant[int]):
    bid = ct.bid(0)
    t = ct.load(x, (bid,), (TILE,))
    if bid == 5:
        while True:
            t = t + 1
    ct.store(x, (bid,), t + 1)
"""  # block 5 spins on cell lines 7-8

SPIN_API = """\
print("running", flush=True)
tile_lab.emulate(spin, (8,), (x, 8))
"""


@pytest.fixture(scope="module")
def kernel():
    with started_kernel() as (km, kc):
        yield km, kc


def _kernel_cpu_s(km) -> float:
    """The kernel process's CPU time so far (user + system)."""
    import psutil

    t = psutil.Process(km.provisioner.process.pid).cpu_times()
    return t.user + t.system


def _messages_until_idle(kc, msg_id: str, timeout: float, clock=time.monotonic
                         ) -> tuple[list[dict], float]:
    """The iopub messages of one execution, and ``clock()`` when its error (if any) arrived."""
    msgs, error_at, deadline = [], None, time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            msg = kc.get_iopub_msg(timeout=max(0.05, deadline - time.monotonic()))
        except Exception:  # queue.Empty
            break
        if msg["parent_header"].get("msg_id") != msg_id:
            continue
        msgs.append(msg)
        if msg["msg_type"] == "error" and error_at is None:
            error_at = clock()
        if msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle":
            break
    return msgs, error_at


def _reply(kc, msg_id: str, timeout: float) -> dict:
    """The shell reply to ``msg_id`` (a busy machine can leave a late kernel_info reply of
    ``wait_for_ready`` ahead of it in the queue)."""
    deadline = time.monotonic() + timeout
    while True:
        reply = kc.get_shell_msg(timeout=max(0.05, deadline - time.monotonic()))
        if reply["parent_header"].get("msg_id") == msg_id:
            return reply


def _run(kc, code: str) -> tuple[int, dict | None, str]:
    msg_id = kc.execute(code)
    msgs, _ = _messages_until_idle(kc, msg_id, 300)
    reply = _reply(kc, msg_id, 60)
    errors = [m["content"] for m in msgs if m["msg_type"] == "error"]
    out = "".join(m["content"]["text"] for m in msgs if m["msg_type"] == "stream")
    return reply["content"]["execution_count"], (errors[0] if errors else None), out


def _interrupt_once(km, kc, code: str, started: str | None) -> tuple[int, dict, float]:
    """Run ``code``, interrupt once while it spins; (count, error content, the kernel's CPU
    seconds from the interrupt to the error: the block spins until it is stopped, and CPU
    time is what other jobs on the machine cannot stretch, as they do wall time)."""
    msg_id = kc.execute(code)
    if started is not None:  # wait until the cell is running the kernel
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            msg = kc.get_iopub_msg(timeout=120)
            if (
                msg["parent_header"].get("msg_id") == msg_id
                and msg["msg_type"] == "stream"
                and started in msg["content"]["text"]
            ):
                break
    # blocks 0-4 are done long before the kernel has spent 3 s of CPU on the cell; block 5
    # spins (CPU time: on a busy machine 3 s of wall time can pass before block 5 starts)
    cpu0, deadline = _kernel_cpu_s(km), time.monotonic() + 300
    while _kernel_cpu_s(km) - cpu0 < 3.0 and time.monotonic() < deadline:
        time.sleep(0.1)
    sent = _kernel_cpu_s(km)
    km.interrupt_kernel()  # once, as Jupyter's stop button does
    # (generous waits, only so that a kernel that never stops fails instead of hanging)
    msgs, error_at = _messages_until_idle(kc, msg_id, 120, lambda: _kernel_cpu_s(km))
    reply = _reply(kc, msg_id, 120)
    errors = [m["content"] for m in msgs if m["msg_type"] == "error"]
    assert errors, f"no error after one interrupt: {[m['msg_type'] for m in msgs]}"
    assert error_at is not None
    return reply["content"]["execution_count"], errors[0], error_at - sent


def test_one_interrupt_stops_a_spinning_block_and_the_kernel_survives(kernel):
    km, kc = kernel
    _, error, _ = _run(kc, SETUP)
    assert error is None

    count, error, seconds = _interrupt_once(km, kc, SPIN_MAGIC, None)
    text = shown(error)
    assert seconds < 2.0, f"the kernel spent {seconds:.2f} s of CPU after the interrupt"
    assert error["ename"] == "EmulationInterrupted"
    # the interrupt lands in the spinning loop: its `while True:` head (line 7) or its body
    assert any(
        f"interrupted in block (5,), at Cell In[{count}], line {where}" in text
        for where in ("7 `while True:`", "8 `t = t + 1`")
    ), text
    assert "5 of 8 blocks ran completely and the arrays hold their writes" in text
    assert "partial" in text

    # the kernel survives; the completed blocks' writes are there, later blocks never ran
    _, error, out = _run(kc, "print(x[:40].min(), x[:40].max(), x[48:].max())")
    assert error is None and out.split() == ["1.0", "1.0", "0.0"]

    # the same through the Python API, from a later cell
    _, error, _ = _run(kc, "x[:] = 0")
    assert error is None
    count, error, seconds = _interrupt_once(km, kc, SPIN_API, "running")
    text = shown(error)
    assert seconds < 2.0, f"the kernel spent {seconds:.2f} s of CPU after the interrupt"
    assert "interrupted in block (5,), at Cell In[" in text
    assert "line 7 `while True:`" in text or "line 8 `t = t + 1`" in text, text
    _, error, out = _run(kc, "print(x[:40].min(), x[48:].max())")
    assert error is None and out.split() == ["1.0", "0.0"]
