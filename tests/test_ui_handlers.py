"""The web UI's handlers against the real pipeline (TTSService) with a controllable fake
engine: streaming in int16, busy refusal before the first yield, cancellation when the
client goes away, bilingual errors, the pronunciation helper, the prompt preview."""

from __future__ import annotations

import asyncio
from pathlib import Path
from types import SimpleNamespace

import gradio as gr
import numpy as np
import pytest
import soundfile as sf
from fakes import FakeEngine, Gate, service_factory, wait_until  # noqa: F401
from ui_fixtures import make_ui, zh_prompt  # noqa: F401

from cosyweb.audio.encode import to_int16
from cosyweb.errors import InvalidInputError
from cosyweb.options import Mode
from cosyweb.ui.handlers import UIHandlers, prompt_report
from cosyweb.ui.inputs import annotate, build_options, merge_warnings

pytestmark = pytest.mark.timeout(60)

BUSY_ZH = "系统繁忙，请稍后再试"
BUSY_EN = "System busy, please try again later"


def req(session: str = "s1") -> SimpleNamespace:
    """Stands in for gr.Request (only session_hash is read)."""
    return SimpleNamespace(session_hash=session)


def stream(h: UIHandlers, prompt, text: str, *, lang="zh", session="s1", dialect="mandarin", emotion="none",
           mode="zero_shot", speed=1.0, volume=1.0):
    return h.synthesize_stream(lang, prompt, "", text, mode, dialect, emotion, speed, volume, 0, "", "auto", req(session))


async def drain(agen) -> list:
    return [x async for x in agen]


# --- option parsing -------------------------------------------------------------------------
def test_build_options_accepts_ids_and_labels():
    o = build_options("跨语种复刻", "四川话", "开心", 1.5, 0.5, 7)
    assert (o.mode, o.dialect, o.emotion, o.speed, o.volume, o.seed) == (Mode.CROSS_LINGUAL, "sichuan", "happy", 1.5, 0.5, 7)
    o = build_options("instruct", "Cantonese", "angry", None, "", None, "", "粤语")
    assert (o.mode, o.dialect, o.emotion, o.speed, o.volume, o.seed) == (Mode.INSTRUCT, "cantonese", "angry", 1.0, 1.0, 0)
    assert o.language == "yue" and build_options(language="auto").language is None
    assert build_options(language="English").language == "en"


@pytest.mark.parametrize(
    "kwargs, zh, en",
    [
        (dict(dialect="klingon"), "无效的方言：klingon（可选：mandarin, cantonese,", "Invalid dialect: klingon (choices: mandarin"),
        (dict(emotion="bored"), "（可选：none, happy, sad, angry）", "(choices: none, happy, sad, angry)"),
        (dict(speed=True), "无效的语速：True", "Invalid speed: True"),  # a JSON boolean is not a number
        (dict(mode="karaoke"), "无效的模式", "Invalid mode"),
        (dict(emotion="bored"), "无效的情感", "Invalid emotion"),
        (dict(speed=3.0), "无效的语速：3.0（范围 0.5–2.0）", "Invalid speed: 3.0 (range 0.5–2.0)"),
        (dict(speed="fast"), "无效的语速", "Invalid speed"),
        (dict(volume=0.0), "无效的音量", "Invalid volume"),
        (dict(seed=-1), "无效的随机种子", "Invalid seed"),
        (dict(seed=1.5), "无效的随机种子", "Invalid seed"),
        (dict(language="fr"), "无效的文本语言", "Invalid text language"),
    ],
)
def test_build_options_rejects_bad_values_bilingually(kwargs, zh, en):
    with pytest.raises(InvalidInputError) as ei:
        build_options(**kwargs)
    assert zh in ei.value.zh and en in ei.value.en


def test_annotate_replaces_one_character():
    assert annotate("她好干净", 2, "hao4") == "她[hao4]干净"
    assert annotate("好", 1, "hao3") == "[hao3]"
    with pytest.raises(ValueError):
        annotate("她好", 3, "hao4")


def test_merge_warnings_drops_repeated_codes_in_order():
    a = [{"code": "x", "zh": "甲", "en": "a"}, {"code": "y", "zh": "乙", "en": "b"}]
    b = [{"code": "y", "zh": "乙", "en": "b"}, {"code": "z", "zh": "丙", "en": "c"}]
    assert [w["code"] for w in merge_warnings(a, b)] == ["x", "y", "z"]


