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
BENCHMARKS.register("train_bench", Benchmark(cells.train_cells, TrainBench, (TIMING,), ab=True))
BENCHMARKS.register("inference_bench", Benchmark(cells.inference_cells, InferenceBench, (TIMING,), ab=True))
BENCHMARKS.register("latency_bench", Benchmark(cells.latency_cells, LatencyBench, (TIMING,)))
BENCHMARKS.register("accuracy_bench", Benchmark(cells.accuracy_cells, AccuracyBench, ("accuracy",)))
BENCHMARKS.register("svm_bench", Benchmark(cells.svm_cells, SvmBench, (TIMING, "accuracy")))
BENCHMARKS.register("overhead_bench", Benchmark(cells.overhead_cells, OverheadBench))
BENCHMARKS.register("batch_speedup", Benchmark(cells.batch_speedup_cells, SpeedupBench, ("speedup",)))
BENCHMARKS.register("device_speedup", Benchmark(cells.device_speedup_cells, SpeedupBench, ("speedup",)))
BENCHMARKS.register("accuracy_parity", Benchmark(cells.parity_cells, ParityBench,
                                                  ("accuracy_gap", "loss_matching_digits")))
BENCHMARKS.register("train_memory", Benchmark(cells.train_memory_cells, TrainMemoryBench, MEMORY))
BENCHMARKS.register("inference_memory", Benchmark(cells.inference_memory_cells, InferenceMemoryBench, MEMORY))
BENCHMARKS.register("inference_leaks", Benchmark(cells.leak_cells, LeakBench, (LEAKS,)))
BENCHMARKS.register("memory_scaling", Benchmark(cells.scaling_cells, ScalingBench))
BENCHMARKS.register("train_data_scaling", Benchmark(cells.data_scaling_cells, TrainDataScalingBench))
BENCHMARKS.register("predict_data_scaling", Benchmark(cells.data_scaling_cells, PredictDataScalingBench))
BENCHMARKS.register("threads_bench", Benchmark(cells.threads_cells, ThreadsBench))
BENCHMARKS.register("multi_device", Benchmark(cells.multi_device_cells, SpreadBench, ("loss_gap",)))
BENCHMARKS.register("multi_worker", Benchmark(cells.multi_worker_cells, SpreadBench, ("loss_gap",)))
