"""Memory: host peaks (memray), device peaks (TensorFlow's allocator), the analytic estimate,
fixed + per-sample fits over batch sizes, and the search for the largest batch that fits.

Host peak means what one step allocates on the host beyond what was live before it (the
model's weights and optimizer slots already exist): memray's high-water mark while tracking.
Device peak means TensorFlow's own count of bytes in use on a GPU/TPU at the step's peak,
weights included; memray cannot see device memory.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

FLOAT_BYTES = 4  # every model here trains in float32
MAX_SEARCH_BATCH = 2**24  # the largest-batch search stops here


def physical_memory_bytes() -> int | None:
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


# --- measuring -------------------------------------------------------------------------------


def host_peak(work: Callable[[], object]) -> int:
    """Bytes memray sees allocated at the high-water mark while work runs.

    The same tracker settings as pytest-memray's, so the two agree. memray allows one tracker
    at a time: call this only where pytest-memray is not tracking (outside a test's body).
    """
    import memray

    with tempfile.TemporaryDirectory(prefix="accelbench-memray-") as directory:
        capture = Path(directory, "step.bin")
        with memray.Tracker(capture, file_format=memray.FileFormat.AGGREGATED_ALLOCATIONS):
            work()
        return int(memray.FileReader(capture).metadata.peak_memory)


def median_host_peak(work: Callable[[], object], repeats: int = 3) -> int:
    """Median of a few tracked runs: a stray arena or thread stack in one run is not the step's."""
    peaks = sorted(host_peak(work) for _ in range(repeats))
    return peaks[len(peaks) // 2]


def host_cap(headroom: float | None, estimated: int | None, budget: int) -> int:
    """The limit_memory cap of one step: headroom x the estimate, within the run's budget; the
    budget alone where the model sets no headroom or the estimate does not know it (None).

    The 16 MiB covers TensorFlow's and Python's own fixed cost per call, which the estimate
    leaves out and which dominates the smallest models.
    """
    if headroom is None or estimated is None:
        return budget
    return min(budget, int(headroom * estimated) + 16 * 2**20)


# --- the analytic estimate --------------------------------------------------------------------


@dataclass(frozen=True)
class Estimate:
    """Bytes a training step needs, from the model's shapes alone.

    weights and optimizer slots are resident before the step; gradients (one per weight) and
    activations (each layer's output kept for the backward pass, and its gradient) are made
    by the step. The step's own share is what host_peak measures.

    unknown: the layers whose step holds more than its output (a recurrent layer keeps every
    timestep's gates, attention its score matrices) or whose graph cannot be read (a subclassed
    model): where any is, the estimate cannot stand behind a cap, and none is made from it.
    """

    weights: int
    gradients: int
    optimizer_slots: int
    activations_per_sample: int  # forward outputs and their gradients
    input_per_sample: int
    # Under a mixed precision policy every call casts each float32 weight to the compute dtype:
    # copies made per step, as big as the weights in that dtype (mlp_wide predicting at batch 32
    # under mixed_bfloat16 peaked at 21.6 MiB, against 4.2 MiB under float32).
    casts: int = 0
    unknown: tuple[str, ...] = ()

    @property
    def resident(self) -> int:
        return self.weights + self.optimizer_slots

    @property
    def step_fixed(self) -> int:
        return self.gradients + self.casts

    @property
    def step_per_sample(self) -> int:
        return self.activations_per_sample + self.input_per_sample

    @property
    def known(self) -> bool:
        return not self.unknown

    @property
    def why_unknown(self) -> str | None:
        return (
            None
            if self.known
            else f"the memory estimate does not know {', '.join(self.unknown)}: no cap is made from it"
        )

    def step(self, batch_size: int) -> int | None:
        """A training step's bytes; None where the estimate does not know the model."""
        return self.step_fixed + self.step_per_sample * batch_size if self.known else None

    def inference(self, batch_size: int) -> int | None:
        """Forward outputs only, no gradients: an upper bound of what a prediction holds at once
        (None where the estimate does not know the model)."""
        if not self.known:
            return None
        return (self.activations_per_sample // 2 + self.input_per_sample) * batch_size + self.casts


def _elements(shape: Sequence[int | None]) -> int:
    count = 1
    for dim in shape:
        count *= int(dim or 1)
    return count


HALF_DTYPES = ("bfloat16", "float16")  # the compute dtypes of Keras' mixed precision policies
HALF_BYTES = 2

# Layers whose step holds its output and that output's gradient, and nothing of a size that
# grows otherwise: what the estimate counts. Checked against memray peaks on the zoo (Dense,
# Conv2D, pooling, Dropout). Any other layer class (recurrent, attention, a user's own) leaves
# the estimate unknown. Keras ops in a functional graph (x + y) are not layers: each makes its
# output, as these do.
OUTPUT_HOLDING_LAYERS = frozenset(
    {
        "InputLayer",
        "Dense",
        "EinsumDense",
        "Conv1D",
        "Conv2D",
        "Conv3D",
        "Conv1DTranspose",
        "Conv2DTranspose",
        "Conv3DTranspose",
        "DepthwiseConv1D",
        "DepthwiseConv2D",
        "SeparableConv1D",
        "SeparableConv2D",
        "MaxPooling1D",
        "MaxPooling2D",
        "MaxPooling3D",
        "AveragePooling1D",
        "AveragePooling2D",
        "AveragePooling3D",
        "GlobalMaxPooling1D",
        "GlobalMaxPooling2D",
        "GlobalMaxPooling3D",
        "GlobalAveragePooling1D",
        "GlobalAveragePooling2D",
        "GlobalAveragePooling3D",
        "Flatten",
        "Reshape",
        "Permute",
        "RepeatVector",
        "Dropout",
        "SpatialDropout1D",
        "SpatialDropout2D",
        "GaussianNoise",
        "BatchNormalization",
        "LayerNormalization",
        "GroupNormalization",
        "UnitNormalization",
        "Activation",
        "ReLU",
        "LeakyReLU",
        "PReLU",
        "ELU",
        "Softmax",
        "Add",
        "Subtract",
        "Multiply",
        "Average",
        "Maximum",
        "Minimum",
        "Concatenate",
        "Dot",
        "Embedding",
        "Rescaling",
        "Normalization",
        "ZeroPadding1D",
        "ZeroPadding2D",
        "ZeroPadding3D",
        "Cropping1D",
        "Cropping2D",
        "Cropping3D",
        "UpSampling1D",
        "UpSampling2D",
        "UpSampling3D",
        "Identity",
    }
)


def _graph_operations(model: Any) -> list[Any] | None:
    """Every layer and op of a Sequential or functional model, nested models walked; None for
    a subclassed model, whose call() is code, not a graph to read."""
    from keras.src.models.functional import Functional
    from keras.src.models.sequential import Sequential

    if isinstance(model, Sequential):
        operations = model.layers
    elif isinstance(model, Functional):
        operations = model.operations
    else:
        return None
    found: list[Any] = []
    for operation in operations:
        if isinstance(operation, (Sequential, Functional)):
            inner = _graph_operations(operation)
            found += inner if inner is not None else [operation]
        else:
            found.append(operation)
    return found


def _unknown(operations: list[Any] | None, model: Any) -> tuple[str, ...]:
    import keras

    if operations is None:
        return (f"subclassed model {type(model).__name__}",)
    names = (
        type(op).__name__
        for op in operations
        if isinstance(op, keras.layers.Layer) and type(op).__name__ not in OUTPUT_HOLDING_LAYERS
    )
    return tuple(dict.fromkeys(names))


def estimate(model: Any) -> Estimate:
    """From a compiled Keras model whose optimizer has been built (it has stepped once): its
    weights, one gradient per weight, the optimizer's slots (Adam 2 per weight, SGD with
    momentum 1; scalars such as the step counter left out) and every layer's output."""
    weights = sum(_elements(w.shape) for w in model.trainable_weights) * FLOAT_BYTES
    optimizer = getattr(model, "optimizer", None)  # none before compile(): inference
    optimizer_variables = optimizer.variables if optimizer is not None else ()
    slots = sum(_elements(v.shape) for v in optimizer_variables if len(v.shape)) * FLOAT_BYTES
    operations = _graph_operations(model)
    unknown = _unknown(operations, model)
    activations = 0 if unknown else sum(_elements(op.output.shape[1:]) for op in operations) * FLOAT_BYTES
    policy = getattr(model, "dtype_policy", None)
    compute, variables = getattr(policy, "compute_dtype", "float32"), getattr(policy, "variable_dtype", "float32")
    casts = weights // FLOAT_BYTES * HALF_BYTES if compute != variables and compute in HALF_DTYPES else 0
    symbolic_inputs = getattr(model, "inputs", None)  # none on a subclassed model
    inputs = _elements(symbolic_inputs[0].shape[1:]) * FLOAT_BYTES if symbolic_inputs else 0
    return Estimate(
        weights=weights,
        gradients=weights,
        optimizer_slots=slots,
        activations_per_sample=2 * activations,
        input_per_sample=inputs,
        casts=casts,
        unknown=unknown,
    )


# --- memory against batch size ---------------------------------------------------------------


@dataclass(frozen=True)
class LinearFit:
    """peak(batch) ~ fixed + per_sample x batch, by least squares."""

    fixed: float
    per_sample: float
    max_residual: float  # the worst point's distance from the line, in bytes

    def at(self, batch_size: float) -> float:
        return self.fixed + self.per_sample * batch_size


def fit_line(batch_sizes: Sequence[int], peaks: Sequence[float]) -> LinearFit:
    import numpy as np

    if len(set(batch_sizes)) < 2:
        raise ValueError("a fit needs peaks at two batch sizes or more")
    x, y = np.asarray(batch_sizes, float), np.asarray(peaks, float)
    per_sample, fixed = np.polyfit(x, y, 1)
    return LinearFit(float(fixed), float(per_sample), float(np.max(np.abs(y - (fixed + per_sample * x)))))


def largest_fitting(fits: Callable[[int], bool], start: int, limit: int) -> int | None:
    """The largest batch size in [start, limit] for which fits(batch) holds, None if not even start.

    Doubles until a batch does not fit, then bisects between the last that did and the first
    that did not. fits is either a prediction against a budget (CPU) or a real step that
    reports out-of-memory (accelerators); it must be monotone: a batch that fits, fits smaller.
    """
    if start > limit or not fits(start):
        return None
    good, bad = start, None
    while bad is None:
        candidate = min(good * 2, limit)
        if candidate == good:
            return good
        if fits(candidate):
            good = candidate
        else:
            bad = candidate
    while bad - good > 1:
        middle = (good + bad) // 2
        good, bad = (middle, bad) if fits(middle) else (good, middle)
    return good


def budget_predicate(fit: LinearFit, resident: int, budget: int) -> Callable[[int], bool]:
    """fits(batch) for the CPU: resident state plus the fitted step peak within the budget."""
    return lambda batch_size: resident + fit.at(batch_size) <= budget


def oom_predicate(step_at: Callable[[int], object]) -> Callable[[int], bool]:
    """fits(batch) for an accelerator: run a real step; TensorFlow's out-of-memory means no."""

    def fits(batch_size: int) -> bool:
        try:
            step_at(batch_size)
        except Exception as error:  # only out-of-memory answers the question; anything else is a bug
            if is_out_of_memory(error):
                return False
            raise
        return True

    return fits


# An accelerator running out of memory does not always say ResourceExhaustedError: cuDNN and
# cuBLAS fail to allocate their workspace with their own status inside an InternalError (or
# UnknownError), JAX raises XlaRuntimeError "RESOURCE_EXHAUSTED: Out of memory", and PyTorch
# torch.cuda.OutOfMemoryError ("CUDA out of memory"). Matched by type name and message, so
# that none of those libraries needs importing to recognise its error.
OUT_OF_MEMORY_TYPES = {"ResourceExhaustedError", "OutOfMemoryError"}
OUT_OF_MEMORY_WORDS = (
    "resource_exhausted",
    "cudnn_status_alloc_failed",
    "cublas_status_alloc_failed",
    "cuda_error_out_of_memory",
    "out of memory",
    "oom when allocating",
)  # lower case


def is_out_of_memory(error: BaseException) -> bool:
    if isinstance(error, MemoryError) or type(error).__name__ in OUT_OF_MEMORY_TYPES:
        return True
    text = str(error).lower()
    return any(word in text for word in OUT_OF_MEMORY_WORDS)
