"""Controllable fake engines and helpers for deterministic pipeline tests and benchmarks.

Nothing here sleeps to make a test pass: a test holds an engine call at a :class:`Gate`
(a pair of ``threading.Event``), observes the pipeline while the call is held, then opens
the gate. Behaviour is scripted per segment text with :meth:`FakeEngine.on`:

* ``before=Gate()``: the call stops before producing anything (a slow or hung call);
* ``after={k: Gate()}``: a streaming call stops after yielding chunk ``k`` (mid-stream);
* ``error=exc``: the call raises ``exc`` (an exception, :class:`OutOfMemoryError`...);
* ``batch_error=exc`` (batching engine): raised only when batched with others (OOM of a big batch);
* ``n_chunks=n``: chunks for this segment.

Each chunk is ``np.full(chunk_samples, value_for(text), float32)``, so a test can check that
audio was routed to the right job. Text ``"*"`` scripts every call.
"""

from __future__ import annotations

import threading
import time
import zlib
from dataclasses import dataclass, field
from typing import Iterator, Optional, Sequence

import numpy as np
import pytest

from cosyweb.audio.types import PromptAudio
from cosyweb.config import Settings
from cosyweb.engines.base import Engine, EngineCapabilities, SegmentWork, Voice
from cosyweb.options import SynthesisOptions
from cosyweb.text.types import TextSegment, Token, TokenKind

SAMPLE_RATE_HZ = 16000
GATE_MAX_WAIT_S = 30.0  # a gate never opened fails the call instead of hanging a thread forever


class OutOfMemoryError(RuntimeError):
    """Stands in for ``torch.cuda.OutOfMemoryError`` (the pipeline matches it by class name)."""

    def __init__(self, msg: str = "CUDA error: tried to allocate 2.00 GiB") -> None:
        super().__init__(msg)


class Gate:
    """A point where an engine call waits until the test opens it.

    Attributes:
        reached: set when a call arrives at the gate.
        n_reached: how many calls arrived.
    """

    def __init__(self, name: str = "") -> None:
        self.name = name
        self.reached = threading.Event()
        self._open = threading.Event()
        self.n_reached = 0

    def open(self) -> None:
        """Let every waiting and future call pass."""
        self._open.set()

    @property
    def is_open(self) -> bool:
        return self._open.is_set()

    def wait_reached(self, timeout: float = 10.0) -> bool:
        """Block until a call has arrived at the gate."""
        return self.reached.wait(timeout)

    def pass_through(self) -> None:
        """Called by the engine: announce arrival, then wait for :meth:`open`."""
        self.n_reached += 1
        self.reached.set()
        if not self._open.wait(GATE_MAX_WAIT_S):
            raise RuntimeError(f"test gate {self.name!r} was never opened")


@dataclass
class Behaviour:
    """Scripted behaviour of calls on one segment text (see module docstring)."""

    before: Optional[Gate] = None
    after: dict[int, Gate] = field(default_factory=dict)
    error: Optional[BaseException] = None
    batch_error: Optional[BaseException] = None
    n_chunks: Optional[int] = None
    prepare_gate: Optional[Gate] = None


def value_for(text: str) -> float:
    """The constant sample value the fake engines produce for a segment text, in (0, 1)."""
    return 0.001 * (zlib.crc32(text.encode("utf-8")) % 997 + 1)


def fake_caps(name: str = "fake", max_batch: int = 1, concurrency: int = 1, **kw) -> EngineCapabilities:
    """Capabilities of a fake engine."""
    return EngineCapabilities(
        name=name,
        sample_rate=SAMPLE_RATE_HZ,
        streaming=max_batch == 1,
        max_batch=max_batch,
        default_concurrency=concurrency,
        languages=frozenset({"zh", "en"}),
        **kw,
    )


