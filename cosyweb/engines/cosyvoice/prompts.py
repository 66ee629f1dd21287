"""CosyVoice prompt conventions: the exact strings the models were trained with.

Pure string functions, no torch. Source of every string: FunAudioLLM/CosyVoice at
commit ace7c47 — ``cosyvoice/utils/common.py`` ``instruct_list`` (CosyVoice3's
instructions), ``example.py`` ``cosyvoice3_example`` (the zero-shot and
cross-lingual prefix) and ``cosyvoice/llm/llm.py`` ``CosyVoice3LM.inference``
(which asserts that token 151646, ``<|endofprompt|>``, is in the text it sees).

CosyVoice3 conventions:

* zero-shot: ``prompt_text = "You are a helpful assistant.<|endofprompt|>" + transcript``;
* cross-lingual: the synthesis text itself carries that prefix;
* instruct (``inference_instruct2``): ``"You are a helpful assistant. " + instruction + "<|endofprompt|>"``.

CosyVoice2 has no system prefix: zero-shot takes the bare transcript, and
instruct2 takes ``instruction + "<|endofprompt|>"``.

The upstream frontend skips normalisation *and sentence splitting* for any text
containing ``<|...|>``, so the caller splits text into segments first and adds the
prefix to each segment (:func:`cross_lingual_text`).
"""

from __future__ import annotations

from typing import Sequence

#: The token CosyVoice3's LLM asserts on (id 151646 in its tokenizer).
END_OF_PROMPT = "<|endofprompt|>"
#: CosyVoice3's system prompt, as in upstream ``example.py``.
SYSTEM_PROMPT = "You are a helpful assistant."
#: Prefix of a CosyVoice3 zero-shot prompt text and of a cross-lingual synthesis text.
V3_PREFIX = SYSTEM_PROMPT + END_OF_PROMPT

#: Dialect id (keys of :data:`cosyweb.options.DIALECTS`, upstream order) -> CosyVoice3 instruction.
DIALECT_INSTRUCTIONS: dict[str, str] = {
    "cantonese": "请用广东话表达。",
    "dongbei": "请用东北话表达。",
    "gansu": "请用甘肃话表达。",
    "guizhou": "请用贵州话表达。",
    "henan": "请用河南话表达。",
    "hubei": "请用湖北话表达。",
    "hunan": "请用湖南话表达。",
    "jiangxi": "请用江西话表达。",
    "minnan": "请用闽南话表达。",
    "ningxia": "请用宁夏话表达。",
    "shanxi": "请用山西话表达。",
    "shaanxi": "请用陕西话表达。",
    "shandong": "请用山东话表达。",
    "shanghai": "请用上海话表达。",
    "sichuan": "请用四川话表达。",
    "tianjin": "请用天津话表达。",
    "yunnan": "请用云南话表达。",
}
#: Emotion id (keys of :data:`cosyweb.options.EMOTIONS`) -> CosyVoice3 instruction.
EMOTION_INSTRUCTIONS: dict[str, str] = {
    "happy": "请非常开心地说一句话。",
    "sad": "请非常伤心地说一句话。",
    "angry": "请非常生气地说一句话。",
}
#: Speed and volume instructions, verbatim from upstream.
SPEED_FAST = "请用尽可能快地语速说一句话。"
SPEED_SLOW = "请用尽可能慢地语速说一句话。"
VOLUME_LOUD = "Please say a sentence as loudly as possible."
VOLUME_SOFT = "Please say a sentence in a very soft voice."

#: CosyVoice2-0.5B's documented dialects (CosyVoice2 paper, "instructed generation":
#: Cantonese, Sichuanese, Shanghainese, Tianjinese, Zhengzhou/Henan, Changsha/Hunan, Jinan/Shandong).
V2_DIALECTS = frozenset({"cantonese", "sichuan", "shanghai", "tianjin", "henan", "hunan", "shandong"})


def zero_shot_prompt_text(transcript: str, version: int) -> str:
    """The ``prompt_text`` argument of ``inference_zero_shot`` / ``add_zero_shot_spk``.

    Args:
        transcript: what is said in the prompt audio ("" if unknown).
        version: 3 for CosyVoice3, 2 for CosyVoice2.

    Returns:
        ``"You are a helpful assistant.<|endofprompt|>" + transcript`` for v3; the transcript for v2.
    """
    transcript = transcript.strip()
    return V3_PREFIX + transcript if version >= 3 else transcript


def cross_lingual_text(segment_text: str, version: int) -> str:
    """The ``tts_text`` of ``inference_cross_lingual`` for one already-split segment.

    Returns:
        The segment with the v3 prefix (v3), or unchanged (v2).
    """
    return V3_PREFIX + segment_text if version >= 3 else segment_text


def instruct_text(instructions: Sequence[str], version: int) -> str:
    """The ``instruct_text`` of ``inference_instruct2``.

    A single instruction gives exactly one string of upstream's ``instruct_list``,
    e.g. ``"You are a helpful assistant. 请用四川话表达。<|endofprompt|>"``. Several
    instructions (dialect + emotion, say) are written one after the other in the
    same slot, in the order given.

    Args:
        instructions: instruction sentences (see :func:`instructions_for`); at least one.
        version: 3 or 2.

    Raises:
        ValueError: no instruction was given.
    """
    body = "".join(s.strip() for s in instructions if s and s.strip())
    if not body:
        raise ValueError("instruct_text needs at least one instruction")
    if version >= 3:
        return f"{SYSTEM_PROMPT} {body}{END_OF_PROMPT}"
    return body + END_OF_PROMPT


def instructions_for(
    dialect: str = "mandarin",
    emotion: str = "none",
    speed: float = 1.0,
    volume: float = 1.0,
    free_text: str = "",
) -> list[str]:
    """The instruction sentences that express a request's choices, in a fixed order.

    Order: dialect, emotion, speed (fast if ``speed > 1``, slow if ``< 1``), volume
    (loud if ``volume > 1``, soft if ``< 1``), then the user's free-form text.
    A trailing ``<|endofprompt|>`` in the free text is removed (it is added once, by
    :func:`instruct_text`).

    Raises:
        KeyError: unknown dialect or emotion id.
    """
    out: list[str] = []
    if dialect and dialect != "mandarin":
        out.append(DIALECT_INSTRUCTIONS[dialect])
    if emotion and emotion != "none":
        out.append(EMOTION_INSTRUCTIONS[emotion])
    if speed > 1.0:
        out.append(SPEED_FAST)
    elif speed < 1.0:
        out.append(SPEED_SLOW)
    if volume > 1.0:
        out.append(VOLUME_LOUD)
    elif volume < 1.0:
        out.append(VOLUME_SOFT)
    free = (free_text or "").replace(END_OF_PROMPT, "").strip()
    if free:
        out.append(free)
    return out


def llm_text_has_marker(*texts: str) -> bool:
    """True if ``<|endofprompt|>`` occurs in any of the texts the LLM will see."""
    return any(END_OF_PROMPT in (t or "") for t in texts)
