"""The pipeline core: one lock over admission, scheduling and every job state change.

It connects :class:`~cosyweb.pipeline.admission.Admission` (slots and the bounded wait
queue), :class:`~cosyweb.pipeline.scheduler.SegmentScheduler` (segment priority and
batching), :class:`~cosyweb.pipeline.monitor.Monitor` (deadlines, watchdog),
:class:`~cosyweb.pipeline.voices.VoiceCache` and
:class:`~cosyweb.pipeline.metrics.PipelineMetrics`. Workers and the service call the
public methods here; none of them calls the engine or blocks on it while holding the lock.

Job life: admit -> (queued ->) running: segment 0 queued with first-chunk priority ->
worker -> chunks -> next segment queued ... -> done. Any stage may end in failed,
cancelled or timeout through :meth:`PipelineCore.finish`, which frees the slot, drops
the job's queued segment, starts the next waiting job and publishes the terminal event.
"""

from __future__ import annotations

import itertools
import logging
import threading
import time
from typing import Optional

from cosyweb.config import Settings
from cosyweb.engines.base import Engine
from cosyweb.errors import BusyError, CosywebError, JobCancelledError, JobTimeoutError
from cosyweb.options import SynthesisStatus

from .admission import Admission
from .job import CANCELLED, DONE, FAILED, RUNNING, TIMEOUT, Job, JobEvent
from .metrics import PipelineMetrics
from .monitor import Monitor
from .prompts import PromptStore
from .scheduler import Batch, SegmentScheduler, VoiceWork, WorkItem
from .voices import VoiceCache

log = logging.getLogger("cosyweb.pipeline")

#: Engine seconds per audio second assumed before the first measurement (for wait estimates).
_DEFAULT_ENGINE_RTF = 1.0
#: Default jobs served at once per engine slot (worker x batch place); see PipelineCore.
ACTIVE_JOBS_PER_SLOT = 2
_RTF_EWMA_ALPHA = 0.2


def _status_for(error: Optional[CosywebError]) -> str:
    if error is None:
        return DONE
    if isinstance(error, JobTimeoutError):
        return TIMEOUT
    if isinstance(error, JobCancelledError):
        return CANCELLED
    return FAILED


