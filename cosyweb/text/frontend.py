"""The public entry points of the text front end: :func:`analyze`, :func:`find_polyphones`, :func:`annotate`.

Pipeline of :func:`analyze`::

    user text
      -> checks (empty, too long, language)
      -> annotations.parse      brackets and tags validated, 1-based positions
      -> normalize              numbers, dates, times, %, money, phones -> words (per plain run)
      -> runs.build_items       language runs, tokens, pauses; pinyin (sandhi) / Jyutping per phrase
      -> segment.split          first segment short, later ones sentence-sized
      -> [TextSegment]
"""

from __future__ import annotations

from typing import Optional

from cosyweb.errors import InvalidInputError
from cosyweb.text import annotations as ann
from cosyweb.text import segment
from cosyweb.text.normalize import FULLWIDTH, is_han
from cosyweb.text.pinyin import common_candidates
from cosyweb.text.runs import Item, build_items, n_syllables
from cosyweb.text.syllables import parse_syllable
from cosyweb.text.types import Polyphone, TextSegment, TokenKind

#: Accepted values of ``language``; None means "detect runs".
LANGUAGE_CHOICES = (None, "zh", "yue", "en")


def _check(text: str, language: Optional[str], max_chars: int) -> None:
    if not isinstance(text, str) or not text.strip():
        raise InvalidInputError("text.empty", "请输入要合成的文本", "Please enter the text to synthesize")
    if len(text) > max_chars:
        raise InvalidInputError(
            "text.too_long",
            f"文本过长：共 {len(text)} 个字符，上限为 {max_chars} 个",
            f"The text is too long: {len(text)} characters, the limit is {max_chars}",
            n_chars=len(text), max_chars=max_chars,
        )
    if language not in LANGUAGE_CHOICES:
        raise InvalidInputError(
            "text.bad_language",
            f"不支持的文本语言 {language!r}（可选 zh、yue、en 或自动）",
            f"Unsupported text language {language!r} (choose zh, yue, en or automatic)",
            language=language,
        )


def _context(text: str, pieces: list[ann.Piece]) -> str:
    """The text with full-width digits/letters made ASCII and annotations masked, same length."""
    chars = list(text.translate(FULLWIDTH))
    for p in pieces:
        if isinstance(p, ann.Plain):
            continue
        fill = "中" if isinstance(p, ann.Syllable) else "a" if isinstance(p, ann.Arpabet) else " "
        start = p.pos - 1
        chars[start:start + len(p.source)] = fill * len(p.source)
    return "".join(chars)


def _items(text: str, language: Optional[str], max_chars: int) -> list[Item]:
    _check(text, language, max_chars)
    pieces = ann.parse(text)
    items = build_items(pieces, _context(text, pieces), language)
    if not any(it.speakable for it in items):
        raise InvalidInputError(
            "text.nothing_to_say",
            "文本中没有可以朗读的内容（只有标点或符号）",
            "The text has nothing to speak (only punctuation or symbols)",
        )
    return items


def analyze(
    text: str,
    language: Optional[str] = None,
    *,
    first_segment_chars: int = 12,
    segment_chars: int = 60,
    max_chars: int = 5000,
) -> list[TextSegment]:
    """Validate, normalise, transcribe and segment user text.

    Args:
        text: the user's text, with optional annotations (``她[h][ào]干净``, ``她[hao4]干净``,
            ``[M][AY0][N][UW1][T]``, ``[breath]``, ``<strong>…</strong>``).
        language: None detects runs (Han -> ``"zh"``, Latin -> ``"en"``); ``"zh"`` reads Han as
            Mandarin; ``"yue"`` reads Han as Cantonese (tokens get ``jyutping`` and ``pinyin``);
            ``"en"`` reads numbers and symbols in English (Han stays Mandarin, Latin English).
        first_segment_chars: target length of the first segment, in syllables (one per Han
            character; English words by their syllables; punctuation one per character).
        segment_chars: maximum length of later segments, in the same units.
        max_chars: the longest accepted text, in characters.

    Returns:
        Segments with ``index`` 0..n-1. ``text`` is the normalised display text (numbers spelled
        out, pinyin annotations shown as tone-marked syllables, tags removed); ``cosyvoice_text``
        keeps annotations as CosyVoice3 tokens (``[h][ào]``) and tags as written.

    Raises:
        InvalidInputError: ``text.empty``, ``text.too_long``, ``text.bad_language``,
            ``text.bad_annotation`` (with the 1-based position), ``text.nothing_to_say``.
    """
    items = _items(text, language, max_chars)
    out: list[TextSegment] = []
    for idx, (s, e) in enumerate(segment.split(items, first_segment_chars, segment_chars)):
        part = items[s:e]
        out.append(
            TextSegment(
                index=idx,
                text="".join(it.display for it in part).strip(),
                cosyvoice_text="".join(it.cosy for it in part).strip(),
                tokens=[it.token for it in part if it.token is not None],
                n_syllables=sum(n_syllables(it) for it in part),
            )
        )
    return out


