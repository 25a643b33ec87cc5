"""Verdicts without TensorFlow: outcomes, baselines staged, saved runs, the terminal block."""

import pytest

from accelbench.judge import ab_verdicts, comparison, held_to
from accelbench.judge.baselines import BaselineFile
from accelbench.judge.gates import Gate
from accelbench.judge.rules import AbsoluteDrop, RelativeDrop
from accelbench.judge.verdicts import AB_TIME, SavedRun, Verdicts
from accelbench.results import verdict_block

CELL = "test_svm[cpu-n500-grayscale]"


def verdicts(**overrides):
    settings = dict(
        update=False,
        require_baselines=False,
        memray_tracking=False,
        timing_threshold=0.3,
        fingerprint="arch=x86_64; cpus=2",
        process_backend="tensorflow",
    )
    return Verdicts(**{**settings, **overrides})


def accuracy_gate(tmp_path, data=None):
    store = BaselineFile(tmp_path / "accuracy.json", depth=1, data=data or {})
    return Gate("accuracy", store, ("digits-n1347",), AbsoluteDrop(0.02))


def test_against_a_baseline_pass_and_fail(tmp_path):
    gate = accuracy_gate(tmp_path, {"digits-n1347": {CELL: {"accuracy": 0.95}}})
    judged = verdicts()
    assert judged.against_baseline(CELL, gate, 0.94).outcome == "pass"
    failed = judged.against_baseline(CELL, gate, 0.92)
    assert failed.outcome == "fail" and (failed.measured, failed.baseline) == (0.92, 0.95)
    assert failed.message == (
        f"accuracy regression in {CELL}: measured 0.9200, baseline 0.9500, tolerance 0.02 absolute (must be >= 0.9300)"
    )
    assert judged.failures(CELL) == [failed.message]


def test_a_new_cell_and_an_unknown_scope_are_told_apart(tmp_path):
    gate = accuracy_gate(tmp_path, {"digits-n1347": {"test_svm[cpu-n1000-grayscale]": {"accuracy": 0.95}}})
    new = verdicts().against_baseline(CELL, gate, 0.9)
    assert new.outcome == "new" and "no baseline for this cell under digits-n1347" in new.message
    other = Gate("accuracy", gate.store, ("mnist-n8000",), gate.rule)
    ungated = verdicts().against_baseline(CELL, other, 0.9)
    assert ungated.outcome == "ungated"
    assert "no accuracy baselines for mnist-n8000 in accuracy.json (it has: digits-n1347)" in ungated.message


def test_require_baselines_fails_new_and_ungated_but_not_while_recording(tmp_path):
    gate = accuracy_gate(tmp_path)
    strict = verdicts(require_baselines=True)
    strict.against_baseline(CELL, gate, 0.9)
    (line,) = strict.failures(CELL)
    assert line.startswith(f"--require-baselines: accuracy of {CELL} is ungated: no accuracy baselines")
    recording = verdicts(require_baselines=True, update=True)
    assert recording.against_baseline(CELL, gate, 0.9).outcome == "new"
    assert recording.failures(CELL) == [] and gate.store.staged == 1


def test_timed_gates_are_skipped_under_memray(tmp_path):
    store = BaselineFile(tmp_path / "speedup.json", depth=2)
    gate = Gate("speedup", store, ("x86_64-2cpu", "digits"), RelativeDrop(0.3), timed=True, significance=True)
    tracked = verdicts(memray_tracking=True, update=True)
    assert tracked.against_baseline("c", gate, 2.0, [2.0] * 9).outcome == "skipped"
    assert store.staged == 0  # never recorded from a tracked run


def test_a_shortfall_the_pairs_do_not_confirm_passes(tmp_path):
    """A speedup of 0.85 against a floor of 1.0 x (1 - 0.1) = 0.9 fails only if its pairs agree."""
    store = BaselineFile(tmp_path / "speedup.json", depth=2, data={"m": {"digits": {"c": {"speedup": 1.0}}}})
    gate = Gate("speedup", store, ("m", "digits"), RelativeDrop(0.1), timed=True, significance=True)
    judged = verdicts()
    noisy = [0.7, 1.1, 0.95, 1.05, 0.8, 1.0, 1.2, 0.9, 1.0]
    passed = judged.against_baseline("c", gate, 0.85, noisy)
    assert passed.outcome == "pass" and dict(passed.statistic)["wilcoxon_p"] > 0.05
    failed = judged.against_baseline("c", gate, 0.8, [0.7, 0.75, 0.8, 0.72, 0.71, 0.7, 0.74, 0.73, 0.76])
    assert failed.outcome == "fail" and failed.message.endswith("Wilcoxon p = 0.00195 < 0.05")


