"""A generative model served under MLPerf LoadGen with its token latencies on: the system under
test is a real serving loop (a request queue, and a loop on the thread that built the model
that prefills each new request, streams its first token back as LoadGen's FirstTokenComplete,
decodes every running sequence a token a step and completes each request with all its tokens;
LoadGen's test runs on a thread of its own meanwhile), and LoadGen (work/loadgen.py)
issues the requests, times their first tokens and their tokens after, and decides VALID or
INVALID against the model's limits. Child-safe.

Two batchings, as LLM servers have them: static (a batch is admitted together and runs until its
longest request is done; no request joins it) and continuous (between decode steps a finished
sequence's slot is taken by the next request waiting: Orca's iteration-level scheduling, what
vLLM and TGI do). Written here because no kept Python library serves a Keras model's decode
step in-process; vLLM's and TGI's schedulers are their servers' own.
"""

from __future__ import annotations

import dataclasses
import queue
import statistics
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from accelbench.axes.models import Generation
from accelbench.judge.rules import within
from accelbench.kinds.tokens.gates import TOKEN_OFFLINE, TOKEN_TPOT, TOKEN_TTFT, Limits
from accelbench.kinds.tokens.work import next_tokens, no_gradients
from accelbench.registry import Registry
from accelbench.work import loadgen
from accelbench.work.loadgen import Durations, Expected, LoadgenResult
from accelbench.work.peak_search import find_peak

THREAD_NAME = "accelbench-loadgen"  # the thread LoadGen's test runs on while the loop serves
DECODE_STEP = "decode_step"  # the loop's own clock (LoadgenResult.loop_parts_ms): its median decode step
PERCENTILE = "99.00"  # the percentile the limits are on (MLPerf's, for its LLMs)
# A rate of the preset's runs is held to its queries' 90th percentiles: the few seconds a run
# lasts give LoadGen's early stopping 64 queries to vouch for a p90, where a p99 needs 662
# (MLPerf's own rules, --serving-rules mlperf, hold it to the p99).
PRESET_PERCENTILE, PRESET_QUERIES = "90.00", 64
# The percentile of TTFT and TPOT gated at the fixed rate: the median. Over 15 unchanged quick
# runs the held p90 of TTFT ranged 0.94-1.85x its baseline in runs free of a slow stretch (its
# 6th-slowest request of about 64), the p50 0.93-1.24x; a 2x slower decode step doubles the
# median TPOT as surely as its tail (docs/measurements.md).
GATED = "50.00"


@dataclass(frozen=True)
class Requests:
    """The requests LoadGen draws from, by stated distributions: each prompt's length drawn
    uniformly from prompt_lengths (a few lengths: each is a shape the model's prefill traces),
    each request's output tokens uniformly from output_tokens (low, high), `count` of them,
    seeded."""

    prompt_lengths: tuple[int, ...]
    output_tokens: tuple[int, int]
    count: int = 256
    seed: int = 0

    @property
    def mean_output(self) -> float:
        return (self.output_tokens[0] + self.output_tokens[1]) / 2

    def drawn(self, vocabulary: int) -> list[Request]:
        rng = np.random.default_rng(self.seed)
        lengths = rng.choice(self.prompt_lengths, self.count)
        outputs = rng.integers(self.output_tokens[0], self.output_tokens[1] + 1, self.count)
        return [
            Request(rng.integers(0, vocabulary, (1, int(length))).astype("int32"), int(output))
            for length, output in zip(lengths, outputs)
        ]


@dataclass(frozen=True)
class Request:
    prompt: np.ndarray  # 1 x length token ids
    output_tokens: int  # the tokens it asks for (the first included)


@dataclass(frozen=True)
class TokenBatching:
    """How the loop batches: `slots` sequences decoded together, taking new requests when the
    policy (POLICIES) says; static waits up to timeout_ms after the first request for the batch
    to fill."""

    policy: str  # a POLICIES name
    slots: int
    timeout_ms: float = 0.0

    @property
    def label(self) -> str:
        return f"{self.policy} {self.slots}"


# When the loop admits waiting requests into free slots: (free slots, slots) -> whether.
POLICIES: Registry[Callable[[int, int], bool]] = Registry("token batching")
POLICIES.register("static", lambda free, slots: free == slots)  # only an idle batch: it runs to its longest request
POLICIES.register("continuous", lambda free, slots: free > 0)  # any free slot, between decode steps


