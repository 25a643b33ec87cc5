"""What a run prints after pytest's own summary: the accelbench sections of the terminal."""

from __future__ import annotations

from typing import Any

from accelbench.benches import catalog
from accelbench.results import costs, summary, verdict_block
from accelbench.run.session import Session


def write_summary(terminalreporter: Any, state: Session) -> None:
    """The run's sections after pytest's own: the summary tables, the A/B table, the verdict
    block, the projections, and the run's notes (baselines written or refused)."""
    records = [summary.CellRecord.from_extra_info(name, info) for name, info in state.cells.items()]
    tables = summary.tables([("", [record for record in records if record])], catalog.sections())
    if tables:
        terminalreporter.section("accelbench summary")
        for table in tables:
            for line in summary.text_lines(table):
                terminalreporter.write_line(line)
            terminalreporter.write_line("")
        terminalreporter.write_line(summary.LEGEND)
    for roof in state.roofs.measured():
        terminalreporter.write_line(summary.roof_line(roof))
    ran_on = summary.data_line([record for record in records if record])
    if ran_on:
        terminalreporter.write_line(ran_on)
    if state.ab_run is not None:
        terminalreporter.section("accelbench A/B")
        environments = state.ab_run.environments
        for line in summary.ab_lines(
            environments["B"].describe(), state.ab_run.described, state.verdicts.all(), environments["A"].describe()
        ):
            terminalreporter.write_line(line)
    if state.verdicts.by_cell:
        terminalreporter.section("accelbench verdicts")
        for line in verdict_block.lines(state.verdicts):
            terminalreporter.write_line(line)
    if state.projections:
        terminalreporter.section("accelbench projections")
        for line in costs.lines(device_costs(state)):
            terminalreporter.write_line(line)
    for note in state.notes:
        terminalreporter.write_line(f"accelbench: {note}")


def device_costs(state: Session) -> list[costs.DeviceCost]:
    return costs.device_costs(state.projections, state.run.assumed_speedups, state.run.device_prices)
