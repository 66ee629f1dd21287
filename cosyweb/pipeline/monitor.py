"""Job deadlines and the engine-call watchdog, served by one background thread.

* Deadlines: every admitted job gets ``created + job_timeout_s``. When it passes and the
  job has not finished, ``on_deadline(job)`` is called (the core fails it with
  :class:`cosyweb.errors.JobTimeoutError`, which frees its slot at once). Finished jobs are
  dropped from the table, so no finished job (and its audio) is kept alive by a deadline.
* Watchdog: every engine call (prepare_voice, synthesize chunk, synthesize_batch) is
  wrapped in :meth:`Monitor.engine_call`. :attr:`Monitor.healthy` is False while any call
  has been running longer than ``watchdog_s`` and True again when it returns; computed when
  read, so it needs no polling. The thread only logs each stuck call once (within about
  ``watchdog_s`` + 1 s).
"""

from __future__ import annotations

import heapq
import itertools
import logging
import threading
import time
from contextlib import contextmanager
from typing import Callable, Iterator, Optional

from .job import Job

log = logging.getLogger("cosyweb.pipeline")

#: The monitor thread looks for stuck calls at least this often (``healthy`` itself is computed
#: when read, so this only bounds how late a stuck call is logged).
_WATCH_PERIOD_S = 1.0


class Monitor:
    """Deadlines and watchdog.

    Args:
        watchdog_s: an engine call longer than this marks the service unhealthy.
        on_deadline: called (from the monitor thread, no lock held) for a job past its deadline.
    """

    def __init__(self, watchdog_s: float, on_deadline: Callable[[Job], None]) -> None:
        self.watchdog_s = float(watchdog_s)
        self._on_deadline = on_deadline
        self._cond = threading.Condition()
        self._heap: list[tuple[float, int, str]] = []  # (deadline, seq, job id)
        self._jobs: dict[str, tuple[float, Job]] = {}
        self._calls: dict[int, list] = {}  # token -> [t0, description, flagged]
        self._seq = itertools.count()
        self._stop = False
        self._thread: Optional[threading.Thread] = None

    # --- lifecycle ------------------------------------------------------------------
    def start(self) -> None:
        """Start the monitor thread (daemon)."""
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="cosyweb-monitor", daemon=True)
            self._thread.start()

    def stop(self) -> None:
        """Stop the thread and wait briefly for it."""
        with self._cond:
            self._stop = True
            self._cond.notify_all()
        if self._thread is not None:
            self._thread.join(timeout=5.0)

    # --- deadlines ------------------------------------------------------------------
    def add_deadline(self, job: Job, deadline: float) -> None:
        """Watch ``job`` until ``deadline`` (``time.monotonic()`` seconds)."""
        with self._cond:
            earliest = not self._heap or deadline < self._heap[0][0]
            self._jobs[job.id] = (deadline, job)
            heapq.heappush(self._heap, (deadline, next(self._seq), job.id))
            if len(self._heap) > 64 + 2 * len(self._jobs):  # drop stale entries of finished jobs
                self._heap = [e for e in self._heap if self._jobs.get(e[2], (None,))[0] == e[0]]
                heapq.heapify(self._heap)
            if earliest:  # the thread may be sleeping past this deadline
                self._cond.notify_all()

    def remove_deadline(self, job: Job) -> None:
        """Stop watching ``job`` (it finished)."""
        with self._cond:
            self._jobs.pop(job.id, None)

    @property
    def n_deadlines(self) -> int:
        """Jobs being watched."""
        with self._cond:
            return len(self._jobs)

    # --- watchdog -------------------------------------------------------------------
    @contextmanager
    def engine_call(self, description: str) -> Iterator[None]:
        """Context manager around one engine call, for the watchdog."""
        token = next(self._seq)
        with self._cond:  # no wake-up: the thread looks at calls at least every _WATCH_PERIOD_S
            self._calls[token] = [time.monotonic(), description, False]
        try:
            yield
        finally:
            with self._cond:
                t0, desc, flagged = self._calls.pop(token)
            if flagged:
                log.warning("engine call returned after %.1f s: %s", time.monotonic() - t0, desc)

    def stuck_calls(self) -> list[tuple[str, float]]:
        """``(description, running seconds)`` of calls running longer than ``watchdog_s``."""
        now = time.monotonic()
        with self._cond:
            return [(c[1], now - c[0]) for c in self._calls.values() if now - c[0] > self.watchdog_s]

    @property
    def healthy(self) -> bool:
        """False while an engine call has run longer than ``watchdog_s``."""
        return not self.stuck_calls()

    @property
    def n_calls(self) -> int:
        """Engine calls running now."""
        with self._cond:
            return len(self._calls)

    # --- thread ---------------------------------------------------------------------
    def _run(self) -> None:
        while True:
            expired: list[Job] = []
            with self._cond:
                if self._stop:
                    return
                now = time.monotonic()
                while self._heap and self._heap[0][0] <= now:
                    deadline, _, jid = heapq.heappop(self._heap)
                    entry = self._jobs.get(jid)
                    if entry is not None and entry[0] == deadline:
                        del self._jobs[jid]
                        expired.append(entry[1])
                wake = min(self._heap[0][0] if self._heap else now + 60.0, now + min(_WATCH_PERIOD_S, self.watchdog_s))
                for call in self._calls.values():
                    due = call[0] + self.watchdog_s
                    if not call[2]:
                        if due < now:
                            call[2] = True
                            log.error("engine call stuck for %.1f s (watchdog %.1f s): %s", now - call[0], self.watchdog_s, call[1])
                        else:
                            wake = min(wake, due)
                if not expired:
                    self._cond.wait(max(0.0, wake - now) + 0.001)
                    continue
            for job in expired:
                if not job.finished:
                    try:
                        self._on_deadline(job)
                    except Exception:  # never let the monitor die
                        log.exception("deadline handler failed for job %s", job.id)