def test_parity_is_a_gap_either_way():
    judged = verdicts()
    assert held_to.within_gap(judged, "c", "accuracy_gap", -0.01, 0.02).outcome == "pass"
    failed = held_to.within_gap(judged, "c", "accuracy_gap", -0.05, 0.02)
    assert failed.outcome == "fail" and "(must be within +/- 0.0200)" in failed.message


def test_a_loss_gap_between_workers_and_one_process_reads_in_its_own_precision():
    judged = verdicts()
    assert held_to.within_gap(judged, "w", "loss_gap", 2.4e-07, 1e-5).outcome == "pass"
    failed = held_to.within_gap(judged, "test_multi_worker[cpu-bs256-mlp-2workers]", "loss_gap", 0.0342, 1e-5)
    assert failed.outcome == "fail"
    assert failed.message == (
        "loss_gap regression in test_multi_worker[cpu-bs256-mlp-2workers]: measured 0.0342, "
        "parity 0, tolerance 0.00001 absolute (must be within +/- 0.00001)"
    )


def test_loss_parity_is_judged_in_significant_digits_and_a_planted_difference_fails_clearly():
    """The studies: losses equal to the 3rd significant digit (MNIST), the 2nd (Fashion-MNIST)."""
    cell = "test_accuracy_parity[gpu-vs-cpu-bs100-mlp]"
    judged = verdicts()
    same = held_to.matching_digits(judged, cell, "loss", 0.08123, 0.08127, 2)
    assert (same.outcome, same.measured, same.metric) == ("pass", 3.0, "loss_matching_digits")
    planted = held_to.matching_digits(judged, cell, "loss", 0.08123, 0.0841, 2)  # a device that trains differently
    assert planted.outcome == "fail" and planted.measured == 1.0
    assert planted.message == (
        "loss_matching_digits regression in test_accuracy_parity[gpu-vs-cpu-bs100-mlp]: measured 1 digits, "
        "floor 2 digits, tolerance matching significant digits (must be >= 2 digits): "
        "loss 0.0841 on the device against 0.08123 on the reference"
    )
    assert dict(planted.statistic) == {"reference_loss": 0.08123, "candidate_loss": 0.0841}


def saved_run(cells, fingerprint="arch=x86_64; cpus=2", tracked=False, backend=None):
    return SavedRun.from_json(
        {
            "datetime": "2026-11-22T12:00:00",
            "commit_info": {"id": "0123456789abcdef"},
            "machine_info": {
                "accelbench_fingerprint": fingerprint,
                "accelbench_memray_tracking": tracked,
                **({"accelbench_process_backend": backend} if backend else {}),
            },
            "benchmarks": [{"name": name, "extra_info": info} for name, info in cells.items()],
        }
    )


ROUNDS = [1.0, 1.02, 1.01, 1.03, 1.0, 1.5, 1.01, 1.02, 1.04, 1.6]


@pytest.mark.parametrize(
    ("run", "new", "outcome", "says"),
    [
        (saved_run({"t[a]": {"seconds_per_sample": ROUNDS}}), ROUNDS, "pass", ""),
        (
            saved_run({"t[a]": {"seconds_per_sample": ROUNDS}}),
            [2 * r for r in ROUNDS],
            "fail",
            "timing regression in t[a]: 2.00x the time per sample of saved run of 2026-11-22T12:00:00 (01234567)",
        ),
        (
            saved_run({"t[a]": {"seconds_per_sample": ROUNDS}}, fingerprint="arch=x86_64; cpus=8"),
            ROUNDS,
            "ungated",
            "is from another machine (cpus: 2 here, 8 there): timings compare only on the same hardware",
        ),
        (
            saved_run({"t[a]": {"seconds_per_sample": ROUNDS}}, fingerprint=None),
            ROUNDS,
            "ungated",
            "is from another machine (it has no fingerprint (saved by an older accelbench))",
        ),
        (
            saved_run({"t[a]": {"seconds_per_sample": ROUNDS}}, backend="jax"),
            ROUNDS,
            "ungated",
            "ran on the jax backend, this run on tensorflow: cells named without a backend are each run's own",
        ),
        (saved_run({"t[a]": {"seconds_per_sample": ROUNDS}}, backend="tensorflow"), ROUNDS, "pass", ""),
        (saved_run({"t[a]": {"seconds_per_sample": ROUNDS}}, tracked=True), ROUNDS, "skipped", "--memray"),
        (saved_run({"t[b]": {"seconds_per_sample": ROUNDS}}), ROUNDS, "new", "has no t[a]"),
        (saved_run({"t[a]": {"steps_per_round": 10}}), ROUNDS, "ungated", "saved by an older accelbench"),
    ],
)
def test_timing_against_a_saved_run(run, new, outcome, says):
    judged = verdicts()
    assert judged.timing("t[a]", new) is None  # no --benchmark-compare, no timing verdict
    judged.saved_runs.append(run)
    verdict = judged.timing("t[a]", new)
    assert verdict.outcome == outcome and says in verdict.message


