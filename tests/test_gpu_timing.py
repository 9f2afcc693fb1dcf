"""Timing statistics (pure functions): mean/median/min and the 95% confidence interval."""

from __future__ import annotations

import math
import statistics

import pytest

from tile_lab.gpu.timing import summarize, t_critical_95


@pytest.mark.parametrize(("df", "t"), [(1, 12.706), (2, 4.303), (10, 2.228), (30, 2.042),
                                       (40, 2.021), (60, 2.000), (120, 1.980), (1000, 1.962)])
def test_t_critical_values_match_the_student_t_table(df, t):
    assert t_critical_95(df) == pytest.approx(t, abs=1.5e-3)


def test_t_critical_rejects_zero_degrees_of_freedom():
    with pytest.raises(ValueError):
        t_critical_95(0)


def test_summary_of_known_samples():
    xs = [10e-6, 12e-6, 11e-6, 13e-6, 9e-6]
    s = summarize(xs)
    assert s.n == 5
    assert s.mean == pytest.approx(11e-6)
    assert s.median == pytest.approx(11e-6)
    assert s.min == 9e-6 and s.max == 13e-6
    assert s.std == pytest.approx(statistics.stdev(xs))
    # t(0.975, 4) = 2.776; stdev = 1.5811e-6; n = 5
    assert s.ci95 == pytest.approx(2.776 * 1.5811388e-6 / math.sqrt(5), rel=1e-4)


def test_ci_shrinks_with_more_samples_of_the_same_spread():
    few = summarize([1.0, 2.0] * 3)
    many = summarize([1.0, 2.0] * 50)
    assert many.ci95 < few.ci95 / 4


def test_single_sample_has_zero_ci_and_constant_samples_zero_spread():
    assert summarize([5e-6]).ci95 == 0.0
    s = summarize([2e-6] * 10)
    assert s.std == 0.0 and s.ci95 == 0.0


@pytest.mark.parametrize("bad", [[], [1.0, float("nan")], [-1.0], [float("inf")]])
def test_bad_samples_are_rejected(bad):
    with pytest.raises(ValueError):
        summarize(bad)
