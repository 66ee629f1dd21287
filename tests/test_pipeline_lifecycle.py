"""Job life cycle: cancellation at every stage frees the slot, timeouts, error and OOM
isolation (the worker carries on), the watchdog, and graceful shutdown."""

from __future__ import annotations

import threading

import numpy as np
import pytest
from fakes import FakeEngine, Gate, OutOfMemoryError, service_factory, submit, value_for, wait_until  # noqa: F401

from cosyweb.errors import (
    BusyError,
    EngineError,
    GPUMemoryError,
    InvalidInputError,
    JobCancelledError,
    JobTimeoutError,
)

pytestmark = pytest.mark.timeout(30)


def _kinds(job) -> list[str]:
    return [e.kind for e in job.events(timeout=10)]


# --- cancellation ------------------------------------------------------------------------
def test_cancel_while_queued(service_factory):
    engine = FakeEngine()
    gate = engine.on("a", before=Gate()).before
    svc = service_factory(engine, concurrency=1, max_active_jobs=1, max_queue=3)
    a = submit(svc, "a")
    assert gate.wait_reached()
    b, c = submit(svc, "b"), submit(svc, "c")
    b.cancel("client_gone")
    assert b.status == "cancelled" and b.position() is None
    with pytest.raises(JobCancelledError) as exc_info:
        b.result(timeout=10)
    assert exc_info.value.details["reason"] == "client_gone"
    assert _kinds(b) == ["queued", "error"]
    assert svc.stats()["queue_depth"] == 1 and c.position() == 1
    gate.open()
    a.result(timeout=10)
    c.result(timeout=10)
    assert engine.call_texts() == ["a", "c"]  # b never reached the engine


def test_cancel_between_segments_frees_the_slot(service_factory):
    engine = FakeEngine()
    ga, gb = Gate("a0"), Gate("b0")
    engine.on("a0", before=ga)
    engine.on("b0", before=gb)
    svc = service_factory(engine, concurrency=1, max_active_jobs=2, max_queue=2)
    a = submit(svc, "a0", "a1", "a2")
    assert ga.wait_reached()
    b = submit(svc, "b0")
    c = submit(svc, "c0")  # waits: both slots taken
    assert c.status == "queued"
    ga.open()
    assert gb.wait_reached()  # a0 done, a1 queued, the worker is on b0
    a.cancel("stop")
    assert a.status == "cancelled"
    assert c.status == "running"  # the slot was handed on at once
    gb.open()
    b.result(timeout=10)
    c.result(timeout=10)
    assert engine.call_texts() == ["a0", "b0", "c0"]  # a1 and a2 never ran
    assert _kinds(a) == ["started", "chunk", "chunk", "error"]
    assert svc.stats()["active_jobs"] == 0


def test_cancel_mid_stream_stops_at_the_next_chunk(service_factory):
    engine = FakeEngine(n_chunks=4)
    mid = Gate("after chunk 0")
    engine.on("a0", after={0: mid})
    svc = service_factory(engine, concurrency=1, max_active_jobs=1, max_queue=2)
    a = submit(svc, "a0", "a1")
    b = submit(svc, "b0")
    assert mid.wait_reached()  # chunk 0 was streamed; the engine is producing chunk 1
    a.cancel("client_gone")
    assert b.status == "running"
    mid.open()
    b.result(timeout=10)
    assert engine.yielded["a0"] == 2  # the generator was closed after the chunk in progress
    assert "a1" not in engine.call_texts()
    assert _kinds(a) == ["started", "chunk", "error"]
    assert len(a.audio()) == engine.chunk_samples


def test_cancel_after_done_is_a_no_op(service_factory):
    svc = service_factory(FakeEngine())
    job = submit(svc, "a")
    audio, status = job.result(timeout=10)
    job.cancel()
    assert job.status == "done" and svc.stats()["cancelled"] == 0
    assert status.duration_s == pytest.approx(len(audio) / 16000)


# --- timeouts -----------------------------------------------------------------------------
def test_timeout_fails_the_job_and_frees_the_slot(service_factory):
    engine = FakeEngine()
    hang = engine.on("slow", before=Gate("hang")).before
    svc = service_factory(engine, concurrency=1, max_active_jobs=1, max_queue=2)
    slow = submit(svc, "slow", timeout_s=0.05)
    nxt = submit(svc, "next")
    assert hang.wait_reached()
    assert slow.wait(timeout=10)
    assert slow.status == "timeout"
    with pytest.raises(JobTimeoutError) as exc_info:
        slow.result()
    assert exc_info.value.http_status == 504 and "0.05" in exc_info.value.en
    assert nxt.status == "running"  # its slot was handed on before the engine returned
    hang.open()
    nxt.result(timeout=10)
    assert slow.audio().size == 0  # the late chunk was dropped
    assert svc.stats()["timeout"] == 1


def test_default_deadline_comes_from_settings(service_factory):
    engine = FakeEngine()
    hang = engine.on("slow", before=Gate()).before
    svc = service_factory(engine, job_timeout_s=0.05)
    job = submit(svc, "slow")
    assert job.wait(timeout=10) and job.status == "timeout"
    hang.open()