@dataclass
class Running:
    """A request in a slot: the tokens it has made (the response's data: kept alive until LoadGen
    has taken them), the position its next token is written at."""

    query_id: int
    request: Request
    tokens: list[int]
    position: int
    issued: float  # perf_counter when LoadGen issued it
    first: float  # ... when its first token was streamed back


@dataclass(frozen=True)
class Timing:
    """A completed request as the loop saw it (perf_counter seconds): what goodput counts."""

    issued: float
    first: float
    done: float
    tokens: int

    @property
    def ttft_s(self) -> float:
        return self.first - self.issued

    @property
    def tpot_s(self) -> float:
        """LoadGen's: the time after the first token over the tokens after it."""
        return (self.done - self.first) / (self.tokens - 1) if self.tokens > 1 else 0.0


def goodput(timings: list[Timing], limits: Limits) -> float | None:
    """Requests/s that met both limits (their own TTFT and TPOT, each request held to them, as
    vLLM's and DistServe's goodput counts), over the run: its first issue to its last completion.
    LoadGen reports percentiles over all requests, not this."""
    if not timings:
        return None
    span = max(t.done for t in timings) - min(t.issued for t in timings)
    met = sum(1 for t in timings if t.ttft_s * 1e3 <= limits.ttft_ms and t.tpot_s * 1e3 <= limits.tpot_ms)
    return met / span if span > 0 else None


