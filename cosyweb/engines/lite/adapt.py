"""Voice adaptation of espeak output toward the prompt speaker (WORLD analysis and resynthesis).

Steps, per segment (recipe of the main issue; measured notes in
``../shared/notes/lite-engine.md``):

1. :func:`analyze` the espeak audio, which was rendered at a constant F0: voicing
   is an autocorrelation test at the known period; CheapTrick gives the envelope.
2. :func:`convert_envelope`: warp the frequency axis by the profile's factor,
   add the mean mel-cepstrum EQ (prompt mean minus espeak reference mean), then
   replace each voiced frame by the mean of its k nearest prompt voiced frames in
   mel-cepstrum space (k-NN frame replacement, as in kNN-VC by Baas et al. 2023,
   here on mel-cepstra), and each active unvoiced frame likewise from the prompt's
   unvoiced frames. A distance guard blends less where the prompt has no close
   frame (phonetic drift).
3. :func:`synthetic_aperiodicity` from voicing (much faster than D4C at the same
   speaker similarity), then :func:`resynthesize` with the new F0.
4. :func:`match_loudness` to the prompt's active-frame RMS, times the request's gain.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

import numpy as np

from cosyweb.engines.lite.spectral import (
    FRAME_PERIOD_MS,
    active_frames,
    frame_times,
    log_envelope,
    mel_cepstrum,
    periodicity,
    pyworld,
)

#: Autocorrelation at the espeak period above which a frame is voiced.
VOICING_THRESHOLD = 0.55
#: k-NN frame replacement: neighbours per frame, blend weight of their mean, and the
#: mel-cepstrum coefficients (c1..c20) the neighbour search compares. Tuned on the
#: held-out benchmark (benchmarks/lite_similarity.py): blend 0.7 -> 1.0 raised the mean
#: same-speaker cosine by about 0.02, k 4 -> 2 by about 0.005.
KNN_K = 2
KNN_BLEND = 1.0
KNN_MATCH_DIMS = 20
#: Drift guard: frames whose nearest prompt frame is farther than GUARD_START times the
#: median nearest distance are blended less, down to none at GUARD_END times it.
GUARD_START, GUARD_END = 1.4, 2.2
#: Loudness target range for the output, dBFS of active-frame RMS (a whisper-quiet
#: prompt should not give an inaudible result, nor a clipped one a clipped result).
LOUDNESS_MIN_DBFS, LOUDNESS_MAX_DBFS = -30.0, -18.0
#: Soft-limiter knee, linear amplitude.
LIMITER_KNEE = 0.9

_SYNTH_LOCK = threading.Lock()  # WORLD's synthesis reseeds a process-global noise generator


@dataclass
class Frames:
    """Analysis of espeak output at :data:`~cosyweb.engines.lite.spectral.FRAME_PERIOD_MS`.

    Attributes:
        times_s: frame centres, shape ``(n,)``.
        voiced: bool, shape ``(n,)``.
        active: bool, shape ``(n,)``: not silence (see :func:`~cosyweb.engines.lite.spectral.active_frames`).
        log_sp: natural-log power envelope, shape ``(n, n_bins)``.
    """

    times_s: np.ndarray
    voiced: np.ndarray
    active: np.ndarray
    log_sp: np.ndarray


def analyze(x: np.ndarray, sample_rate: int, const_f0_hz: float) -> Frames:
    """Analyse espeak audio rendered at a constant F0.

    Args:
        x: float mono waveform, shape ``(n_samples,)``.
        sample_rate: Hz.
        const_f0_hz: the constant F0 espeak used.

    Returns:
        :class:`Frames`.
    """
    t = frame_times(len(x), sample_rate)
    period = int(round(sample_rate / const_f0_hz))
    r = periodicity(x, sample_rate, t, period)
    voiced = r > VOICING_THRESHOLD
    # remove isolated one-frame decisions
    if len(voiced) > 2:
        v = voiced.astype(np.int8)
        med = (v[:-2] + v[1:-1] + v[2:]) >= 2
        voiced[1:-1] = med
    # unvoiced frames get WORLD's default analysis window, as in the prompt analysis
    f0 = np.where(voiced, float(const_f0_hz), 0.0)
    log_sp = log_envelope(x, sample_rate, f0, t)
    return Frames(times_s=t, voiced=voiced, active=active_frames(x, sample_rate, t), log_sp=log_sp)


def knn_replace(query: np.ndarray, pool: np.ndarray, k: int, match_dims: int) -> tuple[np.ndarray, np.ndarray]:
    """Mean of the ``k`` nearest ``pool`` rows for each ``query`` row, and the nearest distance.

    Neighbours are searched on the first ``match_dims`` columns (the low-quefrency
    mel-cepstrum, which carries the phonetic envelope), and the whole rows are averaged.

    Args:
        query: shape ``(n, d)``.
        pool: shape ``(m, d)``.
        k: neighbours (clamped to ``m``).
        match_dims: leading columns used for the search.

    Returns:
        ``(targets, nearest_distance)`` with shapes ``(n, d)`` and ``(n,)``.
    """
    k = max(1, min(k, len(pool)))
    q = np.ascontiguousarray(query[:, :match_dims], dtype=np.float32)
    p = np.ascontiguousarray(pool[:, :match_dims], dtype=np.float32)
    d2 = (p * p).sum(1)[None, :] - 2.0 * (q @ p.T)
    idx = np.argpartition(d2, k - 1, axis=1)[:, :k]
    nearest = np.take_along_axis(d2, idx, axis=1).min(1) + (q * q).sum(1)
    return pool[idx].mean(axis=1), np.sqrt(np.maximum(nearest, 0.0))


@dataclass(frozen=True)
class Target:
    """What the envelope conversion moves toward (from the voice profile).

    Attributes:
        warp: frequency-warp factor (>1 raises formants).
        voiced_delta: mel-cepstrum EQ for voiced frames, shape ``(order + 1,)``.
        voiced_pool: prompt voiced-frame mel-cepstra c1..c_order, shape ``(m, order)``.
        unvoiced_delta: mel-cepstrum EQ for active unvoiced frames, shape ``(order + 1,)``.
        unvoiced_pool: prompt active unvoiced-frame mel-cepstra c1..c_order, shape ``(m2, order)``
            (may be empty: then unvoiced frames only get the EQ).
    """

    warp: float
    voiced_delta: np.ndarray
    voiced_pool: np.ndarray
    unvoiced_delta: np.ndarray
    unvoiced_pool: np.ndarray


def _replace(cep: np.ndarray, rows: np.ndarray, pool: np.ndarray, blend: float, k: int) -> None:
    """k-NN replacement of ``cep[rows, 1:]`` from ``pool``, with the drift guard (in place)."""
    if blend <= 0 or k <= 0 or not len(rows) or len(pool) < k:
        return
    target, dist = knn_replace(cep[rows, 1:], pool, k, KNN_MATCH_DIMS)
    typical = float(np.median(dist))
    lo, hi = GUARD_START * typical, GUARD_END * typical
    weight = blend * np.clip((hi - dist) / max(hi - lo, 1e-9), 0.0, 1.0)
    cep[rows, 1:] = (1.0 - weight[:, None]) * cep[rows, 1:] + weight[:, None] * target


def convert_envelope(
    frames: Frames,
    sample_rate: int,
    target: Target,
    *,
    knn_k: int = KNN_K,
    knn_blend: float = KNN_BLEND,
) -> np.ndarray:
    """Move espeak envelopes toward the prompt speaker.

    Voiced frames: warp, voiced EQ, k-NN replacement from the prompt's voiced frames.
    Active unvoiced frames (fricatives, aspiration): warp, unvoiced EQ, k-NN
    replacement from the prompt's unvoiced frames (measured: +0.02 mean same-speaker
    cosine on the benchmark). Silent frames: warp and voiced EQ only. Frames whose
    nearest prompt frame is unusually far (a sound the prompt lacks) are blended
    less, down to none (the drift guard).

    Args:
        frames: :func:`analyze` output.
        sample_rate: Hz.
        target: from the voice profile.
        knn_k: neighbours per frame; 0 disables replacement.
        knn_blend: weight of the neighbour mean for frames with a close match, 0..1.

    Returns:
        New log power envelopes, shape ``(n, n_bins)``.
    """
    mc = mel_cepstrum(sample_rate)
    warped = mc.warp(frames.log_sp, target.warp)
    cep = mc.to_mcep(warped)
    residual = warped - mc.to_log_sp(cep)  # fine structure the mel-cepstrum does not hold
    unvoiced = frames.active & ~frames.voiced
    cep += np.where(unvoiced[:, None], target.unvoiced_delta[None, :], target.voiced_delta[None, :])
    _replace(cep, np.nonzero(frames.voiced)[0], target.voiced_pool, knn_blend, knn_k)
    _replace(cep, np.nonzero(unvoiced)[0], target.unvoiced_pool, knn_blend, knn_k)
    return mc.to_log_sp(cep) + residual


def synthetic_aperiodicity(voiced: np.ndarray, n_bins: int, sample_rate: int) -> np.ndarray:
    """Band aperiodicity from voicing alone, in WORLD's linear form.

    Voiced frames: -40 dB at 0 Hz rising to -3 dB at Nyquist (square-root shape,
    about -20 dB at 3 kHz), the typical D4C picture for modal voice. Unvoiced
    frames: fully aperiodic.

    Args:
        voiced: bool, shape ``(n,)``.
        n_bins: spectrum bins.
        sample_rate: Hz.

    Returns:
        float64 array, shape ``(n, n_bins)``, in (0, 1].
    """
    f = np.linspace(0.0, 1.0, n_bins)
    voiced_db = -40.0 + 37.0 * np.sqrt(f)
    ap = np.empty((len(voiced), n_bins))
    ap[:] = 1.0 - 1e-9
    ap[voiced] = 10.0 ** (voiced_db / 20.0)
    return ap


def resynthesize(f0_hz: np.ndarray, log_sp: np.ndarray, ap: np.ndarray, sample_rate: int) -> np.ndarray:
    """WORLD synthesis. Deterministic: WORLD reseeds its noise at every call (held under a lock).

    Returns:
        float32 waveform, shape ``(n_samples,)``.
    """
    sp = np.exp(log_sp)
    with _SYNTH_LOCK:
        y = pyworld.synthesize(
            np.ascontiguousarray(f0_hz, dtype=np.float64),
            np.ascontiguousarray(sp),
            np.ascontiguousarray(ap),
            sample_rate,
            FRAME_PERIOD_MS,
        )
    return y.astype(np.float32)


def active_rms_dbfs(x: np.ndarray, sample_rate: int, window_s: float = 0.02, range_db: float = 30.0) -> float:
    """RMS level (dBFS) of the active frames: those within ``range_db`` of the loudest 5%.

    Returns:
        dBFS; -120 for silence.
    """
    n = max(1, int(window_s * sample_rate))
    m = len(x) // n
    if m == 0:
        return -120.0
    e = (np.asarray(x[: m * n], dtype=np.float64).reshape(m, n) ** 2).mean(1)
    e_db = 10 * np.log10(np.maximum(e, 1e-12))
    active = e_db > np.percentile(e_db, 95) - range_db
    return float(10 * np.log10(max(e[active].mean(), 1e-12)))


def match_loudness(y: np.ndarray, sample_rate: int, target_dbfs: float, gain: float = 1.0) -> np.ndarray:
    """Scale to ``target_dbfs`` (clamped to the output range) times a linear ``gain``; soft-limit peaks.

    Args:
        y: float32 waveform.
        sample_rate: Hz.
        target_dbfs: the prompt's active RMS, dBFS.
        gain: linear factor (volume, emotion energy).

    Returns:
        float32 waveform in [-1, 1].
    """
    if not len(y):
        return y.astype(np.float32)
    level = active_rms_dbfs(y, sample_rate)
    if level <= -119.0:
        return y.astype(np.float32)
    target = float(np.clip(target_dbfs, LOUDNESS_MIN_DBFS, LOUDNESS_MAX_DBFS))
    out = y.astype(np.float64) * (10.0 ** ((target - level) / 20.0)) * gain
    mag = np.abs(out)
    over = mag > LIMITER_KNEE
    headroom = 1.0 - LIMITER_KNEE
    out[over] = np.sign(out[over]) * (LIMITER_KNEE + headroom * np.tanh((mag[over] - LIMITER_KNEE) / headroom))
    return out.astype(np.float32)
