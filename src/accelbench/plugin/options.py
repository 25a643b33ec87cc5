"""Command-line options and their ini keys, each validated by one type function.

A bad value on the command line is an argparse usage error; a bad ini value is a
pytest.UsageError; both name the option and the valid choices.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from accelbench import user_modules
from accelbench.axes.backends import BACKENDS, PROCESS_BACKEND
from accelbench.axes.backends.backend import CHOICE_ORDER
from accelbench.axes.data import DATASETS, DEFAULT_DATASET
from accelbench.axes.devices import DEVICE_TYPES, parse_devices
from accelbench.axes.models import MODELS, ModelOptions
from accelbench.axes.precisions import PRECISIONS
from accelbench.judge.analysis import MAX_DIGITS
from accelbench.option import Option, fraction, name_in, positive_number
from accelbench.processes import ab
from accelbench.processes.worktree import Worktree, WorktreeError
from accelbench.registry import Registry, UnknownName
from accelbench.run import presets
from accelbench.run.config import RunConfig
from accelbench.run.presets import PRESETS
from accelbench.units import parse_bytes
from accelbench.work import memory


def _usage(parse: Callable[[str], Any]) -> Callable[[str], Any]:
    """Turn a parser's ValueError/UnknownName into argparse's usage error."""

    def validate(text: str) -> Any:
        try:
            return parse(text)
        except (ValueError, UnknownName) as error:
            raise argparse.ArgumentTypeError(str(error)) from None

    validate.__name__ = parse.__name__
    return validate


def _words(text: str) -> list[str]:
    words = [word.strip() for word in text.split(",") if word.strip()]
    if not words:
        raise ValueError("empty list")
    return words


def positive_int(text: str) -> int:
    word = text.strip()
    if not word.isdigit() or int(word) < 1:
        raise ValueError(f"{word!r} is not a positive integer")
    return int(word)


def positive_ints(text: str) -> tuple[int, ...]:
    return tuple(dict.fromkeys(positive_int(word) for word in _words(text)))


def non_negative_int(text: str) -> int:
    if not text.strip().isdigit():
        raise ValueError(f"{text!r} is not a non-negative integer")
    return int(text)


def python_path(text: str) -> str:
    """An interpreter for environment B: it must exist and be executable."""
    path = Path(text.strip()).expanduser()
    if not path.is_file() or not os.access(path, os.X_OK):
        raise ValueError(f"{text.strip()!r} is not an executable file (B's python, with accelbench installed)")
    return str(path)


def variables(text: str) -> tuple[tuple[str, str], ...]:
    """'KEY=VALUE[,KEY=VALUE]' -> ((KEY, VALUE), ...). A value may hold commas: a word with no
    '=' continues the value before it (CUDA_VISIBLE_DEVICES=0,1,TF_CPP_MIN_LOG_LEVEL=2)."""
    pairs: list[list[str]] = []
    for word in text.split(","):
        key, equals, value = word.partition("=")
        if not equals and pairs:
            pairs[-1][1] += "," + word
            continue
        if not equals or not key.strip() or not key.strip().replace("_", "").isalnum():
            raise ValueError(f"{word!r} is not KEY=VALUE, e.g. ONEDNN_MAX_CPU_ISA=AVX2")
        pairs.append([key.strip(), value])
    return tuple((key, value) for key, value in pairs)


def whole_number(text: str) -> int:
    """'60e9' -> 60000000000: a count written as a positive number with no fraction."""
    value = positive_number(text)
    if value != int(value):
        raise ValueError(f"{text.strip()!r} is not a whole number")
    return int(value)


def target_sizes(text: str) -> tuple[int, int]:
    """'60e9,10e9' -> training and test images a projection aims at."""
    words = _words(text)
    if len(words) != 2:
        raise ValueError(f"{text!r} is not two sizes; write TRAIN,TEST, e.g. 60e9,10e9")
    train, test = (whole_number(word) for word in words)
    return train, test


def accuracy_drop(text: str) -> float:
    """An absolute accuracy drop below 0.5: a larger one passes a model that guesses."""
    value = fraction(text)
    if value >= 0.5:
        raise ValueError(f"{value} leaves no gate: an accuracy may drop by less than 0.5 (e.g. 0.02)")
    return value


def parity_digits(text: str) -> int:
    """Significant digits two losses can share: a float64 holds about 15 (analysis.MAX_DIGITS)."""
    value = positive_int(text)
    if value > MAX_DIGITS:
        raise ValueError(f"{value} digits can never match: a float64 holds {MAX_DIGITS} (float32 about 7)")
    return value


def device_numbers(text: str) -> dict[str, float]:
    """'tpu=10752,gpu=14' -> {'tpu': 10752.0, 'gpu': 14.0}; devices as --devices names them."""
    numbers = {}
    for word in _words(text):
        device, equals, number = word.partition("=")
        if not equals:
            raise ValueError(f"{word!r} is not DEVICE=NUMBER, e.g. tpu=10752")
        names = parse_devices(device)  # () for all
        if len(names) != 1:
            raise ValueError(
                f"{word!r}: name one device ({', '.join(kind.usage for kind in DEVICE_TYPES.values())}), not all"
            )
        numbers[names[0]] = positive_number(number)
    return numbers


def _names_in(registry: Registry) -> Callable[[str], tuple[str, ...]]:
    def names(text: str) -> tuple[str, ...]:
        for word in _words(text):
            registry[word]  # raises naming the valid choices
        return tuple(dict.fromkeys(_words(text)))

    names.__name__ = f"{registry.noun}_names"
    return names


def installed_backends(text: str) -> tuple[str, ...]:
    """Keras backends by name, each installed here (else the line that says how to install it)."""
    names = _names_in(BACKENDS)(text)
    missing = [BACKENDS[name] for name in names if not BACKENDS[name].installed()]
    if missing:
        installed = ", ".join(name for name in BACKENDS if BACKENDS[name].installed()) or "none"
        raise ValueError(f"{missing[0].missing_reason()} (installed: {installed})")
    return names


def _names(text: str) -> tuple[str, ...]:
    """Names of registry entries, checked once the user's modules are imported (run_config)."""
    names = tuple(dict.fromkeys(_words(text)))
    if not names:
        raise ValueError("an empty list")
    return names