@dataclass
class TokenServer:
    """LoadGen's system under test for a generative model (the module's docstring). A prefill or
    decode that raises stops the loop's work: every request running, waiting or issued after is
    completed at once with no tokens, so LoadGen's run ends; the error is kept."""

    model: Any
    generation: Generation
    placement: Any
    requests: list[Request]
    batching: TokenBatching
    error: str | None = None
    # Per admission: (requests admitted together, sequences already running then): a static
    # batch admits into an idle batch alone, a continuous one between a running batch's steps.
    admitted: list[tuple[int, int]] = field(default_factory=list)
    timings: list[Timing] = field(default_factory=list)  # every request completed with its tokens
    # Each decode step's seconds in the loop, by its own clock: the model's decode and the greedy
    # pick of the next tokens (DECODE_STEP), what a slower model slows; the rest of a token's
    # time is the loop's and the other requests' prefills.
    step_seconds: list[float] = field(default_factory=list)
    _queue: queue.SimpleQueue = field(default_factory=queue.SimpleQueue)
    _STOP = object()

    def __post_init__(self) -> None:
        if self.batching.slots > 1 and self.generation.insert is None:
            raise ValueError(
                f"{self.batching.label}: the model's Generation has no insert, so it is served one request at a time"
            )
        self.admits = POLICIES[self.batching.policy]
        # Whether the cache's rows follow the sequences running (rows_for), taken to size by
        # Generation.take; else the loop keeps `slots` rows (one slot: the lone sequence's cache).
        self.fitted = self.generation.take is not None and self.batching.slots > 1
        self.cache: Any = None

    def __enter__(self) -> TokenServer:
        import mlperf_loadgen as lg

        self.handle = lg.ConstructSUT(self._issue, lambda: None)
        return self

    def __exit__(self, *exc: object) -> None:
        import mlperf_loadgen as lg

        lg.DestroySUT(self.handle)

    def serve_during(self, test: Callable[[], None]) -> None:
        """LoadGen's test (`test`, which returns when LoadGen's run is over) on a thread of its
        own while the loop runs here, on the thread that built the model: a framework's
        per-thread state stays the model's (PyTorch's CPU kernels ran its decode step 1.3x
        slower on a fresh thread, its intra-op pool started anew there)."""

        def drive() -> None:
            try:
                test()
            finally:
                self._queue.put(self._STOP)

        thread = threading.Thread(target=drive, name=THREAD_NAME, daemon=True)
        thread.start()
        try:
            self._serve()
        finally:
            thread.join()

    def _issue(self, samples: list[Any]) -> None:
        """LoadGen's issue thread: each request on the queue with the moment it was issued."""
        now = time.perf_counter()
        self._queue.put([(sample.id, sample.index, now) for sample in samples])

    # --- the loop -----------------------------------------------------------------------------
    def _serve(self) -> None:
        capacity = self.batching.slots
        # The cache's rows, a sequence or None each: `capacity` of them, or (fitted) as many as
        # the sequences running need.
        slots: list[Running | None] = [None] * (0 if self.fitted else capacity)
        waiting: deque = deque()
        stopping = False
        while True:
            running = sum(slot is not None for slot in slots)
            if not running and not waiting:
                if stopping:
                    return
                item = self._queue.get()
                if item is self._STOP:
                    return
                waiting.extend(item)
            stopping = self._take(waiting, not running) or stopping
            joining = min(len(waiting), capacity - running) if self.admits(capacity - running, capacity) else 0
            slots = self._fitted(slots, running + joining)
            if joining and self.error is None:
                free = [i for i, slot in enumerate(slots) if slot is None]
                for index in free[:joining]:
                    slots[index] = self._admit(*waiting.popleft(), index)
                self.admitted.append((joining, running))
            if any(slots):
                self._step(slots)
            if self.error is not None:
                self._fail([(s.query_id, True) for s in slots if s] + [(q, False) for q, _, _ in waiting])
                slots, waiting = [None] * len(slots), deque()

    def _fitted(self, slots: list[Running | None], sequences: int) -> list[Running | None]:
        """The rows for `sequences` (rows_for): the running ones first, in their order, and the
        cache taken to match (Generation.take), when more rows are needed, or when the loop is
        idle, or the rows are four times what is needed. Not at every halving: a take copies the
        cache, and sequences crossing a power of two at every few steps would take it as often.
        Unchanged where the loop is not fitted. A take that raises ends the loop's work as a
        step's does."""
        rows = rows_for(sequences, self.batching.slots)
        kept = [i for i, slot in enumerate(slots) if slot is not None]
        if not self.fitted or rows == len(slots) or not sequences:
            return slots
        if kept and len(slots) > rows > len(slots) // 4:
            return slots
        order = kept + [kept[0] if kept else 0] * (rows - len(kept))  # a repeated row: a slot to fill
        try:
            with self.placement.scope(), no_gradients():
                self.cache = self.generation.take(self.model, self._batch_cache(), order)
        except Exception as raised:  # a user's model may raise anything: one line, and LoadGen ends
            self.error = f"{type(raised).__name__}: {raised}"
            return slots
        return [slots[i] for i in kept] + [None] * (rows - len(kept))

    def _batch_cache(self) -> Any:
        """The batch's cache, made at its first use (inside the caller's placement scope): a
        one-token prefill of every slot, its rows then filled by insert and sized by take."""
        if self.cache is None:
            _, self.cache = self.generation.prefill(self.model, np.zeros((self.batching.slots, 1), "int32"))
        return self.cache

    def _take(self, waiting: deque, idle: bool) -> bool:
        """Requests issued since the last step onto `waiting`, without blocking (static batching
        on an idle batch waits its timeout after the first for the batch to fill). True: the
        server is stopping."""
        deadline = time.perf_counter() + self.batching.timeout_ms / 1e3
        fill = idle and self.batching.policy == "static" and self.batching.timeout_ms > 0
        while True:
            wait = deadline - time.perf_counter() if fill and len(waiting) < self.batching.slots else 0
            try:
                item = self._queue.get(timeout=wait) if wait > 0 else self._queue.get_nowait()
            except queue.Empty:
                return False
            if item is self._STOP:
                return True
            waiting.extend(item)

    def _admit(self, query_id: int, index: int, issued: float, slot: int) -> Running | None:
        """A request's prefill: its first token streamed to LoadGen, its cache put in the slot."""
        import mlperf_loadgen as lg

        request = self.requests[index]
        if self.error is not None:
            self._fail([(query_id, False)])
            return None
        try:
            with self.placement.scope(), no_gradients():
                logits, one = self.generation.prefill(self.model, request.prompt)
                first = int(next_tokens(logits)[0, 0])
                if self.batching.slots == 1:
                    self.cache = one
                else:
                    self.cache = self.generation.insert(self.model, self._batch_cache(), one, slot)
        except Exception as raised:  # a user's model may raise anything: one line, and LoadGen ends
            self.error = f"{type(raised).__name__}: {raised}"
            self._fail([(query_id, False)])
            return None
        running = Running(query_id, request, [first], request.prompt.shape[1], issued, time.perf_counter())
        data = np.asarray(running.tokens, dtype="int32")
        lg.FirstTokenComplete([lg.QuerySampleResponse(query_id, data.ctypes.data, data.nbytes, 1)])
        if request.output_tokens <= 1:
            self._complete(running)
            return None
        return running

    def _step(self, slots: list[Running | None]) -> None:
        """One decode step of every row (an empty one decodes a dummy token at position 0,
        overwritten when a request takes it); a finished request completed."""
        live = [slot for slot in slots if slot is not None]
        tokens = np.array([[s.tokens[-1] if s else 0] for s in slots], dtype="int32")
        single = self.batching.slots == 1
        positions = live[0].position if single else np.array([s.position if s else 0 for s in slots])
        try:
            with self.placement.scope(), no_gradients():
                started = time.perf_counter()
                logits, self.cache = self.generation.decode(self.model, tokens, self.cache, positions)
                chosen = next_tokens(logits)[:, 0]
                self.step_seconds.append(time.perf_counter() - started)
        except Exception as raised:  # a user's model may raise anything: one line, and LoadGen ends
            self.error = f"{type(raised).__name__}: {raised}"
            return
        for index, running in enumerate(slots):
            if running is None:
                continue
            running.tokens.append(int(chosen[index]))
            running.position += 1
            if len(running.tokens) >= running.request.output_tokens:
                self._complete(running)
                slots[index] = None

    def _complete(self, running: Running) -> None:
        import mlperf_loadgen as lg

        data = np.asarray(running.tokens, dtype="int32")
        response = lg.QuerySampleResponse(running.query_id, data.ctypes.data, data.nbytes, len(running.tokens))
        self.timings.append(Timing(running.issued, running.first, time.perf_counter(), len(running.tokens)))
        lg.QuerySamplesComplete([response])

    def _fail(self, queries: list[tuple[int, bool]]) -> None:
        """Requests completed with no tokens (those that never had a first token get an empty one
        first: LoadGen pairs the two)."""
        import mlperf_loadgen as lg

        for query_id, started in queries:
            if not started:
                lg.FirstTokenComplete([lg.QuerySampleResponse(query_id, 0, 0, 0)])
            lg.QuerySamplesComplete([lg.QuerySampleResponse(query_id, 0, 0, 0)])


