"""The harness's tests come in two tiers (tests/conftest.py): `pytest tests` runs the fast one,
`--runslow` adds the tests marked slow or timing, and .ci/run runs both."""

import configparser
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

TIERED = """
import pytest

def test_fast():
    pass

@pytest.mark.slow(30)
def test_slow():
    pass

@pytest.mark.timing
def test_timed():
    pass
"""


def collected(pytester, *args):
    result = pytester.runpytest("-p", "no:cacheprovider", "--collect-only", "-q", *args)
    return {line.split("::")[-1] for line in result.stdout.lines if "::" in line}, result.stdout.str()


def test_the_slow_tier_is_deselected_by_default_said_in_the_header_and_run_with_runslow(pytester):
    pytester.makeconftest((ROOT / "tests" / "conftest.py").read_text())
    pytester.makepyfile(test_three_tests=TIERED)

    fast, text = collected(pytester)
    assert fast == {"test_fast"}
    assert "2 deselected" in text

    header = pytester.runpytest("-p", "no:cacheprovider", "--co").stdout.str()
    assert "--runslow runs them (tox -e slow-tests)" in header

    every, _ = collected(pytester, "--runslow")
    assert every == {"test_fast", "test_slow", "test_timed"}


def test_ci_runs_both_tiers_and_the_slow_one_runs_every_slow_and_timing_test():
    ci = (ROOT / ".ci" / "run").read_text()
    assert "python3 -m tox -e tests\n" in ci and "python3 -m tox -e slow-tests\n" in ci
    tox = configparser.ConfigParser(interpolation=None)
    tox.read(ROOT / "tox.ini")
    slow_tier = tox["testenv:slow-tests"]["commands"]
    assert 'pytest tests --runslow -m "slow and not timing"' in slow_tier
    assert "pytest tests --runslow -m timing" in slow_tier
