"""`accelbench report RUN.json [RUN.json | STORAGE_DIR ...]`: JSON in, HTML and Markdown out."""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from accelbench import user_modules
from accelbench.results.report import markdown, page, plots
from accelbench.results.report.runs import ReportError, load_runs


def add_to(commands: Any) -> None:
    """The `report` subcommand, on the `accelbench` command's subparsers (accelbench/cli.py)."""
    report = commands.add_parser(
        "report",
        help="write an HTML report and a Markdown summary of saved runs",
        description="Merge saved pytest-benchmark runs of `pytest benchmarks` (--benchmark-json files, "
        "or a --benchmark-storage folder) into one HTML page and a Markdown summary; "
        "each run, named by commit and date, is a series in every plot and a row in every table.",
    )
    report.add_argument("runs", nargs="+", metavar="RUN", help="a run's JSON file, or a folder of them")
    report.add_argument(
        "-o",
        "--output",
        type=Path,
        default=Path("accelbench-report.html"),
        help="the HTML file to write (default: %(default)s)",
    )
    report.add_argument(
        "--markdown", metavar="FILE", help="also write the Markdown summary (under 60 kB) to FILE; '-' prints it"
    )
    report.add_argument(
        "--modules",
        default="",
        metavar="MOD[,MOD]",
        help="your modules that declare plots of your own kinds (accelbench.register_plot), imported "
        "from the working directory as the pytest process imported them (its --modules)",
    )
    report.set_defaults(run=run)


def report(runs_given: Sequence[str], output: Path, markdown_to: str | None, modules: Sequence[str] = ()) -> list[str]:
    """Write what was asked; returns the lines to tell the user."""
    started = time.perf_counter()
    runs = load_runs(runs_given)
    try:
        user_modules.import_modules(modules, [str(Path.cwd())])
    except user_modules.UserModuleError as error:
        raise ReportError(str(error)) from None
    figures = plots.all_plots(runs)
    _write(output, page.render(runs, figures))
    told = [
        f"accelbench report: {len(runs)} run(s), {sum(len(r.cells) for r in runs)} cells, "
        f"{len(figures)} plots -> {output} ({time.perf_counter() - started:.1f} s)"
    ]
    told += [
        f"accelbench report: plot {name!r} is not drawn: no module given declares it "
        "(--modules, the module that registers it with accelbench.register_plot)"
        for name in plots.not_drawn(runs)
    ]
    if markdown_to == "-":
        sys.stdout.write(markdown.render(runs))
    elif markdown_to:
        _write(Path(markdown_to), markdown.render(runs))
        told.append(f"accelbench report: Markdown summary -> {markdown_to}")
    return told


def _write(path: Path, text: str) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    except OSError as error:
        raise ReportError(f"{path}: cannot be written ({error.strerror or error})") from None


def run(arguments: argparse.Namespace) -> int:
    try:
        modules = [name.strip() for name in arguments.modules.split(",") if name.strip()]
        for line in report(arguments.runs, arguments.output, arguments.markdown, modules):
            print(line, file=sys.stderr if arguments.markdown == "-" else sys.stdout)
    except ReportError as error:
        print(f"accelbench report: error: {error}", file=sys.stderr)
        return 2
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """`accelbench report ...` alone (the `accelbench` command is accelbench/cli.py)."""
    command = argparse.ArgumentParser(prog="accelbench")
    add_to(command.add_subparsers(dest="command", required=True))
    arguments = command.parse_args(argv)
    return arguments.run(arguments)
