"""One synthesis request as it moves through the pipeline, and the events it streams.

A :class:`Job` is created by :meth:`cosyweb.pipeline.service.TTSService.submit` and
owned by the pipeline core; callers only read it, iterate its events or cancel it.
Events are kept in an append-only list so that any number of readers (a blocking
:meth:`Job.events` iterator, an asyncio :meth:`Job.aevents` iterator, or
:meth:`Job.result`) each see every event from the start, in order. Async readers
wait on an ``asyncio.Future`` woken with ``loop.call_soon_threadsafe``, so no thread
is parked per waiting client.

Lock order: the core's lock may be held while a job's lock is taken, never the
other way round.
"""

from __future__ import annotations

import asyncio
import threading
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, AsyncIterator, Iterator, Optional, Protocol

import numpy as np

from cosyweb.errors import CosywebError
from cosyweb.options import SynthesisOptions, SynthesisStatus

if TYPE_CHECKING:  # same-layer / lower-layer types only
    from cosyweb.audio.types import PromptAudio
    from cosyweb.engines.base import Voice
    from cosyweb.text.types import TextSegment

#: Job states. ``queued``: admitted, waiting for an active slot; ``running``: holds a slot.
QUEUED, RUNNING, DONE, FAILED, CANCELLED, TIMEOUT = "queued", "running", "done", "failed", "cancelled", "timeout"
FINISHED_STATES = frozenset({DONE, FAILED, CANCELLED, TIMEOUT})
TERMINAL_KINDS = frozenset({"done", "error"})


@dataclass(frozen=True)
class JobEvent:
    """One event of a job's stream.

    Attributes:
        kind: ``"queued"`` (waiting; ``position`` set), ``"started"`` (got a slot),
            ``"chunk"`` (``audio`` and ``segment_index`` set), ``"done"`` (``status`` set),
            ``"error"`` (``error`` set). ``done`` and ``error`` are terminal: nothing follows.
        job_id: the job.
        position: 1-based place in the wait queue (``queued`` events).
        audio: float32 mono samples, shape ``(n_samples,)``, range [-1, 1], at the job's
            ``sample_rate`` Hz (``chunk`` events).
        segment_index: 0-based text segment the chunk belongs to (``chunk`` events).
        status: the finished job's measurements (``done`` events).
        error: why the job ended (``error`` events): JobCancelledError, JobTimeoutError,
            EngineError, InvalidInputError, ...
    """

    kind: str
    job_id: str
    position: Optional[int] = None
    audio: Optional[np.ndarray] = None
    segment_index: Optional[int] = None
    status: Optional[SynthesisStatus] = None
    error: Optional[CosywebError] = None


class JobController(Protocol):
    """What a job needs from the pipeline core (implemented by ``core.PipelineCore``)."""

    def cancel_job(self, job: "Job", reason: str) -> bool: ...

    def position_of(self, job: "Job") -> Optional[int]: ...


def _wake(fut: "asyncio.Future[None]") -> None:
    if not fut.done():
        fut.set_result(None)


