"""Number formats as an axis: float32, and Keras' mixed precision policies bfloat16 and float16.

A cell's precision is the Keras dtype policy its model is built under: variables stay float32,
layers compute in the lower format, and under float16 the optimizer scales the loss (Keras
wraps it in a LossScaleOptimizer at compile time) so that small gradients do not flush to
zero. What a lower precision buys depends on the hardware: a CPU without native bfloat16 or
float16 arithmetic emulates it, usually slower than float32, and the summary says so.
"""

from __future__ import annotations

from collections.abc import Iterable
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from accelbench.registry import Registry

REFERENCE_PRECISION = "float32"
# MLPerf Inference's rule for a lower precision: it must keep this share of float32's accuracy.
ACCURACY_SHARE = 0.99


@dataclass(frozen=True)
class Precision:
    name: str  # the Keras dtype policy
    short: str  # in cell ids
    compute: str  # the dtype layers compute in
    cpu_flags: frozenset[str]  # cpuinfo flags that give the CPU native arithmetic in it

    def cpu_note(self, flags: Iterable[str]) -> str | None:
        """Beside a CPU number: why this precision may be slow here; None where it is native."""
        if not self.cpu_flags or self.cpu_flags & set(flags):
            return None
        return f"emulated: this CPU has no native {self.compute} arithmetic ({' or '.join(sorted(self.cpu_flags))})"


PRECISIONS: Registry[Precision] = Registry("precision")
PRECISIONS.register("float32", Precision("float32", "fp32", "float32", frozenset()))
PRECISIONS.register("mixed_bfloat16", Precision("mixed_bfloat16", "bf16", "bfloat16",
                                                frozenset({"avx512_bf16", "amx_bf16"})))
PRECISIONS.register("mixed_float16", Precision("mixed_float16", "fp16", "float16",
                                               frozenset({"avx512_fp16", "amx_fp16"})))


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