def test_saved_steps_come_from_the_same_hardware_only():
    run = saved_run({"test_train[cpu-bs32-mlp]": {"work": "train", "cell": "cpu-bs32-mlp", "steps_per_round": 94}})
    judged = verdicts(saved_runs=[run])
    assert judged.saved_steps("train", "cpu-bs32-mlp") == 94
    assert judged.saved_steps("inference", "cpu-bs32-mlp") is None
    assert verdicts(saved_runs=[run], fingerprint="arch=x86_64; cpus=4").saved_steps("train", "cpu-bs32-mlp") is None
    on_jax = saved_run(
        {"test_train[cpu-bs32-mlp]": {"work": "train", "cell": "cpu-bs32-mlp", "steps_per_round": 94}}, backend="jax"
    )
    assert verdicts(saved_runs=[on_jax]).saved_steps("train", "cpu-bs32-mlp") is None


def test_the_terminal_block_lists_failures_then_ungated_then_counts(tmp_path):
    judged = verdicts()
    held_to.within_gap(judged, "p", "accuracy_gap", 0.0, 0.02)
    judged.against_baseline(CELL, accuracy_gate(tmp_path), 0.9)
    held_to.within_gap(judged, "q", "accuracy_gap", 0.5, 0.02)
    judged.skipped("s", ("speedup",), "needs a device besides cpu")
    lines = verdict_block.lines(judged)
    assert lines[0].startswith("FAIL     accuracy_gap regression in q: measured 0.5000, parity 0.0000")
    assert lines[1].startswith(f"UNGATED  {CELL} accuracy: no accuracy baselines")
    assert lines[2:] == [
        "1 gated number(s) had nothing to be judged against: not judged: pass --require-baselines to fail them",
        "record with: pytest benchmarks --update-baselines",
        "skipped  1 verdict(s): needs a device besides cpu",
        "verdicts: 1 fail, 1 ungated, 0 new, 1 skipped, 1 pass",
    ]


def _compared(outcome, ratio=1.01, low=0.97, high=1.06):
    return comparison.Comparison(ratio, low, high, 0.2, 48, outcome, "after 48 pairs ...")


@pytest.mark.parametrize(
    ("outcome", "strict", "fails"),
    [("pass", False, False), ("unknown", False, False), ("unknown", True, True), ("fail", False, True)],
)
def test_ab_verdicts_fail_only_on_fail_or_unknown_under_ab_strict(outcome, strict, fails):
    verdicts = Verdicts(
        update=False, require_baselines=False, memray_tracking=False, timing_threshold=0.4, ab_strict=strict
    )
    made = ab_verdicts.interleaved(
        verdicts, "test_train[cpu-bs32-mlp]", AB_TIME, _compared(outcome), 0.2, 0.21, 0.05, "B (X=1)"
    )
    assert made.outcome == outcome and made.measured == 1.01 and made.statistic[0] == ("ci95", [0.97, 1.06])
    assert bool(verdicts.failures("test_train[cpu-bs32-mlp]")) == fails
    if outcome == "unknown":
        assert any(
            line.startswith("UNKNOWN  test_train[cpu-bs32-mlp] ab_round_seconds")
            for line in verdict_block.lines(verdicts)
        )
        assert "1 unknown" in verdict_block.lines(verdicts)[-1]


def test_an_ab_failure_names_the_cell_b_the_ratio_its_interval_and_the_round_times():
    verdicts = Verdicts(update=False, require_baselines=False, memray_tracking=False, timing_threshold=0.4)
    made = ab_verdicts.interleaved(
        verdicts,
        "test_train[cpu-bs32-cnn]",
        AB_TIME,
        _compared("fail", 1.93, 1.88, 1.97),
        0.2,
        0.386,
        0.05,
        "B (ONEDNN_MAX_CPU_ISA=AVX)",
    )
    assert made.message.startswith("A/B regression in test_train[cpu-bs32-cnn]: B (ONEDNN_MAX_CPU_ISA=AVX) is slower")
    assert (
        "B/A = 1.930 [95% interval 1.880, 1.970] over 48 pairs (200 ms in A, 386 ms in B, median round)" in made.message
    )


