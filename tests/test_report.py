"""`accelbench report` and the summary tables, on runs written here: no TensorFlow, no benchmark."""

from __future__ import annotations

import json
import re
import sys

import pytest

from accelbench import measured
from accelbench.benches import catalog
from accelbench.judge import analysis
from accelbench.results import summary
from accelbench.results.report import command, markdown, plots
from accelbench.results.report.runs import SCHEMA_0_SECTIONS, ReportError, load_runs, sections_of, tagged_cells

CELL = measured.CELL_KEY


def cell(name, benchmark, device, model, column="", batch_size=None, **info):
    where = {"benchmark": benchmark, "device": device, "model": model, "column": column}
    if batch_size:
        where["batch_size"] = batch_size
    return {"name": name, "extra_info": {CELL: where, **info}}


def timed(entry, median=0.01):
    return {
        **entry,
        "group": "g",
        "fullname": f"benchmarks/x.py::{entry['name']}",
        "stats": {"median": median, "min": median * 0.9, "iqr": median / 10, "rounds": 8},
    }


def run_document(machine_class="x86_64-2cpu", speed=1.0, tensorflow="2.21.0", models=("mlp", "cnn")):
    """A pytest-benchmark run as the plugin saves it, with every kind the report draws."""
    benchmarks, untimed = [], []
    for model in models:
        for batch in (32, 256, 1024):
            rate = speed * batch * 100 / (1 + batch / 512)
            benchmarks.append(
                timed(
                    cell(
                        f"test_train[cpu-bs{batch}-{model}]",
                        "train_bench",
                        "cpu",
                        model,
                        f"bs{batch}",
                        batch,
                        samples_per_s=rate,
                        verdicts=[],
                    )
                )
            )
            benchmarks.append(
                timed(
                    cell(
                        f"test_inference[cpu-bs{batch}-{model}]",
                        "inference_bench",
                        "cpu",
                        model,
                        f"bs{batch}",
                        batch,
                        samples_per_s=3 * rate,
                    )
                )
            )
            benchmarks.append(
                timed(
                    cell(
                        f"test_train[gpu-bs{batch}-{model}]",
                        "train_bench",
                        "gpu",
                        model,
                        f"bs{batch}",
                        batch,
                        samples_per_s=rate * batch / 100,
                    )
                )
            )
            untimed.append(
                cell(
                    f"test_train_memory[cpu-bs{batch}-{model}]",
                    "train_memory",
                    "cpu",
                    model,
                    f"bs{batch}",
                    batch,
                    peak_memory_bytes=2**20 * (40 + batch / 10),
                    verdicts=[
                        {
                            "cell": f"test_train_memory[cpu-bs{batch}-{model}]",
                            "metric": "peak_memory_bytes",
                            "outcome": "pass",
                        }
                    ],
                )
            )
        benchmarks.append(
            timed(
                cell(
                    f"test_batch_speedup[cpu-bs1024-over-bs32-{model}]",
                    "batch_speedup",
                    "cpu",
                    model,
                    "bs1024/bs32",
                    1024,
                    speedup=2.9,
                    verdicts=[
                        {
                            "cell": f"test_batch_speedup[cpu-bs1024-over-bs32-{model}]",
                            "metric": "speedup",
                            "outcome": "fail",
                            "measured": 2.9,
                            "baseline": 4.5,
                            "against": "baseline",
                            "tolerance": "30% relative",
                            "message": f"speedup regression in x of {model}",
                        }
                    ],
                )
            )
        )
        benchmarks.append(
            timed(
                cell(
                    f"test_time_to_accuracy[cpu-bs100-{model}]",
                    "accuracy_bench",
                    "cpu",
                    model,
                    "bs100",
                    100,
                    accuracy=0.95,
                    target_accuracy=0.95,
                    accuracy_per_epoch=[0.8, 0.9, 0.95],
                    cumulative_train_seconds=[1.0, 2.0, 3.0],
                )
            )
        )
        untimed.append(
            cell(
                f"test_memory_scaling[cpu-{model}]",
                "memory_scaling",
                "cpu",
                model,
                per_sample_bytes=5000.0,
                fixed_bytes=4e7,
                largest_batch=4096,
                ladder_batch_sizes=[32, 64, 128],
                ladder_peak_bytes=[4.02e7, 4.03e7, 4.06e7],
            )
        )
        untimed.append(
            cell(
                f"test_serving[cpu-{model}-server]",
                "serving_bench",
                "cpu",
                model,
                "Server",
                scenario="Server",
                loadgen_valid=True,
                serving_rate=30000.0 * speed,
                serving_latency_ms=3.0,
                latency_bound_ms=10.0,
                best_batching="max 32, 1 ms",
                loadgen_logs=f".benchmarks/loadgen/x/test_serving-cpu-{model}-server",
                server_runs=[
                    {
                        "batching": "max 32, 1 ms",
                        "qps": qps,
                        "valid": qps <= 30000,
                        "p50_ms": 1.0,
                        "p90_ms": 2.0,
                        "p99_ms": 3.0 if qps <= 30000 else 50.0,
                    }
                    for qps in (15000.0, 30000.0, 60000.0, 45000.0)
                ],
            )
        )
    sizes = [100, 200, 400, 800]
    benchmarks.append(
        timed(
            cell(
                "test_train_data_scaling[cpu-svm]",
                "train_data_scaling",
                "cpu",
                "svm",
                phase="train",
                sizes=sizes,
                seconds=[0.01 * (n / 100) ** 2 for n in sizes],
                seconds_rounds=[[0.01 * (n / 100) ** 2] * 3 for n in sizes],
                peak_memory_bytes=[1e6 * n for n in sizes],
                exponent=2.0,
                exponent_stderr=0.01,
                fit={"a": 0.0, "b": 1e-6, "k": 2.0},
                memory_fit={"a": 0.0, "b": 1e6, "k": 1.0},
                target_n=60e9,
                projected_seconds=3.6e15,
                projected_seconds_ci95=[3e15, 4e15],
                projected_peak_memory_bytes=6e16,
                projected_peak_memory_bytes_ci95=[5e16, 7e16],
                backtest={"size": 800, "measured": 0.64, "predicted": 0.64, "ci95": [0.6, 0.7]},
                backtest_ok=True,
            )
        )
    )
    return {
        "machine_info": {
            "accelbench_machine_class": machine_class,
            "tensorflow": tensorflow,
            "keras": "3.12.0",
            "node": "box",
            "cpu": {"brand_raw": "Some CPU", "count": 2, "flags": ["sse"] * 500},
        },
        "commit_info": {"id": "abcdef1234567890", "dirty": False},
        "datetime": "2026-11-22T21:00:00+00:00",
        "version": "5.3.1",
        "benchmarks": benchmarks,
        "accelbench": {
            "verdicts": [v for b in benchmarks + untimed for v in b["extra_info"].get("verdicts", [])],
            "untimed_cells": untimed,
            "projections": [
                {
                    "model": "svm",
                    "phase": "train",
                    "device": "cpu",
                    "basis": "measured",
                    "target_n": 60e9,
                    "hours": 1e12,
                    "hours_ci95": [1e11, 1e13],
                    "dollars": None,
                    "projection_verdict": "unsafe: far",
                }
            ],
        },
    }


