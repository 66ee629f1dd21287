"""Real-browser end-to-end tests of the web UI (headless Debian chromium via playwright) against
a real ``python app.py`` process, with real prompts from ``../shared/prompts``.

Scenarios of the issue: (1) clone a Mandarin prompt with annotated text and an emotion: audio
plays (low-latency player; and Gradio's streaming fallback) and the wav downloads; (2) nothing
uploaded: a clear Chinese message and the page still works; (3) an unsupported dialect is marked
and refused; (4) an invalid annotation is shown inline with its position; (6) English labels;
(7) the pronunciation helper inserts an annotation. Also: Gradio's output boxes are hidden while the
low-latency player runs the jobs and shown for a run on Gradio's path; the status line follows a
language switch; a previous run's error line goes when the text changes. The busy scenarios (5, and the English busy
message) are in ``test_browser_busy.py``; the player's timeline in ``test_browser_player.py``.
Each test saves a screenshot of its final state under its ``tmp_path``.
"""

from __future__ import annotations

import time

import httpx
import numpy as np
import pytest
import soundfile as sf
from browser_helpers import (
    audio_context_time,
    body_text,
    choose,
    open_app,
    options_of,
    screenshot,
    set_text,
    upload_prompt,
    use_player,
    wait_player_end,
    wait_player_playing,
)
from serving_app import running_app

pytestmark = [pytest.mark.browser, pytest.mark.timeout(300)]

MANDARIN = "cosyvoice__zero_shot_prompt.wav"
ANNOTATED = "她[h][ào]干净，今天是2026年11月30日。"


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    with running_app(tmp_path_factory.mktemp("browser-app")) as proc:
        yield proc


@pytest.fixture
def page(browser, app):
    pg = open_app(browser, app.url)
    try:
        yield pg
    finally:
        pg.context.close()


def _download(page, selector: str, tmp_path):
    with page.expect_download() as info:
        page.click(selector)
    path = tmp_path / info.value.suggested_filename
    info.value.save_as(path)
    return path


# --- 1. clone a Mandarin prompt --------------------------------------------------------------
def test_clone_with_annotation_and_emotion_plays_and_downloads_a_wav(page, app, shared_prompts, tmp_path):
    upload_prompt(page, shared_prompts / MANDARIN)
    set_text(page, ANNOTATED)
    choose(page, "cw-emotion", "开心")
    page.click("#cw-generate")
    st = wait_player_playing(page)
    ctx_t = audio_context_time(page)
    assert st["playing"] and ctx_t >= st["first_start_ctx_s"] > 0  # the first buffer's start has passed
    assert st["t_click"] < st["t_request"] < st["t_headers"] < st["t_first_byte"] <= st["t_first_scheduled"]
    time.sleep(0.3)
    assert audio_context_time(page) > ctx_t  # the clock that plays the buffers runs
    st = wait_player_end(page)
    assert st["status"] == "done" and st["http_status"] == 200, st
    path = _download(page, "#cw-player-download", tmp_path)
    data, sr = sf.read(path, dtype="float32")
    info = sf.info(path)
    assert info.subtype == "PCM_16" and sr == st["sample_rate"] == 22050
    assert len(data) == st["n_samples"]
    assert 2.0 <= len(data) / sr <= 10.0  # ~18 syllables
    assert float(np.sqrt(np.mean(data**2))) > 0.01
    job = httpx.get(f"{app.url}/api/v1/jobs/{st['job_id']}").json()
    assert job["status"] == "done" and abs(job["result"]["duration_s"] - len(data) / sr) < 0.01, job
    assert "点击到出声" in page.inner_text("#cw-player")
    # The player's line is the result: Gradio's (empty) output boxes are not shown beside it.
    assert not page.is_visible("#cw-out-stream") and not page.is_visible("#cw-out-file")
    assert page.is_visible("#cw-player-download")
    screenshot(page, tmp_path, "1-player")


