"""Timing helpers: interleaving order, estimators and the significance test."""

import math

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


def test_a_rounds_steps_are_raised_until_the_calls_own_cost_is_within_2_percent_of_it(monkeypatch):
    """fit()'s cost per call beyond its steps (3 ms on a 2-core Xeon, tens of ms where each call
    syncs an accelerator) against steps of 10 us to 20 ms: sized to half the limit, the round's
    true share of the call's cost is exactly that without noise, and above MAX_CALL_SHARE in at
    most 2% of 500 draws where every call is slowed by noise (10% on average: noise only adds
    time, and the best of a few calls is kept), never above 10%."""
    import random

    monkeypatch.setattr(measure, "seconds", lambda work: work())  # each call says what it took
    noise = random.Random(7)
    above = 0
    for per_call, per_step, noisy in (
        (0.003, 0.0015, False),
        (0.04, 0.00001, False),
        (0.0, 0.02, False),
        (0.015, 0.0002, False),
    ) + tuple((noise.uniform(0.001, 0.05), noise.uniform(1e-5, 0.02), True) for _ in range(500)):

        def run(steps, per_call=per_call, per_step=per_step, noisy=noisy):
            took = per_call + steps * per_step
            return took * (1 + noise.expovariate(10)) if noisy else took

        calibrated = measure.calibrated_steps(run, 0.1)
        cost = measure.sized_for_calls(run, calibrated)
        true_share = per_call / (per_call + cost.steps * per_step)
        assert cost.steps >= calibrated and (true_share <= 0.1 or cost.steps == measure.MAX_STEPS_PER_ROUND)
        above += true_share > measure.MAX_CALL_SHARE and cost.steps < measure.MAX_STEPS_PER_ROUND
        if not noisy:  # (at the most steps a round may have, the share is what it is, and recorded)
            assert true_share <= measure.SIZED_CALL_SHARE + 1e-9 or cost.steps == measure.MAX_STEPS_PER_ROUND
            assert cost.seconds == pytest.approx(per_call, abs=1e-9) and cost.share == pytest.approx(true_share)
    assert above <= 10, above
    # where the call costs nothing beyond its steps, the calibrated round stands
    assert measure.sized_for_calls(lambda steps: steps * 0.01, 7).steps == 7


def test_a_size_close_to_the_one_timed_is_kept_untimed_saving_a_third_of_the_sizing(monkeypatch):
    """CLOSE_ENOUGH against timing every size the split asks for (CLOSE_ENOUGH 1), on the same
    1,500 noisy works as the test above draws them, rounds capped at 0.5 s: a third less time
    spent sizing, and no more rounds above MAX_CALL_SHARE that a round within the cap could
    have kept within it."""
    import random

    monkeypatch.setattr(measure, "seconds", lambda work: work())

    def sizing(close_enough):
        monkeypatch.setattr(measure, "CLOSE_ENOUGH", close_enough)
        noise, spent, missed = random.Random(7), 0.0, 0
        for _ in range(1500):
            per_call, per_step = noise.uniform(0.001, 0.05), noise.uniform(1e-5, 0.02)
            took = []

            def run(steps, per_call=per_call, per_step=per_step, took=took):
                took.append((per_call + steps * per_step) * (1 + noise.expovariate(10)))
                return took[-1]

            calibrated = measure.calibrated_steps(run, 0.1)
            before = sum(took)
            cost = measure.sized_for_calls(run, calibrated, longest_s=0.5)
            spent += sum(took) - before
            could = math.ceil(per_call * (1 - measure.MAX_CALL_SHARE) / (measure.MAX_CALL_SHARE * per_step))
            missed += per_call / (per_call + cost.steps * per_step) > measure.MAX_CALL_SHARE and could * per_step < 0.5
        return spent, missed

    spent, missed = sizing(measure.CLOSE_ENOUGH)
    every_size_spent, every_size_missed = sizing(1.0)
    assert spent < 0.7 * every_size_spent, (spent, every_size_spent)
    assert missed <= max(every_size_missed, 15), (missed, every_size_missed)


def test_a_round_is_made_no_longer_than_its_cap_and_the_share_past_it_is_recorded(monkeypatch):
    """A 50 ms call beside 5 ms steps asks for about 1,000 steps (5 s) for 1%: capped at 1 s,
    the round stays within it, and its call's share (about 5%) is what is recorded."""
    monkeypatch.setattr(measure, "seconds", lambda work: work())
    cost = measure.sized_for_calls(lambda steps: 0.05 + 0.005 * steps, 20, longest_s=1.0)
    assert 150 <= cost.steps <= 200 and 0.05 + 0.005 * cost.steps <= 1.05
    assert cost.share == pytest.approx(0.05 / (0.05 + 0.005 * cost.steps)) and cost.share > measure.MAX_CALL_SHARE
