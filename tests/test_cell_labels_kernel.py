"""Cell labels in a real Jupyter kernel (jupyter_client + ipykernel), where the execution
count a cell runs under is the kernel's, not an in-process shell's.

A representative subset of tests/bad_inputs_cases.py: an error in a ``%%tile`` cell, in a
kernel defined in an earlier plain cell or ``%%tile`` cell and run from a later cell, a bad
API call, an option refusal. Each error must name ``Cell In[N]`` with the N the notebook
shows beside that cell, and a line that cell has.
"""

from __future__ import annotations

import pytest

jupyter_client = pytest.importorskip("jupyter_client")
pytest.importorskip("ipykernel")
from real_kernel import shown, started_kernel  # noqa: E402

SETUP = """\
%load_ext tile_lab
import numpy as np
import cuda.tile as ct
import tile_lab
a = np.arange(1024, dtype=np.float32)
b = np.ones(1024, dtype=np.float32)
c = np.zeros(1024, dtype=np.float32)
"""

TILE_ERROR = """\
%%tile --sig "f32[1024], f32[1024], f32[1024], 256"
@ct.kernel
def vadd_bad(a, b, c, TILE: ct.Constant[int]):
    bid = ct.bid(0)
    ta = ct.load(a, index=(bid,), shape=(TILE,))
    tb = ct.load(b, index=(bid,), shape=(TILE,))
    ct.store(c, index=(bid,), tile=ta + tb + nope)
"""  # the error is on cell line 7

PLAIN_KERNEL = """\
@ct.kernel
def k_plain(x, TILE: ct.Constant[int]):
    t = ct.load(x, index=(ct.bid(0),), shape=(TILE,))
    ct.store(x, index=(ct.bid(0),), tile=t.reshape((3,)))
"""  # the bad reshape is line 4

TILE_KERNEL = """\
%%tile
@ct.kernel
def k_tile(x, TILE: ct.Constant[int]):
    t = ct.load(x, index=(ct.bid(0),), shape=(TILE,))
    ct.store(x, index=(ct.bid(0),), tile=t.reshape((3,)))
"""  # the bad reshape is cell line 5


@pytest.fixture(scope="module")
def kernel():
    with started_kernel() as (_km, kc):
        yield kc


def run(kc, code: str) -> tuple[int, dict | None, str]:
    """(execution count the kernel gave the cell, its error content or None, stdout)."""
    errors: list[dict] = []
    out: list[str] = []

    def hook(msg):
        if msg["msg_type"] == "error":
            errors.append(msg["content"])
        elif msg["msg_type"] == "stream":
            out.append(msg["content"]["text"])

    reply = kc.execute_interactive(code, timeout=300, output_hook=hook)
    return reply["content"]["execution_count"], (errors[0] if errors else None), "".join(out)


def test_labels_name_the_cell_the_notebook_shows(kernel):
    count, error, _ = run(kernel, SETUP)
    assert error is None

    # an error in the %%tile cell itself
    count, error, _ = run(kernel, TILE_ERROR)
    assert error["ename"] == "CompileError"
    text = shown(error)
    assert f"at Cell In[{count}], line 7" in text
    assert "   7 |     ct.store(c, index=(bid,), tile=ta + tb + nope)" in text
    assert f"Cell In[{count + 1}]" not in text

    # a kernel from an earlier plain cell, failing when run from a later one
    defined, error, _ = run(kernel, PLAIN_KERNEL)
    assert error is None
    count, error, _ = run(kernel, "x = 1\ntile_lab.emulate(k_plain, (4,), (a, 256))\n")
    # cuTile's own front end (run before emulating) rejects the reshape, with cuTile's class
    assert error["ename"] == "TypeCheckingError"
    text = shown(error)
    assert f"at Cell In[{defined}], line 4" in text and count == defined + 1
    assert "t.reshape((3,))" in text

    # a kernel from an earlier %%tile cell, failing when run from a later one
    defined, error, _ = run(kernel, TILE_KERNEL)
    assert error is None
    count, error, _ = run(kernel, "tile_lab.emulate(k_tile, (4,), (a, 256))\n")
    text = shown(error)
    assert f"at Cell In[{defined}], line 5" in text and count == defined + 1
    assert "   5 |     ct.store(x, index=(ct.bid(0),), tile=t.reshape((3,)))" in text

    # a bad call to the API names the calling line
    count, error, _ = run(kernel, "y = 2\ntile_lab.diagram(42)\n")
    assert error["ename"] == "ArgumentTypeError"
    assert f"at Cell In[{count}], line 2" in shown(error)
    assert "must be a tile_lab.Trace, got int" in shown(error)

    # an option refusal names the %%tile line
    count, error, _ = run(kernel, '%%tile --emulate --args "a, b, c, 256" --grid "(10**9,)"\n'
                                  + PLAIN_KERNEL.replace("k_plain", "k_big"))
    assert error["ename"] == "SignatureError"
    assert f"at Cell In[{count}], line 1" in shown(error)
    assert "too many for the CPU emulator" in shown(error)

    # the kernel survives and nothing was lost
    _, error, out = run(kernel, "print(float(a.sum()), float(b.sum()), float(c.sum()))")
    assert error is None and out.split() == [str(float(sum(range(1024)))), "1024.0", "0.0"]


def test_a_new_option_used_wrongly_fails_the_cell_at_its_line(kernel):
    # --crosscheck runs the kernel: without --grid the cell fails at the %%tile line, and the
    # kernel goes on
    body = TILE_ERROR.split("\n", 1)[1].replace(" + nope", "")
    count, error, _ = run(kernel, '%%tile --crosscheck --args "a, b, c, 256"\n' + body)
    assert error is not None, "the cell did not fail"
    text = shown(error)
    assert f"at Cell In[{count}], line 1" in text and "--grid" in text, text
    _, error, out = run(kernel, "print(6 * 7)")
    assert error is None and "42" in out
