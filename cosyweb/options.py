"""Per-request synthesis options and their vocabularies (modes, dialects, emotions).

This module imports nothing of ours. It holds the one object that travels
down the layers with each request (:class:`SynthesisOptions`), in the style of
piper's ``SynthesisConfig``: load-time settings live in :mod:`cosyweb.config`.

The dialect ids follow CosyVoice3's own instruction list
(``cosyvoice/utils/common.py`` ``instruct_list`` at FunAudioLLM/CosyVoice
commit ace7c47): 17 dialects, in upstream's order.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from enum import Enum
from typing import Optional


class Mode(str, Enum):
    """Cloning mode, named as in CosyVoice3's web UI."""

    ZERO_SHOT = "zero_shot"  # 3s极速复刻
    CROSS_LINGUAL = "cross_lingual"  # 跨语种复刻
    INSTRUCT = "instruct"  # 自然语言控制


MODE_LABELS: dict[Mode, tuple[str, str]] = {
    Mode.ZERO_SHOT: ("3s极速复刻", "3-second zero-shot"),
    Mode.CROSS_LINGUAL: ("跨语种复刻", "Cross-lingual"),
    Mode.INSTRUCT: ("自然语言控制", "Instruct"),
}

#: Dialect id -> (zh label, en label). "mandarin" is the default (no instruction).
DIALECTS: dict[str, tuple[str, str]] = {
    "mandarin": ("普通话", "Mandarin"),
    "cantonese": ("广东话", "Cantonese"),
    "dongbei": ("东北话", "Northeastern"),
    "gansu": ("甘肃话", "Gansu"),
    "guizhou": ("贵州话", "Guizhou"),
    "henan": ("河南话", "Henan"),
    "hubei": ("湖北话", "Hubei"),
    "hunan": ("湖南话", "Hunan"),
    "jiangxi": ("江西话", "Jiangxi"),
    "minnan": ("闽南话", "Southern Min"),
    "ningxia": ("宁夏话", "Ningxia"),
    "shanxi": ("山西话", "Shanxi"),
    "shaanxi": ("陕西话", "Shaanxi"),
    "shandong": ("山东话", "Shandong"),
    "shanghai": ("上海话", "Shanghainese"),
    "sichuan": ("四川话", "Sichuanese"),
    "tianjin": ("天津话", "Tianjin"),
    "yunnan": ("云南话", "Yunnan"),
}

#: Emotion id -> (zh label, en label). "none" means neutral (no instruction).
EMOTIONS: dict[str, tuple[str, str]] = {
    "none": ("无", "None"),
    "happy": ("开心", "Happy"),
    "sad": ("伤心", "Sad"),
    "angry": ("生气", "Angry"),
}

#: Language ids the text front end and engines use.
LANGUAGES: dict[str, tuple[str, str]] = {
    "zh": ("中文", "Chinese"),
    "yue": ("粤语", "Cantonese"),
    "en": ("英文", "English"),
}

SPEED_MIN, SPEED_MAX = 0.5, 2.0
VOLUME_MIN, VOLUME_MAX = 0.25, 2.0


def _lookup(table: dict[str, tuple[str, str]], value: str) -> Optional[str]:
    """Map an id or a zh/en label (case-insensitive) to its id, or None."""
    v = (value or "").strip()
    if v in table:
        return v
    for key, (zh, en) in table.items():
        if v == zh or v.lower() == en.lower():
            return key
    return None


def resolve_dialect(value: str | None) -> Optional[str]:
    """Return the dialect id for an id or label (``"四川话"``, ``"sichuan"``), or None if unknown."""
    return _lookup(DIALECTS, value or "mandarin")


def resolve_emotion(value: str | None) -> Optional[str]:
    """Return the emotion id for an id or label (``"开心"``, ``"happy"``), or None if unknown."""
    return _lookup(EMOTIONS, value or "none")


def resolve_mode(value: str | Mode | None) -> Optional[Mode]:
    """Return the :class:`Mode` for an id or label (``"3s极速复刻"``, ``"zero_shot"``), or None."""
    if isinstance(value, Mode):
        return value
    v = (value or "zero_shot").strip()
    for m, (zh, en) in MODE_LABELS.items():
        if v in (m.value, zh) or v.lower() == en.lower():
            return m
    return None


@dataclass(frozen=True)
class SynthesisOptions:
    """Per-request options. Every field has a neutral default.

    Attributes:
        mode: zero-shot, cross-lingual or instruct.
        dialect: a key of :data:`DIALECTS`; ``"mandarin"`` means no dialect instruction.
        emotion: a key of :data:`EMOTIONS`; ``"none"`` means neutral.
        speed: speaking-rate factor, 1.0 = the prompt speaker's rate, in [0.5, 2.0].
        volume: loudness factor (linear gain relative to the prompt's loudness), in [0.25, 2.0].
        seed: RNG seed; the same inputs and seed give the same audio.
        language: force the text language (``"zh"``, ``"yue"``, ``"en"``), or None to detect runs.
        instruct_text: free-form instruction for instruct mode (CosyVoice engines only).
        stream: whether the caller wants chunks as they are made.
    """

    mode: Mode = Mode.ZERO_SHOT
    dialect: str = "mandarin"
    emotion: str = "none"
    speed: float = 1.0
    volume: float = 1.0
    seed: int = 0
    language: Optional[str] = None
    instruct_text: str = ""
    stream: bool = True

    def with_(self, **changes) -> "SynthesisOptions":
        """A copy with some fields changed."""
        return replace(self, **changes)


@dataclass
class SynthesisStatus:
    """The one-line status of a finished job, also the JSON the API and CLI return.

    Units are in the field names: seconds (``_s``), milliseconds (``_ms``), Hz (``_hz``).
    """

    job_id: str = ""
    engine: str = ""
    duration_s: float = 0.0
    sample_rate: int = 0
    rtf: float = 0.0
    first_chunk_ms: float = 0.0
    queue_wait_ms: float = 0.0
    total_ms: float = 0.0
    n_segments: int = 0
    warnings: list[dict] = field(default_factory=list)

    def to_dict(self) -> dict:
        return {
            "job_id": self.job_id,
            "engine": self.engine,
            "duration_s": round(self.duration_s, 3),
            "sample_rate": self.sample_rate,
            "rtf": round(self.rtf, 4),
            "first_chunk_ms": round(self.first_chunk_ms, 1),
            "queue_wait_ms": round(self.queue_wait_ms, 1),
            "total_ms": round(self.total_ms, 1),
            "n_segments": self.n_segments,
            "warnings": list(self.warnings),
        }
