"""Real-browser tests of the low-latency player's functional properties (never its timing:
click-to-sound figures come from ``benchmarks/click_to_sound.py``).

- a 20-second text: the recorded timeline is complete and ordered, and the scheduled playback
  is gapless (its length equals the audio's, plus the restart lead of any underrun);
- a throttled network makes it underrun: it counts the underruns, restarts ahead, and still
  plays and offers every sample;
- the downloaded wav holds exactly the samples the server makes for the same inputs and seed
  (lossless, at the engine's rate), and the job is counted in the service's metrics;
- the stop button aborts the fetch and the server cancels the job; the page then shows one stop
  line, and it follows a switch of the UI language.
"""

from __future__ import annotations

import io
import re
import time

import httpx
import numpy as np
import pytest
import soundfile as sf
from browser_helpers import (
    open_app,
    screenshot,
    set_text,
    upload_prompt,
    wait_player_end,
    wait_player_playing,
)
from serving_app import running_app

pytestmark = [pytest.mark.browser, pytest.mark.timeout(300)]

MANDARIN = "cosyvoice__zero_shot_prompt.wav"
#: About 20 s of speech (4.5 syllables per second).
TEXT_20S = ("今天天气很好，我们一起去公园散步吧。希望你以后能够做的比我还好呦。"
            "银行的行长走在行人中间，觉得很好玩。明天上午九点，我们在学校门口见面，不见不散。"
            "这个周末，我打算去图书馆看书，然后和朋友一起吃晚饭。")
RESTART_LEAD_S = 0.05  # player.js


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    with running_app(tmp_path_factory.mktemp("browser-player")) as proc:
        yield proc


@pytest.fixture
def page(browser, app, shared_prompts):
    pg = open_app(browser, app.url)
    try:
        upload_prompt(pg, shared_prompts / MANDARIN)
        yield pg
    finally:
        pg.context.close()


def _completed(app) -> float:
    m = re.search(r"^cosyweb_jobs_completed_total(?:\{[^}]*\})? ([0-9.e+]+)$", httpx.get(app.url + "/metrics").text, re.M)
    return float(m.group(1)) if m else 0.0


def _scheduled_s(st: dict) -> float:
    return (st["playback_end_at"] - st["first_sound_at"]) / 1000.0


def test_a_20_second_text_is_scheduled_gaplessly_with_a_complete_timeline(page, tmp_path):
    set_text(page, TEXT_20S)
    page.click("#cw-generate")
    st = wait_player_end(page, timeout_s=120)
    assert st["status"] == "done", st
    audio_s = st["n_samples"] / st["sample_rate"]
    assert audio_s > 15.0, audio_s
    order = ["t_click", "t_request", "t_headers", "t_first_byte", "t_first_scheduled", "t_done"]
    assert all(st[a] <= st[b] for a, b in zip(order, order[1:])), st
    assert st["first_sound_at"] > st["t_first_scheduled"] and st["click_to_sound_ms"] > 0
    assert st["n_buffers"] >= 2 and isinstance(st["underruns"], int) and len(st["underrun_at"]) == st["underruns"]
    # Back to back: playback lasts exactly the audio, plus the restart lead of each underrun.
    expected_s = audio_s + st["underruns"] * RESTART_LEAD_S
    assert abs(_scheduled_s(st) - expected_s) < 0.03 + 0.02 * st["underruns"], (_scheduled_s(st), expected_s)
    screenshot(page, tmp_path, "player-20s")


