"""Per-tile comparison helpers: ULP distance, undetermined boxes, the by-design budget."""

from __future__ import annotations

import numpy as np

from tile_lab.parity.compare import Budget, _within_budget, ordered_ints


def ulps(a, b, dtype):
    x = np.array([a], dtype)
    y = np.array([b], dtype)
    return int(abs(ordered_ints(x) - ordered_ints(y))[0])


def test_ulp_distance_counts_representable_values():
    one = np.float32(1.0)
    assert ulps(one, np.nextafter(one, np.float32(2)), np.float32) == 1
    assert ulps(0.0, -0.0, np.float32) == 0
    tiny = np.nextafter(np.float32(0), np.float32(1))
    assert ulps(-tiny, tiny, np.float32) == 2  # across zero
    assert ulps(1.0, np.nextafter(np.float16(1), np.float16(2)), np.float16) == 1
    assert ulps(1.0, 2.0, np.float64) == 2 ** 52


def test_budget_scales_with_the_tile_not_only_the_element():
    e = np.array([100.0, 1e-3], np.float64)
    g = e + np.array([0.0, 1e-4])  # 10% of a small element, tiny against the tile's 100
    ok = _within_budget(g, e, np.ones(2, bool), "float32", Budget())
    assert ok.tolist() == [True, True]
    strict = _within_budget(g, e, np.ones(2, bool), "float32", Budget(ulps=8, scale_ulps=0))
    assert strict.tolist() == [True, False]


def test_a_flushed_subnormal_is_within_budget():
    sub = np.float32(1e-40)
    ok = _within_budget(np.array([0.0]), np.array([float(sub)]), np.ones(1, bool),
                        "float32", Budget(ulps=0, scale_ulps=0))
    assert ok.tolist() == [True]
