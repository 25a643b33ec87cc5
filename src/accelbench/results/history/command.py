"""`accelbench history [STORAGE ...]`: saved runs in, changes of level out (terminal, Markdown,
HTML); with --fail-on-regression, exit status 1 on a regression its last runs confirm."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from accelbench.judge import changepoints
from accelbench.results.history import findings as found
from accelbench.results.history import plots, render, series


def add_to(commands: Any) -> None:
    history = commands.add_parser(
        "history",
        help="find changes of level in the saved runs of each cell (one series per machine)",
        description="Read pytest-benchmark's saved runs (--benchmark-autosave; .benchmarks/ or any "
        "--benchmark-storage folder), form one series per cell, number and machine fingerprint, "
        "and name each change of level: its first run (commit, date), its size with a 95% "
        "interval, and whether it is a regression.",
    )
    history.add_argument(
        "storages",
        nargs="*",
        type=Path,
        default=[Path(".benchmarks")],
        metavar="STORAGE",
        help="a storage folder or a saved run's JSON file (default: .benchmarks)",
    )
    history.add_argument("-o", "--output", type=Path, metavar="FILE", help="also write an HTML page of trend plots")
    history.add_argument(
        "--markdown", metavar="FILE", help="also write the last runs' changes as Markdown; '-' prints it"
    )
    history.add_argument(
        "--last",
        type=int,
        default=10,
        metavar="N",
        help="the Markdown lists changes that start in a series' last N runs, or commits with "
        "--by-commit (default: %(default)s)",
    )
    history.add_argument(
        "--by-commit",
        action="store_true",
        help="one point per commit and machine, the median of its saved runs (of a memory peak, "
        "the largest): run the suite several times per push and one slow run no longer "
        "moves a point (runs with uncommitted changes stay a point each)",
    )
    history.add_argument(
        "--fail-on-regression",
        action="store_true",
        help="exit 1 where the latest run makes a regression found that the runs before it did "
        f"not show ({changepoints.MIN_SEGMENT} runs of the new level): the push that completes "
        "the evidence fails, once",
    )
    history.set_defaults(run=run)


def _write(path: Path, text: str) -> str | None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    except OSError as error:
        return f"accelbench history: error: {path}: cannot be written ({error.strerror or error})"
    return None


def run(arguments: argparse.Namespace) -> int:
    history = series.read(arguments.storages, arguments.by_commit)
    if not history.runs:
        for problem in history.unreadable:
            print(f"accelbench history: {problem}", file=sys.stderr)
        print(
            f"accelbench history: error: no saved run found in {', '.join(map(str, arguments.storages))} "
            "(pytest benchmarks --benchmark-autosave saves each run there)",
            file=sys.stderr,
        )
        return 2
    findings = found.find(history)
    told = sys.stderr if arguments.markdown == "-" else sys.stdout
    for line in render.lines(history, findings):
        print(line, file=told)
    problems = []
    if arguments.markdown == "-":
        sys.stdout.write(render.markdown(history, findings, arguments.last))
    elif arguments.markdown:
        problems.append(_write(Path(arguments.markdown), render.markdown(history, findings, arguments.last)))
    if arguments.output:
        problems.append(_write(arguments.output, render.html_page(history, findings, plots.trends(findings))))
    for problem in filter(None, problems):
        print(problem, file=sys.stderr)
    if any(problems):
        return 2
    confirmed = found.new_regressions(findings)
    if arguments.fail_on_regression and confirmed:
        print(
            f"accelbench history: {len(confirmed)} regression(s) the latest run confirms: "
            + "; ".join(f"{finding.series.cell} {finding.series.number.name}" for finding, _ in confirmed),
            file=sys.stderr,
        )
        return 1
    return 0
