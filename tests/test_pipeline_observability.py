"""Measurements, Prometheus metrics, stats, the per-job log line, the voice cache and the
asyncio event stream."""

from __future__ import annotations

import asyncio
import logging
import statistics

import pytest
from fakes import FakeEngine, Gate, make_prompt, make_settings, service_factory, submit  # noqa: F401
from prometheus_client import generate_latest

from cosyweb.errors import BusyError
from cosyweb.pipeline import TTSService
from cosyweb.pipeline.voices import VoiceCache

pytestmark = pytest.mark.timeout(30)


def test_status_metrics_and_stats_after_a_few_jobs(service_factory):
    engine = FakeEngine(n_chunks=2, chunk_samples=800)  # 0.1 s of audio per segment at 16 kHz
    gate = engine.on("a", before=Gate()).before
    engine.on("boom", error=RuntimeError("x"))
    svc = service_factory(engine, concurrency=1, max_active_jobs=1, max_queue=1)
    a = submit(svc, "a")
    assert gate.wait_reached()
    b = submit(svc, "b")
    with pytest.raises(BusyError):
        submit(svc, "refused")
    b.cancel()
    gate.open()
    a.result(timeout=10)
    c = submit(svc, "c0", "c1")
    c.result(timeout=10)
    failed = submit(svc, "boom")
    failed.wait(timeout=10)
    d = submit(svc, "d")
    d.result(timeout=10)

    info = c.status_info
    assert (info.job_id, info.engine, info.sample_rate, info.n_segments) == (c.id, "fake", 16000, 2)
    assert info.duration_s == pytest.approx(0.2)
    assert 0 <= info.queue_wait_ms <= info.first_chunk_ms <= info.total_ms
    assert info.rtf > 0 and info.to_dict()["rtf"] == round(info.rtf, 4)
    assert failed.status_info.duration_s == 0 and failed.status == "failed"

    m = svc.metrics
    assert m.value("cosyweb_jobs_admitted_total") == 5
    assert m.value("cosyweb_jobs_refused_busy_total", {"reason": "queue_full"}) == 1
    assert m.value("cosyweb_jobs_completed_total") == 3
    assert m.value("cosyweb_jobs_failed_total") == 1
    assert m.value("cosyweb_jobs_cancelled_total") == 1
    assert m.value("cosyweb_jobs_timeout_total") == 0
    assert m.value("cosyweb_queue_wait_seconds_count") == 4  # every job that got a slot
    assert m.value("cosyweb_first_chunk_seconds_count") == 3
    assert m.value("cosyweb_job_total_seconds_count") == 3
    assert m.value("cosyweb_job_rtf_count") == 3
    assert m.value("cosyweb_batch_size_count") == len(engine.calls) == 5
    assert m.value("cosyweb_engine_errors_total", {"kind": "engine"}) == 1
    assert m.value("cosyweb_queue_depth") == 0 and m.value("cosyweb_active_jobs") == 0
    assert m.value("cosyweb_ready") == 1 and m.value("cosyweb_healthy") == 1

    stats = svc.stats()
    expected_median = statistics.median(j.status_info.first_chunk_ms for j in (a, c, d))
    assert stats["median_first_chunk_ms"] == round(expected_median, 1)
    assert {k: stats[k] for k in ("completed", "failed", "cancelled", "refused", "admitted", "timeout")} == {
        "completed": 3, "failed": 1, "cancelled": 1, "refused": 1, "admitted": 5, "timeout": 0,
    }
    assert stats["queue_depth"] == 0 and stats["active_jobs"] == 0 and stats["ready"] is True
    text = generate_latest(svc.metrics_registry).decode()
    for name in ("cosyweb_queue_depth", "cosyweb_active_jobs", "cosyweb_first_chunk_seconds_bucket", "cosyweb_job_rtf_bucket"):
        assert name in text


def test_each_service_has_its_own_registry(service_factory):
    one, two = service_factory(FakeEngine()), service_factory(FakeEngine())
    submit(one, "a").result(timeout=10)
    assert one.metrics_registry is not two.metrics_registry
    assert one.metrics.value("cosyweb_jobs_completed_total") == 1
    assert two.metrics.value("cosyweb_jobs_completed_total") == 0
    assert two.stats()["median_first_chunk_ms"] is None


def test_one_log_line_per_job_without_text_or_audio(service_factory, caplog):
    svc = service_factory(FakeEngine())
    secret = "这是一段私密的文本"
    with caplog.at_level(logging.INFO, logger="cosyweb.pipeline"):
        job = submit(svc, secret)
        job.result(timeout=10)
    lines = [r for r in caplog.records if r.getMessage().startswith("job ")]
    assert len(lines) == 1
    record = lines[0].cosyweb_job
    assert record["job_id"] == job.id and record["outcome"] == "done" and record["engine"] == "fake"
    assert record["text_chars"] == len(secret) and record["audio_s"] == pytest.approx(job.status_info.duration_s, abs=1e-3)
    assert {"wait_ms", "first_chunk_ms", "rtf"} <= record.keys()
    assert secret not in caplog.text


