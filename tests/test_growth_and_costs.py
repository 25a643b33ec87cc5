"""Data-scaling sizes, what the target sizes would hold, and hours and dollars per device."""

from pathlib import Path

import pytest

from accelbench import units
from accelbench.axes.models import MODELS
from accelbench.kinds.data_scaling import work as growth
from accelbench.plugin.options import device_numbers, target_sizes
from accelbench.results import costs

GB = 10**9


@pytest.mark.parametrize(
    ("smallest", "largest", "unit", "sizes"),
    [
        (250, 8000, 1, (250, 500, 1000, 2000, 4000, 8000)),  # mnist-10k's training set
        (100, 1347, 100, (100, 200, 400, 800, 1300)),  # digits at the MLP's batch of 100: whole batches
        (32, 450, 1, (32, 64, 128, 256, 450)),  # a doubling within 1.5x of the largest size is dropped
        (250, 60_000, 1, (250, 500, 1000, 2000, 4000, 8000, 16_000, 32_000, 60_000)),
        (100, 50, 100, ()),  # not one whole batch
    ],
)
def test_ladder_doubles_up_to_all_of_the_data(smallest, largest, unit, sizes):
    assert growth.ladder(smallest, largest, unit) == sizes


def test_subsets_are_nested_random_samples():
    import numpy as np

    (shuffled,) = growth.subsets((np.arange(10_000),), seed=0)
    assert sorted(shuffled) == list(range(10_000))
    assert shuffled[:5000].max() > 5000  # not the first half of the file


def test_sixty_billion_mnist_images_are_47_terabytes_and_their_kernel_matrix_is_named():
    reasons = growth.regime_reasons(
        MODELS["svm"], "train", (28, 28, 1), 60e9, projected_peak=3e12, machine_bytes=128 * GB
    )
    assert reasons[0] == (
        "the data itself (47.0 TB as 8-bit pixels) outgrows this machine's memory (128.0 GB), "
        "and the measured work holds it in memory"
    )
    assert reasons[1] == "its kernel matrix, 8·n² bytes (28.8 ZB) outgrows this machine's memory (128.0 GB)"
    assert reasons[2].startswith(
        "the projected peak memory (3.0 TB) would take 24 machines of this kind "
        "(128.0 GB each), and the method then changes (streaming, sharding)"
    )


def test_what_fits_raises_no_reason_and_prediction_holds_no_kernel_matrix():
    assert growth.regime_reasons(MODELS["svm"], "train", (8, 8), 1000, 1e6, 128 * GB) == []
    predicting = growth.regime_reasons(MODELS["svm"], "predict", (8, 8), 1e6, 1e6, 128 * GB)
    assert predicting == []


def test_byte_formatting_past_every_unit():
    assert units.format_si_bytes(512) == "512 B"
    assert units.format_si_bytes(47.04e12) == "47.0 TB"
    assert units.format_si_bytes(3e30) == "3e+30 B"


def projected(device, seconds, model="mlp", phase="train", target=60_000_000_000):
    return costs.ProjectedTime(model, phase, device, target, seconds, (0.9 * seconds, 1.1 * seconds), ("far",))


def test_measured_and_assumed_devices_get_hours_and_dollars_each_labelled():
    """The report's arithmetic: one CPU epoch at the target, a TPU assumed 10,752x faster."""
    rows = costs.device_costs([projected("cpu", 3600.0)], {"tpu": 10752.0}, {"cpu": 0.10, "tpu": 6.88})
    cpu, tpu = rows
    assert (cpu.device, cpu.basis, cpu.hours, cpu.dollars) == ("cpu", "measured", 20.0, pytest.approx(2.0))
    assert tpu.basis == "assumed: 10752x cpu (--assume-speedup)"
    assert tpu.hours == pytest.approx(20.0 / 10752)
    assert tpu.dollars == pytest.approx(20.0 / 10752 * 6.88)
    assert tpu.hours_ci95 == pytest.approx((18.0 / 10752, 22.0 / 10752))
    text = "\n".join(costs.lines(rows))
    assert "mlp recipe, 20 epochs of 60,000,000,000 images:" in text
    assert "measured" in text and "assumed: 10752x cpu" in text and "$2.00 at $0.1/h" in text


