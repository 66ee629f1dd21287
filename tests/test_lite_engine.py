"""The lite engine end to end: capabilities, tones, prosody options, repeatability, prompts."""

from __future__ import annotations

import threading
import warnings

import numpy as np
import pytest

from cosyweb.audio.prompt import load_prompt
from cosyweb.audio.types import PromptAudio
from cosyweb.engines.base import Voice
from cosyweb.engines.lite import SAMPLE_RATE_HZ, LiteEngine, create, render
from cosyweb.errors import EngineError, InvalidInputError, UnsupportedOptionError
from cosyweb.options import Mode, SynthesisOptions
from cosyweb.text.frontend import analyze
from cosyweb.text.types import TextSegment, Token, TokenKind

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    import pyworld

MALE_PROMPT = "mossttsd__pod_m_enhanced.wav"  # podcast, median F0 about 105 Hz
FEMALE_PROMPT = "cosyvoice__zero_shot_prompt.wav"  # median F0 about 270-310 Hz


def pinyin_segment(pinyin: str, pause_ms: int = 300) -> TextSegment:
    """A hand-built Mandarin segment: syllables, and "," for a pause."""
    tokens = [
        Token(TokenKind.PAUSE, "，", pause_ms=pause_ms) if p == "," else Token(TokenKind.HANZI, "字", "zh", p)
        for p in pinyin.split()
    ]
    return TextSegment(0, "", "", tokens, sum(t.kind == TokenKind.HANZI for t in tokens))