def _name(text: str) -> str:
    if not text.strip():
        raise ValueError("an empty name")
    return text.strip()


def git_ref(text: str) -> str:
    """A git ref or commit as `git rev-parse` takes it; whether it exists is git's to say."""
    ref = text.strip()
    if not ref or ref.startswith("-") or any(c.isspace() for c in ref):
        raise ValueError(f"{text!r} is not a git ref, e.g. main, origin/main, HEAD~1 or a commit")
    return ref


def module_names(text: str) -> tuple[str, ...]:
    """'mypkg.benchmarks, other' or 'mypkg.benchmarks other' -> ('mypkg.benchmarks', 'other'):
    dotted Python names, split at commas as the other lists are, or at spaces and lines as
    pytest's own ini lists (testpaths) are: a module's name holds neither."""
    names = tuple(dict.fromkeys(word for word in re.split(r"[,\s]+", text) if word))
    bad = [name for name in names if not all(part.isidentifier() for part in name.split("."))]
    if bad or not names:
        raise ValueError(f"{bad[0] if bad else text!r} is not a Python module name, e.g. mypkg.benchmarks")
    return names


OPTIONS = (
    Option(
        "--devices",
        parse_devices,
        "LIST",
        f"Comma list of {', '.join(kind.usage for kind in DEVICE_TYPES.values())}, or all (every device present).",
        "all",
    ),
    Option("--batch-sizes", positive_ints, "LIST", "Comma list of positive batch sizes.", None),
    Option(
        "--models",
        _names,
        "LIST",
        f"Comma list from: {', '.join(MODELS)}, and the models your --modules declare.",
        None,
    ),
    Option(
        "--backends",
        installed_backends,
        "LIST",
        f"Comma list of Keras 3 backends the training, inference, latency, memory and recipe cells run on, "
        f"from: {', '.join(BACKENDS)}, each installed. The pytest process runs the one KERAS_BACKEND names, "
        f"else the first installed of {', '.join(CHOICE_ORDER)}; each other backend runs in a worker process "
        "of its own (KERAS_BACKEND set), its cells compared with the process backend's; with several, cell ids "
        "start with the backend. Default: the process backend.",
        None,
    ),
    Option(
        "--precisions",
        _names_in(PRECISIONS),
        "LIST",
        f"Comma list of Keras dtype policies the training and inference cells run under, from: "
        f"{', '.join(PRECISIONS)}; with several, cell ids end with the precision (fp32, bf16, fp16).",
        "float32",
    ),
    Option(
        "--dataset",
        _name,
        "NAME",
        f"The data every model runs on: one of {', '.join(DATASETS)}, or one your --modules declare. "
        f"Default: each model's own (ModelSpec.dataset), else {DEFAULT_DATASET}.",
        None,
    ),
    Option(
        "--modules",
        module_names,
        "LIST",
        "Comma (or space) list of your Python modules that declare models and datasets (accelbench.register_model, "
        "accelbench.register_dataset). They are imported here and in every process the run starts (A/B and "
        "backend workers, tf.distribute jobs), so every cell sees the same models.",
        None,
    ),
    Option(
        "--data-dir",
        Path,
        "PATH",
        "Directory holding the dataset files. Without it: the Keras cache, then a download.",
        None,
    ),
    Option(
        "--preset",
        name_in(PRESETS),
        "NAME",
        "; ".join(f"{preset.name}: {preset.about}" for preset in PRESETS.values()) + ".",
        "quick",
    ),
    Option("--baselines", Path, "PATH", "Directory of the baseline JSON files.", "benchmarks/baselines"),
    Option("--accuracy-tolerance", accuracy_drop, "DROP", "Absolute accuracy drop allowed below a baseline.", "0.02"),
    Option(
        "--error-tolerance",
        fraction,
        "FRACTION",
        "Relative rise allowed above a baseline for a quality where lower is better (a regression's MAE).",
        "0.05",
    ),
    Option(
        "--memory-tolerance",
        fraction,
        "FRACTION",
        "Relative growth of a peak memory allowed above its baseline (plus 2 MiB for allocator granularity).",
        "0.25",
    ),
    Option(
        "--parity-digits",
        parity_digits,
        "N",
        "Significant digits a device's training loss after the recipe's first epoch must share with "
        "the CPU's, trained from the same seed (the studies found 3 in the final loss on MNIST, 2 on "
        "Fashion-MNIST; the last epoch's is shown, not gated: training amplifies rounding).",
        "2",
    ),
    Option(
        "--timing-threshold",
        fraction,
        "FRACTION",
        "With --benchmark-compare: the smallest slowdown per sample, against the saved run, that "
        "fails a timed cell (and only when a Mann-Whitney U test finds it significant).",
        "0.4",
    ),
    Option(
        "--target-sizes",
        target_sizes,
        "TRAIN,TEST",
        "Training and test images the data-scaling benchmarks project time, memory and cost to.",
        "60e9,10e9",
    ),
    Option(
        "--assume-speedup",
        device_numbers,
        "DEVICE=X,...",
        "Speedups over the CPU assumed for devices this run does not measure, e.g. gpu=14,tpu=10752; "
        "every figure they touch is labelled assumed.",
        None,
    ),
    Option(
        "--device-prices",
        device_numbers,
        "DEVICE=USD,...",
        "Price per device-hour, e.g. cpu=0.10,tpu=6.88: projected hours become dollars.",
        None,
    ),
    Option(
        "--trace-dir",
        Path,
        "DIR",
        "Profile a few steady-state steps of every training and inference cell once the run's last "
        "cell has finished: TensorFlow's profiler (TensorBoard's profile tab) and a Chrome-trace JSON "
        "(Perfetto), one folder per cell. Default: off.",
        None,
    ),
    Option(
        "--memory-budget",
        parse_bytes,
        "SIZE",
        "Memory the largest-batch search may plan for on the CPU, e.g. 4GiB or 500MB "
        "(accelerators are probed until out of memory, within it where given). "
        "Default: half the physical memory.",
        None,
    ),
    Option("--deep-layers", positive_int, "N", "Hidden 500-unit layers of mlp_deep.", "5"),
    Option(
        "--intra-op-threads",
        non_negative_int,
        "N",
        "TensorFlow intra-op threads, set before it starts; 0 lets TensorFlow choose.",
        "0",
    ),
    Option(
        "--ab-python",
        python_path,
        "PATH",
        "A/B run: environment B's interpreter (accelbench and its dependencies installed there). "
        "Every training and inference cell then also times its rounds in worker A (this interpreter) "
        "and worker B, interleaved, and judges B against A. Default: this interpreter, if --ab-env is given.",
        None,
    ),
    Option(
        "--ab-ref",
        git_ref,
        "REF",
        "A/B run of your code at a git ref against your working tree: environment A imports the project "
        "from a worktree of REF (made for the run and removed after it), B from the working tree, both with "
        "this interpreter and its packages; each training and inference cell is judged B against A, "
        "e.g. --ab-ref origin/main in a pull request.",
        None,
    ),
    Option(
        "--ab-env",
        variables,
        "KEY=VALUE,...",
        "A/B run: variables set in environment B only, e.g. ONEDNN_MAX_CPU_ISA=AVX2 or TF_ENABLE_ONEDNN_OPTS=0.",
        None,
    ),
    Option(
        "--ab-min-effect",
        fraction,
        "FRACTION",
        "A/B run: the smallest slowdown of B that fails a cell: B must be shown slower by at least this "
        "much (a one-sided 95% bound over every pair) and significantly slower after correcting for the "
        "number of cells judged.",
        "0.05",
    ),
    Option("--ab-seed", non_negative_int, "N", "A/B run: seed of the random A B B A order of rounds.", "0"),
    Option(
        "--worker-deadline",
        positive_number,
        "SECONDS",
        "Longest a worker process may take over one call (building a cell, one round) before it is "
        "killed and its cell fails.",
        "300",
    ),
    Option(
        "--stop-after",
        positive_number,
        "SECONDS",
        "Start no cell once the run has taken this long; the run ends as interrupted, and the cells "
        "that finished are judged and saved as usual (a time budget, e.g. accelbench gpu-check's). "
        "Default: no limit.",
        None,
    ),
)