def test_the_ab_table_puts_the_largest_slowdown_first_with_peaks_and_compile_times():
    from accelbench.judge.rules import AB_COMPILE_RULE, RelativeGrowth
    from accelbench.judge.verdicts import AB_COMPILE, AB_PEAK
    from accelbench.results import summary

    verdicts = Verdicts(update=False, require_baselines=False, memray_tracking=False, timing_threshold=0.4)
    for cell, ratio in (("test_train[cpu-bs32-mlp]", 1.01), ("test_train[cpu-bs32-cnn]", 1.93)):
        ab_verdicts.interleaved(
            verdicts,
            cell,
            AB_TIME,
            _compared("pass" if ratio < 1.05 else "fail", ratio, ratio - 0.02, ratio + 0.02),
            0.2,
            0.2 * ratio,
            0.05,
            "B (X=1)",
        )
        ab_verdicts.one_a_side(
            verdicts,
            cell,
            AB_PEAK,
            10 * 2**20,
            40 * 2**20 if ratio > 1.5 else 10 * 2**20,
            RelativeGrowth(0.25, slack=2**21),
        )
        ab_verdicts.one_a_side(verdicts, cell, AB_COMPILE, 1.0, 1.1, AB_COMPILE_RULE)
    verdicts.failed(
        "test_inference[cpu-bs32-mlp]", AB_TIME, "test_inference[cpu-bs32-mlp]: A/B: worker B ...: the worker died"
    )
    rows = summary.ab_rows([v.as_json() for v in verdicts.all()])
    assert [row[0] for row in rows] == [
        "test_inference[cpu-bs32-mlp]",
        "test_train[cpu-bs32-cnn]",
        "test_train[cpu-bs32-mlp]",
    ]
    assert rows[0][5].startswith("FAIL: test_inference[cpu-bs32-mlp]: A/B: worker B")
    assert rows[1][3:8] == (
        "1.930 [1.910, 1.950]",
        "48",
        "FAIL",
        "10.0 MiB -> 40.0 MiB beyond its rule",
        "1.00 s -> 1.10 s",
    )
    peaks = [v for v in verdicts.all() if v.metric == AB_PEAK]
    assert {v.outcome for v in peaks} == {"reported"}  # one measurement a side: shown, never failing
    assert rows[2][6] == "10.0 MiB -> 10.0 MiB"


def test_the_ab_section_shows_cells_served_under_load_with_both_sides_numbers():
    """A run whose A/B cells were all served under LoadGen (no timed cell) lists their numbers,
    A's and B's and their ratio, beside each verdict; it once said "no cell was judged B against A"
    above a failed serving verdict."""
    from types import SimpleNamespace

    from accelbench.benches.under_load import Headline, judge_ab
    from accelbench.judge.rules import RelativeDrop, RelativeRise
    from accelbench.processes.workers import WorkerFailed
    from accelbench.results import summary

    verdicts = Verdicts(update=False, require_baselines=False, memray_tracking=False, timing_threshold=0.4)
    gates = {
        "server_peak_qps": SimpleNamespace(rule=RelativeDrop(0.35)),
        "server_latency_ms": SimpleNamespace(rule=RelativeRise(0.6)),
    }
    b_side = SimpleNamespace(describe=lambda: "B (X=1)")
    session = SimpleNamespace(ab_run=SimpleNamespace(setup=SimpleNamespace(b=b_side)))
    for cell, turns in (
        ("test_serving[cpu-mlp-server]", [(12000.0, 7.0), (6500.0, 14.0), (6600.0, 15.0), (11600.0, 8.0)]),
        ("test_serving[cpu-cnn-server]", [(900.0, 20.0), (880.0, 21.0), (890.0, 22.0), (910.0, 19.0)]),
    ):
        bench = SimpleNamespace(name=cell, session=session, gates=gates, verdicts=verdicts)
        heads = iter(Headline({"server_peak_qps": rate, "server_latency_ms": p99}, {}) for rate, p99 in turns)
        judge_ab(bench, lambda side, turn: next(heads), "server_peak_qps")

    def broken(side, turn):
        raise WorkerFailed("worker B died")

    bench = SimpleNamespace(name="test_serving[cpu-big-server]", session=session, gates=gates, verdicts=verdicts)
    judge_ab(bench, broken, "server_peak_qps")
    lines = summary.ab_lines("B (X=1)", {}, [v.as_json() for v in verdicts.all()])
    assert "no cell was judged B against A" not in lines
    rows = [line.split() for line in lines[lines.index(summary.AB_LOAD_TITLE) + 2 :]]
    assert rows[0][:3] == ["test_serving[cpu-big-server]", "server_peak_qps", "-"]
    assert rows[0][5:7] == ["FAIL:", "test_serving[cpu-big-server]:"]
    assert rows[1:] == [
        ["test_serving[cpu-mlp-server]", "server_peak_qps", "12,000", "6,600", "0.550", "FAIL"],
        ["test_serving[cpu-mlp-server]", "server_latency_ms", "7", "14", "2.000", "FAIL"],
        ["test_serving[cpu-cnn-server]", "server_peak_qps", "910", "890", "0.978", "ok"],
        ["test_serving[cpu-cnn-server]", "server_latency_ms", "19", "21", "1.105", "ok"],
    ]


