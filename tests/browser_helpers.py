"""Helpers of the real-browser tests (``tests/test_browser_*.py``) and of
``benchmarks/click_to_sound.py``: headless Debian chromium through playwright and page actions
on the cosyweb UI (by ``elem_id``); the app process itself is :class:`serving_app.AppProcess`
(re-exported here).

Chromium flags: the issue's list, plus ``--autoplay-policy=no-user-gesture-required``. Our
clicks are trusted input events, but Gradio's HLS ``<audio autoplay>`` starts playing only
when its first segment has arrived, which under load can be seconds after the click; the flag
keeps that fallback path deterministic (the low-latency player creates its AudioContext inside
the click and needs no flag).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from serving_app import AppError, AppProcess  # noqa: F401  (re-exported)

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--autoplay-policy=no-user-gesture-required",
]
BUSY_ZH = "系统繁忙，请稍后再试"
BUSY_EN = "System busy, please try again later"
VIEWPORT = {"width": 1280, "height": 1500}


def launch_browser(playwright: Any) -> Any:
    """Headless Debian chromium (never a downloaded one) with :data:`CHROMIUM_ARGS`."""
    return playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)


# --- page actions ---------------------------------------------------------------------------------
def open_app(browser: Any, url: str) -> Any:
    """A page of the app in a fresh context (own cookies: its own client id), loaded."""
    context = browser.new_context(viewport=VIEWPORT, accept_downloads=True, locale="zh-CN")
    page = context.new_page()
    page.goto(url + "/")
    page.wait_for_selector("#cw-generate")
    page.wait_for_function("() => !!window.cosywebPlayer")
    return page


def prompt_id(page: Any) -> str:
    """The registered prompt id in the hidden ``#cw-prompt-id`` ("" if none)."""
    return page.evaluate(
        "() => (document.querySelector('#cw-prompt-id textarea, #cw-prompt-id input') || {}).value || ''")


def upload_prompt(page: Any, path: Path, timeout_s: float = 60.0) -> str:
    """Upload ``path`` as the prompt (clearing the previous one first) and wait until it is
    previewed and registered; its id."""
    clear = page.locator("#cw-prompt-audio button[aria-label='清除'], #cw-prompt-audio button[aria-label='Clear']")
    if clear.count():
        clear.first.click()
        page.wait_for_selector("#cw-prompt-audio input[type=file]", state="attached")
        page.wait_for_function("() => !(document.querySelector('#cw-prompt-id textarea, #cw-prompt-id input') || {}).value")
    page.set_input_files("#cw-prompt-audio input[type=file]", str(path))
    page.wait_for_function("() => !!(document.querySelector('#cw-prompt-id textarea, #cw-prompt-id input') || {}).value",
                           timeout=timeout_s * 1000)
    return prompt_id(page)


def set_text(page: Any, text: str) -> None:
    """Type the synthesis text (fires Gradio's change event)."""
    page.fill("#cw-text textarea", text)


def choose(page: Any, elem_id: str, label: str) -> None:
    """Pick the option whose label starts with ``label`` in the dropdown ``#elem_id``."""
    page.click(f"#{elem_id} input")
    page.locator(f"#{elem_id} [role=option]", has_text=label).first.click()


def options_of(page: Any, elem_id: str) -> list[str]:
    """The option labels of the dropdown ``#elem_id`` (opens it, then closes it with Escape)."""
    page.click(f"#{elem_id} input")
    page.wait_for_selector(f"#{elem_id} [role=option]")
    labels = page.eval_on_selector_all(f"#{elem_id} [role=option]", "els => els.map(e => e.getAttribute('aria-label'))")
    page.keyboard.press("Escape")
    page.locator(f"#{elem_id} input").blur()  # so that the next click opens the list again
    return labels


def use_player(page: Any, on: bool) -> None:
    """Tick or untick the low-latency player box."""
    box = page.locator("#cw-use-player input[type=checkbox]")
    if box.is_checked() != on:
        box.click()


def player_stats(page: Any) -> dict:
    """``window.cosywebPlayer.stats`` of the last run (None before the first)."""
    return page.evaluate("() => window.cosywebPlayer.stats")


def wait_player_end(page: Any, timeout_s: float = 60.0, statuses: tuple = ("done", "busy", "error")) -> dict:
    """Wait until the player's last run ends with one of ``statuses``; its stats."""
    page.wait_for_function(
        "(sts) => { const s = window.cosywebPlayer.stats; return !!s && sts.includes(s.status); }",
        arg=list(statuses), timeout=timeout_s * 1000)
    return player_stats(page)


def wait_player_playing(page: Any, timeout_s: float = 60.0) -> dict:
    """Wait until the player's first sample has been played (its own ``playing`` mark)."""
    page.wait_for_function("() => { const s = window.cosywebPlayer.stats; return !!s && s.playing; }",
                           timeout=timeout_s * 1000)
    return player_stats(page)


def audio_context_time(page: Any) -> float:
    """The player's AudioContext clock, seconds (-1 without a context)."""
    return page.evaluate("() => window.cosywebPlayer.ctx ? window.cosywebPlayer.ctx.currentTime : -1")


def body_text(page: Any) -> str:
    """All visible text of the page."""
    return page.evaluate("() => document.body.innerText")


def screenshot(page: Any, tmp_path: Path, name: str) -> Path:
    """Save a full-page screenshot ``tmp_path/<name>.png`` (look at them while developing)."""
    path = tmp_path / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    return path
