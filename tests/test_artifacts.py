"""The compile-artifact data types (artifacts.py), lazy stages above all.

``LazyStages`` holds stages that a background thread is still making; these tests drive
it with a Future the test completes by hand, so they need no compiler. A future that
fails the test when waited on while unfinished proves which operations never wait.
"""

from __future__ import annotations

import copy
import gc
import json
import pickle
from concurrent.futures import Future
from dataclasses import replace

import pytest

from tile_lab.compile.artifacts import MIME_TYPE, Inspection, LazyStages, Remark, StageText
from tile_lab.errors import ToolchainError

CUTILE = StageText("cutile", "%0 = tile_load a  // line 4", (4,))
TILEIR = StageText("tileir", "entry @k() {\n  %0 = load_view_tko\n}", (None, 4, None))
PTX = StageText("ptx", ".visible .entry k(\n)\n{\n\tld.global.f32 %f1, [%rd1];\n}",
                (None, None, None, 4, None))
SASS = StageText("sass", "k:\n        /*0000*/                   LDG.E R2, desc[UR4][R2.64] ;",
                 (None, 4))


class NoWaitFuture(Future):
    """A Future that fails the test if anything waits on it before it is done."""

    def result(self, timeout=None):
        if not self.done():
            raise AssertionError("waited for a pending stage")
        return super().result(timeout)


def lazy() -> tuple[LazyStages, NoWaitFuture]:
    future = NoWaitFuture()
    return LazyStages({"cutile": CUTILE, "tileir": TILEIR}, ("ptx", "sass"), future), future


def inspection(stages) -> Inspection:
    return Inspection(kernel_name="k", filename="/src/k.py", first_line=3,
                      source="@ct.kernel\ndef k(a):\n    t = ct.load(a)\n", arch="sm_90",
                      signature="f32[128]", hints={"num_ctas": 1}, stages=stages,
                      cubin=b"\x7fELF-not-really", remarks=(Remark("passed", "memory", "ok", 4),),
                      versions={"cuda.tile": "1.7.0"})


PLAIN = {"cutile": CUTILE, "tileir": TILEIR, "ptx": PTX, "sass": SASS}


def test_names_and_ready_stages_never_wait():
    stages, _ = lazy()
    assert list(stages) == ["cutile", "tileir", "ptx", "sass"]  # display order kept
    assert len(stages) == 4 and "sass" in stages and "ptx" in stages
    assert "remarks" not in stages and "source" not in stages
    assert set(stages.keys()) == set(PLAIN)
    assert stages["tileir"] is TILEIR and stages.get("cutile") is CUTILE
    assert not stages.is_ready()
    assert "pending=['ptx', 'sass']" in repr(stages)
    insp = inspection(stages)
    assert insp.tileir == TILEIR.text and insp.cutile_ir == CUTILE.text
    with pytest.raises(AssertionError, match="waited"):
        insp.sass  # noqa: B018 -- reading it waits, and this future refuses to be waited on
    with pytest.raises(KeyError):
        stages["remarks"]


def test_pending_stages_arrive_when_the_future_completes():
    stages, future = lazy()
    future.set_result({"ptx": PTX, "sass": SASS})
    assert stages.is_ready()
    assert stages["sass"] is SASS and stages["ptx"] is PTX
    assert stages == PLAIN and dict(stages) == PLAIN
    assert PLAIN == stages  # noqa: SIM300 -- dict on the left: Python falls back to ours
    assert stages != {**PLAIN, "sass": replace(SASS, text="other")}
    assert stages.resolved() == PLAIN
    insp = inspection(stages)
    assert insp.sass == SASS.text and insp.ptx == PTX.text
    assert insp.line_map == {name: st.line_map for name, st in PLAIN.items()}
    assert list(insp.line_map) == ["cutile", "tileir", "ptx", "sass"]


def test_a_background_error_is_raised_on_every_read():
    stages, future = lazy()
    future.set_exception(ToolchainError("disassembling the sm_90 cubin: nvdisasm crashed"))
    insp = inspection(stages)
    assert insp.tileir == TILEIR.text  # what was ready stays readable
    assert "sass" in stages
    for read in (lambda: insp.sass, lambda: insp.ptx, lambda: insp.line_map, insp.to_json):
        with pytest.raises(ToolchainError, match="nvdisasm crashed"):
            read()


def test_missing_or_overlapping_stage_names_are_refused():
    stages, future = lazy()
    future.set_result({"sass": SASS})  # "ptx" was promised
    with pytest.raises(KeyError, match="ptx"):
        stages["sass"]
    with pytest.raises(ValueError, match="both ready and pending"):
        LazyStages({"sass": SASS}, ("sass",), Future())


