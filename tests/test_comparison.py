"""The A/B verdict's statistics on synthetic pairs with a known truth.

"Realistic noise" is measured: the log(B/A) of interleaved round pairs of A/A runs (B differed
only by a variable nothing reads), drawn with replacement and shifted by the planted slowdown.
Two machines: 144 pairs of an AMD EPYC (tests/data/aa_log_ratios.json), about 8% per pair with
tails of pairs 0.6x and 2.5x; and 2,028 pairs of ten quick runs on an Intel Xeon with AMX
(aa_log_ratios_xeon_amx.json), 8.4% per pair. The rules' error rates are checked on both.
"""

import json
import math
from pathlib import Path

import numpy as np
import pytest

from accelbench.judge import comparison
from accelbench.run.presets import PRESETS

DRAWS = 100


def measured(name: str) -> np.ndarray:
    pairs = json.loads((Path(__file__).parent / "data" / name).read_text())["log_ratios"]
    return np.array([value for values in pairs.values() for value in values])


def centred(noise: np.ndarray) -> np.ndarray:
    """Centred on its median, so that a planted slowdown is the median ratio's (the rules'
    parameter): the A/A pairs' own median (-0.4% and -0.2%) is noise of those runs."""
    return noise - np.median(noise)


MEASURED_NOISE = measured("aa_log_ratios.json")
NOISE = centred(MEASURED_NOISE)
XEON_NOISE = centred(measured("aa_log_ratios_xeon_amx.json"))
BOTH_MACHINES = pytest.mark.parametrize("noise", [NOISE, XEON_NOISE], ids=["amd-epyc", "xeon-amx"])
QUICK = comparison.Plan(0.05, *PRESETS["quick"].ab_pairs, cells=18)  # the quick preset: 18 cells judged


def prefixes(pair_ratios):
    """pairs_up_to for pairs already drawn: the first n."""
    return lambda n: pair_ratios[:n]


def verdicts(slowdown, plan=QUICK, noise=NOISE, seed0=0, draws=DRAWS):
    """Outcome counts of `draws` cells whose B is `slowdown` slower, judged as a run judges them."""
    counts = {comparison.PASS: 0, comparison.FAIL: 0, comparison.UNKNOWN: 0}
    for seed in range(seed0, seed0 + draws):
        rng = np.random.default_rng(seed)
        draw = lambda: list(np.exp(rng.choice(noise, plan.most) + math.log1p(slowdown)))
        first = draw()
        found = comparison.sequential(first, plan)
        fresh = lambda: comparison.fresh_pairs(prefixes(draw()), plan)  # as a run does: in fresh processes
        found = comparison.confirmed(found, first[: found.pairs], fresh, plan.min_effect)
        counts[found.outcome] += 1
    return counts


def test_the_measured_noise_is_what_the_docstring_says():
    assert len(MEASURED_NOISE) == 144
    assert 0.06 < MEASURED_NOISE.std() < 0.10
    assert len(XEON_NOISE) == 2028 and 0.06 < XEON_NOISE.std() < 0.10


@BOTH_MACHINES
def test_a_ten_percent_slowdown_is_caught_in_at_least_95_of_100(noise):
    assert verdicts(0.10, noise=noise)[comparison.FAIL] >= 95


@BOTH_MACHINES
def test_a_slowdown_of_exactly_the_minimum_effect_is_neither_passed_nor_failed_more_than_the_rules_allow(noise):
    """At the boundary both errors are at their largest: a pass at most PASS_ERROR, a fail at
    most EFFECT_ERROR (100 draws: a count of 5 is the rate, plus two for the draw's own noise)."""
    counts = verdicts(0.05, noise=noise)
    assert counts[comparison.PASS] <= 7 and counts[comparison.FAIL] <= 7, counts


@BOTH_MACHINES
def test_a_three_percent_slowdown_fails_at_most_5_in_100_under_a_five_percent_minimum_effect(noise):
    counts = verdicts(0.03, noise=noise)
    assert counts[comparison.FAIL] <= 5, counts


