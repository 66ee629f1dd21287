"""The Python side of the low-latency player (no browser): the injected head, its strings,
prompt registration on upload, and the streaming event's validator (busy / missing inputs
answered before Gradio queues the event). The player itself runs in tests/test_browser_*.py."""

from __future__ import annotations

import json
import re
from types import SimpleNamespace

import gradio as gr
import pytest
from fakes import FakeEngine, Gate, service_factory, wait_until  # noqa: F401
from ui_fixtures import make_ui, zh_prompt  # noqa: F401

from cosyweb.ui.blocks import build_blocks
from cosyweb.ui.player import (
    ELEM_IDS,
    PCM_OUT_JS_PATH,
    PLAYER_JS_PATH,
    player_head,
    player_strings,
)

pytestmark = pytest.mark.timeout(60)

BUSY_ZH = "系统繁忙，请稍后再试"
BUSY_EN = "System busy, please try again later"


def req(session: str, user: str = "app") -> SimpleNamespace:
    """Stands in for gr.Request: the session, and ``x-gradio-user`` (``app``: the web page)."""
    return SimpleNamespace(session_hash=session, headers={"x-gradio-user": user})


# --- the head --------------------------------------------------------------------------------
def test_head_inlines_the_player_with_its_config():
    head = player_head(22050)
    config = json.loads(re.search(r"window\.cosywebPlayerConfig = (\{.*?\});</script>", head).group(1))
    assert config["sampleRate"] == 22050 and config["apiBase"] == "/api/v1"
    assert config["strings"]["download"] == ["下载完整音频（wav）", "Download the full audio (wav)"]
    out_js, player_js = (p.read_text(encoding="utf-8") for p in (PCM_OUT_JS_PATH, PLAYER_JS_PATH))
    assert out_js in head and player_js in head and head.index(out_js) < head.index(player_js)
    assert head.count("</script>") == 3  # nothing in the config can close a script early


def test_every_string_the_player_uses_exists_in_both_languages():
    js = PLAYER_JS_PATH.read_text(encoding="utf-8")
    used = set(re.findall(r"""\bt\("([a-z_]+)\"""", js))
    strings = player_strings()
    assert used and used <= set(strings), used - set(strings)
    for key, (zh, en) in strings.items():
        assert zh and en and zh != en, key


def test_the_page_has_the_components_the_player_relies_on(make_ui):
    h, svc, _ = make_ui()
    demo = build_blocks(svc, svc.settings, handlers=h)
    ids = {getattr(b, "elem_id", None) for b in demo.blocks.values()}
    assert set(ELEM_IDS.values()) <= ids
    fns = list(demo.fns.values()) if isinstance(demo.fns, dict) else list(demo.fns)
    stream = next(f for f in fns if f.api_name == "synthesize_stream")
    assert stream.validator is not None
    player_go = [f for f in fns if f.fn is None and f.js and "cosywebPlayer" in f.js]
    assert player_go and player_go[0].api_visibility == "private"


# --- registering the uploaded prompt -------------------------------------------------------------
def test_register_prompt_stores_it_and_prepares_its_voice(make_ui, zh_prompt, tmp_path):
    h, svc, engine = make_ui()
    pid = h.register_prompt(zh_prompt, "")
    assert re.fullmatch(r"[0-9a-f]{32}", pid)
    assert svc.get_prompt(pid).prompt_text == ""
    wait_until(lambda: svc.voice_state(pid) == "ready")  # prepared in the background
    assert h.register_prompt(zh_prompt, "") == pid  # unchanged: the same registration
    pid2 = h.register_prompt(zh_prompt, " 希望你以后能够做的比我还好呦。 ")
    assert pid2 != pid and svc.get_prompt(pid2).prompt_text == "希望你以后能够做的比我还好呦。"
    bad = tmp_path / "bad.wav"
    bad.write_bytes(b"not audio at all")
    assert h.register_prompt(None, "") == "" and h.register_prompt(str(bad), "") == ""


# --- the validator of the streaming event --------------------------------------------------------
def _validate(h, prompt, text, lang="zh", session="v", user="app"):
    return h.validate_stream(lang, prompt, "", text, "zero_shot", "mandarin", "none", 1.0, 1.0, 0, "", "auto",
                             req(session, user))


def test_validator_marks_a_missing_prompt_or_text_on_its_component(make_ui, zh_prompt):
    h, _, _ = make_ui()
    checks = _validate(h, None, "你好。")
    assert len(checks) == 12 and not checks[1]["is_valid"]
    assert checks[1]["message"] == "请先上传或录制提示音频 / Please upload or record a prompt audio first"
    assert all(c["is_valid"] for i, c in enumerate(checks) if i != 1)
    checks = _validate(h, zh_prompt, "  ", lang="en")
    assert not checks[3]["is_valid"] and checks[3]["message"].startswith("Please enter the text")
    assert all(c["is_valid"] for c in _validate(h, zh_prompt, "你好。"))


def test_validator_refuses_at_once_when_busy_and_admission_stays_in_the_handler(make_ui, zh_prompt):
    engine = FakeEngine()
    gate = engine.on("*", before=Gate("hold")).before
    h, svc, _ = make_ui(engine, concurrency=1, max_active_jobs=1, max_queue=0)
    job = svc.submit(svc.load_prompt(zh_prompt), "你好。", h.build_options(), client_id="holder")
    try:
        for lang, first, second in (("zh", BUSY_ZH, BUSY_EN), ("en", BUSY_EN, BUSY_ZH)):
            with pytest.raises(gr.Error) as ei:
                _validate(h, zh_prompt, "你好。", lang=lang)
            assert ei.value.message == f"{first} / {second}"
        refused = svc.stats()["refused"]
        assert refused >= 2  # counted like every other refusal
        # gradio_client would only see a bare HTTP 400: API calls pass, the handler refuses them.
        assert all(c["is_valid"] for c in _validate(h, zh_prompt, "你好。", user="api"))
        assert all(c["is_valid"] for c in _validate(h, None, "", user="api"))
    finally:
        gate.open()
    wait_until(lambda: job.finished)
    assert all(c["is_valid"] for c in _validate(h, zh_prompt, "你好。"))  # free again
