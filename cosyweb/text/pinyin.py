"""Mandarin grapheme-to-pinyin (G2P) for a phrase, with user annotations as overrides.

Method: pypinyin (``lazy_pinyin`` with ``Style.TONE3``, ``neutral_tone_with_five=True``) on
the words found by pypinyin's own phrase-dictionary segmenter (``pypinyin.seg.simpleseg.seg``,
maximum matching over ``PHRASES_DICT``), so the phrase dictionary decides polyphones
(银行 yin2 hang2, 行走 xing2 zou3). Tone sandhi and the particle fixes are then applied to
the whole phrase by :mod:`cosyweb.text.sandhi` (pypinyin's own ``tone_sandhi=True`` only sees
one word at a time; see that module). Output is tone3 with ü written ``v`` (``lv4``), neutral
tone ``5``. Cost: about 0.1 ms per character after pypinyin's one-off import (about 1 s).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from functools import lru_cache
from typing import Optional, Sequence

from pypinyin import Style, lazy_pinyin, pinyin
from pypinyin.constants import PHRASES_DICT
from pypinyin.contrib.tone_convert import to_tone3
from pypinyin.seg.simpleseg import seg

from cosyweb.text import sandhi
from cosyweb.text.syllables import parse_syllable


@dataclass(frozen=True)
class HanUnit:
    """One syllable slot of a phrase.

    Attributes:
        char: a Han character, or "" for a user annotation.
        fixed: the annotation's tone3 pinyin (it overrides G2P), or None.
        numeric: True if the character came from a spelled-out number (affects 一).
    """

    char: str
    fixed: Optional[str] = None
    numeric: bool = False


def _lookup(run: str) -> list[tuple[str, int, bool]]:
    """(tone3, word length, is last char of its word) for each char of a plain Han run."""
    out: list[tuple[str, int, bool]] = []
    for word in seg(run):
        pys = lazy_pinyin(word, style=Style.TONE3, neutral_tone_with_five=True, errors=lambda x: [""] * len(x))
        if len(pys) != len(word):  # defensive: pypinyin returned one item per non-Han run
            pys = (pys + [""] * len(word))[: len(word)]
        for k, p in enumerate(pys):
            out.append((p if parse_syllable(p) else "", len(word), k == len(word) - 1))
    return out


def phrase_pinyin(units: Sequence[HanUnit]) -> list[Optional[str]]:
    """Tone3 pinyin for one phrase of Han characters and annotations.

    Args:
        units: the syllable slots of a phrase (no pauses inside), in order.

    Returns:
        One tone3 string per unit (``"hao3"``, ``"de5"``, ``"lv4"``); an annotated unit gets its
        annotation unchanged; a character pypinyin does not know gets None.
    """
    syls: list[sandhi.Syl] = []
    i = 0
    while i < len(units):
        u = units[i]
        if u.fixed is not None:
            syls.append(sandhi.Syl("", u.fixed, fixed=True))
            i += 1
            continue
        j = i
        while j < len(units) and units[j].fixed is None:
            j += 1
        run = "".join(x.char for x in units[i:j])
        for u2, (p, wlen, wend) in zip(units[i:j], _lookup(run)):
            syls.append(sandhi.Syl(u2.char, p, word_len=wlen, word_end=wend, numeric=u2.numeric))
        i = j
    out = sandhi.apply(syls)
    return [p or None for p in out]


def han_pinyin(text: str) -> list[Optional[str]]:
    """Tone3 pinyin for a string of Han characters read as one phrase (convenience for tests/UI)."""
    return phrase_pinyin([HanUnit(c) for c in text])


def candidates(char: str) -> tuple[str, ...]:
    """All tone3 readings pypinyin knows for one character (``pinyin(..., heteronym=True)``)."""
    readings = pinyin(char, style=Style.TONE3, heteronym=True, neutral_tone_with_five=True)[0]
    return tuple(dict.fromkeys(r for r in readings if parse_syllable(r)))


@lru_cache(maxsize=1)
def _attested() -> dict[str, frozenset[str]]:
    """Char -> tone3 readings used in some word of pypinyin's phrase dictionary (built once, ~0.3 s)."""
    idx: dict[str, set[str]] = defaultdict(set)
    for phrase, readings in PHRASES_DICT.items():
        for ch, options in zip(phrase, readings):
            idx[ch].update(options)
    tone3 = lru_cache(maxsize=None)(lambda r: to_tone3(r, neutral_tone_with_five=True))
    return {ch: frozenset(tone3(r) for r in v) for ch, v in idx.items()}


def common_candidates(char: str) -> tuple[str, ...]:
    """The readings of :func:`candidates` that matter for the pronunciation helper.

    Keeps pypinyin's default (first) reading and every reading used in a word of pypinyin's
    phrase dictionary, and drops readings found only in the single-character dictionary
    (她 has ``ta1, jie3, chi2`` there; only ``ta1`` is used in words, so 她 is not polyphonic).
    """
    cands = candidates(char)
    used = _attested().get(char, frozenset())
    return tuple(r for k, r in enumerate(cands) if k == 0 or r in used)
