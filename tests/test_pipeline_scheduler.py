"""Segment scheduling: first-chunk priority, round robin between streams, aging (no starvation),
and the batch window of ``take``. Unit tests on the scheduler plus end-to-end orders through
the service with one worker, whose call order is then fully determined."""

from __future__ import annotations

import threading

import pytest
from fakes import FakeEngine, Gate, make_prompt, make_segments, service_factory, submit  # noqa: F401

from cosyweb.options import SynthesisOptions
from cosyweb.pipeline.job import Job
from cosyweb.pipeline.scheduler import SegmentScheduler

pytestmark = pytest.mark.timeout(30)


def _job(name: str, n_segments: int = 3) -> Job:
    return Job(
        name,
        prompt=make_prompt(),
        prompt_text="",
        text_chars=n_segments,
        segments=make_segments(*[f"{name}{i}" for i in range(n_segments)]),
        options=SynthesisOptions(),
        client_id=None,
        sample_rate=16000,
        engine_name="fake",
    )


def _names(items) -> list[str]:
    return [f"{it.job.id}{it.segment_index}" for it in items]


def _scheduler(max_overtakes: int = 4) -> tuple[SegmentScheduler, threading.Condition]:
    cond = threading.Condition(threading.RLock())
    return SegmentScheduler(cond, max_overtakes), cond


def test_first_segments_go_ahead_of_later_segments_fifo_within_class():
    sched, cond = _scheduler()
    a, b, c, d = (_job(n) for n in "abcd")
    with cond:
        sched.put(a, 1)
        sched.put(b, 2)
        sched.put(c, 0)
        sched.put(d, 0)
        assert _names(sched.order()) == ["c0", "d0", "a1", "b2"]
    assert _names(sched.take()) == ["c0"]
    assert _names(sched.take()) == ["d0"]
    assert _names(sched.take()) == ["a1"]  # later segments: in the order they became ready


def test_priority_off_is_plain_fifo():
    sched, cond = _scheduler(max_overtakes=0)
    a, c = _job("a"), _job("c")
    with cond:
        sched.put(a, 1)
        sched.put(c, 0)
    assert _names(sched.take()) == ["a1"]


def test_aging_bounds_overtakes_of_a_later_segment():
    sched, cond = _scheduler(max_overtakes=2)
    old = _job("old")
    with cond:
        sched.put(old, 1)
    served = []
    for i in range(6):  # a new first segment arrives before every dispatch
        with cond:
            sched.put(_job(f"n{i}"), 0)
        served += _names(sched.take())
    assert served.index("old1") == 2  # overtaken exactly twice, then served


def test_take_collects_ready_items_up_to_max_batch_without_waiting():
    sched, cond = _scheduler()
    with cond:
        for n in "abcde":
            sched.put(_job(n), 0)
    assert _names(sched.take(max_items=3, batch_wait_s=3600.0)) == ["a0", "b0", "c0"]
    assert _names(sched.take(max_items=3, batch_wait_s=0.0)) == ["d0", "e0"]


def test_take_waits_for_the_batch_to_fill_then_returns_at_once():
    sched, cond = _scheduler()
    got = []
    taker = threading.Thread(target=lambda: got.append(sched.take(max_items=3, batch_wait_s=3600.0)))
    with cond:
        sched.put(_job("a"), 0)
    taker.start()
    for n in "bc":  # arrive inside the window; the batch is full after c
        with cond:
            sched.put(_job(n), 0)
    taker.join(timeout=20)
    assert not taker.is_alive(), "take() kept waiting after its batch was full"
    assert _names(got[0]) == ["a0", "b0", "c0"]


def test_take_returns_a_partial_batch_when_the_window_ends():
    sched, cond = _scheduler()
    with cond:
        sched.put(_job("a"), 0)
    assert _names(sched.take(max_items=8, batch_wait_s=0.02)) == ["a0"]


def test_close_wakes_waiting_takers():
    sched, _ = _scheduler()
    got = []
    taker = threading.Thread(target=lambda: got.append(sched.take()))
    taker.start()
    sched.close()
    taker.join(timeout=20)
    assert got == [None]


def test_remove_job_drops_its_queued_segment():
    sched, cond = _scheduler()
    a, b = _job("a"), _job("b")
    with cond:
        sched.put(a, 0)
        sched.put(b, 1)
        assert sched.remove_job(a) and not sched.remove_job(a)
        assert _names(sched.order()) == ["b1"]


# --- through the service (one worker: the call order is determined) -------------------------
@pytest.mark.parametrize("max_overtakes, expected", [
    (4, ["a0", "b0", "c0", "a1", "b1"]),  # C's first segment goes ahead of A's later one
    (0, ["a0", "b0", "a1", "c0", "b1"]),  # priority off: FIFO
])
def test_first_chunk_priority_end_to_end(service_factory, max_overtakes, expected):
    engine = FakeEngine()
    ga, gb = Gate("a0"), Gate("b0")
    engine.on("a0", before=ga)
    engine.on("b0", before=gb)
    svc = service_factory(engine, concurrency=1, max_active_jobs=3, priority_max_overtakes=max_overtakes)
    a = submit(svc, "a0", "a1")
    assert ga.wait_reached()
    b = submit(svc, "b0", "b1")
    ga.open()  # a0 finishes -> a1 becomes ready while the worker moves on to b0
    assert gb.wait_reached()
    c = submit(svc, "c0")  # new request arrives while a1 is waiting
    gb.open()
    for job in (a, b, c):
        job.result(timeout=10)
    assert engine.call_texts() == expected


def test_no_starvation_under_a_stream_of_new_jobs(service_factory):
    engine = FakeEngine()
    gate = engine.on("a0", before=Gate()).before
    svc = service_factory(engine, concurrency=1, max_active_jobs=2, max_queue=20, priority_max_overtakes=2)
    a = submit(svc, "a0", "a1", "a2")
    assert gate.wait_reached()
    news = [submit(svc, f"n{i}") for i in range(10)]  # each new job starts as soon as a slot frees
    gate.open()
    a.result(timeout=10)
    for j in news:
        j.result(timeout=10)
    order = engine.call_texts()
    # n0 was ready before a1 (FIFO); n1 and n2 overtake a1, then a1 is promoted; same for a2
    assert order[:9] == ["a0", "n0", "n1", "n2", "a1", "n3", "n4", "n5", "a2"]
    assert order.index("a2") < order.index("n9")  # A finished long before the stream ended


def test_streams_advance_round_robin(service_factory):
    engine = FakeEngine()
    gate = engine.on("a0", before=Gate()).before
    svc = service_factory(engine, concurrency=1, max_active_jobs=2)
    a = submit(svc, "a0", "a1", "a2")
    assert gate.wait_reached()
    b = submit(svc, "b0", "b1", "b2")
    gate.open()
    a.result(timeout=10)
    b.result(timeout=10)
    assert engine.call_texts() == ["a0", "b0", "a1", "b1", "a2", "b2"]


def test_without_aging_the_stream_would_starve_the_old_job(service_factory):
    """The counter-test of the one above: aging is what bounds A's wait."""
    engine = FakeEngine()
    gate = engine.on("a0", before=Gate()).before
    svc = service_factory(engine, concurrency=1, max_active_jobs=2, max_queue=20, priority_max_overtakes=100)
    a = submit(svc, "a0", "a1")
    assert gate.wait_reached()
    news = [submit(svc, f"n{i}") for i in range(10)]
    gate.open()
    for j in (a, *news):
        j.result(timeout=10)
    order = engine.call_texts()
    assert order.index("a1") > order.index("n9")
