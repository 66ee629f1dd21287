"""Turn parsed, normalised text into a flat list of items: tokens in language runs, pauses, spaces.

An :class:`Item` is the unit that segmentation cuts between. It carries the display text,
the CosyVoice3 text and (for speakable things, pauses and tags) a :class:`Token`. Characters
that are neither speakable nor punctuation (quotes, brackets, other scripts, symbols) are
kept as silent items so the display and CosyVoice texts keep them, but they make no token.

Language runs: Han characters are Mandarin (``"zh"``) or, with ``language="yue"``, Cantonese;
Latin words are English. Pinyin comes from :func:`cosyweb.text.pinyin.phrase_pinyin` per
phrase (a maximal run of Han characters and annotations, optionally across ``<strong>`` tags),
Jyutping from :func:`cosyweb.text.jyutping.han_jyutping`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Optional

from cosyweb.text import annotations as ann
from cosyweb.text.jyutping import han_jyutping
from cosyweb.text.normalize import Span, is_han, is_latin, normalize
from cosyweb.text.pinyin import HanUnit, phrase_pinyin
from cosyweb.text.syllables import to_cosyvoice, to_marks
from cosyweb.text.types import Token, TokenKind

#: Pause after each punctuation mark, in ms; a run of marks ("！？", "……") takes the longest.
PAUSE_MS: dict[str, int] = {
    "、": 150, "，": 200, ",": 200, "—": 200, "–": 200, "～": 200, "~": 200,
    "：": 250, ":": 250, "；": 300, ";": 300,
    "。": 400, ".": 400, "！": 400, "!": 400, "？": 400, "?": 400, "…": 400, "\n": 400,
}
#: Marks that end a sentence (segmentation cuts after them).
SENTENCE_END = frozenset("。.！!？?…\n")
#: Closing marks that stay with the sentence before them.
CLOSERS = frozenset("”’\"'」』）)】》〉]")
#: Opening marks that stay with the text after them.
OPENERS = frozenset("“‘\"'「『（(【《〈[")
#: English abbreviations whose period is not a pause.
ABBREVIATIONS = frozenset("mr mrs ms dr prof st jr sr vs etc no mt fig".split())

_WORD_RE = re.compile(r"[A-Za-z\u00C0-\u024F]+(?:['’\-][A-Za-z\u00C0-\u024F]+)*")


@dataclass
class Item:
    """One unit of the analysed text.

    Attributes:
        display: display text (no annotations).
        cosy: CosyVoice3 text (annotations as CosyVoice3 tokens).
        token: the token, or None for spaces and silent characters.
        sentence_end: a pause that ends a sentence.
        numeric: made from a spelled-out number (for the 一 rule).
        group: items spelled out from one number share a non-zero group (never cut inside).
    """

    display: str
    cosy: str
    token: Optional[Token] = None
    sentence_end: bool = False
    numeric: bool = False
    group: int = 0

    @property
    def speakable(self) -> bool:
        """True for Han characters, English words and ARPAbet words."""
        return self.token is not None and self.token.kind in (TokenKind.HANZI, TokenKind.WORD, TokenKind.ARPABET)

    @property
    def is_pause(self) -> bool:
        return self.token is not None and self.token.kind == TokenKind.PAUSE


def english_syllables(word: str) -> int:
    """Rough syllable count of an English word (vowel groups; silent final e; acronyms by letter)."""
    if word.isupper() and len(word) <= 5:
        return len(word)
    w = word.lower()
    n = len(re.findall(r"[aeiouy]+", w))
    if n > 1 and w.endswith("e") and not w.endswith(("le", "ee")):
        n -= 1
    return max(n, 1)


def _plain_items(span: Span, han_lang: str) -> list[Item]:
    items = _scan_span(span, han_lang)
    if not span.verbatim:
        items = [replace(it, group=span.pos) for it in items]
    return items


def _scan_span(span: Span, han_lang: str) -> list[Item]:
    out: list[Item] = []
    text, i = span.text, 0
    while i < len(text):
        ch = text[i]
        pos = span.pos + i if span.verbatim else span.pos
        if is_han(ch):
            out.append(Item(ch, ch, Token(TokenKind.HANZI, ch, han_lang, pos=pos), numeric=not span.verbatim))
            i += 1
        elif is_latin(ch) and (m := _WORD_RE.match(text, i)):
            w = m.group(0)
            out.append(Item(w, w, Token(TokenKind.WORD, w, "en", pos=pos)))
            i = m.end()
        elif ch in PAUSE_MS:
            j = i
            while j < len(text) and text[j] in PAUSE_MS:
                j += 1
            marks = text[i:j]
            prev_word = next((x.token.text for x in reversed(out) if x.token), "")
            if marks == "." and prev_word.lower() in ABBREVIATIONS:
                out.append(Item(marks, marks))
            else:
                ms = max(PAUSE_MS[c] for c in marks)
                end = any(c in SENTENCE_END for c in marks)
                out.append(Item(marks, marks, Token(TokenKind.PAUSE, marks, pause_ms=ms, pos=pos), sentence_end=end))
            i = j
        elif ch.isspace():
            j = i
            while j < len(text) and text[j].isspace() and text[j] != "\n":
                j += 1
            j = max(j, i + 1)
            out.append(Item(" ", " "))
            i = j
        else:
            out.append(Item(ch, ch))
            i += 1
    return out


def _fill_readings(items: list[Item], han_lang: str) -> list[Item]:
    """Give every Han token its pinyin (and Jyutping for Cantonese), phrase by phrase."""
    out = list(items)
    i = 0
    while i < len(out):
        if not (out[i].token and out[i].token.kind == TokenKind.HANZI):
            i += 1
            continue
        j = i
        idx: list[int] = []
        while j < len(out) and out[j].token and (
            out[j].token.kind == TokenKind.HANZI or out[j].token.text in ("<strong>", "</strong>")
        ):
            if out[j].token.kind == TokenKind.HANZI:
                idx.append(j)
            j += 1
        units = [HanUnit(out[k].token.text if not out[k].token.annotated else "",
                         out[k].token.pinyin if out[k].token.annotated else None, out[k].numeric) for k in idx]
        pys = phrase_pinyin(units)
        jps: dict[int, Optional[str]] = {}
        if han_lang == "yue":
            plain = [k for k in idx if not out[k].token.annotated]
            for k, jp in zip(plain, han_jyutping("".join(out[k].token.text for k in plain))):
                jps[k] = jp
        for k, p in zip(idx, pys):
            tok = out[k].token
            if tok.annotated:
                continue
            if p is None and jps.get(k) is None:
                out[k] = Item(out[k].display, out[k].cosy)  # unreadable: keep the text, drop the token
                continue
            lang = "yue" if han_lang == "yue" and jps.get(k) else "zh"
            out[k] = replace(out[k], token=replace(tok, pinyin=p, jyutping=jps.get(k), lang=lang))
        i = j
    return out


def build_items(pieces: list[ann.Piece], ctx: str, language: Optional[str]) -> list[Item]:
    """Build the item list for the whole text.

    Args:
        pieces: output of :func:`cosyweb.text.annotations.parse`.
        ctx: the text with full-width digits/letters made ASCII and annotations masked
            (same length as the original), for normalisation context.
        language: None, ``"zh"``, ``"yue"`` or ``"en"`` (see :func:`cosyweb.text.frontend.analyze`).

    Returns:
        Items in text order, with pinyin/Jyutping filled in.
    """
    han_lang = "yue" if language == "yue" else "zh"
    items: list[Item] = []
    for p in pieces:
        if isinstance(p, ann.Plain):
            for span in normalize(ctx, p.pos - 1, p.pos - 1 + len(p.text), language):
                items.extend(_plain_items(span, han_lang))
        elif isinstance(p, ann.Syllable):
            tok = Token(TokenKind.HANZI, p.source, "zh", pinyin=p.pinyin, annotated=True, pos=p.pos)
            items.append(Item(to_marks(p.pinyin), to_cosyvoice(p.pinyin), tok))
        elif isinstance(p, ann.Arpabet):
            tok = Token(TokenKind.ARPABET, p.source, "en", phones=p.phones, annotated=True, pos=p.pos)
            items.append(Item(" ".join(p.phones), "".join(f"[{ph}]" for ph in p.phones), tok))
        else:
            items.append(Item("", p.tag, Token(TokenKind.TAG, p.tag, pos=p.pos)))
    return _fill_readings(items, han_lang)


def n_syllables(item: Item) -> int:
    """Spoken syllables of one item: 1 per Han character, vowel phones of an ARPAbet word, estimate for English."""
    t = item.token
    if t is None:
        return 0
    if t.kind == TokenKind.HANZI:
        return 1
    if t.kind == TokenKind.ARPABET:
        return max(1, sum(ph[:2] in ann.ARPABET_VOWELS for ph in t.phones))
    if t.kind == TokenKind.WORD:
        return english_syllables(t.text)
    return 0

