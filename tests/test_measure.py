"""Timing helpers: interleaving order, estimators and the significance test."""

import numpy as np
import pytest

from accelbench.work import measure


def test_interleaved_alternates_abba():
    order = []
    first = lambda: order.append("a") or 1.0
    second = lambda: order.append("b") or 2.0
    firsts, seconds = measure.interleaved(first, second, pairs=4)
    assert order == ["a", "b", "b", "a", "a", "b", "b", "a"]  # every round timed: the work comes warm
    assert firsts == [1.0] * 4 and seconds == [2.0] * 4


def test_best_ratio_ignores_slowed_rounds():
    reference = [100.0, 66.0, 100.0, 65.0]
    candidate = [300.0, 300.0, 200.0, 310.0]
    assert measure.best_ratio(reference, candidate) == pytest.approx(3.1)
    assert measure.pair_ratios([1.0, 2.0], [2.0, 2.0]) == [2.0, 1.0]


def test_percentiles_match_numpy():
    samples = list(np.random.default_rng(0).random(101))
    got = measure.percentiles(samples)
    for q in (50, 90, 99):
        assert got[f"p{q}"] == pytest.approx(np.percentile(samples, q))


def test_steps_for_bounds():
    assert measure.steps_for(0.3, 0.01) == 30
    assert measure.steps_for(0.3, 1.0) == 1
    assert measure.steps_for(0.3, 0.0) == measure.MAX_STEPS_PER_ROUND


def test_a_partner_runs_round_for_round_around_the_timed_rounds_in_the_given_orders():
    events = []
    partner = measure.Partner(lambda: events.append("A") or 1.0, [("A", "B"), ("B", "A"), ("B", "A")], warmup_rounds=1)
    for _ in range(1 + 3 + 1):  # as pedantic() calls them: a warm-up, 3 timed rounds, --benchmark-cprofile's extra
        partner.setup()
        events.append("B")
        partner.teardown()
    assert events == ["B", "A", "B", "B", "A", "B", "A", "B"]  # no partner for the warm-up or the extra call
    assert partner.seconds == [1.0, 1.0, 1.0]
    disabled = measure.Partner(lambda: 1.0, [("A", "B")], warmup_rounds=1)
    disabled.setup()  # --benchmark-disable: one untimed call, no teardown
    assert disabled.seconds == []


def test_calibration_sizes_a_round_from_few_calls_whatever_the_per_call_cost(monkeypatch):
    """A work whose call costs a fixed part plus a part per step (fit(): about 3 ms a call and
    1.5 ms a step for the mlp at batch 32 on a 2-core Xeon): calibration reaches a round of about
    the asked length, never much longer, in three sizes for that work (doubling from one step
    took six) and at most five where the call's cost is 400 steps'."""
    monkeypatch.setattr(measure, "seconds", lambda work: work())  # each call says what it took
    for per_call, per_step in ((0.003, 0.0015), (0.015, 0.0002), (0.0, 0.02), (0.004, 0.00001), (0.0, 0.3)):
        sizes = set()

        def run(steps, per_call=per_call, per_step=per_step, sizes=sizes):
            sizes.add(steps)
            return per_call + steps * per_step

        steps = measure.calibrated_steps(run, 0.1)
        round_seconds = per_call + steps * per_step
        assert 0.05 <= round_seconds <= 0.11 or steps == 1, (per_call, per_step, steps, round_seconds)
        assert len(sizes) <= (3 if per_call == 0.003 else 5), sorted(sizes)
