"""The serving pipeline: admission control, segment scheduling with first-chunk priority and
dynamic batching, worker threads, cancellation, timeouts, watchdog and metrics.

Entry point: :class:`TTSService`. Every caller (UI, API, CLI) goes through it.
"""

from .job import Job, JobEvent
from .service import TTSService

__all__ = ["Job", "JobEvent", "TTSService"]
