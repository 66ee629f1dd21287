"""Worker threads: take segment work from the scheduler, call the engine, route audio back.

One worker = one engine call at a time (``concurrency`` workers in all). Two paths, chosen
once from the engine's declared ``max_batch`` (as LitServe picks its loop from the API's
capabilities):

* plain: :meth:`Engine.synthesize` for one segment, each yielded chunk streamed at once;
  the job's state is checked between chunks, so a cancelled or timed-out job stops there;
* batched: :meth:`Engine.synthesize_batch` on up to ``max_batch`` segments of different
  jobs; if the call raises (an exception or out of memory), the members are retried one
  by one so one bad request cannot fail its batch mates.

Voice preparation (:meth:`Engine.prepare_voice`, cached in the LRU) is the first work of a
job on its worker, so it counts in that job's first-chunk latency, unless a prewarm
(:class:`~cosyweb.pipeline.scheduler.VoiceWork`, queued when a prompt is registered) has
already prepared it; a job that arrives while its prewarm runs waits for that one result.

Errors end only the job concerned. A :class:`CosywebError` raised by the engine reaches the
user as is; anything else is logged with its traceback and reported as a generic
:class:`EngineError` (clients never see internals; LitServe does the same). Out-of-memory
errors (``torch.cuda.OutOfMemoryError``, ``MemoryError``, "out of memory" messages) become
:class:`GPUMemoryError`. The worker itself always carries on.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any, Optional

import numpy as np

from cosyweb.engines.base import SegmentWork, Voice
from cosyweb.errors import CosywebError, EngineError, GPUMemoryError, InvalidInputError

from .core import PipelineCore
from .job import Job
from .scheduler import VoiceWork, WorkItem
from .voices import voice_key

log = logging.getLogger("cosyweb.pipeline")

_END = object()


def is_out_of_memory(exc: BaseException) -> bool:
    """True for ``MemoryError``, ``torch.cuda.OutOfMemoryError`` (matched by class name, so torch
    is not imported) and errors whose message says "out of memory"."""
    if isinstance(exc, (MemoryError, GPUMemoryError)):
        return True
    names = {c.__name__ for c in type(exc).__mro__}
    return "OutOfMemoryError" in names or "out of memory" in str(exc).lower()


def to_cosyweb_error(exc: BaseException, job_id: str = "") -> CosywebError:
    """Map an exception from an engine call to the error the user sees (logs unexpected ones)."""
    if isinstance(exc, CosywebError):
        return exc
    if is_out_of_memory(exc):
        log.error("out of memory in job %s: %s", job_id, exc)
        return GPUMemoryError()
    log.error("engine error in job %s", job_id, exc_info=(type(exc), exc, exc.__traceback__))
    return EngineError()


def as_chunk(audio: Any) -> np.ndarray:
    """An engine chunk as float32 mono, shape ``(n_samples,)``."""
    return np.asarray(audio, dtype=np.float32).reshape(-1)


class Worker(threading.Thread):
    """One worker thread of a pipeline.

    Args:
        core: the pipeline core (scheduler, voices, monitor, metrics).
        index: worker number, for the thread name and logs.
    """

    def __init__(self, core: PipelineCore, index: int) -> None:
        super().__init__(name=f"cosyweb-worker-{index}", daemon=True)
        self.core = core
        self.engine = core.engine
        self.batched = core.max_batch > 1

    def run(self) -> None:
        while True:
            items = self.core.take()
            if items is None:
                return
            try:
                if isinstance(items[0], VoiceWork):
                    self._run_prewarm(items[0])
                elif self.batched:
                    self._run_batch(items)
                else:
                    for item in items:
                        self._run_one(item)
            except BaseException as exc:  # a bug of ours: fail these jobs, keep the worker
                log.exception("worker %s: unexpected error", self.name)
                for item in items:
                    if item.job is not None:
                        self._fail(item, exc, count=False)
            finally:
                self.core.release(items)

    # --- helpers ----------------------------------------------------------------------
    def _fail(self, item: WorkItem, exc: BaseException, count: bool = True) -> None:
        err = to_cosyweb_error(exc, item.job.id)
        if count:
            kind = "oom" if isinstance(err, GPUMemoryError) else "input" if isinstance(err, InvalidInputError) else "engine"
            self.core.metrics.engine_errors.labels(kind=kind).inc()
        self.core.finish(item.job, err)
        self.core.segment_done(item)

    def _voice(self, job: Job) -> Voice:
        if job.voice is None:
            key = voice_key(job.prompt, job.prompt_text)

            def prepare() -> Voice:
                with self.core.monitor.engine_call(f"prepare_voice job={job.id}"):
                    return self.engine.prepare_voice(job.prompt, job.prompt_text)

            job.voice, _ = self.core.voices.get_or_create(key, prepare)
        return job.voice

    def _run_prewarm(self, item: VoiceWork) -> None:
        """Prepare one voice into the cache (a prewarm); failures are recorded, never raised."""
        outcome, error = "failed", None
        try:

            def prepare() -> Voice:
                with self.core.monitor.engine_call(f"prepare_voice prewarm key={item.key[:12]}"):
                    return self.engine.prepare_voice(item.prompt, item.prompt_text)

            _, hit = self.core.voices.get_or_create(item.key, prepare)
            outcome = "cached" if hit else "prepared"
        except BaseException as exc:  # noqa: BLE001 - the worker must carry on
            error = to_cosyweb_error(exc, f"prewarm:{item.key[:12]}")
            if not isinstance(error, InvalidInputError):
                self.core.metrics.engine_errors.labels(kind="oom" if isinstance(error, GPUMemoryError) else "engine").inc()
        finally:
            self.core.prewarm_done(item, outcome, error)

    # --- plain path -----------------------------------------------------------------------
    def _run_one(self, item: WorkItem) -> None:
        job, i = item.job, item.segment_index
        if job.finished:
            self.core.segment_done(item)
            return
        try:
            voice = self._voice(job)
            t0 = time.monotonic()
            n_samples = 0
            self.core.metrics.batch_size.observe(1)
            with self.core.monitor.engine_call(f"synthesize job={job.id} segment={i}"):
                chunks = iter(self.engine.synthesize(voice, job.segments[i], job.options))
            try:
                while not job.finished:
                    with self.core.monitor.engine_call(f"synthesize job={job.id} segment={i}"):
                        chunk = next(chunks, _END)
                    if chunk is _END:
                        break
                    audio = as_chunk(chunk)
                    if audio.shape[0] == 0:
                        continue  # nothing to stream (players choke on empty chunks)
                    if n_samples == 0 and i == 0:
                        job.first_engine_s = time.monotonic() - t0
                    n_samples += audio.shape[0]
                    if not self.core.emit_chunk(job, i, audio):
                        break
            finally:
                close = getattr(chunks, "close", None)
                if close is not None:
                    close()
            self.core.record_engine_time(time.monotonic() - t0, n_samples / float(self.core.sample_rate))
        except Exception as exc:
            self._fail(item, exc)
            return
        self.core.segment_done(item)

    # --- batched path ---------------------------------------------------------------------
    def _run_batch(self, items: list[WorkItem]) -> None:
        ready: list[WorkItem] = []
        for item in items:
            if item.job.finished:
                self.core.segment_done(item)
                continue
            try:
                self._voice(item.job)
            except Exception as exc:
                self._fail(item, exc)
                continue
            ready.append(item)
        if not ready:
            return
        try:
            outs = self._call_batch(ready)
        except Exception as exc:
            if len(ready) == 1:
                self._fail(ready[0], exc)
                return
            kind = "oom" if is_out_of_memory(exc) else "engine"
            self.core.metrics.engine_errors.labels(kind=kind).inc()
            self.core.metrics.batch_retries.inc()
            log.warning("batch of %d failed (%s: %s); retrying members one by one", len(ready), type(exc).__name__, exc)
            for item in ready:
                if item.job.finished:
                    self.core.segment_done(item)
                    continue
                try:
                    (out,) = self._call_batch([item])
                except Exception as exc1:
                    self._fail(item, exc1)
                    continue
                self._deliver(item, out)
            return
        for item, out in zip(ready, outs):
            self._deliver(item, out)

    def _call_batch(self, items: list[WorkItem]) -> list[np.ndarray]:
        works = [
            SegmentWork(voice=it.job.voice, segment=it.job.segments[it.segment_index], options=it.job.options, job_id=it.job.id)
            for it in items
        ]
        self.core.metrics.batch_size.observe(len(works))
        t0 = time.monotonic()
        with self.core.monitor.engine_call(f"synthesize_batch n={len(works)} jobs={','.join(it.job.id for it in items)}"):
            outs = [as_chunk(o) for o in self.engine.synthesize_batch(works)]
        if len(outs) != len(works):
            raise RuntimeError(f"synthesize_batch returned {len(outs)} results for {len(works)} items")
        engine_s = time.monotonic() - t0
        for it in items:
            if it.segment_index == 0:
                it.job.first_engine_s = engine_s
        self.core.record_engine_time(time.monotonic() - t0, sum(o.shape[0] for o in outs) / float(self.core.sample_rate))
        return outs

    def _deliver(self, item: WorkItem, audio: Optional[np.ndarray]) -> None:
        if audio is not None and audio.shape[0] > 0:
            self.core.emit_chunk(item.job, item.segment_index, audio)
        self.core.segment_done(item)
