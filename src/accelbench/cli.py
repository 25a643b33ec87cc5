"""The `accelbench` command: `accelbench report ...` (saved runs to HTML and Markdown),
`accelbench history [STORAGE ...]` (changes of level across saved runs) and `accelbench init
[DIR]` (benchmarks for a project of your own).

`report` and `history` load neither pytest nor a framework; `init` imports the benchmark
catalog only when it runs.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from accelbench.results.history import cli as history_cli
from accelbench.results.report import cli as report_cli


def init(arguments: argparse.Namespace) -> int:
    from accelbench import scaffold

    try:
        written = scaffold.init(arguments.directory)
    except (scaffold.ScaffoldError, OSError) as error:
        print(f"accelbench init: error: {error}", file=sys.stderr)
        return 2
    print(f"accelbench init: wrote {len(written)} files under {arguments.directory}: {', '.join(written)}")
    print(f"accelbench init: next: cd {arguments.directory} && python -m pytest benchmarks")
    return 0


def parser() -> argparse.ArgumentParser:
    command = argparse.ArgumentParser(prog="accelbench", description="accelbench: benchmarks that gate CI.")
    commands = command.add_subparsers(dest="command", required=True)
    report_cli.add_to(commands)
    history_cli.add_to(commands)
    scaffold = commands.add_parser(
        "init",
        help="write benchmarks/, the pytest ini lines, a models module and a CI workflow for your project",
        description="Scaffold accelbench in a project: benchmarks/ (a test per benchmark kind, baselines/), "
        "pytest.ini, a module declaring one model, and .github/workflows/accelbench.yml. "
        "Nothing already there is overwritten.",
    )
    scaffold.add_argument(
        "directory",
        nargs="?",
        type=Path,
        default=Path("."),
        metavar="DIR",
        help="the project's folder (default: the current one)",
    )
    scaffold.set_defaults(run=init)
    return command


def main(argv: Sequence[str] | None = None) -> int:
    arguments = parser().parse_args(argv)
    return arguments.run(arguments)


if __name__ == "__main__":
    raise SystemExit(main())
