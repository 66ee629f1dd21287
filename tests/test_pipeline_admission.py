"""Admission control of the pipeline: bounded queue in jobs and audio seconds, per-client
limits, busy refusals (bilingual, immediate, harmless to others), queue positions, input
validation at submit. Deterministic: engine calls are held at gates, never timed."""

from __future__ import annotations

import threading

import numpy as np
import pytest
from fakes import FakeEngine, Gate, make_prompt, service_factory, submit, value_for  # noqa: F401

from cosyweb.errors import BusyError, ClientLimitError, InvalidInputError, UnsupportedOptionError
from cosyweb.options import SynthesisOptions

pytestmark = pytest.mark.timeout(30)

BUSY_TEXT = "系统繁忙，请稍后再试 / System busy, please try again later"


def test_queue_full_in_jobs_is_refused_with_bilingual_busy_and_estimates(service_factory):
    engine = FakeEngine()
    gate = engine.on("a", before=Gate("a")).before
    svc = service_factory(engine, concurrency=1, max_active_jobs=1, max_queue=2)
    a = submit(svc, "a")
    assert gate.wait_reached()
    b, c = submit(svc, "b"), submit(svc, "c")
    with pytest.raises(BusyError) as exc_info:
        submit(svc, "d")
    err = exc_info.value
    assert str(err) == BUSY_TEXT
    assert err.http_status == 503
    assert err.details["reason"] == "queue_full"
    assert err.details["position"] == 3 and err.queue_depth == 2
    assert err.retry_after_s >= 1 and err.details["estimated_wait_s"] > 0
    gate.open()
    for job in (a, b, c):
        audio, status = job.result(timeout=10)
        assert status.n_segments == 1
        assert np.all(audio == np.float32(value_for(job.segments[0].text)))
    assert "d" not in engine.call_texts()
    assert svc.stats()["refused"] == 1 and svc.stats()["completed"] == 3


def test_queue_limit_counts_estimated_audio_seconds_not_requests(service_factory):
    engine = FakeEngine()
    gate = engine.on("run", before=Gate()).before
    # 4.5 syllables per second: 27 syllables = 6 s, 4 syllables ~ 0.9 s
    svc = service_factory(engine, concurrency=1, max_active_jobs=1, max_queue=10, max_queue_audio_s=10.0)
    submit(svc, "run")
    assert gate.wait_reached()
    long1 = submit(svc, "long1", syllables=[27])
    with pytest.raises(BusyError) as exc_info:
        submit(svc, "long2", syllables=[27])  # 6 + 6 > 10 audio seconds, though only 1 job waits
    assert exc_info.value.details["reason"] == "queue_audio_full"
    short = submit(svc, "short", syllables=[4])  # 6 + 0.9 <= 10: still admitted
    assert svc.stats()["queued_audio_s"] == pytest.approx(6.9, abs=0.05)
    gate.open()
    long1.result(timeout=10)
    short.result(timeout=10)
    assert svc.stats()["queued_audio_s"] == 0