# --- streaming ----------------------------------------------------------------------------
def test_stream_yields_int16_chunks_then_a_wav_and_the_status(make_ui, zh_prompt):
    h, svc, engine = make_ui()
    outs = asyncio.run(drain(stream(h, zh_prompt, "你好。今天天气很好。")))
    chunks = [o[0] for o in outs if isinstance(o[0], tuple)]
    assert chunks, outs
    for sr, pcm in chunks:
        assert sr == svc.sample_rate and pcm.dtype == np.int16 and pcm.ndim == 1
    # each fake chunk is a constant v: it must arrive as int16(v), not re-normalised to full scale
    expected = {int(to_int16(engine.chunk(t))[0]) for t in engine.call_texts()}
    assert {int(pcm[0]) for _, pcm in chunks} <= expected
    wav_path, status = outs[-1][1], outs[-1][2]
    data, sr = sf.read(wav_path, dtype="int16")
    assert sr == svc.sample_rate and len(data) == sum(len(p) for _, p in chunks)
    assert Path(wav_path).parent == Path(svc.settings.output_dir).resolve()
    assert "RTF" in status and "首包" in status


def test_stream_in_english_session(make_ui, zh_prompt):
    h, _, _ = make_ui()
    outs = asyncio.run(drain(stream(h, zh_prompt, "你好。", lang="en")))
    assert "first chunk" in outs[-1][2] and "RTF" in outs[-1][2]


def _is_skip(x) -> bool:
    return isinstance(x, dict) and x.get("__type__") == "update" and set(x) == {"__type__"}


def test_the_status_line_follows_a_language_switch_during_and_after_the_run(make_ui, zh_prompt):
    engine = FakeEngine(n_chunks=2, chunk_samples=1600)
    gate = Gate("hold")
    engine.on("*", before=gate)
    h, _, _ = make_ui(engine)

    async def scenario():
        agen = stream(h, zh_prompt, "你好。", lang="zh", session="s1")
        first = await agen.__anext__()
        switched = h.relabel_status("en", first[2], req("s1"))  # the radio goes to English mid-run
        gate.open()
        return first, switched, await drain(agen)

    first, switched, rest = asyncio.run(scenario())
    assert "生成中" in first[2] or "排队" in first[2], first
    assert switched.startswith(("♪ Generating", "○ Queued")), switched  # re-rendered at once
    done = rest[-1][2]
    assert done.startswith("✓ queue") and "RTF" in done and "首包" not in done  # the handler followed the switch
    # After the run: back to Chinese re-renders the same line, and the stop button leaves it alone.
    zh_done = h.relabel_status("zh", done, req("s1"))
    assert zh_done.startswith("✓ 排队") and "首包" in zh_done
    assert _is_skip(h.stop_status("zh", zh_done, req("s1")))
    # A line that this session's record does not know is cleared, not left in the old language.
    assert h.relabel_status("en", "✓ 排队 9 秒", req("s2")) == ""
    assert h.relabel_status("en", "", req("s1")) == ""


def test_stop_writes_one_line_only_over_a_gradio_run_in_progress(make_ui, zh_prompt):
    engine = FakeEngine(n_chunks=2, chunk_samples=1600)
    gate = Gate("hold")
    engine.on("*", before=gate)
    h, _, _ = make_ui(engine)
    # The low-latency player ran the job: #cw-status is empty, the player shows its own stop line.
    assert _is_skip(h.stop_status("en", "", req("p")))

    async def scenario():
        agen = stream(h, zh_prompt, "你好。", lang="en", session="g")
        first = await agen.__anext__()
        stopped = h.stop_status("en", first[2], req("g"))
        await agen.aclose()  # what Gradio's cancels= does to the event
        gate.open()
        return stopped

    stopped = asyncio.run(scenario())
    assert stopped == "■ Stopped"
    assert h.relabel_status("zh", stopped, req("g")) == "■ 已停止"