def test_a_measured_device_is_never_replaced_by_an_assumption_and_svm_gets_none():
    rows = costs.device_costs(
        [projected("cpu", 100.0), projected("gpu", 10.0), projected("cpu", 50.0, model="svm")],
        {"gpu": 14.0, "tpu": 10752.0},
        {},
    )
    labels = [(r.projected.model, r.device, r.basis.split(":")[0]) for r in rows]
    assert labels == [
        ("mlp", "cpu", "measured"),
        ("mlp", "gpu", "measured"),
        ("mlp", "tpu", "assumed"),
        ("svm", "cpu", "measured"),
    ]
    assert rows[0].dollars is None
    assert "no price given (--device-prices)" in "\n".join(costs.lines(rows))


def test_huge_figures_stay_readable_and_columns_stay_apart():
    rows = costs.device_costs([projected("cpu", 2e22)], {}, {"cpu": 0.10})
    (line,) = [line for line in costs.lines(rows) if line.startswith("  cpu")]
    assert "1.11e+20 h" in line and "$1.11e+19 at $0.1/h  " in line and line.endswith("measured")


def test_prediction_is_one_pass_and_an_estimator_fit_one_fit():
    assert projected("cpu", 1.0, phase="predict").epochs == 1
    assert projected("cpu", 1.0, model="svm").epochs == 1
    assert projected("cpu", 1.0).epochs == MODELS["mlp"].recipe_epochs


def test_option_values_for_targets_speedups_and_prices():
    assert target_sizes("60e9,10e9") == (60_000_000_000, 10_000_000_000)
    assert device_numbers("tpu=10752, gpu:1=14") == {"tpu": 10752.0, "gpu:1": 14.0}
    for bad, message in [("60e9", "is not two sizes"), ("60e9,-1", "is not a positive number")]:
        with pytest.raises(ValueError, match=message):
            target_sizes(bad)
    for bad, message in [
        ("tpu", "is not DEVICE=NUMBER"),
        ("all=2", "name one device"),
        ("tpx=2", "unknown device 'tpx'"),
        ("tpu=fast", "'fast' is not a number"),
    ]:
        with pytest.raises(ValueError, match=message):
            device_numbers(bad)


def test_an_svm_s_peaks_are_measured_in_a_worker_that_never_loads_tensorflow_by_the_same_functions(tmp_path):
    """A scikit-learn model's data-scaling peaks (growth.MEASURED_APART) are measured in a worker
    without TensorFlow, where memray's trackers are cheap: the same builder and peaks_at as in
    the pytest process, the same typed result, peaks that agree; TensorFlow never mapped there."""
    from dataclasses import asdict

    from accelbench.axes import data
    from accelbench.axes.models import ModelOptions
    from accelbench.kinds.data_scaling.bench import BUILD_APART, PEAKS_APART
    from accelbench.processes.protocol import Cellwork, RunFields
    from accelbench.processes.workers import WorkerFailed, WorkerPool
    from accelbench.run.backend_workers import WITHOUT_TENSORFLOW

    sizes = (100, 200, 400)
    run = asdict(RunFields("digits", None, None, 5, 0, 0, 0.1, 0.05))
    built = dict(
        key="k",
        where="test_train_data_scaling[cpu-svm]",
        phase="train",
        dataset="digits",
        data_dir=None,
        head=None,
        options=asdict(ModelOptions()),
    )
    apart = lambda function, **arguments: pool.call(
        WITHOUT_TENSORFLOW, Cellwork.KIND_CALL.target, 60, target=function, run=run, arguments=arguments
    )
    pool = WorkerPool(tmp_path)
    try:
        with pytest.raises(WorkerFailed, match="mlp is a keras model: its peaks are measured where TensorFlow is"):
            apart(BUILD_APART, **built, model="mlp")
        apart(BUILD_APART, **built, model="svm")
        apart_peaks = growth.measure_peaks(
            lambda n: growth.SizePeaks(**apart(PEAKS_APART, key="k", size=n, repeats=1)), sizes, 10.0
        )
        (pid,) = pool.pids
        mapped = Path(f"/proc/{pid}/maps").read_text()
    finally:
        pool.end()
    work = growth.PHASES["train"].works["sklearn"]("here", MODELS["svm"], data.load("digits"), None, ModelOptions())
    here = growth.measure_peaks(lambda n: growth.peaks_at(work, n, 1), sizes, 10.0)
    assert "libtensorflow" not in mapped and "memray" in mapped
    assert type(apart_peaks) is type(here) and apart_peaks.sizes == here.sizes == sizes and apart_peaks.stopped is None
    assert all(isinstance(peak, int) for peaks in apart_peaks.peaks for peak in peaks)
    # The smallest size's peak moved by a fifth between processes (152,234 and 118,716 bytes);
    # from 400 images up they agreed to the byte.
    assert apart_peaks.peaks[-1][0] == pytest.approx(here.peaks[-1][0], rel=0.1)
