"""Grapheme to pinyin: phrase dictionary, sandhi, particle fixes, overrides, polyphones, Cantonese."""

from __future__ import annotations

import pytest

from cosyweb.text import pinyin as g2p
from cosyweb.text.frontend import analyze, annotate, find_polyphones
from cosyweb.text.syllables import parse_syllable
from cosyweb.text.types import TokenKind


def _hanzi(text: str, language=None):
    segs = analyze(text, language, first_segment_chars=1000, segment_chars=1000)
    return [t for s in segs for t in s.tokens if t.kind == TokenKind.HANZI]


def _py(text: str) -> list[str]:
    return [t.pinyin for t in _hanzi(text)]


@pytest.mark.parametrize(
    "text,expected",
    [
        # phrase dictionary decides polyphones (checked correct in the lite-engine notes)
        ("银行", "yin2 hang2"), ("行走", "xing2 zou3"), ("长大", "zhang3 da4"), ("重新", "chong2 xin1"),
        ("重要", "zhong4 yao4"), ("还是", "hai2 shi4"), ("还钱", "huan2 qian2"), ("音乐", "yin1 yue4"),
        ("快乐", "kuai4 le4"),
        # ü is written v
        ("绿色", "lv4 se4"), ("女儿", "nv3 er2"),
    ],
)
def test_dictionary_readings(text, expected):
    assert " ".join(_py(text)) == expected


@pytest.mark.parametrize(
    "text,expected",
    [
        # third-tone sandhi, inside and across words
        ("你好", "ni2 hao3"), ("老鼠", "lao2 shu3"), ("雨伞", "yu2 san3"),
        ("我很好", "wo3 hen2 hao3"),  # across words: pypinyin alone gives wo3 hen3 hao3
        # 一
        ("一个", "yi2 ge4"), ("一天", "yi4 tian1"),  # pypinyin alone: yi1 tian1
        ("一样", "yi2 yang4"),  # pypinyin alone: yi1 yang4
        ("一模一样", "yi4 mu2 yi2 yang4"), ("一起", "yi4 qi3"), ("第一", "di4 yi1"),
        ("看一看", "kan4 yi5 kan4"), ("一月", "yi1 yue4"), ("一二三", "yi1 er4 san1"),
        # 不
        ("不是", "bu2 shi4"), ("不对", "bu2 dui4"), ("不好", "bu4 hao3"), ("好不好", "hao3 bu5 hao3"),
        # particles
        ("慢慢地", "man4 man4 de5"),  # pypinyin alone: di4
        ("他高兴地说", "ta1 gao1 xing4 de5 shuo1"),
        ("这块地", "zhe4 kuai4 di4"),  # the noun stays di4
        ("我得去", "wo2 dei3 qu4"),  # pypinyin alone: de2 ("must" is dei3; 3-3 sandhi makes wo2)
        ("我得到了", "wo3 de2 dao4 le5"),  # the verb 得到 stays de2
    ],
)
def test_sandhi_and_particle_fixes(text, expected):
    assert " ".join(_py(text)) == expected


def test_numbers_read_with_the_right_yi():
    # 11 -> 十一 (yi1 after a numeral), 1.5 -> 一点五 (yi1, not the yi4 of 一点 "a little"), 101
    assert _py("11月") == ["shi2", "yi1", "yue4"]
    assert _py("1.5") == ["yi1", "dian2", "wu3"]  # 3-3 sandhi on dian3 wu3
    assert _py("一点") == ["yi4", "dian3"]
    assert _py("101个")[:4] == ["yi4", "bai3", "ling2", "yi1"]


def test_every_reading_is_a_valid_tone3_syllable():
    text = "今天是2026年11月30日，我们一起去银行还钱，然后慢慢地走回家。女儿说绿色很好看！"
    for tok in _hanzi(text):
        assert tok.pinyin is not None and parse_syllable(tok.pinyin) == tok.pinyin, tok
        assert "ü" not in tok.pinyin