def test_busy_is_refused_before_the_first_yield_with_the_bilingual_message(make_ui, zh_prompt):
    engine = FakeEngine()
    gate = Gate("hold")
    engine.on("*", before=gate)
    h, svc, _ = make_ui(engine, concurrency=1, max_active_jobs=1, max_queue=0)

    async def scenario():
        first = stream(h, zh_prompt, "你好。", session="a")
        await first.__anext__()  # admitted, holds the only slot
        errors = {}
        for lang, session in (("zh", "b"), ("en", "c")):
            with pytest.raises(gr.Error) as ei:
                await stream(h, zh_prompt, "你好。", lang=lang, session=session).__anext__()
            errors[lang] = ei.value.message
        gate.open()
        rest = await drain(first)
        return errors, rest

    errors, rest = asyncio.run(scenario())
    assert errors["zh"] == f"{BUSY_ZH} / {BUSY_EN}"
    assert errors["en"] == f"{BUSY_EN} / {BUSY_ZH}"
    assert "RTF" in rest[-1][2]  # the admitted job completed
    assert svc.stats()["refused"] >= 2


def test_second_job_of_the_same_session_is_refused_as_busy(make_ui, zh_prompt):
    engine = FakeEngine()
    gate = engine.on("*", before=Gate()).before
    h, _, _ = make_ui(engine, concurrency=1, max_active_jobs=1, max_queue=4)

    async def scenario():
        first = stream(h, zh_prompt, "你好。", session="same")
        await first.__anext__()
        with pytest.raises(gr.Error) as ei:
            await stream(h, zh_prompt, "你好。", session="same").__anext__()
        gate.open()
        await drain(first)
        return ei.value.message

    assert BUSY_ZH in asyncio.run(scenario())


def test_queued_job_shows_its_position(make_ui, zh_prompt):
    engine = FakeEngine()
    gate = engine.on("*", before=Gate()).before
    h, _, _ = make_ui(engine, concurrency=1, max_active_jobs=1, max_queue=2)

    async def scenario():
        a = stream(h, zh_prompt, "你好。", session="a")
        await a.__anext__()
        b = stream(h, zh_prompt, "你好。", session="b")
        first_b = await b.__anext__()
        gate.open()
        await drain(a)
        rest_b = await drain(b)
        return first_b, rest_b

    first_b, rest_b = asyncio.run(scenario())
    assert "排队中：第 1 位" in first_b[2]
    assert "RTF" in rest_b[-1][2]


def test_closing_the_stream_cancels_the_job_and_frees_the_slot(make_ui, zh_prompt):
    engine = FakeEngine()
    gate = engine.on("*", before=Gate()).before
    h, svc, _ = make_ui(engine, concurrency=1, max_active_jobs=1, max_queue=2)

    async def scenario():
        a = stream(h, zh_prompt, "你好。", session="a")
        await a.__anext__()
        assert svc.stats()["active_jobs"] == 1
        await a.aclose()  # what Gradio does when the tab closes or stop is pressed

    asyncio.run(scenario())
    assert wait_until(lambda: svc.stats()["active_jobs"] == 0)
    assert svc.stats()["cancelled"] == 1
    gate.open()


@pytest.mark.parametrize(
    "prompt, text, kwargs, expect",
    [
        (None, "你好。", {}, "请先上传或录制提示音频"),
        ("PROMPT", "", {}, "请输入要合成的文本"),
        ("PROMPT", "她[hoo4]干净", {}, "第2个字符处的拼音标注 [hoo4] 无效"),
        ("PROMPT", "你好。", dict(dialect="sichuan"), "CosyVoice3"),
        ("PROMPT", "你好。", dict(speed=9), "无效的语速"),
    ],
)
def test_bad_inputs_raise_specific_bilingual_errors(make_ui, zh_prompt, prompt, text, kwargs, expect):
    h, svc, _ = make_ui()
    p = zh_prompt if prompt == "PROMPT" else prompt
    with pytest.raises(gr.Error) as ei:
        asyncio.run(stream(h, p, text, **kwargs).__anext__())
    assert expect in ei.value.message and " / " in ei.value.message
    assert svc.stats()["active_jobs"] == 0


def test_garbage_prompt_file_is_rejected(make_ui, tmp_path):
    junk = tmp_path / "junk.wav"
    junk.write_bytes(b"this is not audio" * 100)
    h, _, _ = make_ui()
    with pytest.raises(gr.Error) as ei:
        asyncio.run(stream(h, str(junk), "你好。").__anext__())
    assert "/" in ei.value.message and ei.value.message.split(" / ")[0]


