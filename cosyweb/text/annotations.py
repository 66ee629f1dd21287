"""Parse and validate the bracket annotations in user text.

The annotation syntax is CosyVoice3's (see the README of FunAudioLLM/CosyVoice and the
added vocabulary of its ``CosyVoice3Tokenizer``). A bracketed syllable *stands in place
of one character*: ``她[h][ào]干净`` has no 好 in it. Accepted forms:

* CosyVoice3 token form: an initial without tone then a final with a tone mark, ``[h][ào]``;
  a zero-initial syllable is its final alone, ``[ài]``. A final without a mark is the neutral
  tone (``[d][e]``). A tone digit on the final (``[h][ao4]``) is accepted too.
* full-syllable form: ``[hao4]``, ``[hào]``, neutral tone ``[de5]`` or ``[de]``; ü as ``ü``, ``v``
  or ``u:``; any letter case except all capitals (all capitals means ARPAbet).
* English ARPAbet: adjacent brackets of the 39 ARPAbet phones, vowels with an optional
  stress digit 0-2, form one word: ``[M][AY0][N][UW1][T]``.
* control tags ``[breath]``, ``[laughter]``, ``[noise]`` ... (:data:`BRACKET_TAGS`) and the paired
  tags ``<strong>…</strong>``, ``<laughter>…</laughter>``.

Decision: a character followed by an annotation (``好[hao4]``) is *not* read as "this
character, pronounced so": the character is spoken and the bracket is spoken after it,
exactly as CosyVoice3 would, so both engines say the same thing.

Full-width brackets ``［…］`` are accepted as brackets. Whitespace just inside a bracket is
ignored. Everything else raises :class:`~cosyweb.errors.InvalidInputError` with code
``text.bad_annotation``, the offending token and its 1-based character position in the
original text (``details``: ``position``, ``token``).
"""

from __future__ import annotations

import difflib
import re
import unicodedata
from dataclasses import dataclass
from typing import Optional, Union

from cosyweb.errors import InvalidInputError
from cosyweb.text import syllables

#: Bracket control tags of CosyVoice3's tokenizer (``QwenTokenizer``/``CosyVoice3Tokenizer``).
BRACKET_TAGS: tuple[str, ...] = (
    "breath", "noise", "laughter", "cough", "clucking", "accent", "quick_breath",
    "hissing", "sigh", "vocalized-noise", "lipsmack", "mn",
)
#: Paired angle-bracket tags: ``<strong>…</strong>``, ``<laughter>…</laughter>``.
PAIRED_TAGS: tuple[str, ...] = ("strong", "laughter")
#: The 39 ARPAbet phones (CMUdict); the 15 vowels take a stress digit 0-2.
ARPABET_VOWELS = frozenset("AA AE AH AO AW AY EH ER EY IH IY OW OY UH UW".split())
ARPABET_CONSONANTS = frozenset("B CH D DH F G HH JH K L M N NG P R S SH T TH V W Y Z ZH".split())

_OPEN = "[［"
_CLOSE = "]］"
_ANGLE_RE = re.compile(r"<\s*(/?)\s*([A-Za-z][A-Za-z_-]*)\s*>")
_PINYINISH_RE = re.compile(r"[a-zü:āáǎàēéěèīíǐìōóǒòūúǔùǖǘǚǜńňǹḿê\u0300-\u036f0-9]+")


@dataclass(frozen=True)
class Plain:
    """Text between annotations. ``pos``: 1-based position of its first character."""

    text: str
    pos: int


@dataclass(frozen=True)
class Syllable:
    """A pinyin annotation standing for one character. ``pinyin`` is tone3 (``hao4``)."""

    pinyin: str
    pos: int
    source: str


@dataclass(frozen=True)
class Arpabet:
    """A run of adjacent ARPAbet brackets: one English word. ``phones`` e.g. ``("M", "AY0")``."""

    phones: tuple[str, ...]
    pos: int
    source: str


@dataclass(frozen=True)
class Tag:
    """A control tag in canonical form (``[breath]``, ``<strong>``, ``</strong>``)."""

    tag: str
    pos: int
    source: str


Piece = Union[Plain, Syllable, Arpabet, Tag]


@dataclass(frozen=True)
class _Bracket:
    start: int  # 0-based index of the opening bracket
    end: int  # 0-based index one past the closing bracket
    content: str  # stripped, NFC
    source: str  # as written, brackets included


def _error(pos: int, token: str, zh: str, en: str) -> InvalidInputError:
    return InvalidInputError("text.bad_annotation", zh, en, position=pos, token=token)


def _bad_pinyin(pos: int, token: str, reason: Optional[tuple[str, str]] = None) -> InvalidInputError:
    zh = f"第{pos}个字符处的拼音标注 {token} 无效"
    en = f"invalid pinyin annotation {token} at character {pos}"
    if reason:
        zh, en = f"{zh}：{reason[0]}", f"{en}: {reason[1]}"
    return _error(pos, token, zh, en)


