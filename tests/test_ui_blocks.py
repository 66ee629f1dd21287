"""The Gradio Blocks: API endpoints, Gradio-side limits switched off (admission is ours),
the language switch relabels everything, the dialect list, and the shipped examples work."""

from __future__ import annotations

import pytest
from fakes import FakeEngine, service_factory  # noqa: F401

from cosyweb.options import DIALECTS, Mode, SynthesisOptions
from cosyweb.ui import i18n
from cosyweb.ui.blocks import build_blocks, example_rows

pytestmark = pytest.mark.timeout(60)


@pytest.fixture
def built(service_factory, tmp_path):
    engine = FakeEngine(modes=frozenset({Mode.ZERO_SHOT, Mode.CROSS_LINGUAL}),
                        description_zh="测试引擎", description_en="test engine")
    svc = service_factory(engine, output_dir=tmp_path / "out")
    return build_blocks(svc, svc.settings), svc


def _fns(demo):
    fns = demo.fns.values() if isinstance(demo.fns, dict) else demo.fns
    return list(fns)


def test_public_api_endpoints_and_no_gradio_side_limits(built):
    demo, _ = built
    by_name = {f.api_name: f for f in _fns(demo) if f.api_name}
    assert {"synthesize_stream", "synthesize"} <= set(by_name)
    for name in ("synthesize_stream", "synthesize"):
        assert by_name[name].concurrency_limit is None
        assert by_name[name].api_visibility == "public"
    assert demo._queue.max_size is None
    public = {f.api_name for f in _fns(demo) if f.api_visibility == "public"}
    assert public == {"synthesize_stream", "synthesize"}  # UI helpers are not API surface


def test_language_switch_relabels_labels_choices_and_buttons(built):
    demo, _ = built
    relabel = next(f.fn for f in _fns(demo) if getattr(f.fn, "__name__", "") == "relabel")
    en, zh = relabel("en"), relabel("zh")
    assert len(en) == len(zh) > 20
    en_labels = {u.get("label") for u in en} | {u.get("value") for u in en}
    zh_labels = {u.get("label") for u in zh} | {u.get("value") for u in zh}
    for label in ("Dialect", "Emotion", "Speed", "Volume", "Seed", "Generate", "Stop", "Prompt text"):
        assert label in en_labels
    for label in ("方言", "情感", "语速", "音量", "随机种子", "生成", "停止", "提示文本"):
        assert label in zh_labels
    dialect_en = next(u for u in en if u.get("label") == "Dialect")
    assert ("Sichuanese (needs the CosyVoice3 engine)", "sichuan") in dialect_en["choices"]
    assert any("test engine" in str(u.get("value")) for u in en)
    mode_en = next(u for u in en if u.get("label") == "Mode")
    assert [v for _, v in mode_en["choices"]] == ["zero_shot", "cross_lingual"]
    assert "Instruct" in mode_en["info"]


def test_dialect_choices_mark_what_needs_cosyvoice3():
    zh = i18n.dialect_choices({"mandarin"}, "zh")
    assert len(zh) == 18 == len(DIALECTS)
    assert zh[0] == ("普通话", "mandarin")
    assert ("四川话（需 CosyVoice3 引擎）", "sichuan") in zh
    all_ok = i18n.dialect_choices(set(DIALECTS), "zh")
    assert ("四川话", "sichuan") in all_ok


def test_every_ui_string_has_both_languages():
    for key, (zh, en) in i18n.STRINGS.items():
        if key != "status_idle":
            assert zh and en, key


def test_bilingual_puts_the_session_language_first():
    from cosyweb.errors import BusyError

    assert i18n.bilingual(BusyError(), "zh") == "系统繁忙，请稍后再试 / System busy, please try again later"
    assert i18n.bilingual(BusyError(), "en") == "System busy, please try again later / 系统繁忙，请稍后再试"


def test_shipped_examples_pass_the_prompt_checks_and_the_text_front_end(service_factory, tmp_path):
    svc = service_factory(FakeEngine(), output_dir=tmp_path)
    rows = example_rows()
    assert len(rows) >= 2, "assets/examples/*.wav missing: run python scripts/make_example_prompts.py"
    for path, _prompt_text, text in rows:
        prompt = svc.load_prompt(path)
        assert prompt.speech_s > 2.0 and not prompt.warnings
        assert svc.analyze_text(text, SynthesisOptions())
