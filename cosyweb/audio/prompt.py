"""Turn an uploaded recording into a checked :class:`PromptAudio` (the zero-shot prompt).

Steps: decode (:mod:`cosyweb.audio.decode`) -> down-mix to mono -> resample with soxr (HQ)
to the prompt rate -> trim leading/trailing silence (keeping 0.1 s margins) -> cut to the
stretch with the most speech if still longer than the limit -> measure and check.
Measurements and the speech detector are in :mod:`cosyweb.audio.analysis`.

Rejected (:class:`InvalidInputError`): no audio (``prompt.missing``), undecodable data
(``prompt.undecodable``), too large (``prompt.too_large``), digital silence
(``prompt.silent``), under ``min_speech_s`` of speech (``prompt.too_short``).
Warned (``PromptAudio.warnings``): ``prompt.low_sample_rate``, ``prompt.clipping``,
``prompt.quiet``, ``prompt.noisy``, ``prompt.short``, ``prompt.cut``.
"""

from __future__ import annotations

import math
import os
from typing import TYPE_CHECKING

import numpy as np
import soxr

from cosyweb.audio import analysis as an
from cosyweb.audio.decode import decode_audio
from cosyweb.audio.types import PromptAudio
from cosyweb.errors import InvalidInputError, Warnings

if TYPE_CHECKING:
    from cosyweb.config import Settings

# --- thresholds (tuned on ../shared/prompts: see tests/test_audio_prompt.py) ------------------
SILENT_PEAK_DBFS = -80.0  #: a peak below this is digital silence: rejected
LOW_SAMPLE_RATE_HZ = 16000  #: original rates below this get a warning
CLIP_LEVEL = 0.99  #: |x| at or above this (full scale 1.0) counts as clipped ...
CLIPPED_FRACTION = 0.001  #: ... and more than 0.1 % such samples gets a warning
QUIET_RMS_DBFS = -35.0  #: speech RMS below this gets a warning
NOISY_SNR_DB = 15.0  #: estimated SNR below this gets a warning
SHORT_PROMPT_S = 3.0  #: a (trimmed) prompt shorter than this gets a warning
TRIM_MARGIN_S = 0.1  #: silence kept before the first and after the last sound
ANALYSIS_LIMIT_S = 300.0  #: only the first 5 minutes of a longer upload are decoded
_OUT_OF_PHASE_DB = 20.0  #: a stereo mix this much weaker than its channels is out of phase
_MIB = 1024 * 1024


def _db(x: float) -> float:
    return 20.0 * math.log10(x) if x > 0 else -math.inf


def downmix(samples: np.ndarray) -> np.ndarray:
    """Average the channels of ``(n_samples, n_channels)`` float samples to ``(n_samples,)``.

    If the average is over 20 dB weaker than the channels (an out-of-phase stereo pair
    cancels in a plain average), the loudest channel is used instead.
    """
    if samples.ndim == 1:
        return samples.astype(np.float32, copy=False)
    if samples.shape[1] == 1:
        return samples[:, 0].astype(np.float32, copy=False)
    mix = samples.mean(axis=1, dtype=np.float64)
    channel_power = np.mean(samples.astype(np.float64) ** 2, axis=0)
    if np.mean(mix**2) * 10 ** (_OUT_OF_PHASE_DB / 10) < channel_power.mean():
        return samples[:, int(np.argmax(channel_power))].astype(np.float32)
    return mix.astype(np.float32)


def _silent(peak_dbfs: float) -> InvalidInputError:
    if math.isinf(peak_dbfs):
        zh, en = "全部为零", "all samples are zero"
    else:
        zh, en = f"峰值 {peak_dbfs:.0f} dBFS", f"peak {peak_dbfs:.0f} dBFS"
    return InvalidInputError(
        "prompt.silent",
        f"参考音频是静音（{zh}），请重新录制或上传有人声的音频",
        f"The prompt audio is silent ({en}); please record or upload audio with speech",
        peak_dbfs=None if math.isinf(peak_dbfs) else round(peak_dbfs, 1),
    )


def _too_short(speech_s: float, min_speech_s: float) -> InvalidInputError:
    return InvalidInputError(
        "prompt.too_short",
        f"参考音频中的语音太短：只检测到 {speech_s:.1f} 秒语音，至少需要 {min_speech_s:g} 秒",
        f"Too little speech in the prompt audio: {speech_s:.1f} s detected, at least {min_speech_s:g} s needed",
        speech_s=round(speech_s, 2),
        min_speech_s=min_speech_s,
    )


