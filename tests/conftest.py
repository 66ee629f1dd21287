"""Shared pytest fixtures."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

#: ../shared/prompts relative to the project root (real human speech, read-only; never copied here).
SHARED_PROMPTS = Path(__file__).resolve().parents[2] / "shared" / "prompts"


def _require_shared() -> Path:
    if not (SHARED_PROMPTS / "manifest.tsv").is_file():
        pytest.fail(
            f"real prompts not found at {SHARED_PROMPTS}: these tests need ../shared/prompts beside the "
            "project checkout (it is present on developer machines and in CI)",
            pytrace=False,
        )
    return SHARED_PROMPTS


@pytest.fixture(scope="session")
def shared_prompts() -> Path:
    """Directory of real speech prompts (``../shared/prompts``); fails clearly if missing."""
    return _require_shared()


@pytest.fixture(scope="session")
def prompt_manifest(shared_prompts: Path) -> dict[str, dict[str, str]]:
    """``manifest.tsv`` as ``{file name: row dict}``."""
    with open(shared_prompts / "manifest.tsv", encoding="utf-8") as f:
        return {row["file"]: row for row in csv.DictReader(f, delimiter="\t")}


# --- real-browser tests (tests/test_browser_*.py) ------------------------------------------------
def pytest_collection_modifyitems(config, items):
    """Run the ``browser`` tests last: while the session's playwright (sync API) is alive, its
    event loop counts as running in the main thread, so ``asyncio.run`` in a later test would fail."""
    items.sort(key=lambda item: item.get_closest_marker("browser") is not None)  # stable sort


@pytest.fixture(scope="session")
def browser():
    """One headless Debian chromium (``/usr/bin/chromium``, never ``playwright install``) for
    the whole session; each test opens its own context. Fails clearly if chromium is missing."""
    from browser_helpers import CHROMIUM, launch_browser
    from playwright.sync_api import sync_playwright

    if not Path(CHROMIUM).is_file():
        pytest.fail(f"{CHROMIUM} not found: install Debian's chromium (apt-get install chromium fonts-wqy-zenhei)",
                    pytrace=False)
    with sync_playwright() as pw:
        b = launch_browser(pw)
        try:
            yield b
        finally:
            b.close()