def ini_key(option: Option) -> str:
    return option.dest


def kind_options() -> tuple[Option, ...]:
    """The options the registered benchmark kinds declare (Benchmark.options), in their order."""
    from accelbench.benches.catalog import BENCHMARKS

    return tuple(option for kind in BENCHMARKS.values() for option in kind.options)


def all_options() -> tuple[Option, ...]:
    """Every option of the run: the plugin's own, then the kinds'."""
    return OPTIONS + kind_options()


def add_options(parser: Any) -> None:
    group = parser.getgroup("accelbench", "accelbench: device x batch size x model benchmarks")
    for option in all_options():
        default = (
            f" Default: {option.default!r}."
            if option.default is not None
            else ""
            if "Default:" in option.help
            else " Default: from the preset."
        )
        # argparse %-formats every help text ("%(default)s"), so a literal % is written %%.
        group.addoption(
            option.flag,
            dest=option.dest,
            metavar=option.metavar,
            type=_usage(option.parse),
            default=None,
            help=(option.help + default).replace("%", "%%"),
        )
        parser.addini(ini_key(option), help=option.help + default, default=None)
    group.addoption(
        "--update-baselines",
        action="store_true",
        default=False,
        help="Record this run's accuracy, speedup and memory as the new baselines "
        "(atomic write; refused if any test failed; speedups are not taken from "
        "a run tracked by --memray). Default: off.",
    )
    group.addoption(
        "--require-baselines",
        action="store_true",
        default=False,
        help="Fail every gated number that has no baseline to be judged against (verdict "
        "new or ungated), as CI should. Default: off.",
    )
    parser.addini(REQUIRE_BASELINES_INI, type="bool", default=False, help="Like --require-baselines. Default: false.")
    group.addoption(
        "--ab-strict",
        action="store_true",
        default=False,
        help="A/B run: an unknown verdict (no decision within the cell's pairs) fails the cell, "
        "as a gate that must prove B is not slower should. Default: off.",
    )
    parser.addini(AB_STRICT_INI, type="bool", default=False, help="Like --ab-strict. Default: false.")


