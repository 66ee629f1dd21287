"""Decoding of prompt uploads: every format in ../shared/prompts, browser/phone formats made
at test time with the bundled ffmpeg, and every way an upload can be bad."""

from __future__ import annotations

import subprocess
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from cosyweb.audio.decode import decode_audio, sniff_format
from cosyweb.audio.ffmpeg import ffmpeg_exe
from cosyweb.errors import InvalidInputError

REAL = "cosyvoice__zero_shot_prompt.wav"  # 3.48 s, 24 kHz float32 wav


def _audio_files(manifest: dict) -> list[str]:
    return sorted(manifest)


def _ffmpeg(*args: str) -> None:
    subprocess.run([ffmpeg_exe(), "-v", "error", "-nostdin", "-y", *args], check=True, timeout=60)


@pytest.fixture(scope="module")
def made(tmp_path_factory, shared_prompts: Path) -> dict[str, Path]:
    """m4a/aac, webm/opus, ogg/opus, mp4 (aac) and a video-only mp4, encoded from a real prompt."""
    d = tmp_path_factory.mktemp("formats")
    src = str(shared_prompts / REAL)
    out = {
        "m4a": (d / "p.m4a", ["-c:a", "aac", "-b:a", "64k"]),
        "aac": (d / "p.aac", ["-c:a", "aac", "-b:a", "64k"]),
        "webm": (d / "p.webm", ["-c:a", "libopus", "-b:a", "32k"]),
        "opus": (d / "p.opus", ["-c:a", "libopus", "-b:a", "32k"]),
        "mp4": (d / "p.mp4", ["-c:a", "aac", "-b:a", "64k"]),
    }
    for path, codec in out.values():
        _ffmpeg("-i", src, *codec, str(path))
    video = d / "video_only.mp4"
    _ffmpeg("-f", "lavfi", "-i", "testsrc=size=32x32:rate=5", "-t", "1", "-c:v", "mpeg4", str(video))
    return {k: v[0] for k, v in out.items()} | {"video_only": video}


def test_every_shared_prompt_decodes_to_its_manifest_shape(shared_prompts, prompt_manifest):
    files = _audio_files(prompt_manifest)
    assert len(files) >= 20
    for name in files:
        row = prompt_manifest[name]
        samples, sr = decode_audio(shared_prompts / name)
        assert samples.dtype == np.float32 and samples.ndim == 2, name
        assert sr == int(row["sample_rate"]), name
        assert samples.shape[1] == int(row["channels"]), name
        assert abs(samples.shape[0] / sr - float(row["duration_s"])) < 0.06, name
        assert np.all(np.isfinite(samples)) and 0.01 < np.max(np.abs(samples)) <= 1.0, name


@pytest.mark.parametrize("subtype", ["PCM_16", "PCM_24", "FLOAT"])
def test_wav_sample_formats_are_scaled_to_unit_range(shared_prompts, prompt_manifest, subtype):
    name = next(
        n for n in sorted(prompt_manifest) if n.endswith(".wav") and sf.info(shared_prompts / n).subtype == subtype
    )
    samples, sr = decode_audio(shared_prompts / name)
    if subtype == "FLOAT":
        ref = sf.read(shared_prompts / name, dtype="float32", always_2d=True)[0]
        np.testing.assert_array_equal(samples, ref)
    else:
        ints = sf.read(shared_prompts / name, dtype="int32", always_2d=True)[0]  # left-aligned in 32 bits
        np.testing.assert_allclose(samples, ints / 2.0**31, atol=1e-7)


@pytest.mark.parametrize("suffix", [".flac", ".mp3", ".ogg"])
def test_compressed_shared_formats(shared_prompts, prompt_manifest, suffix):
    name = next(n for n in sorted(prompt_manifest) if n.endswith(suffix))
    samples, sr = decode_audio(shared_prompts / name)
    assert abs(samples.shape[0] / sr - float(prompt_manifest[name]["duration_s"])) < 0.06
    assert 20 * np.log10(np.sqrt(np.mean(samples**2))) > -45  # real speech, not zeros


def test_bytes_and_path_decode_identically(shared_prompts):
    path = shared_prompts / "whisper__jfk.flac"
    a, sr_a = decode_audio(path)
    b, sr_b = decode_audio(path.read_bytes())
    assert sr_a == sr_b and np.array_equal(a, b)


@pytest.mark.parametrize("fmt", ["m4a", "aac", "webm", "opus", "mp4"])
def test_ffmpeg_formats_made_from_a_real_prompt(made, shared_prompts, fmt):
    ref, ref_sr = decode_audio(shared_prompts / REAL)
    for source in (made[fmt], made[fmt].read_bytes()):
        samples, sr = decode_audio(source)
        assert sr in (24000, 48000)  # opus decodes at 48 kHz
        assert samples.shape[1] == 1
        # same length (codec padding aside) and the same loudness as the source
        assert abs(samples.shape[0] / sr - ref.shape[0] / ref_sr) < 0.08
        level = 10 * np.log10(np.mean(samples**2))
        ref_level = 10 * np.log10(np.mean(ref**2))
        assert abs(level - ref_level) < 1.0


