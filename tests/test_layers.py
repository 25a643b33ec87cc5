"""The house's rules as docs/layout.md states them: no module imports one above its own layer,
no import circle, the report (JSON in, HTML out) loads neither pytest, a framework, nor any
process code; only the plugin and the benches import pytest; the judge imports no framework;
the parent and child halves of processes/ stay apart; the command has the subcommands listed."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import accelbench

PACKAGE = Path(accelbench.__file__).parent
# Lowest first: a module may import its own layer and those below it.
LAYERS = (
    (
        "accelbench.units",
        "accelbench.measured",
        "accelbench.registry",
        "accelbench.environments",
        "accelbench.progress",
        "accelbench.user_modules",
        "accelbench.option",
    ),
    ("accelbench.judge",),
    ("accelbench.axes",),
    ("accelbench.grid",),
    ("accelbench.results",),
    ("accelbench.work",),
    ("accelbench.processes",),
    ("accelbench.run",),
    ("accelbench.benches",),
    # the public API (accelbench/__init__.py) re-exports what a user declares with; the plugin
    ("accelbench", "accelbench.plugin", "accelbench.cli", "accelbench.scaffold"),
)


def module_names() -> dict[str, Path]:
    names = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        names[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return names


# A kind's folder (kinds/<name>/, kinds/__init__.py) spans the layers: each of its files sits in
# the layer its name says. Any other file of the folder is a helper of its work (child-safe).
KIND_FILES = {
    "result": "accelbench.measured",
    "gates": "accelbench.judge",
    "plots": "accelbench.results",
    "series": "accelbench.results",
    "tables": "accelbench.results",
    "work": "accelbench.work",
    "settings": "accelbench.run",
    "bench": "accelbench.benches",
    # a kind's own processes: what crosses to them (job), the parent that starts them (jobs),
    # their child half (*_main)
    "job": "accelbench.processes",
    "jobs": "accelbench.processes",
    "job_main": "accelbench.processes",
    "jax_job_main": "accelbench.processes",
}
KINDS_PACKAGE = "accelbench.kinds"


def kind_folders() -> list[str]:
    return sorted(path.name for path in (PACKAGE / "kinds").iterdir() if (path / "__init__.py").is_file())


def layer_of(module: str) -> int:
    if module.startswith(KINDS_PACKAGE + "."):
        parts = module.split(".")
        if len(parts) == 3:  # the folder's own __init__: a docstring
            return 0
        module = KIND_FILES.get(parts[3], "accelbench.work")
    elif module == KINDS_PACKAGE:
        return 0
    best = max(
        (prefix for layer in LAYERS for prefix in layer if module == prefix or module.startswith(prefix + ".")), key=len
    )
    return next(index for index, layer in enumerate(LAYERS) if best in layer)


def imports_of(module: str, path: Path, known: set[str]) -> set[str]:
    """Every accelbench module `module` imports, at its top or inside a function."""
    found = set()
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(
                    package.split(".")[: len(package.split(".")) - node.level + 1] + ([base] if base else [])
                )
            found.update(f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base for alias in node.names)
    return {name for name in found if name in known and name != module}


def graph() -> dict[str, set[str]]:
    modules = module_names()
    return {name: imports_of(name, path, set(modules)) for name, path in modules.items()}


def test_no_module_imports_one_above_its_layer():
    upward = [
        f"{module} ({layer_of(module)}) imports {target} ({layer_of(target)})"
        for module, targets in graph().items()
        for target in targets
        if layer_of(target) > layer_of(module)
    ]
    assert upward == []


def test_no_import_circle():
    edges = {
        module: {t for t in targets if not module.startswith(t + ".")}  # a package's own __init__ is no circle
        for module, targets in graph().items()
    }
    state: dict[str, str] = {}
    circles = []

    def visit(module: str, trail: list[str]) -> None:
        state[module] = "open"
        for target in sorted(edges[module]):
            if state.get(target) == "open":
                circles.append(" -> ".join(trail[trail.index(target) :] + [target]))
            elif target not in state:
                visit(target, trail + [target])
        state[module] = "done"

    for module in sorted(edges):
        if module not in state:
            visit(module, [module])
    assert circles == []


def test_the_report_loads_neither_pytest_a_framework_nor_process_code():
    """`accelbench report` is the `accelbench` command (accelbench/cli.py) with `report`."""
    probe = (
        "import sys, accelbench.cli; accelbench.cli.parser(); "
        "print(' '.join(sorted(name for name in sys.modules if name.split('.')[0] in "
        "('pytest', '_pytest', 'tensorflow', 'keras', 'jax', 'torch') or name.startswith('accelbench.processes'))))"
    )
    loaded = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout.split()
    assert loaded == []


def test_an_unrelated_project_s_pytest_run_is_left_alone(pytester):
    """accelbench installed, a project that does not ask for its plugin (no -p accelbench.plugin,
    no pytest_plugins): no TensorFlow, no accelbench module, no option or line of its own. The
    plugin is loaded only where asked: the package registers no pytest11 entry point."""
    pytester.makepyfile(
        test_unrelated="""
