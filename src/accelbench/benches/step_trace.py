"""With --trace-dir: a few steady-state steps of a cell's model, profiled once every cell has
run, by the backend that runs the cell (in its worker for another backend)."""

from __future__ import annotations

from accelbench.axes.models import MODELS
from accelbench.benches.base import Bench
from accelbench.processes.protocol import Cellwork
from accelbench.work import traces


def trace_later(bench: Bench, work_name: str) -> None:
    """Profile the cell's STEPS `work_name` step after the last cell: a trace left the next cell's
    timed rounds 1.4-1.75x slower when taken in place, so no timed round of the run follows
    one. Estimators have no TensorFlow steps to trace."""
    directory = bench.session.run.trace_dir
    if directory is None or MODELS[bench.cell.model].framework == "sklearn":
        return
    if bench.on_other_backend():  # that backend's profiler, in its worker

        def take():
            spec = bench.session.backends.spec(work_name, bench.cell)
            return bench.session.backends.call(
                bench.cell.backend, Cellwork.TRACE_STEPS, spec=spec, directory=str(directory), cell_name=bench.name
            )
    else:

        def take():
            step = bench.session.built.step(work_name, bench.cell).run
            return traces.trace_steps(directory, bench.name, traces.PHASES[work_name], step, bench.say)

    bench.session.deferred.append((f"step trace of {bench.name}", lambda: bench.record(take())))
