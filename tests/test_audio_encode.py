"""Output encoding: int16 conversion without per-chunk normalisation, wav bytes and files."""

from __future__ import annotations

import io
import warnings

import numpy as np
import pytest
import soundfile as sf

from cosyweb.audio.encode import peak_normalize, stream_chunk, to_int16, wav_bytes, write_wav

SR = 24000


def test_to_int16_scales_and_clips():
    x = np.array([0.0, 0.5, -0.5, 1.0, -1.0, 1.7, -3.0, 1e-6], dtype=np.float32)
    y = to_int16(x)
    assert y.dtype == np.int16
    assert y.tolist() == [0, 16384, -16384, 32767, -32767, 32767, -32767, 0]


def test_to_int16_never_normalises_a_chunk():
    quiet = np.full(100, 0.01, dtype=np.float32)
    loud = np.full(100, 0.5, dtype=np.float32)
    q, ld = to_int16(quiet), to_int16(loud)
    assert q.max() == 328 and ld.max() == 16384  # the 1:50 ratio between chunks survives


def test_to_int16_shapes_and_types():
    stereo = np.zeros((10, 2), dtype=np.float64)
    assert to_int16(stereo).shape == (10, 2)
    ints = np.array([1, -2, 3], dtype=np.int16)
    assert to_int16(ints) is ints
    with pytest.raises(TypeError):
        to_int16(np.array([1, 2], dtype=np.int32))
    with pytest.raises(ValueError):
        to_int16(np.array([0.1, np.nan], dtype=np.float32))


def test_wav_bytes_round_trip():
    t = np.arange(SR) / SR
    x = (0.25 * np.sin(2 * np.pi * 440 * t)).astype(np.float32)
    data = wav_bytes(x, SR)
    assert data[:4] == b"RIFF" and data[8:12] == b"WAVE"
    info = sf.info(io.BytesIO(data))
    assert (info.samplerate, info.channels, info.subtype, info.frames) == (SR, 1, "PCM_16", SR)
    back, sr = sf.read(io.BytesIO(data), dtype="int16")
    assert sr == SR and np.array_equal(back, to_int16(x))


def test_write_wav(tmp_path):
    x = np.stack([np.linspace(-1, 1, 480), np.zeros(480)], axis=1).astype(np.float32)
    path = write_wav(tmp_path / "out" / "a.wav", x, 16000)
    assert path.is_file()
    info = sf.info(path)
    assert (info.samplerate, info.channels, info.subtype, info.frames) == (16000, 2, "PCM_16", 480)
    back, _ = sf.read(path, dtype="float32")
    np.testing.assert_allclose(back, x, atol=2 / 32768)  # scale 32767 in, 32768 out, plus rounding


def test_peak_normalize():
    x = np.array([0.0, 0.1, -0.2], dtype=np.float32)
    y = peak_normalize(x, -6.0)
    assert np.max(np.abs(y)) == pytest.approx(10 ** (-6 / 20), rel=1e-6)
    assert np.array_equal(peak_normalize(np.zeros(4), -1.0), np.zeros(4))


def test_gradio_keeps_int16_chunks_but_renormalises_float_chunks():
    """Why streaming chunks must be int16: Gradio divides a float chunk by its own peak."""
    import gradio as gr
    from gradio import processing_utils

    quiet = np.full(SR // 10, 0.01, dtype=np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        as_float = processing_utils.convert_to_16_bit_audio(quiet)
    assert as_float.max() == 32767  # a 0.01 chunk became full scale

    sr, chunk = stream_chunk(quiet, SR)
    out = gr.Audio(streaming=True).postprocess((sr, chunk))
    back, back_sr = sf.read(out.path, dtype="int16")
    assert back_sr == SR and np.array_equal(back, chunk) and back.max() == 328
