"""Mandarin tone sandhi and particle rules, applied to a whole phrase after the dictionary lookup.

Why not only pypinyin's ``tone_sandhi=True``: its ``ToneSandhiMixin`` works inside one
segmented word at a time, so it misses 我很好 (three words) and 一天 (一 alone), and its 一
rule cannot turn a dictionary ``yi1`` into ``yi2`` before a fourth tone (一样, 一模一样 stay
``yi1``; measured with pypinyin 0.55). The rules below follow the same sources as pypinyin's
mixin (Standard Chinese phonology, "Tone sandhi") but see the whole phrase, the word
boundaries from pypinyin's segmenter, and which syllables are fixed by user annotations
(fixed syllables are never changed, but they are context for their neighbours).

Rules, in order:

1. 地 as a one-character word after a reduplicated pair (慢慢地) or after a word of two or
   more characters (高兴地) is the adverbial particle ``de5``.
2. 得 as a one-character word right after a personal pronoun (我得走) is ``dei3`` unless the
   next character makes the common verb 得X (得到, 得了, 得知 …).
3. 一: ``yi1`` after 第, before 月/号, next to a numeral, at the end of a word or phrase, and
   before a neutral tone; ``yi5`` between reduplicated verbs (看一看); otherwise ``yi2``
   before a fourth tone and ``yi4`` before tones 1-3.
4. 不: ``bu5`` in A-not-A (好不好); ``bu2`` before a fourth tone; otherwise ``bu4``. A dictionary
   neutral tone is kept.
5. Third tone: inside a word every third tone before a third tone becomes second (the rule of
   pypinyin's mixin); then across word boundaries, right to left, a third tone before a third
   tone becomes second. So 老鼠 lao2 shu3, 保管|好 bao2 guan2 hao3, 老|保管 lao3 bao2 guan3,
   我|很|好 wo3 hen2 hao3.
"""

from __future__ import annotations

from dataclasses import dataclass

PRONOUNS = frozenset("我 你 他 她 它 您 咱 谁 我们 你们 他们 她们 它们 咱们 大家 自己".split())
#: 得 + one of these is the verb de2 (得到 "get", 得了, 得知 ...), not dei3 "must".
DE2_VERB_NEXT = frozenset("到了知出意罪分奖病益手逞失以体力当胜宠救志过空闲")
ZH_DIGITS = frozenset("零〇一二三四五六七八九十两")
ZH_BIG_UNITS = frozenset("百千万亿")


@dataclass
class Syl:
    """One syllable of a phrase, as the rules see it.

    Attributes:
        char: the Han character (or "" for a user annotation).
        pinyin: tone3 pinyin, changed in place by the rules.
        word_len: length of the segmented word the character belongs to (1 for annotations).
        word_end: True if the character is the last of its word.
        fixed: True for user annotations (never changed).
        numeric: True if the character came from a spelled-out number.
    """

    char: str
    pinyin: str
    word_len: int = 1
    word_end: bool = True
    fixed: bool = False
    numeric: bool = False


def _tone(p: str) -> int:
    return int(p[-1]) if p and p[-1].isdigit() else 5


def _set_tone(p: str, tone: int) -> str:
    return p[:-1] + str(tone) if p and p[-1].isdigit() else p


def _particles(ph: list[Syl]) -> None:
    for i, s in enumerate(ph):
        if s.fixed or s.word_len != 1:
            continue
        prev = ph[i - 1] if i > 0 else None
        if s.char == "地" and s.pinyin == "di4" and prev is not None:
            redup = i >= 2 and prev.char and prev.char == ph[i - 2].char and not prev.fixed
            if redup or prev.word_len >= 2:
                s.pinyin = "de5"
        elif s.char == "得" and s.pinyin == "de2" and prev is not None:
            word = "".join(x.char for x in ph[max(0, i - prev.word_len):i])
            nxt = ph[i + 1].char if i + 1 < len(ph) else ""
            if word in PRONOUNS and nxt and nxt not in DE2_VERB_NEXT:
                s.pinyin = "dei3"


def _yi(ph: list[Syl], i: int) -> str:
    s = ph[i]
    prev = ph[i - 1] if i > 0 else None
    nxt = ph[i + 1] if i + 1 < len(ph) else None
    if prev is not None and (prev.char == "第" or prev.char in ZH_DIGITS | ZH_BIG_UNITS or prev.numeric):
        return "yi1"
    if nxt is None or (s.word_end and s.word_len > 1):
        return "yi1"
    if nxt.char in ("月", "号") or nxt.char in ZH_DIGITS:
        return "yi1"
    if s.numeric and nxt.numeric and nxt.char not in ZH_BIG_UNITS:
        return "yi1"  # 一点五 (1.5), not 一点 "a little"
    if prev is not None and prev.char and prev.char == nxt.char:
        return "yi5"  # 看一看
    t = _tone(nxt.pinyin)
    return "yi1" if t == 5 else "yi2" if t == 4 else "yi4"


def _bu(ph: list[Syl], i: int) -> str:
    prev = ph[i - 1] if i > 0 else None
    nxt = ph[i + 1] if i + 1 < len(ph) else None
    if nxt is None:
        return "bu4"
    if prev is not None and prev.char and prev.char == nxt.char:
        return "bu5"  # 好不好
    return "bu2" if _tone(nxt.pinyin) == 4 else "bu4"


def _third_tone(ph: list[Syl]) -> None:
    # words as index ranges (an annotation is a one-syllable word)
    words: list[tuple[int, int]] = []
    start = 0
    for i, s in enumerate(ph):
        if s.word_end or s.fixed or i == len(ph) - 1:
            words.append((start, i + 1))
            start = i + 1
    # (a) inside a word: every third tone before another third tone becomes second
    for a, b in words:
        for k in range(a, b - 1):
            if _tone(ph[k].pinyin) == 3 and _tone(ph[k + 1].pinyin) == 3 and not ph[k].fixed:
                ph[k].pinyin = _set_tone(ph[k].pinyin, 2)
    # (b) across word boundaries, right to left, so 我|很|好 -> wo3 hen2 hao3, 保管|好 -> bao2 guan2 hao3
    for a, _b in reversed(words[1:]):
        k = a - 1
        if _tone(ph[k].pinyin) == 3 and _tone(ph[a].pinyin) == 3 and not ph[k].fixed:
            ph[k].pinyin = _set_tone(ph[k].pinyin, 2)


def apply(phrase: list[Syl]) -> list[str]:
    """Apply the rules above to one phrase (syllables between pauses) and return tone3 pinyin.

    Args:
        phrase: the syllables in order; modified in place.

    Returns:
        The final tone3 pinyin of each syllable, same length as ``phrase``.
    """
    _particles(phrase)
    lexical = [s.pinyin for s in phrase]
    for i, s in enumerate(phrase):
        if s.fixed:
            continue
        if s.char == "一" and lexical[i] in ("yi1", "yi2", "yi4"):
            s.pinyin = _yi(phrase, i)
        elif s.char == "不" and lexical[i] in ("bu2", "bu4"):
            s.pinyin = _bu(phrase, i)
    _third_tone(phrase)
    return [s.pinyin for s in phrase]
