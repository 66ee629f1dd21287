"""Registered prompts and background voice preparation (prewarm): the bounded prompt store,
the prewarm running on the workers as low-priority work (after new jobs' first segments,
never more than a bounded number pending), single-flight with jobs, failures recorded.
Deterministic: engine calls are held at gates, never timed."""

from __future__ import annotations

import threading

import pytest
from fakes import FakeEngine, Gate, make_prompt, service_factory, submit, wait_until  # noqa: F401

from cosyweb.errors import InvalidInputError
from cosyweb.pipeline.prompts import PromptNotFoundError, PromptStore

pytestmark = pytest.mark.timeout(30)


class OrderedFake(FakeEngine):
    """Records voice preparations and segment calls in one list, in the order they start."""

    def __init__(self, **kw) -> None:
        super().__init__(**kw)
        self.order: list[str] = []
        self._order_lock = threading.Lock()

    def prepare_voice(self, prompt, prompt_text: str = ""):
        with self._order_lock:
            self.order.append(f"prepare:{prompt_text}")
        return super().prepare_voice(prompt, prompt_text)

    def synthesize(self, voice, segment, options):
        with self._order_lock:
            self.order.append(segment.text)
        yield from super().synthesize(voice, segment, options)


def test_store_is_a_bounded_lru_with_random_ids():
    store = PromptStore(max_size=2)
    a = store.add(make_prompt(1), "", "ka")
    b = store.add(make_prompt(2), "t", "kb")
    assert len(a.prompt_id) == 32 and a.prompt_id != b.prompt_id
    store.get(a.prompt_id)  # a is now the most recently used
    c = store.add(make_prompt(3), "", "kc")  # evicts b
    with pytest.raises(PromptNotFoundError) as exc_info:
        store.get(b.prompt_id)
    assert exc_info.value.http_status == 404 and "prompt" in exc_info.value.en.lower()
    assert store.get(c.prompt_id).voice_key == "kc" and len(store) == 2
    assert store.remove(a.prompt_id) and not store.remove(a.prompt_id)
    again = store.add(make_prompt(1), "", "ka")  # the same audio gets a new, unrelated id
    assert again.prompt_id != a.prompt_id


def test_registered_voice_is_prepared_in_the_background_then_reused(service_factory):
    engine = FakeEngine()
    svc = service_factory(engine)
    pid = svc.register_prompt(make_prompt(5), "transcript")
    assert wait_until(lambda: svc.voice_state(pid) == "ready")
    assert len(engine.prepared) == 1
    entry = svc.get_prompt(pid)
    job = submit(svc, "x", prompt=entry.prompt, prompt_text=entry.prompt_text)
    job.result(timeout=10)
    assert len(engine.prepared) == 1  # the job found the prepared voice
    assert svc.metrics.value("cosyweb_voice_prewarms_total", {"outcome": "prepared"}) == 1
    assert svc.stats()["prompts_registered"] == 1


def test_prewarm_waits_behind_first_segments_of_new_jobs(service_factory):
    engine = OrderedFake()
    gate = engine.on("a0", before=Gate("a0")).before
    svc = service_factory(engine, concurrency=1, max_active_jobs=2)
    a = submit(svc, "a0", "a1", prompt=make_prompt(1), prompt_text="A")
    assert gate.wait_reached()  # the only worker is busy
    pid = svc.register_prompt(make_prompt(2), "P")  # prewarm queued now...
    assert svc.voice_state(pid) == "pending"
    b = submit(svc, "b0", prompt=make_prompt(3), prompt_text="B")  # ...before this first segment
    gate.open()
    a.result(timeout=10)
    b.result(timeout=10)
    assert wait_until(lambda: svc.voice_state(pid) == "ready")
    # b0 (first segment, class 0) overtakes the older prewarm; the prewarm (class 1, older)
    # goes before a1, which became ready after it
    assert engine.order == ["prepare:A", "a0", "prepare:B", "b0", "prepare:P", "a1"]


def test_pending_prewarms_are_bounded(service_factory):
    engine = FakeEngine()
    gate = engine.on("*", before=Gate()).before
    svc = service_factory(engine, concurrency=1, max_active_jobs=1, max_queue=1)  # at most 2 pending
    job = submit(svc, "hold")
    assert gate.wait_reached()
    pids = [svc.register_prompt(make_prompt(10 + i), "") for i in range(4)]
    assert [svc.voice_state(p) for p in pids] == ["pending", "pending", "not_started", "not_started"]
    assert svc.stats()["prewarms_pending"] == 2
    assert svc.metrics.value("cosyweb_voice_prewarms_total", {"outcome": "skipped"}) == 2
    gate.open()
    job.result(timeout=10)
    assert wait_until(lambda: svc.voice_state(pids[1]) == "ready")
    assert svc.prewarm(pids[2])  # queued again on request
    assert wait_until(lambda: svc.voice_state(pids[2]) == "ready")
    assert not svc.prewarm(pids[2])  # already cached: nothing to do


def test_job_arriving_during_its_prewarm_shares_the_preparation(service_factory):
    engine = FakeEngine(concurrency=2)
    gate = engine.on("prepare:shared", prepare_gate=Gate()).prepare_gate
    svc = service_factory(engine)
    pid = svc.register_prompt(make_prompt(7), "shared")
    assert gate.wait_reached()  # the prewarm is inside prepare_voice on one worker
    entry = svc.get_prompt(pid)
    job = submit(svc, "s0", prompt=entry.prompt, prompt_text="shared")  # its first segment: the other worker
    assert svc.voice_state(pid) == "pending"
    gate.open()
    job.result(timeout=10)
    assert len(engine.prepared) == 1


def test_a_failed_prewarm_is_recorded_and_the_job_reports_it(service_factory):
    engine = FakeEngine()
    engine.on("prepare:bad", error=InvalidInputError("prompt.no_voice", "提示音频中没有人声", "No voiced speech in the prompt"))
    svc = service_factory(engine)
    pid = svc.register_prompt(make_prompt(9), "bad")
    assert wait_until(lambda: svc.voice_state(pid) == "failed")
    assert svc.get_prompt(pid).voice_error["code"] == "prompt.no_voice"
    assert svc.metrics.value("cosyweb_voice_prewarms_total", {"outcome": "failed"}) == 1
    entry = svc.get_prompt(pid)
    job = submit(svc, "x", prompt=entry.prompt, prompt_text="bad")
    job.wait(timeout=10)
    assert job.status == "failed" and job.error.code == "prompt.no_voice"
    assert svc.healthy


def test_no_prewarm_once_shutting_down(service_factory):
    engine = FakeEngine()
    svc = service_factory(engine)
    svc.shutdown(grace_s=0)
    pid = svc.register_prompt(make_prompt(4), "")
    assert svc.voice_state(pid) == "not_started" and engine.prepared == []
