"""`accelbench history`: saved runs read into one series per cell, number and machine; changes
of level named with their run, size and direction; messy storage (missing cells, a machine
with few runs, a corrupt file) read as far as it can be, each problem in one line."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from accelbench import cli
from accelbench.judge import changepoints
from accelbench.results.history import series

HERE_MACHINE = "arch=x86_64; cpu=AMD EPYC; caches=L2 1024K; isa=avx512_core_bf16; cpus=2; accelerators=none"
OTHER_MACHINE = "arch=x86_64; cpu=Intel Xeon; caches=L2 2048K; isa=avx512_core_amx; cpus=8; accelerators=none"


def saved_run(
    storage: Path,
    number: int,
    cells: dict[str, float],
    machine: str = HERE_MACHINE,
    commit: str | None = None,
    tensorflow: str = "2.21.0",
    dirty: bool = False,
    peak: int | None = None,
    backend: str | None = None,
) -> Path:
    """A run as pytest-benchmark saves it: its machine, commit, date, and each training cell's
    rounds (seconds per sample), written where --benchmark-autosave writes it."""
    benchmarks = [
        {
            "name": f"test_train[cpu-bs256-{model}]",
            "stats": {"median": seconds * 256},
            "extra_info": {
                "accelbench_cell": {"benchmark": "train_bench", "device": "cpu", "model": model, "column": "bs256"},
                "seconds_per_sample": [seconds * 1.01, seconds, seconds * 0.99],
                **({"peak_memory_bytes": peak} if peak else {}),
            },
        }
        for model, seconds in cells.items()
    ]
    document = {
        "machine_info": {
            "accelbench_fingerprint": machine,
            "tensorflow": tensorflow,
            "keras": "3.15.1",
            **({"accelbench_process_backend": backend, "jax": "0.10.2"} if backend else {}),
        },
        "commit_info": {"id": commit or f"{number:040x}", "dirty": dirty},
        "datetime": f"2026-11-{1 + number // 24:02d}T{number % 24:02d}:00:00+00:00",
        "benchmarks": benchmarks,
        "accelbench": {"verdicts": []},
    }
    path = storage / "Linux-CPython-3.11-64bit" / f"{number:04d}_run.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(document))
    return path


def noisy(rng, level: float) -> float:
    return level * float(np.exp(rng.normal(0, 0.02)))


def test_a_planted_step_is_named_at_its_first_run_and_an_unchanged_cell_has_none(tmp_path, capsys):
    rng = np.random.default_rng(1)
    for number in range(12):
        wide = number >= 8  # runs 9-12: the mlp twice as slow
        saved_run(
            tmp_path,
            number,
            {"mlp": noisy(rng, 40e-6 if wide else 20e-6), "cnn": noisy(rng, 50e-6)},
            commit="a1b2c3d4e5" + "0" * 30 if number == 8 else None,
        )
    assert cli.main(["history", str(tmp_path), "--markdown", str(tmp_path / "changes.md")]) == 0
    out = capsys.readouterr().out.splitlines()
    changes = [line for line in out if line.startswith(("REGRESSION", "change"))]
    assert len(changes) == 1, out
    assert changes[0].startswith("REGRESSION  test_train[cpu-bs256-mlp] time_per_sample: ")
    assert "from run 9 of 12 (commit a1b2c3d4e5, 2026-11-01 08:00), a regression" in changes[0]
    ratio = float(changes[0].split("(")[1].split("x")[0])
    assert 1.9 < ratio < 2.1
    assert "1 of 2 searched series: no change of level" in out
    markdown = (tmp_path / "changes.md").read_text()
    assert "| regression | `test_train[cpu-bs256-mlp]` | time_per_sample |" in markdown and "cnn" not in markdown


def test_messy_storage_is_read_as_far_as_it_goes_with_one_line_per_problem(tmp_path, capsys):
    rng = np.random.default_rng(2)
    for number in range(10):
        cells = {"mlp": noisy(rng, 20e-6)}
        if number % 3:  # a cell missing from some runs: its series is the runs that have it
            cells["cnn"] = noisy(rng, 50e-6)
        saved_run(tmp_path, number, cells)
    for number in range(10, 13):  # a new machine, three runs so far
        saved_run(tmp_path, number, {"mlp": 5e-6}, machine=OTHER_MACHINE)
    corrupt = tmp_path / "Linux-CPython-3.11-64bit" / "0099_corrupt.json"
    corrupt.write_text('{"benchmarks": [')
    logs = tmp_path / "loadgen" / "20261125T124354" / "test_serving-cpu-mlp-offline" / "run-1"
    logs.mkdir(parents=True)  # the serving cells' LoadGen logs: JSON files, not runs
    (logs / "mlperf_log_accuracy.json").write_text("[\n]")
    assert cli.main(["history", str(tmp_path), str(tmp_path / "missing")]) == 0
    captured = capsys.readouterr()
    out = captured.out.splitlines()
    assert out[0] == "accelbench history: 13 saved run(s), 3 series on 2 machine(s)"
    assert any(line.startswith(f"unreadable  not read: {corrupt}: not JSON") for line in out)
    assert any(line.startswith(f"unreadable  {tmp_path / 'missing'}: no such file or folder") for line in out)
    assert not any("loadgen" in line for line in out), out
    assert f"not enough history: 1 series with 3 run(s) ({changepoints.MIN_RUNS} needed), not searched" in out
    assert "2 of 2 searched series: no change of level" in out


def test_a_library_upgrade_that_slows_a_cell_is_a_change_that_names_the_upgrade(tmp_path, capsys):
    rng = np.random.default_rng(3)
    for number in range(10):
        upgraded = number >= 6
        saved_run(
            tmp_path,
            number,
            {"mlp": noisy(rng, 30e-6 if upgraded else 20e-6)},
            tensorflow="2.22.0" if upgraded else "2.21.0",
        )
    cli.main(["history", str(tmp_path)])
    (change,) = [line for line in capsys.readouterr().out.splitlines() if line.startswith("REGRESSION")]
    assert "libraries tensorflow 2.21.0 keras 3.15.1 -> tensorflow 2.22.0 keras 3.15.1" in change


def test_runs_of_another_process_backend_are_series_of_their_own_not_a_change(tmp_path, capsys):
    """A machine's main runs on TensorFlow and, in another job, on JAX: the same cell names, each
    its own backend's cells. Interleaved in one storage, they are two series each without a
    change; as one series, the JAX runs' 2x would read as changes back and forth."""
    rng = np.random.default_rng(5)
    for number in range(16):
        on_jax = number % 2 == 1
        saved_run(tmp_path, number, {"mlp": noisy(rng, 40e-6 if on_jax else 20e-6)}, backend="jax" if on_jax else None)
    assert cli.main(["history", str(tmp_path)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert not [line for line in out if line.startswith(("REGRESSION", "change"))], out
    assert out[0] == "accelbench history: 16 saved run(s), 2 series on 1 machine(s) and 2 process backends"
    assert "2 of 2 searched series: no change of level" in out
    assert out[-2:] == [f"machine: {HERE_MACHINE}, process backend {name}" for name in ("jax", "tensorflow")]


def test_the_push_that_confirms_a_regression_fails_and_the_next_does_not(tmp_path, capsys):
    rng = np.random.default_rng(4)
    outcomes = []
    for number in range(14):
        saved_run(tmp_path, number, {"mlp": noisy(rng, 30e-6 if number >= 9 else 20e-6)})
        outcomes.append(cli.main(["history", str(tmp_path), "--fail-on-regression"]))
    # One push fails: the first whose runs make the detector name the change (not the first slow
    # run alone: one run far off is not a level), and no later push fails again for it.
    assert outcomes.count(1) == 1 and outcomes.index(1) >= 10, outcomes
    last = [line for line in capsys.readouterr().out.splitlines() if line.startswith("REGRESSION")][-1]
    assert "from run 10 of 14" in last


def test_by_commit_a_push_s_three_runs_are_one_point_their_median_so_a_slow_run_is_no_change(tmp_path, capsys):
    """Each push runs the suite three times and one of them is slowed a third (a busy neighbour):
    the median of three takes no notice, and a 20% step in the mlp from the ninth commit on is
    named at that commit, the cnn's cell with none."""
    rng = np.random.default_rng(6)
    for push in range(12):
        slow_run = rng.integers(3)
        for repeat in range(3):
            busy = 1.33 if repeat == slow_run else 1.0
            saved_run(
                tmp_path,
                3 * push + repeat,
                {"mlp": busy * noisy(rng, 24e-6 if push >= 8 else 20e-6), "cnn": busy * noisy(rng, 50e-6)},
                commit=f"{push:02d}" + "a" * 38,
            )
    assert cli.main(["history", str(tmp_path), "--by-commit"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == (
        "accelbench history: 36 saved run(s) as 12 point(s), one per commit and machine, 2 series on 1 machine(s)"
    )
    (change,) = [line for line in out if line.startswith(("REGRESSION", "change"))]
    assert change.startswith("REGRESSION  test_train[cpu-bs256-mlp] time_per_sample: ")
    assert "from commit 9 of 12 (commit 08aaaaaaaa, 3 runs, 2026-11-02 00:00), a regression" in change
    assert "1 of 2 searched series: no change of level" in out


def test_by_commit_runs_with_uncommitted_changes_and_other_machines_stay_points_of_their_own(tmp_path, capsys):
    for number in range(4):  # one commit, clean: one point
        saved_run(tmp_path, number, {"mlp": 20e-6}, commit="c" * 40)
    for number in range(4, 10):  # the same commit with uncommitted changes: a point each
        saved_run(tmp_path, number, {"cnn": 50e-6}, commit="c" * 40, dirty=True)
    saved_run(tmp_path, 10, {"mlp": 5e-6}, commit="c" * 40, machine=OTHER_MACHINE)
    for number in range(11, 17):  # not in git: pytest-benchmark says "unversioned", a point each
        saved_run(tmp_path, number, {"svm": 9e-6}, commit="unversioned")
    assert cli.main(["history", str(tmp_path), "--by-commit"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == (
        "accelbench history: 17 saved run(s) as 14 point(s), one per commit and machine, 4 series on 2 machine(s)"
    )
    assert f"not enough history: 2 series with 1 commit(s) ({changepoints.MIN_RUNS} needed), not searched" in out
    assert "2 of 2 searched series: no change of level" in out


def test_by_commit_a_point_is_the_median_time_and_the_largest_peak_of_the_commit_s_runs(tmp_path):
    """A peak takes a few values an arena apart; the largest of a push's runs is what it must hold."""
    for number, (seconds, peak) in enumerate([(20e-6, 1_070_000), (26e-6, 1_140_000), (21e-6, 1_070_000)]):
        saved_run(tmp_path, number, {"mlp": seconds}, commit="d" * 40, peak=peak)
    history = series.read([tmp_path], by_commit=True)
    points = {found.number.name: found.points for found in history.series}
    (time,), (peak,) = points["time_per_sample"], points["peak_memory_bytes"]
    assert time.value == pytest.approx(21e-6 * 0.99) and time.runs == 3  # the fastest round of the median run
    assert peak.value == 1_140_000 and peak.runs == 3
    assert history.unit == "commit" and history.point_count == 1 and history.runs == 3
    # A series of medians of 3 runs or more is searched at the lower penalty; a peak's is not.
    penalties = {found.number.name: found.penalty for found in history.series}
    assert penalties == {"time_per_sample": changepoints.MEDIANS_PENALTY, "peak_memory_bytes": changepoints.PENALTY}
    assert all(found.penalty == changepoints.PENALTY for found in series.read([tmp_path]).series)


def test_by_commit_the_push_that_confirms_a_regression_fails_once_after_all_its_runs(tmp_path, capsys):
    """The workflow on main: each push saves 4 runs, then reads the history --by-commit."""
    rng = np.random.default_rng(7)
    outcomes = []
    for push in range(13):
        for repeat in range(4):
            saved_run(
                tmp_path,
                4 * push + repeat,
                {"mlp": noisy(rng, 22e-6 if push >= 8 else 20e-6)},
                commit=f"{push:02d}" + "b" * 38,
            )
        outcomes.append(cli.main(["history", str(tmp_path), "--by-commit", "--fail-on-regression"]))
    assert outcomes.count(1) == 1 and outcomes.index(1) >= 9, outcomes
    last = [line for line in capsys.readouterr().out.splitlines() if line.startswith("REGRESSION")][-1]
    assert "from commit 9 of 13 (commit 08bbbbbbbb, 4 runs," in last


def test_no_saved_run_is_one_line_and_exit_2(tmp_path, capsys):
    assert cli.main(["history", str(tmp_path)]) == 2
    assert capsys.readouterr().err.strip().splitlines()[-1] == (
        f"accelbench history: error: no saved run found in {tmp_path} "
        "(pytest benchmarks --benchmark-autosave saves each run there)"
    )


def test_the_trend_page_has_a_plot_for_the_changed_series_and_one_for_the_rest(tmp_path):
    rng = np.random.default_rng(5)
    for number in range(10):
        saved_run(tmp_path, number, {"mlp": noisy(rng, 40e-6 if number >= 6 else 20e-6), "cnn": noisy(rng, 50e-6)})
    assert cli.main(["history", str(tmp_path), "-o", str(tmp_path / "history.html")]) == 0
    page = (tmp_path / "history.html").read_text()
    assert page.count("data-plot='trend'") == 2 and "series with a change of level" in page
    assert "data:image/png;base64," in page


def test_a_runs_libraries_are_its_process_backends_so_a_jax_run_names_jax_not_tensorflow(tmp_path):
    from accelbench.results.report.runs import load_run, names

    on_jax = load_run(saved_run(tmp_path, 1, {"mlp": 20e-6}, backend="jax"))
    assert on_jax.process_backend == "jax" and on_jax.label.startswith("jax 0.10.2 keras 3.15.1 · ")
    before = load_run(saved_run(tmp_path, 2, {"mlp": 20e-6}))  # saved before the backend was recorded
    assert before.process_backend == "tensorflow" and before.label.startswith("tensorflow 2.21.0 keras 3.15.1 · ")
    # Side by side in a report, each run's name says its backend: their cells of one name are each backend's.
    assert [name.split()[-1] for name in names([on_jax, before])] == ["jax", "tensorflow"]
    assert names([before]) == [before.commit_date]
