"""The recipe's plot in the report: test accuracy after each epoch against training time. No
pytest, no framework: the report reads saved runs."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from accelbench.kinds.accuracy.result import Recipe
from accelbench.results.report.plots import Plot, by_model, encode, panels, series_label, style_axes
from accelbench.results.report.runs import Run

RECIPE = "accuracy_bench"  # the fixture whose cells it draws (bench.py's KINDS)


def accuracy(runs: Sequence[Run]) -> list[Plot]:
    """Test accuracy after each epoch against training time: time to accuracy."""
    models = by_model(runs, (RECIPE,), Recipe.key_for("per_epoch", metric="accuracy"))
    if not models:
        return []
    figure, axes = panels(len(models))
    for ax, (model, by_run) in zip(axes, models.items()):
        for run in runs:
            for cell in by_run.get(run.tag, []):
                recipe = Recipe.read(cell.info)
                ax.plot(
                    recipe.cumulative_train_seconds,
                    recipe.per_epoch,
                    marker="o",
                    label=series_label(run, cell.device, len(runs) > 1),
                )
        target = Recipe.read(next(iter(by_run.values()))[0].info).target
        if target:
            ax.axhline(target, color="grey", linestyle="--", label=f"target {target:.2%}")
        style_axes(ax, f"{model}: time to accuracy", "training seconds", "test accuracy")
    return [Plot("accuracy", "Accuracy per epoch against training time", encode(figure))]


# The report's plots of this kind, by the name its Benchmark.plots gives.
PLOTS: dict[str, Callable[[Sequence[Run]], list[Plot]]] = {"accuracy": accuracy}