class Job:
    """A submitted synthesis request.

    Public attributes (read-only for callers):
        id: unique job id (hex).
        client_id: the browser session / API key it counts against, or None.
        created_at: submission time, seconds since the epoch.
        status: ``queued``, ``running``, ``done``, ``failed``, ``cancelled`` or ``timeout``.
        sample_rate: Hz of every chunk.
        segments: the analysed text segments, in order.
        estimated_audio_s: sum of the segments' estimated spoken durations, seconds.
        text_chars: length of the submitted text in characters.
        error: the job's CosywebError once it failed / was cancelled / timed out, else None.
        status_info: :class:`SynthesisStatus`, filled when the job ends (also for failures).
    """

    def __init__(
        self,
        job_id: str,
        *,
        prompt: "PromptAudio",
        prompt_text: str,
        text_chars: int,
        segments: "list[TextSegment]",
        options: SynthesisOptions,
        client_id: Optional[str],
        sample_rate: int,
        engine_name: str,
        warnings: Optional[list[dict]] = None,
    ) -> None:
        self.id = job_id
        self.client_id = client_id
        self.created_at = time.time()
        self.t_created = time.monotonic()
        self.status = QUEUED
        self.sample_rate = int(sample_rate)
        self.engine_name = engine_name
        self.prompt = prompt
        self.prompt_text = prompt_text
        self.options = options
        self.segments = list(segments)
        self.text_chars = int(text_chars)
        self.segment_audio_s = [float(s.estimated_duration_s()) for s in self.segments]
        self.estimated_audio_s = float(sum(self.segment_audio_s))
        self.warnings: list[dict] = list(warnings or [])
        self.error: Optional[CosywebError] = None
        self.status_info: Optional[SynthesisStatus] = None
        # Pipeline state, written by the core under its lock.
        self.voice: Optional["Voice"] = None
        self.next_segment = 0  # index of the next segment to schedule
        self.in_flight = False  # a segment of this job is on a worker
        self.start_seq = -1  # order in which jobs got a slot
        self.t_started: Optional[float] = None  # monotonic
        self.t_first_chunk: Optional[float] = None
        #: Seconds the engine call that made the first chunk took (voice preparation excluded);
        #: the serving overhead is first-chunk latency minus this.
        self.first_engine_s: Optional[float] = None
        self.t_finished: Optional[float] = None
        self.n_samples_out = 0
        self.remaining_audio_s = self.estimated_audio_s
        self.timeout_s: Optional[float] = None  # deadline, seconds after submission
        self._controller: Optional[JobController] = None
        # Event stream.
        self._cond = threading.Condition()
        self._events: list[JobEvent] = []
        self._terminal: Optional[JobEvent] = None
        self._async_waiters: list[tuple[asyncio.AbstractEventLoop, "asyncio.Future[None]"]] = []

    # --- state ------------------------------------------------------------------
    @property
    def finished(self) -> bool:
        """True once the job is done, failed, cancelled or timed out."""
        return self.status in FINISHED_STATES

    @property
    def n_segments(self) -> int:
        """Number of text segments."""
        return len(self.segments)

    @property
    def audio_s(self) -> float:
        """Seconds of audio streamed so far."""
        return self.n_samples_out / float(self.sample_rate or 1)

    def position(self) -> Optional[int]:
        """1-based place in the wait queue while queued; 0 while running; None once finished."""
        if self.finished:
            return None
        if self._controller is None:
            return 0 if self.status == RUNNING else None
        return self._controller.position_of(self)

    def cancel(self, reason: str = "cancelled") -> None:
        """Cancel the job at any stage. A queued job leaves the queue; a running job frees its
        slot at once and its worker stops at the next chunk boundary. No-op once finished.

        Args:
            reason: why, for logs and ``JobCancelledError.details["reason"]`` (``"client_gone"``, ``"stop"``...).
        """
        if self._controller is not None and not self.finished:
            self._controller.cancel_job(self, reason)

    # --- event stream (written by the pipeline) ------------------------------------
    def publish(self, event: JobEvent) -> bool:
        """Append an event and wake every reader. Returns False (and drops the event) after
        a terminal event. For chunk events, counts samples and stamps the first chunk time.
        """
        with self._cond:
            if self._terminal is not None:
                return False
            if event.kind == "chunk":
                if event.audio is None:
                    return False
                if self.t_first_chunk is None:
                    self.t_first_chunk = time.monotonic()
                self.n_samples_out += int(event.audio.shape[0])
            self._events.append(event)
            if event.kind in TERMINAL_KINDS:
                self._terminal = event
            self._cond.notify_all()
            waiters, self._async_waiters = self._async_waiters, []
        for loop, fut in waiters:
            try:
                loop.call_soon_threadsafe(_wake, fut)
            except RuntimeError:  # the reader's loop is closed; nothing to wake
                pass
        return True

    # --- readers ------------------------------------------------------------------
    def events(self, timeout: Optional[float] = None) -> Iterator[JobEvent]:
        """Blocking iterator over all events from the first, ending after ``done`` or ``error``.

        Thread-safe; several iterators may run at once and each sees every event.

        Args:
            timeout: seconds to wait for each next event; None waits forever.

        Raises:
            TimeoutError: no next event arrived within ``timeout`` seconds.
        """
        i = 0
        while True:
            with self._cond:
                if i >= len(self._events):
                    if not self._cond.wait_for(lambda: i < len(self._events), timeout):
                        raise TimeoutError(f"job {self.id}: no event within {timeout} s")
                ev = self._events[i]
            i += 1
            yield ev
            if ev.kind in TERMINAL_KINDS:
                return

    async def aevents(self) -> AsyncIterator[JobEvent]:
        """Async iterator over all events from the first, ending after ``done`` or ``error``.

        Waiting costs a Future on the caller's loop, not a thread. Cancel the consuming
        task (e.g. on client disconnect) and call :meth:`cancel` to free the job's slot.
        """
        loop = asyncio.get_running_loop()
        i = 0
        while True:
            fut: Optional[asyncio.Future[None]] = None
            with self._cond:
                if i < len(self._events):
                    ev = self._events[i]
                else:
                    fut = loop.create_future()
                    self._async_waiters.append((loop, fut))
            if fut is not None:
                try:
                    await fut
                finally:
                    if not fut.done():
                        with self._cond:
                            self._async_waiters = [w for w in self._async_waiters if w[1] is not fut]
                continue
            i += 1
            yield ev
            if ev.kind in TERMINAL_KINDS:
                return

    def wait(self, timeout: Optional[float] = None) -> bool:
        """Block until the job has finished. Returns False if ``timeout`` seconds passed first."""
        with self._cond:
            return self._cond.wait_for(lambda: self._terminal is not None, timeout)

    def audio(self) -> np.ndarray:
        """All chunks streamed so far, concatenated: float32, shape ``(n_samples,)``, at ``sample_rate`` Hz."""
        with self._cond:
            parts = [e.audio for e in self._events if e.kind == "chunk" and e.audio is not None]
        return np.concatenate(parts).astype(np.float32, copy=False) if parts else np.zeros(0, np.float32)

    def result(self, timeout: Optional[float] = None) -> tuple[np.ndarray, SynthesisStatus]:
        """Block until the job ends; return the full audio and its status.

        Returns:
            ``(audio, status)``: float32 mono ``(n_samples,)`` at ``sample_rate`` Hz, and the
            filled :class:`SynthesisStatus`.

        Raises:
            TimeoutError: the job did not end within ``timeout`` seconds (the job keeps running).
            CosywebError: the job's own error (JobCancelledError, JobTimeoutError, EngineError...).
        """
        if not self.wait(timeout):
            raise TimeoutError(f"job {self.id} still {self.status} after {timeout} s")
        if self.error is not None:
            raise self.error
        assert self.status_info is not None
        return self.audio(), self.status_info

    def __repr__(self) -> str:
        return f"Job(id={self.id!r}, status={self.status!r}, n_segments={self.n_segments})"
