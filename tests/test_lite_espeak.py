"""The espeak-ng bridge and the spelling of pinyin, Jyutping and ARPAbet for it."""

from __future__ import annotations

import numpy as np
import pytest

from cosyweb.engines.lite import espeak
from cosyweb.engines.lite.phonemes import (
    ESPEAK_VOICES,
    arpabet_to_espeak,
    english_word,
    jyutping_to_espeak,
    pinyin_to_espeak,
)
from cosyweb.errors import EngineError, InvalidInputError


@pytest.mark.parametrize(
    "lang, text, n_words",
    [
        ("zh", "ta1 hao4 gan1 jing4", 4),
        ("yue", "nei5 zou6 mat1 je5 aa3", 5),
        ("en", "this is a short test", 5),
    ],
)
def test_each_language_voice_speaks_at_22050_hz_with_word_events(lang, text, n_words):
    out = espeak.synthesize(text, ESPEAK_VOICES[lang], rate_wpm=175, seed=1)
    assert out.sample_rate == 22050 == espeak.sample_rate()
    assert out.samples.dtype == np.float32 and out.samples.ndim == 1
    duration_s = len(out.samples) / out.sample_rate
    assert 0.12 * n_words < duration_s < 0.8 * n_words
    assert np.abs(out.samples).max() > 0.05
    assert len(out.words) == n_words
    times = [w.time_s for w in out.words]
    assert times == sorted(times) and times[-1] < duration_s


def test_female_variant_and_rate_change_the_audio():
    male = espeak.synthesize("ni3 hao3 shi4 jie4", "cmn-Latn-pinyin", rate_wpm=175)
    female = espeak.synthesize("ni3 hao3 shi4 jie4", "cmn-Latn-pinyin", "f3", rate_wpm=175)
    fast = espeak.synthesize("ni3 hao3 shi4 jie4", "cmn-Latn-pinyin", rate_wpm=300)
    assert not np.array_equal(male.samples, female.samples[: len(male.samples)])
    assert len(fast.samples) < 0.8 * len(male.samples)


def test_same_text_and_seed_give_identical_samples_whatever_came_before():
    # "three" alternated between two waveforms on a reused library (state in C statics)
    first = espeak.synthesize("three", "en-US", seed=5).samples
    espeak.synthesize("think of something else", "en-US", seed=9)
    espeak.synthesize("ta1 hao3", "cmn-Latn-pinyin", "f3", seed=2)
    again = espeak.synthesize("three", "en-US", seed=5).samples
    assert np.array_equal(first, again)


def test_unknown_voice_is_an_engine_error():
    with pytest.raises(EngineError):
        espeak.synthesize("hello", "no-such-voice")


def test_every_pypinyin_syllable_is_read_as_mandarin_or_injected():
    from pypinyin.contrib.tone_convert import to_tone3
    from pypinyin.pinyin_dict import pinyin_dict

    syllables = sorted({to_tone3(p, neutral_tone_with_five=True) for v in pinyin_dict.values() for p in v.split(",")})
    assert len(syllables) > 1500
    spelled = [pinyin_to_espeak(s)[0] for s in syllables]
    plain = [s for s in spelled if not s.startswith("[[")]
    injected = {syl for syl, s in zip(syllables, spelled) if s.startswith("[[")}
    # the syllables espeak's pinyin voice would read as English (measured) are all injected
    assert {"jiong1", "qiong2", "xiong2", "m2", "n2", "hm5", "hng5", "wong4", "ê1"} <= injected
    assert len(injected) < 30
    phonemes = espeak.text_to_phonemes(plain, "cmn-Latn-pinyin")
    english = [s for s, ph in zip(plain, phonemes) if "(en)" in ph]
    assert english == []


@pytest.mark.parametrize(
    "syllable, expected",
    [
        ("hao4", ("hao4", 4)),
        ("ma", ("ma5", 5)),
        ("lv4", ("lv4", 4)),
        ("lü4", ("lv4", 4)),
        ("nu:3", ("nv3", 3)),
        ("xiong2", ("[[S;j'ong35]]", 2)),
        ("jiong3", ("[[tS;j'ong214]]", 3)),
        ("qiong2", ("[[tS;hj'ong35]]", 2)),
        ("m2", ("[['m-35]]", 2)),
    ],
)
def test_pinyin_spelling(syllable, expected):
    assert pinyin_to_espeak(syllable) == expected


@pytest.mark.parametrize("bad", ["hao7", "h@o4", "", "4"])
def test_bad_pinyin_is_invalid_input(bad):
    with pytest.raises(InvalidInputError):
        pinyin_to_espeak(bad)


@pytest.mark.parametrize("text", ["jiong3 xiong2 qiong2", "lv4 nv3", "[[S;j'ong35]] [[tS;j'ong214]] lv4"])
def test_injected_and_v_syllables_render_as_syllables(text):
    spelled = " ".join(pinyin_to_espeak(s)[0] if not s.startswith("[[") else s for s in text.split())
    out = espeak.synthesize(spelled, "cmn-Latn-pinyin", rate_wpm=205)
    n = len(text.split())
    duration_s = len(out.samples) / out.sample_rate
    # Mandarin syllables at this rate last 0.15-0.5 s; the English fallback would spell letters
    assert 0.15 * n < duration_s < 0.5 * n
    assert len(out.words) == n


def test_jyutping_spelling_injects_syllabic_nasals():
    assert jyutping_to_espeak("nei5") == ("nei5", 5)
    text, tone = jyutping_to_espeak("m4")
    assert text == "[['m-4]]" and tone == 4
    short = espeak.synthesize("m4", "yue-Latn-jyutping")
    full = espeak.synthesize(text, "yue-Latn-jyutping")
    assert len(full.samples) > 3 * len(short.samples)  # espeak's own "m4" lasts 27 ms


def test_arpabet_maps_to_espeak_phonemes_and_renders():
    text, stressed = arpabet_to_espeak(("M", "AY0", "N", "UW1", "T"))
    assert text == "[[maIn'u:t]]" and stressed
    assert arpabet_to_espeak(("DH", "AH0"))[1] is False
    out = espeak.synthesize(f"a {text} ago", "en-US", rate_wpm=175)
    assert len(out.words) == 3
    assert 0.15 < out.words[2].time_s - out.words[1].time_s < 0.8


@pytest.mark.parametrize("bad", [("M", "AY9"), ("QQ",), ("T1",)])
def test_unknown_arpabet_is_invalid_input(bad):
    with pytest.raises(InvalidInputError):
        arpabet_to_espeak(bad)


def test_english_word_keeps_letters_digits_and_apostrophes():
    assert english_word("don't") == "don't"
    assert english_word("A.I.") == "A I"
    assert english_word("2026") == "2026"
    assert english_word("—") == ""