def _bad_content(pos: int, token: str, content: str) -> InvalidInputError:
    """The most specific error for a bracket that is none of the accepted forms."""
    if content.isupper():
        return _error(
            pos, token,
            f"第{pos}个字符处的 ARPAbet 音素标注 {token} 无效"
            "（应为 39 个 ARPAbet 音素之一，元音可带重音 0-2，如 [AY1]）",
            f"invalid ARPAbet annotation {token} at character {pos} "
            "(expected one of the 39 ARPAbet phones, vowels with stress 0-2, e.g. [AY1])",
        )
    low = content.lower()
    close = difflib.get_close_matches(low, BRACKET_TAGS, n=1, cutoff=0.75)
    if close and not syllables.parse_syllable(low):
        return _error(
            pos, token,
            f"第{pos}个字符处的标签 {token} 无法识别，是否想写 [{close[0]}]？",
            f"unknown tag {token} at character {pos}; did you mean [{close[0]}]?",
        )
    if _PINYINISH_RE.fullmatch(low):
        split = syllables.tone_of(low)
        if re.search(r"[0-9]$", low) and not re.search(r"[1-5]$", low):
            return _bad_pinyin(pos, token, ("声调须为 1 到 5（5 为轻声）", "the tone must be 1 to 5 (5 = neutral)"))
        if split is None:
            return _bad_pinyin(pos, token, ("只能有一个声调", "a syllable has one tone only"))
        return _bad_pinyin(pos, token)  # the exact wording: "第5个字符处的拼音标注 [hoo4] 无效"
    return _error(
        pos, token,
        f"第{pos}个字符处的标注 {token} 无效（不是拼音、ARPAbet 音素或已知标签）",
        f"invalid annotation {token} at character {pos} (not a pinyin syllable, an ARPAbet phone or a known tag)",
    )


def _arpabet_phone(content: str) -> Optional[str]:
    m = re.fullmatch(r"([A-Z]{1,2})([0-2]?)", content)
    if not m:
        return None
    phone, stress = m.groups()
    if phone in ARPABET_VOWELS or (phone in ARPABET_CONSONANTS and not stress):
        return content
    return None


def _scan(text: str) -> tuple[list[Union[_Bracket, Tag]], list[tuple[int, int]], Optional[InvalidInputError]]:
    """Find brackets and angle tags.

    Returns the marks and plain spans (0-based ``[start, end)``) found before the first
    structural error (unbalanced or nested bracket, unknown or unbalanced angle tag), and that
    error (or None). Bracket *contents* are checked later by :func:`_resolve`.
    """
    marks: list[Union[_Bracket, Tag]] = []
    plain: list[tuple[int, int]] = []
    open_tags: dict[str, int] = {}
    i, n, plain_start = 0, len(text), 0
    while i < n:
        ch = text[i]
        if ch in _OPEN:
            j = i + 1
            while j < n and text[j] not in _OPEN and text[j] not in _CLOSE:
                j += 1
            if j >= n:
                tok = text[i:i + 12]
                return marks, plain, _error(i + 1, tok, f"第{i + 1}个字符处的标注 {tok} 缺少右方括号 ]",
                                            f"unclosed annotation {tok} at character {i + 1}: missing ']'")
            if text[j] in _OPEN:
                k = j + 1
                while k < n and text[k] not in _CLOSE:
                    k += 1
                tok = text[i:k + 1]
                return marks, plain, _error(i + 1, tok, f"第{i + 1}个字符处的标注 {tok} 含有嵌套的方括号",
                                            f"nested '[' in the annotation {tok} at character {i + 1}")
            source = text[i:j + 1]
            content = unicodedata.normalize("NFC", text[i + 1:j].strip())
            if not content:
                return marks, plain, _error(i + 1, source, f"第{i + 1}个字符处的标注 {source} 为空",
                                            f"empty annotation {source} at character {i + 1}")
            plain.append((plain_start, i))
            marks.append(_Bracket(i, j + 1, content, source))
            i = plain_start = j + 1
        elif ch in _CLOSE:
            return marks, plain, _error(i + 1, ch, f"第{i + 1}个字符处的 {ch} 没有对应的左方括号",
                                        f"unmatched '{ch}' at character {i + 1}")
        elif ch == "<" and (m := _ANGLE_RE.match(text, i)):
            closing, name = m.group(1) == "/", m.group(2).lower()
            source = m.group(0)
            err = None
            if name not in PAIRED_TAGS:
                err = _error(i + 1, source, f"第{i + 1}个字符处的标签 {source} 无法识别（支持 <strong>…</strong>）",
                             f"unknown tag {source} at character {i + 1} (supported: <strong>…</strong>)")
            elif closing and name not in open_tags:
                err = _error(i + 1, source, f"第{i + 1}个字符处的 {source} 没有对应的 <{name}>",
                             f"{source} at character {i + 1} has no matching <{name}>")
            elif not closing and name in open_tags:
                err = _error(i + 1, source, f"第{i + 1}个字符处的 {source} 嵌套在另一个 <{name}> 中",
                             f"{source} at character {i + 1} is nested inside another <{name}>")
            if err is not None:
                return marks, plain, err
            if closing:
                del open_tags[name]
            else:
                open_tags[name] = i + 1
            plain.append((plain_start, i))
            marks.append(Tag(f"<{'/' if closing else ''}{name}>", i + 1, source))
            i = plain_start = m.end()
        else:
            i += 1
    plain.append((plain_start, n))
    if open_tags:
        name, pos = min(open_tags.items(), key=lambda kv: kv[1])
        return marks, plain, _error(pos, f"<{name}>", f"第{pos}个字符处的 <{name}> 没有对应的 </{name}>",
                                    f"<{name}> at character {pos} has no closing </{name}>")
    return marks, plain, None


