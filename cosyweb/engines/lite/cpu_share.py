"""First segments first, on the CPU too: later segments step aside while a first segment runs.

The pipeline already dispatches a new request's first segment ahead of other requests' later
segments, and keeps a worker free for it (issue "serving core", first-chunk priority). On a
GPU that is enough: the engine call is the GPU's. The lite engine runs on the same few CPU
cores as everything else, so a later segment that is already running still takes half of
them from the first segment that arrives next (measured on 2 cores: a 135 ms first segment
took 250-400 ms next to a 560 ms later one).

This gate closes that gap cooperatively, at stage boundaries: a later segment (``index > 0``)
about to start one of its heavy stages (WORLD analysis, WORLD resynthesis) waits while any
first segment (``index == 0``) is being synthesised, for at most :data:`MAX_WAIT_S` per stage
so that a steady stream of new requests cannot starve it. A later segment belongs to a stream
that is already playing the previous segment's audio (seconds of it), so a wait of one first
segment (about 0.1-0.2 s here) is not heard.

Thread-safe; process-wide (one CPU, one gate).
"""

from __future__ import annotations

import threading
import time
from contextlib import contextmanager
from typing import Iterator

#: The longest a later segment waits at one stage boundary, seconds.
MAX_WAIT_S = 0.4

_cond = threading.Condition()
_first_running = 0


@contextmanager
def first_segment() -> Iterator[None]:
    """Mark a first segment (``TextSegment.index == 0``) as being synthesised for the block."""
    global _first_running
    with _cond:
        _first_running += 1
    try:
        yield
    finally:
        with _cond:
            _first_running -= 1
            if _first_running == 0:
                _cond.notify_all()


def first_segments_running() -> int:
    """How many first segments are being synthesised now."""
    with _cond:
        return _first_running


def yield_to_first_segments(max_wait_s: float = MAX_WAIT_S) -> float:
    """Called by a later segment before a heavy stage: wait while a first segment runs.

    Args:
        max_wait_s: the most to wait, seconds (0: do not wait).

    Returns:
        Seconds waited (0.0 when no first segment was running).
    """
    t0 = time.monotonic()
    with _cond:
        if _first_running == 0:
            return 0.0
        _cond.wait_for(lambda: _first_running == 0, timeout=max_wait_s)
    return time.monotonic() - t0
