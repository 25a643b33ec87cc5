"""Every benchmark kind, by fixture name: the cells it is parameterized over, its Bench, the
metrics it judges, the test file it lives in, what it measures and when it runs. The plugin's
fixtures (plugin/fixtures.py), the scaffold's test files (scaffold.py) and the run's order
(plugin/hooks.py) are made from these; a user's module may register more."""

from __future__ import annotations

from accelbench.benches.accuracy import AccuracyBench, ParityBench
from accelbench.benches.base import FIRST, LAST, Benchmark
from accelbench.benches.data_scaling import PredictDataScalingBench, TrainDataScalingBench
from accelbench.benches.distributed import DistributedBench, ThreadsBench
from accelbench.benches.memory import MEMORY, InferenceMemoryBench, LeakBench, ScalingBench, TrainMemoryBench
from accelbench.benches.speedup import OverheadBench, SpeedupBench
from accelbench.benches.throughput import InferenceBench, LatencyBench, SvmBench, TrainBench
from accelbench.grid import cells
from accelbench.judge.verdicts import LEAKS, TIMING
from accelbench.registry import Registry

# Benchmark fixture name -> its grid and its runner; the plugin makes one fixture of each.
BENCHMARKS: Registry[Benchmark] = Registry("benchmark fixture")
BENCHMARKS.register(
    "train_bench",
    Benchmark(
        cells.train_cells,
        TrainBench,
        "test_train",
        (TIMING,),
        ab=True,
        file="test_training.py",
        about="Steady-state training throughput of one cell (benches/throughput.py).",
    ),
)
BENCHMARKS.register(
    "accuracy_bench",
    Benchmark(
        cells.accuracy_cells,
        AccuracyBench,
        "test_time_to_accuracy",
        ("accuracy",),
        file="test_training.py",
        about="The published recipe's time to accuracy, final accuracy gated (benches/accuracy.py).",
    ),
)
BENCHMARKS.register(
    "overhead_bench",
    Benchmark(
        cells.overhead_cells,
        OverheadBench,
        "test_harness_overhead",
        file="test_training.py",
        about="The suite's fit() against a hand-written training loop (benches/speedup.py).",
        order=FIRST,
    ),
)
BENCHMARKS.register(
    "threads_bench",
    Benchmark(
        cells.threads_cells,
        ThreadsBench,
        "test_threads",
        file="test_training.py",
        about="One intra-op thread against all, in fresh processes (benches/distributed.py).",
    ),
)
BENCHMARKS.register(
    "inference_bench",
    Benchmark(
        cells.inference_cells,
        InferenceBench,
        "test_inference",
        (TIMING,),
        ab=True,
        file="test_inference.py",
        about="Inference throughput of one cell (benches/throughput.py).",
    ),
)
BENCHMARKS.register(
    "latency_bench",
    Benchmark(
        cells.latency_cells,
        LatencyBench,
        "test_latency",
        (TIMING,),
        file="test_inference.py",
        about="Batch-1 latency of one cell (benches/throughput.py).",
    ),
)
BENCHMARKS.register(
    "train_memory",
    Benchmark(
        cells.train_memory_cells,
        TrainMemoryBench,
        "test_train_memory",
        MEMORY,
        timed=False,
        file="test_memory.py",
        about="Host and device peak of a training step, gated (benches/memory.py).",
    ),
)
BENCHMARKS.register(
    "inference_memory",
    Benchmark(
        cells.inference_memory_cells,
        InferenceMemoryBench,
        "test_inference_memory",
        MEMORY,
        timed=False,
        file="test_memory.py",
        about="Host and device peak of a predicted batch, gated (benches/memory.py).",
    ),
)
BENCHMARKS.register(
    "memory_scaling",
    Benchmark(
        cells.scaling_cells,
        ScalingBench,
        "test_memory_scaling",
        timed=False,
        file="test_memory.py",
        about="Training-step peaks against batch size and the largest batch that fits (benches/memory.py).",
    ),
)
BENCHMARKS.register(
    "inference_leaks",
    Benchmark(
        cells.leak_cells,
        LeakBench,
        "test_inference_leaks",
        (LEAKS,),
        timed=False,
        file="test_memory.py",
        about="Repeated predictions under pytest-memray's limit_leaks (benches/memory.py).",
    ),
)
BENCHMARKS.register(
    "batch_speedup",
    Benchmark(
        cells.batch_speedup_cells,
        SpeedupBench,
        "test_batch_speedup",
        ("speedup",),
        file="test_speedup.py",
        about="The largest batch's training throughput over the smallest's, interleaved (benches/speedup.py).",
        order=LAST,
    ),
)
BENCHMARKS.register(
    "device_speedup",
    Benchmark(
        cells.device_speedup_cells,
        SpeedupBench,
        "test_device_speedup",
        ("speedup",),
        file="test_speedup.py",
        about="A device's training throughput over the CPU's, interleaved (benches/speedup.py).",
        order=LAST,
    ),
)
BENCHMARKS.register(
    "accuracy_parity",
    Benchmark(
        cells.parity_cells,
        ParityBench,
        "test_accuracy_parity",
        ("accuracy_gap", "loss_matching_digits"),
        file="test_speedup.py",
        about="A device's recipe accuracy and loss against the CPU's (benches/accuracy.py).",
    ),
)
BENCHMARKS.register(
    "svm_bench",
    Benchmark(
        cells.svm_cells,
        SvmBench,
        "test_svm",
        (TIMING, "accuracy"),
        file="test_svm.py",
        about="The RBF SVM's fit on an n-image subset, accuracy gated (benches/throughput.py).",
    ),
)
BENCHMARKS.register(
    "train_data_scaling",
    Benchmark(
        cells.data_scaling_cells,
        TrainDataScalingBench,
        "test_train_data_scaling",
        file="test_data_scaling.py",
        about="Training time and memory as the training set grows, projected (benches/data_scaling.py).",
    ),
)
BENCHMARKS.register(
    "predict_data_scaling",
    Benchmark(
        cells.data_scaling_cells,
        PredictDataScalingBench,
        "test_predict_data_scaling",
        file="test_data_scaling.py",
        about="Prediction time and memory as the test set grows, projected (benches/data_scaling.py).",
    ),
)
BENCHMARKS.register(
    "multi_device",
    Benchmark(
        cells.multi_device_cells,
        DistributedBench,
        "test_multi_device",
        ("loss_gap",),
        file="test_distributed.py",
        about="tf.distribute across replicas of one process against one device (benches/distributed.py).",
    ),
)
BENCHMARKS.register(
    "multi_worker",
    Benchmark(
        cells.multi_worker_cells,
        DistributedBench,
        "test_multi_worker",
        ("loss_gap",),
        file="test_distributed.py",
        about="tf.distribute across worker processes against one process (benches/distributed.py).",
    ),
)
