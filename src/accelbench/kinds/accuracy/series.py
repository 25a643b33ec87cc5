"""The recipe's quality in `accelbench history` (results.history.series.NUMBERS): the final
accuracy (the recipe's and the SVM's, which share its key) or a regression's MAE."""

from __future__ import annotations

from accelbench.kinds.accuracy.result import Recipe
from accelbench.results.history.series import NUMBERS, Number, info_number

NUMBERS.register(
    "accuracy",
    Number("accuracy", info_number(Recipe.key_for("quality", metric="accuracy")), True, lambda value: f"{value:.2%}"),
    origin=__name__,
)
NUMBERS.register(
    "mae",
    Number("mae", info_number(Recipe.key_for("quality", metric="mae")), False, lambda value: f"{value:.4g}"),
    origin=__name__,
)
