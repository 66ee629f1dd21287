"""Sentence splitting for streaming: a short first segment, nothing split that must stay whole."""

from __future__ import annotations

import random
import re

import pytest

from cosyweb.text import annotations as ann
from cosyweb.text.frontend import analyze
from cosyweb.text.types import TokenKind

LONG_ZH = (
    "她[h][ào]干净，今天是2026年11月30日。我们一起去公园散步，然后去银行还钱，"
    "最后慢慢地走回家。天气很好，阳光明媚，大家都很开心！你明天有空吗？"
)


def _nospace(s: str) -> str:
    return re.sub(r"\s+", "", s)


def test_issue_example_first_segment_is_short_and_cut_at_a_comma():
    segs = analyze("她[h][ào]干净，今天是2026年11月30日。")
    assert segs[0].text == "她hào干净，"
    assert segs[0].cosyvoice_text == "她[h][ào]干净，"
    assert segs[0].tokens[-1].kind == TokenKind.PAUSE
    assert [s.index for s in segs] == list(range(len(segs)))


def test_first_segment_short_later_segments_bounded():
    segs = analyze(LONG_ZH, first_segment_chars=12, segment_chars=30)
    assert len(segs) >= 3
    assert len(segs[0].text) <= 12
    assert all(len(s.text) <= 30 for s in segs[1:])
    assert [s.index for s in segs] == list(range(len(segs)))


def test_first_segment_without_punctuation_is_cut_between_tokens():
    text = "我们今天下午一起去公园散步然后去银行取钱最后慢慢地走回家吃饭"
    segs = analyze(text, first_segment_chars=12, segment_chars=60)
    assert len(segs[0].text) == 12
    assert "".join(s.text for s in segs) == text


def test_first_segment_reaches_a_nearby_comma():
    # the first clause is 14 characters: longer than 12, within 1.5 x 12, so the cut is at the comma
    segs = analyze("我们今天下午一起去公园散步了，然后回家。", first_segment_chars=12)
    assert segs[0].text == "我们今天下午一起去公园散步了，"


def test_first_sentence_without_a_comma_stays_whole_when_it_is_near_the_target():
    # 15 characters, no clause pause: not cut between 还 and 好 (1.5 x 12 = 18 reach)
    segs = analyze("希望你以后能够做的比我还好呦。今天天气很好，我们一起去公园散步吧。", first_segment_chars=12)
    assert segs[0].text == "希望你以后能够做的比我还好呦。"
    # a clause pause within the target still wins: the first chunk stays short
    segs = analyze("你好，我是小明，很高兴认识你。", first_segment_chars=12)
    assert segs[0].text == "你好，我是小明，"
    # beyond the reach: cut between tokens within the target
    segs = analyze("我们今天下午一起去公园散步然后去银行取钱吧。", first_segment_chars=12)
    assert len(segs[0].text) == 12


def test_short_sentences_are_packed():
    segs = analyze("你好。我很好。谢谢。再见。", first_segment_chars=20, segment_chars=60)
    assert [s.text for s in segs] == ["你好。我很好。谢谢。再见。"]
    segs = analyze("你好。我很好。谢谢。再见。", first_segment_chars=12, segment_chars=60)
    assert [s.text for s in segs] == ["你好。我很好。谢谢。", "再见。"]
    segs = analyze("你好。我很好。谢谢。再见。", first_segment_chars=3, segment_chars=7)
    assert [s.text for s in segs] == ["你好。", "我很好。谢谢。", "再见。"]


def test_segments_end_at_sentence_ends_when_they_fit():
    segs = analyze("今天天气很好。明天会下雨。后天是晴天。", first_segment_chars=7, segment_chars=7)
    assert [s.text for s in segs] == ["今天天气很好。", "明天会下雨。", "后天是晴天。"]


def test_english_words_are_never_split():
    text = "Extraordinary circumstances necessitate unconventional, comprehensive responsibilities everywhere."
    segs = analyze(text, first_segment_chars=12, segment_chars=20)
    words = re.findall(r"[A-Za-z]+", text)
    assert [w for s in segs for w in re.findall(r"[A-Za-z]+", s.text)] == words
    assert segs[0].text == "Extraordinary circumstances"  # lengths are syllables, not letters


def test_english_first_segment_is_measured_in_syllables():
    # "The weather is lovely today," is 8 syllables (28 letters): the first clause, not "The weather"
    segs = analyze("The weather is lovely today, so let us go for a walk in the park.")
    assert [s.text for s in segs] == ["The weather is lovely today,", "so let us go for a walk in the park."]
    # Chinese lengths stay one per character
    segs = analyze("我们今天下午一起去公园散步然后去银行取钱吧。", first_segment_chars=12)
    assert len(segs[0].text) == 12


def test_annotation_and_arpabet_never_split():
    text = "我说[M][AY0][N][UW1][T]和[h][ào]还有[hao3]与[lǜ]" * 3
    for first, later in [(1, 1), (2, 3), (5, 7), (12, 60)]:
        segs = analyze(text, first_segment_chars=first, segment_chars=later)
        joined = "".join(s.cosyvoice_text for s in segs)
        assert joined.count("[M][AY0][N][UW1][T]") == 3
        for s in segs:
            ann.parse(s.cosyvoice_text)  # every segment's annotations are whole and valid
            assert s.cosyvoice_text.count("[") == s.cosyvoice_text.count("]")


