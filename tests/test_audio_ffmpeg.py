"""The bundled ffmpeg, the PATH set-up Gradio needs, and the ffprobe stand-in."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from cosyweb.audio import ffprobe_shim
from cosyweb.audio.ffmpeg import bundled_ffmpeg_exe, ffmpeg_exe

PROJECT_ROOT = Path(__file__).resolve().parents[1]

# Runs in a child process whose PATH holds only the Python interpreter's directory, so no
# system ffmpeg/ffprobe can be found: exactly a fresh machine.
_CHILD = r"""
import asyncio, json, os, shutil, sys
import numpy as np
from cosyweb.audio.ffmpeg import ensure_ffmpeg_on_path
out = {"before": [shutil.which("ffmpeg"), shutil.which("ffprobe")]}
out["first"] = ensure_ffmpeg_on_path()
out["second"] = ensure_ffmpeg_on_path()
out["path"] = os.environ["PATH"].split(os.pathsep)
out["ffprobe"] = shutil.which("ffprobe")
import gradio as gr
from cosyweb.audio.encode import wav_bytes
sr = 24000
t = np.arange(2 * sr) / sr
tone = (0.3 * np.sin(2 * np.pi * 220 * t)).astype(np.float32)
audio = gr.Audio(streaming=True)
async def stream():
    total = 0.0
    for i, start in enumerate(range(0, len(tone), sr // 2)):  # four 0.5 s chunks
        chunk, _ = await audio.stream_output(wav_bytes(tone[start:start + sr // 2], sr), "test-out", i == 0)
        total += chunk["duration"] if chunk else 0.0
    last = await audio.flush_stream_output("test-out")
    return total + (last["duration"] if last else 0.0)
out["streamed_s"] = asyncio.run(stream())
served = gr.Audio().postprocess(sys.argv[1])
out["served"] = served.path if served else None
from pydub import AudioSegment
seg = AudioSegment.from_file(sys.argv[2])
out["pydub"] = [seg.frame_rate, seg.channels, len(seg) / 1000.0]
print("RESULT" + json.dumps(out))
"""


def test_ffmpeg_exe_runs():
    for exe in (ffmpeg_exe(), bundled_ffmpeg_exe()):
        proc = subprocess.run([exe, "-hide_banner", "-version"], capture_output=True, timeout=30)
        assert proc.returncode == 0 and proc.stdout.startswith(b"ffmpeg version")


def test_fresh_machine_gets_ffmpeg_for_gradio_streaming(tmp_path, shared_prompts):
    m4a = tmp_path / "p.m4a"
    subprocess.run(
        [
            bundled_ffmpeg_exe(),
            "-v",
            "error",
            "-y",
            "-i",
            str(shared_prompts / "cosyvoice__zero_shot_prompt.wav"),
            "-c:a",
            "aac",
            str(m4a),
        ],
        check=True,
        timeout=60,
    )
    env = {
        "PATH": os.path.dirname(sys.executable),
        "HOME": str(tmp_path),
        "XDG_CACHE_HOME": str(tmp_path / "cache"),
        "PYTHONPATH": str(PROJECT_ROOT),
        "GRADIO_ANALYTICS_ENABLED": "False",
        "GRADIO_TEMP_DIR": str(tmp_path / "gradio"),
    }
    proc = subprocess.run(
        [sys.executable, "-c", _CHILD, str(shared_prompts / "fireredasr__IT0011W0001.wav"), str(m4a)],
        capture_output=True,
        text=True,
        env=env,
        timeout=240,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.split("RESULT", 1)[1])
    bin_dir = str(tmp_path / "cache" / "cosyweb" / "bin")
    assert out["before"] == [None, None]
    assert out["first"] == out["second"] == os.path.join(bin_dir, "ffmpeg")
    assert out["path"].count(bin_dir) == 1 and out["path"][0] == bin_dir  # idempotent
    assert out["ffprobe"] == os.path.join(bin_dir, "ffprobe")
    assert os.path.realpath(out["first"]) == os.path.realpath(bundled_ffmpeg_exe())
    # Gradio's own streaming encoder turned 2 s of int16 wav chunks into ~2 s of AAC
    assert out["streamed_s"] == pytest.approx(2.0, abs=0.15)
    # serving a wav path probes it with ffprobe: works with the stand-in
    assert out["served"] and out["served"].endswith(".wav")
    # pydub (Gradio's type="numpy" input) decodes an m4a via ffprobe + ffmpeg
    assert out["pydub"][0] == 24000 and out["pydub"][1] == 1
    assert out["pydub"][2] == pytest.approx(3.48, abs=0.1)


_STDERR = """Input #0, mov,mp4,m4a,3gp,3g2,mj2, from 'x.m4a':
  Metadata:
    major_brand     : M4A
  Duration: 00:01:03.48, start: 0.000000, bitrate: 67 kb/s
  Stream #0:0[0x1](und): Audio: aac (LC) (mp4a / 0x6134706D), 44100 Hz, stereo, fltp, 63 kb/s (default)
  Stream #0:1[0x2](und): Video: mjpeg (Baseline), yuvj420p(pc, bt470bg/unknown/unknown), 300x300, 90k tbr (attached pic)
At least one output file must be specified
"""


def test_parse_ffmpeg_info():
    info = ffprobe_shim.parse_ffmpeg_info(_STDERR)
    assert info["format"]["format_name"] == "mov,mp4,m4a,3gp,3g2,mj2"
    assert float(info["format"]["duration"]) == pytest.approx(63.48)
    assert info["format"]["bit_rate"] == "67000"
    a, v = info["streams"]
    assert (a["index"], a["codec_type"], a["codec_name"]) == (0, "audio", "aac")
    assert (a["sample_rate"], a["channels"], a["channel_layout"], a["sample_fmt"]) == ("44100", 2, "stereo", "fltp")
    assert (v["index"], v["codec_type"], v["codec_name"]) == (1, "video", "mjpeg")
    pcm = ffprobe_shim.parse_ffmpeg_info(
        "Input #0, wav, from 'a.wav':\n  Duration: 00:00:07.33, bitrate: 1162 kb/s\n"
        "  Stream #0:0: Audio: pcm_s24le ([1][0][0][0] / 0x0001), 48000 Hz, 1 channels, s32 (24 bit), 1152 kb/s\n"
    )
    s = pcm["streams"][0]
    assert (s["bits_per_sample"], s["channels"], s["sample_fmt"], s["bits_per_raw_sample"]) == (24, 1, "s32", "24")
    assert ffprobe_shim.parse_ffmpeg_info("x: Invalid data found when processing input\n") is None


def test_shim_command_line(shared_prompts, tmp_path, capsys):
    flac = str(shared_prompts / "whisper__jfk.flac")
    rc = ffprobe_shim.main(["-v", "error", "-show_streams", "-select_streams", "a", "-print_format", "json", flac])
    assert rc == 0
    out = json.loads(capsys.readouterr().out)
    assert out["streams"][0]["codec_name"] == "flac" and out["streams"][0]["channels"] == 2
    assert "format" not in out
    junk = tmp_path / "junk.wav"
    junk.write_bytes(b"not audio" * 100)
    assert ffprobe_shim.main(["-of", "json", "-show_format", str(junk)]) == 1
    assert ffprobe_shim.main(["-show_frames", "-of", "json", flac]) == 2  # unsupported: fail loudly
