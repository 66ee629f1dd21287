"""The serving pipeline's front door: one :class:`TTSService` per engine.

Every entry point (Gradio UI, Gradio API, HTTP server, CLI) goes through it: it loads the
engine, owns admission control (one place for all callers), runs the worker threads and
exposes readiness, health, stats and Prometheus metrics. See :mod:`cosyweb.pipeline.core`
for the job life cycle and :mod:`cosyweb.pipeline.scheduler` for the scheduling policy.

Typical use::

    service = TTSService(engine, settings)
    service.start()                       # load + warm up + workers; ready=True
    prompt = service.load_prompt(path)    # InvalidInputError on a bad recording
    pid = service.register_prompt(prompt) # optional: store it, prepare the voice in the background
    job = service.submit(prompt, text, SynthesisOptions(), client_id=session)  # BusyError when full
    for ev in job.events():               # queued / started / chunk ... / done | error
        ...
    service.shutdown()                    # stop admission, let running jobs finish
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from typing import Optional

from prometheus_client import CollectorRegistry

from cosyweb.audio.types import PromptAudio
from cosyweb.config import Settings
from cosyweb.engines.base import Engine, EngineCapabilities
from cosyweb.errors import InvalidInputError
from cosyweb.options import Mode, SynthesisOptions
from cosyweb.text.types import Polyphone, TextSegment

from .core import PipelineCore
from .job import Job
from .prompts import RegisteredPrompt
from .voices import voice_key
from .worker import Worker

log = logging.getLogger("cosyweb.pipeline")


class TTSService:
    """Admission, scheduling, workers and metrics around one engine.

    Args:
        engine: a constructed (not yet loaded) engine.
        settings: load-time settings; the pipeline fields are described in
            :class:`cosyweb.config.Settings` and :class:`cosyweb.pipeline.core.PipelineCore`.
    """

    def __init__(self, engine: Engine, settings: Settings) -> None:
        self.engine = engine
        self.settings = settings
        self._core = PipelineCore(engine, settings)
        self._workers: list[Worker] = []
        self._lock = threading.Lock()
        self._started = False
        self._stopped = False

    # --- description ----------------------------------------------------------------------
    @property
    def capabilities(self) -> EngineCapabilities:
        """The engine's declared capabilities."""
        return self.engine.capabilities

    @property
    def engine_name(self) -> str:
        """The engine id (``capabilities.name``)."""
        return self.engine.capabilities.name

    @property
    def sample_rate(self) -> int:
        """Output sample rate of every job, Hz."""
        return self._core.sample_rate

    @property
    def concurrency(self) -> int:
        """Worker threads (engine calls at once)."""
        return self._core.concurrency

    @property
    def max_active_jobs(self) -> int:
        """Jobs served at once."""
        return self._core.max_active_jobs

    @property
    def max_batch(self) -> int:
        """Largest dynamic batch (1 = no batching)."""
        return self._core.max_batch

    @property
    def metrics_registry(self) -> CollectorRegistry:
        """This service's Prometheus registry (serve with ``prometheus_client.generate_latest``)."""
        return self._core.metrics.registry

    @property
    def metrics(self):
        """The :class:`~cosyweb.pipeline.metrics.PipelineMetrics` (counters, histograms)."""
        return self._core.metrics

    @property
    def voice_cache(self):
        """The prepared-voice LRU (:class:`~cosyweb.pipeline.voices.VoiceCache`)."""
        return self._core.voices

    @property
    def prompt_store(self):
        """The registered-prompt LRU (:class:`~cosyweb.pipeline.prompts.PromptStore`)."""
        return self._core.prompts

    @property
    def ready(self) -> bool:
        """True once the engine is loaded and warmed up and until shutdown (``/readyz``)."""
        return self._core.ready

    @property
    def healthy(self) -> bool:
        """Liveness (``/healthz``): False while an engine call is stuck past ``watchdog_s``
        or a worker thread has died."""
        if not self._core.monitor.healthy:
            return False
        if self._started and not self._stopped and not all(w.is_alive() for w in self._workers):
            return False
        return True

    # --- lifecycle ------------------------------------------------------------------------
    def start(self) -> None:
        """Load the engine, warm it up (if ``settings.warmup``), start the workers; then ready.

        Raises:
            cosyweb.errors.StartupError: from the engine, with a fix-it message.
        """
        with self._lock:
            if self._started:
                return
            self._started = True
        t0 = time.monotonic()
        self.engine.load()
        if self.settings.warmup:
            self.engine.warmup()
            self._warm_text_front_end()
        self._core.monitor.start()
        self._workers = [Worker(self._core, i) for i in range(self._core.concurrency)]
        for w in self._workers:
            w.start()
        with self._core.cond:
            self._core.ready = True
            self._core.accepting = True
        log.info(
            "pipeline ready: engine=%s concurrency=%d max_active_jobs=%d max_queue=%d max_batch=%d start_s=%.2f",
            self.engine_name, self._core.concurrency, self._core.max_active_jobs, self.settings.max_queue,
            self._core.max_batch, time.monotonic() - t0,
        )

    def _warm_text_front_end(self) -> None:
        """Load the text front end's dictionaries (pypinyin, number words: about 1 s) now, so the
        first request (whose short text may be analysed on the server's event loop) does not pay it."""
        try:
            self.analyze_text("你好，world 2026。", SynthesisOptions())
        except Exception:  # a warm-up only; a real request reports its own error
            log.exception("text front-end warm-up failed")

    def shutdown(self, grace_s: Optional[float] = None) -> None:
        """Graceful stop: refuse new jobs, cancel queued ones, let running jobs finish within
        ``grace_s`` seconds (default ``settings.shutdown_grace_s``), cancel the rest, stop the
        workers, close the engine. Idempotent. Call it from the SIGTERM handler.
        """
        with self._lock:
            if self._stopped:
                return
            self._stopped = True
        grace_s = self.settings.shutdown_grace_s if grace_s is None else grace_s
        with self._core.cond:
            self._core.accepting = False
            self._core.stopping = True
            self._core.ready = False
        n_queued = self._core.cancel_waiting("shutdown")
        finished = self._core.wait_idle(grace_s)
        n_cut = 0 if finished else self._core.cancel_all("shutdown")
        self._core.scheduler.close()
        deadline = time.monotonic() + 5.0
        for w in self._workers:
            w.join(timeout=max(0.0, deadline - time.monotonic()))
        self._core.monitor.stop()
        stuck = [w.name for w in self._workers if w.is_alive()]
        if stuck:
            log.warning("shutdown: workers still inside an engine call, engine not closed: %s", stuck)
        else:
            try:
                self.engine.close()
            except Exception:
                log.exception("engine close failed")
        log.info("pipeline stopped: cancelled_queued=%d cancelled_running=%d", n_queued, n_cut)

    def __enter__(self) -> "TTSService":
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.shutdown()

    # --- inputs -----------------------------------------------------------------------------
    def load_prompt(self, source: "str | bytes") -> PromptAudio:
        """Decode, condition and check a prompt recording with the configured limits
        (delegates to :func:`cosyweb.audio.load_prompt`).

        Args:
            source: a file path or the file's bytes.

        Raises:
            cosyweb.errors.InvalidInputError: no audio, too little speech, silence, undecodable, too big.
        """
        from cosyweb.audio import load_prompt  # lazy: audio decoding stack

        s = self.settings
        return load_prompt(
            source,
            target_sample_rate=s.prompt_sample_rate,
            max_duration_s=s.max_prompt_s,
            min_speech_s=s.min_speech_s,
            max_bytes=int(s.max_upload_mb * 1024 * 1024),
        )

    def register_prompt(self, prompt: PromptAudio, prompt_text: str = "", *, prewarm: bool = True) -> str:
        """Store a conditioned prompt server-side and (by default) prepare its voice in the background.

        The voice is prepared by a worker as a low-priority item (after the first segments
        of new jobs, FIFO with later segments), never on the caller's thread, and only while
        fewer than ``max_active_jobs + max_queue`` prewarms are pending. A job for this
        prompt that starts before the prewarm has finished waits for the same result.

        Args:
            prompt: from :meth:`load_prompt`.
            prompt_text: its transcript ("" if unknown).
            prewarm: False stores the prompt only.

        Returns:
            The opaque ``prompt_id`` (32 hex characters) for :meth:`get_prompt`.
        """
        entry = self._core.prompts.add(prompt, prompt_text, voice_key(prompt, prompt_text))
        if prewarm:
            self._core.request_prewarm(entry.prompt, entry.prompt_text, entry.voice_key)
        return entry.prompt_id

    def get_prompt(self, prompt_id: str) -> RegisteredPrompt:
        """The registered prompt ``prompt_id`` (``.prompt``, ``.prompt_text``).

        Raises:
            cosyweb.pipeline.prompts.PromptNotFoundError: unknown or evicted id (HTTP 404).
        """
        return self._core.prompts.get(prompt_id)

    def forget_prompt(self, prompt_id: str) -> bool:
        """Remove a registered prompt (its prepared voice stays in the voice LRU). False if unknown."""
        return self._core.prompts.remove(prompt_id)

    def prewarm(self, prompt_id: str) -> bool:
        """Queue the background preparation of a registered prompt's voice again (e.g. after
        the voice was evicted). Returns True if queued, False if cached, pending or skipped.

        Raises:
            cosyweb.pipeline.prompts.PromptNotFoundError: unknown id.
        """
        entry = self._core.prompts.get(prompt_id)
        return self._core.request_prewarm(entry.prompt, entry.prompt_text, entry.voice_key)

    def voice_state(self, prompt_id: str) -> str:
        """``"ready"`` (prepared voice cached), ``"pending"`` (being prepared), ``"failed"``
        (the background preparation raised; see ``get_prompt(id).voice_error``) or
        ``"not_started"`` (skipped or evicted; the first job prepares it).

        Raises:
            cosyweb.pipeline.prompts.PromptNotFoundError: unknown id.
        """
        entry = self._core.prompts.get(prompt_id)
        if entry.voice_key in self._core.voices:
            return "ready"
        if self._core.prewarm_pending(entry.voice_key):
            return "pending"
        return "failed" if entry.voice_error is not None else "not_started"

    def analyze_text(self, text: str, options: SynthesisOptions) -> list[TextSegment]:
        """Normalise, annotate and split ``text`` into segments (delegates to the text front end).

        Raises:
            cosyweb.errors.InvalidInputError: bad annotation (with its character position), too long, empty.
        """
        from cosyweb.text.frontend import analyze  # lazy: pypinyin and friends

        s = self.settings
        return analyze(
            text,
            options.language,
            first_segment_chars=s.first_segment_chars,
            segment_chars=s.segment_chars,
            max_chars=s.max_text_chars,
        )

    def polyphones(self, text: str) -> list[Polyphone]:
        """Polyphonic characters of ``text`` with their candidate readings (for the UI helper)."""
        from cosyweb.text.frontend import find_polyphones  # lazy

        return list(find_polyphones(text))

    # --- jobs -------------------------------------------------------------------------------
    def submit(
        self,
        prompt: PromptAudio,
        text: str,
        options: SynthesisOptions,
        *,
        prompt_text: str = "",
        client_id: Optional[str] = None,
        segments: Optional[list[TextSegment]] = None,
        timeout_s: Optional[float] = None,
    ) -> Job:
        """Validate, analyse and admit one synthesis job. Never blocks on the engine.

        Args:
            prompt: the conditioned prompt (from :meth:`load_prompt`).
            text: the text to speak.
            options: per-request options.
            prompt_text: the prompt's transcript ("" if unknown).
            client_id: browser session / API key for the per-client limit; None = unlimited.
            segments: already analysed segments of ``text`` (skips :meth:`analyze_text`).
            timeout_s: this job's deadline in seconds from now; default ``settings.job_timeout_s``.

        Returns:
            The admitted :class:`Job` (running or queued; its events tell which).

        Raises:
            UnsupportedOptionError: an option the engine cannot honour.
            InvalidInputError: bad text, empty text, missing prompt text where required.
            ClientLimitError: this client already has ``per_client_jobs`` jobs.
            BusyError: the queue is full (jobs or audio seconds), or the service is not
                ready / shutting down; ``retry_after_s`` and ``details`` carry estimates.
        """
        self.engine.validate_options(options)
        if self.capabilities.needs_prompt_text and options.mode == Mode.ZERO_SHOT and not prompt_text.strip():
            raise InvalidInputError(
                "prompt_text.required",
                f"当前引擎（{self.engine_name}）的 3s极速复刻 需要提示音频的文字内容",
                f"The {self.engine_name} engine needs the prompt transcript (prompt text) for zero-shot cloning",
            )
        self._core.precheck(client_id)  # refuse before the (costly) text analysis
        if segments is None:
            segments = self.analyze_text(text, options)
        if not segments:
            raise InvalidInputError("text.empty", "请输入要合成的文本", "Please enter the text to synthesise")
        job = Job(
            uuid.uuid4().hex,
            prompt=prompt,
            prompt_text=prompt_text,
            text_chars=len(text),
            segments=segments,
            options=options,
            client_id=client_id,
            sample_rate=self._core.sample_rate,
            engine_name=self.engine_name,
            warnings=[m.to_dict() for m in prompt.warnings],
        )
        self._core.admit(job, timeout_s)
        return job

    def precheck(self, client_id: Optional[str] = None) -> None:
        """Refuse at once if a job of ``client_id`` could not be admitted now, whatever its size
        (lets the UI answer busy before decoding a prompt). Never blocks; ``submit`` checks again.

        Raises:
            ClientLimitError: the client already has ``per_client_jobs`` jobs.
            BusyError: queue full, not ready, or shutting down.
        """
        self._core.precheck(client_id)

    def get_job(self, job_id: str) -> Optional[Job]:
        """A queued or running job by id (None once finished or unknown)."""
        with self._core.cond:
            a = self._core.admission
            return a.active.get(job_id) or a.waiting.get(job_id)

    def cancel(self, job_id: str, reason: str = "cancelled") -> bool:
        """Cancel a queued or running job by id. Returns False if it is not active."""
        job = self.get_job(job_id)
        return job is not None and self._core.cancel_job(job, reason)

    # --- observability --------------------------------------------------------------------
    def stats(self) -> dict:
        """A JSON-friendly snapshot for the UI status panel and ``/stats``.

        Keys: engine, ready, healthy, queue_depth, queued_audio_s, active_jobs, concurrency,
        max_active_jobs, max_queue, max_batch, first_chunk_lane, sample_rate, median_first_chunk_ms (recent window,
        None before the first job), admitted, refused, completed, failed, cancelled, timeout,
        voices_cached, prompts_registered, prewarms_pending.
        """
        core = self._core
        with core.cond:
            counts = dict(core.counts)
            queue_depth = core.admission.n_waiting
            queued_audio_s = core.admission.queued_audio_s
            active = core.admission.n_active
            prewarms_pending = len(core.prewarm_keys)
        median_ms = core.metrics.first_chunk_window.median()
        return {
            "engine": self.engine_name,
            "ready": self.ready,
            "healthy": self.healthy,
            "queue_depth": queue_depth,
            "queued_audio_s": round(queued_audio_s, 1),
            "active_jobs": active,
            "concurrency": core.concurrency,
            "max_active_jobs": core.max_active_jobs,
            "max_queue": self.settings.max_queue,
            "max_batch": core.max_batch,
            "first_chunk_lane": core.first_lane,
            "sample_rate": core.sample_rate,
            "median_first_chunk_ms": round(median_ms, 1) if median_ms is not None else None,
            "voices_cached": len(core.voices),
            "prompts_registered": len(core.prompts),
            "prewarms_pending": prewarms_pending,
            **counts,
        }