@pytest.fixture
def two_runs(tmp_path):
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text(json.dumps(run_document()))
    b.write_text(json.dumps(run_document("x86_64-64cpu-1-x-H100", speed=7.0, tensorflow="2.20.0")))
    return a, b


def names_of(path):
    document = json.loads(path.read_text())
    return [e["name"] for e in document["benchmarks"] + document["accelbench"]["untimed_cells"]]


def test_report_of_one_run_has_every_cell_and_a_plot_of_each_kind(tmp_path, two_runs):
    out = tmp_path / "report.html"
    assert command.main(["report", str(two_runs[0]), "-o", str(out)]) == 0
    page = out.read_text()
    for name in names_of(two_runs[0]):
        assert name in page, name
    kinds = re.findall(
        r"<figure data-plot='([a-z ]+)'><h3>[^<]*</h3><img alt='[^']*' src='data:image/png;base64,", page
    )
    assert {"throughput", "speedup", "memory", "data size", "accuracy", "serving"} <= set(kinds)
    assert "Its logs: <a href='file:///" in page and "test_serving-cpu-mlp-server" not in page  # the run's folder
    assert not re.search(r"(src|href)=['\"]https?:", page)  # opens with no network
    assert "speedup regression in x of mlp" in page and "Some CPU, 2 logical cores" in page
    assert "flags" not in page and "sse, sse" not in page and "'sse'" not in page  # the CPU's flags: no description