def test_an_undecided_ab_line_shows_one_interval_and_names_it():
    """The unknown reason names the one bound that kept a pass out; the only interval on the
    line is the 95% interval of the median, called so."""
    import re

    from accelbench.judge import comparison

    found = comparison.sequential([0.7, 1.4] * 24, comparison.Plan(cells=1))
    assert found.outcome == comparison.UNKNOWN
    verdicts = Verdicts(update=False, require_baselines=False, memray_tracking=False, timing_threshold=0.4)
    line = ab_verdicts.interleaved(
        verdicts, "test_train[cpu-bs32-mlp]", AB_TIME, found, 0.2, 0.21, 0.05, "B (X=1)"
    ).message
    assert len(re.findall(r"\[95% interval \d\.\d+, \d\.\d+\]", line)) == 1, line
    assert line.count("[") == 1 and " between " not in line, line
    assert re.search(r"B/A's \d+\.\d% upper bound is \d\.\d{3}", line), line


@pytest.mark.parametrize("preset", ["smoke", "quick", "full"])
def test_no_preset_passes_a_planted_3x_slowdown_and_what_cannot_show_one_is_unknown(preset):
    """Issue 50's case: under smoke, a 3.7x slower cell read pass (4 rounds a side: the fast
    halves' rank test can give no p below 1/6). Under every preset, 200 draws of a cell's rounds
    (lognormal noise, 10% spread) against the same cell 3x slower never read pass: fail where the
    rounds can show it, unknown (saying how many rounds would) where they cannot. Unchanged rounds
    under the same presets read pass or unknown, never fail more than the rule's false-alarm rate."""
    import numpy as np

    from accelbench.run.presets import PRESETS

    rounds = PRESETS[preset].rounds
    noise = np.random.default_rng(3)
    outcomes, unchanged = set(), []
    for _ in range(200):
        saved = list(noise.lognormal(0.0, 0.1, rounds))
        judged = verdicts(saved_runs=[saved_run({"t[a]": {"seconds_per_sample": saved}})])
        slower = judged.timing("t[a]", list(3 * noise.lognormal(0.0, 0.1, rounds)))
        outcomes.add(slower.outcome)
        unchanged.append(judged.timing("t[a]", list(noise.lognormal(0.0, 0.1, rounds))).outcome)
    if rounds >= 7:
        assert outcomes == {"fail"}
        assert unchanged.count("fail") <= 10 and "unknown" not in unchanged  # the 5% rule, in 200 draws
    else:
        assert outcomes == {"unknown"} and set(unchanged) == {"unknown"}
        assert "4 saved and 4 new rounds cannot show a slowdown" in slower.message
        assert "p >= 0.167 however slow; at least 7 rounds a side can" in slower.message


def test_pairs_too_few_to_show_a_shortfall_are_unknown_not_pass(tmp_path):
    """A gate on pair ratios fails only where Wilcoxon agrees: with 4 pairs it never could (p >=
    1/16), so the verdict is unknown however far below the floor; 5 pairs can fail."""
    store = BaselineFile(tmp_path / "speedup.json", depth=2, data={"m": {"digits": {"c": {"speedup": 2.0}}}})
    gate = Gate("speedup", store, ("m", "digits"), RelativeDrop(0.1), timed=True, significance=True)
    judged = verdicts()
    four = judged.against_baseline("c", gate, 0.5, [0.5, 0.5, 0.52, 0.49])
    assert four.outcome == "unknown" and "4 pairs cannot show a shortfall" in four.message
    assert "at least 5 pairs can" in four.message
    assert judged.against_baseline("c", gate, 0.5, [0.5, 0.5, 0.52, 0.49, 0.51]).outcome == "fail"
