"""Prometheus metrics of one pipeline, on its own registry, plus a rolling first-chunk median.

Built on ``prometheus-client``. Each :class:`PipelineMetrics` owns a
``CollectorRegistry`` (not the process-global one), so tests and benchmarks can create
many services; the HTTP layer serves it with ``prometheus_client.generate_latest(registry)``.

Names follow Prometheus conventions (base units: seconds; ``_total`` counters):

=====================================  =========  ==============================================
name                                   type       meaning
=====================================  =========  ==============================================
cosyweb_queue_depth                    gauge      jobs waiting for a slot
cosyweb_queued_audio_seconds           gauge      estimated audio seconds waiting
cosyweb_active_jobs                    gauge      jobs holding a slot
cosyweb_healthy / cosyweb_ready        gauge      1/0, as /healthz and /readyz
cosyweb_jobs_admitted_total            counter    jobs accepted by admission control
cosyweb_jobs_refused_busy_total        counter    busy refusals, label ``reason``: queue_full, queue_audio_full, client_limit, shutting_down, not_ready
cosyweb_jobs_completed_total           counter    jobs done
cosyweb_jobs_failed_total              counter    jobs failed (engine or input error)
cosyweb_jobs_cancelled_total           counter    jobs cancelled (client gone, stop, shutdown)
cosyweb_jobs_timeout_total             counter    jobs past their deadline
cosyweb_engine_errors_total            counter    engine calls that raised, label ``kind``
cosyweb_batch_retries_total            counter    failed batches retried one by one
cosyweb_queue_wait_seconds             histogram  submit -> slot
cosyweb_first_chunk_seconds            histogram  submit -> first audio chunk (includes wait)
cosyweb_job_total_seconds              histogram  submit -> done
cosyweb_job_rtf                        histogram  serving seconds / audio seconds
cosyweb_batch_size                     histogram  segments per engine call
cosyweb_voice_prewarms_total           counter    background voice preparations, label ``outcome``
                                                  (prepared, cached, failed, skipped)
process_*                              various    RSS, open fds, CPU of this process (Linux)
=====================================  =========  ==============================================
"""

from __future__ import annotations

import statistics
import threading
from collections import deque
from typing import Callable, Optional

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, ProcessCollector

_LATENCY_BUCKETS_S = (0.01, 0.025, 0.05, 0.1, 0.2, 0.3, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0)
_RTF_BUCKETS = (0.05, 0.1, 0.2, 0.3, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0, 5.0, 10.0)
_BATCH_BUCKETS = (1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 64)


class RollingMedian:
    """Median of the last ``n`` values (thread-safe). Used for the UI's recent first-chunk latency."""

    def __init__(self, n: int = 50) -> None:
        self._values: deque[float] = deque(maxlen=max(1, n))
        self._lock = threading.Lock()

    def add(self, value: float) -> None:
        with self._lock:
            self._values.append(float(value))

    def median(self) -> Optional[float]:
        """The median, or None before the first value."""
        with self._lock:
            return statistics.median(self._values) if self._values else None

    def __len__(self) -> int:
        with self._lock:
            return len(self._values)


class PipelineMetrics:
    """All metrics of one pipeline.

    Args:
        queue_depth, queued_audio_s, active_jobs, healthy, ready: zero-argument callables
            read at scrape time by the gauges.
        window: number of recent jobs in the rolling first-chunk median.
    """

    def __init__(
        self,
        *,
        queue_depth: Callable[[], float],
        queued_audio_s: Callable[[], float],
        active_jobs: Callable[[], float],
        healthy: Callable[[], float],
        ready: Callable[[], float],
        window: int = 50,
    ) -> None:
        r = self.registry = CollectorRegistry(auto_describe=True)
        Gauge("cosyweb_queue_depth", "Jobs waiting for a slot", registry=r).set_function(queue_depth)
        Gauge("cosyweb_queued_audio_seconds", "Estimated audio seconds waiting", registry=r).set_function(queued_audio_s)
        Gauge("cosyweb_active_jobs", "Jobs holding a slot (being served)", registry=r).set_function(active_jobs)
        Gauge("cosyweb_healthy", "1 if no engine call is stuck past the watchdog", registry=r).set_function(healthy)
        Gauge("cosyweb_ready", "1 once the engine is loaded and warmed up", registry=r).set_function(ready)
        self.admitted = Counter("cosyweb_jobs_admitted", "Jobs accepted by admission control", registry=r)
        self.refused_busy = Counter("cosyweb_jobs_refused_busy", "Busy refusals", ["reason"], registry=r)
        self.completed = Counter("cosyweb_jobs_completed", "Jobs done", registry=r)
        self.failed = Counter("cosyweb_jobs_failed", "Jobs failed", registry=r)
        self.cancelled = Counter("cosyweb_jobs_cancelled", "Jobs cancelled", registry=r)
        self.timeout = Counter("cosyweb_jobs_timeout", "Jobs past their deadline", registry=r)
        self.engine_errors = Counter("cosyweb_engine_errors", "Engine calls that raised", ["kind"], registry=r)
        self.batch_retries = Counter("cosyweb_batch_retries", "Failed batches retried one by one", registry=r)
        self.queue_wait_s = Histogram(
            "cosyweb_queue_wait_seconds", "Submit to slot", buckets=_LATENCY_BUCKETS_S, registry=r
        )
        self.first_chunk_s = Histogram(
            "cosyweb_first_chunk_seconds", "Submit to first audio chunk", buckets=_LATENCY_BUCKETS_S, registry=r
        )
        self.total_s = Histogram("cosyweb_job_total_seconds", "Submit to done", buckets=_LATENCY_BUCKETS_S, registry=r)
        self.rtf = Histogram("cosyweb_job_rtf", "Serving seconds per audio second", buckets=_RTF_BUCKETS, registry=r)
        self.batch_size = Histogram("cosyweb_batch_size", "Segments per engine call", buckets=_BATCH_BUCKETS, registry=r)
        self.prewarms = Counter(
            "cosyweb_voice_prewarms", "Background voice preparations", ["outcome"], registry=r
        )
        ProcessCollector(registry=r)  # process_resident_memory_bytes, process_open_fds, ...
        self.first_chunk_window = RollingMedian(window)

    def value(self, name: str, labels: Optional[dict[str, str]] = None) -> float:
        """Current value of a sample by its full name (e.g. ``"cosyweb_jobs_completed_total"``), 0 if absent."""
        v = self.registry.get_sample_value(name, labels or {})
        return float(v) if v is not None else 0.0