def test_two_machine_classes_merge_and_nothing_of_either_is_lost(tmp_path, two_runs):
    out, md = tmp_path / "report.html", tmp_path / "summary.md"
    assert command.main(["report", str(two_runs[0]), str(two_runs[1]), "-o", str(out), "--markdown", str(md)]) == 0
    page, text = out.read_text(), md.read_text()
    tags = ("abcdef1 11-22 21:00 x86_64-2cpu", "abcdef1 11-22 21:00 x86_64-64cpu-1-x-H100")  # two machines: named
    for tag, path in zip(tags, two_runs):
        for name in names_of(path):
            assert re.search(rf"<td>{tag}</td><td>{re.escape(name)}</td>", page), (tag, name)
    assert (
        "<abbr title='x86_64-2cpu'>x86_64-2cpu</abbr></td><td>tensorflow 2.21.0" in page
    )  # saved without a fingerprint: its class
    assert "<abbr title='x86_64-64cpu-1-x-H100'>x86_64-64cpu-1-x-H100</abbr></td><td>tensorflow 2.20.0" in page
    runs = load_runs(two_runs)
    tables = {t.title: t for t in summary.tables([(r.tag, list(r.cells)) for r in runs], sections_of(runs))}
    training = tables["training throughput (samples/s), median round"]
    assert training.header == ("device", "model", "run", "bs32", "bs256", "bs1024")  # as wide as one run's
    cpu_mlp = [row for row in training.rows if row[:2] == ("cpu", "mlp")]
    assert [row[2] for row in cpu_mlp] == list(tags)  # a row per run, one under the other
    assert all(value != "-" for row in cpu_mlp for value in row)  # every run's number is there
    for run in runs:  # every number of every cell of both runs is in some table of the summary
        for record in run.cells_of("train_bench", "inference_bench"):
            assert summary.rate(record.info["samples_per_s"]) in str(tables), record.name
    assert f"- **{tags[0]}**: x86_64-2cpu (`x86_64-2cpu`) · tensorflow 2.21.0" in text
    assert f"- **{tags[1]}**: x86_64-64cpu-1-x-H100 (`x86_64-64cpu-1-x-H100`) · tensorflow 2.20.0" in text
    for tag in tags:  # each run's verdicts, tagged
        assert f"| {tag} | test_batch_speedup[cpu-bs1024-over-bs32-mlp] | speedup | fail |" in text
    assert "speedup regression in x of mlp" in text


def test_markdown_stays_under_60_kb_for_a_big_grid(tmp_path):
    path = tmp_path / "big.json"
    path.write_text(json.dumps(run_document(models=tuple(f"model{i}" for i in range(400)))))
    text = markdown.render(load_runs([path]))
    assert len(text.encode()) <= markdown.LIMIT
    assert "Left out to stay under 60 kB" in text