def test_gradio_streaming_audio_is_the_fallback(page, shared_prompts, tmp_path):
    upload_prompt(page, shared_prompts / MANDARIN)
    set_text(page, "你好，欢迎使用。")
    use_player(page, False)
    assert page.is_visible("#cw-out-stream") and page.is_visible("#cw-out-file")
    page.evaluate("""() => { window._audioPlaying = null;
        document.addEventListener('playing', (e) => { if (e.target.closest('#cw-out-stream'))
            window._audioPlaying = performance.now(); }, true); }""")
    page.click("#cw-generate")
    page.wait_for_function("() => window._audioPlaying !== null", timeout=60_000)
    page.wait_for_function("() => document.querySelector('#cw-out-stream audio').currentTime > 0")
    page.wait_for_selector("#cw-status:has-text('RTF')", timeout=60_000)
    assert page.evaluate("() => window.cosywebPlayer.lastRoute") == "gradio"
    path = _download(page, "#cw-out-file a[download]", tmp_path)
    data, sr = sf.read(path, dtype="float32")
    assert sr == 22050 and sf.info(path).subtype == "PCM_16" and 0.8 <= len(data) / sr <= 6.0
    # The status line is re-rendered in the new language on a switch.
    page.click("#cw-lang label:has-text('English')")
    page.wait_for_selector("#cw-status:has-text('first chunk')", timeout=10_000)
    assert "首包" not in page.inner_text("#cw-status")
    screenshot(page, tmp_path, "1-gradio-fallback")


def test_a_run_that_falls_back_to_gradio_shows_its_audio_and_file(page, shared_prompts, tmp_path):
    upload_prompt(page, shared_prompts / MANDARIN)
    set_text(page, "你好，欢迎使用。")
    assert not page.is_visible("#cw-out-stream")  # player ticked: its line is where the result goes
    # The player box stays ticked, but no registered prompt is visible to the player (as right after
    # an upload, before its registration answers): the click goes to Gradio's path.
    page.evaluate("() => { document.querySelector('#cw-prompt-id textarea, #cw-prompt-id input').value = ''; }")
    page.click("#cw-generate")
    page.wait_for_selector("#cw-status:has-text('RTF')", timeout=60_000)
    assert page.evaluate("() => window.cosywebPlayer.lastRoute") == "gradio"
    assert page.is_visible("#cw-out-stream") and page.is_visible("#cw-out-file")
    path = _download(page, "#cw-out-file a[download]", tmp_path)
    assert sf.info(path).frames > 0
    screenshot(page, tmp_path, "1-gradio-fallback-ticked")


# --- 2. nothing uploaded ---------------------------------------------------------------------
def test_generate_without_a_prompt_says_so_and_the_page_keeps_working(page, shared_prompts, tmp_path):
    set_text(page, "你好。")
    page.click("#cw-generate")
    page.wait_for_function("() => document.body.innerText.includes('请先上传或录制提示音频')", timeout=10_000)
    screenshot(page, tmp_path, "2-no-prompt")
    # Prompt uploaded, text empty: the player's 422 answer is shown in the page.
    upload_prompt(page, shared_prompts / MANDARIN)
    set_text(page, "")
    page.click("#cw-generate")
    st = wait_player_end(page, statuses=("error",))
    assert st["http_status"] == 422 and "请输入要合成的文本" in page.inner_text("#cw-player")
    # Still works.
    set_text(page, "你好。")
    page.click("#cw-generate")
    assert wait_player_end(page)["status"] == "done"
    screenshot(page, tmp_path, "2-after")