def rows_for(sequences: int, slots: int) -> int:
    """The rows a step decodes for `sequences` running, with Generation.take: the next power of
    two, at most the slots. A compiled step is traced once per shape, so a few sizes serve every
    count (as vLLM pads its decode batches to the sizes it captured CUDA graphs for)."""
    return min(slots, 1 << max(0, sequences - 1).bit_length())


def row_counts(slots: int) -> list[int]:
    """Every row count rows_for gives under `slots`: the shapes a served step is traced at."""
    return sorted({rows_for(n, slots) for n in range(1, slots + 1)})


# --- LoadGen runs ---------------------------------------------------------------------------
@dataclass(frozen=True)
class Bound:
    """A gated number's bound: its baseline on this machine moved by the gate's tolerance, as the
    gate holds it (relation ">=": a rate may not drop below; "<=": a latency may not rise above)."""

    metric: str
    relation: str
    value: float

    def holds(self, numbers: dict[str, float]) -> bool:
        measured = numbers.get(self.metric)
        return measured is not None and within(measured, self.value, self.relation)


def gated_numbers(scenario: str, result: LoadgenResult) -> dict[str, float]:
    """What the gates hold of a gated run: Server's TTFT and TPOT medians (at the fixed rate),
    Offline's output tokens/s; none where LoadGen's summary has none."""
    if scenario == "Server":
        ttft, tpot = result.first_token_ms.get(GATED), result.output_token_ms.get(GATED)
        return {TOKEN_TTFT: ttft, TOKEN_TPOT: tpot} if ttft is not None and tpot is not None else {}
    return {TOKEN_OFFLINE: result.tokens_per_s} if result.tokens_per_s else {}


