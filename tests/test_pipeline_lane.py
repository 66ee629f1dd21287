"""The first-chunk lane and the default number of active jobs.

With several workers, one is kept for first segments: a new job's first segment runs at once
even while every other worker is inside a long later segment, and later segments never take
the lane. Deterministic: engine calls are held at gates."""

from __future__ import annotations

import pytest
from fakes import BatchingFakeEngine, FakeEngine, Gate, service_factory, submit, wait_until  # noqa: F401

pytestmark = pytest.mark.timeout(30)


def test_lane_defaults(service_factory):
    one = service_factory(FakeEngine(concurrency=1))
    two = service_factory(FakeEngine(concurrency=2))
    fifo = service_factory(FakeEngine(concurrency=2), priority_max_overtakes=0)
    clamped = service_factory(FakeEngine(concurrency=2), first_chunk_lane=5)
    assert [s.stats()["first_chunk_lane"] for s in (one, two, fifo, clamped)] == [0, 1, 0, 1]
    # two jobs per engine slot by default, so a new job is served beside a running one
    assert (one.max_active_jobs, two.max_active_jobs) == (2, 4)
    assert service_factory(BatchingFakeEngine(max_batch=4)).max_active_jobs == 8


def test_new_first_segment_uses_the_lane_while_a_later_segment_runs(service_factory):
    engine = FakeEngine(concurrency=2)
    gate = engine.on("a1", before=Gate("a1")).before
    svc = service_factory(engine, max_active_jobs=4)
    a = submit(svc, "a0", "a1")
    assert gate.wait_reached()  # a's later segment holds the one later-segment place
    b = submit(svc, "b0", "b1")
    events = b.events(timeout=10)
    assert next(e for e in events if e.kind == "chunk").segment_index == 0  # b's first chunk, a1 still held
    core = svc._core
    assert wait_until(lambda: len(core.scheduler) == 1)  # b1 is ready...
    c = submit(svc, "c0")
    c.result(timeout=10)  # ...but c0 (first segment) is served on the lane instead
    assert "b1" not in engine.call_texts()
    assert engine.call_texts()[:4] == ["a0", "a1", "b0", "c0"]
    gate.open()
    a.result(timeout=10)
    b.result(timeout=10)
    assert core.scheduler.n_tail_running == 0


def test_without_a_lane_both_workers_take_later_segments(service_factory):
    engine = FakeEngine(concurrency=2)
    gate_a = engine.on("a1", before=Gate("a1")).before
    gate_b = engine.on("b1", before=Gate("b1")).before
    svc = service_factory(engine, max_active_jobs=4, first_chunk_lane=0)
    a = submit(svc, "a0", "a1")
    assert gate_a.wait_reached()
    b = submit(svc, "b0", "b1")
    assert gate_b.wait_reached()  # both workers are now inside later segments
    gate_a.open()
    gate_b.open()
    a.result(timeout=10)
    b.result(timeout=10)


def test_a_cancelled_job_frees_its_later_segment_place(service_factory):
    engine = FakeEngine(concurrency=2, n_chunks=3)
    gate = engine.on("a1", after={0: Gate("a1 chunk 0")}).after[0]
    svc = service_factory(engine, max_active_jobs=4)
    a = submit(svc, "a0", "a1")
    assert gate.wait_reached()
    a.cancel("stop")
    gate.open()
    b = submit(svc, "b0", "b1")  # b1 needs the later-segment place a1 held
    b.result(timeout=10)
    assert svc._core.scheduler.n_tail_running == 0