# --- 3. an unsupported dialect ------------------------------------------------------------------
def test_unsupported_dialect_is_marked_and_refused(page, shared_prompts, tmp_path):
    labels = options_of(page, "cw-dialect")
    assert labels[0] == "普通话" and "四川话（需 CosyVoice3 引擎）" in labels and len(labels) == 18
    upload_prompt(page, shared_prompts / MANDARIN)
    set_text(page, "你好。")
    choose(page, "cw-dialect", "四川话")
    page.wait_for_selector("#cw-option-check:has-text('四川话')")
    assert "CosyVoice3" in page.inner_text("#cw-option-check")
    page.click("#cw-generate")
    st = wait_player_end(page, statuses=("error",))
    panel = page.inner_text("#cw-player")
    assert st["http_status"] == 422 and "四川话" in panel and "CosyVoice3" in panel, panel
    screenshot(page, tmp_path, "3-dialect")


# --- 4. an invalid annotation ---------------------------------------------------------------------
def test_invalid_annotation_is_shown_inline_with_its_position(page, tmp_path):
    set_text(page, "今天天气[hoo4]")
    page.wait_for_selector("#cw-text-check:has-text('[hoo4]')")
    assert "第5个字符处的拼音标注 [hoo4] 无效" in page.inner_text("#cw-text-check")
    screenshot(page, tmp_path, "4-annotation")


def test_an_error_line_goes_when_the_text_changes(page, shared_prompts, tmp_path):
    upload_prompt(page, shared_prompts / MANDARIN)
    set_text(page, "她[hoo4]干净")
    page.click("#cw-generate")
    st = wait_player_end(page, statuses=("error",))
    assert st["http_status"] == 422 and "[hoo4]" in page.inner_text("#cw-player")
    set_text(page, "她干净")
    page.wait_for_selector("#cw-text-check:has-text('✓')")
    page.wait_for_function("() => !document.querySelector('#cw-player').innerText.includes('hoo4')", timeout=5_000)
    assert "✗" not in page.inner_text("#cw-player")
    screenshot(page, tmp_path, "4-error-cleared")


# --- 6. English ---------------------------------------------------------------------------------
def test_switching_to_english_relabels_the_page(page, tmp_path):
    assert page.inner_text("#cw-generate").strip() == "生成"
    page.click("#cw-lang label:has-text('English')")
    page.wait_for_function("() => document.querySelector('#cw-generate').innerText.trim() === 'Generate'")
    text = body_text(page)
    for label in ("Text to synthesise", "Dialect", "Emotion", "Speed", "Low-latency player", "Stop", "Prompt text"):
        assert label in text, label
    ours = page.evaluate("() => Array.from(document.querySelectorAll('[id^=cw-]')).map(e => e.innerText).join(' ')")
    assert "方言" not in ours and "合成文本" not in ours and "生成" not in ours  # (Gradio's own footer follows the browser)
    set_text(page, "今天天气[hoo4]")
    page.wait_for_selector("#cw-text-check:has-text('invalid pinyin annotation [hoo4] at character 5')")
    screenshot(page, tmp_path, "6-english")


# --- 7. pronunciation helper ----------------------------------------------------------------------
def test_pronunciation_helper_inserts_an_annotation(page, tmp_path):
    set_text(page, "银行的行长走在行人中间")
    page.click("#cw-poly > button")  # open the accordion
    page.click("#cw-poly-list")
    page.wait_for_selector("#cw-poly-note:has-text('多音字')")
    assert page.input_value("#cw-poly-char input").startswith("第2字「行」")
    readings = options_of(page, "cw-poly-reading")
    current = page.input_value("#cw-poly-reading input")
    other = next(r for r in readings if r != current)  # a reading other than the guessed one
    choose(page, "cw-poly-reading", other)
    page.click("#cw-poly-insert")
    page.wait_for_selector(f"#cw-poly-note:has-text('[{other}]')")
    assert page.input_value("#cw-text textarea") == f"银[{other}]的行长走在行人中间"
    assert "第2字「行」" in page.inner_text("#cw-poly-note")
    page.wait_for_selector("#cw-text-check:has-text('✓')")  # the annotated text passes validation
    screenshot(page, tmp_path, "7-helper")
