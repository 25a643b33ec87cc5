"""The token cells: a generative model's prefill (prompt tokens/s and time to first token against
prompt length) and decode (tokens/s and time per output token against batch size), timed through
pytest-benchmark on the process backend, with the key/value cache's bytes per token counted and
measured, and each phase's share of its roof: prefill's FLOP/s of the compute roof, decode's
bytes read per second of the copy roof (a decode step reads every weight and the whole cache)."""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any

import pytest

from accelbench.axes.backends import BACKENDS, PROCESS_BACKEND
from accelbench.axes.models import MODELS
from accelbench.benches.base import Bench, Benchmark
from accelbench.grid.cells import Grid, device_absent, device_unsupported, params, placeholder
from accelbench.judge.verdicts import TIMING
from accelbench.kinds.tokens import work
from accelbench.kinds.tokens.result import Tokens
from accelbench.kinds.tokens.settings import TokenSettings
from accelbench.measured import Place, Roof
from accelbench.results.summary import Section
from accelbench.user_modules import call_user

PREFILL, DECODE = "prefill", "decode"  # its phases
PREFILL_FIXTURE, DECODE_FIXTURE = "token_prefill", "token_decode"  # its fixtures
SETTINGS = "tokens"  # its settings' name in run.presets.KIND_SETTINGS (settings.py)
ABOVE_THE_ROOF = 1.05  # a share past this is a measurement error (a wrong count, a clock that stopped early)
DTYPE = "float32"  # the decoders run in float32: the roof they are held to


@dataclass(frozen=True)
class TokenCell:
    device: str
    model: str
    phase: str
    size: int  # prefill: the prompt's tokens; decode: the sequences decoded together

    @property
    def id(self) -> str:
        return f"{self.device}-{'p' if self.phase == PREFILL else 'bs'}{self.size}-{self.model}"

    def fields(self) -> dict:
        keys = Place.keys
        column = f"p{self.size}" if self.phase == PREFILL else f"bs{self.size}"
        return {keys.device: self.device, keys.model: self.model, keys.column: column}


class TokenBench(Bench):
    """A token cell: the model built and its work warmed up (traced, compiled) in setup, outside
    the timed region; rounds timed in the test."""

    cell: TokenCell

    @property
    def settings(self) -> TokenSettings:
        return self.session.grid.settings[SETTINGS]

    def setup(self, node: pytest.Item) -> None:
        self.spec = MODELS[self.cell.model]
        self.generation, self.where = self.spec.generation, self.placement()
        self.say("building the model and tracing its steps")
        self.model = work.build(self.spec, self.where, self.session.run.model_options)
        self.weight_bytes = int(self.model.count_params()) * 4

    def hold_to_roof(self, share_of: Any) -> None:
        """Record the cell's share of its device's roof now, and again if the roof is measured
        again later in the run; a share past ABOVE_THE_ROOF fails the cell."""
        if BACKENDS[PROCESS_BACKEND].roof is None:
            return
        roof = self.session.roofs.of(PROCESS_BACKEND, self.cell.device, DTYPE)
        share = share_of(roof)
        if share is not None and share > ABOVE_THE_ROOF:
            pytest.fail(f"{self.name}: {share:.0%} of the device's measured roof: a measurement error", pytrace=False)
        record = lambda roof: self.record(self.shares(share_of(roof), roof))
        self.session.roofs.hold(PROCESS_BACKEND, self.cell.device, DTYPE, record)

    def shares(self, share: float | None, roof: Roof) -> Tokens:
        raise NotImplementedError


class PrefillBench(TokenBench):
    """One prompt of the cell's length into an empty cache: prompt tokens/s, and its time to the
    first token (no queue before it)."""

    def setup(self, node: pytest.Item) -> None:
        super().setup(node)
        prompt = work.prompts(self.generation, 1, self.cell.size, self.session.run.model_options.seed)
        self.prefill = work.warmed(self.spec, work.Prefill(self.model, self.generation, self.where, prompt))

    def __call__(self, benchmark: Any) -> None:
        length = self.cell.size
        median = self.time_rounds(benchmark, self.prefill.run, length, "prefill", self.settings.rounds)
        count = self.generation.flops_per_token
        flops = sum(count(position) for position in range(length)) if count else None
        self.record(
            Tokens(
                phase=PREFILL,
                prompt_tokens=length,
                sequences=1,
                cache_bytes_per_token=self.generation.cache_bytes_per_token,
                flops_per_token=flops / length if flops else None,
            )
        )
        if median:
            self.record(Tokens(tokens_per_s=length / median, ttft_ms=median * 1e3))
            if flops:
                self.hold_to_roof(lambda roof: flops / median / roof.flops_per_s)

    def shares(self, share: float | None, roof: Roof) -> Tokens:
        return Tokens(compute_share=share, roof_device=roof.device, roof_flops_per_s=roof.flops_per_s)


