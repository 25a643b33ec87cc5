"""Verdicts of an A/B run: B's rounds against A's, interleaved, as the comparison decided them;
and one measurement a side (a host peak, a compile), reported beside them, not judged."""

from __future__ import annotations

from typing import Any

from accelbench.judge import comparison
from accelbench.judge.rules import regression
from accelbench.judge.verdicts import FAIL, REPORTED, Verdict, Verdicts
from accelbench.units import format_seconds


def interleaved(
    verdicts: Verdicts,
    cell: str,
    metric: str,
    found: comparison.Comparison,
    a_value: float,
    b_value: float,
    min_effect: float,
    environment: str,
) -> Verdict:
    """B against A, interleaved in this run: the comparison decided pass, fail or unknown."""
    statistic = (
        ("ci95", [round(found.low, 4), round(found.high, 4)]),
        ("wilcoxon_p", round(found.p_value, 6)),
        ("pairs", found.pairs),
        ("a", a_value),
        ("b", b_value),
    )
    message = (
        f"{found.reason}: B/A = {found.ratio:.3f} [95% interval {found.low:.3f}, {found.high:.3f}] over "
        f"{found.pairs} pairs ({format_seconds(a_value)} in A, {format_seconds(b_value)} in B, median round)"
    )
    if found.outcome == FAIL:
        message = f"A/B regression in {cell}: {environment} is slower, {message}"
    return verdicts.add(
        Verdict(
            cell=cell,
            metric=metric,
            outcome=found.outcome,
            measured=found.ratio,
            baseline=1.0,
            against="environment A, interleaved",
            tolerance=f"B at most {min_effect:.0%} slower",
            statistic=statistic,
            message=message,
        )
    )


def one_a_side(verdicts: Verdicts, cell: str, metric: str, a_value: float, b_value: float, rule: Any) -> Verdict:
    """One measurement a side (a host peak, a compile): B shown against A, and what the rule
    would say of it, but reported, not judged: a single pair has no error rate to hold it to."""
    beyond = regression(metric, cell, a_value, b_value, rule, "environment A")
    message = f"B {rule.show(b_value)} against A {rule.show(a_value)}: one measurement a side, reported, not judged" + (
        f" (beyond {rule.describe()} and worth a look: {beyond})" if beyond else ""
    )
    return verdicts.add(
        Verdict(
            cell=cell,
            metric=metric,
            outcome=REPORTED,
            measured=float(b_value),
            baseline=float(a_value),
            against="environment A",
            tolerance=rule.describe(),
            statistic=(("beyond_rule", beyond is not None),),
            message=message,
        )
    )
