"""Benchmark kinds, a folder each: `kinds/<name>/` holds everything one kind is, split by
which process and which layer runs it, so the house outside stays generic over kinds:

- `result.py`: its typed result parts (accelbench.measured.Part): no framework, no pytest;
  the judge, the report and the history read them;
- `gates.py`: its gates against stored baselines (judge.gates.GATES);
- `settings.py`: what each preset sets for it (run.presets.KIND_SETTINGS);
- `plots.py`: the report's plots of its numbers (results.report.plots.PLOTS): no pytest, no
  framework, no process code;
- `work.py` and its helpers: the work it measures, child-safe: a backend's or an A/B side's
  worker runs it too (processes.cellwork.kind_work);
- `bench.py` (the pytest side, the parent): its cells and skip rules, its Bench, and its KINDS,
  which benches/catalog.py registers.

tests/test_layers.py holds each file to its layer and checks that no module outside a kind's
folder names the kind's fixture, result parts or folder.
"""
