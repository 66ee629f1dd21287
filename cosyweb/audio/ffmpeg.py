"""Locate an ffmpeg binary and make ``ffmpeg`` / ``ffprobe`` resolvable on ``PATH``.

A fresh machine has no system ffmpeg, but the ``imageio-ffmpeg`` wheel ships a static
ffmpeg build. We use that one for decoding (see :mod:`cosyweb.audio.decode`) and expose it
to Gradio, which finds its tools by name on ``PATH``:

- Gradio 6's streaming audio output (``gradio/audio_stream_encoder.py``,
  ``AacStreamEncoder``) runs ``ffmpeg`` from ``PATH`` to encode each stream to AAC/ADTS,
  after checking ``shutil.which("ffmpeg")``. Without it, ``gr.Audio(streaming=True)`` fails.
- As soon as ``ffmpeg`` is on ``PATH``, ``gr.Audio.postprocess`` of a *file path* probes the
  file with ``ffprobe`` (``processing_utils.audio_is_playable``) and raises
  ``FFExecutableNotFoundError`` if ffprobe is missing. pydub's ``AudioSegment.from_file``
  (Gradio's ``type="numpy"`` audio input, format conversion) also calls ``ffprobe``.
  ``imageio-ffmpeg`` ships no ffprobe, so when none exists we install a small stand-in,
  :mod:`cosyweb.audio.ffprobe_shim`, that answers those probes from ``ffmpeg -i``.

Call :func:`ensure_ffmpeg_on_path` once at start-up, before importing gradio (pydub picks
its converter name when it is first imported and warns if ``ffmpeg`` is not on ``PATH``).
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path

from cosyweb.errors import StartupError

#: Sub-directory of the user cache dir that holds the ``ffmpeg`` link and ``ffprobe`` stand-in.
_BIN_SUBDIR = Path("cosyweb") / "bin"
_EXE_SUFFIX = ".exe" if os.name == "nt" else ""


def bundled_ffmpeg_exe() -> str:
    """Path of the ffmpeg binary shipped in the ``imageio-ffmpeg`` wheel.

    ``imageio_ffmpeg.get_ffmpeg_exe()`` honours ``IMAGEIO_FFMPEG_EXE`` first.

    Raises:
        StartupError: imageio-ffmpeg is not installed or has no binary for this platform.
    """
    try:
        import imageio_ffmpeg

        return imageio_ffmpeg.get_ffmpeg_exe()
    except (ImportError, RuntimeError) as exc:
        raise StartupError(
            "找不到 ffmpeg：请安装系统 ffmpeg，或 pip install imageio-ffmpeg",
            "ffmpeg not found: install a system ffmpeg or `pip install imageio-ffmpeg`",
            cause=str(exc),
        ) from exc


def ffmpeg_exe() -> str:
    """The ffmpeg to run: the one on ``PATH`` if any, else the bundled one.

    Returns:
        An absolute path (or a name resolvable on ``PATH``) of an ffmpeg executable.

    Raises:
        StartupError: no ffmpeg on ``PATH`` and none bundled.
    """
    return shutil.which("ffmpeg") or bundled_ffmpeg_exe()


def _cache_bin_dir() -> Path:
    """``$XDG_CACHE_HOME/cosyweb/bin`` (or ``~/.cache/...``); a temp dir if that is not writable."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    user = str(os.getuid()) if hasattr(os, "getuid") else "user"
    for root in (Path(base), Path(tempfile.gettempdir()) / f"cosyweb-{user}"):
        d = root / _BIN_SUBDIR
        try:
            d.mkdir(parents=True, exist_ok=True)
            if os.access(d, os.W_OK | os.X_OK):
                return d
        except OSError:
            continue
    raise StartupError(
        "无法创建 ffmpeg 链接目录（缓存目录不可写）",
        "cannot create a directory for the ffmpeg link (cache directory not writable)",
    )


def _atomic_link(target: str, link: Path) -> None:
    """Point ``link`` at ``target`` (a symlink; a copy where symlinks are unavailable), atomically."""
    if link.is_symlink() and os.readlink(link) == target:
        return
    tmp = link.with_name(f".{link.name}.{os.getpid()}.tmp")
    try:
        tmp.unlink(missing_ok=True)
        try:
            os.symlink(target, tmp)
        except (OSError, NotImplementedError):
            shutil.copy2(target, tmp)
        os.replace(tmp, link)
    finally:
        if tmp.is_symlink() or tmp.exists():
            tmp.unlink()


def _write_ffprobe_shim(path: Path) -> None:
    """Write an executable ``ffprobe`` script that runs :func:`cosyweb.audio.ffprobe_shim.main`."""
    package_root = Path(__file__).resolve().parents[2]  # the directory holding ``cosyweb/``
    text = (
        f"#!{sys.executable}\n"
        "# cosyweb stand-in for ffprobe (no ffprobe found); see cosyweb/audio/ffprobe_shim.py\n"
        "import sys\n"
        f"sys.path.insert(0, {str(package_root)!r})\n"
        "from cosyweb.audio.ffprobe_shim import main\n"
        "sys.exit(main(sys.argv[1:]))\n"
    )
    if path.is_file() and not path.is_symlink() and path.read_text(encoding="utf-8") == text:
        return
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.chmod(0o755)
    os.replace(tmp, path)


def ensure_ffmpeg_on_path() -> str:
    """Make ``ffmpeg`` (and ``ffprobe``) resolvable on ``PATH`` for Gradio and pydub. Idempotent.

    If a system ffmpeg is on ``PATH`` it is left alone. Otherwise a symlink named ``ffmpeg``
    to the bundled imageio-ffmpeg binary is made in ``$XDG_CACHE_HOME/cosyweb/bin`` (default
    ``~/.cache/cosyweb/bin``; a temp dir if the cache is read-only). If no ``ffprobe`` is on
    ``PATH``, an executable stand-in script (:mod:`cosyweb.audio.ffprobe_shim`) is written
    there too (POSIX only). The directory is prepended to ``os.environ["PATH"]`` once, so
    child processes inherit it.

    Returns:
        The path ``shutil.which("ffmpeg")`` resolves to afterwards.

    Raises:
        StartupError: no ffmpeg anywhere, or no writable directory for the link.
    """
    need_ffmpeg = shutil.which("ffmpeg") is None
    need_ffprobe = shutil.which("ffprobe") is None and os.name != "nt"
    if need_ffmpeg or need_ffprobe:
        bin_dir = _cache_bin_dir()
        if need_ffmpeg:
            _atomic_link(bundled_ffmpeg_exe(), bin_dir / f"ffmpeg{_EXE_SUFFIX}")
        if need_ffprobe:
            _write_ffprobe_shim(bin_dir / "ffprobe")
        entries = os.environ.get("PATH", "").split(os.pathsep)
        if str(bin_dir) not in entries:
            os.environ["PATH"] = os.pathsep.join([str(bin_dir), *[e for e in entries if e]])
    found = shutil.which("ffmpeg")
    if found is None:  # pragma: no cover - a link we just made is not executable
        raise StartupError("无法让 ffmpeg 在 PATH 上可用", "could not make ffmpeg available on PATH")
    return found