# --- non-streaming API -----------------------------------------------------------------------
def test_synthesize_api_returns_a_wav_and_the_json_status(make_ui, zh_prompt):
    h, svc, _ = make_ui()
    path, status = asyncio.run(
        h.synthesize_api(zh_prompt, "希望你以后能够做的比我还好呦。", "你好。今天天气很好。", "3s极速复刻", "普通话", "无",
                         1.0, 3, 1.0, "", "auto", req())
    )
    for key in ("duration_s", "sample_rate", "rtf", "first_chunk_ms", "warnings", "queue_wait_ms", "total_ms"):
        assert key in status
    data, sr = sf.read(path)
    assert sr == status["sample_rate"] == svc.sample_rate
    assert abs(len(data) / sr - status["duration_s"]) < 1e-3


def test_synthesize_api_errors_are_zh_then_en(make_ui, zh_prompt):
    h, _, _ = make_ui()
    with pytest.raises(gr.Error) as ei:
        asyncio.run(h.synthesize_api(zh_prompt, "", "你好", "zero_shot", "四川话", "none", 1.0, 0, 1.0, "", "en", req()))
    zh, en = ei.value.message.split(" / ", 1)
    assert "四川话" in zh and "CosyVoice3" in en


# --- prompt preview, text check, pronunciation helper, options ----------------------------------
def test_preview_shows_the_conditioned_prompt_and_its_measurements(make_ui, zh_prompt):
    h, svc, _ = make_ui()
    (sr, pcm), md = h.preview_prompt("zh", zh_prompt)
    prompt = svc.load_prompt(zh_prompt)
    assert sr == prompt.sample_rate and pcm.dtype == np.int16 and len(pcm) == len(prompt.samples)
    assert "时长" in md and "dBFS" in md
    assert prompt_report(prompt, "en").startswith("✓ Prompt is usable")


def test_preview_of_a_silent_prompt_says_why(make_ui, tmp_path):
    silent = tmp_path / "silent.wav"
    sf.write(silent, np.zeros(48000, np.float32), 16000)
    h, _, _ = make_ui()
    audio, md = h.preview_prompt("en", str(silent))
    assert audio is None and "silent" in md


def test_check_text_reports_the_bad_annotation_and_its_position(make_ui):
    h, _, _ = make_ui()
    assert "第5个字符处的拼音标注 [hoo4] 无效" in h.check_text("zh", "今天天气[hoo4]")
    assert "invalid pinyin annotation [hoo4] at character 5" in h.check_text("en", "今天天气[hoo4]")
    assert h.check_text("zh", "她[h][ào]干净。").startswith("✓")
    assert h.check_text("zh", "   ") == ""


def test_pronunciation_helper_lists_polyphones_and_inserts_the_annotation(make_ui):
    h, _, _ = make_ui()
    text = "她好干净"
    poly_dd, reading_dd, items, note = h.list_polyphones("zh", text)
    hao = next(it for it in items if it["char"] == "好")
    assert hao["pos"] == 2 and {"hao3", "hao4"} <= set(hao["candidates"])
    assert "2" in [v for _, v in poly_dd["choices"]]
    new_text, *_rest, note = h.insert_annotation("zh", text, "2", "hao4", items)
    assert new_text == "她[hao4]干净"
    assert "[hao4]" in note
    assert h.check_text("zh", new_text).startswith("✓")


def test_unsupported_dialect_is_flagged_inline(make_ui):
    h, _, _ = make_ui()
    msg = h.check_options("zh", "zero_shot", "sichuan", "none")
    assert "四川话" in msg and "CosyVoice3" in msg
    assert h.check_options("en", "zero_shot", "mandarin", "none") == ""


def test_panel_shows_queue_active_and_median_first_chunk(make_ui, zh_prompt):
    h, _, _ = make_ui()
    assert "队列 0" in h.panel("zh") and "—" in h.panel("zh")
    asyncio.run(drain(stream(h, zh_prompt, "你好。")))
    assert "ms" in h.panel("en") and "running 0" in h.panel("en")


def test_roll_seed_is_in_range():
    seeds = {UIHandlers.roll_seed() for _ in range(20)}
    assert len(seeds) > 1 and all(0 <= s < 2**31 for s in seeds)