@pytest.mark.parametrize(
    "content, says",
    [
        (None, "no such file or folder"),
        ("{not json", "not JSON"),
        ('{"a": 1}', "not a pytest-benchmark run"),
        ('{"machine_info": {}, "benchmarks": [{"name": "test_x", "extra_info": {}}]}', "no accelbench cells"),
    ],
)
def test_bad_input_is_one_clear_line_and_a_nonzero_exit(tmp_path, capsys, content, says):
    path = tmp_path / "run.json"
    if content is not None:
        path.write_text(content)
    assert command.main(["report", str(path), "-o", str(tmp_path / "r.html")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and says in err and str(path) in err and "Traceback" not in err
    assert not (tmp_path / "r.html").exists()


def test_a_storage_folder_stands_for_its_runs(tmp_path, two_runs):
    storage = tmp_path / "storage" / "Linux-CPython-3.11-64bit"
    storage.mkdir(parents=True)
    for index, path in enumerate(two_runs, 1):
        (storage / f"000{index}_run.json").write_text(path.read_text())
    assert [run.path.name for run in load_runs([tmp_path / "storage"])] == ["0001_run.json", "0002_run.json"]
    # the serving cells' LoadGen logs, kept beside the runs, hold JSON files that are not runs
    logs = tmp_path / "storage" / "loadgen" / "20261125T124354" / "test_serving-cpu-mlp-offline" / "run-1"
    logs.mkdir(parents=True)
    (logs / "mlperf_log_accuracy.json").write_text("[\n]")
    (logs / "mlperf_log_trace.json").write_text('{ "traceEvents": [] }')
    assert [run.path.name for run in load_runs([tmp_path / "storage"])] == ["0001_run.json", "0002_run.json"]
    assert [run.path.name for run in load_runs([storage])] == ["0001_run.json", "0002_run.json"]
    (tmp_path / "empty").mkdir()
    with pytest.raises(ReportError, match="a folder with no .json runs"):
        load_runs([tmp_path / "empty"])


def test_the_report_never_imports_tensorflow(two_runs, tmp_path):
    import subprocess

    code = (
        "import sys; from accelbench.results.report import command; "
        f"command.main(['report', {str(two_runs[0])!r}, '-o', {str(tmp_path / 'r.html')!r}]); "
        "assert 'tensorflow' not in sys.modules and 'keras' not in sys.modules, 'imported'"
    )
    subprocess.run([sys.executable, "-c", code], check=True, capture_output=True)


def test_summary_rows_are_device_by_model_with_batch_columns_and_verdicts():
    records = [
        summary.CellRecord.from_extra_info(e["name"], e["extra_info"])
        for e in run_document()["benchmarks"] + run_document()["accelbench"]["untimed_cells"]
    ]
    tables = {t.title: t for t in summary.tables([("", records)], catalog.sections())}
    training = tables["training throughput (samples/s), median round"]
    assert training.header == ("device", "model", "bs32", "bs256", "bs1024")
    assert [row[:2] for row in training.rows] == [("cpu", "mlp"), ("gpu", "mlp"), ("cpu", "cnn"), ("gpu", "cnn")]
    assert training.rows[0][2] == "3.01k/s"  # 3200 / 1.0625
    assert (
        tables["speedup, best round over best round (a shortfall must also show in interleaved pairs)"].rows[0][2]
        == "2.90x FAIL"
    )
    assert tables["host memory peak of one step"].rows[0][2] == "43.2 MiB ok"  # 40 MiB + 32/10
    lines = summary.text_lines(training)
    assert lines[1].split() == ["device", "model", "bs32", "bs256", "bs1024"]


@pytest.mark.parametrize("value, text", [(31234, "31.2k/s"), (512, "512/s"), (2.5e6, "2.5M/s"), (0.5, "0.5/s")])
def test_rates_read_in_units(value, text):
    assert summary.rate(value) == text


def test_crossover_is_found_between_the_batch_sizes_around_it():
    sizes = [32, 64, 128, 256, 512]
    assert analysis.crossover(sizes, [0.2, 0.5, 0.8, 1.6, 3.0]) == pytest.approx(128 * 2 ** (0.2 / 0.8))
    assert analysis.crossover(sizes, [1.2, 2, 3, 4, 5]) == 32  # leads from the start
    assert analysis.crossover(sizes, [0.1, 0.2, 0.3, 0.4, 0.5]) is None


FINGERPRINT = (
    "arch=x86_64; cpu=AMD EPYC; caches=L1d 32K, L1i 32K, L2 512K, L3 32768K; isa=avx; onednn=on; cpus=2; "
    "accelerators=none"
)
NO_BASELINES = (
    "no peak_memory_bytes baselines for this machine's fingerprint and digits in memory.json; nearest "
    "recorded machine differs in isa: avx2 there, avx here"
)


@pytest.fixture
def unrecorded_machine(tmp_path):
    """A run on a fingerprint with no baselines: 22 ungated peaks that share one reason."""
    document = run_document(models=("mlp",))
    document["machine_info"]["accelbench_fingerprint"] = FINGERPRINT
    document["accelbench"]["verdicts"] += [
        {
            "cell": f"test_train_memory[cpu-bs{b}-m{i}]",
            "metric": "peak_memory_bytes",
            "outcome": "ungated",
            "measured": 3.717e6 + i * 2**20,
            "baseline": None,
            "against": None,
            "tolerance": "",
            "message": NO_BASELINES,
        }
        for i in range(11)
        for b in (32, 256)
    ]
    path = tmp_path / "run.json"
    path.write_text(json.dumps(document))
    return path


def test_verdicts_that_share_a_reason_share_one_row_with_units_and_the_fingerprint(tmp_path, unrecorded_machine):
    out, md = tmp_path / "report.html", tmp_path / "summary.md"
    assert command.main(["report", str(unrecorded_machine), "-o", str(out), "--markdown", str(md)]) == 0
    page, text = out.read_text(), md.read_text()
    for shown in (page, text):
        assert shown.count(NO_BASELINES.replace("'", "&#x27;") if shown is page else NO_BASELINES) == (
            2 if shown is page else 1
        )  # the page: its attention table and its full list, one row each
        assert "22 cells: test_train_memory[cpu-bs32-m0], test_train_memory[cpu-bs256-m0]" in shown
        assert "3.5 MiB to 13.5 MiB" in shown  # bytes in units, never 3.717e+06
        assert not re.search(r"(?<![\w.])\d+(\.\d+)?e[+-]\d+", re.sub(r"data:image/png;base64,[^'\"]+", "", shown))
    assert f"<td>{FINGERPRINT}</td>" in page and f"`{FINGERPRINT}`" in text


def test_two_batch_sizes_are_points_not_a_line(monkeypatch):
    """The quick preset measures two batch sizes: a line through two points says nothing."""
    drawn = []

    class Axes:
        def plot(self, xs, ys, **style):
            drawn.append((len(xs), style.get("linestyle")))

    plots.measured_line(Axes(), [32, 256], [1.0, 2.0], marker="o")
    plots.measured_line(Axes(), [32, 64, 128], [1.0, 2.0, 3.0], marker="o")
    assert drawn == [(2, ""), (3, None)]


def test_runs_are_named_by_commit_date_and_machine_with_the_fingerprint_on_hover(tmp_path):
    """Runs of one machine: commit and date; of several: the machine's label too; a name two
    runs share is numbered; the whole fingerprint is the label's hover and a Machines row."""
    fingerprint = (
        "arch=x86_64; cpu=AMD EPYC; caches=L2 1024K; isa=avx512_core_bf16; onednn=on; cpus=2; accelerators=none"
    )
    paths = []
    for index, (commit, dirty, when) in enumerate(
        [
            ("1234567890", False, "2026-11-24T19:41:21+00:00"),
            ("89abcdef00", True, "2026-11-24T20:05:00+00:00"),
            ("89abcdef00", True, "2026-11-24T20:05:30+00:00"),
        ]
    ):
        document = run_document()
        document["machine_info"]["accelbench_fingerprint"] = fingerprint
        document["commit_info"], document["datetime"] = {"id": commit, "dirty": dirty}, when
        paths.append(tmp_path / f"run{index}.json")
        paths[-1].write_text(json.dumps(document))
    runs = load_runs(paths)
    assert [run.tag for run in runs] == ["1234567 11-24 19:41", "89abcde+ 11-24 20:05 (1)", "89abcde+ 11-24 20:05 (2)"]
    assert runs[0].machine_label == "AMD EPYC 2c avx512_core_bf16"
    out = tmp_path / "report.html"
    assert command.main(["report", *map(str, paths), "-o", str(out)]) == 0
    page = out.read_text()
    assert f"<abbr title='{fingerprint}'>AMD EPYC 2c avx512_core_bf16</abbr>" in page
    assert "<th>1234567 11-24 19:41</th>" in page  # the Machines table's column
    other = json.loads(paths[0].read_text())
    other["machine_info"]["accelbench_fingerprint"] = fingerprint.replace("accelerators=none", "accelerators=1x H100")
    paths[0].write_text(json.dumps(other))
    assert load_runs(paths)[0].tag == "1234567 11-24 19:41 AMD EPYC 2c avx512_core_bf16 + 1x H100"


def test_the_report_draws_the_plots_a_run_names_and_leaves_out_a_name_it_does_not_draw(tmp_path):
    document = run_document()
    document["accelbench"] = {**document.get("accelbench", {}), "schema": 2, "plots": ["speedup", "no_such_plot"]}
    path = tmp_path / "run.json"
    path.write_text(json.dumps(document))
    assert {plot.name for plot in plots.all_plots(load_runs([path]))} == {"speedup"}


def test_a_run_of_a_newer_schema_is_one_line_and_an_older_one_loads(tmp_path, capsys):
    """A run saved before runs carried their schema (and their sections) loads as schema 0, laid
    out in the tables runs had then, its plots all drawn; one saved by a newer accelbench is
    refused in one line rather than misread."""
    older = tmp_path / "older.json"
    older.write_text(json.dumps(run_document()))
    loaded = load_runs([older])[0]
    assert loaded.sections == SCHEMA_0_SECTIONS and loaded.plots is None
    titles = [table.title for table in summary.tables(tagged_cells([loaded]), sections_of([loaded]))]
    assert "training throughput (samples/s), median round" in titles
    assert [plot.name for plot in plots.all_plots([loaded])][:1] == ["throughput"]
    newer = tmp_path / "newer.json"
    document = run_document()
    document["accelbench"]["schema"] = 99
    newer.write_text(json.dumps(document))
    assert command.main(["report", str(newer), "-o", str(tmp_path / "r.html")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "schema 99" in err and "upgrade accelbench" in err


def test_a_recipe_that_misses_its_target_is_a_dash_in_the_epochs_table_not_a_missing_row():
    reached = cell("test_time_to_accuracy[cpu-bs100-mlp]", "accuracy_bench", "cpu", "mlp", "recipe",
                   accuracy=0.97, target_accuracy=0.95, epochs_to_target=3, seconds_to_target=1.5)  # fmt: skip
    missed = cell("test_time_to_accuracy[cpu-bs128-my_mlp]", "accuracy_bench", "cpu", "my_mlp", "recipe",
                  accuracy=0.87, target_accuracy=0.95)  # fmt: skip
    records = [summary.CellRecord.from_extra_info(e["name"], e["extra_info"]) for e in (reached, missed)]
    tables = {t.title: t for t in summary.tables([("", records)], catalog.sections())}
    epochs = tables["recipe: epochs to its target quality ('-': not reached, or no target)"]
    assert epochs.rows == (("cpu", "mlp", "3"), ("cpu", "my_mlp", "-"))
    assert tables["recipe: training seconds to its target quality"].rows[1] == ("cpu", "my_mlp", "-")


def test_a_run_outside_a_git_checkout_is_named_no_commit_not_a_cut_word(tmp_path):
    document = run_document()
    document["commit_info"], document["datetime"] = {"id": "unversioned", "dirty": False}, "2026-11-25T09:14:00+00:00"
    path = tmp_path / "run.json"
    path.write_text(json.dumps(document))
    assert load_runs([path])[0].tag == "no commit 11-25 09:14"  # pytest-benchmark's id there: "unversioned"


def test_an_ab_run_s_cells_served_under_load_show_both_sides_numbers_in_the_page_and_the_markdown(tmp_path):
    document = run_document(models=("mlp",))
    document["accelbench"]["verdicts"] += [
        {
            "cell": "test_serving[cpu-mlp-singlestream]",
            "metric": "ab_serving_latency_ms",
            "outcome": "fail",
            "measured": 5.436,
            "baseline": 1.612,
            "against": "environment A, served A B B A (B (X=1) is B)",
            "tolerance": "60% relative",
            "message": "ab_serving_latency_ms regression in test_serving[cpu-mlp-singlestream]: ...",
        }
    ]
    path, out, md = tmp_path / "run.json", tmp_path / "report.html", tmp_path / "summary.md"
    path.write_text(json.dumps(document))
    assert command.main(["report", str(path), "-o", str(out), "--markdown", str(md)]) == 0
    row = ("test_serving[cpu-mlp-singlestream]", "serving_latency_ms", "1.612", "5.436", "3.372", "FAIL")
    cells = re.findall(r"<td>([^<]*)</td>", out.read_text())
    assert any(tuple(cells[i : i + len(row)]) == row for i in range(len(cells))), "no served A/B row in the page"
    assert "| " + " | ".join(row) + " |" in md.read_text()


@pytest.mark.parametrize(
    ("span", "labelled"),
    [((1086.0, 3582.0), {"2k", "3k"}), ((1.0, 1000.0), {"2", "5", "20", "50", "200", "500"})],
)
def test_a_log_axis_labels_its_minor_ticks_by_what_it_spans(span, labelled):
    """Within a decade every minor tick is labelled (a TTFT axis from 1.1k to 3.6k ms read only
    "2k"); over decades only 2 and 5 times a power of ten are, beside each power's own label."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from accelbench.results.report.plots import style_axes

    figure, ax = plt.subplots()
    ax.plot([1, 2], span, label="a line")
    style_axes(ax, "", "x", "ms", ylog=True)
    ax.set_ylim(*span)
    figure.canvas.draw()
    low, high = span
    shown = {label.get_text() for label in ax.yaxis.get_minorticklabels() if label.get_text()}
    ticks = [tick for tick in ax.yaxis.get_minorticklocs() if low <= tick <= high]
    assert labelled <= shown
    if high / low >= 10:
        assert len(shown) < len(ticks)  # not 3 4 6 7 8 9 as well
    plt.close(figure)


def test_the_goodput_panel_tells_completed_from_goodput_by_marker_as_well_as_line():
    """In the legend's short line samples a dash barely shows: each of the two is its own marker."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot

    from accelbench.kinds.tokens import plots as token_plots
    from accelbench.kinds.tokens.result import TokenLoad

    tried = [
        {"batching": "continuous 8", "rate": rate, "valid": True, "completed": rate, "goodput": 0.9 * rate}
        for rate in (10.0, 20.0)
    ]
    cell = summary.CellRecord("test_token_serving[cpu-gpt_tiny-server]", "token_serving", "cpu", "gpt_tiny", "", {})
    figure, ax = pyplot.subplots()
    token_plots._goodput(ax, cell, TokenLoad(rates_tried=tried), ["continuous 8"])
    markers = {line.get_label(): line.get_marker() for line in ax.get_lines()}
    pyplot.close(figure)
    assert markers["continuous 8 completed"] != markers["continuous 8 goodput"], markers


def test_a_group_of_several_numbers_of_one_cell_names_the_cell_once_and_counts_numbers_and_cells():
    """A token Server cell's three new numbers share one reason with the Offline cell's: the row
    said "4 cells: test_token_serving[cpu-gpt_tiny-server], ...[server], ...[server] and 1 more"."""
    reason = "no baseline for this cell under this machine's fingerprint in tokens.json"
    group = [
        {"cell": f"test_token_serving[cpu-gpt_tiny-{scenario}]", "metric": metric, "outcome": "new", "message": reason}
        for scenario, metric in (
            ("server", "token_peak_rate"),
            ("server", "token_ttft_ms"),
            ("server", "token_tpot_ms"),
            ("offline", "token_offline_tokens_per_s"),
        )
    ]
    from accelbench.results.report import content

    row = content._group_row("run", group)
    assert row[1] == (
        "4 numbers of 2 cells: test_token_serving[cpu-gpt_tiny-server], test_token_serving[cpu-gpt_tiny-offline]"
    )