def _cut(
    x: np.ndarray, lv: an.Levels, start: int, stop: int, sample_rate: int, max_duration_s: float
) -> tuple[int, int]:
    """Within ``x[start:stop]``, the sample range of the best stretch under ``max_duration_s``, re-trimmed."""
    seg = x[start:stop]
    energy = an.frame_energy_db(seg, sample_rate)
    mask = an.speech_mask(energy, lv)
    _, n_hop = an.frame_params(sample_rate)
    max_samples = int(max_duration_s * sample_rate)
    f0, f1 = an.best_window(mask, energy, max_samples // n_hop)
    end = seg.shape[0] if f1 >= mask.size else f1 * n_hop  # the last frame reaches the end
    w0, w1 = f0 * n_hop, min(end, f0 * n_hop + max_samples)
    # the window starts and ends in pauses: trim them again, keeping the margins
    t0, t1 = an.trim_bounds(an.frame_energy_db(seg[w0:w1], sample_rate), lv, w1 - w0, sample_rate, TRIM_MARGIN_S)
    if t1 <= t0:
        t0, t1 = 0, w1 - w0
    return start + w0 + t0, start + w0 + t1


def load_prompt(
    source: str | os.PathLike | bytes | None,
    *,
    target_sample_rate: int = 24000,
    max_duration_s: float = 30.0,
    min_speech_s: float = 1.0,
    max_bytes: int | None = None,
) -> PromptAudio:
    """Decode, condition and check a prompt recording.

    Args:
        source: file path or file bytes (any format :func:`decode_audio` reads); None = no upload.
        target_sample_rate: Hz of the returned samples (soxr "HQ" resampling).
        max_duration_s: a longer (trimmed) prompt is cut to its stretch with the most
            speech, cut in pauses, and gets a ``prompt.cut`` warning; never rejected.
        min_speech_s: prompts with less detected speech are rejected.
        max_bytes: largest accepted file size in bytes (None = no limit).

    Returns:
        A :class:`PromptAudio`: float32 mono samples in [-1, 1] at ``target_sample_rate``
        (a float file peaking above full scale is scaled down to 1.0), its measurements,
        ``kept_range_s`` (and ``trimmed_from_s`` when cut) in seconds of the original,
        and bilingual warnings.

    Raises:
        InvalidInputError: ``prompt.missing``, ``prompt.undecodable``, ``prompt.too_large``,
            ``prompt.decode_timeout``, ``prompt.silent``, ``prompt.too_short``.
    """
    decoded, original_rate = decode_audio(source, max_bytes=max_bytes, max_duration_s=ANALYSIS_LIMIT_S)
    n_channels = decoded.shape[1]
    original_duration_s = decoded.shape[0] / original_rate
    clipped = an.clipped_fraction(decoded, CLIP_LEVEL)
    mono = downmix(decoded)
    del decoded
    peak_in = float(np.max(np.abs(mono)))
    if _db(peak_in) < SILENT_PEAK_DBFS:
        raise _silent(_db(peak_in))

    sr = target_sample_rate
    if original_rate != sr:
        x = soxr.resample(mono, original_rate, sr, quality="HQ").astype(np.float32, copy=False)
    else:
        x = mono.copy()
    peak = float(np.max(np.abs(x)))
    if peak > 1.0:  # a float file above full scale: scale it down rather than clip it
        x /= peak
    energy = an.frame_energy_db(x, sr)
    lv = an.levels(energy)
    start, stop = an.trim_bounds(energy, lv, x.shape[0], sr, TRIM_MARGIN_S)
    if stop <= start:
        raise _too_short(0.0, min_speech_s)

    warnings = Warnings()
    trimmed_from_s = None
    if (stop - start) / sr > max_duration_s:
        start, stop = _cut(x, lv, start, stop, sr, max_duration_s)
        trimmed_from_s = (round(start / sr, 2), round(stop / sr, 2))
        a, b = trimmed_from_s
        zh_note = f"（只分析了前 {ANALYSIS_LIMIT_S:g} 秒）" if original_duration_s >= ANALYSIS_LIMIT_S - 0.01 else ""
        en_note = f" (only the first {ANALYSIS_LIMIT_S:g} s were analysed)" if zh_note else ""
        warnings.add(
            "prompt.cut",
            f"参考音频长 {original_duration_s:.1f} 秒，超过 {max_duration_s:g} 秒上限，"
            f"已截取语音最集中的一段：保留了 {a:.1f}–{b:.1f} 秒{zh_note}",
            f"The prompt audio is {original_duration_s:.1f} s long, over the {max_duration_s:g} s limit; "
            f"kept the stretch with the most speech: {a:.1f}–{b:.1f} s{en_note}",
        )
    samples = np.ascontiguousarray(x[start:stop])
    peak = float(np.max(np.abs(samples)))

    final_energy = an.frame_energy_db(samples, sr)
    mask = an.speech_mask(final_energy, lv)
    _, n_hop = an.frame_params(sr)
    speech_s = float(np.count_nonzero(mask)) * n_hop / sr
    if speech_s < min_speech_s:
        raise _too_short(speech_s, min_speech_s)
    active = final_energy[mask]
    rms_dbfs = float(10.0 * np.log10(np.mean(10.0 ** (active / 10.0))))
    snr_db = an.estimate_snr_db(x, sr)
    duration_s = samples.shape[0] / sr

    if original_rate < LOW_SAMPLE_RATE_HZ:
        warnings.add(
            "prompt.low_sample_rate",
            f"参考音频采样率较低（{original_rate} Hz，建议至少 {LOW_SAMPLE_RATE_HZ} Hz），音质可能受影响",
            f"The prompt audio has a low sample rate ({original_rate} Hz; "
            f"{LOW_SAMPLE_RATE_HZ} Hz or more is recommended), quality may suffer",
        )
    if clipped > CLIPPED_FRACTION:
        warnings.add(
            "prompt.clipping",
            f"参考音频有削波失真（{clipped:.1%} 的采样点达到满幅），建议降低录音音量后重录",
            f"The prompt audio is clipped ({clipped:.1%} of samples at full scale); re-record at a lower input level",
        )
    if rms_dbfs < QUIET_RMS_DBFS:
        warnings.add(
            "prompt.quiet",
            f"参考音频音量很低（语音平均 {rms_dbfs:.0f} dBFS），建议靠近麦克风或调高音量",
            f"The prompt audio is very quiet (speech averages {rms_dbfs:.0f} dBFS); "
            "move closer to the microphone or raise the level",
        )
    if snr_db < NOISY_SNR_DB:
        warnings.add(
            "prompt.noisy",
            f"参考音频背景噪声较大（估计信噪比 {snr_db:.0f} dB），克隆效果可能变差，建议在安静环境重录",
            f"The prompt audio is noisy (estimated SNR {snr_db:.0f} dB); the cloned voice may suffer, "
            "re-record somewhere quieter",
        )
    if duration_s < SHORT_PROMPT_S:
        warnings.add(
            "prompt.short",
            f"参考音频较短（{duration_s:.1f} 秒），建议使用 3–10 秒清晰的语音",
            f"The prompt audio is short ({duration_s:.1f} s); 3–10 s of clear speech works best",
        )

    return PromptAudio(
        samples=samples,
        sample_rate=sr,
        original_sample_rate=original_rate,
        duration_s=duration_s,
        speech_s=speech_s,
        peak_dbfs=_db(peak),
        rms_dbfs=rms_dbfs,
        snr_db=snr_db,
        trimmed_from_s=trimmed_from_s,
        warnings=warnings,
        source_path=None if source is None or isinstance(source, (bytes, bytearray, memoryview)) else str(source),
        kept_range_s=(round(start / sr, 3), round(stop / sr, 3)),
        original_duration_s=original_duration_s,
        original_channels=n_channels,
        clipped_fraction=clipped,
    )


def load_prompt_with_settings(source: str | os.PathLike | bytes | None, settings: Settings) -> PromptAudio:
    """:func:`load_prompt` with the limits from :class:`cosyweb.config.Settings`
    (``prompt_sample_rate``, ``max_prompt_s``, ``min_speech_s``, ``max_upload_mb``)."""
    return load_prompt(
        source,
        target_sample_rate=settings.prompt_sample_rate,
        max_duration_s=settings.max_prompt_s,
        min_speech_s=settings.min_speech_s,
        max_bytes=int(settings.max_upload_mb * _MIB),
    )