@BOTH_MACHINES
def test_pure_noise_fails_at_most_1_in_100(noise):
    counts = verdicts(0.0, noise=noise)
    assert counts[comparison.FAIL] <= 1, counts
    assert counts[comparison.PASS] >= 90, counts  # and it is not left undecided either


@BOTH_MACHINES
def test_a_whole_run_of_unchanged_cells_fails_at_most_1_in_100(noise):
    """The correction is for the run: 100 A/A runs of the quick suite's 18 cells each."""
    failed_runs = sum(
        verdicts(0.0, noise=noise, seed0=1000 + run * QUICK.cells, draws=QUICK.cells)[comparison.FAIL] > 0
        for run in range(100)
    )
    assert failed_runs <= 1


def test_a_large_slowdown_fails_with_its_ratio_and_interval():
    first = [1.5 + 0.01 * (i % 5) for i in range(48)]
    found = comparison.confirmed(comparison.sequential(first, QUICK), first, lambda: first, QUICK.min_effect)
    assert found.outcome == comparison.FAIL
    assert found.low <= found.ratio <= found.high
    assert 1.5 <= found.ratio <= 1.55
    assert "Wilcoxon" in found.reason


def test_unchanged_code_passes_at_the_first_look():
    found = comparison.sequential([1.0 + 0.01 * ((i % 5) - 2) for i in range(48)], QUICK)
    assert (found.outcome, found.pairs) == (comparison.PASS, QUICK.first)


def test_a_slowdown_below_the_minimum_effect_passes_even_when_significant():
    found = comparison.sequential([1.02 + 0.001 * (i % 7) for i in range(48)], QUICK)
    assert found.outcome == comparison.PASS
    assert found.ratio > 1.02


def test_a_significant_slowdown_not_shown_to_reach_the_minimum_effect_does_not_fail():
    """Rule 2: B slower beyond doubt, but its lower bound short of 1 + min_effect (the median
    of these pairs is 1.06, their 95% lower bound under 1.05): unknown, saying by how much."""
    first = [1.0 + 0.005 * i for i in range(24)] * 2  # 1.00 .. 1.115, median 1.0575
    found = comparison.sequential(first, QUICK)
    assert found.outcome == comparison.FAIL and found.ratio >= 1.05
    kept = comparison.confirmed(found, first, lambda: pytest.fail("rule 2 alone"), QUICK.min_effect, confirmations=0)
    assert kept.outcome == comparison.UNKNOWN, kept
    assert "by how much is not shown" in kept.reason and "below the 5%" in kept.reason


def test_noise_too_wide_to_decide_is_unknown_not_fail():
    wide = [0.7, 1.4] * 24
    found = comparison.sequential(wide, QUICK)
    assert found.outcome == comparison.UNKNOWN
    assert found.pairs == 48


def test_the_correction_divides_by_the_cells_judged():
    assert comparison.Plan(cells=10).alpha == pytest.approx(0.001)
    assert QUICK.sizes() == [12, 24, 36, 48]


def test_a_fail_that_fresh_processes_do_not_repeat_is_unknown():
    first = [1.08 + 0.001 * i for i in range(48)]
    failed = comparison.sequential(first, QUICK)
    assert failed.outcome == comparison.FAIL
    again = comparison.repeated(failed, first, [1.0 + 0.01 * ((i % 5) - 2) for i in range(48)])
    assert again.outcome == comparison.UNKNOWN and again.pairs == 96
    assert "not again in fresh ones" in again.reason
    repeated = comparison.repeated(failed, first, [1.07 + 0.001 * i for i in range(48)])
    assert repeated.outcome == comparison.FAIL and "again in fresh processes" in repeated.reason
    assert 1.07 < repeated.ratio < 1.13


