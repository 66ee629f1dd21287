"""Data types of the audio layer. Imports nothing of ours but :mod:`cosyweb.errors`."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

import numpy as np

from cosyweb.errors import Warnings


@dataclass
class PromptAudio:
    """A decoded, conditioned and checked prompt recording.

    Attributes:
        samples: float32 mono waveform, shape ``(n_samples,)``, range [-1, 1], after
            down-mixing, resampling to ``sample_rate`` and trimming silence.
        sample_rate: Hz of ``samples`` (the configured prompt rate, 24000 by default).
        original_sample_rate: Hz of the uploaded file.
        duration_s: ``len(samples) / sample_rate``.
        speech_s: seconds judged to be speech (energy VAD).
        peak_dbfs: peak level in dBFS (0 = full scale).
        rms_dbfs: RMS level of the active frames in dBFS.
        snr_db: estimated signal-to-noise ratio in dB (active-frame vs. noise-floor energy).
        trimmed_from_s: for a prompt cut to the duration limit, the (start, end) in seconds
            of the original that was kept; None otherwise.
        warnings: bilingual warnings (low sample rate, clipping, low level, noise, short).
        source_path: the file it was read from, if any.
        kept_range_s: (start, end) in seconds of the decoded original that ``samples``
            cover, after trimming silence and any cut; None if unknown.
        original_duration_s: seconds of the decoded upload (at most the analysis limit).
        original_channels: channel count of the upload (down-mixed to mono here).
        clipped_fraction: share of the upload's samples at or near full scale (0..1).
    """

    samples: np.ndarray
    sample_rate: int
    original_sample_rate: int
    duration_s: float
    speech_s: float = 0.0
    peak_dbfs: float = 0.0
    rms_dbfs: float = 0.0
    snr_db: float = 0.0
    trimmed_from_s: tuple[float, float] | None = None
    warnings: Warnings = field(default_factory=Warnings)
    source_path: str | None = None
    kept_range_s: tuple[float, float] | None = None
    original_duration_s: float | None = None
    original_channels: int = 1
    clipped_fraction: float = 0.0

    @property
    def fingerprint(self) -> str:
        """A content hash (sha1 hex of the int16-quantised samples and rate): the voice cache key."""
        h = hashlib.sha1()
        h.update(str(self.sample_rate).encode())
        h.update(np.clip(self.samples * 32767.0, -32768, 32767).astype("<i2").tobytes())
        return h.hexdigest()

    def stats(self) -> dict:
        """JSON-friendly measurements for the UI preview and logs."""
        return {
            "duration_s": round(self.duration_s, 2),
            "speech_s": round(self.speech_s, 2),
            "sample_rate": self.sample_rate,
            "original_sample_rate": self.original_sample_rate,
            "peak_dbfs": round(self.peak_dbfs, 1),
            "rms_dbfs": round(self.rms_dbfs, 1),
            "snr_db": round(self.snr_db, 1),
            "trimmed_from_s": self.trimmed_from_s,
            "kept_range_s": self.kept_range_s,
            "original_duration_s": None if self.original_duration_s is None else round(self.original_duration_s, 2),
            "original_channels": self.original_channels,
            "clipped_fraction": round(self.clipped_fraction, 5),
        }
