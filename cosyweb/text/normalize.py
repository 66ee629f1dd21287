"""Text normalisation: numbers, dates, times, percentages, money and phone numbers to words.

One left-to-right pass of one regular expression (alternatives in priority order: phone
number, ISO date, year before 年, time, ratio, percentage, money, temperature, English
ordinal, fraction, range, plain number) over a plain-text run. Each match is spelled out by
:mod:`cosyweb.text.verbalize` in Chinese or English:

* the language is the caller's ``language="en"`` if given; otherwise Chinese when a Han
  character touches the number (``3个``, ``第3``), else the script of the nearest letter
  (left first, then right), else Chinese;
* phone numbers are read digit by digit (Chinese reads 1 as 幺, :data:`PHONE_ONE_AS_YAO`);
* a year before 年 and the year of an ISO date are read digit by digit (二零二六年);
* a lone 2 before a measure word is 两 (2个 -> 两个).

Output is a list of :class:`Span` that keeps the 1-based position of every piece in the
original text, so tokens made from ``十一`` still point at the ``11`` the user typed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable, Optional

from cosyweb.text import verbalize as vb

#: Chinese phone numbers read 1 as 幺 (yao1), as people do, so 1 and 7 are not confused.
PHONE_ONE_AS_YAO = True
#: Measure words after which a lone 2 reads 两.
_MEASURE = frozenset("个只本次位种件条张台辆块双对份杯瓶碗天年周小时分钟秒点岁人家口项名倍")
#: English words after which a number from 1100 to 2099 is read as a year ("in 2026").
_EN_YEAR_CUE = frozenset("in since until by from year of during before after".split()) | {
    m.lower() for m in vb.EN_MONTHS
}
#: Full-width digits and Latin letters to ASCII (one character for one, positions unchanged).
FULLWIDTH = str.maketrans(
    "０１２３４５６７８９ＡＢＣＤＥＦＧＨＩＪＫＬＭＮＯＰＱＲＳＴＵＶＷＸＹＺａｂｃｄｅｆｇｈｉｊｋｌｍｎｏｐｑｒｓｔｕｖｗｘｙｚ",
    "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz",
)

_NUM = r"\d[\d,]*(?:\.\d+)?"
_PATTERN = re.compile(
    "|".join(
        [
            r"(?P<phone>(?<![\d.])(?:\+?86[- ]?)?1[3-9]\d(?:[- ]?\d{4}){2}(?![\d.])"
            r"|(?<![\d.])0\d{2,3}-\d{7,8}(?![\d.])|(?<![\d.])400-?\d{3}-?\d{4}(?![\d.])"
            r"|\(\d{3}\)\s?\d{3}-\d{4}(?!\d)|(?<![\d.])\d{3}-\d{3}-\d{4}(?![\d.]))",
            r"(?<![\d.])(?P<iy>\d{4})(?P<isep>[-/.])(?P<im>0?[1-9]|1[0-2])(?P=isep)(?P<id>0?[1-9]|[12]\d|3[01])(?![\d.])",
            r"(?<![\d.])(?P<zy>\d{4})(?=\s?年)",
            r"(?<![\d.:：])(?P<th>[01]?\d|2[0-4])[:：](?P<tm>[0-5]\d)(?:[:：](?P<ts>[0-5]\d))?(?![\d:：])",
            r"(?<![\d.:：])(?P<ra>\d+)\s?[:：]\s?(?P<rb>\d+)(?![\d:：])",
            rf"(?P<pn>(?:(?<![A-Za-z0-9.年月日号点时分秒])[-−])?{_NUM})\s?[%％]",
            rf"(?P<cs>[¥￥$€£])\s?(?P<ca>{_NUM})",
            rf"(?P<tn>(?:(?<![A-Za-z0-9.年月日号点时分秒])[-−])?{_NUM})\s?(?:℃|°\s?C)",
            r"(?P<on>\d+)(?P<osuf>st|nd|rd|th)\b",
            r"(?<![\d/])(?P<fa>\d+)/(?P<fb>\d+)(?![\d/])",
            rf"(?<![\d.])(?P<ga>{_NUM})\s?[~～–—-]\s?(?P<gb>{_NUM})(?![\d.])",
            rf"(?P<num>(?:(?<![A-Za-z0-9.年月日号点时分秒])[-−])?{_NUM})",
            r"(?P<amp>&)",
        ]
    )
)


@dataclass(frozen=True)
class Span:
    """A piece of normalised text.

    Attributes:
        text: the text (verbatim, or the words a number was spelled out as).
        pos: 1-based position in the original text of the piece's first source character.
        verbatim: True if character k of ``text`` is the original character at ``pos + k``;
            False for spelled-out words (all of them point at ``pos``).
        lang: for spelled-out words, the language they are in (``"zh"`` or ``"en"``); else None.
    """

    text: str
    pos: int
    verbatim: bool = True
    lang: Optional[str] = None


def is_han(ch: str) -> bool:
    """True for a CJK unified ideograph (BMP, extension A, compatibility, or the supplementary planes)."""
    o = ord(ch)
    return 0x4E00 <= o <= 0x9FFF or 0x3400 <= o <= 0x4DBF or 0xF900 <= o <= 0xFAFF or 0x20000 <= o <= 0x3FFFF


def is_latin(ch: str) -> bool:
    """True for an ASCII or Latin-1/Latin Extended letter."""
    return ch.isalpha() and (ch.isascii() or 0xC0 <= ord(ch) <= 0x24F)


def number_language(ctx: str, start: int, end: int, language: Optional[str]) -> str:
    """The language to read ``ctx[start:end]`` in (see the module docstring)."""
    if language == "en":
        return "en"
    if (end < len(ctx) and is_han(ctx[end])) or (start > 0 and is_han(ctx[start - 1])):
        return "zh"
    for ch in list(reversed(ctx[:start])) + list(ctx[end:]):
        if is_han(ch):
            return "zh"
        if is_latin(ch):
            return "en"
    return "zh"


def _prev_word(ctx: str, start: int) -> str:
    m = re.search(r"([A-Za-z]+)\W*$", ctx[:start])
    return m.group(1).lower() if m else ""


def _spell(m: re.Match, lang: str, ctx: str) -> str:
    g = m.groupdict()
    zh = lang == "zh"
    if g["phone"]:
        return vb.zh_digits(g["phone"], PHONE_ONE_AS_YAO) if zh else vb.en_digits(g["phone"])
    if g["iy"]:
        return vb.zh_date(g["iy"], g["im"], g["id"]) if zh else vb.en_date(g["iy"], g["im"], g["id"])
    if g["zy"]:
        return vb.zh_digits(g["zy"])
    if g["th"]:
        return vb.zh_time(g["th"], g["tm"], g["ts"]) if zh else vb.en_time(g["th"], g["tm"], g["ts"])
    if g["ra"]:
        a, b = g["ra"], g["rb"]
        return f"{vb.zh_cardinal(a)}比{vb.zh_cardinal(b)}" if zh else f"{vb.en_cardinal(a)} to {vb.en_cardinal(b)}"
    if g["pn"]:
        return "百分之" + vb.zh_cardinal(g["pn"]) if zh else vb.en_cardinal(g["pn"]) + " percent"
    if g["cs"]:
        return vb.zh_money(g["cs"], g["ca"]) if zh else vb.en_money(g["cs"], g["ca"])
    if g["tn"]:
        return vb.zh_cardinal(g["tn"]) + "摄氏度" if zh else vb.en_cardinal(g["tn"]) + " degrees Celsius"
    if g["on"]:
        return vb.en_ordinal(g["on"]) if not zh or g["osuf"] != "th" else vb.zh_cardinal(g["on"])
    if g["fa"]:
        a, b = g["fa"], g["fb"]
        return f"{vb.zh_cardinal(b)}分之{vb.zh_cardinal(a)}" if zh else vb.en_fraction(a, b)
    if g["ga"]:
        a, b = g["ga"], g["gb"]
        return f"{vb.zh_cardinal(a)}到{vb.zh_cardinal(b)}" if zh else f"{vb.en_cardinal(a)} to {vb.en_cardinal(b)}"
    if g["amp"]:
        return "和" if zh else "and"
    num = g["num"]
    if zh:
        if num == "2" and m.end() < len(ctx) and ctx[m.end()] in _MEASURE and ctx[m.start() - 1:m.start()] != "第":
            return "两"
        return vb.zh_cardinal(num)
    if re.fullmatch(r"1[1-9]\d\d|20\d\d", num) and _prev_word(ctx, m.start()) in _EN_YEAR_CUE:
        return vb.en_year(num)
    return vb.en_cardinal(num)


def normalize(ctx: str, start: int, end: int, language: Optional[str] = None,
              spell: Callable[[re.Match, str, str], str] = _spell) -> list[Span]:
    """Spell out the numbers etc. in ``ctx[start:end]``.

    Args:
        ctx: the whole text, same length as the user's (full-width digits already made ASCII
            with :data:`FULLWIDTH`; annotations may be masked), used for context.
        start: 0-based start of the plain run to normalise.
        end: 0-based end (exclusive).
        language: ``"en"`` reads every number in English; anything else decides by context.

    Returns:
        Spans covering the run in order; verbatim spans and spelled-out spans alternate.
    """
    out: list[Span] = []
    i = start
    for m in _PATTERN.finditer(ctx, start, end):
        if m.start() > i:
            out.append(Span(ctx[i:m.start()], i + 1))
        lang = "en" if m.group("on") and m.group("osuf") != "th" else number_language(ctx, m.start(), m.end(), language)
        words = spell(m, lang, ctx)
        if lang == "en":
            if m.start() > 0 and ctx[m.start() - 1].isalnum():
                words = " " + words
            if m.end() < len(ctx) and ctx[m.end()].isalnum():
                words += " "
        out.append(Span(words, m.start() + 1, verbatim=False, lang=lang))
        i = m.end()
    if i < end:
        out.append(Span(ctx[i:end], i + 1))
    return out


def normalize_text(text: str, language: Optional[str] = None) -> str:
    """Convenience: the normalised string of a whole plain text (no annotations), for tests and the UI."""
    ctx = text.translate(FULLWIDTH)
    return "".join(s.text for s in normalize(ctx, 0, len(ctx), language))
