"""One self-contained HTML page: inline style, plots as PNG data URIs, no script, no links out."""

from __future__ import annotations

import html
from collections.abc import Sequence
from pathlib import Path

from accelbench.results import summary
from accelbench.results.report import content
from accelbench.results.report.plots import Plot
from accelbench.results.report.runs import Run, sections_of, tagged_cells

STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em; color: #222; max-width: 1500px; }
h1 { margin-bottom: 0.2em; } h2 { border-bottom: 1px solid #ccc; padding-bottom: 0.2em; margin-top: 2em; }
table { border-collapse: collapse; margin: 0.6em 0 1.2em; font-size: 0.9em; }
th, td { border: 1px solid #ddd; padding: 0.25em 0.6em; text-align: left; vertical-align: top; }
td { overflow-wrap: anywhere; } /* paths, fingerprints and messages wrap: no page wider than the window */
td:first-child { overflow-wrap: normal; white-space: nowrap; } /* a run's name or a device: one line */
th { background: #f3f3f3; } td.num { text-align: right; font-variant-numeric: tabular-nums; }
.fail { background: #fdd; } .ungated, .new { background: #fff4cc; } .pass { background: #e6f6e6; }
.note { color: #555; font-style: italic; } img { max-width: 100%; border: 1px solid #eee; }
details summary { cursor: pointer; font-weight: 600; margin: 0.5em 0; }
"""


def table(header: Sequence[str], rows: Sequence[Sequence[str]], outcome_column: int | None = None) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
    body = []
    for row in rows:
        css = f' class="{html.escape(row[outcome_column])}"' if outcome_column is not None else ""
        body.append(f"<tr{css}>" + "".join(f"<td>{html.escape(str(v))}</td>" for v in row) + "</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def _runs(runs: Sequence[Run]) -> str:
    """Each run's name, its machine in a few words (the whole fingerprint on hover and in the
    Machines table), libraries, verdicts and file."""
    head = "".join(f"<th>{h}</th>" for h in ("run", "machine", "libraries · date", "verdicts", "file"))
    body = "".join(
        f"<tr><td>{html.escape(run.tag)}</td>"
        f"<td><abbr title='{html.escape(run.fingerprint, quote=True)}'>{html.escape(run.machine_label)}</abbr></td>"
        f"<td>{html.escape(run.label)}</td><td>{html.escape(content.verdict_counts(run))}</td>"
        f"<td>{html.escape(str(run.path))}</td></tr>"
        for run in runs
    )
    ran_on = "".join(  # where a run's models ran on data of their own
        f"<p>{html.escape(run.tag)}: {html.escape(line)}</p>" for run in runs if (line := summary.data_line(run.cells))
    )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>{ran_on}"


def _verdicts(runs: Sequence[Run]) -> str:
    attention = content.verdict_rows(runs, content.ATTENTION)
    parts = [
        table(content.VERDICT_HEADER, attention, outcome_column=3)
        if attention
        else "<p>Every judged number passed or was deliberately skipped.</p>"
    ]
    everything = content.verdict_rows(runs)
    parts.append(
        f"<details><summary>Every verdict ({len(everything)} rows; verdicts that share a reason share a row)</summary>"
        f"{table(content.VERDICT_HEADER, everything, outcome_column=3)}</details>"
    )
    return "".join(parts)


def _summary_tables(runs: Sequence[Run]) -> str:
    parts = []
    for section in summary.tables(tagged_cells(runs), sections_of(runs)):
        parts.append(f"<h3>{html.escape(section.title)}</h3>{table(section.header, section.rows)}")
    return "".join(parts) + f"<p class='note'>{html.escape(summary.LEGEND)}</p>"


def figures(plots: Sequence[Plot]) -> str:
    parts = []
    for plot in plots:
        note = f"<p class='note'>{html.escape(plot.note)}</p>" if plot.note else ""
        if plot.folder:  # a local folder: a file link, which opens with no network
            uri = html.escape(Path(plot.folder).absolute().as_uri(), quote=True)
            note += f"<p class='note'>Its logs: <a href='{uri}'>{html.escape(plot.folder)}</a></p>"
        parts.append(
            f"<figure data-plot='{html.escape(plot.name)}'><h3>{html.escape(plot.title)}</h3>"
            f"<img alt='{html.escape(plot.title)}' src='{plot.data_uri}'>{note}</figure>"
        )
    return "".join(parts) or "<p>No cell of these runs has numbers to plot.</p>"


def render(runs: Sequence[Run], plots: Sequence[Plot]) -> str:
    projections = content.projection_rows(runs)
    sections = [
        ("Runs", _runs(runs)),
        ("Verdicts", _verdicts(runs)),
        *(
            [("A/B: environment B against A, interleaved in one run", table(content.AB_HEADER, ab))]
            if (ab := content.ab_rows(runs))
            else []
        ),
        *(
            [(f"A/B: {summary.AB_LOAD_TITLE}", table(content.AB_LOAD_HEADER, under_load))]
            if (under_load := content.ab_load_rows(runs))
            else []
        ),
        ("Summary", _summary_tables(runs)),
        ("Plots", figures(plots)),
        (
            "Projections to the target data sizes",
            table(content.PROJECTION_HEADER, projections) if projections else "<p>No data-scaling cells ran.</p>",
        ),
        ("Every cell, timed by pytest-benchmark or not", table(content.CELL_HEADER, content.cell_rows(runs))),
        ("Machines", table(("", *(run.tag for run in runs)), content.machine_rows(runs))),
    ]
    body = "".join(f"<h2>{html.escape(title)}</h2>{part}" for title, part in sections)
    return (
        f"<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><title>accelbench report</title>"
        f"<style>{STYLE}</style></head><body><h1>accelbench report</h1>{body}</body></html>"
    )
