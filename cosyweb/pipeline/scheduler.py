"""Segment-level priority scheduling with dynamic batching.

The unit of scheduling is one text segment of one job (a :class:`WorkItem`). A job
has at most one item queued or in flight, so its segments are produced in order.

Priority (issue "serving core", First-chunk priority; the same idea as NVIDIA's
Triton CosyVoice3 runtime, which serves a new request's first chunk ahead of other
requests' later chunks):

* class 0: the first segment of a job that just got a slot, FIFO by enqueue order;
* class 1: later segments of jobs already streaming, FIFO by the time they became ready.
  With one item per job this is round robin between streaming jobs, so every stream
  advances (ordering by job start instead would stall younger streams behind the oldest).
* aging: each time an item is dispatched ahead of an older waiting item, that older item
  counts one overtake; after ``max_overtakes`` it is promoted to class 0. So a later segment
  waits behind at most ``max_overtakes`` newer first segments: nothing starves under a
  stream of new jobs. ``max_overtakes=0`` turns the priority off (plain FIFO).
  Counting overtakes rather than seconds keeps the policy deterministic and testable.

First-chunk lane: with several workers, ``first_lane`` of them are kept for first segments:
at most ``n_workers - first_lane`` engine calls at once may be later segments or prewarms, so
a new request never waits for a long later segment already running (a worker cannot be
interrupted inside an engine call; with one worker the wait for the call in progress remains).
First segments may use every worker.

Voice preparation (a prewarm after a prompt is registered) is a :class:`VoiceWork` item in
class 1, FIFO with the later segments and aged like them: it never delays a new request's
first chunk, waits at most behind the later segments already ready, and is always taken
alone (never inside a batch of segments).

Dynamic batching: :meth:`SegmentScheduler.take` returns up to ``max_items`` items. When
fewer are ready it waits up to ``batch_wait_s`` for more, returning as soon as the batch
is full (LitServe and Triton's dynamic batcher use the same max-size / max-delay pair).

Thread-safety: the scheduler shares the pipeline core's condition variable; ``put`` and
``remove_job`` must be called with it held, ``take`` acquires it itself.
"""

from __future__ import annotations

import itertools
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Optional, Union

from .job import Job


@dataclass(eq=False)
class WorkItem:
    """One segment of one job, waiting for or on a worker.

    Attributes:
        job: the owning job.
        segment_index: 0-based index into ``job.segments``.
        seq: global enqueue order (smaller = older).
        first: True for the job's first segment (priority class 0).
        n_overtaken: how many newer items were dispatched before this one.
        t_enqueued: monotonic time it became ready, seconds.
    """

    job: Job
    segment_index: int
    seq: int
    first: bool
    n_overtaken: int = 0
    t_enqueued: float = field(default_factory=time.monotonic)


@dataclass(eq=False)
class VoiceWork:
    """Background preparation of one voice (a prewarm), queued in priority class 1.

    Attributes:
        prompt: the conditioned prompt (:class:`cosyweb.audio.types.PromptAudio`).
        prompt_text: its transcript ("" if unknown).
        key: the voice-cache key.
        seq, first, n_overtaken, t_enqueued: as in :class:`WorkItem` (``first`` is always False).
        job: always None (no job owns a prewarm).
    """

    prompt: Any
    prompt_text: str
    key: str
    seq: int
    first: bool = False
    n_overtaken: int = 0
    t_enqueued: float = field(default_factory=time.monotonic)
    job: None = None


Item = Union[WorkItem, VoiceWork]


class Batch(list):
    """The items one :meth:`SegmentScheduler.take` returned (a list), remembering whether it
    occupies a later-segment place (``tail``: it holds no first segment). Hand it back to
    :meth:`SegmentScheduler.release` when the worker has run it."""

    tail: bool = False
    counted: bool = False  # counted in ``n_tail_running`` (only with a first-chunk lane)


