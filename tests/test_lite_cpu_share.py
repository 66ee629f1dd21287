"""The lite engine's CPU gate: later segments step aside for first segments (cpu_share)."""

from __future__ import annotations

import dataclasses
import threading

import pytest

from cosyweb.engines.lite import adapt, cpu_share, create
from cosyweb.options import SynthesisOptions
from cosyweb.text.types import TextSegment, Token, TokenKind

pytestmark = pytest.mark.timeout(60)


def test_no_first_segment_means_no_wait():
    assert cpu_share.first_segments_running() == 0
    assert cpu_share.yield_to_first_segments(max_wait_s=5.0) == 0.0


def test_a_later_segment_waits_until_the_first_segment_ends():
    inside, release, order = threading.Event(), threading.Event(), []

    def first():
        with cpu_share.first_segment():
            inside.set()
            release.wait(10)
            order.append("first done")

    t = threading.Thread(target=first)
    t.start()
    assert inside.wait(10)
    assert cpu_share.first_segments_running() == 1
    threading.Timer(0.2, release.set).start()
    waited = cpu_share.yield_to_first_segments(max_wait_s=10.0)
    order.append("later resumes")
    t.join(10)
    assert order == ["first done", "later resumes"]
    assert 0.0 < waited < 10.0
    assert cpu_share.first_segments_running() == 0


def test_the_wait_is_bounded_so_nothing_starves():
    release = threading.Event()
    inside = threading.Event()

    def first():
        with cpu_share.first_segment():
            inside.set()
            release.wait(10)

    t = threading.Thread(target=first)
    t.start()
    try:
        assert inside.wait(10)
        waited = cpu_share.yield_to_first_segments(max_wait_s=0.05)
        assert waited >= 0.05 and cpu_share.first_segments_running() == 1  # gave up, first still running
    finally:
        release.set()
        t.join(10)


def test_the_count_is_restored_when_a_first_segment_fails():
    with pytest.raises(RuntimeError):
        with cpu_share.first_segment():
            raise RuntimeError("boom")
    assert cpu_share.first_segments_running() == 0


def test_engine_marks_first_segments_and_later_ones_yield(monkeypatch, shared_prompts):
    from cosyweb.audio.prompt import load_prompt

    engine = create(None)
    engine.load()
    voice = engine.prepare_voice(load_prompt(str(shared_prompts / "cosyvoice__zero_shot_prompt.wav")))
    tokens = [Token(TokenKind.HANZI, c, "zh", p) for c, p in zip("你好世界", ["ni3", "hao3", "shi4", "jie4"])]
    first = TextSegment(0, "你好世界", "你好世界", tokens, 4)
    later = dataclasses.replace(first, index=1)

    yields, running_at_resynth = [], []
    monkeypatch.setattr(cpu_share, "yield_to_first_segments", lambda *a, **k: yields.append(1) or 0.0)
    real_resynth = adapt.resynthesize

    def spy(*a, **k):
        running_at_resynth.append(cpu_share.first_segments_running())
        return real_resynth(*a, **k)

    monkeypatch.setattr(adapt, "resynthesize", spy)
    a = list(engine.synthesize(voice, first, SynthesisOptions(seed=1)))[0]
    assert yields == [] and running_at_resynth == [1]  # a first segment is counted, never waits
    b = list(engine.synthesize(voice, later, SynthesisOptions(seed=1)))[0]
    assert len(yields) == 2 and running_at_resynth == [1, 0]  # before analysis and before resynthesis
    assert (a == b).all()  # the gate changes timing only, never the audio
    assert cpu_share.first_segments_running() == 0
