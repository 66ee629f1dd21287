"""Render one text segment with espeak-ng: language runs, pauses and timed syllables.

A :class:`~cosyweb.text.types.TextSegment` is cut into *runs*: maximal stretches of
one language without a pause. Each run is one espeak utterance in that
language's voice (:data:`~cosyweb.engines.lite.phonemes.ESPEAK_VOICES`); PAUSE and
pause-like TAG tokens become silence between runs. espeak's word events give
the start of every syllable (pinyin and Jyutping syllables are separate words)
or English word; the prosody module puts its F0 targets on those spans.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from cosyweb.engines.lite import espeak
from cosyweb.engines.lite.phonemes import (
    ESPEAK_VOICES,
    arpabet_to_espeak,
    english_word,
    jyutping_to_espeak,
    pinyin_to_espeak,
)
from cosyweb.text.types import TextSegment, TokenKind

#: espeak rate (words per minute) that gives about 4.5 syllables (zh, yue) or 3.5 words (en)
#: per second. Measured on espeak-ng 1.52: cmn 205 wpm -> 4.34 syllables/s, yue 150 -> 4.05,
#: en-us 175 -> 3.86 words/s; the relation is close to linear.
BASE_RATE_WPM: dict[str, float] = {"zh": 212.0, "yue": 165.0, "en": 175.0}
#: Pause lengths (ms) for tags that have no sound of their own on this engine.
TAG_PAUSE_MS: dict[str, int] = {"[breath]": 250, "[laughter]": 350, "[laugh]": 350, "[cough]": 250}
#: Silence between two runs of different languages with no pause between them, ms.
LANGUAGE_SWITCH_GAP_MS = 40
#: English function words: not accented by the intonation model.
_EN_FUNCTION_WORDS = frozenset(
    "a an the and or but if of to in on at by for with from as is am are was were be been being "
    "i you he she it we they me him her us them my your his its our their this that these those "
    "do does did have has had will would shall should can could may might must not no so than "
    "then there here what who whom which when where why how all any some such very just".split()
)
_QUESTION_MARKS = ("?", "？")


@dataclass
class Unit:
    """One timed syllable (zh, yue) or word (en) in the rendered audio.

    Attributes:
        lang: ``"zh"``, ``"yue"`` or ``"en"``.
        tone: Mandarin tone 1-5, Cantonese tone 1-6, 0 for none (English, toneless).
        accent: True for an accented English word or a syllable inside ``<strong>``.
        start_s, end_s: span in the rendered audio, seconds.
        phrase_end: last unit before a pause or the end of the segment.
        question: the phrase ends with a question mark.
    """

    lang: str
    tone: int
    accent: bool
    start_s: float = 0.0
    end_s: float = 0.0
    phrase_end: bool = False
    question: bool = False


@dataclass
class _Item:
    text: str
    unit: Unit


@dataclass
class _Run:
    lang: str
    items: list[_Item] = field(default_factory=list)
    pause_after_ms: float = 0.0


@dataclass
class Rendered:
    """espeak audio of one segment with its timing.

    Attributes:
        samples: float32 mono waveform, shape ``(n_samples,)``, range [-1, 1].
        sample_rate: Hz (espeak's, 22050).
        units: timed syllables/words, in order.
        const_f0_hz: the constant F0 espeak was run with.
    """

    samples: np.ndarray
    sample_rate: int
    units: list[Unit]
    const_f0_hz: int


def plan_runs(segment: TextSegment) -> list[_Run]:
    """Cut a segment's tokens into language runs with the pauses after them.

    Args:
        segment: from the text front end.

    Returns:
        Runs in order; a run may be empty when the segment starts with a pause.

    Raises:
        cosyweb.errors.InvalidInputError: a reading espeak cannot spell (bad pinyin, unknown ARPAbet).
    """
    runs: list[_Run] = [_Run(lang="")]
    emphasis = False
    for tok in segment.tokens:
        item: _Item | None = None
        lang = ""
        if tok.kind == TokenKind.HANZI:
            if tok.lang == "yue" and tok.jyutping:
                text, tone = jyutping_to_espeak(tok.jyutping)
                lang = "yue"
            elif tok.pinyin:
                text, tone = pinyin_to_espeak(tok.pinyin)
                lang = "zh"
            else:
                continue  # nothing to say for a character without a reading
            item = _Item(text, Unit(lang, tone, emphasis))
        elif tok.kind == TokenKind.WORD:
            text = english_word(tok.text)
            if not text:
                continue
            lang = "en"
            content = any(w.lower() not in _EN_FUNCTION_WORDS and len(w) > 2 for w in text.split())
            item = _Item(text, Unit("en", 0, emphasis or content))
        elif tok.kind == TokenKind.ARPABET:
            text, stressed = arpabet_to_espeak(tok.phones)
            lang = "en"
            item = _Item(text, Unit("en", 0, emphasis or stressed))
        elif tok.kind == TokenKind.PAUSE:
            if any(q in tok.text for q in _QUESTION_MARKS) and runs[-1].items:
                runs[-1].items[-1].unit.question = True
            runs[-1].pause_after_ms += max(0, tok.pause_ms)
            runs.append(_Run(lang=""))
            continue
        elif tok.kind == TokenKind.TAG:
            tag = tok.text.strip().lower()
            if tag == "<strong>":
                emphasis = True
            elif tag == "</strong>":
                emphasis = False
            elif tag in TAG_PAUSE_MS:
                runs[-1].pause_after_ms += TAG_PAUSE_MS[tag]
                runs.append(_Run(lang=""))
            continue
        if item is None:
            continue
        run = runs[-1]
        if run.lang and run.lang != lang:
            run.pause_after_ms += LANGUAGE_SWITCH_GAP_MS
            runs.append(_Run(lang=lang))
            run = runs[-1]
        run.lang = lang
        run.items.append(item)
    for run in runs:
        if run.items:
            run.items[-1].unit.phrase_end = True
    return [r for r in runs if r.items or r.pause_after_ms > 0]


def _trim_end(x: np.ndarray, sample_rate: int, threshold: float = 1e-3, keep_ms: float = 10.0) -> np.ndarray:
    """Drop trailing near-silence (below ``threshold`` in amplitude), keeping ``keep_ms``."""
    loud = np.nonzero(np.abs(x) > threshold)[0]
    if loud.size == 0:
        return x[:0]
    end = min(len(x), loud[-1] + 1 + int(keep_ms * sample_rate / 1000))
    return x[:end]


def render(
    segment: TextSegment,
    *,
    variant: str,
    rate_factor: float,
    pause_factor: float,
    seed: int,
    const_f0_hz: int,
) -> Rendered:
    """Synthesise a segment with espeak-ng and time its syllables.

    Args:
        segment: from the text front end.
        variant: espeak voice variant, ``""`` or e.g. ``"f3"``.
        rate_factor: speaking-rate factor relative to :data:`BASE_RATE_WPM`.
        pause_factor: multiplies every pause length.
        seed: espeak noise seed; run ``i`` uses ``seed + i``.
        const_f0_hz: constant F0 of the espeak output (the real contour is made later).

    Returns:
        :class:`Rendered`; empty samples and no units when the segment has nothing to say.

    Raises:
        cosyweb.errors.InvalidInputError: an unspellable reading.
        cosyweb.errors.EngineError: espeak failed.
    """
    sr = espeak.sample_rate()
    pieces: list[np.ndarray] = []
    units: list[Unit] = []
    offset_s = 0.0
    for i, run in enumerate(plan_runs(segment)):
        if run.items:
            texts, spans, pos = [], [], 1
            for it in run.items:
                texts.append(it.text)
                spans.append((pos, pos + len(it.text)))
                pos += len(it.text) + 1
            audio = espeak.synthesize(
                " ".join(texts),
                ESPEAK_VOICES[run.lang],
                variant,
                rate_wpm=int(round(BASE_RATE_WPM[run.lang] * rate_factor)),
                seed=seed + i,
                const_f0_hz=const_f0_hz,
            )
            x = _trim_end(audio.samples, sr)
            dur_s = len(x) / sr
            starts: list[float | None] = [None] * len(run.items)
            for ev in audio.words:
                for k, (a, b) in enumerate(spans):
                    if a <= ev.text_pos < b and starts[k] is None:
                        starts[k] = ev.time_s
                        break
            _fill_missing(starts, dur_s)
            for k, it in enumerate(run.items):
                it.unit.start_s = offset_s + min(starts[k], dur_s)
                it.unit.end_s = offset_s + (min(starts[k + 1], dur_s) if k + 1 < len(starts) else dur_s)
                units.append(it.unit)
            pieces.append(x)
            offset_s += dur_s
        n_pause = int(round(run.pause_after_ms * pause_factor * sr / 1000.0))
        if n_pause > 0:
            pieces.append(np.zeros(n_pause, np.float32))
            offset_s += n_pause / sr
    samples = np.concatenate(pieces).astype(np.float32) if pieces else np.zeros(0, np.float32)
    return Rendered(samples=samples, sample_rate=sr, units=units, const_f0_hz=const_f0_hz)


def _fill_missing(starts: list[float | None], dur_s: float) -> None:
    """Give items without a word event evenly spaced start times between their neighbours."""
    n = len(starts)
    if n and starts[0] is None:
        starts[0] = 0.0
    k = 0
    while k < n:
        if starts[k] is None:
            j = k
            while j < n and starts[j] is None:
                j += 1
            lo = starts[k - 1]
            hi = starts[j] if j < n else dur_s
            step = (hi - lo) / (j - k + 1)
            for m in range(k, j):
                starts[m] = lo + step * (m - k + 1)
            k = j
        else:
            k += 1
    # keep them monotonic
    for k in range(1, n):
        starts[k] = max(starts[k], starts[k - 1])
