"""Every user-facing string of the web UI, in Chinese and English, and the choice lists.

The UI is Chinese by default; a language radio switches a session to English. Strings are
looked up by key with :func:`t`. Choice lists are ``(label, id)`` pairs, so a dropdown's
value is the stable id whatever the language. This module imports nothing from the
pipeline or engines: capabilities are passed in as plain objects.
"""

from __future__ import annotations

from typing import Any, Iterable

from cosyweb.errors import CosywebError, Message
from cosyweb.options import DIALECTS, EMOTIONS, LANGUAGES, MODE_LABELS, Mode

LANGS: tuple[str, str] = ("zh", "en")

#: key -> (zh, en). ``{name}`` placeholders are filled by :func:`t`.
STRINGS: dict[str, tuple[str, str]] = {
    "title": ("# CosyWeb 零样本语音克隆", "# CosyWeb zero-shot voice cloning"),
    "subtitle": (
        "上传或录制 3–10 秒的提示音频，输入文字，即可流式听到克隆的声音。",
        "Upload or record a 3–10 s prompt, type some text, and hear the cloned voice stream in.",
    ),
    "engine_heading": ("**当前引擎：** `{name}` — {description}", "**Engine:** `{name}` — {description}"),
    "language": ("界面语言 / Language", "界面语言 / Language"),
    # prompt
    "prompt_audio": ("提示音频（上传或录音）", "Prompt audio (upload or record)"),
    "prompt_preview": ("处理后的提示音频（已去除首尾静音）", "Conditioned prompt (silence trimmed)"),
    "prompt_text": ("提示文本", "Prompt text"),
    "prompt_text_info_optional": (
        "提示音频中说的话（当前引擎可不填）",
        "What the prompt says (optional for this engine)",
    ),
    "prompt_text_info_required": (
        "提示音频中说的话（当前引擎的 3s 极速复刻需要）",
        "What the prompt says (required by this engine for zero-shot)",
    ),
    "prompt_text_placeholder": ("例如：希望你以后能够做的比我还好呦。", "e.g. The device would work during the day as well."),
    "prompt_stats": (
        "时长 {duration_s} 秒（语音 {speech_s} 秒）· 原始采样率 {original_sample_rate} Hz · "
        "峰值 {peak_dbfs} dBFS · 响度 {rms_dbfs} dBFS · 信噪比约 {snr_db} dB",
        "duration {duration_s} s (speech {speech_s} s) · original rate {original_sample_rate} Hz · "
        "peak {peak_dbfs} dBFS · level {rms_dbfs} dBFS · SNR ≈ {snr_db} dB",
    ),
    "prompt_trimmed": ("已截取原音频 {start}–{end} 秒的最佳片段", "kept the best stretch, {start}–{end} s of the original"),
    "prompt_ok": ("✓ 提示音频可用", "✓ Prompt is usable"),
    "prompt_bad": ("✗ {message}", "✗ {message}"),
    "warning_item": ("⚠ {message}", "⚠ {message}"),
    # text
    "text": ("合成文本", "Text to synthesise"),
    "text_info": (
        "可用 [hao4] 或 [h][ào] 标注读音（替换一个字），英文可用 ARPAbet，如 [M][AY0][N][UW1][T]",
        "Annotate a reading with [hao4] or [h][ào] (replaces one character); ARPAbet for English, e.g. [M][AY0][N][UW1][T]",
    ),
    "text_placeholder": ("她[h][ào]干净，今天是2026年11月30日。", "她[h][ào]干净，今天是2026年11月30日。"),
    "text_ok": ("✓ 共 {n_segments} 段，预计约 {estimated_s} 秒语音", "✓ {n_segments} segment(s), about {estimated_s} s of speech"),
    "text_bad": ("⚠ {message}", "⚠ {message}"),
    # pronunciation helper
    "poly_accordion": ("读音助手（多音字）", "Pronunciation helper (polyphones)"),
    "poly_list": ("列出多音字", "List polyphones"),
    "poly_char": ("多音字", "Polyphone"),
    "poly_char_choice": ("第{pos}字「{char}」（当前 {current}）", "char {pos} '{char}' (now {current})"),
    "poly_reading": ("读音", "Reading"),
    "poly_insert": ("插入标注", "Insert annotation"),
    "poly_none": ("文本中没有多音字。", "No polyphonic characters in the text."),
    "poly_found": ("找到 {n} 个多音字，选择一个字和读音后点「插入标注」。", "Found {n} polyphone(s): pick one and a reading, then Insert annotation."),
    "poly_inserted": ("已将第{pos}字「{char}」标注为 [{reading}]。", "Annotated char {pos} '{char}' as [{reading}]."),
    "poly_stale": ("文本已改变，请重新列出多音字。", "The text changed; list the polyphones again."),
    "poly_pick": ("请先选择一个多音字和读音。", "Pick a polyphone and a reading first."),
    # options
    "options_accordion": ("选项", "Options"),
    "mode": ("模式", "Mode"),
    "mode_info_missing": ("{modes} 需 CosyVoice3 引擎", "{modes}: needs the CosyVoice3 engine"),
    "instruct_text": ("指令文本", "Instruction"),
    "instruct_placeholder": ("例如：用温柔的语气说", "e.g. Speak gently"),
    "dialect": ("方言", "Dialect"),
    "dialect_info": ("标注「需 CosyVoice3 引擎」的方言当前引擎不支持", "Dialects marked 'needs CosyVoice3' are not supported by this engine"),
    "needs_cosyvoice3": ("{label}（需 CosyVoice3 引擎）", "{label} (needs the CosyVoice3 engine)"),
    "unsupported": ("{label}（当前引擎不支持）", "{label} (not supported by this engine)"),
    "emotion": ("情感", "Emotion"),
    "text_language": ("文本语言", "Text language"),
    "text_language_auto": ("自动检测", "Auto-detect"),
    "speed": ("语速", "Speed"),
    "speed_info_off": ("当前引擎不支持调节语速", "This engine cannot change the speaking rate"),
    "volume": ("音量", "Volume"),
    "volume_info_off": ("当前引擎不支持调节音量", "This engine cannot change the volume"),
    "seed": ("随机种子", "Seed"),
    "dice": ("⚄ 随机", "⚄ Random"),
    # run
    "generate": ("生成", "Generate"),
    "stop": ("停止", "Stop"),
    "out_stream": ("生成的语音（流式播放）", "Generated speech (streaming)"),
    "out_file": ("下载完整音频（wav）", "Download the full audio (wav)"),
    "status_label": ("状态", "Status"),
    "status_idle": ("", ""),
    "status_checking": ("… 正在处理提示音频…", "… Processing the prompt…"),
    "status_queued": ("○ 排队中：第 {position} 位", "○ Queued: position {position}"),
    "status_waited": ("（已等待 {s} 秒）", " (waited {s} s)"),
    "status_started": ("♪ 生成中…", "♪ Generating…"),
    "status_streaming": ("♪ 生成中… 已生成 {audio_s} 秒", "♪ Generating… {audio_s} s so far"),
    "status_done": (
        "✓ 排队 {queue_wait_s} 秒 · 首包 {first_chunk_ms} 毫秒 · 总计 {total_s} 秒 · 音频 {duration_s} 秒 · RTF {rtf}",
        "✓ queue {queue_wait_s} s · first chunk {first_chunk_ms} ms · total {total_s} s · audio {duration_s} s · RTF {rtf}",
    ),
    "status_error": ("✗ {message}", "✗ {message}"),
    "status_cancelled": ("■ 已停止", "■ Stopped"),
    "panel": (
        "队列 {queue_depth} · 运行中 {active_jobs} · 近期首包中位数 {median_first_chunk}",
        "queue {queue_depth} · running {active_jobs} · recent median first chunk {median_first_chunk}",
    ),
    "panel_not_ready": ("… 引擎加载中…", "… Engine loading…"),
    "panel_unhealthy": ("! 服务异常", "! Service unhealthy"),
    "ms": ("{value} 毫秒", "{value} ms"),
    "na": ("—", "—"),
    "examples": ("示例（点击填入）", "Examples (click to fill in)"),
    # low-latency player (cosyweb/ui/static/player.js reads the player_* keys)
    "player_use": ("低延迟播放器", "Low-latency player"),
    "player_use_info": (
        "边生成边播放（Web Audio）；取消勾选则使用标准的流式音频播放器",
        "Plays as the audio arrives (Web Audio); untick to use the standard streaming audio player",
    ),
    "player_connecting": ("… 正在连接…", "… Connecting…"),
    "player_queued": ("○ 排队中：第 {position} 位", "○ Queued: position {position}"),
    "player_generating": ("♪ 生成中…", "♪ Generating…"),
    "player_playing": ("♪ 正在播放…", "♪ Playing…"),
    "player_done": (
        "✓ 点击到出声 {click_to_sound_ms} 毫秒 · 首包 {first_chunk_ms} 毫秒 · 音频 {audio_s} 秒 · RTF {rtf} · 卡顿 {underruns} 次",
        "✓ click to sound {click_to_sound_ms} ms · first chunk {first_chunk_ms} ms · audio {audio_s} s · RTF {rtf} · underruns {underruns}",
    ),
    "player_stopped": ("■ 已停止", "■ Stopped"),
    "player_download": ("下载完整音频（wav）", "Download the full audio (wav)"),
    "player_network_error": ("网络错误，请重试", "Network error, please retry"),
    "player_http_error": ("请求失败（HTTP {status}），请重试", "Request failed (HTTP {status}), please retry"),
    "player_stream_broken": ("音频流中断，请重试", "The audio stream broke off, please retry"),
    "error_title": ("错误", "Error"),
    # input errors raised by the UI itself
    "err_no_prompt": ("请先上传或录制提示音频", "Please upload or record a prompt audio first"),
    "err_no_text": ("请输入要合成的文本", "Please enter the text to synthesise"),
    "err_bad_choice": ("无效的{what}：{value}（可选：{choices}）", "Invalid {what}: {value} (choices: {choices})"),
    "err_bad_number": ("无效的{what}：{value}（范围 {lo}–{hi}）", "Invalid {what}: {value} (range {lo}–{hi})"),
}


