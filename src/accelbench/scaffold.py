"""`accelbench init [DIR]`: a project of your own gets what this repository has: benchmarks/ (a
two-line test per benchmark kind, generated from the catalog, and baselines/), the pytest ini
lines that load the plugin and name your models' module, a module that declares one model as a
start, and a CI workflow that runs the quick suite and, on a pull request, the A/B of its code
against its base (--ab-ref): its training, inference and token-serving cells.

Nothing is overwritten: a file that is already there stops init, named, before anything is
written. A project that already keeps pytest settings (pytest.ini, pyproject.toml, tox.ini,
setup.cfg: the first pytest reads) gets the two keys accelbench needs added there, and no
pytest.ini of its own, which pytest would read instead, dropping the project's addopts,
markers and testpaths; its own tests run as before. Where that file already sets addopts, init
stops and says what to add.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

from accelbench.benches.catalog import BENCHMARKS

MODELS_MODULE = "benchmark_models"
# The written files' docstrings wrap here: inside ruff's and black's default line lengths.
DOC_WIDTH = 88

INI = f"""[pytest]
# accelbench: the benchmarks, the plugin, every run saved for --benchmark-compare, your models.
testpaths = benchmarks
addopts = -p accelbench.plugin --benchmark-autosave
accelbench_modules = {MODELS_MODULE}
"""

MODELS = '''"""The models and datasets this project benchmarks, declared as accelbench declares its own.

accelbench imports this module (pytest.ini: accelbench_modules) in the pytest process and in every
process a run starts, so A/B runs, other Keras backends and tf.distribute jobs see these too.
Import Keras inside the functions: TensorFlow must start after accelbench has set it up.
"""

import accelbench


def build(input_shape, outputs, options):
    import keras

    return keras.Sequential([keras.Input(input_shape), keras.layers.Flatten(),
                             keras.layers.Dense(128, activation="relu"), keras.layers.Dense(outputs)],
                            name="my_mlp")


accelbench.register_model(accelbench.ModelSpec("my_mlp", "my MLP 784-128-10 (Adam)", build, recipe_epochs=5))
# Your own data: accelbench.register_dataset("my_data", loader), and ModelSpec(..., dataset="my_data")
# runs the model on it, beside the others on theirs ("Benchmark your own model" in the docs).
'''

WORKFLOW = """name: accelbench
# The quick benchmark suite on every push; on a pull request, also each training and inference
# cell of its code (B) against its base branch (A), interleaved in one run (--ab-ref), and its
# generative models served under LoadGen on both sides in turn: tokens under load move with a
# shared runner's slow minutes, which both sides share and a stored baseline does not.
on: [push, pull_request]
jobs:
  benchmarks:
    runs-on: ubuntu-latest
    steps:
      - uses: actions/checkout@v5
        with:
          fetch-depth: 0  # --ab-ref needs the base branch's commits
      - uses: actions/setup-python@v6
        with:
          python-version: "3.11"
      - run: python -m pip install 'accelbench[tensorflow]'  # or [jax], [torch]; or however this project installs itself and accelbench
      - run: python -m pytest benchmarks --benchmark-json=run.json
      - if: github.event_name == 'pull_request'
        run: python -m pytest benchmarks/test_training.py::test_train benchmarks/test_inference.py::test_inference benchmarks/test_tokens.py::test_token_serving --ab-ref "origin/${{ github.base_ref }}" --benchmark-json=ab.json
      - if: always()
        run: |
          set -- run.json
          if [ -f ab.json ]; then set -- "$@" ab.json; fi
          accelbench report "$@" -o report.html --markdown summary.md
          cat summary.md >> "$GITHUB_STEP_SUMMARY"