def test_video_without_audio_is_missing_audio(made):
    with pytest.raises(InvalidInputError) as ei:
        decode_audio(made["video_only"])
    assert ei.value.code == "prompt.missing"
    assert "no audio track" in ei.value.en and "没有音轨" in ei.value.zh


def test_max_duration_caps_decoding(shared_prompts, made):
    samples, sr = decode_audio(shared_prompts / "zonos__exampleaudio.mp3", max_duration_s=2.0)
    assert abs(samples.shape[0] / sr - 2.0) < 0.03
    samples, sr = decode_audio(made["m4a"], max_duration_s=1.5)
    assert abs(samples.shape[0] / sr - 1.5) < 0.03


@pytest.mark.parametrize("source", [None, b"", "empty"], ids=["none", "empty-bytes", "empty-file"])
def test_no_audio_is_prompt_missing(tmp_path, source):
    if source == "empty":
        source = tmp_path / "empty.wav"
        source.write_bytes(b"")
    with pytest.raises(InvalidInputError) as ei:
        decode_audio(source)
    assert ei.value.code == "prompt.missing"
    assert ei.value.zh and ei.value.en and " / " in str(ei.value)


def test_header_only_wav_is_prompt_missing(tmp_path):
    path = tmp_path / "header_only.wav"
    sf.write(path, np.zeros(0, dtype=np.float32), 16000)
    with pytest.raises(InvalidInputError) as ei:
        decode_audio(path)
    assert ei.value.code == "prompt.missing" and "no audio samples" in ei.value.en


def test_missing_file_is_prompt_missing(tmp_path):
    with pytest.raises(InvalidInputError) as ei:
        decode_audio(tmp_path / "nope.wav")
    assert ei.value.code == "prompt.missing" and "nope.wav" in ei.value.en


def test_garbage_bytes_are_undecodable():
    rng = np.random.default_rng(0)
    with pytest.raises(InvalidInputError) as ei:
        decode_audio(rng.integers(0, 256, 5000, dtype=np.uint8).tobytes())
    assert ei.value.code == "prompt.undecodable"
    assert "not a recognised audio format" in ei.value.en and "不是可识别的音频格式" in ei.value.zh
    assert "/tmp" not in str(ei.value.details) and "cosyweb-upload" not in str(ei.value.details)  # no server paths


def test_undecodable_message_names_the_file_type(tmp_path):
    fake = tmp_path / "notes.wav"
    fake.write_text("this is not audio at all " * 50)
    with pytest.raises(InvalidInputError) as ei:
        decode_audio(fake)
    assert ei.value.code == "prompt.undecodable"
    assert "not a recognised audio format, extension .wav" in ei.value.en and "扩展名 .wav" in ei.value.zh
    assert str(tmp_path) not in str(ei.value.details)
    pdf = tmp_path / "doc.pdf"
    pdf.write_bytes(b"%PDF-1.4\n" + b"x" * 2000)
    with pytest.raises(InvalidInputError) as ei:
        decode_audio(pdf)
    assert "pdf" in ei.value.en


def test_truncated_wav_header_is_undecodable(shared_prompts):
    data = (shared_prompts / REAL).read_bytes()[:30]
    with pytest.raises(InvalidInputError) as ei:
        decode_audio(data)
    assert ei.value.code == "prompt.undecodable" and "wav" in ei.value.en


def test_nan_samples_are_undecodable(tmp_path):
    x = np.zeros(24000, dtype=np.float32)
    x[100] = np.nan
    path = tmp_path / "nan.wav"
    sf.write(path, x, 24000, subtype="FLOAT")
    with pytest.raises(InvalidInputError) as ei:
        decode_audio(path)
    assert ei.value.code == "prompt.undecodable"


def test_oversized_upload_is_rejected_with_sizes_in_mb(shared_prompts):
    path = shared_prompts / "zonos__exampleaudio.mp3"  # 819,820 bytes
    with pytest.raises(InvalidInputError) as ei:
        decode_audio(path, max_bytes=512 * 1024)
    assert ei.value.code == "prompt.too_large"
    assert "0.8 MB" in ei.value.en and "0.5 MB" in ei.value.en and "0.8 MB" in ei.value.zh
    with pytest.raises(InvalidInputError):
        decode_audio(path.read_bytes(), max_bytes=512 * 1024)
    decode_audio(path, max_bytes=1024 * 1024)  # under the limit: fine


def test_ffmpeg_decode_is_time_limited(made):
    with pytest.raises(InvalidInputError) as ei:
        decode_audio(made["m4a"], timeout_s=0.0001)
    assert ei.value.code == "prompt.decode_timeout"


def test_sniff_format():
    assert sniff_format(b"RIFF\x00\x00\x00\x00WAVEfmt ") == "wav"
    assert sniff_format(b"\x00\x00\x00\x20ftypM4A ") == "mp4/m4a"
    assert sniff_format(b"\x1a\x45\xdf\xa3\x01") == "webm/mkv"
    assert sniff_format(b"ID3\x04") == "mp3"
    assert sniff_format(b"\xff\xfb\x90") == "mp3"
    assert sniff_format(b"OggS\x00") == "ogg"
    assert sniff_format(b"hello world!") == "unknown"