def other(lang: str) -> str:
    """The other UI language (``"zh"`` <-> ``"en"``)."""
    return "en" if lang == "zh" else "zh"


def norm_lang(lang: Any) -> str:
    """Map anything to a supported UI language id; unknown values give ``"zh"``."""
    return "en" if str(lang or "").lower().startswith("en") else "zh"


def t(key: str, lang: str = "zh", **fmt: Any) -> str:
    """The string ``key`` in ``lang``, formatted with ``fmt``.

    Raises:
        KeyError: unknown key (a programming error).
    """
    zh, en = STRINGS[key]
    s = en if norm_lang(lang) == "en" else zh
    return s.format(**fmt) if fmt else s


def message(key: str, **fmt: Any) -> Message:
    """A bilingual :class:`Message` built from ``STRINGS[key]``."""
    return Message(key, t(key, "zh", **fmt), t(key, "en", **fmt))


def bilingual(err: CosywebError | Message, lang: str) -> str:
    """``"<session language> / <other language>"`` for an error or message.

    The session language comes first; both are always present, so a message reads the same
    in a log, in ``gradio_client`` and in the browser.
    """
    msg = err.message if isinstance(err, CosywebError) else err
    first, second = msg.text(norm_lang(lang)), msg.text(other(norm_lang(lang)))
    return first if first == second else f"{first} / {second}"


