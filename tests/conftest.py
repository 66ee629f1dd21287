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