import sys

def test_nothing_of_ours_is_loaded():
    loaded = sorted(name for name in sys.modules if name.split(".")[0] in ("accelbench", "tensorflow", "keras", "jax"))
    assert loaded == []
"""
    )
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    assert "accelbench" not in result.stdout.str() + result.stderr.str()
    assert "accelbench" not in pytester.runpytest_subprocess("--help").stdout.str()


# The packages that may import pytest (docs/layout.md): the plugin, and the benches, whose cells
# skip and fail the pytest way. Everything below them runs in workers and in the report as well.
IMPORTS_PYTEST = ("accelbench.plugin", "accelbench.benches")


def imports_pytest_allowed(module: str) -> bool:
    """The plugin, the benches, and a kind folder's bench.py (its pytest side)."""
    return module.startswith(IMPORTS_PYTEST) or (module.startswith(KINDS_PACKAGE + ".") and module.endswith(".bench"))


FRAMEWORKS = ("tensorflow", "keras", "jax", "torch")


def third_party_imports(path: Path) -> set[str]:
    """The top-level names of every module `path` imports, at its top or inside a function."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and not node.level:
            found.add((node.module or "").split(".")[0])
    return found


def test_only_the_plugin_and_the_benches_import_pytest():
    offenders = [
        module
        for module, path in module_names().items()
        if not imports_pytest_allowed(module) and third_party_imports(path) & {"pytest", "_pytest"}
    ]
    assert not offenders, f"import pytest outside {IMPORTS_PYTEST}: {sorted(offenders)}"


def test_the_judge_imports_neither_pytest_nor_a_framework():
    """layout.md: judge/ is "no pytest, no framework: what a run concludes"."""
    offenders = {
        module: sorted(third_party_imports(path) & {"pytest", "_pytest", *FRAMEWORKS})
        for module, path in module_names().items()
        if module.startswith("accelbench.judge")
    }
    assert not {module: names for module, names in offenders.items() if names}


# layout.md's "(parent)" and "(child)" halves of processes/: neither imports the other, and only
# a worker (by the module path it is started with) runs the child half.
CHILD_HALF = (
    "accelbench.processes.worker_main",
    "accelbench.processes.cellwork",
    "accelbench.kinds.distributed.job_main",
    "accelbench.kinds.distributed.jax_job_main",
)
PARENT_HALF = (
    "accelbench.processes.workers",
    "accelbench.processes.ab",
    "accelbench.kinds.distributed.jobs",
    "accelbench.processes.worktree",
)


def test_parent_and_child_process_code_stay_apart():
    imports = graph()
    across = [
        f"{module} imports {target}"
        for module, targets in imports.items()
        for target in targets
        if (module in PARENT_HALF and target in CHILD_HALF) or (module in CHILD_HALF and target in PARENT_HALF)
    ]
    assert not across
    into_child = [
        f"{module} imports {target}"
        for module, targets in imports.items()
        for target in targets
        if target in CHILD_HALF and module not in CHILD_HALF
    ]
    assert not into_child, "only a worker runs the child half"


def test_the_command_has_the_subcommands_layout_md_lists():
    import argparse

    from accelbench import cli

    page = (Path(__file__).resolve().parents[1] / "docs" / "layout.md").read_text()
    listed = page.split("the `accelbench` command: ", 1)[1].split("\n", 1)[0]
    commands = next(action for action in cli.parser()._actions if isinstance(action, argparse._SubParsersAction))
    assert sorted(listed.split(", ")) == sorted(commands.choices)


# No grab-bag (layout.md): the classes every cell goes through keep to one concern each, which
# for a class has meant at most ten public methods (properties, which hold no behaviour, aside).
MOST_PUBLIC_METHODS = 10
KEPT_SMALL = {"Bench": "benches/base.py", "Session": "run/session.py", "Verdicts": "judge/verdicts.py"}


def test_the_classes_every_cell_goes_through_keep_ten_public_methods_or_fewer():
    counts = {}
    for name, path in KEPT_SMALL.items():
        (found,) = [
            node
            for node in ast.walk(ast.parse((PACKAGE / path).read_text()))
            if isinstance(node, ast.ClassDef) and node.name == name
        ]
        counts[name] = [
            method.name
            for method in found.body
            if isinstance(method, ast.FunctionDef)
            and not method.name.startswith("_")
            and not any(ast.unparse(decorator) == "property" for decorator in method.decorator_list)
        ]
    assert {name: methods for name, methods in counts.items() if len(methods) > MOST_PUBLIC_METHODS} == {}


# Where `import tensorflow` may stand (issue 49): the TensorFlow backend's module (its start,
# devices, roofs, and the work's TensorFlow paths: tf.data input, the tf.function prediction loop
# and predict step) and tf.distribute's job (TensorFlow's by nature). No other module: a run
# without TensorFlow installed imports none of them on its way.
IMPORTS_TENSORFLOW = {"accelbench.axes.backends.tensorflow", "accelbench.kinds.distributed.job_main"}


def test_only_the_tensorflow_backend_and_tensorflows_own_work_import_tensorflow():
    importing = {module for module, path in module_names().items() if "tensorflow" in third_party_imports(path)}
    assert importing == IMPORTS_TENSORFLOW


def test_no_class_name_is_defined_twice():
    """One name, one meaning (issue 50): a class name that two modules define (a worker's reply
    and a recorded part, a preset's settings and a result) reads as the same thing where it is not."""
    defined: dict[str, list[str]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef):
                defined.setdefault(node.name, []).append(str(path.relative_to(PACKAGE)))
    assert {name: where for name, where in defined.items() if len(where) > 1} == {}


# Where a kind's names may still stand outside its folder (issue 50, item 1: a kind is one
# folder), by folder, module and why: what the house has no generic way to say yet. Each is
# work left, and a new entry here needs one.
NAMED_OUTSIDE = {
    "svm": {},
    "memory": {
        "accelbench.gpu_check": "the GPU check reads a GPU cell's device peak beside the other kinds' numbers",
    },
    "distributed": {},
    "speedup": {
        "accelbench.gpu_check": "the GPU check reads a device's speedup beside the other kinds' numbers",
    },
    "serving": {
        "accelbench.gpu_check": "the GPU check reads a served model's p50 beside the other kinds' numbers",
    },
    "data_scaling": {},
    "throughput": {
        "accelbench.gpu_check": "the GPU check reads the training cells' rates and the latency cell's p50",
        "accelbench.kinds.speedup.plots": "the speedup plot draws the training cells' throughput ratio beside it",
    },
}


def names_of_kind(folder: str) -> tuple[set[str], set[str]]:
    """What names a kind: its fixtures (bench.py's KINDS), its result parts and its folder's
    module path, wherever they stand; and its result fields' keys, where a module reads a
    mapping by one (`info["loss_gap"]` reads the kind's result; a variable named `losses`, or
    an "epochs" key of a dict of its own, does not)."""
    import importlib

    from accelbench.measured import Part

    bench = importlib.import_module(f"{KINDS_PACKAGE}.{folder}.bench")
    result = importlib.import_module(f"{KINDS_PACKAGE}.{folder}.result")
    parts = [value for value in vars(result).values() if isinstance(value, type) and issubclass(value, Part)]
    parts = [part for part in parts if part.__module__ == result.__name__]
    keys = {key for part in parts for key in keys_of(part, result)} - shared_keys(folder)
    return {*bench.KINDS, *(part.__name__ for part in parts), f"{KINDS_PACKAGE}.{folder}", f"kinds/{folder}"}, keys


def keys_of(part: type, result: object = None) -> set[str]:
    """A part's keys; a part keyed by the dataset's quality (NAMING "metric": a recipe's
    accuracy or mae) has a set per quality; one keyed by other names, a set per naming its
    result module declares (a dict of exactly those names: the data-scaling kind's
    TIME_PROJECTION and MEMORY_PROJECTION)."""
    from accelbench.axes.data import QUALITIES

    if part.NAMING == ("metric",):
        namings = [{"metric": quality} for quality in QUALITIES]
    elif part.NAMING:
        namings = [v for v in vars(result).values() if isinstance(v, dict) and set(v) == set(part.NAMING)]
        assert namings, f"{part.__name__}'s result module declares no naming of {part.NAMING}"
    else:
        namings = [{}]
    return {part.key_for(name, **naming) for naming in namings for name in part.fields_of()}


def shared_keys(folder: str) -> set[str]:
    """Result keys a part outside the kind's folder also has, and the qualities (an SVM's
    accuracy is a recipe's too): words the house shares, not the kind's own."""
    import importlib

    from accelbench.measured import Part

    for module in module_names():  # every part is defined by now
        if module.endswith(".result") or module == "accelbench.measured":
            importlib.import_module(module)
    from accelbench.axes.data import QUALITIES

    outside = [part for part in _subclasses(Part) if not part.__module__.startswith(f"{KINDS_PACKAGE}.{folder}.")]
    fields = {name for part in outside for name in part.fields_of()}
    # a quality (accuracy, mae) is the house's word for what a model scores, whichever kind scores it
    return fields | {part.KEYS.get(name, name) for part in outside for name in fields} | set(QUALITIES)


def _subclasses(cls: type) -> list[type]:
    return [sub for direct in cls.__subclasses__() for sub in (direct, *_subclasses(direct))]


def names_used(path: Path) -> tuple[set[str], set[str]]:
    """A module's identifiers, attributes, imported modules and whole string constants (with
    the module paths its dotted names hold); and the strings it reads a mapping by
    (`info["loss_gap"]`, `info.get("loss_gap")`): how a module reads a result by its key."""
    found, keys = set(), set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Name):
            found.add(node.id)
        elif isinstance(node, ast.Attribute):
            found.add(node.attr)
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.update({node.module, *(alias.name for alias in node.names)})
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            found.add(node.value)
        if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant):
            keys.add(node.slice.value)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get":
            if node.args and isinstance(node.args[0], ast.Constant):
                keys.add(node.args[0].value)
    return {name for used in found for name in (used, *_prefixes(used))}, keys