def test_strong_span_is_never_split():
    text = "开始，<strong>这一段很长，有逗号，还有句号。但是不能拆开，必须整体保留。</strong>结束了。"
    segs = analyze(text, first_segment_chars=4, segment_chars=8)
    holders = [s for s in segs if "<strong>" in s.cosyvoice_text]
    assert len(holders) == 1 and "</strong>" in holders[0].cosyvoice_text
    assert sum(s.cosyvoice_text.count("</strong>") for s in segs) == 1


def test_spelled_out_number_is_never_split():
    segs = analyze("你好 world 123", first_segment_chars=4, segment_chars=12)
    assert [s.text for s in segs] == ["你好 world", "one hundred and twenty-three"]
    segs = analyze("共12345678人", first_segment_chars=3, segment_chars=3)
    assert any("一千二百三十四万五千六百七十八" in s.text for s in segs)


def test_opening_quote_stays_with_the_text_after_it():
    segs = analyze('He said "hi". She left.', first_segment_chars=2, segment_chars=60)  # 2 syllables
    assert segs[0].text == "He said"
    assert segs[1].text.startswith('"hi"')


def test_trailing_tag_joins_the_last_segment():
    segs = analyze("你好。[breath]", first_segment_chars=3, segment_chars=3)
    assert len(segs) == 1 and segs[0].cosyvoice_text == "你好。[breath]"


def test_closing_quote_stays_with_its_sentence():
    segs = analyze("他说：“你好。”然后走了。", first_segment_chars=8, segment_chars=8)
    assert [s.text for s in segs] == ["他说：“你好。”", "然后走了。"]
    segs = analyze("你好。”他说“然后走了。", first_segment_chars=4, segment_chars=8)
    assert segs[0].text == "你好。”"


def test_n_syllables_per_segment():
    segs = analyze("你好，世界。Hello world!", first_segment_chars=3, segment_chars=4)
    assert [s.n_syllables for s in segs] == [2, 2, 3]
    assert sum(s.n_syllables for s in segs) == 7


# ------------------------------------------------------------------ properties on random texts
FRAGMENTS = [
    "你好", "今天天气很好", "我们一起去银行", "她[h][ào]干净", "[hao4]", "[lǜ]", "慢慢地走",
    "Hello", "world", "my name is", "[M][AY0][N][UW1][T]", "2026年11月30日", "10:30", "50%", "¥12.5",
    "，", "。", "！", "？", "、", ", ", ". ", " ", "[breath]", "[laughter]", "<strong>真的</strong>",
    "“引号”", "I have 3 apples", "13812345678", "共12345678人", "in 2026 ", "\n",
]


def _random_text(rng: random.Random) -> str:
    return "".join(rng.choice(FRAGMENTS) for _ in range(rng.randint(1, 40)))


@pytest.mark.parametrize("seed", range(40))
def test_segmentation_properties_on_random_texts(seed):
    rng = random.Random(seed)
    text = _random_text(rng)
    if not re.search(r"[\u4e00-\u9fffA-Za-z0-9]", re.sub(r"\[[a-z_]+\]|</?strong>", "", text)):
        text += "好"
    first, later = rng.randint(1, 20), rng.randint(5, 80)
    whole = analyze(text, first_segment_chars=10_000, segment_chars=10_000)
    segs = analyze(text, first_segment_chars=first, segment_chars=later)

    assert [s.index for s in segs] == list(range(len(segs)))
    # concatenation preserves content: tokens, display text and CosyVoice text
    assert [t for s in segs for t in s.tokens] == [t for s in whole for t in s.tokens]
    assert _nospace("".join(s.text for s in segs)) == _nospace("".join(s.text for s in whole))
    assert _nospace("".join(s.cosyvoice_text for s in segs)) == _nospace("".join(s.cosyvoice_text for s in whole))
    assert sum(s.n_syllables for s in segs) == sum(s.n_syllables for s in whole)
    for s in segs:
        # every segment has something to say, never starts with a pause, keeps annotations whole
        assert any(t.kind in (TokenKind.HANZI, TokenKind.WORD, TokenKind.ARPABET) for t in s.tokens)
        assert s.tokens[0].kind != TokenKind.PAUSE or s.index == 0
        ann.parse(s.cosyvoice_text)
        assert s.cosyvoice_text.count("<strong>") == s.cosyvoice_text.count("</strong>")
        assert s.n_syllables > 0
    # nothing is cut in two: a spelled-out number, annotation or word has one position
    for a, b in zip(segs, segs[1:]):
        assert a.tokens[-1].pos != b.tokens[0].pos
    # positions are increasing and point into the original text
    positions = [t.pos for s in segs for t in s.tokens]
    assert positions == sorted(positions) and 1 <= positions[0] and positions[-1] <= len(text)
