"""Decode an uploaded audio file (path or bytes) to float32 PCM.

soundfile (libsndfile) is tried first: wav (int16/int24/int32/float32), flac, ogg
vorbis/opus, mp3 (libsndfile >= 1.1), aiff. Everything else (m4a/aac, webm/opus, mp4,
amr, wma...) goes through ffmpeg (system or the imageio-ffmpeg wheel's; see
:mod:`cosyweb.audio.ffmpeg`), which decodes to a float32 wav stream on a pipe that
soundfile then reads (the wav header carries the rate and channel count).
"""

from __future__ import annotations

import io
import os
import subprocess
import tempfile
from pathlib import Path

import numpy as np
import soundfile as sf

from cosyweb.audio.ffmpeg import ffmpeg_exe
from cosyweb.errors import InvalidInputError

#: Wall-clock limit of one ffmpeg decode, seconds.
FFMPEG_TIMEOUT_S = 60.0
_MIB = 1024 * 1024

#: Magic bytes -> a readable container name, for messages about undecodable data.
_MAGIC: tuple[tuple[int, bytes, str], ...] = (
    (0, b"RIFF", "wav"),
    (0, b"fLaC", "flac"),
    (0, b"OggS", "ogg"),
    (0, b"ID3", "mp3"),
    (4, b"ftyp", "mp4/m4a"),
    (0, b"\x1a\x45\xdf\xa3", "webm/mkv"),
    (0, b"FORM", "aiff"),
    (0, b"#!AMR", "amr"),
    (0, b"%PDF", "pdf"),
    (0, b"\x89PNG", "png"),
    (0, b"\xff\xd8\xff", "jpeg"),
    (0, b"PK\x03\x04", "zip"),
)


def sniff_format(head: bytes) -> str:
    """Guess a container from the first bytes of a file (for messages only).

    Args:
        head: at least the first 12 bytes.

    Returns:
        A short name such as ``"wav"``, ``"mp4/m4a"``, ``"webm/mkv"``, or ``"unknown"``.
    """
    for offset, magic, name in _MAGIC:
        if head[offset : offset + len(magic)] == magic:
            return name
    if len(head) >= 2 and head[0] == 0xFF and head[1] & 0xE0 == 0xE0:
        return "mp3" if head[1] & 0x06 else "aac"
    return "unknown"


def _describe_kind(sniffed: str, ext: str) -> str:
    """``"mp3"``, ``"wav (.mp3)"`` when the extension disagrees, ``".xyz"`` when unknown."""
    if sniffed == "unknown":
        return f".{ext}" if ext else "unknown"
    return f"{sniffed} (.{ext})" if ext and ext not in sniffed else sniffed


def _missing(en_detail: str, zh_detail: str) -> InvalidInputError:
    return InvalidInputError(
        "prompt.missing",
        f"没有提供参考音频（{zh_detail}），请上传或录制一段语音",
        f"No prompt audio ({en_detail}): please upload or record a voice sample",
    )


def _undecodable(kind: str, detail: str = "") -> InvalidInputError:
    if kind == "unknown" or kind.startswith("."):  # nothing recognised in the content: say so
        zh_what = "文件内容不是可识别的音频格式" + (f"，扩展名 {kind}" if kind.startswith(".") else "")
        en_what = "the content is not a recognised audio format" + (f", extension {kind}" if kind.startswith(".") else "")
    else:
        zh_what, en_what = f"文件类型：{kind}", f"file type: {kind}"
    return InvalidInputError(
        "prompt.undecodable",
        f"无法解码参考音频（{zh_what}），请上传 wav、mp3、flac、ogg、m4a 或 webm 格式的音频",
        f"Could not decode the prompt audio ({en_what}); please upload wav, mp3, flac, ogg, m4a or webm audio",
        file_type=kind,
        detail=detail[-500:],
    )


def _too_large(n_bytes: int, max_bytes: int) -> InvalidInputError:
    size_mb, limit_mb = n_bytes / _MIB, max_bytes / _MIB
    return InvalidInputError(
        "prompt.too_large",
        f"参考音频文件过大：{size_mb:.1f} MB，上限为 {limit_mb:.1f} MB",
        f"The prompt audio file is too large: {size_mb:.1f} MB, the limit is {limit_mb:.1f} MB",
        size_mb=round(size_mb, 2),
        limit_mb=round(limit_mb, 2),
    )


def _read_soundfile(src: str | io.BytesIO, max_frames: int | None) -> tuple[np.ndarray, int] | None:
    """soundfile decode, or None if libsndfile cannot read it."""
    try:
        with sf.SoundFile(src) as f:
            n = f.frames if max_frames is None or f.frames <= 0 else min(f.frames, max_frames)
            data = f.read(frames=n if f.frames > 0 else -1, dtype="float32", always_2d=True)
            return data, int(f.samplerate)
    except (sf.LibsndfileError, RuntimeError, TypeError, ValueError, EOFError):
        return None