@dataclass(frozen=True)
class TokenPlan:
    """What a token-serving cell runs, in plain fields (it crosses to a worker as JSON)."""

    durations: Durations
    limits: Limits
    requests: Requests
    batchings: tuple[TokenBatching, ...]  # Server's peak search under each; the first also serves Offline
    rate_precision: float
    max_search_runs: int
    log_dir: str
    fixed_rate: float | None = None  # the rate TTFT and TPOT are gated at (the baseline's); None: half the peak
    capacity: Capacity | None = None  # LoadGen's schedule; None: measured on the cell just before
    # LoadGen runs a gated result is the best VALID one of (Server at the fixed rate, Offline):
    # noise on a busy machine only adds time, and 3 of 15 unchanged runs had a stretch at half
    # speed that put TTFT at 5x and TPOT at 2x their baselines (docs/measurements.md).
    attempts: int = 1
    # The attempts end at the first VALID run whose gated numbers hold every bound: the verdict
    # is the one the best of all would give (a gate passes if any run passes it), and an
    # unchanged model's cell serves once. Empty (nothing gated here: no baseline for this
    # machine) ends them at the first VALID run; None runs them all (recording baselines, whose
    # number is the best of all; an A/B run's sides, held to each other).
    bounds: tuple[Bound, ...] | None = None

    def as_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls, saved: dict[str, Any]) -> TokenPlan:
        return cls(
            **{
                **saved,
                "durations": Durations(**saved["durations"]),
                "limits": Limits(**saved["limits"]),
                "requests": Requests(
                    **{**saved["requests"], "prompt_lengths": tuple(saved["requests"]["prompt_lengths"])}
                ),
                "batchings": tuple(TokenBatching(**b) for b in saved["batchings"]),
                "capacity": Capacity(**saved["capacity"]) if saved.get("capacity") else None,
                "bounds": tuple(Bound(**b) for b in saved["bounds"]) if saved.get("bounds") is not None else None,
            }
        )


def settings_for(scenario: str, plan: TokenPlan, expected: Expected, rate: float | None) -> Any:
    """LoadGen's TestSettings with token latencies on: Server at `rate` requests/s held to the
    limits (TTFT also as the target latency, which LoadGen's early stopping counts first tokens
    against), Offline expecting the measured rate."""
    settings = loadgen.settings_for(
        loadgen.SCENARIOS[scenario], expected, plan.durations, plan.limits.ttft_ms / 1e3, rate
    )
    settings.use_token_latencies = True
    settings.ttft_latency = int(plan.limits.ttft_ms * 1e6)
    settings.tpot_latency = int(plan.limits.tpot_ms * 1e6)
    if not loadgen.RULES[plan.durations.rules] and scenario == "Server":
        settings.server_target_latency_percentile = float(PRESET_PERCENTILE) / 100
        settings.min_query_count = max(plan.durations.min_query_count, PRESET_QUERIES)
    return settings


@dataclass(frozen=True)
class TokenRun:
    """One LoadGen test of the loop: LoadGen's result, and what the loop saw (its admissions, its
    requests' timings, the goodput they give)."""

    result: LoadgenResult
    admitted: tuple[tuple[int, int], ...]
    timings: tuple[Timing, ...]
    goodput: float | None


def held_percentile(plan: TokenPlan) -> str:
    """The percentile a run's limits hold: MLPerf's p99 under its rules, p90 in a preset's run."""
    return PERCENTILE if loadgen.RULES[plan.durations.rules] else PRESET_PERCENTILE


def run_once(
    model: Any,
    generation: Generation,
    placement: Any,
    plan: TokenPlan,
    requests: list[Request],
    scenario: str,
    batching: TokenBatching,
    expected: Expected,
    log_dir: Path,
    rate: float | None = None,
) -> TokenRun:
    """One LoadGen test: its result, the loop's admissions and goodput."""
    settings = settings_for(scenario, plan, expected, rate)
    with (
        loadgen.SampleLibrary(len(requests), len(requests)) as library,
        TokenServer(model, generation, placement, requests, batching) as server,
    ):
        server.serve_during(lambda: loadgen.run_test(server.handle, library, settings, log_dir))
    result = loadgen.read_summary(scenario, log_dir, rate)
    if server.step_seconds:
        result = dataclasses.replace(result, loop_parts_ms={DECODE_STEP: statistics.median(server.step_seconds) * 1e3})
    if server.error is not None:
        result = dataclasses.replace(result, valid=False, error=server.error)
    return TokenRun(result, tuple(server.admitted), tuple(server.timings), goodput(server.timings, plan.limits))