class PipelineCore:
    """Shared state of one pipeline. Thread-safe.

    Args:
        engine: the engine (its ``capabilities`` decide batching and default concurrency).
        settings: ``concurrency``, ``max_active_jobs``, ``max_queue``, ``max_queue_audio_s``,
            ``per_client_jobs``, ``job_timeout_s``, ``max_batch``, ``batch_wait_ms``,
            ``voice_cache_size``, ``watchdog_s``, ``priority_max_overtakes`` are read.

    Derived limits:
        concurrency: ``settings.concurrency`` or the engine's ``default_concurrency``.
        max_batch: ``min(engine max_batch, settings.max_batch)``.
        max_active_jobs: ``settings.max_active_jobs`` or ``ACTIVE_JOBS_PER_SLOT * concurrency *
            max_batch``: a job has one segment in flight, so fewer than ``concurrency * max_batch``
            active jobs could never fill the workers and batches, and with only that many a new
            job would wait in the queue for a whole job to end, where first-chunk priority cannot
            help; twice as many lets a new job's first segment go ahead of running jobs' later
            segments while the busy refusal still comes early (measured: ``benchmarks/load.py``).
        first_lane: ``settings.first_chunk_lane`` or, by default, 1 worker kept for first
            segments when there are at least 2 workers and priority is on (else 0).
    """

    def __init__(self, engine: Engine, settings: Settings) -> None:
        caps = engine.capabilities
        self.engine = engine
        self.engine_name = caps.name
        self.sample_rate = int(caps.sample_rate)
        self.concurrency = int(settings.concurrency or caps.default_concurrency or 1)
        self.max_batch = max(1, min(int(caps.max_batch), int(settings.max_batch or caps.max_batch)))
        self.max_active_jobs = int(settings.max_active_jobs or ACTIVE_JOBS_PER_SLOT * self.concurrency * self.max_batch)
        self.batch_wait_s = float(settings.batch_wait_ms) / 1000.0
        self.job_timeout_s = float(settings.job_timeout_s)
        self.cond = threading.Condition(threading.RLock())
        self.admission = Admission(
            self.max_active_jobs,
            settings.max_queue,
            settings.max_queue_audio_s,
            settings.per_client_jobs,
            self.estimate_wait_s,
        )
        max_overtakes = getattr(settings, "priority_max_overtakes", 4)
        lane = getattr(settings, "first_chunk_lane", None)
        self.first_lane = int(lane if lane is not None else (1 if self.concurrency >= 2 and max_overtakes > 0 else 0))
        self.scheduler = SegmentScheduler(self.cond, max_overtakes, self.concurrency, self.first_lane)
        self.first_lane = self.scheduler.first_lane  # clamped to concurrency - 1
        self.voices = VoiceCache(settings.voice_cache_size)
        self.prompts = PromptStore(getattr(settings, "prompt_store_size", 64))
        #: Voice keys with a prewarm queued or running, and how many may be at once.
        self.prewarm_keys: set[str] = set()
        self.max_prewarms = max(1, self.max_active_jobs + int(settings.max_queue))
        self.monitor = Monitor(settings.watchdog_s, self._on_deadline)
        self.ready = False
        self.metrics = PipelineMetrics(
            queue_depth=lambda: self.admission.n_waiting,
            queued_audio_s=lambda: self.admission.queued_audio_s,
            active_jobs=lambda: self.admission.n_active,
            healthy=lambda: float(self.monitor.healthy),
            ready=lambda: float(self.ready),
        )
        self.accepting = False
        self.stopping = False
        self.counts = {"admitted": 0, "refused": 0, "completed": 0, "failed": 0, "cancelled": 0, "timeout": 0}
        self._start_seq = itertools.count()
        self._engine_rtf: Optional[float] = None
        self._last_position: dict[str, int] = {}

    # --- estimates --------------------------------------------------------------------
    @property
    def engine_rtf(self) -> float:
        """Recent engine seconds per audio second per worker (EWMA), or 1.0 before any call."""
        return self._engine_rtf if self._engine_rtf is not None else _DEFAULT_ENGINE_RTF

    def record_engine_time(self, engine_s: float, audio_s: float) -> None:
        """Feed one engine call (``engine_s`` seconds producing ``audio_s`` seconds) to the estimate."""
        if audio_s <= 0:
            return
        rtf = engine_s / audio_s
        with self.cond:
            prev = self._engine_rtf
            self._engine_rtf = rtf if prev is None else prev + _RTF_EWMA_ALPHA * (rtf - prev)

    def estimate_wait_s(self, audio_ahead_s: float) -> float:
        """Seconds until the running work plus ``audio_ahead_s`` queued audio seconds is served."""
        with self.cond:
            running_s = sum(j.remaining_audio_s for j in self.admission.active.values())
        return (running_s + audio_ahead_s) * self.engine_rtf / max(1, self.concurrency)

    # --- admission ----------------------------------------------------------------------
    def count_refusal(self, err: BusyError) -> None:
        """Count a busy refusal (metrics and stats)."""
        reason = str(err.details.get("reason") or err.code)
        self.metrics.refused_busy.labels(reason=reason).inc()
        with self.cond:
            self.counts["refused"] += 1

    def _check_accepting(self) -> None:
        if not self.accepting:
            reason = "shutting_down" if self.stopping else "not_ready"
            raise BusyError(retry_after_s=5.0, queue_depth=self.admission.n_waiting, reason=reason)

    def precheck(self, client_id: Optional[str]) -> None:
        """Refuse early (before text analysis) if the job could not be admitted whatever its size.

        Raises:
            BusyError, ClientLimitError: refused; counted.
        """
        try:
            with self.cond:
                self._check_accepting()
                self.admission.check(client_id, 0.0)
        except BusyError as err:
            self.count_refusal(err)
            raise

    def admit(self, job: Job, timeout_s: Optional[float] = None) -> None:
        """Admit ``job``: start it or queue it; arm its deadline (``timeout_s`` seconds after
        submission, default ``job_timeout_s``). Never blocks on the engine.

        Raises:
            BusyError, ClientLimitError: refused; nothing changed; counted.
        """
        try:
            with self.cond:
                self._check_accepting()
                started = self.admission.admit(job)
                job._controller = self
                job.timeout_s = float(timeout_s) if timeout_s is not None else self.job_timeout_s
                self.monitor.add_deadline(job, job.t_created + job.timeout_s)
                self.counts["admitted"] += 1
                self.metrics.admitted.inc()
                if started:
                    self._start_locked(job)
                else:
                    pos = self.admission.position(job) or 0
                    self._last_position[job.id] = pos
                    job.publish(JobEvent("queued", job.id, position=pos))
        except BusyError as err:
            self.count_refusal(err)
            raise

    def _start_locked(self, job: Job) -> None:
        job.status = RUNNING
        job.t_started = time.monotonic()
        job.start_seq = next(self._start_seq)
        self._last_position.pop(job.id, None)
        self.metrics.queue_wait_s.observe(job.t_started - job.t_created)
        job.publish(JobEvent("started", job.id, position=0))
        job.next_segment = 0
        self.scheduler.put(job, 0)

    def position_of(self, job: Job) -> Optional[int]:
        """1-based queue position, 0 while running, None when finished."""
        with self.cond:
            return None if job.finished else self.admission.position(job)

    def _republish_positions_locked(self) -> None:
        for pos, job in enumerate(self.admission.waiting.values(), start=1):
            if self._last_position.get(job.id) != pos:
                self._last_position[job.id] = pos
                job.publish(JobEvent("queued", job.id, position=pos))

    # --- work ---------------------------------------------------------------------------
    def take(self) -> Optional[Batch]:
        """Block for the next batch of work (1..max_batch items of distinct running jobs, or
        one prewarm). Hand it back with :meth:`release` after running it.

        Returns None when the pipeline stops.
        """
        while True:
            items = self.scheduler.take(self.max_batch, self.batch_wait_s)
            if items is None:
                return None
            with self.cond:
                items[:] = [it for it in items if it.job is None or not it.job.finished]
                for it in items:
                    if it.job is not None:
                        it.job.in_flight = True
            if items:
                return items
            self.scheduler.release(items)

    def release(self, batch: Batch) -> None:
        """A worker has run ``batch`` (frees its later-segment place in the first-chunk lane)."""
        self.scheduler.release(batch)

    # --- voice prewarm ---------------------------------------------------------------------
    def request_prewarm(self, prompt, prompt_text: str, key: str) -> bool:
        """Queue the background preparation of voice ``key`` on the workers (class 1, see
        :mod:`~cosyweb.pipeline.scheduler`). Skipped (returns False) while not accepting jobs,
        when the voice is cached or already being prepared, or when ``max_prewarms`` are
        pending, so a flood of registrations cannot pile up engine work. Never blocks."""
        with self.cond:
            if not self.accepting:
                outcome = "skipped"
            elif key in self.prewarm_keys or key in self.voices or self.voices.is_pending(key):
                outcome = "cached"
            elif len(self.prewarm_keys) >= self.max_prewarms:
                outcome = "skipped"
            else:
                self.prewarm_keys.add(key)
                self.scheduler.put_voice(prompt, prompt_text, key)
                return True
        self.metrics.prewarms.labels(outcome=outcome).inc()
        return False

    def prewarm_pending(self, key: str) -> bool:
        """True while a prewarm of ``key`` is queued or running, or a job is preparing it."""
        with self.cond:
            return key in self.prewarm_keys or self.voices.is_pending(key)

    def prewarm_done(self, item: VoiceWork, outcome: str, error: Optional[CosywebError] = None) -> None:
        """A worker finished prewarm ``item`` (``outcome``: prepared, cached or failed)."""
        with self.cond:
            self.prewarm_keys.discard(item.key)
        self.metrics.prewarms.labels(outcome=outcome).inc()
        if error is not None:
            for entry in self.prompts.entries_with_key(item.key):
                entry.voice_error = error.to_dict()

    def emit_chunk(self, job: Job, segment_index: int, audio) -> bool:
        """Stream one chunk to ``job``'s readers. Returns False if the job has ended (stop work)."""
        if job.finished:
            return False
        return job.publish(JobEvent("chunk", job.id, audio=audio, segment_index=segment_index))

    def segment_done(self, item: WorkItem) -> None:
        """A worker finished ``item`` (or stopped it because the job ended): queue the job's
        next segment, or complete the job after its last one."""
        job = item.job
        with self.cond:
            job.in_flight = False
            if job.finished:
                return
            job.remaining_audio_s = max(0.0, job.remaining_audio_s - job.segment_audio_s[item.segment_index])
            job.next_segment = item.segment_index + 1
            if job.next_segment < job.n_segments:
                self.scheduler.put(job, job.next_segment)
                return
            self._finish_locked(job, None)
        self._announce_end(job)

    # --- endings ------------------------------------------------------------------------
    def finish(self, job: Job, error: Optional[CosywebError]) -> bool:
        """End ``job`` with ``error`` (None = done). Frees its slot at once, drops its queued
        segment, starts the next waiting job. Returns False if it had already ended."""
        with self.cond:
            ended = self._finish_locked(job, error)
        if ended:
            self._announce_end(job)
        return ended

    def cancel_job(self, job: Job, reason: str = "cancelled") -> bool:
        """Cancel ``job`` (client gone, stop pressed, shutdown)."""
        return self.finish(job, JobCancelledError(reason))

    def _on_deadline(self, job: Job) -> None:
        self.finish(job, JobTimeoutError(job.timeout_s or self.job_timeout_s))

    def _finish_locked(self, job: Job, error: Optional[CosywebError]) -> bool:
        if job.finished:
            return False
        now = time.monotonic()
        was_waiting = job.id in self.admission.waiting
        job.status = _status_for(error)
        job.error = error
        job.t_finished = now
        self.admission.remove(job)
        self.scheduler.remove_job(job)
        self._last_position.pop(job.id, None)
        for started in self.admission.promote():
            self._start_locked(started)
        if was_waiting or self.admission.n_waiting:
            self._republish_positions_locked()
        job.status_info = self._status_info(job, now)
        self._count_outcome(job)
        self.cond.notify_all()
        self.monitor.remove_deadline(job)
        return True

    def _announce_end(self, job: Job) -> None:
        """Log the job's line, then publish its terminal event (outside the lock, in that order,
        so a reader woken by the event finds the log written)."""
        self._log_job(job)
        if job.error is None:
            job.publish(JobEvent("done", job.id, status=job.status_info))
        else:
            job.publish(JobEvent("error", job.id, error=job.error))

    def _status_info(self, job: Job, now: float) -> SynthesisStatus:
        t_first = job.t_first_chunk
        duration_s = job.audio_s
        serve_s = now - job.t_started if job.t_started is not None else 0.0
        return SynthesisStatus(
            job_id=job.id,
            engine=self.engine_name,
            duration_s=duration_s,
            sample_rate=job.sample_rate,
            rtf=serve_s / duration_s if duration_s > 0 else 0.0,
            first_chunk_ms=(t_first - job.t_created) * 1000.0 if t_first is not None else 0.0,
            queue_wait_ms=((job.t_started if job.t_started is not None else now) - job.t_created) * 1000.0,
            total_ms=(now - job.t_created) * 1000.0,
            n_segments=job.n_segments,
            warnings=list(job.warnings),
        )

    def _count_outcome(self, job: Job) -> None:
        m, info = self.metrics, job.status_info
        key = {DONE: "completed", FAILED: "failed", CANCELLED: "cancelled", TIMEOUT: "timeout"}[job.status]
        self.counts[key] += 1
        getattr(m, key).inc()
        if job.t_first_chunk is not None:
            m.first_chunk_s.observe(info.first_chunk_ms / 1000.0)
            m.first_chunk_window.add(info.first_chunk_ms)
        if job.status == DONE:
            m.total_s.observe(info.total_ms / 1000.0)
            if info.duration_s > 0:
                m.rtf.observe(info.rtf)

    def _log_job(self, job: Job) -> None:
        """One structured line per job; no prompt audio, no text (privacy)."""
        info = job.status_info
        if info is None:
            return
        record = {
            "job_id": job.id,
            "engine": self.engine_name,
            "client": job.client_id is not None,
            "text_chars": job.text_chars,
            "n_segments": job.n_segments,
            "audio_s": round(info.duration_s, 3),
            "wait_ms": round(info.queue_wait_ms, 1),
            "first_chunk_ms": round(info.first_chunk_ms, 1) if job.t_first_chunk is not None else None,
            "total_ms": round(info.total_ms, 1),
            "rtf": round(info.rtf, 4),
            "outcome": job.status,
            "error": job.error.code if job.error is not None else None,
        }
        log.info("job " + " ".join(f"{k}={v}" for k, v in record.items()), extra={"cosyweb_job": record})

    # --- shutdown -----------------------------------------------------------------------
    def cancel_waiting(self, reason: str) -> int:
        """Cancel every queued (not yet running) job. Returns how many."""
        with self.cond:
            waiting = self.admission.drain_waiting()
        return sum(self.cancel_job(j, reason) for j in waiting)

    def cancel_all(self, reason: str) -> int:
        """Cancel every queued and running job. Returns how many."""
        with self.cond:
            jobs = self.admission.drain_waiting() + list(self.admission.active.values())
        return sum(self.cancel_job(j, reason) for j in jobs)

    def wait_idle(self, timeout_s: Optional[float]) -> bool:
        """Block until no job is queued or running. Returns False after ``timeout_s`` seconds."""
        with self.cond:
            return self.cond.wait_for(lambda: self.admission.n_active == 0 and self.admission.n_waiting == 0, timeout_s)
