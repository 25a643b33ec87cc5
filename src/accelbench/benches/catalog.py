"""Every benchmark kind, by fixture name: the cells it is parameterized over, its Bench, the
metrics it judges. The plugin makes one fixture of each (plugin/fixtures.py)."""

from __future__ import annotations

from accelbench.benches.accuracy import AccuracyBench, ParityBench
from accelbench.benches.base import Benchmark
from accelbench.benches.data_scaling import PredictDataScalingBench, TrainDataScalingBench
from accelbench.benches.distributed import SpreadBench, ThreadsBench
from accelbench.benches.memory import MEMORY, InferenceMemoryBench, LeakBench, ScalingBench, TrainMemoryBench
from accelbench.benches.speedup import OverheadBench, SpeedupBench
from accelbench.benches.throughput import InferenceBench, LatencyBench, SvmBench, TrainBench
from accelbench.grid import cells
from accelbench.judge.verdicts import LEAKS, TIMING
from accelbench.registry import Registry

# Benchmark fixture name -> its grid and its runner; the plugin makes one fixture of each.
BENCHMARKS: Registry[Benchmark] = Registry("benchmark fixture")
BENCHMARKS.register("train_bench", Benchmark(cells.train_cells, TrainBench, "test_train", (TIMING,), ab=True))
BENCHMARKS.register(
    "inference_bench", Benchmark(cells.inference_cells, InferenceBench, "test_inference", (TIMING,), ab=True)
)
BENCHMARKS.register("latency_bench", Benchmark(cells.latency_cells, LatencyBench, "test_latency", (TIMING,)))
BENCHMARKS.register(
    "accuracy_bench", Benchmark(cells.accuracy_cells, AccuracyBench, "test_time_to_accuracy", ("accuracy",))
)
BENCHMARKS.register("svm_bench", Benchmark(cells.svm_cells, SvmBench, "test_svm", (TIMING, "accuracy")))
BENCHMARKS.register("overhead_bench", Benchmark(cells.overhead_cells, OverheadBench, "test_harness_overhead"))
BENCHMARKS.register(
    "batch_speedup", Benchmark(cells.batch_speedup_cells, SpeedupBench, "test_batch_speedup", ("speedup",))
)
BENCHMARKS.register(
    "device_speedup", Benchmark(cells.device_speedup_cells, SpeedupBench, "test_device_speedup", ("speedup",))
)
BENCHMARKS.register(
    "accuracy_parity",
    Benchmark(cells.parity_cells, ParityBench, "test_accuracy_parity", ("accuracy_gap", "loss_matching_digits")),
)
BENCHMARKS.register(
    "train_memory", Benchmark(cells.train_memory_cells, TrainMemoryBench, "test_train_memory", MEMORY, timed=False)
)
BENCHMARKS.register(
    "inference_memory",
    Benchmark(cells.inference_memory_cells, InferenceMemoryBench, "test_inference_memory", MEMORY, timed=False),
)
BENCHMARKS.register(
    "inference_leaks", Benchmark(cells.leak_cells, LeakBench, "test_inference_leaks", (LEAKS,), timed=False)
)
BENCHMARKS.register("memory_scaling", Benchmark(cells.scaling_cells, ScalingBench, "test_memory_scaling", timed=False))
BENCHMARKS.register(
    "train_data_scaling", Benchmark(cells.data_scaling_cells, TrainDataScalingBench, "test_train_data_scaling")
)
BENCHMARKS.register(
    "predict_data_scaling", Benchmark(cells.data_scaling_cells, PredictDataScalingBench, "test_predict_data_scaling")
)
BENCHMARKS.register("threads_bench", Benchmark(cells.threads_cells, ThreadsBench, "test_threads"))
BENCHMARKS.register(
    "multi_device", Benchmark(cells.multi_device_cells, SpreadBench, "test_multi_device", ("loss_gap",))
)
BENCHMARKS.register(
    "multi_worker", Benchmark(cells.multi_worker_cells, SpreadBench, "test_multi_worker", ("loss_gap",))
)
