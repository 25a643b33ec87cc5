"""`accelbench layers MODEL`: the FLOP table of one model as the suite builds it, a line per
layer (axes/flops.py): its parameters, its forward FLOPs per sample and its share of the
model's, on the dataset the run would use."""

from __future__ import annotations

import contextlib
from collections.abc import Sequence

from accelbench.axes import data, flops
from accelbench.axes.backends import BACKENDS, PROCESS_BACKEND
from accelbench.axes.models import MODELS, ModelOptions
from accelbench.units import flops as format_flops


def lines(model_name: str, dataset: str | None = None, data_dir=None, precision: str = "float32") -> list[str]:
    """The table of `model_name` built on `dataset`'s input; None: the model's own dataset at its
    full input size (ModelSpec.dataset), as --preset full runs it."""
    spec = MODELS[model_name]
    dataset = spec.dataset_in(dataset, full_size_inputs=True)
    if spec.framework != "keras":
        return [f"{model_name}: {spec.summary}: not a Keras model; its FLOPs are not counted per layer"]
    loaded = data.load(dataset, data_dir)
    with BACKENDS[PROCESS_BACKEND].quiet_start():  # the framework starts here, at its import and its first tensor
        return table(flops.count(built(spec, loaded, precision)), f"{model_name} on {dataset} {loaded.input_shape}")


def built(spec, loaded, precision: str):
    from accelbench.work.build import build_model

    return build_model(
        spec,
        loaded.input_shape,
        ModelOptions(precision=precision),
        contextlib.nullcontext(),
        train=False,
        outputs=loaded.outputs,
        quality=loaded.quality,
        input_dtype=str(loaded.x_train.dtype),
    )


def table(counted: flops.FlopCount, title: str) -> list[str]:
    total = counted.forward
    rows = [("layer", "class", "params", "FLOPs/sample", "share", "")]
    for layer in counted.layers:
        share = f"{layer.forward_flops / total:.1%}" if total and layer.forward_flops else ""
        shown = format_flops(layer.forward_flops) if layer.forward_flops else ("0" if layer.counted else "unknown")
        rows.append((layer.path, layer.layer_class, f"{layer.params:,}", shown, share, layer.why))
    widths = [max(len(row[column]) for row in rows) for column in range(5)]
    out = [f"FLOPs per layer of {title} (forward, per sample; 2 x multiply-adds)"]
    out += [
        "  ".join(cell.ljust(width) for cell, width in zip(row[:5], widths)).rstrip() + _why(row[5]) for row in rows
    ]
    params = sum(layer.params for layer in counted.layers)
    out.append(
        f"total: {params:,} parameters, "
        + (
            f"{format_flops(total)} forward, {format_flops(total * flops.TRAIN_FLOPS_PER_FORWARD)} a training step "
            f"(x{flops.TRAIN_FLOPS_PER_FORWARD:g}) per sample"
            if total is not None
            else counted.unknown_reason
        )
    )
    return out


def _why(text: str) -> str:
    return f"  ({text})" if text and text != flops.NOT_COUNTED_WITHOUT_WEIGHTS else ""


def main(model: str, dataset: str | None, data_dir, precision: str, modules: Sequence[str]) -> int:
    from accelbench.user_modules import import_modules

    import_modules(modules, ["."])
    for line in lines(model, dataset, data_dir, precision):
        print(line)
    return 0
