"""Output encoding: float waveforms to int16 PCM, wav bytes and wav files.

Streaming chunks for ``gr.Audio(streaming=True)`` must be int16: Gradio converts a float
array with ``processing_utils.convert_to_16_bit_audio``, which divides *each chunk* by its
own peak, so the loudness would jump from chunk to chunk. :func:`to_int16` clips instead and
never normalises. Either yield ``(sample_rate, to_int16(chunk))`` or ``wav_bytes(chunk, sr)``;
Gradio reads 16-bit wav chunks with the stdlib and feeds one ffmpeg AAC encoder per stream
(``gradio/audio_stream_encoder.py``), which needs ``ffmpeg`` on PATH
(:func:`cosyweb.audio.ffmpeg.ensure_ffmpeg_on_path`).
"""

from __future__ import annotations

import io
import os
from pathlib import Path

import numpy as np
import soundfile as sf

_INT16_SCALE = 32767.0


def to_int16(samples: np.ndarray) -> np.ndarray:
    """Float samples in [-1, 1] to int16 PCM, clipping (not normalising) anything outside.

    Args:
        samples: float array, shape ``(n_samples,)`` or ``(n_samples, n_channels)``;
            an int16 array is returned unchanged.

    Returns:
        int16 array of the same shape; ``x * 32767`` rounded, so 1.0 -> 32767 and -1.0 -> -32767.

    Raises:
        TypeError: an integer array other than int16.
        ValueError: NaN or infinite samples.
    """
    x = np.asarray(samples)
    if x.dtype == np.int16:
        return x
    if not np.issubdtype(x.dtype, np.floating):
        raise TypeError(f"to_int16 expects float samples in [-1, 1] or int16, got {x.dtype}")
    if not np.all(np.isfinite(x)):
        raise ValueError("samples contain NaN or infinity")
    return np.rint(np.clip(x, -1.0, 1.0) * _INT16_SCALE).astype(np.int16)


def peak_normalize(samples: np.ndarray, peak_dbfs: float = -1.0) -> np.ndarray:
    """Scale a whole (finished) waveform so its peak is ``peak_dbfs``; silence is returned as is.

    Use on complete utterances only, never per streaming chunk.

    Returns:
        float32 array of the same shape.
    """
    x = np.asarray(samples, dtype=np.float32)
    peak = float(np.max(np.abs(x))) if x.size else 0.0
    if peak == 0.0:
        return x.copy()
    return x * np.float32(10 ** (peak_dbfs / 20.0) / peak)


def wav_bytes(samples: np.ndarray, sample_rate: int) -> bytes:
    """A complete 16-bit PCM wav file in memory.

    Args:
        samples: float in [-1, 1] (clipped) or int16; shape ``(n,)`` or ``(n, n_channels)``.
        sample_rate: Hz.

    Returns:
        The wav file's bytes (RIFF header + PCM_16 data).
    """
    buf = io.BytesIO()
    sf.write(buf, to_int16(samples), int(sample_rate), format="WAV", subtype="PCM_16")
    return buf.getvalue()


def write_wav(path: str | os.PathLike, samples: np.ndarray, sample_rate: int) -> Path:
    """Write a 16-bit PCM wav file (parent directories are created).

    Args:
        path: destination file.
        samples: float in [-1, 1] (clipped) or int16; shape ``(n,)`` or ``(n, n_channels)``.
        sample_rate: Hz.

    Returns:
        The path written.
    """
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    sf.write(str(p), to_int16(samples), int(sample_rate), format="WAV", subtype="PCM_16")
    return p


def stream_chunk(samples: np.ndarray, sample_rate: int) -> tuple[int, np.ndarray]:
    """The ``(sample_rate, int16 array)`` value to yield to ``gr.Audio(streaming=True)``."""
    return int(sample_rate), to_int16(samples)