def test_a_confirmation_stops_at_the_first_look_where_b_is_not_slower():
    timed = []

    def pairs_up_to(n, ratios):
        timed.append(n)
        return ratios[:n]

    faster_again = [0.98 + 0.001 * (i % 3) for i in range(48)]
    assert len(comparison.fresh_pairs(lambda n: pairs_up_to(n, faster_again), QUICK)) == 12 and timed == [12]
    timed.clear()
    slower_again = [1.06 + 0.001 * (i % 3) for i in range(48)]
    assert len(comparison.fresh_pairs(lambda n: pairs_up_to(n, slower_again), QUICK)) == 48
    assert timed == [12, 24, 36, 48]  # a slowdown that repeats gets every pair, as the first ones did


def test_a_slowdown_beyond_any_difference_between_processes_needs_no_confirmation():
    first = [1.5 + 0.001 * i for i in range(48)]
    failed = comparison.sequential(first, QUICK)
    never = lambda: pytest.fail("no fresh processes were needed")
    assert comparison.confirmed(failed, first, never, QUICK.min_effect) == failed


def test_rounds_run_in_seeded_abba_blocks():
    orders = comparison.order(48, seed=3)
    assert orders == comparison.order(48, seed=3)
    assert orders != comparison.order(48, seed=4)
    for block in range(0, 48, 2):  # every block has one pair of each order
        assert sorted(orders[block : block + 2]) == [("A", "B"), ("B", "A")]


def test_fewer_pairs_than_the_first_look_is_an_error():
    with pytest.raises(ValueError, match="fewer than the plan.s 48"):
        comparison.sequential([1.0] * 10, QUICK)


PROCESS_SPREAD = [
    0.049,
    0.047,
    0.039,
    0.029,
    0.027,
    0.021,
    0.021,
    0.016,
    0.016,
    0.016,
    0.014,
    0.013,
    0.012,
    0.011,
    0.010,
    0.010,
    0.008,
    0.007,
]  # sd of each quick cell's B/A over six runs: five A/A, one TF 2.20 vs 2.21


def quick_runs(slowdown, runs, confirmations=comparison.CONFIRMATIONS, seed=0):
    """Outcomes of `runs` simulated A/B runs of the quick suite's cells (one row a run), each
    cell's B `slowdown` slower and its pairs of processes apart by its measured spread."""
    rng = np.random.default_rng(seed)
    outcomes = []
    for _ in range(runs):
        row = []
        for spread in PROCESS_SPREAD:
            draw = lambda: list(np.exp(rng.choice(NOISE, QUICK.most) + rng.normal(0.0, spread) + math.log1p(slowdown)))
            first = draw()
            found = comparison.sequential(first, QUICK)
            fresh = lambda: comparison.fresh_pairs(prefixes(draw()), QUICK)
            row.append(
                comparison.confirmed(found, first[: found.pairs], fresh, QUICK.min_effect, confirmations).outcome
            )
        outcomes.append(row)
    return np.array(outcomes)


def test_with_each_cells_process_spread_an_unchanged_run_fails_at_most_1_in_100():
    """Unchanged code in two processes can differ for as long as they live: 100 A/A runs of the
    quick suite's 18 cells, with each cell's measured spread between pairs of processes."""
    failed_runs = (quick_runs(0.0, 100) == comparison.FAIL).any(axis=1).sum()
    assert failed_runs <= 1


def test_with_each_cells_process_spread_a_ten_percent_slowdown_is_caught_in_nine_of_ten_cells():
    """Power with the process spreads: 30 runs of 18 cells slowed by 10%. The cells whose
    processes differ most (sd 4-5%: mlp_wide training, the SVM at batch 256) are caught less
    often; no rule over three pairs of processes can tell their 10% from 5% every time."""
    outcomes = quick_runs(0.10, 30)
    assert (outcomes == comparison.FAIL).mean() >= 0.9, (outcomes == comparison.FAIL).mean(axis=0)
    assert (outcomes == comparison.PASS).mean() <= 0.05
