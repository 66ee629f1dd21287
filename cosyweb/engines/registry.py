"""Engine ids -> engine factories. The one place that maps a configured engine name to code.

Each engine package exposes ``create(settings) -> Engine`` and is imported lazily, only when
it is chosen, so that the lite engine never pulls in torch and a missing optional stack
(CosyVoice) only matters to those who ask for it.
"""

from __future__ import annotations

import importlib
from typing import Any

from cosyweb.engines.base import Engine
from cosyweb.errors import StartupError

#: Engine id -> module path of the package whose ``create(settings)`` builds it.
ENGINE_MODULES: dict[str, str] = {
    "lite": "cosyweb.engines.lite",
    "cosyvoice": "cosyweb.engines.cosyvoice",
    "cosyvoice3": "cosyweb.engines.cosyvoice",
    "cosyvoice2": "cosyweb.engines.cosyvoice",
}


def engine_ids() -> list[str]:
    """The engine ids :func:`create_engine` accepts, in display order."""
    return list(ENGINE_MODULES)


def create_engine(settings: Any) -> Engine:
    """Build (but do not load) the engine named by ``settings.engine``.

    Args:
        settings: a :class:`cosyweb.config.Settings` (only ``engine`` is read here; the
            engine's own ``create`` reads the rest, e.g. ``model_dir``, ``device``).

    Returns:
        An :class:`Engine`; call ``load()`` / ``warmup()`` (the pipeline does) before use.

    Raises:
        StartupError: the id is unknown (the message lists the valid ids), or the engine's
            package cannot be imported (the message names the missing module).
    """
    name = (getattr(settings, "engine", "") or "").strip().lower()
    module_name = ENGINE_MODULES.get(name)
    if module_name is None:
        valid = ", ".join(engine_ids())
        raise StartupError(
            f"未知的引擎「{name}」，可选：{valid}",
            f"Unknown engine '{name}'; valid engines are: {valid}",
            engine=name,
        )
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise StartupError(
            f"无法加载引擎「{name}」：缺少模块 {exc.name or exc}",
            f"Cannot load engine '{name}': missing module {exc.name or exc}",
            engine=name,
        ) from exc
    create = getattr(module, "create", None)
    if create is None:
        raise StartupError(
            f"引擎「{name}」尚未实现（{module_name}.create 不存在）",
            f"Engine '{name}' is not available ({module_name}.create does not exist)",
            engine=name,
        )
    return create(settings)
