"""Gates under load recorded as the median of this commit's runs (judge/gated_history.py)."""

import json

from accelbench.judge import gated_history, peak_history, storage
from accelbench.judge.baselines import BaselineFile
from accelbench.judge.gates import Gate
from accelbench.judge.rules import RelativeRise
from accelbench.judge.verdicts import Verdicts
from accelbench.results import verdict_block

CELL = "test_token_serving[cpu-gpt_tiny-server]"
METRIC = "token_tpot_ms"
SCOPE = ("hw", "sw", "quick")
SOFTWARE = "backend=jax; jax=0.10; keras=3.15"
COMMIT = "a" * 40


def tpot_gate(tmp_path, baseline=None, history=True):
    data = {"hw": {"sw": {"quick": {CELL: {METRIC: baseline}}}}} if baseline is not None else {}
    store = BaselineFile(tmp_path / "tokens.json", depth=3, data=data)
    return Gate(METRIC, store, SCOPE, RelativeRise(0.55), timed=True, fingerprints=2, history=history)


def verdicts(**overrides):
    settings = dict(update=True, require_baselines=False, memray_tracking=False, timing_threshold=0.3)
    return Verdicts(**{**settings, **overrides})


def earlier(*pairs):
    return gated_history.Earlier(
        COMMIT, {(CELL, METRIC): [gated_history.Judged(measured, baseline) for measured, baseline in pairs]}
    )


def test_recording_again_takes_the_median_of_this_run_and_the_commits_runs_judged_against_the_baseline(tmp_path):
    # Three runs of this commit against the baseline 0.553 (one recorded in a slow moment), one
    # against an older baseline: the older one's run is not this baseline's series.
    gate = tpot_gate(tmp_path, baseline=0.553)
    history = earlier((0.40, 0.553), (0.42, 0.553), (0.9, 0.31), (0.45, 0.553))
    made = verdicts(earlier=history).against_baseline(CELL, gate, 0.61)
    assert made.outcome == "new"
    assert gate.store.data["hw"]["sw"]["quick"][CELL][METRIC] == 0.435  # the median of 0.40, 0.42, 0.45, 0.61
    assert f"the median of this run and 3 earlier run(s) of commit {COMMIT[:12]}" in made.message
    assert dict(made.statistic) == {"recorded_from_runs": 4}
    run = verdicts(earlier=history)
    run.against_baseline(CELL, tpot_gate(tmp_path, baseline=0.553), 0.61)
    run.against_baseline(CELL, tpot_gate(tmp_path, history=False), 0.61)
    assert verdict_block.lines(run)[-2] == (
        "2 value(s) recorded as new baselines (--update-baselines); 1 of them the median of 4 runs of this commit"
    )


def test_a_first_recording_is_its_own_run_and_says_how_a_median_is_made(tmp_path):
    gate = tpot_gate(tmp_path)  # no baseline yet: earlier runs were judged against none
    made = verdicts(earlier=earlier((0.40, 0.553))).against_baseline(CELL, gate, 0.61)
    assert gate.store.data["hw"]["sw"]["quick"][CELL][METRIC] == 0.61
    assert "this run's number alone, no earlier run of this commit having been judged against" in made.message


def test_a_gate_without_history_records_this_run_alone(tmp_path):
    gate = tpot_gate(tmp_path, baseline=0.553, history=False)
    assert earlier((0.40, 0.553)).runs(CELL, gate, CELL) == []
    assert earlier((0.40, 0.553)).runs(CELL, tpot_gate(tmp_path, baseline=0.553), CELL) == [0.40]
    verdicts(earlier=earlier((0.40, 0.553))).against_baseline(CELL, gate, 0.61)
    assert gate.store.data["hw"]["sw"]["quick"][CELL][METRIC] == 0.61


def test_at_most_the_newest_nine_earlier_runs_count():
    runs = [gated_history.Judged(float(i), 1.0) for i in range(12)]
    assert gated_history.against(runs, 1.0) == [float(i) for i in range(3, 12)]
    assert gated_history.against(runs, None) == [] and gated_history.against(runs, 2.0) == []


def test_only_clean_runs_of_this_commit_machine_and_software_are_read_and_a_corrupt_one_is_named(tmp_path):
    folder = tmp_path / "Linux-CPython-3.11-64bit"
    folder.mkdir()

    def saved(name, measured, commit=COMMIT, dirty=False, hardware="hw", software=SOFTWARE, **verdict):
        run = {
            "machine_info": {"accelbench_fingerprint": hardware, "accelbench_software": software},
            "commit_info": {"id": commit, "dirty": dirty},
            "benchmarks": [],
            "accelbench": {
                "verdicts": [
                    {"cell": CELL, "metric": METRIC, "measured": measured, "baseline": 0.5, "against": "baseline"}
                    | verdict
                ]
            },
        }
        (folder / name).write_text(json.dumps(run))

    saved("0001_a.json", 0.41)
    saved("0002_b.json", 0.42, commit="b" * 40)  # other code
    saved("0003_c.json", 0.43, dirty=True)  # this commit with edits: not its code
    saved("0004_d.json", 0.44, hardware="other")
    saved("0005_e.json", 0.45, software="backend=torch; torch=2.13; keras=3.15")
    saved("0006_f.json", 0.46, baseline=None, against="no baseline")  # ungated: judged against nothing
    saved("0007_g.json", float("nan"))  # a number the run could not measure
    (folder / "0008_h.json").write_text("{not json")
    saved("0009_i.json", 0.49)
    found, unreadable = gated_history.judged(peak_history.saved_files(tmp_path), "hw", SOFTWARE, COMMIT)
    assert found == {(CELL, METRIC): [gated_history.Judged(0.41, 0.5), gated_history.Judged(0.49, 0.5)]}
    assert len(unreadable) == 1 and "0008_h.json not read for earlier runs of this commit" in unreadable[0]
    assert gated_history.judged(peak_history.saved_files(tmp_path), "hw", SOFTWARE, None) == ({}, [])


def test_a_dirty_tree_or_a_folder_outside_version_control_has_no_commit():
    assert storage.commit_of({"id": COMMIT, "dirty": False}) == COMMIT
    assert storage.commit_of({"id": COMMIT, "dirty": True}) is None
    assert storage.commit_of({"id": "unversioned", "dirty": False}) is None
    assert storage.commit_of({"id": "unknown", "dirty": False}) is None  # pytest-benchmark's, where git failed
    assert storage.commit_of({}) is None
