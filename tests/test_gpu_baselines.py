"""The baseline pickers, on the CPU: ranking with a fake timer, and SDPA's backends with torch's
CPU tensors (the GPU side is exercised by bench/gpu_attention.py)."""

from __future__ import annotations

import pytest

from tile_lab.gpu import baselines
from tile_lab.gpu.sampling import TimedWork


class ScriptedTimer:
    """Times from a script: {name: [seconds per round]}; records the call order."""

    def __init__(self, script: dict[str, list[float]]) -> None:
        self.script, self.calls = script, []

    def time(self, work, samples: int, *, first: bool) -> list[float]:
        n = sum(1 for name, _ in self.calls if name == work.name)
        self.calls.append((work.name, first))
        return [self.script[work.name][n]] * samples


def _work(name: str) -> TimedWork:
    return TimedWork(name, lambda: None, baseline=f"{name} 1.0")


def test_rank_orders_by_median_and_interleaves_in_reversed_rounds() -> None:
    a, b, c = _work("a"), _work("b"), _work("c")
    timer = ScriptedTimer({"a": [3e-6, 3e-6, 9e-6], "b": [1e-6, 2e-6, 2e-6], "c": [5e-6] * 3})
    ranked = baselines.rank([a, b, c], timer, rounds=3, samples=2)
    assert [w.name for w, _ in ranked] == ["b", "a", "c"]
    assert ranked[0][1] == pytest.approx(2e-6)  # the median of b's rounds, not its best
    order = [name for name, _ in timer.calls]
    assert order == ["a", "b", "c", "c", "b", "a", "a", "b", "c"]
    assert [first for _, first in timer.calls] == [True] * 3 + [False] * 6


def test_best_of_names_the_candidates_it_beat_with_their_times() -> None:
    ranked = [(_work("cudnn"), 2e-4), (_work("flash"), 4e-4)]
    best = baselines.best_of(ranked)
    assert best.name == "cudnn"
    assert best.baseline.startswith("cudnn 1.0; the faster here (200.0 us vs flash (400.0 us)")
    with pytest.raises(ValueError, match="no candidates"):
        baselines.rank([], ScriptedTimer({}))


def test_attention_candidates_keep_the_backends_that_run_and_say_why_others_do_not() -> None:
    torch = pytest.importorskip("torch")
    q = torch.randn(1, 2, 64, 32)
    works, skipped = baselines.attention_candidates(q, q, q, causal=True)
    names = [w.name for w in works]
    assert names[0] == "torch sdpa (default)"  # what a user gets is always a candidate
    assert set(names) | {f"torch sdpa ({b})" for b in skipped} == {
        f"torch sdpa ({b})" for b in baselines.SDPA_BACKENDS}
    assert "cudnn" in skipped and skipped["cudnn"].startswith("RuntimeError")  # no cuDNN on CPU
    assert works[0].flops == 4 * 1 * 2 * 64 * 64 * 32 // 2
    works[0].run()  # a candidate runs as it was checked


def test_attention_rejects_an_unknown_backend() -> None:
    torch = pytest.importorskip("torch")
    q = torch.randn(1, 1, 8, 8)
    with pytest.raises(ValueError, match="backend must be one of"):
        baselines.attention(q, q, q, backend="fast")