def f0_track(y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    x = y.astype(np.float64)
    f0, t = pyworld.dio(x, SAMPLE_RATE_HZ, f0_floor=60.0, f0_ceil=600.0, frame_period=5.0)
    return pyworld.stonemask(x, f0, t, SAMPLE_RATE_HZ), t


def median_f0(y: np.ndarray) -> float:
    f0, _ = f0_track(y)
    return float(np.median(f0[f0 > 0]))


def rms(y: np.ndarray) -> float:
    return float(np.sqrt(np.mean(y.astype(np.float64) ** 2)))


def one_chunk(engine: LiteEngine, voice: Voice, segment: TextSegment, **options) -> np.ndarray:
    chunks = list(engine.synthesize(voice, segment, SynthesisOptions(**options)))
    assert len(chunks) == 1
    return chunks[0]


@pytest.fixture(scope="module")
def engine() -> LiteEngine:
    eng = create(None)
    eng.load()
    eng.warmup()
    return eng


@pytest.fixture(scope="module")
def male(engine, shared_prompts) -> Voice:
    return engine.prepare_voice(load_prompt(str(shared_prompts / MALE_PROMPT)))


@pytest.fixture(scope="module")
def female(engine, shared_prompts) -> Voice:
    return engine.prepare_voice(load_prompt(str(shared_prompts / FEMALE_PROMPT)), "希望你以后能够做的比我还好呦。")


def test_capabilities_are_declared_honestly(engine):
    caps = engine.capabilities
    assert caps.name == "lite" and caps.sample_rate == SAMPLE_RATE_HZ == 22050
    assert caps.languages == {"zh", "yue", "en"}
    assert caps.modes == {Mode.ZERO_SHOT, Mode.CROSS_LINGUAL, Mode.INSTRUCT}
    assert caps.dialects == {"mandarin"}
    assert caps.emotions == {"none", "happy", "sad", "angry"}
    assert caps.max_batch == 1 and not caps.streaming and not caps.needs_prompt_text
    assert caps.speed and caps.volume and caps.pinyin_annotations and caps.arpabet
    assert "espeak" in caps.description_en and "CosyVoice3" in caps.description_en
    assert "CosyVoice3" in caps.description_zh
    with pytest.raises(UnsupportedOptionError) as err:
        engine.validate_options(SynthesisOptions(dialect="sichuan"))
    assert "CosyVoice3" in str(err.value)
    engine.validate_options(SynthesisOptions(mode=Mode.INSTRUCT, emotion="angry", speed=1.5, volume=0.5))


def test_profile_follows_the_prompt(male, female):
    assert male.data.gender == "male" and 90 < male.data.f0_median_hz < 125
    assert female.data.gender == "female" and 230 < female.data.f0_median_hz < 340
    assert female.data.rate_source == "transcript" and male.data.rate_source == "nuclei"
    for voice in (male, female):
        assert 0.84 <= voice.data.warp <= 1.24
        assert 2.5 <= voice.data.syllables_per_s <= 7.5
        assert voice.data.frames.shape[1] == 34 and len(voice.data.frames) > 200
        assert voice.key.startswith(voice.prompt.fingerprint + ":")
    assert male.key != female.key


def test_one_float32_chunk_of_plausible_length(engine, male):
    seg = pinyin_segment("jin1 tian1 tian1 qi4 hen3 hao3 , wo3 men5 qu4 gong1 yuan2 ba5")
    y = one_chunk(engine, male, seg)
    assert y.dtype == np.float32 and y.ndim == 1
    assert np.all(np.isfinite(y)) and np.abs(y).max() <= 1.0 and rms(y) > 0.01
    duration_s = len(y) / SAMPLE_RATE_HZ
    assert 0.5 * seg.estimated_duration_s() < duration_s < 2.0 * seg.estimated_duration_s() + 0.3


def test_pause_tokens_become_silence(engine, male):
    plain = one_chunk(engine, male, pinyin_segment("ni3 hao3 ni3 hao3"))
    paused = one_chunk(engine, male, pinyin_segment("ni3 hao3 , ni3 hao3", pause_ms=500))
    extra_s = (len(paused) - len(plain)) / SAMPLE_RATE_HZ
    assert 0.35 < extra_s < 0.8
    pause_only = one_chunk(engine, male, TextSegment(0, "", "", [Token(TokenKind.PAUSE, "。", pause_ms=400)], 0))
    assert abs(len(pause_only) / SAMPLE_RATE_HZ - 0.4) < 0.01 and not pause_only.any()


def test_same_inputs_and_seed_give_identical_samples(engine, male, female):
    seg = pinyin_segment("shi4 si4 shi2 si4 , xi1 shu1 shan1")
    a = one_chunk(engine, male, seg, seed=7)
    one_chunk(engine, female, seg, seed=3)  # something else in between
    b = one_chunk(engine, male, seg, seed=7)
    assert np.array_equal(a, b)
    c = one_chunk(engine, male, seg, seed=8)
    assert len(c) == len(a) and not np.array_equal(a, c)  # the seed picks the take (intonation variation)


def test_concurrent_calls_give_the_sequential_result(engine, male, female):
    seg = pinyin_segment("ta1 hao3 gan1 jing4 , jin1 tian1 shi4 xing1 qi1 tian1")
    expected = {name: one_chunk(engine, v, seg, seed=1) for name, v in (("m", male), ("f", female))}
    results: dict[str, list[np.ndarray]] = {"m": [], "f": []}

    def work(name, voice):
        for _ in range(2):
            results[name].append(one_chunk(engine, voice, seg, seed=1))

    threads = [threading.Thread(target=work, args=a) for a in (("m", male), ("f", female))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for name in ("m", "f"):
        assert len(results[name]) == 2
        assert all(np.array_equal(r, expected[name]) for r in results[name])


@pytest.mark.parametrize("voice_name", ["male", "female"])
def test_tone_annotation_changes_the_f0_contour_of_that_syllable(engine, voice_name, request):
    voice = request.getfixturevalue(voice_name)
    measures = {}
    for tone in ("hao3", "hao4"):
        seg = pinyin_segment(f"ta1 {tone} gan1 jing4")
        y = one_chunk(engine, voice, seg)
        # the output keeps espeak's timeline: the rendering tells where the syllable is
        r = render.render(seg, variant=voice.data.variant, rate_factor=1.0, pause_factor=1.0, seed=0,
                          const_f0_hz=voice.data.const_f0_hz)
        unit = r.units[1]
        f0, t = f0_track(y)
        sel = (t >= unit.start_s) & (t < unit.end_s) & (f0 > 0)
        assert sel.sum() >= 8
        log_f0 = np.log(f0[sel])
        measures[tone] = (np.exp(log_f0[: len(log_f0) // 2].mean()), np.polyfit(t[sel], log_f0, 1)[0])
    (start3, slope3), (start4, slope4) = measures["hao3"], measures["hao4"]
    assert start4 > 1.2 * start3  # tone 4 starts high (51), half-third tone 3 low (21)
    assert slope4 < slope3 - 1.0  # and falls much faster (natural-log F0 per second)


def test_cantonese_tones_set_the_pitch(engine, female):
    def seg(syllable):
        return TextSegment(0, "", "", [Token(TokenKind.HANZI, "詩", "yue", "si1", jyutping=syllable)] * 3, 3)

    high = median_f0(one_chunk(engine, female, seg("si1")))
    low = median_f0(one_chunk(engine, female, seg("si4")))
    assert high > 1.25 * low


def test_output_pitch_moves_toward_the_prompt(engine, male, female):
    seg = pinyin_segment("jin1 tian1 tian1 qi4 hen3 hao3 , wo3 men5 qu4 gong1 yuan2 ba5")
    f0_male = median_f0(one_chunk(engine, male, seg))
    f0_female = median_f0(one_chunk(engine, female, seg))
    assert f0_female > 2.0 * f0_male
    assert 0.75 < f0_male / male.data.f0_median_hz < 1.35
    assert 0.75 < f0_female / female.data.f0_median_hz < 1.35


def test_emotion_speed_and_volume_change_pitch_duration_and_energy(engine, male):
    seg = pinyin_segment("jin1 tian1 tian1 qi4 hen3 hao3 , wo3 men5 qu4 gong1 yuan2 san4 bu4 ba5")
    neutral = one_chunk(engine, male, seg)
    happy = one_chunk(engine, male, seg, emotion="happy")
    sad = one_chunk(engine, male, seg, emotion="sad")
    angry = one_chunk(engine, male, seg, emotion="angry")
    assert median_f0(happy) > 1.08 * median_f0(neutral)
    assert median_f0(sad) < 0.95 * median_f0(neutral)
    assert len(sad) > 1.1 * len(neutral) and len(happy) < len(neutral)
    assert rms(angry) > 1.3 * rms(neutral) and rms(sad) < 0.8 * rms(neutral)
    fast = one_chunk(engine, male, seg, speed=1.5)
    slow = one_chunk(engine, male, seg, speed=0.75)
    assert len(fast) < 0.75 * len(neutral) and len(slow) > 1.2 * len(neutral)
    quiet = one_chunk(engine, male, seg, volume=0.5)
    loud = one_chunk(engine, male, seg, volume=2.0)
    assert 0.4 < rms(quiet) / rms(neutral) < 0.6
    assert rms(loud) > 1.4 * rms(neutral) and np.abs(loud).max() <= 1.0


@pytest.mark.parametrize("pinyin", ["jiong3 po4", "xiong2 di4", "qiong2 ren2", "lv4 se4", "nv3 er2"])
def test_difficult_syllables_are_spoken_as_mandarin(engine, female, pinyin):
    y = one_chunk(engine, female, pinyin_segment(pinyin))
    duration_s = len(y) / SAMPLE_RATE_HZ
    assert 0.3 < duration_s < 1.2  # two Mandarin syllables, not spelled-out English letters
    assert rms(y) > 0.01


def test_english_words_and_arpabet_render(engine, female):
    words = [Token(TokenKind.WORD, w, "en") for w in ("wait", "a")]
    arpa = Token(TokenKind.ARPABET, "[M][AY0][N][UW1][T]", "en", phones=("M", "AY0", "N", "UW1", "T"))
    seg = TextSegment(0, "", "", words + [arpa], 4)
    y = one_chunk(engine, female, seg)
    assert 0.6 < len(y) / SAMPLE_RATE_HZ < 2.5 and rms(y) > 0.01
    r = render.render(seg, variant="f3", rate_factor=1.0, pause_factor=1.0, seed=0, const_f0_hz=200)
    assert [u.lang for u in r.units] == ["en", "en", "en"] and r.units[2].accent


def test_front_end_text_end_to_end(engine, male, female):
    segments = analyze("她[h][ào]干净，今天是2026年11月30日。Hello world, [M][AY0][N][UW1][T].")
    assert any(t.pinyin == "hao4" for t in segments[0].tokens)
    for voice in (male, female):
        audio = [one_chunk(engine, voice, s) for s in segments]
        total_s = sum(len(a) for a in audio) / SAMPLE_RATE_HZ
        expected_s = sum(s.estimated_duration_s() for s in segments)
        assert 0.5 * expected_s < total_s < 2.0 * expected_s
        assert all(rms(a) > 0.01 for a in audio)


def test_cantonese_prompt_and_text(engine, shared_prompts):
    voice = engine.prepare_voice(load_prompt(str(shared_prompts / "minguniaudio__yueyu_demo.wav")))
    segments = analyze("你做乜嘢啊，系咪唔想倾偈啊？", "yue")
    assert all(t.jyutping for s in segments for t in s.tokens if t.kind == TokenKind.HANZI)
    audio = np.concatenate([one_chunk(engine, voice, s) for s in segments])
    assert 1.2 < len(audio) / SAMPLE_RATE_HZ < 6.0 and rms(audio) > 0.01


def test_prompt_without_voiced_speech_is_rejected(engine):
    noise = np.random.default_rng(0).normal(0, 0.1, 3 * 24000).astype(np.float32)
    prompt = PromptAudio(samples=noise, sample_rate=24000, original_sample_rate=24000, duration_s=3.0)
    with pytest.raises(InvalidInputError) as err:
        engine.prepare_voice(prompt)
    assert err.value.code == "lite.no_voiced_speech"


def test_foreign_voice_data_fails_the_job_with_an_engine_error(engine, male):
    bogus = Voice(key="x", prompt=male.prompt, data={"not": "a lite profile"})
    with pytest.raises(EngineError):
        list(engine.synthesize(bogus, pinyin_segment("ni3 hao3"), SynthesisOptions()))


def test_phrase_final_units_are_lengthened_in_the_frame_domain():
    from cosyweb.engines.lite.adapt import Frames
    from cosyweb.engines.lite.durations import FINAL_LENGTHENING, lengthen_phrase_ends
    from cosyweb.engines.lite.render import Unit

    n = 200  # 1 s of 5 ms frames
    times = np.arange(n) * 0.005
    log_sp = np.tile(np.arange(n, dtype=np.float64)[:, None], (1, 4))  # each frame remembers its index
    frames = Frames(times_s=times, voiced=np.ones(n, bool), active=np.ones(n, bool), log_sp=log_sp)
    units = [Unit("zh", 1, False, 0.0, 0.5), Unit("zh", 4, False, 0.5, 0.8, phrase_end=True)]
    out, new_units = lengthen_phrase_ends(frames, units)
    final_s = new_units[1].end_s - new_units[1].start_s
    assert abs(final_s - 0.3 * FINAL_LENGTHENING) < 0.011
    assert abs(new_units[0].end_s - 0.5) < 0.006 and abs(new_units[0].start_s) < 1e-9
    assert abs(len(out.times_s) - (n + 60 * (FINAL_LENGTHENING - 1))) <= 1
    assert np.allclose(np.diff(out.times_s), 0.005)
    assert np.all(np.diff(out.log_sp[:, 0]) >= -1e-9) and np.isclose(out.log_sp[-1, 0], n - 1)  # monotonic re-timing