def _mark(label: str, supported: bool, lang: str, *, key: str) -> str:
    return label if supported else t(key, lang, label=label)


def mode_choices(modes: Iterable[Mode], lang: str) -> list[tuple[str, str]]:
    """``(label, id)`` for the modes the engine supports, in the fixed display order."""
    i = 1 if norm_lang(lang) == "en" else 0
    supported = set(modes)
    return [(labels[i], m.value) for m, labels in MODE_LABELS.items() if m in supported]


def missing_modes_info(modes: Iterable[Mode], lang: str) -> str:
    """Info line naming the modes the engine lacks ("" when it has them all)."""
    i = 1 if norm_lang(lang) == "en" else 0
    missing = [labels[i] for m, labels in MODE_LABELS.items() if m not in set(modes)]
    return t("mode_info_missing", lang, modes="、".join(missing) if i == 0 else ", ".join(missing)) if missing else ""


def dialect_choices(supported: Iterable[str], lang: str) -> list[tuple[str, str]]:
    """``(label, id)`` for 普通话 + the 17 CosyVoice3 dialects; unsupported ones are marked
    ``（需 CosyVoice3 引擎）`` / ``(needs the CosyVoice3 engine)``."""
    i = 1 if norm_lang(lang) == "en" else 0
    ok = set(supported) | {"mandarin"}
    return [(_mark(labels[i], d in ok, lang, key="needs_cosyvoice3"), d) for d, labels in DIALECTS.items()]


def emotion_choices(supported: Iterable[str], lang: str) -> list[tuple[str, str]]:
    """``(label, id)`` for 无/开心/伤心/生气; unsupported ones are marked."""
    i = 1 if norm_lang(lang) == "en" else 0
    ok = set(supported) | {"none"}
    return [(_mark(labels[i], e in ok, lang, key="unsupported"), e) for e, labels in EMOTIONS.items()]


def text_language_choices(supported: Iterable[str], lang: str) -> list[tuple[str, str]]:
    """``(label, id)`` of the text languages the engine speaks, after ``auto`` (detect runs)."""
    i = 1 if norm_lang(lang) == "en" else 0
    ok = set(supported)
    return [(t("text_language_auto", lang), "auto")] + [
        (labels[i], key) for key, labels in LANGUAGES.items() if key in ok
    ]


def language_choices() -> list[tuple[str, str]]:
    """Choices of the UI language radio."""
    return [("中文", "zh"), ("English", "en")]