def test_voice_cache_is_a_bounded_lru(service_factory):
    engine = FakeEngine()
    svc = service_factory(engine, voice_cache_size=2)
    prompts = [make_prompt(seed=i) for i in range(3)]
    for i in (0, 1, 2, 0):  # voice 0 was evicted by voice 2 and is prepared again
        submit(svc, f"t{i}", prompt=prompts[i]).result(timeout=10)
    assert len(engine.prepared) == 4
    submit(svc, "again", prompt=prompts[2]).result(timeout=10)  # still cached
    assert len(engine.prepared) == 4 and len(svc.voice_cache) == 2
    submit(svc, "other text", prompt=prompts[2], prompt_text="transcript").result(timeout=10)
    assert len(engine.prepared) == 5  # prompt text is part of the key


def test_concurrent_jobs_with_one_voice_prepare_it_once(service_factory):
    engine = FakeEngine(concurrency=2)
    gate = engine.on("prepare:shared", prepare_gate=Gate()).prepare_gate
    svc = service_factory(engine)
    prompt = make_prompt(seed=7)
    jobs = [submit(svc, f"s{i}", prompt=prompt, prompt_text="shared") for i in range(2)]
    assert gate.wait_reached()
    gate.open()
    for j in jobs:
        j.result(timeout=10)
    assert len(engine.prepared) == 1


def test_voice_cache_unit_eviction_and_failures():
    cache = VoiceCache(max_size=2)
    made = []

    def factory(k):
        def f():
            made.append(k)
            return k
        return f

    for k in ("a", "b", "a", "c"):  # "a" refreshed, so "b" is the least recently used
        cache.get_or_create(k, factory(k))
    assert cache.keys() == ["a", "c"] and made == ["a", "b", "c"]

    def boom():
        raise ValueError("bad prompt")

    with pytest.raises(ValueError):
        cache.get_or_create("d", boom)
    assert "d" not in cache and cache.get_or_create("d", factory("d")) == ("d", False)


def test_async_events_match_the_blocking_iterator(service_factory):
    engine = FakeEngine(n_chunks=3)
    gate = engine.on("a0", before=Gate()).before
    svc = service_factory(engine)

    async def main():
        job = submit(svc, "a0", "a1")

        async def consume():
            return [(e.kind, e.segment_index) async for e in job.aevents()]

        tasks = [asyncio.create_task(consume()) for _ in range(2)]
        await asyncio.sleep(0)  # both consumers are now parked on futures, not threads
        gate.open()
        return job, await asyncio.gather(*tasks)

    job, (first, second) = asyncio.run(main())
    sync = [(e.kind, e.segment_index) for e in job.events(timeout=10)]
    assert first == second == sync
    assert [k for k, _ in sync] == ["started"] + ["chunk"] * 6 + ["done"]
    assert [i for k, i in sync if k == "chunk"] == [0, 0, 0, 1, 1, 1]


def test_async_consumer_can_go_away_and_cancel(service_factory):
    engine = FakeEngine()
    gate = engine.on("a", before=Gate()).before
    svc = service_factory(engine)

    async def main():
        job = submit(svc, "a")
        seen = []

        async def consume():
            async for e in job.aevents():
                seen.append(e.kind)

        task = asyncio.create_task(consume())
        await asyncio.sleep(0)
        await asyncio.sleep(0)
        task.cancel()  # the client disconnected
        with pytest.raises(asyncio.CancelledError):
            await task
        job.cancel("client_gone")
        return job, seen

    job, seen = asyncio.run(main())
    assert seen == ["started"] and job.status == "cancelled"
    assert job._async_waiters == []
    gate.open()
    submit(svc, "b").result(timeout=10)  # the slot is free for the next client


def test_start_loads_and_warms_up_then_ready():
    engine = FakeEngine()
    svc = TTSService(engine, make_settings(warmup=True))
    assert not svc.ready and svc.healthy
    svc.start()
    try:
        assert engine.loaded and engine.warmed and svc.ready
        assert svc.capabilities is engine.capabilities and svc.engine_name == "fake"
        assert svc.concurrency == 1 and svc.sample_rate == 16000
    finally:
        svc.shutdown(grace_s=0)
    assert not svc.ready and engine.closed


def test_prompt_fingerprint_is_memoised_per_live_prompt():
    import gc

    from cosyweb.pipeline import voices

    prompt = make_prompt(seed=3)
    key = voices.voice_key(prompt, "text")
    assert key.startswith(prompt.fingerprint + ":") and id(prompt) in voices._fingerprints
    assert voices.voice_key(prompt, "text") == key and voices.voice_key(prompt, "other") != key
    pid = id(prompt)
    del prompt
    gc.collect()
    assert pid not in voices._fingerprints  # no growth over a soak of new voices
