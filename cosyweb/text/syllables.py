"""The Mandarin syllable inventory and conversions between pinyin spellings.

Everything here is derived from pypinyin's own data, not from a hand list:

* the toned syllables are the readings in ``pypinyin.constants.PINYIN_DICT``
  (every reading of every character pypinyin knows: 1,549 toned syllables on
  426 toneless bases for pypinyin 0.55), converted to tone-number form with
  ``pypinyin.contrib.tone_convert.to_tone3``;
* initials and finals are what ``to_initials``/``to_finals`` (``strict=False``,
  i.e. the spelling split that treats ``y`` and ``w`` as initials, as CosyVoice3's
  tokens do) give for those syllables.

Forms used in cosyweb:

* **tone3**: tone-numbered, ü written ``v``, neutral tone ``5``: ``hao4``, ``lv4``, ``de5``.
  This is what the front end produces and what espeak-ng's ``cmn-Latn-pinyin`` reads.
* **marks**: tone marks, ``hào``, ``lǜ``, ``de`` (no mark = neutral tone).
* **CosyVoice3 tokens**: an initial without tone, then the final with its tone mark:
  ``[h][ào]``; a zero-initial syllable is its final alone, ``[ài]``. The spelling follows
  CosyVoice3's added vocabulary (``[y]``/``[w]`` are initials, ``[ǜ]``, ``[vè]`` for üe).
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache
from typing import Optional

from pypinyin.constants import PINYIN_DICT
from pypinyin.contrib.tone_convert import to_finals, to_initials, to_tone, to_tone3

#: Combining tone marks (Unicode NFD) -> tone: macron 1, acute 2, caron 3, grave 4. These are the
#: marks of pypinyin's ``PHONETIC_SYMBOL_DICT`` (ā á ǎ à, ǖ ǘ ǚ ǜ, ḿ ń ň ǹ, m̄ m̀, ê̄ ế ê̌ ề) decomposed.
_TONE_MARKS = {"\u0304": 1, "\u0301": 2, "\u030c": 3, "\u0300": 4}
_DIAERESIS, _CIRCUMFLEX = "\u0308", "\u0302"
_VOWEL_RE = re.compile(r"[aeiouvê]")
_BASE_RE = re.compile(r"[a-zê]+")


@lru_cache(maxsize=1)
def toned_syllables() -> frozenset[str]:
    """All toned syllables pypinyin knows, in tone3 form (``{"a1", ..., "zuo4"}``), about 1,549."""
    marked = {reading for readings in PINYIN_DICT.values() for reading in readings.split(",")}
    out = {to_tone3(reading, neutral_tone_with_five=True) for reading in marked}
    return frozenset(s for s in out if s[-1:].isdigit())


@lru_cache(maxsize=1)
def syllable_bases() -> frozenset[str]:
    """Toneless syllables (``{"a", "ba", ..., "zuo"}``), about 426; any of them may take neutral tone 5."""
    return frozenset(s[:-1] for s in toned_syllables())


@lru_cache(maxsize=1)
def initials() -> frozenset[str]:
    """Initials in the non-strict split: b p m f d t n l g k h j q x zh ch sh r z c s y w (23)."""
    return frozenset(i for b in syllable_bases() if (i := to_initials(b, strict=False)))


@lru_cache(maxsize=1)
def finals() -> frozenset[str]:
    """Finals (toneless, ü as ``v``) in the non-strict split, e.g. ``ao``, ``iong``, ``ue``, ``v``, ``ve``."""
    out = set()
    for b in syllable_bases():
        f = to_finals(b, strict=False)
        if _VOWEL_RE.search(f):
            out.add(f)
    return frozenset(out)


def _split_tone(s: str) -> Optional[tuple[str, int]]:
    """``"hǎo"`` -> ``("hao", 3)``, ``"hao3"`` -> ``("hao", 3)``, ``"hao"`` -> ``("hao", 5)``.

    ü and ``u:`` become ``v``. Returns None for a tone digit outside 1-5, more than one
    tone mark, or both a digit and a mark.
    """
    s = unicodedata.normalize("NFD", s.strip().lower().replace("u:", "v"))
    tone = 0
    if s[-1:].isdigit():
        tone = int(s[-1])
        if not 1 <= tone <= 5:
            return None
        s = s[:-1]
    letters: list[str] = []
    for ch in s:
        if ch in _TONE_MARKS:
            if tone or not letters:
                return None  # two marks, a mark and a digit, or a mark on nothing
            tone = _TONE_MARKS[ch]
        elif ch == _DIAERESIS and letters[-1:] == ["u"]:
            letters[-1] = "v"
        elif ch == _CIRCUMFLEX and letters[-1:] == ["e"]:
            letters[-1] = "ê"
        else:
            letters.append(ch)
    base = "".join(letters)
    if not _BASE_RE.fullmatch(base):
        return None
    return base, (tone or 5)


def _respell(base: str) -> str:
    """Pinyin spelling rule: after j, q, x, y the letter ü is written u (``jv`` -> ``ju``)."""
    if base[:1] in ("j", "q", "x", "y") and base[1:2] == "v":
        return base[0] + "u" + base[2:]
    return base


def _valid(base: str, tone: int) -> Optional[str]:
    base = _respell(base)
    if tone == 5:
        return f"{base}5" if base in syllable_bases() else None
    s = f"{base}{tone}"
    return s if s in toned_syllables() else None


def tone_of(text: str) -> Optional[tuple[str, int]]:
    """Split a pinyin spelling (tone number, tone mark or none) into (toneless base, tone 1-5).

    Returns None when the tone is malformed (digit outside 1-5, two marks). Does not check
    that the base is a real syllable; see :func:`parse_syllable`.
    """
    return _split_tone(text) if text.strip() else None


def parse_syllable(text: str) -> Optional[str]:
    """Validate one full pinyin syllable and return it in tone3 form, or None if it is not real.

    Accepts ``hao4``, ``hào``, ``hao5``/``hao`` (neutral tone), ``lv4``/``lü4``/``lǜ``,
    any letter case. A syllable with tone 1-4 must be one pypinyin lists for some character;
    any real base may take the neutral tone 5.
    """
    split = tone_of(text)
    return _valid(*split) if split else None


def join_initial_final(initial: str, final: str) -> Optional[str]:
    """Validate a CosyVoice3 pair ``[initial][final]`` and return the syllable in tone3 form.

    ``("h", "ào")`` -> ``"hao4"``; ``("b", "üe")`` -> None (not a syllable);
    ``("j", "ǚ")`` -> ``"ju3"``.
    """
    split = tone_of(final)
    if initial not in initials() or not split or split[0] not in finals():
        return None
    return _valid(initial + split[0], split[1])


def to_marks(tone3: str) -> str:
    """``hao4`` -> ``hào``, ``lv4`` -> ``lǜ``, ``de5`` -> ``de`` (display form)."""
    return to_tone(tone3)


def to_cosyvoice(tone3: str) -> str:
    """Convert a tone3 syllable to CosyVoice3's token form.

    ``hao4`` -> ``[h][ào]``; ``ai4`` -> ``[ài]``; ``lv4`` -> ``[l][ǜ]``; ``lve4`` -> ``[l][vè]``;
    ``de5`` -> ``[d][e]``. The interjections without a vowel (``m2``, ``ng2``, ``hm5``) have no
    CosyVoice3 token; they are written in the full-syllable form (``[m2]``), which
    :mod:`cosyweb.text.annotations` parses back unambiguously.
    """
    marked = to_tone(tone3)
    initial = to_initials(tone3, strict=False)
    final = to_finals(tone3, strict=False)
    if not _VOWEL_RE.search(final):
        return f"[{tone3}]"
    final_marked = marked[len(initial):]
    if final_marked.startswith("ü") and len(final_marked) > 1:
        final_marked = "v" + final_marked[1:]  # CosyVoice3 spells üe as [vè]
    return f"[{initial}][{final_marked}]" if initial else f"[{final_marked}]"
