"""Whether a CPU computes natively in a lower precision: the flags, oneDNN's cap, and the backend."""

from accelbench.axes.precisions import EMULATED, NATIVE, NOT_KNOWN, PRECISIONS

AVX512_BF16 = {
    "sse4_1",
    "avx",
    "avx2",
    "fma",
    "avx512f",
    "avx512bw",
    "avx512vl",
    "avx512dq",
    "avx512_vnni",
    "avx512_bf16",
}
AVX2_ONLY = {"sse4_1", "avx", "avx2", "fma"}
BF16, FP16, FP32 = PRECISIONS["mixed_bfloat16"], PRECISIONS["mixed_float16"], PRECISIONS["float32"]


def test_bfloat16_is_native_on_a_cpu_with_avx512_bf16_and_oneDNN_uncapped():
    assert BF16.cpu_arithmetic(AVX512_BF16, {}, "tensorflow") == (NATIVE, None)
    assert FP32.cpu_arithmetic(AVX2_ONLY, {}, "tensorflow") == (NATIVE, None)


def test_an_isa_cap_below_the_format_or_oneDNN_turned_off_makes_it_emulated():
    state, why = BF16.cpu_arithmetic(AVX512_BF16, {"ONEDNN_MAX_CPU_ISA": "AVX"}, "tensorflow")
    assert state == EMULATED and "capped at avx (ONEDNN_MAX_CPU_ISA)" in why
    assert BF16.cpu_arithmetic(AVX512_BF16, {"ONEDNN_MAX_CPU_ISA": "AVX512_CORE_BF16"}, "tensorflow")[0] == NATIVE
    state, why = BF16.cpu_arithmetic(AVX512_BF16, {"TF_ENABLE_ONEDNN_OPTS": "0"}, "tensorflow")
    assert state == EMULATED and "TF_ENABLE_ONEDNN_OPTS=0" in why


def test_a_cpu_without_the_flags_emulates_and_another_backend_is_not_known():
    state, why = FP16.cpu_arithmetic(AVX512_BF16, {}, "tensorflow")
    assert state == EMULATED and "no native float16" in why
    assert BF16.cpu_arithmetic(AVX512_BF16, {}, "jax")[0] == NOT_KNOWN
