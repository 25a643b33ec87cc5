"""Verdicts on a number held to another measured in this run, not to a stored baseline: a
gap to a twin (another device, backend, precision or replica count), shared significant digits,
a classifier's accuracy against its twin's on the same test images (McNemar), a number within a
rule of a reference (the memory cap, a twin's error)."""

from __future__ import annotations

from typing import Any

from accelbench.judge import analysis
from accelbench.judge.rules import AtLeastDigits, WithinGap, regression
from accelbench.judge.verdicts import FAIL, PASS, UNKNOWN, Verdict, Verdicts


def matching_digits(
    verdicts: Verdicts, cell: str, what: str, reference: float, candidate: float, floor: int
) -> Verdict:
    """Parity as the studies stated it: two devices' numbers equal to the n-th significant digit."""
    digits = analysis.matching_digits(reference, candidate)
    base = dict(
        cell=cell, metric=f"{what}_matching_digits", measured=float(digits), tolerance=AtLeastDigits().describe()
    )
    return verdicts.judge(
        base,
        floor,
        "floor",
        AtLeastDigits(),
        (),
        {f"reference_{what}": reference, f"candidate_{what}": candidate},
        detail=f"{what} {candidate!r} on the device against {reference!r} on the reference",
    )


def within_gap(verdicts: Verdicts, cell: str, metric: str, gap: float, tolerance: float) -> Verdict:
    rule = WithinGap(tolerance)
    base = dict(cell=cell, metric=metric, measured=float(gap), tolerance=rule.describe())
    return verdicts.judge(base, 0.0, "parity", rule, ())


def paired_quality(
    verdicts: Verdicts,
    cell: str,
    metric: str,
    measured: float,
    reference: float,
    rule: Any,
    against: str,
    scores: analysis.Paired,
) -> Verdict:
    """A classifier's accuracy held to its twin's on the same test images: a number past the
    rule's tolerance fails only where McNemar's test shows the two differ (analysis.PAIRED_ALPHA);
    where it does not, the verdict is unknown: too few test images to tell."""
    base = dict(cell=cell, metric=metric, measured=float(measured), tolerance=rule.describe())
    statistic = (
        ("images", scores.images),
        ("reference_only", scores.reference_only),
        ("candidate_only", scores.candidate_only),
        ("mcnemar_p", round(scores.p_value, 4)),
    )
    message = regression(metric, cell, reference, measured, rule, against)
    if message is None:
        outcome = PASS
    elif scores.shown:
        outcome, message = FAIL, f"{message}: {scores.describe()}"
    else:
        outcome = UNKNOWN
        message = (
            f"{metric} of {cell}: {rule.show(measured)} against {against} {rule.show(reference)} is past "
            f"the tolerance, but too few test images show it: {scores.describe()}, "
            f"not below {analysis.PAIRED_ALPHA}"
        )
    return verdicts.add(
        Verdict(
            outcome=outcome,
            baseline=float(reference),
            against=against,
            statistic=statistic,
            message=message or "",
            **base,
        )
    )


def against_reference(
    verdicts: Verdicts, cell: str, metric: str, measured: float, reference: float, rule: Any, against: str
) -> Verdict:
    """A number held by the rule against another measured in this run (not a baseline)."""
    base = dict(cell=cell, metric=metric, measured=float(measured), tolerance=rule.describe())
    return verdicts.judge(base, float(reference), against, rule, ())
