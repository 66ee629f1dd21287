"""Admission control: active slots, a bounded wait queue measured in work, per-client limits.

Policy (issue "serving core", Admission control):

* up to ``max_active_jobs`` jobs hold a slot (are being served / streamed) at once;
* further admitted jobs wait in a FIFO queue bounded by BOTH ``max_queue`` jobs and
  ``max_queue_audio_s`` estimated audio seconds (sum of
  :meth:`cosyweb.text.types.TextSegment.estimated_duration_s` of the waiting jobs),
  so one 5,000-character request cannot pass for one unit;
* a client (browser session, API key) may have at most ``per_client_jobs`` jobs
  queued or running; ``client_id=None`` is not limited;
* anything beyond is refused at once with :class:`cosyweb.errors.BusyError` (or its
  subclass :class:`cosyweb.errors.ClientLimitError`) carrying ``retry_after_s``, the
  position the job would have had and a wait estimate. Refusals change no state.

This class is plain bookkeeping and is NOT thread-safe: the pipeline core calls it
with its lock held. It never blocks and never touches the engine.
"""

from __future__ import annotations

import math
from collections import Counter, OrderedDict
from typing import Callable, Optional

from cosyweb.errors import BusyError, ClientLimitError

from .job import Job


class Admission:
    """Slots, wait queue and per-client counts of one pipeline.

    Args:
        max_active_jobs: jobs served at once (>= 1).
        max_queue: jobs that may wait for a slot (>= 0).
        max_queue_audio_s: estimated audio seconds that may wait (> 0).
        per_client_jobs: queued + running jobs per non-None client id (>= 1).
        estimate_wait_s: ``f(audio_s_ahead) -> seconds`` until work of that many audio
            seconds (plus what is running) would be served; used for ``retry_after_s``.
    """

    def __init__(
        self,
        max_active_jobs: int,
        max_queue: int,
        max_queue_audio_s: float,
        per_client_jobs: int,
        estimate_wait_s: Callable[[float], float],
    ) -> None:
        self.max_active_jobs = max(1, int(max_active_jobs))
        self.max_queue = max(0, int(max_queue))
        self.max_queue_audio_s = float(max_queue_audio_s)
        self.per_client_jobs = max(1, int(per_client_jobs))
        self._estimate_wait_s = estimate_wait_s
        self.active: "OrderedDict[str, Job]" = OrderedDict()
        self.waiting: "OrderedDict[str, Job]" = OrderedDict()
        self.queued_audio_s = 0.0
        self._per_client: Counter[str] = Counter()

    # --- queries ------------------------------------------------------------------
    @property
    def n_active(self) -> int:
        """Jobs holding a slot."""
        return len(self.active)

    @property
    def n_waiting(self) -> int:
        """Jobs waiting for a slot (the queue depth)."""
        return len(self.waiting)

    def has_free_slot(self) -> bool:
        """True if a job admitted now would start at once."""
        return len(self.active) < self.max_active_jobs and not self.waiting

    def position(self, job: Job) -> Optional[int]:
        """1-based place of ``job`` in the wait queue; 0 if it holds a slot; None if unknown."""
        if job.id in self.active:
            return 0
        for i, jid in enumerate(self.waiting, start=1):
            if jid == job.id:
                return i
        return None

    def client_jobs(self, client_id: Optional[str]) -> int:
        """Queued + running jobs of ``client_id`` (0 for None)."""
        return self._per_client[client_id] if client_id is not None else 0

    # --- decisions ------------------------------------------------------------------
    def _busy(self, reason: str, audio_s: float) -> BusyError:
        wait_s = max(0.0, float(self._estimate_wait_s(self.queued_audio_s + audio_s)))
        return BusyError(
            retry_after_s=float(max(1, math.ceil(wait_s))),
            queue_depth=len(self.waiting),
            reason=reason,
            position=len(self.waiting) + 1,
            estimated_wait_s=round(wait_s, 1),
            queued_audio_s=round(self.queued_audio_s, 1),
        )

    def check(self, client_id: Optional[str], audio_s: float = 0.0) -> None:
        """Raise if a job of ``client_id`` with ``audio_s`` estimated seconds would be refused.

        Cheap enough to call before text analysis (with ``audio_s=0``) to refuse early.

        Raises:
            ClientLimitError: the client already has ``per_client_jobs`` jobs.
            BusyError: no free slot and the queue is full in jobs or in audio seconds.
        """
        if client_id is not None and self._per_client[client_id] >= self.per_client_jobs:
            raise ClientLimitError(self.per_client_jobs, client_jobs=self._per_client[client_id], reason="client_limit")
        if self.has_free_slot():
            return
        if len(self.waiting) >= self.max_queue:
            raise self._busy("queue_full", audio_s)
        if self.queued_audio_s + audio_s > self.max_queue_audio_s:
            raise self._busy("queue_audio_full", audio_s)

    def admit(self, job: Job) -> bool:
        """Admit ``job``: give it a slot (returns True) or put it at the end of the queue (False).

        Raises:
            ClientLimitError, BusyError: as :meth:`check`; nothing is changed.
        """
        self.check(job.client_id, job.estimated_audio_s)
        if job.client_id is not None:
            self._per_client[job.client_id] += 1
        if self.has_free_slot():
            self.active[job.id] = job
            return True
        self.waiting[job.id] = job
        self.queued_audio_s += job.estimated_audio_s
        return False

    def remove(self, job: Job) -> bool:
        """Forget ``job`` (finished, cancelled, timed out). Returns True if it was known."""
        found = False
        if self.active.pop(job.id, None) is not None:
            found = True
        elif self.waiting.pop(job.id, None) is not None:
            self.queued_audio_s = max(0.0, self.queued_audio_s - job.estimated_audio_s)
            if not self.waiting:
                self.queued_audio_s = 0.0  # no float drift
            found = True
        if found and job.client_id is not None:
            self._per_client[job.client_id] -= 1
            if self._per_client[job.client_id] <= 0:
                del self._per_client[job.client_id]
        return found

    def promote(self) -> list[Job]:
        """Move waiting jobs (FIFO) into free slots. Returns the jobs that got a slot."""
        started = []
        while self.waiting and len(self.active) < self.max_active_jobs:
            _, job = self.waiting.popitem(last=False)
            self.queued_audio_s = max(0.0, self.queued_audio_s - job.estimated_audio_s)
            self.active[job.id] = job
            started.append(job)
        if not self.waiting:
            self.queued_audio_s = 0.0
        return started

    def drain_waiting(self) -> list[Job]:
        """Return the waiting jobs (in order) without removing them; for shutdown."""
        return list(self.waiting.values())
