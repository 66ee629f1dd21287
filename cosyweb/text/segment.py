"""Sentence splitting for streaming: cut the item list into sentence-sized segments.

Rules. Lengths are spoken lengths (:func:`spoken_length`): one per Han character (so for
Chinese the length is the display length), syllables for English words (``"The weather"`` is 3,
not 11), 0 for spaces and tags, one per punctuation character.

* Sentences end after a sentence-final pause (。！？.!?… or a newline); closing quotes and
  brackets right after it stay with that sentence.
* Segments pack whole sentences up to a limit: ``first_chars`` for the first segment (short,
  so the first audio chunk comes early), ``max_chars`` for the later ones.
* A sentence longer than the limit is cut at the last clause pause (，、；： …) within the
  limit; for the first segment, else at the first clause pause within 1.5 × ``first_chars``,
  else at the sentence end when the whole sentence is within 1.5 × ``first_chars``;
  else between two tokens within the limit.
* A cut is never inside an annotation or an English word (both are single items), inside a
  spelled-out number (一百二十三, "one hundred and twenty-three") or a ``<strong>…</strong>`` span,
  never just before a pause mark or closing quote, never just after an opening quote, and
  every segment has something to say (a segment of only tags or pauses joins its neighbour).
"""

from __future__ import annotations

from collections import deque
from typing import Sequence

from cosyweb.text.runs import CLOSERS, OPENERS, Item, n_syllables
from cosyweb.text.types import TokenKind

#: The first segment may run to this multiple of ``first_chars`` to reach a clause pause.
FIRST_SLACK = 1.5


def spoken_length(item: Item) -> int:
    """The length of one item for segmentation: its syllables when speakable (1 per Han
    character, vowel phones of an ARPAbet word, an estimate for an English word), 0 for white
    space and tags, else its display characters (punctuation)."""
    if item.speakable:
        return max(1, n_syllables(item))
    return 0 if item.display.isspace() else len(item.display)


def _allowed(items: Sequence[Item]) -> list[bool]:
    """allowed[b]: a cut before item b (0 < b < n) is permitted."""
    n = len(items)
    ok = [False] * (n + 1)
    depth = 0
    for b in range(1, n):
        tok = items[b - 1].token
        if tok is not None and tok.kind == TokenKind.TAG and tok.text.startswith("<"):
            depth += -1 if tok.text.startswith("</") else 1
        prev, nxt = items[b - 1], items[b]
        ok[b] = (
            depth == 0
            and not nxt.is_pause
            and not (nxt.token is None and nxt.display in CLOSERS)
            and not (prev.token is None and prev.display in OPENERS and not nxt.display.isspace())
            and not (prev.group and prev.group == nxt.group)
        )
    return ok


def _sentences(items: Sequence[Item], ok: list[bool]) -> list[tuple[int, int]]:
    out, start, b = [], 0, 0
    n = len(items)
    while b < n:
        if items[b].sentence_end:
            c = b + 1
            while c < n and items[c].token is None and (items[c].display in CLOSERS or items[c].display.isspace()):
                c += 1
            while c < n and not ok[c]:
                c += 1
            if c < n:
                out.append((start, c))
                start = c
            b = c
        else:
            b += 1
    if start < n:
        out.append((start, n))
    return out


class _Cutter:
    def __init__(self, items: Sequence[Item]) -> None:
        self.items = items
        self.ok = _allowed(items)
        self.prefix = [0]
        self.speak = [0]
        for it in items:
            self.prefix.append(self.prefix[-1] + spoken_length(it))
            self.speak.append(self.speak[-1] + it.speakable)

    def length(self, s: int, e: int) -> int:
        return self.prefix[e] - self.prefix[s]

    def has_speech(self, s: int, e: int) -> bool:
        return self.speak[e] > self.speak[s]

    def cut(self, s: int, e: int, limit: int, slack: float) -> int:
        """A cut point in (s, e), or e when there is none."""
        reach = limit * max(slack, 1.0)
        clause_fit = clause_near = hard = first = None
        for b in range(s + 1, e):
            if self.length(s, b) > reach and first is not None:
                break
            if not (self.ok[b] and self.has_speech(s, b) and self.has_speech(b, e)):
                continue
            first = b if first is None else first
            fits = self.length(s, b) <= limit
            if self.items[b - 1].is_pause:
                if fits:
                    clause_fit = b
                elif clause_near is None and self.length(s, b) <= reach:
                    clause_near = b
            if fits:
                hard = b
        whole = e if self.length(s, e) <= reach else None  # the sentence end is the best pause
        for choice in (clause_fit, clause_near, whole, hard, first):
            if choice is not None:
                return choice
        return e


def split(items: Sequence[Item], first_chars: int, max_chars: int) -> list[tuple[int, int]]:
    """Cut ``items`` into segments.

    Args:
        items: the analysed text (see :func:`cosyweb.text.runs.build_items`).
        first_chars: target length of the first segment, in :func:`spoken_length` units (>= 1).
        max_chars: maximum length of the later segments, in the same units (>= 1).

    Returns:
        ``(start, end)`` item index ranges covering ``items`` in order, without gaps.
    """
    first_chars, max_chars = max(1, first_chars), max(1, max_chars)
    cutter = _Cutter(items)
    queue = deque(_sentences(items, cutter.ok))
    segs: list[tuple[int, int]] = []
    cur: tuple[int, int] | None = None
    while queue:
        s, e = queue.popleft()
        limit, slack = (first_chars, FIRST_SLACK) if not segs else (max_chars, 1.0)
        if cur is not None and cutter.length(cur[0], e) <= limit:
            cur = (cur[0], e)
            continue
        if cur is not None:
            segs.append(cur)
            cur = None
            limit, slack = max_chars, 1.0
        if cutter.length(s, e) <= limit:
            cur = (s, e)
            continue
        c = cutter.cut(s, e, limit, slack)
        segs.append((s, c))
        if c < e:
            queue.appendleft((c, e))
    if cur is not None:
        segs.append(cur)
    return _merge_silent(segs, cutter)


def _merge_silent(segs: list[tuple[int, int]], cutter: _Cutter) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for s, e in segs:
        if out and (not cutter.has_speech(s, e) or not cutter.has_speech(*out[-1])):
            out[-1] = (out[-1][0], e)
        else:
            out.append((s, e))
    return out
