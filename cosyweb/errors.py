"""The error hierarchy of cosyweb, with bilingual (zh/en) messages.

Every layer raises these; only the UI layer turns them into ``gr.Error`` and
only the HTTP layer turns them into status codes. This module imports nothing
of ours.

Each error carries a stable machine ``code``, a Chinese message ``zh`` and an
English message ``en``. ``str(err)`` is ``"<zh> / <en>"`` so that a log line,
a CLI error and a ``gradio_client`` exception all show both languages.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Message:
    """A user-facing bilingual message.

    Attributes:
        code: stable identifier, e.g. ``"prompt.too_short"``.
        zh: the Chinese text.
        en: the English text.
    """

    code: str
    zh: str
    en: str

    def text(self, lang: str = "zh") -> str:
        """Return the message in ``lang`` (``"zh"`` or ``"en"``; anything else gives English)."""
        return self.zh if lang == "zh" else self.en

    def __str__(self) -> str:
        return f"{self.zh} / {self.en}"

    def to_dict(self) -> dict[str, str]:
        """JSON-friendly form: ``{"code", "zh", "en"}``."""
        return {"code": self.code, "zh": self.zh, "en": self.en}


class CosywebError(Exception):
    """Base class of every error that cosyweb reports to a user.

    Args:
        code: stable machine identifier.
        zh: Chinese message.
        en: English message.
        details: optional structured context (e.g. ``{"position": 5}``).
    """

    http_status: int = 500

    def __init__(self, code: str, zh: str, en: str, **details: Any) -> None:
        self.message = Message(code, zh, en)
        self.details: dict[str, Any] = details
        super().__init__(str(self.message))

    @property
    def code(self) -> str:
        return self.message.code

    @property
    def zh(self) -> str:
        return self.message.zh

    @property
    def en(self) -> str:
        return self.message.en

    def text(self, lang: str = "zh") -> str:
        """The message in one language."""
        return self.message.text(lang)

    def to_dict(self) -> dict[str, Any]:
        """JSON-friendly form, used by the HTTP layer and the CLI."""
        return {**self.message.to_dict(), "details": self.details}


class InvalidInputError(CosywebError):
    """The user's input (text, prompt audio, options) is invalid. HTTP 400/422."""

    http_status = 422


class UnsupportedOptionError(InvalidInputError):
    """A valid option that the loaded engine does not support (e.g. a dialect on the lite engine)."""


class BusyError(CosywebError):
    """Admission control refused the job: the queue is full. HTTP 503.

    Attributes:
        retry_after_s: a hint for the client, in seconds.
        queue_depth: number of jobs waiting when refused.
    """

    http_status = 503

    def __init__(self, retry_after_s: float = 5.0, queue_depth: int | None = None, **details: Any) -> None:
        super().__init__(
            "busy",
            "系统繁忙，请稍后再试",
            "System busy, please try again later",
            retry_after_s=retry_after_s,
            queue_depth=queue_depth,
            **details,
        )
        self.retry_after_s = retry_after_s
        self.queue_depth = queue_depth


class ClientLimitError(BusyError):
    """The same client already has the maximum number of active jobs. HTTP 429-like; reported as busy."""

    http_status = 429

    def __init__(self, limit: int, **details: Any) -> None:
        super().__init__(retry_after_s=2.0, limit=limit, **details)
        self.message = Message(
            "busy.client_limit",
            f"系统繁忙，请稍后再试（您已有 {limit} 个任务在进行中）",
            f"System busy, please try again later (you already have {limit} job(s) running)",
        )
        self.args = (str(self.message),)


class JobTimeoutError(CosywebError):
    """A job exceeded its deadline and was cancelled. HTTP 504."""

    http_status = 504

    def __init__(self, timeout_s: float) -> None:
        super().__init__(
            "timeout",
            f"生成超时（超过 {timeout_s:g} 秒），已取消",
            f"Generation timed out after {timeout_s:g} s and was cancelled",
            timeout_s=timeout_s,
        )


class JobCancelledError(CosywebError):
    """The job was cancelled (client went away, stop pressed, shutdown). HTTP 499-like."""

    http_status = 499

    def __init__(self, reason: str = "cancelled") -> None:
        super().__init__("cancelled", "任务已取消", "The job was cancelled", reason=reason)


class EngineError(CosywebError):
    """The engine failed on this job. Only this job fails; the worker carries on. HTTP 500."""

    http_status = 500

    def __init__(self, detail: str = "") -> None:
        super().__init__(
            "engine.failed",
            "语音生成失败，请重试" + (f"：{detail}" if detail else ""),
            "Speech generation failed, please retry" + (f": {detail}" if detail else ""),
        )


class GPUMemoryError(EngineError):
    """CUDA ran out of memory inside a job; memory was freed and the worker carries on."""

    def __init__(self) -> None:
        CosywebError.__init__(
            self,
            "engine.gpu_oom",
            "GPU 显存不足，请重试",
            "GPU memory exhausted, please retry",
        )


class StartupError(CosywebError):
    """The app cannot start (missing code, weights or GPU). The message says how to fix it."""

    def __init__(self, zh: str, en: str, **details: Any) -> None:
        super().__init__("startup", zh, en, **details)


@dataclass
class Warnings:
    """An ordered, de-duplicated list of bilingual warnings collected along a request."""

    items: list[Message] = field(default_factory=list)

    def add(self, code: str, zh: str, en: str) -> None:
        """Append a warning unless one with the same code is already present."""
        if all(m.code != code for m in self.items):
            self.items.append(Message(code, zh, en))

    def extend(self, other: "Warnings | list[Message]") -> None:
        for m in other.items if isinstance(other, Warnings) else other:
            self.add(m.code, m.zh, m.en)

    def texts(self, lang: str = "zh") -> list[str]:
        return [m.text(lang) for m in self.items]

    def __bool__(self) -> bool:
        return bool(self.items)

    def __iter__(self):
        return iter(self.items)
