"""A minimal stand-in for ``ffprobe``, answered from ``ffmpeg -i`` (for machines with no ffprobe).

``imageio-ffmpeg`` ships ffmpeg but not ffprobe, yet once ``ffmpeg`` is on ``PATH`` Gradio 6
probes every audio *file path* it serves (``processing_utils.audio_is_playable`` and
``_first_audio_codec``) and pydub probes files in ``AudioSegment.from_file``
(``pydub.utils.mediainfo_json``). :func:`cosyweb.audio.ffmpeg.ensure_ffmpeg_on_path`
installs a script named ``ffprobe`` that calls :func:`main` when no real ffprobe exists.

Supported: ``-show_streams``, ``-show_format``, ``-select_streams a|v|s|d``,
``-of``/``-print_format json``, ``-v LEVEL``, ``-hide_banner``, ``-read_ahead_limit N``,
``-i FILE`` or a positional input, and ``pipe:0`` / ``cache:pipe:0`` / ``-`` for stdin.
The JSON has the ffprobe fields those callers read (``index``, ``codec_type``,
``codec_name``, ``sample_rate``, ``channels``, ``channel_layout``, ``sample_fmt``,
``bits_per_sample``, ``duration``; ``format.format_name``, ``duration``, ``size``).
ffmpeg's own input dump is passed through on stderr, which pydub parses for the sample
format. Parsing ``ffmpeg -i`` output is the method ``imageio_ffmpeg`` itself uses.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
from typing import Any

#: Seconds an ``ffmpeg -i`` probe may take.
PROBE_TIMEOUT_S = 30.0

_STREAM_RE = re.compile(
    r"^\s*Stream #\d+:(?P<index>\d+)(?:\[[^\]]*\])?(?:\([^)]*\))?: "
    r"(?P<type>Audio|Video|Subtitle|Data|Attachment): (?P<codec>[\w.-]+)(?P<rest>.*)$"
)
_INPUT_RE = re.compile(r"^Input #0, (?P<fmt>.+?), from '")
_DURATION_RE = re.compile(r"Duration: (?P<h>\d+):(?P<m>\d+):(?P<s>[\d.]+)")
_BITRATE_RE = re.compile(r"bitrate: (?P<kbps>\d+) kb/s")
_PCM_BITS_RE = re.compile(r"^pcm_[suf](\d+)")
_LAYOUT_CHANNELS = {
    "mono": 1, "stereo": 2, "2.1": 3, "3.0": 3, "3.0(back)": 3, "4.0": 4, "quad": 4,
    "quad(side)": 4, "3.1": 4, "5.0": 5, "5.0(side)": 5, "4.1": 5, "5.1": 6, "5.1(side)": 6,
    "6.0": 6, "6.1": 7, "7.0": 7, "7.1": 8, "7.1(wide)": 8, "octagonal": 8,
}  # fmt: skip


def _split_top_level(text: str) -> list[str]:
    """Split ``a (x, y), b, c`` on commas that are outside parentheses/brackets."""
    parts, depth, cur = [], 0, []
    for ch in text:
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append("".join(cur).strip())
            cur = []
        else:
            cur.append(ch)
    if "".join(cur).strip():
        parts.append("".join(cur).strip())
    return parts


def parse_ffmpeg_info(stderr: str) -> dict[str, Any] | None:
    """Turn the ``Input #0`` dump of ``ffmpeg -i FILE`` into ffprobe-style JSON.

    Args:
        stderr: ffmpeg's stderr text.

    Returns:
        ``{"streams": [...], "format": {...}}`` or None when ffmpeg could not open the input.
    """
    fmt: dict[str, Any] | None = None
    streams: list[dict[str, Any]] = []
    for line in stderr.splitlines():
        if m := _INPUT_RE.match(line):
            fmt = {"format_name": m.group("fmt").replace(" ", "")}
            continue
        if fmt is None:
            continue
        if (m := _DURATION_RE.search(line)) and "duration" not in fmt:
            fmt["duration"] = f"{int(m['h']) * 3600 + int(m['m']) * 60 + float(m['s']):.6f}"
            if b := _BITRATE_RE.search(line):
                fmt["bit_rate"] = str(int(b["kbps"]) * 1000)
        elif m := _STREAM_RE.match(line):
            streams.append(_parse_stream(int(m["index"]), m["type"].lower(), m["codec"], m["rest"]))
    if fmt is None:
        return None
    for s in streams:
        if "duration" in fmt:
            s.setdefault("duration", fmt["duration"])
    fmt["nb_streams"] = len(streams)
    return {"streams": streams, "format": fmt}


def _parse_stream(index: int, codec_type: str, codec: str, rest: str) -> dict[str, Any]:
    """One ``Stream #0:N: Audio: codec (...), 44100 Hz, stereo, fltp, 128 kb/s`` line as a dict."""
    stream: dict[str, Any] = {"index": index, "codec_name": codec, "codec_type": codec_type}
    if codec_type != "audio":
        return stream
    pcm = _PCM_BITS_RE.match(codec)
    stream["bits_per_sample"] = int(pcm.group(1)) if pcm else 0
    tokens = _split_top_level(rest.lstrip(" ,"))
    for i, tok in enumerate(tokens):
        tok = tok.replace("(default)", "").strip()
        if tok.endswith(" Hz") and tok[:-3].isdigit():
            stream["sample_rate"] = tok[:-3]
            # the two tokens after the rate are the channel layout and the sample format
            if i + 1 < len(tokens):
                layout = tokens[i + 1].strip()
                n = re.match(r"^(\d+) channels", layout)
                stream["channels"] = int(n.group(1)) if n else _LAYOUT_CHANNELS.get(layout, 2)
                stream["channel_layout"] = "" if n else layout
            if i + 2 < len(tokens):
                sf = tokens[i + 2].replace("(default)", "").strip()
                bits = re.match(r"^(\w+) \((\d+) bit\)$", sf)
                stream["sample_fmt"] = bits.group(1) if bits else sf
                if bits:
                    stream["bits_per_raw_sample"] = bits.group(2)
    return stream