def _resolve(brackets: list[_Bracket]) -> list[Piece]:
    """Turn one run of brackets into pieces: adjacent ARPAbet phones join, initials take the next final."""
    out: list[Piece] = []
    k = 0
    while k < len(brackets):
        b = brackets[k]
        nxt = brackets[k + 1] if k + 1 < len(brackets) and brackets[k + 1].start == b.end else None
        low = b.content.lower()
        if low in BRACKET_TAGS:
            out.append(Tag(f"[{low}]", b.start + 1, b.source))
            k += 1
        elif b.content.isupper():
            phones, source = [], ""
            while k < len(brackets) and (not phones or brackets[k].start == brackets[k - 1].end):
                c = brackets[k]
                if not c.content.isupper() or c.content.lower() in BRACKET_TAGS:
                    break
                phone = _arpabet_phone(c.content)
                if phone is None:
                    raise _bad_content(c.start + 1, c.source, c.content)
                phones.append(phone)
                source += c.source
                k += 1
            out.append(Arpabet(tuple(phones), b.start + 1, source))
        elif low in syllables.initials():
            nlow = nxt.content.lower() if nxt else ""
            if nxt is None or nxt.content.isupper() or nlow in BRACKET_TAGS or nlow in syllables.initials():
                raise _bad_pinyin(b.start + 1, b.source, (
                    "声母后须紧跟一个韵母，如 [h][ào]",
                    "an initial must be followed directly by a final, e.g. [h][ào]",
                ))
            token = b.source + nxt.source
            tone3 = syllables.join_initial_final(low, nlow)
            if tone3 is None:
                bad_tone = re.search(r"[0-9]$", nlow) and not re.search(r"[1-5]$", nlow)
                raise _bad_pinyin(b.start + 1, token, (
                    ("声调须为 1 到 5（5 为轻声）", "the tone must be 1 to 5 (5 = neutral)") if bad_tone
                    else ("不是普通话音节", "not a Mandarin syllable")
                ))
            out.append(Syllable(tone3, b.start + 1, token))
            k += 2
        else:
            tone3 = syllables.parse_syllable(low)
            if tone3 is None:
                raise _bad_content(b.start + 1, b.source, b.content)
            out.append(Syllable(tone3, b.start + 1, b.source))
            k += 1
    return out


def parse(text: str) -> list[Piece]:
    """Split user text into plain text and validated annotations, in order.

    Args:
        text: the user's text, as typed.

    Returns:
        A list of :class:`Plain`, :class:`Syllable`, :class:`Arpabet` and :class:`Tag`, covering
        the text in order (empty plain runs are left out). Positions are 1-based into ``text``.

    Raises:
        InvalidInputError: code ``text.bad_annotation`` for an invalid bracket, an unbalanced
            ``[``/``]``, an unknown or unclosed angle tag; ``details["position"]`` is 1-based.
    """
    marks, plain_spans, scan_error = _scan(text)
    items: list[Piece] = [Plain(text[s:e], s + 1) for s, e in plain_spans if e > s]
    errors: list[InvalidInputError] = [scan_error] if scan_error else []
    run: list[_Bracket] = []

    def flush() -> None:
        try:
            items.extend(_resolve(run))
        except InvalidInputError as err:
            errors.append(err)
        run.clear()

    for m in marks:
        if isinstance(m, _Bracket):
            if run and m.start != run[-1].end:
                flush()
            run.append(m)
        else:
            flush()
            items.append(m)
    flush()
    if errors:  # report the error nearest the start of the text
        raise min(errors, key=lambda e: e.details["position"])
    return sorted(items, key=lambda p: p.pos)
