"""Machine fingerprints: what they read, how they round-trip through a baseline key, and how the
nearest recorded machine is found. No TensorFlow."""

from types import SimpleNamespace

from accelbench.axes import backends
from accelbench.judge import fingerprint
from accelbench.judge.baselines import BaselineFile
from accelbench.judge.fingerprint import Fingerprint, make, nearest, onednn_isa
from accelbench.judge.gates import GATES, Gate, Scope
from accelbench.judge.rules import RelativeDrop, RelativeGrowth
from accelbench.judge.verdicts import RECORD_HERE, Verdicts
from accelbench.results import verdict_block

EPYC_FLAGS = "fpu sse sse2 sse4_1 sse4_2 avx f16c fma avx2 bmi2 sha_ni vaes".split()
XEON_FLAGS = EPYC_FLAGS + "avx512f avx512dq avx512bw avx512vl avx512_vnni".split()
AMD = make(
    arch="x86_64",
    cpu="AMD EPYC",
    caches="L1d 32K, L2 512K, L3 32768K",
    isa="avx2",
    onednn="on",
    cpus="2",
    accelerators="none",
)
INTEL = make(
    arch="x86_64",
    cpu="Intel(R) Xeon(R) Processor",
    caches="L1d 48K, L2 2048K, L3 107520K",
    isa="avx512_core_vnni",
    onednn="on",
    cpus="2",
    accelerators="none",
)


def test_a_key_reads_back_as_the_same_fingerprint():
    assert Fingerprint.parse(AMD.key) == AMD
    assert AMD.key.startswith("arch=x86_64; cpu=AMD EPYC; caches=L1d 32K, L2 512K, L3 32768K; isa=avx2")
    assert make(cpu="a=b; c").key == "cpu=a:b, c"  # values cannot break the key apart
    legacy = Fingerprint.parse("x86_64-2cpu")  # a baseline key from before fingerprints
    assert legacy.fields == (("machine_class", "x86_64-2cpu"),) and legacy.differences(AMD)


def test_onednn_isa_is_the_best_the_flags_allow_capped_by_the_environment():
    assert onednn_isa(EPYC_FLAGS, {}) == "avx2"
    assert onednn_isa(XEON_FLAGS, {}) == "avx512_core_vnni"
    assert onednn_isa(XEON_FLAGS, {"ONEDNN_MAX_CPU_ISA": "AVX2"}) == "avx2"
    assert onednn_isa(EPYC_FLAGS, {"ONEDNN_MAX_CPU_ISA": "AVX"}) == "avx"
    assert onednn_isa(EPYC_FLAGS, {"DNNL_MAX_CPU_ISA": "avx512_core"}) == "avx2"  # a cap never raises it
    assert onednn_isa(EPYC_FLAGS, {"ONEDNN_MAX_CPU_ISA": "ALL"}) == "avx2"
    assert onednn_isa(EPYC_FLAGS, {"ONEDNN_MAX_CPU_ISA": "nonsense"}) == "avx2 (cap nonsense not understood)"
    assert onednn_isa("fp asimd sve".split(), {}) == "sve"
    assert fingerprint.onednn_state({"TF_ENABLE_ONEDNN_OPTS": "0"}) == "off"
    assert fingerprint.onednn_state({}) == "on"


def test_caches_are_read_from_the_kernels_cache_folders(tmp_path):
    for index, (level, kind, size) in enumerate(
        [("1", "Data", "32K"), ("1", "Instruction", "32K"), ("2", "Unified", "512K"), ("3", "Unified", "32768K")]
    ):
        folder = tmp_path / f"index{index}"
        folder.mkdir()
        for name, value in (("level", level), ("type", kind), ("size", size)):
            (folder / name).write_text(value + "\n")
    assert fingerprint.cpu_caches(tmp_path) == "L1d 32K, L1i 32K, L2 512K, L3 32768K"
    assert fingerprint.cpu_caches(tmp_path / "absent") == "unknown"


def test_this_machine_has_a_full_fingerprint():
    names = [name for name, _ in (fingerprint.hardware() + backends.software()).fields]
    library = backends.BACKENDS[backends.PROCESS_BACKEND].module
    assert names == ["arch", "cpu", "caches", "isa", "onednn", "cpus", "accelerators", "backend", library, "keras"]
    assert backends.software().as_dict()["backend"] == backends.PROCESS_BACKEND


