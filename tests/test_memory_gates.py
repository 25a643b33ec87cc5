"""Memory gates from each cell's own spread: recorded from saved runs, judged with teeth."""

import json

from accelbench.judge import peak_history
from accelbench.judge.baselines import BaselineFile
from accelbench.judge.gates import Gate
from accelbench.judge.rules import PEAK_GRANULE, SPREAD_FACTOR, SPREAD_FLOOR, RelativeGrowth
from accelbench.judge.verdicts import Verdicts

CELL = "test_inference_memory[cpu-bs256-mlp]"
SCOPE = ("hw", "sw", "digits")
MiB = 2**20


def memory_gate(tmp_path, data=None):
    store = BaselineFile(tmp_path / "memory.json", depth=3, data=data or {})
    return Gate("peak_memory_bytes", store, SCOPE, RelativeGrowth(0.25, slack=2 * MiB), fingerprints=2, spread=True)


def verdicts(**overrides):
    settings = dict(update=False, require_baselines=False, memray_tracking=False, timing_threshold=0.3)
    return Verdicts(**{**settings, **overrides})


def test_recording_takes_the_median_and_spread_of_this_and_the_saved_runs(tmp_path):
    gate = memory_gate(tmp_path)
    history = {(CELL, "peak_memory_bytes"): [2.70 * MiB, 2.72 * MiB, 2.69 * MiB, 2.71 * MiB]}
    made = verdicts(update=True, peak_history=history).against_baseline(CELL, gate, 2.70 * MiB)
    assert made.outcome == "new" and "the median of 5 runs" in made.message
    entry = gate.store.data["hw"]["sw"]["digits"][CELL]
    assert entry["peak_memory_bytes"] == round(2.70 * MiB)
    assert entry["peak_memory_bytes_spread"] == round(0.03 * MiB) and entry["peak_memory_bytes_runs"] == 5


def test_with_too_few_runs_the_fixed_rule_holds_and_the_record_says_so(tmp_path):
    gate = memory_gate(
        tmp_path,
        {
            "hw": {
                "sw": {
                    "digits": {
                        CELL: {"peak_memory_bytes": 1, "peak_memory_bytes_spread": 9, "peak_memory_bytes_runs": 5}
                    }
                }
            }
        },
    )
    made = verdicts(update=True).against_baseline(CELL, gate, 2.70 * MiB)
    assert "its spread is not measured: 1 run(s) of this machine saved, 5 needed" in made.message
    assert gate.store.data["hw"]["sw"]["digits"][CELL] == {
        "peak_memory_bytes": round(2.70 * MiB)
    }  # the old spread dropped


def test_a_halved_baseline_fails_where_the_spread_allows_and_unchanged_peaks_pass(tmp_path):
    """A planted doubling: an inference peak of 8.3 MiB that repeats within 0.06 MiB fails
    against half its baseline; the fixed rule (25% + 2 MiB) let it through."""
    recorded = {"peak_memory_bytes": 8.30 * MiB, "peak_memory_bytes_spread": 0.06 * MiB, "peak_memory_bytes_runs": 10}
    gate = memory_gate(tmp_path, {"hw": {"sw": {"digits": {CELL: recorded}}}})
    unchanged = verdicts().against_baseline(CELL, gate, 8.36 * MiB)
    assert unchanged.outcome == "pass"
    growth = dict(unchanged.statistic)["smallest_detectable_growth"]
    assert (
        abs(growth - (max(SPREAD_FACTOR * 0.06 * MiB, SPREAD_FLOOR * 8.30 * MiB) + PEAK_GRANULE) / (8.30 * MiB)) < 1e-9
    )
    assert growth < 0.16  # 3% and one pymalloc arena
    halved = memory_gate(tmp_path, {"hw": {"sw": {"digits": {CELL: {**recorded, "peak_memory_bytes": 4.15 * MiB}}}}})
    failed = verdicts().against_baseline(CELL, halved, 8.30 * MiB)
    assert failed.outcome == "fail" and "the gate detects growth above +" in failed.message
    assert "x the peak's spread over 10 runs, at least 3% of the baseline" in failed.message
    assert RelativeGrowth(0.25, slack=2 * MiB).holds(7.0 * MiB, 4.15 * MiB)  # a 69% growth the fixed rule missed
    assert verdicts().against_baseline(CELL, halved, 7.0 * MiB).outcome == "fail"


def test_saved_runs_of_this_machine_only_are_read_and_a_corrupt_one_is_named(tmp_path):
    def saved(name, hardware, peak, tensorflow="2.21.0", **recorded):
        path = tmp_path / "Linux-CPython-3.11-64bit" / name
        path.parent.mkdir(exist_ok=True)
        path.write_text(
            json.dumps(
                {
                    "machine_info": {
                        "accelbench_fingerprint": hardware,
                        "tensorflow": tensorflow,
                        "keras": "3.15.1",
                        **recorded,
                    },
                    "benchmarks": [],
                    "accelbench": {"untimed_cells": [{"name": CELL, "extra_info": {"peak_memory_bytes": peak}}]},
                }
            )
        )

    saved("0001_a.json", "hw", 100)
    saved("0002_b.json", "other", 200)
    saved("0003_c.json", "hw", 300, tensorflow="2.20.0")
    saved("0004_d.json", "hw", 400)
    (tmp_path / "Linux-CPython-3.11-64bit" / "0005_e.json").write_text("{not json")
    # The same machine and versions, its pytest process on JAX: its cells named without a
    # backend are JAX's, and their peaks say nothing of TensorFlow's.
    jax_software = "backend=jax; jax=0.10; keras=3.15"
    saved("0006_f.json", "hw", 600, accelbench_process_backend="jax", accelbench_software=jax_software)
    saved("0007_g.json", "hw", 700, accelbench_process_backend="tensorflow")
    tensorflow_software = "backend=tensorflow; tensorflow=2.21; keras=3.15"
    found, unreadable = peak_history.peaks(peak_history.saved_files(tmp_path), "hw", tensorflow_software)
    assert found == {(CELL, "peak_memory_bytes"): [100.0, 400.0, 700.0]}
    found, _ = peak_history.peaks(peak_history.saved_files(tmp_path), "hw", jax_software)
    assert found == {(CELL, "peak_memory_bytes"): [600.0]}
    assert len(unreadable) == 1 and "0005_e.json not read for memory spreads: JSONDecodeError" in unreadable[0]