def _read_ffmpeg(path: str, kind: str, max_duration_s: float | None, timeout_s: float) -> tuple[np.ndarray, int]:
    """Decode the first audio stream with ffmpeg to a float32 wav on stdout, read it with soundfile."""
    # "file:" stops ffmpeg from reading a name such as "concat:a|b" as a protocol
    cmd = [
        ffmpeg_exe(),
        "-v",
        "error",
        "-nostdin",
        "-i",
        "file:" + os.path.abspath(path),
        "-map",
        "0:a:0",
        "-vn",
        "-sn",
        "-dn",
    ]
    if max_duration_s is not None:
        cmd += ["-t", f"{max_duration_s:.3f}"]
    cmd += ["-f", "wav", "-acodec", "pcm_f32le", "pipe:1"]
    try:
        proc = subprocess.run(cmd, capture_output=True, timeout=timeout_s, check=False)
    except subprocess.TimeoutExpired as exc:
        raise InvalidInputError(
            "prompt.decode_timeout",
            f"解码参考音频超时（超过 {timeout_s:g} 秒，文件类型：{kind}）",
            f"Decoding the prompt audio timed out after {timeout_s:g} s (file type: {kind})",
        ) from exc
    # the decoder's own words stay in the error details, without server paths
    err = proc.stderr.decode("utf-8", "replace").replace("file:" + os.path.abspath(path), "<upload>")
    err = err.replace(os.path.abspath(path), "<upload>")
    if "matches no streams" in err or "does not contain any stream" in err:
        raise _missing(f"the {kind} file has no audio track", f"{kind} 文件中没有音轨")
    got = _read_soundfile(io.BytesIO(proc.stdout), None) if proc.returncode == 0 else None
    if got is None:
        raise _undecodable(kind, err)
    return got


def decode_audio(
    source: str | os.PathLike | bytes | None,
    *,
    max_bytes: int | None = None,
    max_duration_s: float | None = None,
    timeout_s: float = FFMPEG_TIMEOUT_S,
) -> tuple[np.ndarray, int]:
    """Decode any common audio file to float32 samples at its native rate.

    Args:
        source: a file path, or the file's bytes. None means nothing was uploaded.
        max_bytes: largest accepted file size in bytes (None = no limit).
        max_duration_s: decode at most this many seconds from the start (None = all). Guards
            against a small compressed file that expands to hours of PCM.
        timeout_s: wall-clock limit for an ffmpeg decode.

    Returns:
        ``(samples, sample_rate_hz)``: samples are float32, shape ``(n_samples, n_channels)``
        (always 2-D, also for mono), nominally in [-1, 1] (float files may exceed it);
        the rate is the file's own.

    Raises:
        InvalidInputError: ``prompt.missing`` (None, missing or empty file, no audio track),
            ``prompt.too_large`` (over ``max_bytes``; message gives both in MB),
            ``prompt.undecodable`` (neither soundfile nor ffmpeg can decode it, or it holds
            NaN/inf; the message names the sniffed file type or extension),
            ``prompt.decode_timeout`` (ffmpeg ran past ``timeout_s``).
        StartupError: no ffmpeg was found and the file needs one.
    """
    if source is None:
        raise _missing("nothing was uploaded", "未上传文件")
    tmp_path: str | None = None
    try:
        if isinstance(source, (bytes, bytearray, memoryview)):
            data = bytes(source)
            n_bytes, head, ext = len(data), data[:16], ""
        else:
            path = Path(source)
            if not path.is_file():
                raise _missing(f"file not found: {path.name}", f"找不到文件 {path.name}")
            n_bytes, ext = path.stat().st_size, path.suffix.lower().lstrip(".")
            with open(path, "rb") as f:
                head = f.read(16)
            data = None
        if n_bytes == 0:
            raise _missing("the file is empty", "文件为空")
        if max_bytes is not None and n_bytes > max_bytes:
            raise _too_large(n_bytes, max_bytes)
        sniffed = sniff_format(head)
        kind = _describe_kind(sniffed, ext)

        got = None
        if sniffed not in ("mp4/m4a", "webm/mkv"):  # libsndfile cannot read these; skip straight to ffmpeg
            sf_src = io.BytesIO(data) if data is not None else str(source)
            # a header-only read first, so the frame cap applies before decoding
            max_frames = None
            if max_duration_s is not None:
                try:
                    max_frames = int(round(max_duration_s * sf.info(sf_src).samplerate))
                except (sf.LibsndfileError, RuntimeError, TypeError, ValueError, EOFError):
                    max_frames = None
                if isinstance(sf_src, io.BytesIO):
                    sf_src.seek(0)
            got = _read_soundfile(sf_src, max_frames)
        if got is None or got[0].shape[0] == 0:
            if data is not None:
                fd, tmp_path = tempfile.mkstemp(prefix="cosyweb-upload-", suffix=f".{ext or 'bin'}")
                with os.fdopen(fd, "wb") as f:
                    f.write(data)
            got = _read_ffmpeg(tmp_path or str(source), kind, max_duration_s, timeout_s)
        samples, sample_rate = got
        if samples.shape[0] == 0:
            raise _missing(f"the {kind} file holds no audio samples", f"{kind} 文件中没有音频数据")
        if not np.all(np.isfinite(samples)):
            raise _undecodable(kind, "samples contain NaN or infinity")
        return np.ascontiguousarray(samples, dtype=np.float32), sample_rate
    finally:
        if tmp_path is not None:
            os.unlink(tmp_path)