def test_a_saved_runs_software_is_what_it_recorded_and_before_that_tensorflows():
    recorded = {"accelbench_software": "backend=jax; jax=0.10; keras=3.15", "tensorflow": "2.21.0", "keras": "3.15.1"}
    assert fingerprint.software_of(recorded).key == "backend=jax; jax=0.10; keras=3.15"
    # Saved before the process backend was recorded: every run's was TensorFlow's.
    before = {"tensorflow": "2.21.0", "keras": "3.15.1"}
    assert fingerprint.software_of(before).key == "backend=tensorflow; tensorflow=2.21; keras=3.15"
    # Saved with its backend but not its software key: another backend's versions were not recorded.
    on_jax = {**before, "accelbench_process_backend": "jax"}
    assert fingerprint.software_of(on_jax).key == "backend=jax; keras=unrecorded"


def test_a_baseline_of_one_process_backend_leaves_anothers_numbers_ungated_naming_the_backend(tmp_path):
    """The run that showed it: KERAS_BACKEND=torch in an environment with every backend was held
    to TensorFlow's served baselines on the same machine (SingleStream p90 1.67 ms against 0.355,
    a failure of nothing but the backend). Every gate keyed by the machine keys by the process
    backend too: speedups by the backend alone, memory and served numbers by the software that holds it."""
    from accelbench import kinds

    kinds.each("gates")
    dataset = SimpleNamespace(name="digits", key="digits-n1347")
    tensorflow = Scope(
        AMD.key,
        "backend=tensorflow; tensorflow=2.21; keras=3.15",
        dataset,
        "quick preset, preset rules",
        {},
    )
    torch = Scope(AMD.key, "backend=torch; torch=2.13; keras=3.15", dataset, "quick preset, preset rules", {})
    assert (tensorflow.backend, torch.backend) == ("backend=tensorflow", "backend=torch")
    keyed = {spec.metric: spec for spec in GATES.values() if spec.fingerprints}
    assert {"speedup", "peak_memory_bytes", "device_peak_memory_bytes"} <= set(keyed)
    assert any(metric.startswith("serving") for metric in keyed) and any(metric.startswith("token") for metric in keyed)
    for metric, spec in keyed.items():
        recorded, asked = spec.keys(tensorflow), spec.keys(torch)
        assert recorded[: spec.fingerprints] != asked[: spec.fingerprints], metric
        store = BaselineFile(tmp_path / spec.file, depth=len(recorded))
        store.stage(recorded, "c", metric, 2.0)
        gate = Gate(metric, store, asked, RelativeDrop(0.25), fingerprints=spec.fingerprints)
        judged = Verdicts(
            update=False, require_baselines=False, memray_tracking=False, timing_threshold=0.4, fingerprint=AMD.key
        )
        verdict = judged.against_baseline("c", gate, 1.0)
        assert verdict.outcome == "ungated", (metric, verdict)
        assert "nearest recorded machine differs in backend: torch here, tensorflow there" in verdict.message, metric


def test_the_nearest_recorded_machine_differs_in_the_fewest_fields():
    other_cores = make(**{**AMD.as_dict(), "cpus": "4"})
    found, differences = nearest(AMD, [INTEL, other_cores])
    assert found == other_cores and differences == ["cpus: 2 here, 4 there"]
    assert nearest(AMD, []) is None


