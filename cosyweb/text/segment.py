"""Sentence splitting for streaming: cut the item list into sentence-sized segments.

Rules (lengths are display characters, tags count 0):

* Sentences end after a sentence-final pause (。！？.!?… or a newline); closing quotes and
  brackets right after it stay with that sentence.
* The first segment is short, so the first audio chunk comes early: the first sentence if it
  has at most ``first_chars`` characters; otherwise it is cut at the last clause pause
  (，、；： …) within ``first_chars``, else at the first clause pause within 1.5 × ``first_chars``,
  else between two tokens near ``first_chars``.
* Later segments pack whole sentences up to ``max_chars``; a longer sentence is cut at clause
  pauses, and a clause longer than ``max_chars`` between tokens.
* A cut is never inside an annotation or an English word (both are single items) nor inside a
  ``<strong>…</strong>`` span, never just before a pause mark, and every segment has
  something to say (a segment of only tags or pauses joins its neighbour).
"""

from __future__ import annotations

from collections import deque
from typing import Sequence

from cosyweb.text.runs import CLOSERS, Item
from cosyweb.text.types import TokenKind

#: The first segment may run to this multiple of ``first_chars`` to reach a clause pause.
FIRST_SLACK = 1.5


def _allowed(items: Sequence[Item]) -> list[bool]:
    """allowed[b]: a cut before item b (0 < b < n) is permitted."""
    n = len(items)
    ok = [False] * (n + 1)
    depth = 0
    for b in range(1, n):
        tok = items[b - 1].token
        if tok is not None and tok.kind == TokenKind.TAG and tok.text.startswith("<"):
            depth += -1 if tok.text.startswith("</") else 1
        nxt = items[b]
        ok[b] = depth == 0 and not nxt.is_pause and not (nxt.display in CLOSERS and nxt.token is None)
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
            self.prefix.append(self.prefix[-1] + len(it.display))
            self.speak.append(self.speak[-1] + it.speakable)

    def length(self, s: int, e: int) -> int:
        return self.prefix[e] - self.prefix[s]

    def has_speech(self, s: int, e: int) -> bool:
        return self.speak[e] > self.speak[s]

    def cut(self, s: int, e: int, limit: int, slack: float) -> int:
        """A cut point in (s, e), or e when there is none."""
        cands = [b for b in range(s + 1, e) if self.ok[b] and self.has_speech(s, b) and self.has_speech(b, e)]
        if not cands:
            return e
        clause = [b for b in cands if self.items[b - 1].is_pause]
        fit = [b for b in clause if self.length(s, b) <= limit]
        if fit:
            return fit[-1]
        near = [b for b in clause if self.length(s, b) <= limit * slack]
        if near:
            return near[0]
        hard = [b for b in cands if self.length(s, b) <= limit]
        return hard[-1] if hard else cands[0]


def split(items: Sequence[Item], first_chars: int, max_chars: int) -> list[tuple[int, int]]:
    """Cut ``items`` into segments.

    Args:
        items: the analysed text (see :func:`cosyweb.text.runs.build_items`).
        first_chars: target length of the first segment, in display characters (>= 1).
        max_chars: maximum length of the later segments, in display characters (>= 1).

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
        if not segs and cur is None:
            c = e if cutter.length(s, e) <= first_chars else cutter.cut(s, e, first_chars, FIRST_SLACK)
            segs.append((s, c))
            if c < e:
                queue.appendleft((c, e))
            continue
        if cur is not None and cutter.length(cur[0], e) <= max_chars:
            cur = (cur[0], e)
            continue
        if cur is not None:
            segs.append(cur)
            cur = None
        if cutter.length(s, e) <= max_chars:
            cur = (s, e)
            continue
        c = cutter.cut(s, e, max_chars, 1.0)
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