"""


class ScaffoldError(RuntimeError):
    """init would overwrite something: nothing was written."""


def benchmark_files() -> dict[str, str]:
    """benchmarks/test_*.py, one two-line test per registered benchmark kind, in the file its
    registration names, as this repository has them."""
    kinds: dict[str, list[str]] = {}
    for fixture in BENCHMARKS:
        kinds.setdefault(BENCHMARKS[fixture].file, []).append(fixture)
    files = {}
    for name, fixtures in kinds.items():
        tests = []
        for fixture in fixtures:
            benchmark = BENCHMARKS[fixture]
            given = "benchmark, " if benchmark.timed else ""
            tests.append(
                f"def {benchmark.test}({given}{fixture}):\n    {fixture}({'benchmark' if benchmark.timed else ''})\n"
            )
        docs = (BENCHMARKS[fixture].file_doc for fixture in fixtures if BENCHMARKS[fixture].file_doc)
        doc = next(docs, "Benchmarks of the kinds registered with this file.")
        files[name] = _docstring(doc) + "\n\n\n" + "\n\n".join(tests)
    return files


def _docstring(doc: str) -> str:
    """A module docstring of `doc`'s paragraphs, each wrapped: a kind's file_doc is prose of any
    length, and the written file must pass the linters of the project it lands in."""
    paragraphs = [" ".join(paragraph.split()) for paragraph in doc.strip().split("\n\n")]
    paragraphs[0] = '"""' + paragraphs[0]
    if len(paragraphs) == 1:
        paragraphs[0] += '"""'
    fill = textwrap.TextWrapper(width=DOC_WIDTH, break_long_words=False, break_on_hyphens=False)
    text = "\n\n".join("\n".join(fill.wrap(paragraph)) for paragraph in paragraphs)
    return text if len(paragraphs) == 1 else text + '\n"""'


def project_files() -> dict[str, str]:
    """Every file init writes, by path under the project's folder."""
    return {
        **{f"benchmarks/{name}": text for name, text in benchmark_files().items()},
        "benchmarks/baselines/README.md": "Baselines: `pytest benchmarks --update-baselines` records them here, "
        "keyed by this machine's fingerprint and the Keras backend the run's process ran. Review the diff and commit it.\n",
        "pytest.ini": INI,
        f"{MODELS_MODULE}.py": MODELS,
        ".github/workflows/accelbench.yml": WORKFLOW,
    }


# Where a project keeps its pytest settings, in the order pytest looks for them, and the header
# of the section that holds them; whether values are TOML (quoted) or ini text.
SETTINGS = (
    ("pytest.ini", "[pytest]", False),
    ("pyproject.toml", "[tool.pytest.ini_options]", True),
    ("tox.ini", "[pytest]", False),
    ("setup.cfg", "[tool:pytest]", False),
)


def _section(lines: list[str], header: str) -> tuple[int, int] | None:
    """(header line, end) of the section, or None where the file has none."""
    starts = [index for index, line in enumerate(lines) if line.strip() == header]
    if not starts:
        return None
    end = next(
        (index for index in range(starts[0] + 1, len(lines)) if lines[index].lstrip().startswith("[")), len(lines)
    )
    return starts[0], end


def joined_settings(directory: Path) -> tuple[str, str] | None:
    """(file, its new text) where the project keeps pytest settings, with accelbench's keys
    added to them; None where it keeps none (init writes pytest.ini). Raises ScaffoldError where
    the keys cannot be added without changing what the project set."""
    for name, header, toml in SETTINGS:
        path = directory / name
        if not path.is_file():
            continue
        lines = path.read_text(encoding="utf-8").splitlines()
        found = _section(lines, header)
        if found is None:
            if name == "pytest.ini":  # pytest takes pytest.ini whatever it holds
                found = (len(lines), len(lines))
                lines.append(header)
            else:
                continue
        start, end = found
        keys = [line.split("=")[0].strip() for line in lines[start + 1 : end] if "=" in line]
        plugin = '["-p", "accelbench.plugin"]' if toml else "-p accelbench.plugin"
        if "addopts" in keys:
            raise ScaffoldError(
                f"{name} already sets addopts under {header}; nothing was written: add "
                f"-p accelbench.plugin to it and accelbench_modules = {MODELS_MODULE}, "
                "then run init again"
            )
        quoted = f'"{MODELS_MODULE}"' if toml else MODELS_MODULE
        added = [
            "# accelbench: its plugin and your models' module (accelbench init)",
            f"addopts = {plugin}",
            f"accelbench_modules = {quoted}",
        ]
        lines[start + 1 : start + 1] = added
        return name, "\n".join(lines) + "\n"
    return None


def init(directory: Path) -> list[str]:
    """Write the project's files under `directory`; returns what was written (or changed)."""
    files = project_files()
    joined = joined_settings(directory)
    if joined is not None:
        del files["pytest.ini"]
    taken = [path for path in files if (directory / path).exists()]
    if taken:
        raise ScaffoldError(
            f"{directory}: {', '.join(taken)} already there; nothing was written "
            "(add what you need from `accelbench init` in an empty folder by hand)"
        )
    if joined is not None:
        files[joined[0]] = joined[1]
    for path, text in files.items():
        target = directory / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    return list(files)
