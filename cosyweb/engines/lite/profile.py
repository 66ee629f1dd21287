"""The voice profile: what the lite engine keeps of a prompt speaker.

Derived once per prompt (about 0.2-0.4 s for a 10 s prompt on 2 cores) and
cached by the pipeline inside a :class:`~cosyweb.engines.base.Voice`:

* log-F0 mean and spread (DIO + StoneMask), and a gender guess from the median F0,
  which picks the espeak voice variant;
* the mean mel-cepstrum (order 34, alpha ``mcepalpha``) over voiced frames, used as a
  timbre EQ, and the voiced frames themselves for k-NN frame replacement; the same
  for active unvoiced frames (fricatives, aspiration);
* a frequency-warp factor for vocal-tract length, chosen by search: for each
  factor on a grid, espeak's reference frames are warped, EQ'd to the prompt mean,
  and scored by their mean distance to the nearest prompt frame (the same space
  the k-NN replacement works in); the best factor wins. (The prototype found a
  searched factor better than one estimated from formants.)
* the loudness (active-frame RMS) and the speaking rate (syllables per second,
  from the transcript when given, otherwise from syllable nuclei).
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field

import numpy as np

from cosyweb.engines.lite import adapt, render
from cosyweb.engines.lite.spectral import active_frames, log_envelope, mel_cepstrum, track_f0
from cosyweb.errors import InvalidInputError
from cosyweb.text.types import TextSegment, Token, TokenKind

#: Rate of all analysis and of the engine's output, Hz (espeak-ng's native rate).
ANALYSIS_RATE_HZ = 22050
#: Prompts with a median F0 below this are treated as male voices, Hz.
GENDER_SPLIT_HZ = 165.0
#: espeak voice variant and the constant F0 (Hz) espeak renders at, per gender.
#: Tuned on the held-out benchmark: female3 beat female2 and female1 by about 0.01 on
#: the female prompts; the default male voice beat male1/3/7; the analysis F0 made little
#: difference (130/200 Hz gave the best margin).
VARIANTS: dict[str, tuple[str, int]] = {"male": ("", 130), "female": ("f3", 200)}
#: Candidate warp factors (1.0 = espeak's own vocal-tract length).
WARP_GRID = tuple(round(0.84 + 0.04 * i, 2) for i in range(11))  # 0.84 .. 1.24
#: At most this many prompt frames are kept for k-NN (10 s of voiced speech).
MAX_PROMPT_FRAMES = 2000
#: Active unvoiced prompt frames kept for k-NN (at most), and the fewest worth using.
MAX_UNVOICED_FRAMES, MIN_UNVOICED_FRAMES = 1000, 40
#: Frames used to score a warp factor (subsampled for speed): reference and prompt side.
N_REFERENCE_FRAMES, N_WARP_SCORE_FRAMES = 500, 1000
#: Log-F0 spread limits (natural log): octave errors must not explode the range.
SPREAD_MIN, SPREAD_MAX = 0.06, 0.30
#: Speaking-rate limits, syllables per second, and espeak's rate at factor 1.
RATE_MIN_SPS, RATE_MAX_SPS, REFERENCE_SPS = 2.5, 7.5, 4.5

#: Energy peaks miss syllables that merge (Mandarin sonorant initials, fast speech): on the
#: 16 Mandarin prompts of ../shared/prompts with transcripts, the transcript rate was a
#: median 1.2 times the nuclei count rate.
NUCLEI_CALIBRATION = 1.2
#: A phonetically varied Mandarin calibration text (all four tones, most initials and finals).
_CALIBRATION_PINYIN = (
    "ta1 men5 zai4 gong1 yuan2 kan4 dao4 hen3 duo1 hua1 xiao3 peng2 you5 chang4 ge1 "
    "qiu1 tian1 feng1 jing3 fei1 chang2 mei3 li4 zhe4 ben3 shu1 shi4 ni3 de5 ma5 qing3 lai2 cha2 kan4 yi2 xia4"
)


@dataclass
class VoiceProfile:
    """A prompt speaker, as the lite engine sees it.

    Attributes:
        log_f0_mean: mean natural-log F0 of voiced frames (5-95% trimmed).
        log_f0_spread: robust standard deviation of log F0 ((p90 - p10) / 2.56), clamped.
        f0_median_hz: median F0, Hz.
        gender: ``"male"`` or ``"female"`` (from the median F0).
        variant: espeak voice variant for this gender (``""`` = the language's own voice).
        const_f0_hz: the constant F0 espeak renders at for this gender.
        warp: frequency-warp factor.
        mcep_delta: mel-cepstrum EQ (prompt mean minus warped espeak reference mean; c0 = 0),
            shape ``(35,)``.
        frames: prompt voiced-frame mel-cepstra c1..c34, float32, shape ``(m, 34)``.
        unvoiced_delta: mel-cepstrum EQ for active unvoiced frames (c0 = 0), shape ``(35,)``.
        unvoiced_frames: prompt active unvoiced-frame mel-cepstra c1..c34 (fricatives,
            aspiration), float32, shape ``(m2, 34)``; empty when the prompt has too few.
        loudness_dbfs: active-frame RMS of the prompt, dBFS.
        syllables_per_s: speaking rate.
        rate_source: ``"transcript"``, ``"nuclei"`` or ``"default"`` (too little speech to measure).
        warp_scores: score per factor of :data:`WARP_GRID` (lower is better), for inspection.
    """

    log_f0_mean: float
    log_f0_spread: float
    f0_median_hz: float
    gender: str
    variant: str
    const_f0_hz: int
    warp: float
    mcep_delta: np.ndarray
    frames: np.ndarray
    unvoiced_delta: np.ndarray
    unvoiced_frames: np.ndarray
    loudness_dbfs: float
    syllables_per_s: float
    rate_source: str
    warp_scores: dict[float, float] = field(default_factory=dict)


def _calibration_segment() -> TextSegment:
    tokens = [Token(TokenKind.HANZI, "", lang="zh", pinyin=p) for p in _CALIBRATION_PINYIN.split()]
    return TextSegment(index=0, text="", cosyvoice_text="", tokens=tokens, n_syllables=len(tokens))


@dataclass(frozen=True)
class Reference:
    """espeak's own voice reading the calibration text, analysed like a prompt.

    Attributes:
        voiced: ``{factor: mel-cepstra}`` of voiced frames warped by each factor of
            :data:`WARP_GRID`; float32, shape ``(n, 35)`` (at most :data:`N_REFERENCE_FRAMES`).
        unvoiced_mean: ``{factor: mean mel-cepstrum}`` of active unvoiced frames, shape ``(35,)``.
    """

    voiced: dict[float, np.ndarray]
    unvoiced_mean: dict[float, np.ndarray]


@functools.lru_cache(maxsize=8)
def espeak_reference(variant: str, const_f0_hz: int) -> Reference:
    """The :class:`Reference` of one espeak variant, computed once (about 0.3 s) and cached.

    Args:
        variant: espeak voice variant.
        const_f0_hz: constant F0 of the rendering.
    """
    r = render.render(_calibration_segment(), variant=variant, rate_factor=1.0, pause_factor=1.0, seed=0,
                      const_f0_hz=const_f0_hz)
    frames = adapt.analyze(r.samples, r.sample_rate, const_f0_hz)
    voiced = _subsample(frames.log_sp[frames.voiced], N_REFERENCE_FRAMES)
    unvoiced = frames.log_sp[frames.active & ~frames.voiced]
    mc = mel_cepstrum(r.sample_rate)
    return Reference(
        voiced={w: (voiced @ mc.warped_to_mc(w)).astype(np.float32) for w in WARP_GRID},
        unvoiced_mean={w: (unvoiced @ mc.warped_to_mc(w)).mean(0) for w in WARP_GRID},
    )


def count_syllables(text: str) -> int:
    """Syllables in a transcript: one per CJK character, about 1.4 per Latin-script word."""
    n_cjk = len(re.findall(r"[\u3400-\u9fff\uf900-\ufaff]", text))
    n_words = len(re.findall(r"[A-Za-z]+", text))
    return n_cjk + int(round(1.4 * n_words))


def _articulation_s(x: np.ndarray, sr: int) -> tuple[float, np.ndarray, np.ndarray]:
    """Speech time without pauses of 200 ms or more, plus the 10 ms energy contour (dB) and activity."""
    hop = sr // 100
    n = len(x) // hop
    if n == 0:
        return 0.0, np.zeros(0), np.zeros(0, bool)
    e_db = 10 * np.log10(np.maximum((x[: n * hop].reshape(n, hop) ** 2).mean(1), 1e-12))
    active = e_db > np.percentile(e_db, 95) - 35.0
    # fill inactive gaps shorter than 200 ms: they are closures, not pauses
    idx = np.nonzero(active)[0]
    if len(idx):
        for a, b in zip(idx[:-1], idx[1:]):
            if 1 < b - a <= 20:
                active[a:b] = True
    return float(active.sum()) * 0.01, e_db, active


def speaking_rate(x: np.ndarray, sr: int, f0_hz: np.ndarray, prompt_text: str = "") -> tuple[float, str]:
    """Syllables per second of articulation (pauses of 200 ms or more excluded).

    With a transcript: its syllable count over the articulation time. Without:
    syllable nuclei, counted as peaks of the smoothed energy contour in voiced
    stretches with at least 2 dB of prominence within 150 ms and 100 ms apart (after
    de Jong and Wempe 2009, "Praat script to detect syllable nuclei").

    Returns:
        ``(syllables_per_s, source)`` clamped to [2.5, 7.5]; source is ``"transcript"`` or ``"nuclei"``.
    """
    art_s, e_db, active = _articulation_s(x, sr)
    if art_s < 0.3:
        return REFERENCE_SPS, "default"
    n_text = count_syllables(prompt_text) if prompt_text else 0
    if n_text >= 3:
        return float(np.clip(n_text / art_s, RATE_MIN_SPS, RATE_MAX_SPS)), "transcript"
    kernel = np.hanning(7)
    kernel /= kernel.sum()
    smooth = np.convolve(np.pad(e_db, 3, mode="edge"), kernel, mode="valid")
    # voicing at 10 ms: any voiced 5 ms frame inside
    v5 = f0_hz > 0
    v10 = np.zeros(len(smooth), bool)
    m = min(len(v5) // 2, len(smooth))
    v10[:m] = v5[: 2 * m : 2] | v5[1 : 2 * m : 2]
    peaks = [p for p in _prominent_peaks(smooth, min_prominence_db=2.0, window=15, min_distance=10)
             if v10[p] and active[p]]
    return float(np.clip(NUCLEI_CALIBRATION * len(peaks) / art_s, RATE_MIN_SPS, RATE_MAX_SPS)), "nuclei"


def _prominent_peaks(x: np.ndarray, min_prominence_db: float, window: int, min_distance: int) -> list[int]:
    """Local maxima standing ``min_prominence_db`` above the higher of the minima within
    ``window`` samples on either side, at least ``min_distance`` apart (tallest kept).

    A small stand-in for ``scipy.signal.find_peaks`` (whose import costs 1-3 s).
    """
    if len(x) < 3:
        return []
    cand = np.nonzero((x[1:-1] > x[:-2]) & (x[1:-1] >= x[2:]))[0] + 1
    keep = []
    for i in cand:
        left = x[max(0, i - window):i].min()
        right = x[i + 1:i + 1 + window].min() if i + 1 < len(x) else x[i]
        if x[i] - max(left, right) >= min_prominence_db:
            keep.append(i)
    chosen: list[int] = []
    for i in sorted(keep, key=lambda j: -x[j]):
        if all(abs(i - j) >= min_distance for j in chosen):
            chosen.append(i)
    return sorted(chosen)


def _resample(x: np.ndarray, sr: int) -> np.ndarray:
    if sr == ANALYSIS_RATE_HZ:
        return np.asarray(x, dtype=np.float64)
    import soxr

    return soxr.resample(np.asarray(x, dtype=np.float64), sr, ANALYSIS_RATE_HZ, quality="HQ")


def _subsample(a: np.ndarray, n_max: int) -> np.ndarray:
    if len(a) <= n_max:
        return a
    return a[np.linspace(0, len(a) - 1, n_max).round().astype(int)]


def search_warp(
    reference: dict[float, np.ndarray], prompt_cep: np.ndarray, prompt_mean: np.ndarray
) -> tuple[float, np.ndarray, dict[float, float]]:
    """Choose the warp factor whose warped, EQ'd espeak frames lie nearest the prompt frames.

    Score of a factor: the mean Euclidean distance (c1..c34) from each reference
    frame, shifted to the prompt's mean, to its nearest prompt frame. On the
    benchmark this search picked factors worth a mean same-speaker cosine of 0.725
    where a fixed 1.0 gave 0.717 and the per-recording best factor 0.742.

    Args:
        reference: :attr:`Reference.voiced` of the variant.
        prompt_cep: prompt voiced mel-cepstra, shape ``(m, 35)``.
        prompt_mean: their mean, shape ``(35,)``.

    Returns:
        ``(warp, mcep_delta, scores)``: the factor, the EQ for it (c0 = 0) and every factor's score.
    """
    pool = np.ascontiguousarray(_subsample(prompt_cep, N_WARP_SCORE_FRAMES)[:, 1:], dtype=np.float32)
    factors = list(reference)
    deltas = {r: prompt_mean - reference[r].mean(0).astype(np.float64) for r in factors}
    # one matrix product for all factors (fewer BLAS calls: much faster on a busy 2-core machine)
    q = np.concatenate([reference[r][:, 1:] + deltas[r][1:].astype(np.float32) for r in factors])
    d2 = (q * q).sum(1)[:, None] - 2.0 * (q @ pool.T) + (pool * pool).sum(1)[None, :]
    nearest = np.sqrt(np.maximum(d2.min(1), 0.0))
    bounds = np.cumsum([0] + [len(reference[r]) for r in factors])
    scores = {r: float(nearest[bounds[i]:bounds[i + 1]].mean()) for i, r in enumerate(factors)}
    for r in factors:
        deltas[r][0] = 0.0
    # the score is flat near its minimum: smooth it along the grid so the choice is stable
    raw = np.array([scores[r] for r in factors])
    smoothed = np.convolve(np.pad(raw, 1, mode="edge"), [0.25, 0.5, 0.25], mode="valid")
    best = factors[int(np.argmin(smoothed))]
    return best, deltas[best], scores


def build_profile(samples: np.ndarray, sample_rate: int, prompt_text: str = "") -> VoiceProfile:
    """Analyse a conditioned prompt.

    Args:
        samples: float mono waveform in [-1, 1], shape ``(n_samples,)``.
        sample_rate: Hz (resampled to :data:`ANALYSIS_RATE_HZ` with soxr).
        prompt_text: transcript, "" if unknown (only used for the speaking rate).

    Returns:
        :class:`VoiceProfile`.

    Raises:
        cosyweb.errors.InvalidInputError: fewer than 0.2 s of voiced speech.
    """
    x = _resample(samples, sample_rate)
    sr = ANALYSIS_RATE_HZ
    f0, t = track_f0(x, sr)
    voiced = f0 > 0
    if voiced.sum() < 40:
        raise InvalidInputError(
            "lite.no_voiced_speech",
            "提示音频中几乎没有浊音（有声语音），无法提取音色",
            "The prompt audio has almost no voiced speech; cannot build a voice profile",
        )
    lf0 = np.log(f0[voiced])
    p5, p10, p50, p90, p95 = np.percentile(lf0, [5, 10, 50, 90, 95])
    trimmed = lf0[(lf0 >= p5) & (lf0 <= p95)]
    mean = float(trimmed.mean()) if len(trimmed) else float(p50)
    spread = float(np.clip((p90 - p10) / 2.563, SPREAD_MIN, SPREAD_MAX))
    median_hz = float(np.exp(p50))
    gender = "male" if median_hz < GENDER_SPLIT_HZ else "female"
    variant, const_f0 = VARIANTS[gender]

    mc = mel_cepstrum(sr)
    v_idx = _subsample(np.nonzero(voiced)[0], MAX_PROMPT_FRAMES)
    cep = mc.to_mcep(log_envelope(x, sr, f0[v_idx], t[v_idx]))
    reference = espeak_reference(variant, const_f0)
    warp, delta, scores = search_warp(reference.voiced, cep, cep.mean(0))
    u_idx = _subsample(np.nonzero(active_frames(x, sr, t) & ~voiced)[0], MAX_UNVOICED_FRAMES)
    if len(u_idx) >= MIN_UNVOICED_FRAMES:
        u_cep = mc.to_mcep(log_envelope(x, sr, np.zeros(len(u_idx)), t[u_idx]))
        u_delta = u_cep.mean(0) - reference.unvoiced_mean[warp]
        u_frames = u_cep[:, 1:].astype(np.float32)
    else:  # too little frication to learn from: the voiced EQ only
        u_delta, u_frames = delta.copy(), np.zeros((0, cep.shape[1] - 1), np.float32)
    u_delta[0] = 0.0
    sps, source = speaking_rate(x, sr, f0, prompt_text)
    return VoiceProfile(
        log_f0_mean=mean,
        log_f0_spread=spread,
        f0_median_hz=median_hz,
        gender=gender,
        variant=variant,
        const_f0_hz=const_f0,
        warp=warp,
        mcep_delta=delta,
        frames=cep[:, 1:].astype(np.float32),
        unvoiced_delta=u_delta,
        unvoiced_frames=u_frames,
        loudness_dbfs=adapt.active_rms_dbfs(x, sr),
        syllables_per_s=sps,
        rate_source=source,
        warp_scores=scores,
    )