class SegmentScheduler:
    """Priority queue of :class:`WorkItem` with aging and batch collection.

    Args:
        cond: the core's condition variable (guards this object and wakes workers).
        max_overtakes: overtakes after which a later segment is promoted (>= 0).
        n_workers: workers calling :meth:`take`.
        first_lane: workers kept for first segments (clamped to ``n_workers - 1``).
    """

    def __init__(self, cond: threading.Condition, max_overtakes: int = 4, n_workers: int = 1,
                 first_lane: int = 0) -> None:
        self._cond = cond
        self.max_overtakes = max(0, int(max_overtakes))
        self.n_workers = max(1, int(n_workers))
        self.first_lane = max(0, min(int(first_lane), self.n_workers - 1))
        self.n_tail_running = 0  # batches without a first segment on a worker now
        self._items: list[Item] = []
        self._seq = itertools.count()
        self._closed = False

    def __len__(self) -> int:
        return len(self._items)

    @property
    def closed(self) -> bool:
        """True after :meth:`close`."""
        return self._closed

    def _rank(self, item: WorkItem) -> tuple[int, int]:
        promoted = item.first or item.n_overtaken >= self.max_overtakes
        return (0 if promoted else 1, item.seq)

    def put(self, job: Job, segment_index: int) -> WorkItem:
        """Queue segment ``segment_index`` of ``job`` (caller holds the condition)."""
        item = WorkItem(job, segment_index, next(self._seq), first=segment_index == 0)
        self._items.append(item)
        self._cond.notify_all()
        return item

    def put_voice(self, prompt: Any, prompt_text: str, key: str) -> VoiceWork:
        """Queue the background preparation of a voice (caller holds the condition)."""
        item = VoiceWork(prompt, prompt_text, key, next(self._seq))
        self._items.append(item)
        self._cond.notify_all()
        return item

    def remove_job(self, job: Job) -> bool:
        """Drop the queued item of ``job``, if any (caller holds the condition)."""
        n = len(self._items)
        self._items = [it for it in self._items if it.job is not job]
        return len(self._items) != n

    def order(self) -> list[Item]:
        """The queued items in dispatch order (caller holds the condition); for stats and tests."""
        return sorted(self._items, key=self._rank)

    def _eligible(self) -> list[Item]:
        """Items a worker may take now: all, or only first segments while the later-segment
        places (``n_workers - first_lane``) are all in use."""
        if self.first_lane == 0 or self.n_tail_running < self.n_workers - self.first_lane:
            return self._items
        return [it for it in self._items if it.first]

    def _pop(self, n: int, eligible: list[Item]) -> Batch:
        ranked = sorted(eligible, key=self._rank)
        if isinstance(ranked[0], VoiceWork):
            taken = ranked[:1]  # a prewarm runs alone
        else:
            taken = [it for it in ranked if not isinstance(it, VoiceWork)][:n]
        chosen = {id(it) for it in taken}
        rest = [it for it in sorted(self._items, key=self._rank) if id(it) not in chosen]
        newest_taken = max((it.seq for it in taken), default=-1)
        for it in rest:
            if it.seq < newest_taken:
                it.n_overtaken += sum(1 for t in taken if t.seq > it.seq)
        self._items = rest
        batch = Batch(taken)
        batch.tail = not any(it.first for it in taken)
        if batch.tail and self.first_lane > 0:
            self.n_tail_running += 1
            batch.counted = True
        return batch

    def release(self, batch: Batch) -> None:
        """A worker is done with ``batch`` (its later-segment place, if any, is free again)."""
        with self._cond:
            if batch.counted:
                batch.counted = False
                self.n_tail_running -= 1
                self._cond.notify_all()

    def take(self, max_items: int = 1, batch_wait_s: float = 0.0) -> Optional[Batch]:
        """Block until work is ready; return 1..``max_items`` items in priority order.

        With fewer than ``max_items`` ready, waits at most ``batch_wait_s`` seconds (from the
        moment the first item is ready) for more, returning early once the batch is full.

        Returns:
            A non-empty :class:`Batch` (segments of distinct jobs, or one :class:`VoiceWork`),
            or None once the scheduler is closed. Pass it to :meth:`release` when done.
        """
        max_items = max(1, int(max_items))
        with self._cond:
            while True:
                while not self._eligible() and not self._closed:
                    self._cond.wait()
                if self._closed:
                    return None
                if max_items > 1 and batch_wait_s > 0 and len(self._eligible()) < max_items:
                    deadline = time.monotonic() + batch_wait_s
                    while len(self._eligible()) < max_items and not self._closed:
                        remaining_s = deadline - time.monotonic()
                        if remaining_s <= 0:
                            break
                        self._cond.wait(remaining_s)
                    if self._closed:
                        return None
                eligible = self._eligible()
                if eligible:  # another worker may have taken them meanwhile
                    return self._pop(max_items, eligible)

    def close(self) -> None:
        """Wake every waiting worker; :meth:`take` returns None from now on."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()
