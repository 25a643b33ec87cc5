"""The Markdown summary for a pull-request comment or $GITHUB_STEP_SUMMARY.

GitHub caps a step summary at 1 MiB and a comment at 65,536 characters; this stays under
LIMIT by adding its parts in order of importance and naming what did not fit.
"""

from __future__ import annotations

from collections.abc import Sequence

from accelbench.results import summary
from accelbench.results.report import content
from accelbench.results.report.runs import Run, sections_of, tagged_cells

LIMIT = 60_000  # bytes
MAX_VERDICT_ROWS = 60  # the rest are in the HTML report


def _cell(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    lines = ["| " + " | ".join(map(_cell, header)) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(map(_cell, row)) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def _parts(runs: Sequence[Run]) -> list[tuple[str, str]]:
    """(name, text) in the order they matter to a reviewer."""
    runs_text = "".join(
        f"- **{run.tag}**: {run.machine_label} (`{run.fingerprint}`) · {run.label} — {content.verdict_counts(run)}\n"
        + (f"  - {ran_on}\n" if (ran_on := summary.data_line(run.cells)) else "")
        for run in runs
    )
    attention = content.verdict_rows(runs, content.ATTENTION)
    shown = attention[:MAX_VERDICT_ROWS]
    verdicts = _table(content.VERDICT_HEADER, shown) if shown else "Every judged number passed.\n"
    if len(attention) > len(shown):
        verdicts += f"\n{len(attention) - len(shown)} more in the HTML report.\n"
    parts = [("runs", f"## accelbench\n\n{runs_text}"), ("verdicts", f"\n### Verdicts needing attention\n\n{verdicts}")]
    ab = content.ab_rows(runs)
    if ab:
        parts.append(
            ("A/B", f"\n### A/B: B against A, interleaved (above 1: B slower)\n\n{_table(content.AB_HEADER, ab)}")
        )
    under_load = content.ab_load_rows(runs)
    if under_load:
        title = f"A/B: {summary.AB_LOAD_TITLE}"
        parts.append(("A/B under load", f"\n### {title}\n\n{_table(content.AB_LOAD_HEADER, under_load)}"))
    for table in summary.tables(tagged_cells(runs), sections_of(runs)):
        parts.append((table.title, f"\n### {table.title}\n\n{_table(table.header, table.rows)}"))
    roofs = [f"- **{run.tag}**: {summary.roof_line(roof)}\n" for run in runs for roof in run.roofs]
    if roofs:  # what every utilization above is taken against
        parts.append(("roofs", "\n### Roofs, measured\n\n" + "".join(roofs)))
    projections = content.projection_rows(runs)
    if projections:
        parts.append(("projections", f"\n### Projections\n\n{_table(content.PROJECTION_HEADER, projections)}"))
    return parts


def render(runs: Sequence[Run]) -> str:
    text, left_out = "", []
    for name, part in _parts(runs):
        if len((text + part).encode()) > LIMIT - 200:
            left_out.append(name)
        else:
            text += part
    closing = f"\n_{summary.LEGEND}_\n"
    if left_out:
        text += _left_out(left_out, LIMIT - len((text + closing).encode()))
    return text + closing


def _left_out(names: Sequence[str], room: int) -> str:
    """The line naming the parts that did not fit, itself cut to the room left."""
    line = f"\n_Left out to stay under {LIMIT // 1000} kB (see the HTML report): {', '.join(names)}._\n"
    while len(line.encode()) > room and len(names) > 1:
        names = names[:-1]
        line = f"\n_Left out to stay under {LIMIT // 1000} kB (see the HTML report): {', '.join(names)} and more._\n"
    return line