@dataclass(frozen=True)
class Capacity:
    """What LoadGen's schedule starts from, timed on the cell just before: a request's prefill
    (the median over the pool's first prompts), a decode step of the first batching's full
    batch, and the requests/s a batch of its slots sustains from them (a prefill each, and the
    request's share of its batch's steps)."""

    prefill_s: float
    step_s: float
    requests_per_s: float

    def expected(self, mean_output: float) -> Expected:
        """LoadGen's Expected: a lone request's time, and the rate (Offline's is twice it)."""
        alone = self.prefill_s + mean_output * self.step_s
        return Expected(alone, self.requests_per_s, alone)


def measure_capacity(
    model: Any, generation: Generation, placement: Any, plan: TokenPlan, requests: list[Request]
) -> Capacity:
    from accelbench.work.measure import seconds

    slots = plan.batchings[0].slots
    with placement.scope(), no_gradients():
        # Each the fastest of its repeats: noise on a busy machine only ever adds time, and the
        # search starts from this rate (a rate measured in a slow moment started it 45% low).
        prefill = statistics.median(
            min(seconds(lambda r=r: next_tokens(generation.prefill(model, r.prompt)[0])) for _ in range(3))
            for r in requests[:8]
        )
        if slots == 1 or generation.insert is None:
            _, cache = generation.prefill(model, requests[0].prompt)
            position, tokens = requests[0].prompt.shape[1], np.zeros((1, 1), "int32")
        else:
            _, cache = generation.prefill(model, np.zeros((slots, 1), "int32"))
            position, tokens = np.full(slots, max(plan.requests.prompt_lengths)), np.zeros((slots, 1), "int32")

        def step() -> None:
            nonlocal cache  # each step's cache the next one's: a step may consume the one it is given
            logits, cache = generation.decode(model, tokens, cache, position)
            next_tokens(logits)

        step()
        step_s = min(seconds(step) for _ in range(8))
    return Capacity(prefill, step_s, 1.0 / (prefill + plan.requests.mean_output * step_s / slots))


def warm_rows(model: Any, generation: Generation, placement: Any, plan: TokenPlan, prompt: np.ndarray) -> None:
    """Each batching's served shapes traced before LoadGen times anything (a compiled step is
    traced per shape, and a trace inside a run would read as a slow request): with
    Generation.take, a step, an insert and a take at every row count the loop decodes."""
    if generation.take is None or generation.insert is None:
        return
    with placement.scope(), no_gradients():
        _, one = generation.prefill(model, prompt)
        for slots in sorted({batching.slots for batching in plan.batchings if batching.slots > 1}):
            _, full = generation.prefill(model, np.zeros((slots, 1), "int32"))
            caches = {rows: generation.take(model, full, list(range(rows))) for rows in row_counts(slots)}
            for rows, cache in caches.items():
                positions = np.full(rows, prompt.shape[1])
                logits, cache = generation.decode(model, np.zeros((rows, 1), "int32"), cache, positions)
                next_tokens(logits)
                cache = generation.insert(model, cache, one, 0)  # each consumes the cache it is given
                for other in caches:  # every take the loop makes: from each row count to each
                    generation.take(model, cache, [0] * other)


# How a gated result's VALID runs rank, best first: Server's at the fixed rate by its median time
# per output token, Offline's by its tokens/s.
RANKS: dict[str, Callable[[LoadgenResult], float]] = {
    "Server": lambda result: result.output_token_ms.get("50.00", float("inf")),
    "Offline": lambda result: -(result.tokens_per_s or 0.0),
}


@dataclass(frozen=True)
class Searched:
    """Server's peak search under one batching: every rate tried and the fastest VALID one."""

    batching: TokenBatching
    runs: tuple[LoadgenResult, ...]
    peak: LoadgenResult | None
    precision: float
    goodput: tuple[float | None, ...] = ()  # requests/s meeting both limits, per run