REQUIRE_BASELINES_INI = "accelbench_require_baselines"
AB_STRICT_INI = "accelbench_ab_strict"


def require_baselines(config: Any) -> bool:
    return bool(config.getoption("require_baselines") or config.getini(REQUIRE_BASELINES_INI))


def ab_strict(config: Any) -> bool:
    return bool(config.getoption("ab_strict") or config.getini(AB_STRICT_INI))


def check_baselines_dir(config: Any, path: Path) -> None:
    """A --baselines directory named on purpose must exist, unless this run records into it:
    a mistyped path would otherwise leave every gate, accuracy included, ungated and green."""
    named = config.getoption("accelbench_baselines") is not None or config.getini("accelbench_baselines")
    if named and not path.is_dir() and not config.getoption("update_baselines"):
        raise pytest.UsageError(
            f"--baselines: {path} is not a directory (record baselines there with "
            "--update-baselines, or name the directory that holds them)"
        )


def value(config: Any, option: Option) -> Any:
    """The command-line value, else the ini value, else the default; None where there is none."""
    given = config.getoption(option.dest)
    if given is not None:
        return given
    text = config.getini(ini_key(option)) or option.default
    if text is None:
        return None
    try:
        return option.parse(str(text))
    except (ValueError, UnknownName) as error:
        source = f"ini {ini_key(option)}" if config.getini(ini_key(option)) else option.flag
        raise pytest.UsageError(f"{source}: {error}") from None