def naming(folder: str, path: Path) -> set[str]:
    """What of the kind in `folder` the module at `path` names."""
    names, keys = names_of_kind(folder)
    used, read = names_used(path)
    return (names & used) | (keys & read)


def _prefixes(dotted: str) -> list[str]:
    parts = dotted.split(".")
    return [".".join(parts[:end]) for end in range(1, len(parts))]


def test_no_module_outside_a_kind_s_folder_names_the_kind():
    """Issue 50: everything outside kinds/<name>/ is generic over kinds: no module names a
    kind's fixture, its result parts or their keys, or its folder (but NAMED_OUTSIDE's, each
    with its reason)."""
    named = {}
    for folder in kind_folders():
        for module, path in module_names().items():
            if module.startswith(f"{KINDS_PACKAGE}.{folder}") or module in NAMED_OUTSIDE.get(folder, {}):
                continue
            if found := naming(folder, path):
                named[f"{module} names kinds/{folder}"] = sorted(found)
    assert named == {}


def test_a_kind_named_outside_its_folder_is_named_there():
    """An entry of NAMED_OUTSIDE that no longer names its kind is taken out, not left to hide one."""
    stale = [
        f"{module} ({folder})"
        for folder, modules in NAMED_OUTSIDE.items()
        for module in modules
        if not naming(folder, module_names()[module])
    ]
    assert stale == []


def test_a_planted_name_of_a_kind_outside_its_folder_is_found(tmp_path):
    """The check above can fail: a module that reads a kind's result field by its key, or
    names its fixture, is named; one with a variable of a key's name is not."""
    folder = "serving"
    planted = tmp_path / "planted.py"
    planted.write_text("def read(info):\n    return info['serving_p99_ms'], 'serving_bench'\n")
    assert naming(folder, planted) == {"serving_p99_ms", "serving_bench"}
    planted.write_text("def read(serving_p99_ms):\n    return serving_p99_ms\n")
    assert naming(folder, planted) == set()
