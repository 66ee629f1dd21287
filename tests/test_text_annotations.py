"""Annotation parsing and validation: every accepted form, every malformed case, positions."""

from __future__ import annotations

import pytest

from cosyweb.errors import InvalidInputError
from cosyweb.text import annotations as ann
from cosyweb.text import syllables
from cosyweb.text.frontend import analyze, annotate
from cosyweb.text.types import TokenKind


def _one(text: str, **kw):
    segs = analyze(text, first_segment_chars=1000, segment_chars=1000, **kw)
    assert len(segs) == 1
    return segs[0]


def _err(text: str, **kw) -> InvalidInputError:
    with pytest.raises(InvalidInputError) as info:
        analyze(text, **kw)
    return info.value


# ------------------------------------------------------------------ accepted forms
@pytest.mark.parametrize(
    "text", ["她[h][ào]干净", "她[hao4]干净", "她[hào]干净", "她[HAo4]干净", "她[ hao4 ]干净", "她［hao4］干净"]
)
def test_all_forms_mean_the_same(text):
    seg = _one(text)
    hanzi = [t for t in seg.tokens if t.kind == TokenKind.HANZI]
    assert [t.pinyin for t in hanzi] == ["ta1", "hao4", "gan1", "jing4"]
    assert [t.annotated for t in hanzi] == [False, True, False, False]
    assert hanzi[1].pos == 2  # the bracket stands in place of the character
    assert seg.cosyvoice_text == "她[h][ào]干净"
    assert seg.text == "她hào干净"
    assert "[" not in seg.text


@pytest.mark.parametrize("text", ["[de5]", "[de]", "[d][e]", "[d][e5]"])
def test_neutral_tone_forms(text):
    seg = _one("慢慢" + text + "走")
    tok = [t for t in seg.tokens if t.annotated][0]
    assert tok.pinyin == "de5"
    assert "[d][e]" in seg.cosyvoice_text


@pytest.mark.parametrize("text", ["[lv4]", "[lü4]", "[lǜ]", "[l][ǜ]", "[lu:4]", "[Lv4]"])
def test_u_umlaut_forms_are_v(text):
    tok = [t for t in _one("绿" + text).tokens if t.annotated][0]
    assert tok.pinyin == "lv4"


def test_zero_initial_and_ue_forms():
    toks = [t for t in _one("[ài][ér][l][vè][y][uè][j][ué]").tokens if t.annotated]
    assert [t.pinyin for t in toks] == ["ai4", "er2", "lve4", "yue4", "jue2"]
    assert _one("[lüè]").cosyvoice_text == "[l][vè]"


def test_character_followed_by_annotation_is_two_syllables():
    """Decision (documented in annotations.py): 好[hao4] says 好 and then hao4, as CosyVoice3 would."""
    hanzi = [t for t in _one("她好[hao4]干净").tokens if t.kind == TokenKind.HANZI]
    assert len(hanzi) == 5
    assert (hanzi[1].text, hanzi[1].annotated) == ("好", False)
    assert (hanzi[2].pinyin, hanzi[2].annotated) == ("hao4", True)


def test_arpabet_word():
    seg = _one("my name is [M][AY0][N][UW1][T] ok")
    arpa = [t for t in seg.tokens if t.kind == TokenKind.ARPABET]
    assert len(arpa) == 1
    assert arpa[0].phones == ("M", "AY0", "N", "UW1", "T")
    assert arpa[0].pos == 12 and arpa[0].lang == "en"
    assert "[M][AY0][N][UW1][T]" in seg.cosyvoice_text
    assert seg.n_syllables == 3 + 2 + 1  # my name is (3) + minute (2 vowels) + ok (1)


def test_arpabet_separated_by_space_is_two_words():
    arpa = [t for t in _one("[HH][AH0] [L][OW1]").tokens if t.kind == TokenKind.ARPABET]
    assert [t.phones for t in arpa] == [("HH", "AH0"), ("L", "OW1")]


@pytest.mark.parametrize("tag", ann.BRACKET_TAGS)
def test_every_bracket_tag_is_a_tag(tag):
    seg = _one(f"你好[{tag}]再见")
    tags = [t for t in seg.tokens if t.kind == TokenKind.TAG]
    assert [t.text for t in tags] == [f"[{tag}]"]
    assert tags[0].pos == 3
    assert f"[{tag}]" in seg.cosyvoice_text and f"[{tag}]" not in seg.text
    assert all(t.pinyin is None for t in tags)