def _check_names(flag: str, registry: Registry, names: tuple[str, ...]) -> None:
    for name in names:
        try:
            registry[name]
        except UnknownName as error:
            raise pytest.UsageError(f"argument {flag}: {error}") from None


def run_config(config: Any) -> RunConfig:
    """The run's configuration from pytest's options and ini keys."""
    given = {option.flag: value(config, option) for option in OPTIONS}
    modules = given["--modules"] or ()
    # A module that imports Keras starts its backend's framework here: its native start notices
    # kept off the terminal, as the backend's own start keeps them.
    quiet = BACKENDS[PROCESS_BACKEND].quiet_start if PROCESS_BACKEND in BACKENDS else contextlib.nullcontext
    try:
        with quiet():
            user_modules.import_modules(modules, (str(config.rootpath),))
    except user_modules.UserModuleError as error:
        raise pytest.UsageError(str(error)) from None
    late = [option.flag for option in kind_options() if not hasattr(config.option, option.dest)]
    if late:  # pytest parsed the command line before --modules were imported
        raise pytest.UsageError(
            f"option {late[0]}: a benchmark kind registered from --modules or accelbench_modules cannot add "
            "command-line options (pytest has parsed them by then); give its settings in your own module"
        )
    kinds_given = {option.flag: value(config, option) for option in kind_options()}
    _check_names("--models", MODELS, given["--models"] or ())  # now that the user's modules declared theirs
    _check_names("--dataset", DATASETS, (given["--dataset"],) if given["--dataset"] else ())
    if given["--ab-ref"] is not None:  # a ref that names no commit is one line now, not when A starts
        try:
            Worktree.resolve(given["--ab-ref"], Path(config.rootpath))
        except WorktreeError as error:
            raise pytest.UsageError(str(error)) from None
    preset = PRESETS[given["--preset"]]
    models = given["--models"] or presets.chosen(preset.models)
    for name in () if given["--dataset"] else models:  # a model's own dataset no module declares: one line
        _check_names(f"model {name}'s ModelSpec.dataset", DATASETS, (MODELS[name].dataset_in(None, True),))
    baselines = given["--baselines"]
    baselines = baselines if baselines.is_absolute() else Path(config.rootpath, baselines)
    check_baselines_dir(config, baselines)
    ab_setup = ab.Setup.from_options(
        given["--ab-python"],
        given["--ab-env"],
        given["--ab-min-effect"],
        ab_strict(config),
        given["--ab-seed"],
        given["--worker-deadline"],
        ref=given["--ab-ref"],
        repository=str(config.rootpath),
    )
    if ab_setup is not None:  # the round lengths the A/B rule's error rates were measured at
        preset = presets.for_ab_run(preset)
    return RunConfig(
        devices=given["--devices"],
        batch_sizes=given["--batch-sizes"] or preset.batch_sizes,
        models=models,
        dataset=given["--dataset"],
        data_dir=given["--data-dir"],
        preset=preset,
        baselines=baselines,
        update_baselines=config.getoption("update_baselines"),
        accuracy_tolerance=given["--accuracy-tolerance"],
        error_tolerance=given["--error-tolerance"],
        memory_tolerance=given["--memory-tolerance"],
        timing_threshold=given["--timing-threshold"],
        parity_digits=given["--parity-digits"],
        require_baselines=require_baselines(config),
        memory_budget=given["--memory-budget"] or (memory.physical_memory_bytes() or 2**33) // 2,
        memray_tracking=bool(config.getoption("memray", default=False)),
        user_batch_sizes=given["--batch-sizes"] is not None,
        user_models=given["--models"] is not None,
        output_root=Path(config.rootpath, ".benchmarks"),
        stamp=time.strftime("%Y%m%dT%H%M%S"),
        model_options=ModelOptions(deep_layers=given["--deep-layers"]),
        intra_op_threads=given["--intra-op-threads"],
        target_sizes=given["--target-sizes"],
        assumed_speedups=given["--assume-speedup"] or {},
        device_prices=given["--device-prices"] or {},
        trace_dir=given["--trace-dir"],
        ab_setup=ab_setup,
        backends=given["--backends"] or (PROCESS_BACKEND,),
        precisions=given["--precisions"],
        kind_options=kinds_given,
        worker_deadline_s=given["--worker-deadline"],
        stop_after_s=given["--stop-after"],
        modules=modules,
        module_roots=user_modules.roots_of(modules),
    )
