"""F0 contours from tone targets, and the prosody of emotion, speed and volume.

Pitch is written in Chao tone letters: level 1 (low) to 5 (high). Each syllable
gets the targets of its tone, spread over its voiced frames:

* Mandarin (Chao 1930; Xu 1997): tone 1 ``55``, tone 2 ``35``, tone 3 ``214``
  phrase-finally and the half-third ``21`` elsewhere, tone 4 ``51`` (``52`` before
  another syllable), neutral tone a short level set by the preceding tone
  (after 1: 2, after 2: 3, after 3: 4, after 4: 1). As measured in connected
  speech, the bottom of tone 3 is the lowest pitch of all tones (0.8 here) and a
  final tone 4 ends a little above it (1.4); a final tone 3 rises back only to 3.5.
* Cantonese: 1 ``55``, 2 ``25``, 3 ``33``, 4 ``21``, 5 ``23``, 6 ``22``.
* English: a rise-fall on accented words, a final fall (or a rise before "?").

A phrase declines slowly (declination) and resets after each pause. Levels map
to log-F0 around the prompt's mean: ``ln F0 = mean + (level - 3) * step * spread``,
with the prompt's log-F0 spread, so the contour is scaled to the prompt's pitch
range. Smoothing pads with edge values: zero padding would pull the last frames
and destroy the final tone (measured pitfall in the prototype).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from cosyweb.engines.lite.render import Unit

#: Log-F0 per Chao level, in units of the prompt's log-F0 spread.
LEVEL_STEP = 0.8
#: Declination, Chao levels per second, and its cap per phrase.
DECLINATION_PER_S, DECLINATION_MAX = 0.3, 0.9
#: Smoothing window for the level contour, frames (5 ms each).
SMOOTH_FRAMES = 7
#: Per-syllable random pitch offset (Chao levels, standard deviation) drawn from the
#: request's seed: the seed picks a slightly different take, and the same seed the same one.
TAKE_JITTER_LEVELS = 0.15
#: Output F0 limits, Hz.
F0_MIN_HZ, F0_MAX_HZ = 50.0, 700.0

_MANDARIN = {1: (5.0, 5.0), 2: (3.0, 5.0), 4: (5.0, 1.0)}
_NEUTRAL_AFTER = {1: 2.0, 2: 3.0, 3: 4.0, 4: 1.5}
_CANTONESE = {1: (5.0, 5.0), 2: (2.0, 5.0), 3: (3.0, 3.0), 4: (2.0, 1.0), 5: (2.0, 3.0), 6: (2.0, 2.0)}


@dataclass(frozen=True)
class Style:
    """Prosody of one request.

    Attributes:
        f0_shift: added to log F0 (natural log; 0.1 is about +1.7 semitones).
        range_scale: multiplies the pitch range around the mean.
        rate: speaking-rate factor (>1 faster).
        gain: linear energy factor.
    """

    f0_shift: float = 0.0
    range_scale: float = 1.0
    rate: float = 1.0
    gain: float = 1.0


#: Emotion -> prosody (F0 level and range, rate, energy), after the acoustic
#: correlates summarised by Scherer (2003) and Banse & Scherer (1996): joy and
#: anger raise F0 level, range, rate and energy (anger most in energy); sadness
#: lowers F0, narrows the range, slows down and softens.
EMOTION_STYLES: dict[str, Style] = {
    "none": Style(),
    "happy": Style(f0_shift=0.12, range_scale=1.3, rate=1.08, gain=10 ** (2.0 / 20)),
    "sad": Style(f0_shift=-0.10, range_scale=0.65, rate=0.85, gain=10 ** (-4.0 / 20)),
    "angry": Style(f0_shift=0.06, range_scale=1.4, rate=1.1, gain=10 ** (5.0 / 20)),
}


def style_for(emotion: str, speed: float, volume: float) -> Style:
    """Combine an emotion with the request's speed and volume factors.

    Args:
        emotion: a key of :data:`EMOTION_STYLES` (unknown ids are neutral; options are
            validated against the engine's capabilities before this).
        speed: speaking-rate factor, 1.0 = the prompt speaker's rate.
        volume: linear loudness factor.
    """
    base = EMOTION_STYLES.get(emotion, EMOTION_STYLES["none"])
    return Style(base.f0_shift, base.range_scale, base.rate * speed, base.gain * volume)


def tone_targets(unit: Unit, prev: Unit | None) -> tuple[float, ...]:
    """Chao-level targets of one unit, spread evenly over its voiced frames."""
    if unit.lang == "zh":
        if unit.tone == 3:
            targets: tuple[float, ...] = (2.0, 0.8, 3.5) if unit.phrase_end else (2.0, 1.0)
        elif unit.tone == 4:
            targets = (5.0, 1.4) if unit.phrase_end else (5.0, 2.2)
        elif unit.tone == 5:
            level = _NEUTRAL_AFTER.get(prev.tone if prev is not None and prev.lang == "zh" else 0, 2.0)
            targets = (level, level - 0.3)
        else:
            targets = _MANDARIN.get(unit.tone, (3.0, 3.0))
    elif unit.lang == "yue":
        targets = _CANTONESE.get(unit.tone, (3.0, 3.0))
    else:
        if unit.question and unit.phrase_end:
            targets = (3.0, 4.6)
        elif unit.phrase_end:
            targets = (3.6, 4.0, 1.5) if unit.accent else (3.0, 1.5)
        else:
            targets = (3.0, 4.3, 3.2) if unit.accent else (3.0, 3.0)
        return targets
    if unit.accent:  # <strong>: wider and a little higher
        targets = tuple(3.0 + (t - 3.0) * 1.3 + 0.4 for t in targets)
    if unit.question and unit.phrase_end:
        targets = targets[:-1] + (targets[-1] + 0.8,)
    return targets


def level_contour(units: list[Unit], times_s: np.ndarray, voiced: np.ndarray, seed: int = 0) -> np.ndarray:
    """Chao-level contour per frame (smoothed, declination applied), shape ``(n,)``.

    Unvoiced frames carry interpolated values (they are zeroed in :func:`f0_contour`).
    ``seed`` draws the per-syllable offsets of :data:`TAKE_JITTER_LEVELS`.
    """
    n = len(times_s)
    jitter = np.random.default_rng(seed & 0xFFFFFFFF).normal(0.0, TAKE_JITTER_LEVELS, len(units))
    level = np.full(n, np.nan)
    phrase_start_s = 0.0
    prev: Unit | None = None
    new_phrase = True
    for k, unit in enumerate(units):
        if new_phrase:
            phrase_start_s = unit.start_s
            new_phrase = False
        idx = np.nonzero((times_s >= unit.start_s) & (times_s < unit.end_s) & voiced)[0]
        if len(idx):
            targets = np.asarray(tone_targets(unit, prev), dtype=np.float64)
            if len(targets) == 1:
                level[idx] = targets[0]
            else:
                pos = np.linspace(0.0, 1.0, len(idx)) if len(idx) > 1 else np.zeros(1)
                anchors = np.linspace(0.1, 0.9, len(targets))
                level[idx] = np.interp(pos, anchors, targets)
            decl = np.minimum(DECLINATION_PER_S * (times_s[idx] - phrase_start_s), DECLINATION_MAX)
            level[idx] -= decl - jitter[k]
        prev = unit
        if unit.phrase_end:
            new_phrase = True
    known = ~np.isnan(level)
    if not known.any():
        return np.full(n, 3.0)
    level = np.interp(np.arange(n), np.nonzero(known)[0], level[known])
    if SMOOTH_FRAMES > 1 and n > 1:
        half = SMOOTH_FRAMES // 2
        kernel = np.hanning(SMOOTH_FRAMES + 2)[1:-1]
        kernel /= kernel.sum()
        level = np.convolve(np.pad(level, half, mode="edge"), kernel, mode="valid")
    return level


def f0_contour(
    units: list[Unit],
    times_s: np.ndarray,
    voiced: np.ndarray,
    log_f0_mean: float,
    log_f0_spread: float,
    style: Style,
    seed: int = 0,
) -> np.ndarray:
    """F0 per frame in Hz (0 on unvoiced frames), scaled to the prompt's pitch.

    Args:
        units: timed syllables/words.
        times_s: frame centres, shape ``(n,)``.
        voiced: bool, shape ``(n,)``.
        log_f0_mean: the prompt's mean natural-log F0.
        log_f0_spread: the prompt's robust log-F0 standard deviation.
        style: emotion/speed/volume prosody.
        seed: the request's seed (picks the take, see :data:`TAKE_JITTER_LEVELS`).

    Returns:
        float64 array, shape ``(n,)``.
    """
    level = level_contour(units, times_s, voiced, seed)
    log_f0 = log_f0_mean + style.f0_shift + (level - 3.0) * LEVEL_STEP * log_f0_spread * style.range_scale
    f0 = np.clip(np.exp(log_f0), F0_MIN_HZ, F0_MAX_HZ)
    f0[~voiced] = 0.0
    return f0