def test_tags_are_case_insensitive_and_canonical():
    seg = _one("你好[Breath]<STRONG>真的</Strong>")
    assert [t.text for t in seg.tokens if t.kind == TokenKind.TAG] == ["[breath]", "<strong>", "</strong>"]
    assert seg.cosyvoice_text == "你好[breath]<strong>真的</strong>"
    assert seg.text == "你好真的"


def test_laughter_pair_and_strong_tokens_positions():
    seg = _one("a<strong>b</strong><laughter>c</laughter>")
    tags = [(t.text, t.pos) for t in seg.tokens if t.kind == TokenKind.TAG]
    assert tags == [("<strong>", 2), ("</strong>", 11), ("<laughter>", 20), ("</laughter>", 31)]


def test_plain_angle_brackets_are_not_tags():
    seg = _one("3 < 5 and 6 > 2")
    assert all(t.kind != TokenKind.TAG for t in seg.tokens)


# ------------------------------------------------------------------ malformed cases
MALFORMED = [
    # (text, 1-based position, token named in the message)
    ("今天天气[hoo4]", 5, "[hoo4]"),  # not a syllable (the issue's example)
    ("她[hao6]干净", 2, "[hao6]"),  # tone digit out of range
    ("她[hao0]干净", 2, "[hao0]"),
    ("她[hào4]干净", 2, "[hào4]"),  # mark and digit
    ("她[hàò]干净", 2, "[hàò]"),  # two marks
    ("她[h]干净", 2, "[h]"),  # initial without final
    ("她[h] [ào]干净", 2, "[h]"),  # initial not directly followed by its final
    ("她[zh][h][ào]", 2, "[zh]"),  # initial followed by an initial
    ("她[h][breath]", 2, "[h]"),  # initial followed by a tag
    ("她[h][ào6]", 2, "[h][ào6]"),  # final with a bad tone
    ("她[h][hao4]", 2, "[h][hao4]"),  # initial followed by a whole syllable
    ("她[v][ào]", 2, "[v]"),  # bad initial
    ("她[h][oo]", 2, "[h][oo]"),  # bad final
    ("她[b][üe]", 2, "[b][üe]"),  # real initial, real final, no such syllable
    ("她[h][ào][uà]", 9, "[uà]"),  # final + final: [uà] alone is no syllable
    ("她[ià]", 2, "[ià]"),
    ("你好[breth]", 3, "[breth]"),  # misspelled tag
    ("你好[laugh]", 3, "[laugh]"),
    ("你好[hello world]", 3, "[hello world]"),
    ("你好[123]", 3, "[123]"),
    ("你好[好]", 3, "[好]"),
    ("go [AY3]", 4, "[AY3]"),  # bad stress digit
    ("go [T1]", 4, "[T1]"),  # consonants take no stress
    ("go [HAO4]", 4, "[HAO4]"),
    ("go [M][XX][T]", 7, "[XX]"),  # bad phone inside an ARPAbet word
    ("a[]b", 2, "[]"),  # empty
    ("a[  ]b", 2, "[  ]"),
    ("a[[hao4]]b", 2, "[[hao4]"),  # nested
    ("a[ha[o4]b", 2, "[ha[o4]"),
    ("她[hao4干净", 2, "[hao4干净"),  # unclosed
    ("她hao4]干净", 6, "]"),  # unmatched close
    ("她］干净", 2, "］"),
    ("<strong>真的", 1, "<strong>"),  # unclosed strong
    ("真的</strong>", 3, "</strong>"),  # close without open
    ("<strong>a<strong>b</strong></strong>", 10, "<strong>"),  # nested strong
    ("你好<b>粗</b>", 3, "<b>"),  # unknown angle tag
    ("😀😀你好[hoo4]", 5, "[hoo4]"),  # positions count characters, not bytes or UTF-16 units
    ("𠮶個[hoo4]", 3, "[hoo4]"),  # a supplementary-plane Han character is one character
    ("Hello, world! [hoo4]", 15, "[hoo4]"),  # after English
    ("2026年11月30日[hoo4]", 12, "[hoo4]"),  # position in the original, not the normalised, text
    ("[hao4][breath][M][AY1] x [zz]", 26, "[zz]"),
]


@pytest.mark.parametrize("text,pos,token", MALFORMED)
def test_malformed_annotations_are_rejected_with_position(text, pos, token):
    err = _err(text)
    assert err.code == "text.bad_annotation"
    assert err.details["position"] == pos
    assert err.details["token"] == token
    assert f"第{pos}个字符" in err.zh and token in err.zh
    assert f"character {pos}" in err.en and token in err.en


