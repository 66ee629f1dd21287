"""Parsing of user-entered values shared by the web UI, the Gradio API and the CLI.

No gradio import here, so the CLI can use it without loading the web stack.
"""

from __future__ import annotations

from typing import Any

from cosyweb.errors import InvalidInputError
from cosyweb.options import (
    DIALECTS,
    EMOTIONS,
    LANGUAGES,
    MODE_LABELS,
    SPEED_MAX,
    SPEED_MIN,
    VOLUME_MAX,
    VOLUME_MIN,
    SynthesisOptions,
    resolve_dialect,
    resolve_emotion,
    resolve_mode,
)
from cosyweb.ui.i18n import t

#: Largest seed accepted (seeds are 31-bit so every RNG takes them).
SEED_MAX = 2**31 - 1


def both(key: str, **fmt: Any) -> tuple[str, str]:
    """``(zh, en)`` of a UI string; ``fmt`` values given as ``(zh, en)`` pairs are split per language."""
    zh = {k: (v[0] if isinstance(v, tuple) else v) for k, v in fmt.items()}
    en = {k: (v[1] if isinstance(v, tuple) else v) for k, v in fmt.items()}
    return t(key, "zh", **zh), t(key, "en", **en)


def _ids(ids: Any) -> str:
    """The accepted ids of a choice, for an error message (``"a, b, c"``)."""
    return ", ".join(str(i) for i in ids)


def _number(value: Any, default: float, lo: float, hi: float, what: tuple[str, str]) -> float:
    if value is None or value == "":
        return float(default)
    try:
        x = float("nan") if isinstance(value, bool) else float(value)  # JSON true is not a number
    except (TypeError, ValueError):
        x = float("nan")
    if not (lo <= x <= hi):  # also rejects NaN
        raise InvalidInputError("option.invalid", *both("err_bad_number", what=what, value=value, lo=lo, hi=hi), value=str(value))
    return x


def build_options(
    mode: Any = None,
    dialect: Any = None,
    emotion: Any = None,
    speed: Any = 1.0,
    volume: Any = 1.0,
    seed: Any = 0,
    instruct_text: Any = "",
    language: Any = None,
) -> SynthesisOptions:
    """Parse UI/API/CLI values into :class:`SynthesisOptions`.

    Mode, dialect and emotion may be ids (``"zero_shot"``, ``"sichuan"``, ``"happy"``) or zh/en
    labels (``"3s极速复刻"``, ``"四川话"``, ``"开心"``); empty values mean the default. ``language``
    is ``"zh"``, ``"yue"``, ``"en"`` (or a label such as ``"粤语"``); None, ``""`` or ``"auto"``
    detect language runs. Whether the engine supports a choice is the pipeline's decision (it
    refuses, never ignores).

    Raises:
        InvalidInputError: an unknown mode/dialect/emotion/language, or speed (0.5-2.0), volume
            (0.25-2.0) or seed (0..2**31-1) out of range or not a number.
    """
    m = resolve_mode(mode or None)
    if m is None:
        raise InvalidInputError("option.invalid", *both("err_bad_choice", what=("模式", "mode"), value=mode,
                                                          choices=_ids(k.value for k in MODE_LABELS)))
    d = resolve_dialect(dialect or None)
    if d is None:
        raise InvalidInputError("option.invalid", *both("err_bad_choice", what=("方言", "dialect"), value=dialect,
                                                          choices=_ids(DIALECTS)))
    e = resolve_emotion(emotion or None)
    if e is None:
        raise InvalidInputError("option.invalid", *both("err_bad_choice", what=("情感", "emotion"), value=emotion,
                                                          choices=_ids(EMOTIONS)))
    sp = _number(speed, 1.0, SPEED_MIN, SPEED_MAX, ("语速", "speed"))
    vol = _number(volume, 1.0, VOLUME_MIN, VOLUME_MAX, ("音量", "volume"))
    sd = _number(seed, 0, 0, SEED_MAX, ("随机种子", "seed"))
    if sd != int(sd):
        raise InvalidInputError("option.invalid", *both("err_bad_number", what=("随机种子", "seed"), value=seed, lo=0, hi=SEED_MAX),
                                value=str(seed))
    lang = resolve_language(language)
    return SynthesisOptions(
        mode=m, dialect=d, emotion=e, speed=sp, volume=vol, seed=int(sd),
        instruct_text=str(instruct_text or "").strip(), language=lang,
    )


def resolve_language(value: Any) -> "str | None":
    """``"zh"``/``"yue"``/``"en"`` from an id or a zh/en label; None for auto-detection.

    Raises:
        InvalidInputError: an unknown language.
    """
    v = str(value or "").strip()
    if v.lower() in ("", "auto", "自动", "自动检测"):
        return None
    for key, (zh, en) in LANGUAGES.items():
        if v in (key, zh) or v.lower() == en.lower():
            return key
    raise InvalidInputError("option.invalid", *both("err_bad_choice", what=("文本语言", "text language"), value=value,
                                                      choices=_ids(["auto", *LANGUAGES])))


def merge_warnings(*lists: list[dict]) -> list[dict]:
    """Concatenate warning dicts (``{"code", "zh", "en"}``), dropping repeated codes, in order."""
    seen: set[str] = set()
    out: list[dict] = []
    for lst in lists:
        for w in lst or []:
            code = w.get("code", "")
            if code not in seen:
                seen.add(code)
                out.append(dict(w))
    return out


def annotate(text: str, pos: int, reading: str) -> str:
    """Replace the character at 1-based ``pos`` with ``[reading]`` (in CosyVoice3 a bracketed
    syllable replaces one character): ``annotate("她好干净", 2, "hao4") == "她[hao4]干净"``.

    Raises:
        ValueError: ``pos`` is outside the text.
    """
    if not 1 <= pos <= len(text):
        raise ValueError(f"position {pos} outside text of {len(text)} characters")
    return f"{text[: pos - 1]}[{reading}]{text[pos:]}"
