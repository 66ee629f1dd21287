"""Audio layer (a leaf: imports only :mod:`cosyweb.errors` and, for types, :mod:`cosyweb.config`).

- :mod:`~cosyweb.audio.ffmpeg`: find ffmpeg (system or imageio-ffmpeg) and put ``ffmpeg`` /
  ``ffprobe`` on ``PATH`` for Gradio (:func:`~cosyweb.audio.ffmpeg.ensure_ffmpeg_on_path`).
- :mod:`~cosyweb.audio.ffprobe_shim`: ffprobe stand-in answered from ``ffmpeg -i``.
- :mod:`~cosyweb.audio.decode`: any upload -> float32 ``(n_samples, n_channels)`` + rate.
- :mod:`~cosyweb.audio.analysis`: frame levels, speech activity, SNR estimate, clipping.
- :mod:`~cosyweb.audio.prompt`: :func:`~cosyweb.audio.prompt.load_prompt` -> checked
  :class:`~cosyweb.audio.types.PromptAudio`.
- :mod:`~cosyweb.audio.encode`: int16 / wav output (streaming chunks must be int16).

``from cosyweb.audio import load_prompt`` (and the other names in ``__all__``) works; the
submodule is imported on first use (PEP 562), so importing :mod:`cosyweb.audio.types` stays light.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "load_prompt": "cosyweb.audio.prompt",
    "load_prompt_with_settings": "cosyweb.audio.prompt",
    "decode_audio": "cosyweb.audio.decode",
    "ensure_ffmpeg_on_path": "cosyweb.audio.ffmpeg",
    "ffmpeg_exe": "cosyweb.audio.ffmpeg",
    "to_int16": "cosyweb.audio.encode",
    "wav_bytes": "cosyweb.audio.encode",
    "write_wav": "cosyweb.audio.encode",
    "stream_chunk": "cosyweb.audio.encode",
    "PromptAudio": "cosyweb.audio.types",
}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