def test_no_ptx_promised_means_ptx_is_none_without_waiting():
    future = NoWaitFuture()
    stages = LazyStages({"tileir": TILEIR}, ("sass",), future)
    assert inspection(stages).ptx is None
    future.set_result({"sass": SASS})
    assert inspection(stages).sass == SASS.text


def test_lazy_inspection_serialises_like_a_plain_one():
    stages, future = lazy()
    future.set_result({"ptx": PTX, "sass": SASS})
    lazy_insp, plain_insp = inspection(stages), inspection(dict(PLAIN))
    assert lazy_insp == plain_insp
    assert lazy_insp.to_json() == plain_insp.to_json()
    data = json.loads(lazy_insp.to_json())
    assert data["stages"]["sass"] == {"name": "sass", "text": SASS.text, "line_map": [None, 4]}
    back = Inspection.from_json(lazy_insp.to_json())
    assert back == lazy_insp and isinstance(back.stages, dict)
    assert back.to_json() == lazy_insp.to_json()
    # copies and pickles hold plain dicts of the finished stages
    for other in (copy.deepcopy(lazy_insp), pickle.loads(pickle.dumps(lazy_insp))):
        assert other == plain_insp and type(other.stages) is dict
    assert lazy_insp.with_show(("source", "sass")).sass == SASS.text
    assert repr(lazy_insp) == repr(plain_insp)


def test_rich_display_of_a_lazy_inspection_matches_the_plain_one():
    stages, future = lazy()
    future.set_result({"ptx": PTX, "sass": SASS})
    shown = inspection(stages)._repr_mimebundle_()
    plain = inspection(dict(PLAIN))._repr_mimebundle_()
    assert shown["text/html"] == plain["text/html"]
    assert shown[MIME_TYPE] == plain[MIME_TYPE]
    assert "tl-pane-sass" in shown["text/html"] and "LDG" in shown["text/html"]


def test_dropping_lazy_stages_cancels_work_not_yet_started():
    queued, running = Future(), Future()
    assert running.set_running_or_notify_cancel()
    LazyStages({}, ("sass",), queued)
    LazyStages({}, ("sass",), running)
    gc.collect()
    assert queued.cancelled()
    assert not running.cancelled()  # started work finishes (and fills the memo cache)
    kept_future = Future()
    kept = LazyStages({}, ("sass",), kept_future)
    gc.collect()
    assert not kept_future.cancelled() and "sass" in kept


@pytest.mark.parametrize("line, opcode", [
    ("        /*0090*/                   LDL R2, [R1+0x4] ;", "LDL"),
    ("        /*00a0*/              @!UP1 UTMALDG.2D [UR8], [UR4] ;", "UTMALDG"),
    ("  @P0 STL.64 [R1+0x8], R4 ;", "STL"),
    ("        EXIT ;", "EXIT"),
    ("        Function : flash_attention_tuned", None),
    (".L_x_0:", None),
    ("", None),
])
def test_sass_opcode_reads_the_base_opcode_of_an_instruction_line(line, opcode):
    from tile_lab.compile.artifacts import sass_opcode

    assert sass_opcode(line) == opcode


def test_spill_instructions_count_local_memory_traffic_in_the_sass():
    # the flash-attention tile of 128x128 scores plus a 128x128 fp32 accumulator does not fit
    # 4 warps' registers (the compiler spills); with 8 warps it does
    import numpy as np

    import tile_lab
    from tile_lab.examples.attention import flash_attention_tuned

    q = np.zeros((1, 1024, 128), np.float16)
    args = (q, q, q, q, 0.1, 128, 128, 128, 0, 2)
    four = tile_lab.inspect(flash_attention_tuned, args, arch="sm_90",
                            hints={"num_worker_warps": 4}).spill_instructions()
    eight = tile_lab.inspect(flash_attention_tuned, args, arch="sm_90",
                             hints={"num_worker_warps": 8}).spill_instructions()
    assert four["LDL"] > 0 and four["STL"] > 0
    assert eight == {"LDL": 0, "STL": 0}


def test_a_stage_with_its_own_future_is_read_apart_from_the_others():
    from concurrent.futures import Future

    tileir: Future = Future()
    machine = NoWaitFuture()
    stages = LazyStages({"cutile": CUTILE}, ("ptx", "sass"), machine, own={"tileir": tileir})
    assert list(stages) == ["cutile", "tileir", "ptx", "sass"] and len(stages) == 4
    tileir.set_exception(RuntimeError("tileirdisasm not found"))
    machine.set_result({"ptx": PTX, "sass": SASS})
    assert stages["sass"] is SASS  # the SASS does not wait for, nor fail with, the Tile IR
    assert not stages.is_ready() or tileir.done()
    with pytest.raises(RuntimeError, match="tileirdisasm not found"):
        stages["tileir"]
    with pytest.raises(ValueError, match="both ready and pending"):
        LazyStages({"tileir": TILEIR}, ("sass",), machine, own={"tileir": tileir})