@dataclass(frozen=True)
class TokenServed:
    """What one token-serving cell measured. Crosses from a worker as JSON."""

    scenario: str
    capacity: Capacity
    result: LoadgenResult | None  # Offline's run; Server: the first batching's peak
    searched: tuple[Searched, ...] = ()
    fixed: LoadgenResult | None = None  # Server: the run at the fixed rate, first batching
    error: str | None = None

    def as_json(self) -> dict[str, Any]:
        return loadgen.as_plain(self)

    @classmethod
    def from_json(cls, saved: dict[str, Any]) -> TokenServed:
        result = lambda r: LoadgenResult.from_json(r) if r else None
        return cls(
            scenario=saved["scenario"],
            capacity=Capacity(**saved["capacity"]),
            result=result(saved["result"]),
            searched=tuple(
                Searched(
                    TokenBatching(**s["batching"]),
                    tuple(LoadgenResult.from_json(r) for r in s["runs"]),
                    result(s["peak"]),
                    s["precision"] if s["precision"] is not None else float("inf"),
                    tuple(s.get("goodput", ())),
                )
                for s in saved["searched"]
            ),
            fixed=result(saved["fixed"]),
            error=saved["error"],
        )


def serve(
    model: Any,
    generation: Generation,
    placement: Any,
    scenario: str,
    plan: TokenPlan,
    say: Callable[[str], None] = lambda text: None,
) -> TokenServed:
    """One token-serving cell: the schedule measured, then LoadGen's Offline run (the first
    batching), or Server's peak search under every batching and a run at the fixed rate."""
    requests = plan.requests.drawn(generation.vocabulary)
    capacity = plan.capacity or measure_capacity(model, generation, placement, plan, requests)
    warm_rows(model, generation, placement, plan, requests[0].prompt)
    expected = capacity.expected(plan.requests.mean_output)
    root = Path(plan.log_dir)
    goodputs: dict[str, float | None] = {}  # a run's log folder -> the goodput the loop saw

    def once(batching: TokenBatching, where: Path, rate: float | None = None) -> LoadgenResult:
        run = run_once(model, generation, placement, plan, requests, scenario, batching, expected, where, rate)
        goodputs[run.result.log_dir] = run.goodput
        return run.result

    def enough(result: LoadgenResult) -> bool:
        numbers = gated_numbers(scenario, result)
        return plan.bounds is not None and all(bound.holds(numbers) for bound in plan.bounds)

    def best(batching: TokenBatching, where: Path, rate: float | None = None) -> LoadgenResult:
        """Up to plan.attempts runs (loadgen.best_run), until one holds plan.bounds."""
        run = lambda folder: once(batching, folder, rate)  # noqa: E731
        return loadgen.best_run(plan.attempts, where, RANKS[scenario], run, enough)

    if scenario != "Server":
        say(f"LoadGen {scenario}, {plan.batchings[0].label}")
        result = best(plan.batchings[0], root)
        return TokenServed(scenario, capacity, result, error=result.error)
    searched = []
    for batching in plan.batchings:
        slug = f"{batching.policy}-{batching.slots}"

        def run_at(rate: float, batching: TokenBatching = batching, slug: str = slug) -> LoadgenResult:
            say(f"LoadGen Server at {rate:,.2f} requests/s ({batching.label})")
            return once(batching, root / slug / f"rate-{rate:.3f}", rate)

        # The capacity is a full batch's throughput, which the peak under the limits stays near:
        # its neighbours a precision away closed the bracket in two runs in 26 of 34 quick
        # searches on the EPYC (the peak found 0.77 or 1.0 of it), where doubling past it first
        # overloaded a run for 2-3 s (docs/measurements.md).
        search = find_peak(
            run_at, capacity.requests_per_s, plan.rate_precision, plan.max_search_runs, 1 + plan.rate_precision
        )
        good = tuple(goodputs.get(run.log_dir) for run in search.runs)
        searched.append(Searched(batching, search.runs, search.peak, search.precision, good))
        failed = next((run.error for run in search.runs if run.error), None)
        if failed:
            return TokenServed(scenario, capacity, search.runs[-1], tuple(searched), error=failed)
    first = searched[0]
    rate = plan.fixed_rate or (first.peak.target_qps / 2 if first.peak else None)
    fixed = None
    if rate:
        say(f"LoadGen Server at the fixed {rate:,.2f} requests/s")
        fixed = best(plan.batchings[0], root / "fixed" / f"rate-{rate:.3f}", rate)
    return TokenServed(scenario, capacity, first.peak, tuple(searched), fixed, error=fixed.error if fixed else None)
