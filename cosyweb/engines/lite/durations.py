"""Duration changes in the WORLD frame domain: phrase-final lengthening.

espeak-ng barely lengthens the last syllable of a phrase, while speakers do
(phrase-final lengthening; for English see Wightman et al. 1992, "Segmental
durations in the vicinity of prosodic phrase boundaries"; Mandarin shows it too).
Without it a final falling tone 4 was crammed into about 100 ms of voicing
(measured), which sounds clipped and which pitch trackers with long windows
(librosa.pyin, 64 ms) could not follow. The analysed frames are re-timed before synthesis: frames
inside a phrase-final unit are stretched by :data:`FINAL_LENGTHENING`, all others
(pauses included) keep their length. Envelopes are interpolated between
neighbouring frames; unit times are mapped with the same time warp.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from cosyweb.engines.lite.adapt import Frames
from cosyweb.engines.lite.render import Unit
from cosyweb.engines.lite.spectral import FRAME_PERIOD_MS

#: Stretch factor of phrase-final syllables (zh, yue) and words (en).
FINAL_LENGTHENING = 1.4


def frame_weights(times_s: np.ndarray, units: list[Unit], factor: float = FINAL_LENGTHENING) -> np.ndarray:
    """Output frames per input frame: ``factor`` inside phrase-final units, 1 elsewhere. Shape ``(n,)``."""
    w = np.ones(len(times_s))
    for unit in units:
        if unit.phrase_end:
            w[(times_s >= unit.start_s) & (times_s < unit.end_s)] = factor
    return w


def lengthen_phrase_ends(frames: Frames, units: list[Unit], factor: float = FINAL_LENGTHENING) -> tuple[Frames, list[Unit]]:
    """Re-time frames so phrase-final units last ``factor`` times longer.

    Args:
        frames: analysis of the espeak audio (5 ms frames).
        units: timed units on the same timeline.
        factor: stretch of phrase-final units (1.0 = no change).

    Returns:
        ``(frames, units)`` on the new timeline; ``frames.times_s`` are again 5 ms apart.
    """
    n = len(frames.times_s)
    if n == 0 or factor == 1.0:
        return frames, units
    period_s = FRAME_PERIOD_MS / 1000.0
    w = frame_weights(frames.times_s, units, factor)
    # frame edges (in frame units, centre of frame i at i): input i - 0.5, output cumsum - 0.5
    in_edges = np.arange(n + 1) - 0.5
    out_edges = np.concatenate([[0.0], np.cumsum(w)]) - 0.5
    n_out = max(1, int(round(out_edges[-1] + 0.5)))
    pos = np.clip(np.interp(np.arange(n_out), out_edges, in_edges), 0.0, n - 1.0)
    lo = np.floor(pos).astype(np.intp)
    hi = np.minimum(lo + 1, n - 1)
    frac = (pos - lo)[:, None]
    nearest = np.clip(np.round(pos).astype(np.intp), 0, n - 1)
    new_frames = Frames(
        times_s=np.arange(n_out) * period_s,
        voiced=frames.voiced[nearest],
        active=frames.active[nearest],
        log_sp=frames.log_sp[lo] * (1.0 - frac) + frames.log_sp[hi] * frac,
    )

    def to_out(t_s: float) -> float:
        return float(np.interp(t_s / period_s, in_edges, out_edges)) * period_s

    new_units = [replace(u, start_s=to_out(u.start_s), end_s=to_out(u.end_s)) for u in units]
    return new_frames, new_units