def find_polyphones(text: str) -> list[Polyphone]:
    """List the polyphonic Han characters of ``text`` for the pronunciation helper.

    A character is polyphonic when pypinyin (``pinyin(char, heteronym=True)``) gives it more
    than one reading that is either its default reading or used in a word of pypinyin's phrase
    dictionary (:func:`cosyweb.text.pinyin.common_candidates`; rare single-dictionary readings
    such as 她 jie3 would otherwise list almost every character). Characters already replaced by
    an annotation, and Han characters that came from spelled-out numbers, are not listed.

    Args:
        text: the user's text (annotations allowed).

    Returns:
        One :class:`Polyphone` per polyphonic character, in text order: 1-based ``pos`` in
        ``text``, ``current`` = the tone3 reading :func:`analyze` uses (after sandhi), and
        ``candidates`` = those readings, plus ``current`` at the end if it is not among them
        (a sandhi form such as 一 yi2).

    Raises:
        InvalidInputError: ``text.bad_annotation`` for invalid annotations (empty or
            unspeakable text gives an empty list).
    """
    if not isinstance(text, str) or not text.strip():
        return []
    try:
        items = _items(text, "zh", max(len(text), 1))
    except InvalidInputError as err:
        if err.code == "text.nothing_to_say":
            return []
        raise
    out: list[Polyphone] = []
    for it in items:
        tok = it.token
        if tok is None or tok.kind != TokenKind.HANZI or tok.annotated or not tok.pinyin:
            continue
        if text[tok.pos - 1] != tok.text:  # spelled-out number, not typed by the user
            continue
        cands = common_candidates(tok.text)
        if len(cands) > 1:
            if tok.pinyin not in cands:
                cands = cands + (tok.pinyin,)
            out.append(Polyphone(tok.pos, tok.text, tok.pinyin, cands))
    return out


def annotate(text: str, pos: int, reading: str) -> str:
    """Replace the Han character at 1-based ``pos`` with a pinyin annotation.

    Per CosyVoice3's semantics the bracket stands in place of the character:
    ``annotate("她好干净", 2, "hao4")`` -> ``"她[hao4]干净"``. ``reading`` may be tone3 (``hao4``),
    tone-marked (``hào``) or bracketed (``[hao4]``); it is written in tone3 form.

    Raises:
        InvalidInputError: ``text.bad_position`` if ``pos`` is outside the text or not on a Han
            character outside annotations; ``text.bad_annotation`` if ``reading`` is not a
            Mandarin syllable or the text already has an invalid annotation.
    """
    n = len(text) if isinstance(text, str) else 0
    if not isinstance(pos, int) or isinstance(pos, bool) or not 1 <= pos <= n:
        raise InvalidInputError(
            "text.bad_position",
            f"位置 {pos} 超出文本范围（1 到 {n}）",
            f"Position {pos} is outside the text (1 to {n})",
            position=pos,
        )
    ch = text[pos - 1]
    in_plain = any(isinstance(p, ann.Plain) and p.pos <= pos < p.pos + len(p.text) for p in ann.parse(text))
    if not is_han(ch) or not in_plain:
        raise InvalidInputError(
            "text.bad_position",
            f"第{pos}个字符“{ch}”不是可标注的汉字",
            f"Character {pos} ({ch!r}) is not a Chinese character that can be annotated",
            position=pos,
        )
    raw = str(reading or "").strip()
    tone3 = parse_syllable(raw[1:-1] if raw[:1] == "[" and raw[-1:] == "]" else raw) if raw else None
    if tone3 is None:
        raise InvalidInputError(
            "text.bad_annotation",
            f"拼音 {reading!r} 不是有效的普通话音节",
            f"{reading!r} is not a valid Mandarin pinyin syllable",
            position=pos, token=str(reading),
        )
    return f"{text[:pos - 1]}[{tone3}]{text[pos:]}"


#: Alias of :func:`find_polyphones` (``cosyweb.pipeline.service`` calls ``frontend.polyphones``).
polyphones = find_polyphones
