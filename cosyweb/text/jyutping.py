"""Cantonese grapheme-to-Jyutping for Han text, via the ToJyutping package.

ToJyutping (PyPI ``ToJyutping``, pure Python, about 0.5 MB with its dictionary, works offline)
chooses readings from context with a longest-match over its word list (行街 haang4 gaai1,
銀行 ngan4 hong4) and reads both traditional and simplified characters. Its import builds the
dictionary trie and costs about 2.7 s on a 2-core machine, so it is imported on first use only.
"""

from __future__ import annotations

import re
from functools import lru_cache
from types import ModuleType
from typing import Optional

_JYUTPING_RE = re.compile(r"[a-z]+[1-6]")


@lru_cache(maxsize=1)
def _module() -> ModuleType:
    import ToJyutping  # noqa: PLC0415 - deliberately lazy: 2.7 s import

    return ToJyutping


def han_jyutping(text: str) -> list[Optional[str]]:
    """Tone-numbered Jyutping for each character of ``text`` (``"你好"`` -> ``["nei5", "hou2"]``).

    Args:
        text: Han characters (other characters get None).

    Returns:
        One entry per character of ``text`` (code point): Jyutping with tone 1-6, or None
        where ToJyutping has no reading.
    """
    if not text:
        return []
    pairs = _module().get_jyutping_list(text)
    out: list[Optional[str]] = []
    for _char, jp in pairs:
        # a character with several readings joined by spaces would not match; keep the first
        first = jp.split()[0] if jp else None
        out.append(first if first and _JYUTPING_RE.fullmatch(first) else None)
    if len(out) != len(text):  # defensive: never misalign tokens
        return [None] * len(text)
    return out