# --- error isolation -------------------------------------------------------------------
def test_exception_fails_only_its_job_with_a_generic_message(service_factory, caplog):
    engine = FakeEngine()
    engine.on("boom", error=ValueError("secret internal detail"))
    svc = service_factory(engine, concurrency=1, max_active_jobs=3, max_queue=3)
    jobs = [submit(svc, "ok1"), submit(svc, "boom"), submit(svc, "ok2")]
    with pytest.raises(EngineError) as exc_info:
        jobs[1].result(timeout=10)
    assert "secret" not in str(exc_info.value) and exc_info.value.code == "engine.failed"
    assert "secret internal detail" in caplog.text  # the traceback is logged for us
    for j in (jobs[0], jobs[2]):
        assert np.all(j.result(timeout=10)[0] == np.float32(value_for(j.segments[0].text)))
    later = submit(svc, "ok3")  # the worker carries on
    later.result(timeout=10)
    assert svc.healthy and jobs[1].status == "failed"
    assert svc.metrics.value("cosyweb_engine_errors_total", {"kind": "engine"}) == 1


def test_out_of_memory_becomes_gpu_memory_error(service_factory):
    engine = FakeEngine()
    engine.on("big", error=OutOfMemoryError())
    svc = service_factory(engine)
    with pytest.raises(GPUMemoryError):
        submit(svc, "big").result(timeout=10)
    submit(svc, "small").result(timeout=10)
    assert svc.metrics.value("cosyweb_engine_errors_total", {"kind": "oom"}) == 1


def test_prompt_rejected_by_engine_reaches_the_user_as_is(service_factory):
    engine = FakeEngine()
    engine.on("prepare:bad", error=InvalidInputError("prompt.no_voice", "提示音频中没有人声", "No voiced speech in the prompt"))
    svc = service_factory(engine)
    with pytest.raises(InvalidInputError) as exc_info:
        submit(svc, "a", prompt_text="bad").result(timeout=10)
    assert exc_info.value.code == "prompt.no_voice"
    assert svc.metrics.value("cosyweb_engine_errors_total", {"kind": "input"}) == 1
    submit(svc, "b").result(timeout=10)


# --- watchdog ----------------------------------------------------------------------------
def test_watchdog_marks_unhealthy_while_a_call_is_stuck(service_factory):
    engine = FakeEngine()
    hang = engine.on("stuck", before=Gate()).before
    svc = service_factory(engine, watchdog_s=0.05)
    assert svc.healthy
    job = submit(svc, "stuck")
    assert hang.wait_reached()
    assert wait_until(lambda: not svc.healthy)
    assert svc.stats()["healthy"] is False
    assert svc.metrics.value("cosyweb_healthy") == 0
    hang.open()
    job.result(timeout=10)
    assert svc.healthy


# --- graceful shutdown ----------------------------------------------------------------------
def test_shutdown_lets_running_jobs_finish_and_refuses_new(service_factory):
    engine = FakeEngine()
    gate = engine.on("run", before=Gate()).before
    svc = service_factory(engine, concurrency=1, max_active_jobs=1, max_queue=3)
    running = submit(svc, "run", "run2")
    queued = submit(svc, "wait")
    assert gate.wait_reached()
    stopper = threading.Thread(target=svc.shutdown, kwargs={"grace_s": 30})
    stopper.start()
    assert wait_until(lambda: not svc.ready)
    with pytest.raises(BusyError) as exc_info:
        submit(svc, "new")
    assert exc_info.value.details["reason"] == "shutting_down"
    assert queued.wait(timeout=10) and queued.error.details["reason"] == "shutdown"
    assert stopper.is_alive() and not engine.closed  # still waiting for the running job
    gate.open()
    stopper.join(timeout=20)
    assert not stopper.is_alive()
    assert running.status == "done" and running.result()[1].n_segments == 2
    assert engine.closed


def test_shutdown_cancels_jobs_still_running_after_the_grace_period(service_factory):
    engine = FakeEngine()
    gate = engine.on("run", before=Gate()).before
    svc = service_factory(engine)
    job = submit(svc, "run")
    assert gate.wait_reached()
    stopper = threading.Thread(target=svc.shutdown, kwargs={"grace_s": 0.01})
    stopper.start()
    assert job.wait(timeout=10)
    assert job.status == "cancelled" and job.error.details["reason"] == "shutdown"
    gate.open()  # let the worker leave the engine so it can stop
    stopper.join(timeout=20)
    assert not stopper.is_alive() and engine.closed


def test_a_segment_without_audio_still_completes(service_factory):
    engine = FakeEngine()
    engine.on("silent", n_chunks=0)
    svc = service_factory(engine)
    job = submit(svc, "silent", "loud")
    audio, status = job.result(timeout=10)
    assert [e.segment_index for e in job.events() if e.kind == "chunk"] == [1, 1]
    assert status.duration_s == pytest.approx(audio.size / 16000) and status.rtf > 0
    empty = submit(svc, "silent")
    _, status = empty.result(timeout=10)
    assert status.duration_s == 0 and status.rtf == 0 and status.first_chunk_ms == 0
