"""Fixtures shared by the UI handler tests (``test_ui_handlers.py``, ``test_ui_player.py``);
not a test module. Import the fixture names into a test module to use them."""

from __future__ import annotations

from pathlib import Path

import pytest
from fakes import FakeEngine, service_factory  # noqa: F401  (a fixture that make_ui needs)

from cosyweb.ui.handlers import UIHandlers


@pytest.fixture
def zh_prompt(shared_prompts: Path) -> str:
    """The path of a real Mandarin prompt recording of ../shared/prompts."""
    return str(shared_prompts / "cosyvoice__zero_shot_prompt.wav")


@pytest.fixture
def make_ui(service_factory, tmp_path):  # noqa: F811
    """``make(engine=None, **settings) -> (UIHandlers, TTSService, engine)``: the UI handlers over
    a started service (a :class:`fakes.FakeEngine` of 2 chunks × 1600 samples by default), with
    its outputs under ``tmp_path/out``."""

    def make(engine: FakeEngine | None = None, **settings):
        engine = engine or FakeEngine(n_chunks=2, chunk_samples=1600)
        svc = service_factory(engine, output_dir=tmp_path / "out", **settings)
        return UIHandlers(svc, svc.settings), svc, engine

    return make
