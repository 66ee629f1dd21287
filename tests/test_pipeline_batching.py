"""Dynamic batching with an engine that really batches: batch collection up to max_batch,
the batch_wait_ms window, routing of results back to their jobs, and isolation of a failing
or out-of-memory batch (members retried one by one)."""

from __future__ import annotations

import numpy as np
import pytest
from fakes import BatchingFakeEngine, Gate, OutOfMemoryError, service_factory, submit, value_for  # noqa: F401

from cosyweb.errors import EngineError

pytestmark = pytest.mark.timeout(30)


def _expected_audio(engine, texts) -> np.ndarray:
    return np.concatenate([np.concatenate([engine.chunk(t)] * engine.n_chunks) for t in texts])


def _held_start(engine, svc):
    """Occupy the only worker with a held batch so later submissions pile up as ready work."""
    gate = engine.on("first", before=Gate("first")).before
    first = submit(svc, "first")
    assert gate.wait_reached()
    return first, gate


def test_collects_ready_segments_up_to_max_batch_and_routes_results(service_factory):
    engine = BatchingFakeEngine(max_batch=4)
    svc = service_factory(engine, concurrency=1, max_queue=8)
    assert svc.max_batch == 4 and svc.max_active_jobs == 8  # 2 x concurrency x max_batch
    first, gate = _held_start(engine, svc)
    jobs = [submit(svc, f"j{i}") for i in range(6)]
    gate.open()
    for job in (first, *jobs):
        audio, status = job.result(timeout=10)
        np.testing.assert_array_equal(audio, _expected_audio(engine, [job.segments[0].text]))
        assert status.duration_s == pytest.approx(audio.size / 16000)
    assert engine.batch_sizes == [1, 4, 2]
    assert svc.metrics.value("cosyweb_batch_size_count") == 3
    assert svc.metrics.value("cosyweb_batch_size_sum") == 7


def test_settings_max_batch_caps_the_engine_batch(service_factory):
    engine = BatchingFakeEngine(max_batch=8)
    svc = service_factory(engine, concurrency=1, max_batch=2, max_active_jobs=8)
    first, gate = _held_start(engine, svc)
    jobs = [submit(svc, f"j{i}") for i in range(5)]
    gate.open()
    for job in (first, *jobs):
        job.result(timeout=10)
    assert engine.batch_sizes == [1, 2, 2, 1]


def test_batch_window_fills_as_requests_arrive_and_closes_when_full(service_factory):
    engine = BatchingFakeEngine(max_batch=3)
    # A 60 s window: only a full batch can be dispatched within the test's 30 s timeout.
    svc = service_factory(engine, concurrency=1, batch_wait_ms=60_000)
    jobs = [submit(svc, f"j{i}") for i in range(3)]
    for job in jobs:
        job.result(timeout=20)
    assert engine.batch_sizes == [3]


def test_batch_window_ends_with_a_partial_batch(service_factory):
    engine = BatchingFakeEngine(max_batch=8)
    svc = service_factory(engine, concurrency=1, batch_wait_ms=20)
    submit(svc, "alone").result(timeout=20)
    assert engine.batch_sizes == [1]


def test_one_segment_per_job_per_batch_and_segments_in_order(service_factory):
    engine = BatchingFakeEngine(max_batch=4)
    svc = service_factory(engine, concurrency=1)
    first, gate = _held_start(engine, svc)
    a = submit(svc, "a0", "a1", "a2")
    b = submit(svc, "b0", "b1")
    gate.open()
    for job in (a, b):
        audio, status = job.result(timeout=10)
        np.testing.assert_array_equal(audio, _expected_audio(engine, [s.text for s in job.segments]))
        assert status.n_segments == len(job.segments)
    batches = [texts for kind, texts in engine.calls]
    assert batches == [("first",), ("a0", "b0"), ("a1", "b1"), ("a2",)]


def test_out_of_memory_batch_is_retried_one_by_one(service_factory):
    engine = BatchingFakeEngine(max_batch=4)
    engine.on("big", batch_error=OutOfMemoryError())  # fits alone, not in a batch
    svc = service_factory(engine, concurrency=1)
    first, gate = _held_start(engine, svc)
    jobs = [submit(svc, t) for t in ("a", "big", "c")]
    gate.open()
    for job in jobs:
        audio, _ = job.result(timeout=10)
        assert np.all(audio == np.float32(value_for(job.segments[0].text)))
    assert engine.batch_sizes == [1, 3, 1, 1, 1]
    assert svc.metrics.value("cosyweb_batch_retries_total") == 1
    assert svc.metrics.value("cosyweb_engine_errors_total", {"kind": "oom"}) == 1


def test_a_poisoned_request_fails_alone_and_its_batch_mates_complete(service_factory):
    engine = BatchingFakeEngine(max_batch=4)
    engine.on("poison", error=ValueError("bad tensor shape"))
    svc = service_factory(engine, concurrency=1)
    first, gate = _held_start(engine, svc)
    jobs = {t: submit(svc, t) for t in ("a", "poison", "c")}
    gate.open()
    with pytest.raises(EngineError):
        jobs["poison"].result(timeout=10)
    for t in ("a", "c"):
        audio, _ = jobs[t].result(timeout=10)
        assert np.all(audio == np.float32(value_for(t)))
    assert engine.batch_sizes == [1, 3, 1, 1, 1]
    later = submit(svc, "later")  # the worker carries on
    later.result(timeout=10)
    assert svc.stats()["failed"] == 1 and svc.stats()["completed"] == 4


def test_cancelled_member_of_a_held_batch_gets_nothing(service_factory):
    engine = BatchingFakeEngine(max_batch=4)
    gate = engine.on("a", before=Gate()).before
    svc = service_factory(engine, concurrency=1, batch_wait_ms=60_000, max_batch=2)
    a, b = submit(svc, "a"), submit(svc, "b")
    assert gate.wait_reached()  # batch (a, b) is inside the engine
    b.cancel("client_gone")
    gate.open()
    a.result(timeout=10)
    assert b.status == "cancelled" and b.audio().size == 0
    assert engine.batch_sizes == [2]