@pytest.mark.parametrize("max_active_jobs, n_accepted", [(1, 2), (None, 3)])  # None: the default, 2 x concurrency
def test_burst_of_six_with_queue_one_concurrency_one(service_factory, max_active_jobs, n_accepted):
    engine = FakeEngine()
    gate = engine.on("*", before=Gate("all")).before
    svc = service_factory(engine, concurrency=1, max_active_jobs=max_active_jobs, max_queue=1)
    barrier = threading.Barrier(6)
    accepted, refused, other = [], [], []

    def client(i: int) -> None:
        barrier.wait()
        try:
            accepted.append(submit(svc, f"burst{i}", client_id=f"tab{i}"))
        except BusyError as exc:
            refused.append(exc)
        except Exception as exc:  # pragma: no cover - would be a bug
            other.append(exc)

    threads = [threading.Thread(target=client, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not other
    assert len(accepted) == n_accepted and len(refused) == 6 - n_accepted
    assert all(str(e) == BUSY_TEXT for e in refused)
    gate.open()
    for job in accepted:
        job.result(timeout=10)
        assert job.status == "done"
    stats = svc.stats()
    assert (stats["completed"], stats["refused"], stats["admitted"]) == (n_accepted, 6 - n_accepted, n_accepted)


def test_refusal_does_not_touch_the_engine_or_other_jobs(service_factory):
    engine = FakeEngine()
    gate = engine.on("*", before=Gate()).before
    svc = service_factory(engine, concurrency=1, max_active_jobs=1, max_queue=1)
    running = submit(svc, "r")
    assert gate.wait_reached()  # the only worker is now inside an engine call, held
    queued = submit(svc, "q")
    calls_before = list(engine.calls)
    for i in range(5):  # would deadlock here if submit waited on the engine
        with pytest.raises(BusyError):
            submit(svc, f"x{i}")
    assert engine.calls == calls_before
    assert queued.position() == 1 and running.position() == 0
    gate.open()
    assert running.result(timeout=10)[1].n_segments == 1
    assert queued.result(timeout=10)[1].n_segments == 1


def test_per_client_limit(service_factory):
    engine = FakeEngine()
    gate = engine.on("*", before=Gate()).before
    svc = service_factory(engine, concurrency=1, max_active_jobs=4, max_queue=4, per_client_jobs=1)
    first = submit(svc, "x1", client_id="x")
    with pytest.raises(ClientLimitError) as exc_info:
        submit(svc, "x2", client_id="x")
    assert isinstance(exc_info.value, BusyError)
    assert exc_info.value.code == "busy.client_limit"
    assert "系统繁忙" in exc_info.value.zh and "System busy" in exc_info.value.en
    assert svc.metrics.value("cosyweb_jobs_refused_busy_total", {"reason": "client_limit"}) == 1
    other = submit(svc, "y1", client_id="y")  # another client is not affected
    anon = [submit(svc, f"n{i}") for i in range(2)]  # client_id=None is not limited
    gate.open()
    for job in (first, other, *anon):
        job.result(timeout=10)
    again = submit(svc, "x3", client_id="x")  # the slot of client x is free again
    again.result(timeout=10)
    assert again.status == "done"


def test_queue_positions_and_queued_events(service_factory):
    engine = FakeEngine()
    gate = engine.on("*", before=Gate()).before
    svc = service_factory(engine, concurrency=1, max_active_jobs=1, max_queue=5)
    a = submit(svc, "a")
    assert gate.wait_reached()
    b, c, d = (submit(svc, t) for t in "bcd")
    assert [j.position() for j in (a, b, c, d)] == [0, 1, 2, 3]
    assert [j.status for j in (a, b, c, d)] == ["running", "queued", "queued", "queued"]
    b.cancel("stop")
    assert [c.position(), d.position(), b.position()] == [1, 2, None]
    gate.open()
    for j in (a, c, d):
        j.result(timeout=10)
    d_positions = [e.position for e in d.events() if e.kind == "queued"]
    assert d_positions == [3, 2, 1]
    kinds = [e.kind for e in d.events()]
    assert kinds[:4] == ["queued", "queued", "queued", "started"] and kinds[-1] == "done"
    assert d.position() is None


def test_invalid_options_and_empty_text_are_refused_before_admission(service_factory):
    svc = service_factory(FakeEngine())
    with pytest.raises(UnsupportedOptionError) as exc_info:
        svc.submit(make_prompt(), "你好", SynthesisOptions(dialect="sichuan"), segments=[])
    assert "四川话" in exc_info.value.zh
    with pytest.raises(InvalidInputError) as exc_info:
        svc.submit(make_prompt(), "", SynthesisOptions(), segments=[])
    assert exc_info.value.code == "text.empty"
    assert svc.stats()["admitted"] == 0


def test_prompt_text_required_when_engine_says_so(service_factory):
    svc = service_factory(FakeEngine(needs_prompt_text=True))
    with pytest.raises(InvalidInputError) as exc_info:
        submit(svc, "a")
    assert exc_info.value.code == "prompt_text.required"
    job = submit(svc, "a", prompt_text="希望你以后能够做的比我还好呦。")
    assert job.result(timeout=10)[1].n_segments == 1


def test_submit_analyses_text_through_the_front_end(service_factory, monkeypatch):
    import sys
    import types

    from fakes import make_segments

    seen = {}

    def analyze(text, language=None, *, first_segment_chars, segment_chars, max_chars):
        seen.update(text=text, language=language, first=first_segment_chars, seg=segment_chars, max=max_chars)
        return make_segments("seg one", "seg two")

    fake_frontend = types.ModuleType("cosyweb.text.frontend")
    fake_frontend.analyze = analyze
    monkeypatch.setitem(sys.modules, "cosyweb.text.frontend", fake_frontend)
    engine = FakeEngine()
    svc = service_factory(engine, first_segment_chars=10, segment_chars=50, max_text_chars=300)
    job = svc.submit(make_prompt(), "raw text", SynthesisOptions(language="en"))
    assert job.result(timeout=10)[1].n_segments == 2
    assert seen == dict(text="raw text", language="en", first=10, seg=50, max=300)
    assert engine.call_texts() == ["seg one", "seg two"]


def test_not_started_service_refuses_busy():
    from fakes import make_settings

    from cosyweb.pipeline import TTSService

    svc = TTSService(FakeEngine(), make_settings())
    assert not svc.ready
    with pytest.raises(BusyError) as exc_info:
        submit(svc, "a")
    assert exc_info.value.details["reason"] == "not_ready"


def test_precheck_refuses_early_without_admitting(service_factory):
    engine = FakeEngine()
    gate = engine.on("*", before=Gate()).before
    svc = service_factory(engine, concurrency=1, max_active_jobs=1, max_queue=0, per_client_jobs=1)
    svc.precheck("x")  # free slot: passes, admits nothing
    assert svc.stats()["admitted"] == 0
    job = submit(svc, "a", client_id="x")
    with pytest.raises(ClientLimitError):
        svc.precheck("x")
    with pytest.raises(BusyError) as exc_info:
        svc.precheck("y")
    assert exc_info.value.details["reason"] == "queue_full"
    assert svc.stats()["refused"] == 2
    gate.open()
    job.result(timeout=10)
    svc.precheck("y")
