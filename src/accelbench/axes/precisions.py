"""Number formats as an axis: float32, and Keras' mixed precision policies bfloat16 and float16.

A cell's precision is the Keras dtype policy its model is built under: variables stay float32,
layers compute in the lower format, and under float16 the optimizer scales the loss (Keras
wraps it in a LossScaleOptimizer at compile time) so that small gradients do not flush to
zero. What a lower precision buys depends on the hardware: a CPU without native bfloat16 or
float16 arithmetic emulates it, usually slower than float32, and the summary says so.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from accelbench.axes.backends import BACKENDS
from accelbench.judge import fingerprint
from accelbench.registry import Registry

REFERENCE_PRECISION = "float32"
NATIVE, EMULATED, NOT_KNOWN = "native", "emulated", "not known to be native"


@dataclass(frozen=True)
class Precision:
    name: str  # the Keras dtype policy
    short: str  # in cell ids
    compute: str  # the dtype layers compute in
    cpu_flags: frozenset[str]  # cpuinfo flags that give the CPU native arithmetic in it

    def cpu_arithmetic(self, flags: Iterable[str], environ: Mapping[str, str], backend: str) -> tuple[str, str | None]:
        """How a CPU cell computes in this format: NATIVE, EMULATED or NOT_KNOWN, and why where it
        is not native. Native needs the CPU's flags, and TensorFlow's oneDNN kernels allowed to
        use them: not turned off (TF_ENABLE_ONEDNN_OPTS=0) nor capped below them (ONEDNN_MAX_CPU_ISA)."""
        if not self.cpu_flags:
            return NATIVE, None
        if not BACKENDS[backend].cpu_kernels_checked:
            return (
                NOT_KNOWN,
                f"{backend} on the CPU: whether its kernels compute natively in {self.compute} is not checked",
            )
        if not self.cpu_flags & set(flags):
            return (
                EMULATED,
                f"emulated: this CPU has no native {self.compute} arithmetic ({' or '.join(sorted(self.cpu_flags))})",
            )
        if fingerprint.onednn_state(environ) == "off":
            return (
                EMULATED,
                f"emulated: TF_ENABLE_ONEDNN_OPTS=0 turns off the oneDNN kernels that compute in {self.compute}",
            )
        isa = fingerprint.onednn_isa(flags, environ)
        if not fingerprint.X64_ISAS.get(isa, frozenset()) & self.cpu_flags:
            return EMULATED, f"emulated: oneDNN is capped at {isa} (ONEDNN_MAX_CPU_ISA), below native {self.compute}"
        return NATIVE, None


PRECISIONS: Registry[Precision] = Registry("precision")
PRECISIONS.register("float32", Precision("float32", "fp32", "float32", frozenset()))
PRECISIONS.register(
    "mixed_bfloat16", Precision("mixed_bfloat16", "bf16", "bfloat16", frozenset({"avx512_bf16", "amx_bf16"}))
)
PRECISIONS.register(
    "mixed_float16", Precision("mixed_float16", "fp16", "float16", frozenset({"avx512_fp16", "amx_fp16"}))
)


@contextmanager
def policy(name: str) -> Any:
    """Build models under this dtype policy; the global policy is restored afterwards, so that
    the next cell's model is built under its own (a layer keeps the policy it was built with)."""
    import keras

    before = keras.config.dtype_policy()
    keras.config.set_dtype_policy(name)
    try:
        yield
    finally:
        keras.config.set_dtype_policy(before)
