"""Data types produced by the text front end. Imports nothing of ours.

The front end turns user text into a list of :class:`TextSegment` (sentence
sized, for streaming). Each segment is a list of :class:`Token`. Engines read
what they need: the lite engine reads tone-numbered pinyin per syllable; the
CosyVoice engine reads :attr:`TextSegment.cosyvoice_text`, which keeps user
annotations in CosyVoice3's own token form.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Optional


class TokenKind(str, Enum):
    """What a :class:`Token` is."""

    HANZI = "hanzi"  # one Chinese character, with its syllable in ``pinyin`` (zh) or ``jyutping`` (yue)
    WORD = "word"  # one English (Latin-script) word
    ARPABET = "arpabet"  # a run of ARPAbet phones for one word, e.g. M AY0 N UW1 T
    PAUSE = "pause"  # punctuation turned into a pause; ``pause_ms`` gives its length
    TAG = "tag"  # a control tag: [breath], [laughter], <strong>, </strong>


@dataclass(frozen=True)
class Token:
    """One unit of analysed text.

    Attributes:
        kind: what this token is.
        text: the surface text (a character, a word, the tag itself, the punctuation).
        lang: ``"zh"``, ``"yue"`` or ``"en"``; None for pauses and tags.
        pinyin: tone-numbered pinyin for a HANZI token, e.g. ``"hao4"``; neutral tone is ``5``;
            ü is written ``v`` (``"lv4"``).
        jyutping: tone-numbered Jyutping for a Cantonese HANZI token, e.g. ``"nei5"``.
        phones: ARPAbet phones with stress digits for an ARPABET token, e.g. ``("M", "AY0")``.
        annotated: True when the reading came from a user annotation (it overrides G2P).
        pause_ms: pause length in milliseconds for a PAUSE token.
        pos: 1-based character position of the token in the *original* user text.
    """

    kind: TokenKind
    text: str
    lang: Optional[str] = None
    pinyin: Optional[str] = None
    jyutping: Optional[str] = None
    phones: tuple[str, ...] = ()
    annotated: bool = False
    pause_ms: int = 0
    pos: int = 0


@dataclass
class TextSegment:
    """A sentence-sized piece of text, the unit of streaming and scheduling.

    Attributes:
        index: 0-based position of this segment in the request.
        text: normalised display text with annotations removed (numbers already spelled out).
        cosyvoice_text: the same text for CosyVoice3: user annotations kept as CosyVoice3
            tokens (``她[h][ào]干净``, ``[M][AY0][N][UW1][T]``), control tags kept as written.
        tokens: the analysed tokens.
        n_syllables: spoken syllables (hanzi + estimated English syllables), for duration estimates.
    """

    index: int
    text: str
    cosyvoice_text: str
    tokens: list[Token] = field(default_factory=list)
    n_syllables: int = 0

    def estimated_duration_s(self, syllables_per_s: float = 4.5) -> float:
        """A rough spoken duration in seconds, used for admission control and plausibility checks."""
        n_pause_ms = sum(t.pause_ms for t in self.tokens if t.kind == TokenKind.PAUSE)
        return self.n_syllables / max(syllables_per_s, 0.1) + n_pause_ms / 1000.0


@dataclass(frozen=True)
class Polyphone:
    """A polyphonic character found in a text, for the UI's pronunciation helper.

    Attributes:
        pos: 1-based character position in the text.
        char: the character.
        current: the reading the front end will use (tone-numbered pinyin).
        candidates: all readings pypinyin knows for the character (tone-numbered pinyin).
    """

    pos: int
    char: str
    current: str
    candidates: tuple[str, ...]