class DecodeBench(TokenBench):
    """The cell's batch of sequences, each after a prompt of the preset's first length, decoded
    `decode_steps` tokens a round: new tokens/s of every sequence, and the time per output token
    (a step)."""

    def setup(self, node: pytest.Item) -> None:
        super().setup(node)
        length = self.settings.prompt_lengths[0]
        prompt = work.prompts(self.generation, self.cell.size, length, self.session.run.model_options.seed)
        decode = lambda: work.Decode.after(self.model, self.generation, self.where, prompt, self.settings.decode_steps)
        self.decode = work.warmed(self.spec, call_user(f"model {self.spec.name!r}: its prefill", decode))

    def __call__(self, benchmark: Any) -> None:
        steps, sequences = self.settings.decode_steps, self.cell.size
        median = self.time_rounds(benchmark, self.decode.run, steps * sequences, "decode", self.settings.rounds)
        measure = self.generation.cache_bytes
        held = measure(self.decode.cache) if measure else None
        read = self.weight_bytes + held if held is not None else None
        self.record(
            Tokens(
                phase=DECODE,
                prompt_tokens=self.decode.start,
                sequences=sequences,
                decode_steps=steps,
                cache_bytes_per_token=self.generation.cache_bytes_per_token,
                cache_bytes_measured=held,
                cache_positions=self.generation.context,
                bytes_per_step=read,
            )
        )
        if median:
            step = median / steps
            self.record(Tokens(tokens_per_s=steps * sequences / median, tpot_ms=step * 1e3))
            if read:
                self.hold_to_roof(lambda roof: read / step / roof.bytes_per_s)

    def shares(self, share: float | None, roof: Roof) -> Tokens:
        return Tokens(bandwidth_share=share, roof_device=roof.device, roof_bytes_per_s=roof.bytes_per_s)


# Its cells: every device and generative model, at each prompt length (prefill) or batch (decode).
def token_models(grid: Grid) -> list[str]:
    """The run's generative models where --models names some, else the preset's."""
    if grid.user_models:
        return list(grid.generative)
    settings: TokenSettings = grid.settings[SETTINGS]
    return [name for name in settings.models if name in MODELS]


def cells_of(phase: str, sizes_of: Any) -> Any:
    def cells(grid: Grid) -> list:
        models = token_models(grid)
        if not models:
            return placeholder(
                f"no-generative-model-{phase}",
                "no generative model among --models (gpt_tiny, gpt2_small, or yours: a ModelSpec with a Generation)",
            )
        sizes = sizes_of(grid.settings[SETTINGS])
        made = [TokenCell(d, m, phase, n) for d, m, n in itertools.product(grid.devices, models, sizes)]
        return params(grid, made, (device_absent, device_unsupported))

    return cells


FILE_DOC = (
    "Generative models' tokens: prefill tokens/s and time to first token against prompt length, "
    "decode tokens/s and time per output token against batch size."
)
# Where this module's tables come in the summary, among the built-in kinds' (benches/catalog.py).
PLACE_IN_SUMMARY = 75
# Its benchmark kinds, by fixture name (benches/catalog.py registers them).
KINDS: dict[str, Benchmark] = {
    PREFILL_FIXTURE: Benchmark(
        cells_of(PREFILL, lambda settings: settings.prompt_lengths),
        PrefillBench,
        "test_prefill",
        (TIMING,),
        file="test_tokens.py",
        file_doc=FILE_DOC,
        about="A prompt into an empty key/value cache: prompt tokens/s and time to first token (kinds/tokens/).",
        sections=(
            Section(
                "prefill: prompt tokens/s, median round",
                {PREFILL_FIXTURE: "{column}"},
                Tokens.keys.tokens_per_s,
                "rate",
            ),
            Section(
                "time to first token: one prompt's prefill, no queue, median round",
                {PREFILL_FIXTURE: "{column}"},
                Tokens.keys.ttft_ms,
                "milliseconds",
                (TIMING,),
            ),
            Section(
                "prefill: FLOP/s as a share of the measured compute roof",
                {PREFILL_FIXTURE: "{column}"},
                Tokens.keys.compute_share,
                "percent",
            ),
        ),
    ),
    DECODE_FIXTURE: Benchmark(
        cells_of(DECODE, lambda settings: settings.batches),
        DecodeBench,
        "test_decode",
        (TIMING,),
        file="test_tokens.py",
        about="Greedy tokens against a prefilled key/value cache: tokens/s and time per output token (kinds/tokens/).",
        sections=(
            Section(
                "decode: new tokens/s of every sequence, median round",
                {DECODE_FIXTURE: "{column}"},
                Tokens.keys.tokens_per_s,
                "rate",
            ),
            Section(
                "time per output token: one decode step, median round",
                {DECODE_FIXTURE: "{column}"},
                Tokens.keys.tpot_ms,
                "milliseconds",
                (TIMING,),
            ),
            Section(
                "key/value cache: bytes per token of one sequence, counted",
                {DECODE_FIXTURE: "{column}"},
                Tokens.keys.cache_bytes_per_token,
                "bytes",
            ),
            Section(
                "decode: weights and cache read per second as a share of the measured copy bandwidth",
                {DECODE_FIXTURE: "{column}"},
                Tokens.keys.bandwidth_share,
                "percent",
            ),
        ),
    ),
}