def test_an_ungated_memory_number_names_the_nearest_machine_and_what_differs(tmp_path):
    """The AMD-vs-Intel case: a baseline recorded on the Xeon neither passes nor fails the EPYC."""
    software = make(tensorflow="2.21", keras="3.15")
    store = BaselineFile(
        tmp_path / "memory.json",
        depth=3,
        data={INTEL.key: {software.key: {"digits": {"c": {"peak_memory_bytes": 3_247_574}}}}},
    )
    gate = Gate("peak_memory_bytes", store, (AMD.key, software.key, "digits"), RelativeGrowth(0.25), fingerprints=2)
    verdicts = Verdicts(
        update=False,
        require_baselines=False,
        memray_tracking=False,
        timing_threshold=0.4,
        fingerprint=AMD.key,
        process_backend="jax",
    )
    verdict = verdicts.against_baseline("c", gate, 15_400_000)
    assert verdict.outcome == "ungated" and verdicts.failures("c") == []
    assert verdict.message.startswith(
        "no peak_memory_bytes baselines for this machine's fingerprint and digits in "
        "memory.json; nearest recorded machine differs in cpu: AMD EPYC here, "
        "Intel(R) Xeon(R) Processor there; caches: "
    )
    assert "isa: avx2 here, avx512_core_vnni there" in verdict.message
    assert verdict_block.lines(verdicts)[-3:-1] == [
        f"this machine: {AMD.key}, process backend jax",
        RECORD_HERE,
    ]  # the block ends with the command
    assert RECORD_HERE.startswith("record this machine's baselines with: pytest benchmarks --update-baselines")


# nvidia-smi as it answered on the H200 host of issue 49 (driver 580, CUDA 13), two boards
SMI_CSV = "NVIDIA H200, 143771 MiB, 580.95.05\nNVIDIA H200, 143771 MiB, 580.95.05\n"
SMI_BANNER = """Thu Nov 26 08:00:00 2026
+-----------------------------------------------------------------------------------------+
| NVIDIA-SMI 580.95.05              Driver Version: 580.95.05      CUDA Version: 13.0     |
|-----------------------------------------+------------------------+----------------------+
"""


def test_gpus_are_named_the_drivers_way_with_the_driver_and_cuda_versions_among_the_libraries(monkeypatch):
    """The same accelerator string whichever backend found the GPUs (each words them its own
    way), so another card is another machine; and the driver's and CUDA's versions beside the
    libraries'. Without nvidia-smi: the backend's words, and no versions."""
    answers = {fingerprint.NVIDIA_SMI: SMI_CSV, ("nvidia-smi",): SMI_BANNER}
    monkeypatch.setattr(fingerprint, "_nvidia_smi", lambda *arguments: answers.get(arguments, ""))
    fingerprint.nvidia_gpus.cache_clear(), fingerprint.nvidia_cuda.cache_clear()
    for backend_words in ("2 x NVIDIA H200", "2 x cuda:0 NVIDIA H200 (jax)", "2 x NVIDIA H200 (torch)"):
        assert fingerprint.accelerators({"gpu": backend_words}) == ["2 x NVIDIA H200 (143771 MiB)"]
    assert fingerprint.driver_versions() == {"nvidia-driver": "580.95.05", "cuda": "13.0"}
    answers.clear()
    fingerprint.nvidia_gpus.cache_clear(), fingerprint.nvidia_cuda.cache_clear()
    assert fingerprint.accelerators({"tpu": "4 x TPU v4"}) == ["4 x TPU v4"]
    assert fingerprint.driver_versions() == {}
    fingerprint.nvidia_gpus.cache_clear(), fingerprint.nvidia_cuda.cache_clear()


def test_an_ungated_served_number_names_the_settings_this_machine_has_baselines_for(tmp_path):
    """This machine's token baselines recorded under the quick preset, a run under the full one:
    ungated, naming the settings it has them for (not a verdict against the quick preset's)."""
    software = make(tensorflow="2.21", keras="3.15")
    quick = {"test_token_serving[cpu-m-offline]": {"token_offline_tokens_per_s": 3000.0}}
    store = BaselineFile(
        tmp_path / "tokens.json",
        depth=3,
        data={AMD.key: {software.key: {"quick preset, preset rules": quick}}},
    )
    scope = (AMD.key, software.key, "full preset, preset rules")
    gate = Gate("token_offline_tokens_per_s", store, scope, RelativeDrop(0.25), fingerprints=2)
    verdicts = Verdicts(
        update=False, require_baselines=False, memray_tracking=False, timing_threshold=0.4, fingerprint=AMD.key
    )
    verdict = verdicts.against_baseline("test_token_serving[cpu-m-offline]", gate, 100.0)
    assert verdict.outcome == "ungated"
    assert verdict.message == (
        "no token_offline_tokens_per_s baselines for this machine's fingerprint and full preset, preset rules in "
        "tokens.json; this machine's are for quick preset, preset rules"
    )
