"""The change-point detector's claims, by simulation: how often it names a change in an
unchanged series, and how soon it names a real step, with the run-to-run spreads this project's
saved runs measured (tests/data/run_to_run*.json: a loaded VM's, one with nothing else running,
and the same VM's pushes of several runs each, a point the median of a push's runs) and with a
dedicated runner's (normal, 1.5%)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from accelbench.judge import changepoints

RUNS = 30


def measured_cells(name: str) -> dict[str, list[float]]:
    return json.loads((Path(__file__).parent / "data" / name).read_text())["cells"]


def pooled(name: str) -> np.ndarray:
    """Every measured cell's log deviations in one pool (six or eight runs a cell are too few to
    draw one cell's series from)."""
    return np.concatenate([np.asarray(values) for values in measured_cells(name).values()])


# A 2-vCPU VM with other work beside some runs (AMD EPYC): 12% robust, heavy one-sided tail
# (a busy neighbour only ever slows a run down).
POOLED = pooled("run_to_run.json")
# A 2-vCPU VM with nothing else running (Intel Xeon, AMX): 2% robust, 4% as a plain standard
# deviation: the slow runs remain, fewer and smaller.
QUIET_POOLED = pooled("run_to_run_quiet.json")


def per_push(name: str, runs_per_push: int) -> np.ndarray:
    """Every cell's log deviations per push, as `accelbench history --by-commit` makes a point of
    a push: the median of each `runs_per_push` successive runs, minus the cell's median over the
    pushes, widened by sqrt(n / (n - 1)): deviations from the median of only n pushes (7-10 a
    cell here) understate the spread."""
    pool = []
    for runs in measured_cells(name).values():
        pushes = len(runs) // runs_per_push
        points = np.median(np.reshape(runs[: pushes * runs_per_push], (pushes, runs_per_push)), axis=1)
        pool.append((points - np.median(points)) * np.sqrt(pushes / (pushes - 1)))
    return np.concatenate(pool)


# The quiet VM again, 30 unchanged runs back to back (time per sample: the fastest round, as the
# history reads it): a run's spread, and a push's of 3 and of 4 runs.
PUSH_RUNS_POOLED = pooled("run_to_run_pushes.json")
PUSHES_OF_3 = per_push("run_to_run_pushes.json", 3)
PUSHES_OF_4 = per_push("run_to_run_pushes.json", 4)


def drawn_from(pool: np.ndarray):
    """A series' log deviations drawn with replacement from a measured pool."""
    return lambda rng, runs: rng.choice(pool, runs)


measured_noise = drawn_from(POOLED)
measured_quiet_noise = drawn_from(QUIET_POOLED)


def quiet_noise(rng: np.random.Generator, runs: int, spread: float = 0.015) -> np.ndarray:
    """A dedicated runner's: 1.5% run to run, normal (at 2% the 10% step below is found in 88%)."""
    return rng.normal(0.0, spread, runs)


def false_changes(noise, series: int, seed: int = 0, runs_per_point: int = 1) -> float:
    rng = np.random.default_rng(seed)
    penalty = changepoints.penalty_for(runs_per_point)
    return sum(len(changepoints.find(np.exp(noise(rng, RUNS)), penalty)) for _ in range(series)) / series


def found_within(noise, step: float, after: int, series: int, seed: int = 1, runs_per_point: int = 1) -> float:
    """Share of series of RUNS points, the last `after` of them `step` slower, in which a
    regression is named at the step's first point (or one either side); a point is one run, or
    the median of a push's runs_per_point runs."""
    rng = np.random.default_rng(seed)
    penalty = changepoints.penalty_for(runs_per_point)
    hits = 0
    for _ in range(series):
        logs = noise(rng, RUNS)
        logs[RUNS - after :] += np.log1p(step)
        hits += any(
            change.ratio > 1 and abs(change.index - (RUNS - after)) <= 1
            for change in changepoints.find(np.exp(logs), penalty)
        )
    return hits / series


def robust_sd(values: np.ndarray) -> float:
    return 1.4826 * float(np.median(np.abs(values - np.median(values))))


def test_the_measured_spreads_are_a_loaded_and_a_quiet_vm_s_both_heavy_tailed():
    assert all(len(measured_cells(name)) >= 20 for name in ("run_to_run.json", "run_to_run_quiet.json"))
    assert 0.08 < robust_sd(POOLED) < 0.16 and POOLED.std() > 1.5 * robust_sd(POOLED)
    assert 0.01 < robust_sd(QUIET_POOLED) < 0.03 and QUIET_POOLED.std() > 1.5 * robust_sd(QUIET_POOLED)


def test_unchanged_series_with_the_measured_spread_get_at_most_1_false_change_per_100():
    assert false_changes(measured_noise, 1000) <= 0.01


def test_unchanged_series_with_the_quiet_vm_s_measured_spread_get_at_most_1_false_change_per_100():
    assert false_changes(measured_quiet_noise, 1000) <= 0.01


