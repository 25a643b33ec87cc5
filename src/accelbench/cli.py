"""The `accelbench` command: `accelbench report ...` (saved runs to HTML and Markdown),
`accelbench history [STORAGE ...]` (changes of level across saved runs), `accelbench init
[DIR]` (benchmarks for a project of your own), `accelbench layers MODEL` (its FLOPs per layer)
and `accelbench gpu-check` (the quick suite on cpu,gpu per installed backend, and what each
accelerator decision came to).

`report` and `history` load neither pytest nor a framework; `init` imports the benchmark
catalog, and `layers` Keras, only when they run.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from accelbench.option import positive_number
from accelbench.results.history import command as history_command
from accelbench.results.report import command as report_command


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


def layers(arguments: argparse.Namespace) -> int:
    from accelbench.axes import backends
    from accelbench.axes.formats import DataError
    from accelbench.registry import UnknownName
    from accelbench.user_modules import UserCodeFailed, UserModuleError
    from accelbench.work import layer_table

    try:
        backends.use_process_backend()  # before Keras is imported
        return layer_table.main(
            arguments.model, arguments.dataset, arguments.data_dir, arguments.precision, arguments.modules
        )
    except (UnknownName, UserModuleError, UserCodeFailed, DataError, OSError, ValueError, backends.NoBackend) as error:
        print(f"accelbench layers: error: {error}", file=sys.stderr)
        return 2


def gpu_check(arguments: argparse.Namespace) -> int:
    from accelbench import gpu_check as check

    return check.main(arguments.benchmarks, arguments.out, arguments.pytest_args, arguments.seconds or check.TOTAL_S)


def parser() -> argparse.ArgumentParser:
    command = argparse.ArgumentParser(prog="accelbench", description="accelbench: benchmarks that gate CI.")
    commands = command.add_subparsers(dest="command", required=True)
    report_command.add_to(commands)
    history_command.add_to(commands)
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
    table = commands.add_parser(
        "layers",
        help="print a model's FLOPs per layer: parameters, FLOPs per sample, share of the model's",
        description="The FLOP table of one registered model (the zoo's, or your own with --modules), "
        "built as the suite builds it on the dataset's input: a line per layer, nested models walked.",
    )
    table.add_argument("model", metavar="MODEL", help="a registered model: mlp, cnn, or one of your own")
    table.add_argument(
        "--dataset",
        default=None,
        help="the dataset whose input it is built on (default: the model's own, else digits)",
    )
    table.add_argument("--data-dir", type=Path, default=None, metavar="DIR", help="where the dataset's files are")
    table.add_argument("--precision", default="float32", help="the dtype policy (default: float32)")
    table.add_argument(
        "--modules",
        type=lambda text: [name for name in text.split(",") if name],
        default=[],
        metavar="MOD[,MOD]",
        help="your modules that register models (as the ini's accelbench_modules)",
    )
    table.set_defaults(run=layers)
    check = commands.add_parser(
        "gpu-check",
        help="run the quick suite on cpu,gpu once per installed Keras backend and print what each "
        "accelerator decision came to",
        description="On a GPU host (no internet needed): `pytest benchmarks --devices cpu,gpu` once per "
        "installed backend (tensorflow, jax, torch), each as the process backend, each run's JSON and log "
        "in OUT; then one table: the devices each backend found, the fingerprint, where a gpu cell ran and "
        "in what arithmetic, the GPU over the CPU, the roofs, the highest utilization, device peaks against "
        "the estimate, the latency cell against LoadGen SingleStream, the verdicts. Exit 1 if a run failed.",
    )
    check.add_argument(
        "--benchmarks",
        type=Path,
        default=Path("benchmarks"),
        metavar="DIR",
        help="the benchmarks folder (default: benchmarks)",
    )
    check.add_argument(
        "-o",
        "--out",
        type=Path,
        default=Path("gpu-check"),
        metavar="DIR",
        help="where each backend's run JSON and log go (default: gpu-check)",
    )
    check.add_argument(
        "--seconds",
        type=positive_number,
        default=None,
        metavar="S",
        help="the whole check's time, shared by the backends' runs; a run still going at its share is "
        "interrupted and its finished cells are kept (default: 570, the issue's 10 minutes less a margin)",
    )
    check.add_argument(
        "pytest_args", nargs="*", metavar="PYTEST_ARG", help="more arguments for each pytest run, after --"
    )
    check.set_defaults(run=gpu_check)
    return command


def main(argv: Sequence[str] | None = None) -> int:
    arguments = parser().parse_args(argv)
    return arguments.run(arguments)


if __name__ == "__main__":
    raise SystemExit(main())
