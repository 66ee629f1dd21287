"""Real-browser tests of overload (issue scenario 5, and the busy message of scenario 6) against
``python app.py --max-queue 1 --concurrency 1``: one job runs, one waits, the rest are refused
with ``系统繁忙，请稍后再试`` shown in the page, on the low-latency player's path and on Gradio's
(the streaming event's validator). Screenshots of the final states go to ``tmp_path``.
"""

from __future__ import annotations

import threading
import time

import httpx
import pytest
from browser_helpers import (
    BUSY_EN,
    BUSY_ZH,
    open_app,
    screenshot,
    set_text,
    upload_prompt,
    use_player,
    wait_player_end,
)
from serving_app import running_app

pytestmark = [pytest.mark.browser, pytest.mark.timeout(300)]

MANDARIN = "cosyvoice__zero_shot_prompt.wav"
#: About 12 s of speech: the first job is still being computed when the last page clicks.
LONG_TEXT = "希望你以后能够做的比我还好呦。" * 3
N_PAGES = 5


@pytest.fixture(scope="module")
def busy_app(tmp_path_factory):
    with running_app(tmp_path_factory.mktemp("browser-busy"), "--max-queue", "1", "--concurrency", "1") as proc:
        yield proc


def _stats(url: str) -> dict:
    return httpx.get(url + "/api/v1/stats", timeout=10).json()


def _capacity(url: str) -> int:
    """Jobs the service admits at once: active slots (a multiple of ``--concurrency``) + queue."""
    st = _stats(url)
    return int(st["max_active_jobs"]) + int(st["max_queue"])


class _Occupy:
    """Fill the service (every active slot and the queue) with long streaming API jobs, one per
    API key (each its own client); closing the streams cancels them."""

    def __init__(self, url: str, prompt_path) -> None:
        self.url, self.n = url, _capacity(url)
        with open(prompt_path, "rb") as f:
            r = httpx.post(url + "/api/v1/prompts", files={"prompt_audio": f}, timeout=60)
        r.raise_for_status()
        self.prompt_id = r.json()["prompt_id"]
        self.stop = threading.Event()
        self.threads = [threading.Thread(target=self._one, args=(i,), daemon=True) for i in range(self.n)]

    def _one(self, i: int) -> None:
        body = {"prompt_id": self.prompt_id, "text": "今天天气很好，我们一起去公园散步吧。" * 30}
        while not self.stop.is_set():  # refused (places held for clients refused earlier): retry
            with httpx.stream("POST", self.url + "/api/v1/tts/stream", json=body,
                              headers={"X-API-Key": f"occupy-{i}"}, timeout=120) as resp:
                if resp.status_code == 503:
                    resp.read()
                    time.sleep(0.5)
                    continue
                for _ in resp.iter_raw(4096):
                    if self.stop.is_set():
                        return
                return

    def __enter__(self) -> "_Occupy":
        for th in self.threads:
            th.start()
            time.sleep(0.2)
        deadline = time.monotonic() + 60  # holds of earlier refusals last Retry-After + 3 s at most
        while True:
            st = _stats(self.url)
            if st["active_jobs"] + st["queue_depth"] >= self.n:
                return self
            assert time.monotonic() < deadline, st
            time.sleep(0.05)

    def __exit__(self, *exc) -> None:
        self.stop.set()
        for th in self.threads:
            th.join(30)
        deadline = time.monotonic() + 30
        while _stats(self.url)["active_jobs"] and time.monotonic() < deadline:
            time.sleep(0.1)


# --- 5. several pages click at once --------------------------------------------------------------
def test_overload_some_pages_are_refused_busy_and_the_others_play(browser, busy_app, shared_prompts, tmp_path):
    pages = [open_app(browser, busy_app.url) for _ in range(N_PAGES)]  # one context (client) each
    try:
        for pg in pages:
            upload_prompt(pg, shared_prompts / MANDARIN)
            set_text(pg, LONG_TEXT)
        for pg in pages:
            pg.click("#cw-generate", no_wait_after=True)
        results = [wait_player_end(pg, timeout_s=120) for pg in pages]
        busy = [i for i, st in enumerate(results) if st["status"] == "busy"]
        played = [i for i, st in enumerate(results) if st["status"] == "done"]
        assert busy and played and len(busy) + len(played) == N_PAGES, results
        assert len(played) <= _capacity(busy_app.url) + 1, results  # (a late click may get a freed slot)
        for i in busy:
            assert results[i]["http_status"] == 503
            assert BUSY_ZH in pages[i].inner_text("#cw-player")
        for i in played:
            st = results[i]
            assert st["playing"] and st["n_samples"] / st["sample_rate"] > 6.0, st
        for i, pg in enumerate(pages):
            screenshot(pg, tmp_path, f"5-page{i}-{results[i]['status']}")
        assert httpx.get(busy_app.url + "/healthz").status_code == 200
    finally:
        for pg in pages:
            pg.context.close()


# --- 6. the busy message follows the UI language, on both paths -----------------------------------
def test_busy_message_in_english_on_the_player_and_on_gradio(browser, busy_app, shared_prompts, tmp_path):
    page = open_app(browser, busy_app.url)
    try:
        upload_prompt(page, shared_prompts / MANDARIN)
        set_text(page, "你好。")
        page.click("#cw-lang label:has-text('English')")
        page.wait_for_function("() => document.querySelector('#cw-generate').innerText.trim() === 'Generate'")
        with _Occupy(busy_app.url, shared_prompts / MANDARIN):
            page.click("#cw-generate")
            st = wait_player_end(page, statuses=("busy", "error", "done"))
            assert st["status"] == "busy", st
            assert page.inner_text("#cw-player").startswith(f"✗ {BUSY_EN} / {BUSY_ZH}")
            screenshot(page, tmp_path, "6-busy-player")
            use_player(page, False)  # Gradio's path: the event's validator refuses before queueing
            page.click("#cw-generate")
            assert page.inner_text("#cw-player").strip() == ""  # the player's old message is cleared
            page.wait_for_function(f"() => document.body.innerText.includes('{BUSY_EN} / {BUSY_ZH}')", timeout=10_000)
            assert page.evaluate("() => window.cosywebPlayer.lastRoute") == "gradio"
            screenshot(page, tmp_path, "6-busy-gradio")
    finally:
        page.context.close()