class FakeEngine(Engine):
    """A streaming engine whose every call can be held, failed or hung from the test.

    Args:
        n_chunks: chunks per segment by default.
        chunk_samples: samples per chunk.
        concurrency: declared ``default_concurrency``.
        caps: extra :class:`EngineCapabilities` fields.

    Attributes:
        calls: ``[(kind, texts)]`` in call order; kind is ``"synthesize"`` or ``"batch"``.
        prepared: prompt-text-and-fingerprint keys passed to ``prepare_voice``, in order.
        yielded: ``{segment text: chunks yielded}`` (a cancelled stream stops early).
        loaded, warmed, closed: lifecycle flags.
    """

    def __init__(self, *, n_chunks: int = 2, chunk_samples: int = 800, concurrency: int = 1, **caps) -> None:
        self.capabilities = fake_caps(concurrency=concurrency, **caps)
        self.n_chunks = n_chunks
        self.chunk_samples = chunk_samples
        self.script: dict[str, Behaviour] = {}
        self.calls: list[tuple[str, tuple[str, ...]]] = []
        self.prepared: list[str] = []
        self.yielded: dict[str, int] = {}
        self.loaded = self.warmed = self.closed = False
        self._lock = threading.Lock()

    # --- scripting ------------------------------------------------------------------------
    def on(self, text: str, **behaviour) -> Behaviour:
        """Script calls on segment ``text`` (``"*"``: every call). Returns the behaviour."""
        b = self.script[text] = Behaviour(**behaviour)
        return b

    def _behaviour(self, text: str) -> Behaviour:
        return self.script.get(text) or self.script.get("*") or Behaviour()

    def call_texts(self) -> list[str]:
        """Segment texts in the order the engine started them (batches flattened)."""
        with self._lock:
            return [t for _, texts in self.calls for t in texts]

    def _record(self, kind: str, texts: Sequence[str]) -> None:
        with self._lock:
            self.calls.append((kind, tuple(texts)))

    def chunk(self, text: str) -> np.ndarray:
        """The chunk produced for ``text``: float32 ``(chunk_samples,)``."""
        return np.full(self.chunk_samples, value_for(text), dtype=np.float32)

    # --- Engine API ---------------------------------------------------------------------------
    def load(self) -> None:
        self.loaded = True

    def warmup(self) -> None:
        self.warmed = True

    def close(self) -> None:
        self.closed = True

    def prepare_voice(self, prompt: PromptAudio, prompt_text: str = "") -> Voice:
        key = f"{prompt.fingerprint[:12]}:{prompt_text}"
        b = self.script.get(f"prepare:{prompt_text}") or Behaviour()
        with self._lock:
            self.prepared.append(key)
        if b.prepare_gate is not None:
            b.prepare_gate.pass_through()
        if b.error is not None:
            raise b.error
        return Voice(key=key, prompt=prompt, prompt_text=prompt_text, data={"key": key})

    def synthesize(self, voice: Voice, segment: TextSegment, options: SynthesisOptions) -> Iterator[np.ndarray]:
        text = segment.text
        b = self._behaviour(text)
        self._record("synthesize", [text])
        if b.before is not None:
            b.before.pass_through()
        if b.error is not None:
            raise b.error
        n = b.n_chunks if b.n_chunks is not None else self.n_chunks
        for k in range(n):
            with self._lock:
                self.yielded[text] = self.yielded.get(text, 0) + 1
            yield self.chunk(text)
            gate = b.after.get(k)
            if gate is not None:
                gate.pass_through()