def probe(path: str, ffmpeg: str | None = None, timeout_s: float = PROBE_TIMEOUT_S) -> tuple[dict | None, str]:
    """Run ``ffmpeg -hide_banner -i path`` and parse it.

    Args:
        path: a media file path.
        ffmpeg: the ffmpeg executable; default :func:`cosyweb.audio.ffmpeg.ffmpeg_exe`.
        timeout_s: subprocess time limit.

    Returns:
        (ffprobe-style dict or None if unreadable, ffmpeg's stderr text).
    """
    if ffmpeg is None:
        from cosyweb.audio.ffmpeg import ffmpeg_exe

        ffmpeg = ffmpeg_exe()
    proc = subprocess.run(
        [ffmpeg, "-hide_banner", "-nostdin", "-i", path],
        capture_output=True,
        timeout=timeout_s,
        check=False,
    )
    text = proc.stderr.decode("utf-8", "replace")
    return parse_ffmpeg_info(text), text


def main(argv: list[str]) -> int:
    """ffprobe-compatible command line (the subset in the module docstring). Returns the exit code."""
    show_streams = show_format = False
    select: str | None = None
    out_format = "default"
    loglevel = "info"
    inputs: list[str] = []
    args = iter(argv)
    for a in args:
        if a == "-show_streams":
            show_streams = True
        elif a == "-show_format":
            show_format = True
        elif a == "-select_streams":
            select = next(args, "")
        elif a in ("-of", "-print_format", "-output_format"):
            out_format = next(args, "default").split("=")[0]
        elif a in ("-v", "-loglevel"):
            loglevel = next(args, "info")
        elif a in ("-read_ahead_limit", "-analyzeduration", "-probesize"):
            next(args, None)
        elif a == "-i":
            inputs.append(next(args, ""))
        elif a in ("-hide_banner", "-pretty", "-sexagesimal"):
            pass
        elif a.startswith("-") and a != "-":
            sys.stderr.write(f"ffprobe (cosyweb stand-in): unsupported option {a}\n")
            return 2
        else:
            inputs.append(a)
    if len(inputs) != 1:
        sys.stderr.write("ffprobe (cosyweb stand-in): exactly one input is required\n")
        return 1
    if out_format != "json":
        sys.stderr.write("ffprobe (cosyweb stand-in): only -of json is supported\n")
        return 2
    src, tmp_path = inputs[0], None
    try:
        if src in ("-", "pipe:", "pipe:0", "cache:pipe:0"):
            fd, tmp_path = tempfile.mkstemp(prefix="cosyweb-probe-")
            with os.fdopen(fd, "wb") as f:
                f.write(sys.stdin.buffer.read())
            src = tmp_path
        info, text = probe(src)
    finally:
        if tmp_path:
            os.unlink(tmp_path)
    if loglevel not in ("quiet", "panic", "fatal", "error"):
        sys.stderr.write(text)
    if info is None:
        if loglevel != "quiet":
            sys.stderr.write(f"{inputs[0]}: Invalid data found when processing input\n")
        return 1
    streams = info["streams"]
    if select:
        kind = {"a": "audio", "v": "video", "s": "subtitle", "d": "data"}.get(select.split(":")[0])
        streams = [s for s in streams if kind is None or s["codec_type"] == kind]
    out: dict[str, Any] = {}
    if show_streams:
        out["streams"] = streams
    if show_format:
        out["format"] = {"filename": inputs[0], **info["format"]}
        if os.path.isfile(inputs[0]):
            out["format"]["size"] = str(os.path.getsize(inputs[0]))
    sys.stdout.write(json.dumps(out, indent=4) + "\n")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main(sys.argv[1:]))