def test_with_the_quiet_vm_s_measured_spread_a_20_percent_step_is_found_within_3_runs_and_10_percent_within_6():
    """Nothing else running is not a dedicated runner: its slow runs (4% as a plain standard
    deviation) keep a 10% step under the noise of three runs in most series (a third found), and
    six runs show it."""
    assert found_within(measured_quiet_noise, 0.20, after=3, series=200) >= 0.85
    assert found_within(measured_quiet_noise, 0.10, after=6, series=200) >= 0.75
    assert found_within(measured_quiet_noise, 0.10, after=3, series=200) < 0.60


def test_unchanged_series_on_a_quiet_machine_get_at_most_1_false_change_per_100():
    assert false_changes(quiet_noise, 300) <= 0.01


def test_on_a_quiet_machine_a_10_percent_step_is_found_within_3_runs_in_9_of_10_series():
    """The issue's floor holds on a dedicated runner (quiet_noise), not on either measured VM."""
    assert found_within(quiet_noise, 0.10, after=3, series=300) >= 0.90


def test_with_the_measured_spread_a_3x_step_is_found_within_3_runs_and_a_10_percent_one_is_not():
    """The loaded VM's spread (12% run to run, heavy-tailed): what the detector can and cannot see
    (docs/history.md). A 10% step there is under the noise of three runs for any detector that
    keeps false changes to 1 in 100 series."""
    assert found_within(measured_noise, 2.0, after=3, series=200) >= 0.90
    assert found_within(measured_noise, 1.0, after=6, series=200) >= 0.85
    assert found_within(measured_noise, 0.10, after=3, series=200) < 0.05


def test_a_push_s_median_of_3_or_4_runs_moves_less_than_one_run_and_has_a_lighter_tail():
    assert len(measured_cells("run_to_run_pushes.json")) >= 20
    for pushes in (PUSHES_OF_3, PUSHES_OF_4):
        assert robust_sd(pushes) < robust_sd(PUSH_RUNS_POOLED) and pushes.std() < 0.7 * PUSH_RUNS_POOLED.std()


@pytest.mark.parametrize("runs_per_push, pool", [(3, PUSHES_OF_3), (4, PUSHES_OF_4)], ids=["3 runs", "4 runs"])
def test_with_a_point_per_push_unchanged_series_get_at_most_1_false_change_per_100(runs_per_push, pool):
    for seed in (0, 3):
        assert false_changes(drawn_from(pool), 1000, seed, runs_per_point=runs_per_push) <= 0.01


def test_with_a_point_per_push_of_4_runs_a_10_percent_step_is_found_within_3_pushes_in_9_of_10_series():
    """The issue's floor on the measured quiet VM: each push runs the suite 4 times
    (.github/workflows/history.yml) and the history is read --by-commit."""
    for seed in (1, 2):
        assert found_within(drawn_from(PUSHES_OF_4), 0.10, after=3, series=500, seed=seed, runs_per_point=4) >= 0.90


def test_with_a_push_of_3_runs_a_10_percent_step_is_found_within_3_pushes_in_3_of_4_and_one_run_is_not_enough():
    assert found_within(drawn_from(PUSHES_OF_3), 0.10, after=3, series=500, runs_per_point=3) >= 0.75
    assert found_within(drawn_from(PUSH_RUNS_POOLED), 0.10, after=3, series=500) < 0.40


@pytest.mark.parametrize("length", [8, 12])
def test_a_step_is_named_at_its_first_run_or_not_yet_confirmed_never_at_another_run(length):
    """A 2.4x step placed at every run of a series (the last two included), read after every run
    as the history reads a growing series: each change found starts at the step's run; while
    fewer than MIN_SEGMENT runs show it, it is not yet confirmed; it is confirmed on the
    MIN_SEGMENT-th run of the new level (or the MIN_RUNS-th of the series if that comes later),
    at most one run after (what --fail-on-regression fails that push on)."""
    rng = np.random.default_rng(3)
    for step_at in range(1, length):
        for _ in range(20):
            values = np.exp(rng.normal(0.0, 0.02, length)) * np.where(np.arange(length) >= step_at, 2.4, 1.0)
            confirmed_at = None
            for runs in range(changepoints.MIN_RUNS, length + 1):
                changes = changepoints.find(values[:runs])
                assert all(change.index == step_at for change in changes), (step_at, runs, changes)
                assert all(change.confirmed == (runs - step_at >= changepoints.MIN_SEGMENT) for change in changes)
                if confirmed_at is None and any(change.confirmed for change in changes):
                    confirmed_at = runs
            # One run before the step is no level to compare with: nothing is named (checked
            # above: never a wrong run). From two on, the change is confirmed when it should be.
            if step_at >= 2 and step_at + changepoints.MIN_SEGMENT <= length:  # searched from MIN_RUNS runs
                # at the MIN_SEGMENT-th run of the new level, or one run later where the series is
                # so short that its one jump is a fifth of its differences and widens the noise scale
                expected = max(step_at + changepoints.MIN_SEGMENT, changepoints.MIN_RUNS)
                assert confirmed_at in (expected, expected + 1), (step_at, confirmed_at)