def test_a_slow_network_underruns_are_counted_and_every_sample_still_plays(page, tmp_path):
    cdp = page.context.new_cdp_session(page)
    # 20 KB/s is under the real-time rate of 22.05 kHz PCM16 (44.1 KB/s): the player must underrun.
    cdp.send("Network.emulateNetworkConditions",
             {"offline": False, "latency": 0, "downloadThroughput": 20_000, "uploadThroughput": -1})
    set_text(page, "今天天气很好，我们一起去公园散步吧。")
    page.click("#cw-generate")
    st = wait_player_end(page, timeout_s=120)
    cdp.send("Network.emulateNetworkConditions",
             {"offline": False, "latency": 0, "downloadThroughput": -1, "uploadThroughput": -1})
    assert st["status"] == "done" and st["underruns"] >= 1, st
    audio_s = st["n_samples"] / st["sample_rate"]
    assert _scheduled_s(st) >= audio_s + st["underruns"] * RESTART_LEAD_S - 0.03  # nothing dropped
    assert f"卡顿 {st['underruns']} 次" in page.inner_text("#cw-player")  # the done line names them
    screenshot(page, tmp_path, "player-underruns")


def test_the_download_is_lossless_and_the_job_is_counted(page, app, tmp_path):
    text = "她[h][ào]干净，今天是2026年11月30日。"
    set_text(page, text)
    page.fill("#cw-seed input", "7")
    page.locator("#cw-seed input").blur()
    before = _completed(app)
    page.click("#cw-generate")
    st = wait_player_end(page)
    assert st["status"] == "done", st
    with page.expect_download() as info:
        page.click("#cw-player-download")
    got, sr = sf.read(info.value.path(), dtype="int16")
    pid = page.evaluate("() => document.querySelector('#cw-prompt-id textarea, #cw-prompt-id input').value")
    ref = httpx.post(app.url + "/api/v1/tts", json={"prompt_id": pid, "text": text, "seed": 7}, timeout=60)
    assert ref.status_code == 200
    want, want_sr = sf.read(io.BytesIO(ref.content), dtype="int16")
    assert sr == want_sr == st["sample_rate"]
    assert np.array_equal(got, want)  # the same PCM16 samples, nothing re-encoded
    assert _completed(app) >= before + 2  # the player's job and the reference, in the same metrics


def test_stop_aborts_the_stream_and_the_server_cancels_the_job(page, app, tmp_path):
    set_text(page, TEXT_20S * 3)
    page.click("#cw-generate")
    st = wait_player_playing(page, timeout_s=60)
    page.click("#cw-stop")
    st = wait_player_end(page, statuses=("stopped",))
    assert "已停止" in page.inner_text("#cw-player")
    deadline = time.monotonic() + 15
    while True:
        job = httpx.get(f"{app.url}/api/v1/jobs/{st['job_id']}").json()
        if job["status"] == "cancelled":
            break
        assert time.monotonic() < deadline, job
        time.sleep(0.1)
    assert httpx.get(app.url + "/api/v1/stats").json()["active_jobs"] == 0
    screenshot(page, tmp_path, "player-stopped")


def test_stop_shows_one_stop_line_that_follows_the_language_switch(page, tmp_path):
    page.click("#cw-lang label:has-text('English')")
    page.wait_for_function("() => document.querySelector('#cw-generate').innerText.trim() === 'Generate'")
    set_text(page, "希望你以后能够做的比我还好呦。" * 20)
    page.click("#cw-generate")
    wait_player_playing(page, timeout_s=60)
    page.click("#cw-stop")
    wait_player_end(page, statuses=("stopped",))
    page.wait_for_timeout(1500)  # Gradio's own stop event has answered
    assert page.inner_text("#cw-player").strip() == "■ Stopped"
    assert page.inner_text("#cw-status").strip() == ""  # one stop line, not two
    page.click("#cw-lang label:has-text('中文')")
    page.wait_for_function("() => document.querySelector('#cw-generate').innerText.trim() === '生成'")
    page.wait_for_selector("#cw-player:has-text('■ 已停止')", timeout=5_000)
    page.wait_for_timeout(1500)
    text = page.evaluate("() => document.querySelector('#cw-player').innerText + document.querySelector('#cw-status').innerText")
    assert "Stopped" not in text and text.count("已停止") == 1, text
    screenshot(page, tmp_path, "player-stopped-zh")