def test_annotation_overrides_g2p():
    plain = _hanzi("她好干净")
    assert plain[1].pinyin == "hao3" and not plain[1].annotated
    ann = _hanzi(annotate("她好干净", 2, "hao4"))
    assert ann[1].pinyin == "hao4" and ann[1].annotated
    assert [t.pinyin for t in ann[2:]] == [t.pinyin for t in plain[2:]]


def test_annotation_is_never_changed_by_sandhi_but_is_context():
    # an annotated third tone before a third tone stays third ...
    assert _py("[ni3]好") == ["ni3", "hao3"]
    # ... and makes the character before it change (你 -> ni2 before annotated hao3)
    assert _py("你[hao3]") == ["ni2", "hao3"]
    # 一 before an annotated fourth tone
    assert _py("一[ge4]") == ["yi2", "ge4"]


def test_g2p_direct_api_matches_analyze():
    assert g2p.han_pinyin("银行很好") == _py("银行很好")


# ------------------------------------------------------------------ polyphones
def test_find_polyphones_positions_and_current_reading():
    text = "银行行长说她好[hao4]干净，2个人"
    found = {p.pos: p for p in find_polyphones(text)}
    assert found[2].char == "行" and found[2].current == "hang2"
    assert found[3].char == "行" and found[3].current == "hang2"
    assert found[4].char == "长" and found[4].current == "zhang3"
    assert found[7].char == "好" and {"hao3", "hao4"} <= set(found[7].candidates)
    # 她 has only one reading used in words; the annotation and the spelled-out 2 (两) are skipped
    assert 6 not in found
    assert all(text[p.pos - 1] == p.char for p in found.values())
    for p in found.values():
        assert p.current in p.candidates and len(p.candidates) > 1


def test_find_polyphones_current_matches_analyze():
    text = "我们一起还钱了"
    by_pos = {t.pos: t.pinyin for t in _hanzi(text)}
    for p in find_polyphones(text):
        assert p.current == by_pos[p.pos]


def test_find_polyphones_then_annotate_round_trip():
    text = "他还没还钱"
    polys = [p for p in find_polyphones(text) if p.char == "还"]
    assert [p.pos for p in polys] == [2, 4]
    assert [p.current for p in polys] == ["hai2", "huan2"]
    out = annotate(text, polys[0].pos, "huan2")
    assert out == "他[huan2]没还钱"
    assert [p.pos for p in find_polyphones(out) if p.char == "还"] == [10]


def test_find_polyphones_empty_and_unspeakable():
    assert find_polyphones("") == []
    assert find_polyphones("。。。") == []
    assert find_polyphones("hello world") == []


# ------------------------------------------------------------------ Cantonese
def test_cantonese_tokens_carry_jyutping_and_pinyin():
    toks = _hanzi("你好，我去銀行。", "yue")
    assert [t.jyutping for t in toks] == ["nei5", "hou2", "ngo5", "heoi3", "ngan4", "hong4"]
    assert all(t.lang == "yue" for t in toks)
    assert all(parse_syllable(t.pinyin) == t.pinyin for t in toks)


def test_cantonese_context_dependent_reading():
    # 行 is haang4 in 行街 (walk the streets) and hong4 in 銀行 (bank)
    assert [t.jyutping for t in _hanzi("行街", "yue")][0] == "haang4"
    assert [t.jyutping for t in _hanzi("银行", "yue")][1] == "hong4"


def test_pinyin_annotation_in_cantonese_text_is_mandarin():
    toks = _hanzi("佢[hao4]靚", "yue")
    assert (toks[1].lang, toks[1].pinyin, toks[1].jyutping) == ("zh", "hao4", None)
    assert toks[0].lang == "yue" and toks[0].jyutping == "keoi5"


def test_default_language_is_mandarin_for_han():
    toks = _hanzi("你好")
    assert all(t.lang == "zh" and t.jyutping is None for t in toks)
