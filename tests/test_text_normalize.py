"""Normalisation (numbers, dates, times, %, money, phones), language runs and pauses."""

from __future__ import annotations

import pytest

from cosyweb.text.frontend import analyze
from cosyweb.text.normalize import normalize_text
from cosyweb.text.runs import PAUSE_MS
from cosyweb.text.types import TokenKind


def _seg(text: str, language=None):
    segs = analyze(text, language, first_segment_chars=1000, segment_chars=1000)
    assert len(segs) == 1
    return segs[0]


@pytest.mark.parametrize(
    "text,expected",
    [
        ("今天是2026年11月30日。", "今天是二零二六年十一月三十日。"),
        ("2026-11-30", "二零二六年十一月三十日"),
        ("2026/1/5出发", "二零二六年一月五日出发"),
        ("现在10:30", "现在十点三十分"),
        ("早上8:05出发", "早上八点零五分出发"),
        ("10:00开会", "十点开会"),
        ("比分3:2", "比分三比二"),
        ("增长了50%", "增长了百分之五十"),
        ("下降3.5％", "下降百分之三点五"),
        ("价格¥12.5", "价格十二元五角"),
        ("只要￥0.05", "只要五分"),
        ("花了$3", "花了三美元"),
        ("电话13812345678", "电话幺三八幺二三四五六七八"),
        ("电话138-1234-5678", "电话幺三八幺二三四五六七八"),
        ("座机010-12345678", "座机零幺零幺二三四五六七八"),
        ("我有2个苹果", "我有两个苹果"),
        ("第2名", "第二名"),
        ("共12345人", "共一万二千三百四十五人"),
        ("1,234,567元", "一百二十三万四千五百六十七元"),
        ("圆周率3.14", "圆周率三点一四"),
        ("气温-5度", "气温负五度"),
        ("气温25℃", "气温二十五摄氏度"),
        ("1/2的人", "二分之一的人"),
        ("3-5天", "三到五天"),
        ("１２３个", "一百二十三个"),
        ("编号007", "编号零零七"),
    ],
)
def test_chinese_normalisation(text, expected):
    assert normalize_text(text) == expected


@pytest.mark.parametrize(
    "text,expected",
    [
        ("I have 3 apples", "I have three apples"),
        ("It costs $3.50 today", "It costs three dollars and fifty cents today"),
        ("It costs $1", "It costs one dollar"),
        ("up 50% now", "up fifty percent now"),
        ("born in 1990", "born in nineteen ninety"),
        ("the 21st century", "the twenty-first century"),
        ("meet at 10:30 ok", "meet at ten thirty ok"),
        ("meet at 9:05 ok", "meet at nine oh five ok"),
        ("call 138-1234-5678 now", "call one three eight one two three four five six seven eight now"),
        ("pi is 3.14", "pi is three point one four"),
        ("Tom & Jerry", "Tom and Jerry"),
        ("on 2026-11-30 we", "on November thirtieth twenty twenty-six we"),
    ],
)
def test_english_normalisation(text, expected):
    assert normalize_text(text) == expected


def test_forced_english_reads_numbers_in_english():
    words = [t.text for t in _seg("我有3个", "en").tokens if t.kind == TokenKind.WORD]
    assert words == ["three"]
    assert [t.text for t in _seg("我有3个").tokens if t.kind == TokenKind.HANZI] == ["我", "有", "三", "个"]


def test_number_language_follows_the_neighbouring_script():
    seg = _seg("I have 3 cats, 我有3只猫")
    words = [t.text for t in seg.tokens if t.kind == TokenKind.WORD]
    assert words == ["I", "have", "three", "cats"]
    assert "三只猫" in seg.text


def test_display_and_cosyvoice_text_are_normalised():
    seg = _seg("她[hao4]干净，今天是2026年11月30日。")
    assert seg.text == "她hào干净，今天是二零二六年十一月三十日。"
    assert seg.cosyvoice_text == "她[h][ào]干净，今天是二零二六年十一月三十日。"
    assert not any(ch.isdigit() for ch in seg.cosyvoice_text)


def test_spelled_out_tokens_point_at_the_source_number():
    seg = _seg("今天是2026年11月")
    pos = [(t.text, t.pos) for t in seg.tokens]
    assert pos[3:7] == [("二", 4), ("零", 4), ("二", 4), ("六", 4)]
    assert ("年", 8) in pos and ("月", 11) in pos
    assert [p for c, p in pos if c in "十一"] == [9, 9]


def test_language_runs_in_mixed_text():
    seg = _seg("我用GPU跑CosyVoice模型, it works!")
    langs = [(t.text, t.lang) for t in seg.tokens if t.kind in (TokenKind.HANZI, TokenKind.WORD)]
    assert langs[:2] == [("我", "zh"), ("用", "zh")]
    assert ("GPU", "en") in langs and ("CosyVoice", "en") in langs and ("works", "en") in langs
    assert ("模", "zh") in langs
    assert all(t.lang is None for t in seg.tokens if t.kind == TokenKind.PAUSE)


def test_hyphenated_and_apostrophe_words_stay_whole():
    words = [t.text for t in _seg("It's a well-known fact").tokens if t.kind == TokenKind.WORD]
    assert words == ["It's", "a", "well-known", "fact"]


def test_punctuation_becomes_pauses():
    seg = _seg("你好，世界。真的吗？！好、对；嗯……行\n走")
    pauses = [(t.text, t.pause_ms) for t in seg.tokens if t.kind == TokenKind.PAUSE]
    assert [p[0] for p in pauses] == ["，", "。", "？！", "、", "；", "……", "\n"]
    ms = dict(pauses)
    assert ms["，"] == PAUSE_MS["，"] and ms["。"] == PAUSE_MS["。"]
    assert ms["、"] < ms["，"] < ms["；"] < ms["。"]
    assert 150 <= ms["，"] <= 250 and 300 <= ms["。"] <= 500
    assert ms["？！"] == max(PAUSE_MS["？"], PAUSE_MS["！"])


def test_quotes_and_spaces_make_no_tokens_but_stay_in_text():
    seg = _seg("他说：“你好”")
    assert [t.text for t in seg.tokens] == ["他", "说", "：", "你", "好"]
    assert seg.text == "他说：“你好”"


def test_abbreviation_period_is_not_a_pause():
    seg = _seg("Mr. Smith is here.")
    assert [t.text for t in seg.tokens if t.kind == TokenKind.PAUSE] == ["."]


def test_n_syllables_and_estimated_duration():
    seg = _seg("你好，world。")
    assert seg.n_syllables == 3
    assert seg.estimated_duration_s(4.5) == pytest.approx(3 / 4.5 + (PAUSE_MS["，"] + PAUSE_MS["。"]) / 1000)
