"""The CosyVoice3 (and CosyVoice2) GPU engine, wrapping the official ``cosyvoice.cli.cosyvoice.AutoModel``.

Importing this package imports neither torch nor CosyVoice; :meth:`CosyVoiceEngine.load` does.

Engine ids for ``Settings.engine``: ``"cosyvoice"`` (CosyVoice3 or CosyVoice2, detected from
the YAML in ``model_dir``), ``"cosyvoice3"`` and ``"cosyvoice2"`` (that generation only).
"""

from __future__ import annotations

from typing import Any

from .engine import CallPlan, CosyVoiceEngine
from .locate import ModelInfo, check_model_dir, find_code_root

#: Engine id -> required model generation (None: detect).
ENGINE_IDS: dict[str, "int | None"] = {"cosyvoice": None, "cosyvoice3": 3, "cosyvoice2": 2}

__all__ = ["ENGINE_IDS", "CallPlan", "CosyVoiceEngine", "ModelInfo", "check_model_dir", "create", "find_code_root"]


def create(settings: Any, chunk_timeout_s: "float | None" = None) -> CosyVoiceEngine:
    """Build (not load) the engine named by ``settings.engine``, failing fast on a bad setup.

    Checks, in milliseconds and without importing torch: the model directory exists and is a
    complete CosyVoice3/CosyVoice2 directory (so upstream never mistakes a wrong path for a hub
    model id and goes to the network), and the CosyVoice code is found (``settings.cosyvoice_root``,
    ``COSYVOICE_ROOT`` or an importable ``cosyvoice``).

    Args:
        settings: a :class:`cosyweb.config.Settings` (engine, model_dir, cosyvoice_root, device, fp16, ...).
        chunk_timeout_s: watchdog override (default ``settings.watchdog_s``).

    Returns:
        An unloaded :class:`CosyVoiceEngine`; call ``load()`` then ``warmup()``.

    Raises:
        cosyweb.errors.StartupError: unknown engine id, missing/incomplete model directory, missing code.
    """
    from cosyweb.errors import StartupError  # noqa: PLC0415 - keeps the module namespace small

    engine_id = str(getattr(settings, "engine", "cosyvoice")).strip().lower()
    if engine_id not in ENGINE_IDS:
        raise StartupError(
            f"未知的 CosyVoice 引擎名：{engine_id}（可用 {', '.join(ENGINE_IDS)}）",
            f"Unknown CosyVoice engine id {engine_id!r} (use {', '.join(ENGINE_IDS)})",
        )
    info = check_model_dir(getattr(settings, "model_dir", None), ENGINE_IDS[engine_id])
    root = find_code_root(getattr(settings, "cosyvoice_root", None))
    return CosyVoiceEngine(settings, info, root, chunk_timeout_s=chunk_timeout_s)