class BatchingFakeEngine(FakeEngine):
    """A fake engine that really batches: one call costs ``call_cost_s`` plus ``item_cost_s``
    per item (mostly fixed, like a GPU forward pass), and returns one waveform per item.

    Args:
        max_batch: declared ``capabilities.max_batch``.
        call_cost_s, item_cost_s: simulated compute, slept (benchmarks; 0 in tests).

    Attributes:
        batch_sizes: size of every ``synthesize_batch`` call, in order (``calls`` has every call).
    """

    def __init__(self, *, max_batch: int = 4, call_cost_s: float = 0.0, item_cost_s: float = 0.0, **kw) -> None:
        super().__init__(max_batch=max_batch, **kw)
        self.call_cost_s = call_cost_s
        self.item_cost_s = item_cost_s
        self.batch_sizes: list[int] = []

    def synthesize(self, voice: Voice, segment: TextSegment, options: SynthesisOptions) -> Iterator[np.ndarray]:
        """The unbatched path (used when batching is off): the cost of a batch of one."""
        cost_s = self.call_cost_s + self.item_cost_s
        if cost_s > 0:
            time.sleep(cost_s)
        yield from super().synthesize(voice, segment, options)

    def synthesize_batch(self, items: Sequence[SegmentWork]) -> list[np.ndarray]:
        texts = [it.segment.text for it in items]
        self._record("batch", texts)
        with self._lock:
            self.batch_sizes.append(len(items))
        behaviours = [self._behaviour(t) for t in texts]
        for b in behaviours:
            if b.before is not None:
                b.before.pass_through()
        for b in behaviours:
            if b.error is not None:
                raise b.error
            if b.batch_error is not None and len(items) > 1:
                raise b.batch_error
        cost_s = self.call_cost_s + self.item_cost_s * len(items)
        if cost_s > 0:
            time.sleep(cost_s)
        n = self.n_chunks
        return [np.concatenate([self.chunk(t)] * (b.n_chunks or n)) for t, b in zip(texts, behaviours)]


# --- inputs built by hand (no text front end, no audio decoding) ---------------------------
def make_prompt(seed: int = 0, seconds: float = 1.0, sample_rate: int = 24000) -> PromptAudio:
    """A synthetic prompt: float32 noise, distinct per ``seed`` (so a distinct voice key)."""
    rng = np.random.default_rng(seed)
    n = int(seconds * sample_rate)
    samples = (0.1 * rng.standard_normal(n)).astype(np.float32)
    return PromptAudio(samples=samples, sample_rate=sample_rate, original_sample_rate=sample_rate, duration_s=n / sample_rate)


def make_segments(*texts: str, syllables: Optional[Sequence[int]] = None) -> list[TextSegment]:
    """Segments with the given texts; ``n_syllables`` defaults to the text length."""
    out = []
    for i, t in enumerate(texts):
        n_syl = syllables[i] if syllables is not None else len(t)
        tokens = [Token(TokenKind.WORD, t, lang="en")]
        out.append(TextSegment(index=i, text=t, cosyvoice_text=t, tokens=tokens, n_syllables=n_syl))
    return out


def make_settings(**overrides) -> Settings:
    """Settings for tests: no warm-up, generous timeouts, overrides applied."""
    base = dict(warmup=False, job_timeout_s=300.0, watchdog_s=120.0, batch_wait_ms=0.0)
    base.update(overrides)
    return Settings(**base)


def wait_until(predicate, timeout: float = 10.0, interval_s: float = 0.002) -> bool:
    """Poll ``predicate`` until true or ``timeout`` (a bound against hangs, not a timing assertion)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(interval_s)
    return bool(predicate())


@pytest.fixture
def service_factory():
    """``make(engine, **settings) -> started TTSService``; every gate is opened and every
    service shut down at teardown, so no test leaves threads behind."""
    from cosyweb.pipeline import TTSService

    made: list[tuple[TTSService, FakeEngine]] = []

    def make(engine: FakeEngine, **settings) -> TTSService:
        svc = TTSService(engine, make_settings(**settings))
        svc.start()
        made.append((svc, engine))
        return svc

    yield make
    for svc, engine in made:
        for b in list(engine.script.values()):
            for g in [b.before, b.prepare_gate, *b.after.values()]:
                if g is not None:
                    g.open()
        svc.shutdown(grace_s=0)


def submit(svc, *texts: str, prompt: Optional[PromptAudio] = None, client_id: Optional[str] = None, **kw):
    """Submit a job whose segments have the given texts (``text`` is their concatenation)."""
    return svc.submit(
        prompt if prompt is not None else make_prompt(),
        "".join(texts),
        SynthesisOptions(),
        client_id=client_id,
        segments=make_segments(*texts, syllables=kw.pop("syllables", None)),
        **kw,
    )