def test_issue_example_message_exactly():
    err = _err("今天天气[hoo4]")
    assert err.zh == "第5个字符处的拼音标注 [hoo4] 无效"
    assert err.en == "invalid pinyin annotation [hoo4] at character 5"
    assert str(err) == f"{err.zh} / {err.en}"


def test_specific_reasons_in_messages():
    assert "1 到 5" in _err("[hao6]").zh and "1 to 5" in _err("[hao6]").en
    assert "final" in _err("[h]好").en
    assert "did you mean [breath]" in _err("[breth]").en
    assert "ARPAbet" in _err("[AY3]").en


def test_first_error_wins():
    err = _err("a[hoo4]b[zz]c]")
    assert err.details["position"] == 2


# ------------------------------------------------------------------ inventory
def test_inventory_comes_from_pypinyin():
    toned = syllables.toned_syllables()
    assert len(toned) > 1400
    assert {"hao3", "hao4", "lv4", "xiong2", "er2"} <= toned
    assert "hoo4" not in toned
    assert len(syllables.initials()) == 23  # 21 initials + y, w as CosyVoice3 spells them
    assert {"iong", "ve", "v", "uai"} <= syllables.finals()


def test_every_pypinyin_syllable_round_trips_through_every_form():
    for s in sorted(syllables.toned_syllables()):
        assert syllables.parse_syllable(s) == s
        assert syllables.parse_syllable(syllables.to_marks(s)) == s, s
        parsed = ann.parse(syllables.to_cosyvoice(s))
        assert len(parsed) == 1 and parsed[0].pinyin == s, (s, syllables.to_cosyvoice(s))


@pytest.mark.parametrize(
    "tone3,tokens",
    [("hao4", "[h][ào]"), ("ai4", "[ài]"), ("lv4", "[l][ǜ]"), ("lve4", "[l][vè]"), ("yu2", "[y][ú]"),
     ("wo3", "[w][ǒ]"), ("xiong2", "[x][ióng]"), ("de5", "[d][e]"), ("zhi1", "[zh][ī]")],
)
def test_cosyvoice_token_form(tone3, tokens):
    assert syllables.to_cosyvoice(tone3) == tokens


# ------------------------------------------------------------------ annotate()
def test_annotate_replaces_the_character():
    assert annotate("她好干净", 2, "hao4") == "她[hao4]干净"
    assert annotate("她好干净", 2, "hào") == "她[hao4]干净"
    assert annotate("她好干净", 2, "[hao3]") == "她[hao3]干净"
    out = annotate("[h][ào]好", 8, "hao3")
    assert out == "[h][ào][hao3]"
    assert [t.pinyin for t in _one(out).tokens] == ["hao4", "hao3"]


@pytest.mark.parametrize("pos", [0, -1, 5, 100, True])
def test_annotate_bad_position(pos):
    with pytest.raises(InvalidInputError) as info:
        annotate("她好干净", pos, "hao4")
    assert info.value.code == "text.bad_position"


def test_annotate_not_on_han_or_inside_annotation():
    with pytest.raises(InvalidInputError) as info:
        annotate("a好", 1, "hao4")
    assert info.value.code == "text.bad_position"
    with pytest.raises(InvalidInputError):
        annotate("好[hao4]", 3, "hao4")


@pytest.mark.parametrize("reading", ["hoo4", "hao6", "", "h", "[breath]"])
def test_annotate_bad_reading(reading):
    with pytest.raises(InvalidInputError) as info:
        annotate("她好干净", 2, reading)
    assert info.value.code == "text.bad_annotation"


# ------------------------------------------------------------------ other input checks
@pytest.mark.parametrize("text", ["", "   ", "\n\t "])
def test_empty_text(text):
    assert _err(text).code == "text.empty"


def test_too_long_names_length_and_limit():
    err = _err("好" * 31, max_chars=30)
    assert err.code == "text.too_long"
    assert "31" in err.en and "30" in err.en and "31" in err.zh and "30" in err.zh
    assert len(_one("好" * 30, max_chars=30).tokens) == 30


@pytest.mark.parametrize("text", ["。。。", "，！？", "[breath]", "<strong></strong>", "“”"])
def test_nothing_to_say(text):
    assert _err(text).code == "text.nothing_to_say"


def test_bad_language():
    assert _err("你好", language="fr").code == "text.bad_language"
