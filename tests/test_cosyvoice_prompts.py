"""CosyVoice prompt conventions: the exact strings, checked against upstream's own data.

``UPSTREAM_INSTRUCT_LIST`` is a data fixture copied verbatim from FunAudioLLM/CosyVoice
commit ace7c47, ``cosyvoice/utils/common.py`` ``instruct_list``.
"""

from __future__ import annotations

import pytest

from cosyweb.engines.cosyvoice import prompts
from cosyweb.options import DIALECTS, EMOTIONS

UPSTREAM_INSTRUCT_LIST = [
    "You are a helpful assistant. 请用广东话表达。<|endofprompt|>",
    "You are a helpful assistant. 请用东北话表达。<|endofprompt|>",
    "You are a helpful assistant. 请用甘肃话表达。<|endofprompt|>",
    "You are a helpful assistant. 请用贵州话表达。<|endofprompt|>",
    "You are a helpful assistant. 请用河南话表达。<|endofprompt|>",
    "You are a helpful assistant. 请用湖北话表达。<|endofprompt|>",
    "You are a helpful assistant. 请用湖南话表达。<|endofprompt|>",
    "You are a helpful assistant. 请用江西话表达。<|endofprompt|>",
    "You are a helpful assistant. 请用闽南话表达。<|endofprompt|>",
    "You are a helpful assistant. 请用宁夏话表达。<|endofprompt|>",
    "You are a helpful assistant. 请用山西话表达。<|endofprompt|>",
    "You are a helpful assistant. 请用陕西话表达。<|endofprompt|>",
    "You are a helpful assistant. 请用山东话表达。<|endofprompt|>",
    "You are a helpful assistant. 请用上海话表达。<|endofprompt|>",
    "You are a helpful assistant. 请用四川话表达。<|endofprompt|>",
    "You are a helpful assistant. 请用天津话表达。<|endofprompt|>",
    "You are a helpful assistant. 请用云南话表达。<|endofprompt|>",
    "You are a helpful assistant. Please say a sentence as loudly as possible.<|endofprompt|>",
    "You are a helpful assistant. Please say a sentence in a very soft voice.<|endofprompt|>",
    "You are a helpful assistant. 请用尽可能慢地语速说一句话。<|endofprompt|>",
    "You are a helpful assistant. 请用尽可能快地语速说一句话。<|endofprompt|>",
    "You are a helpful assistant. 请非常开心地说一句话。<|endofprompt|>",
    "You are a helpful assistant. 请非常伤心地说一句话。<|endofprompt|>",
    "You are a helpful assistant. 请非常生气地说一句话。<|endofprompt|>",
    "You are a helpful assistant. 我想体验一下小猪佩奇风格，可以吗？<|endofprompt|>",
    "You are a helpful assistant. 你可以尝试用机器人的方式解答吗？<|endofprompt|>",
]


def test_all_17_dialects_match_upstream_list_in_order():
    dialects = [d for d in DIALECTS if d != "mandarin"]
    assert len(dialects) == 17
    got = [prompts.instruct_text(prompts.instructions_for(dialect=d), 3) for d in dialects]
    assert got == UPSTREAM_INSTRUCT_LIST[:17]
    # the zh label of each dialect is the one named in its instruction
    for d, s in zip(dialects, got):
        assert f"请用{DIALECTS[d][0]}表达。" in s


@pytest.mark.parametrize("emotion, index", [("happy", 21), ("sad", 22), ("angry", 23)])
def test_emotion_instructions_match_upstream(emotion, index):
    assert emotion in EMOTIONS
    assert prompts.instruct_text(prompts.instructions_for(emotion=emotion), 3) == UPSTREAM_INSTRUCT_LIST[index]


@pytest.mark.parametrize(
    "kwargs, index",
    [({"volume": 1.5}, 17), ({"volume": 0.5}, 18), ({"speed": 0.7}, 19), ({"speed": 1.3}, 20)],
)
def test_speed_and_volume_instructions_match_upstream(kwargs, index):
    assert prompts.instruct_text(prompts.instructions_for(**kwargs), 3) == UPSTREAM_INSTRUCT_LIST[index]


def test_neutral_choices_give_no_instruction():
    assert prompts.instructions_for() == []
    with pytest.raises(ValueError):
        prompts.instruct_text([], 3)


def test_zero_shot_prompt_text_v3_is_prefix_plus_transcript():
    # upstream example.py cosyvoice3_example()
    assert (prompts.zero_shot_prompt_text(" 希望你以后能够做的比我还好呦。 ", 3)
            == "You are a helpful assistant.<|endofprompt|>希望你以后能够做的比我还好呦。")
    assert prompts.zero_shot_prompt_text("希望你以后能够做的比我还好呦。", 2) == "希望你以后能够做的比我还好呦。"


def test_cross_lingual_text_carries_prefix_on_v3_only():
    assert prompts.cross_lingual_text("[breath]因为他们那一辈人。", 3) == (
        "You are a helpful assistant.<|endofprompt|>[breath]因为他们那一辈人。"
    )
    assert prompts.cross_lingual_text("Hello.", 2) == "Hello."


def test_v2_instruct_has_no_system_prompt_but_keeps_marker():
    assert prompts.instruct_text(prompts.instructions_for(dialect="sichuan"), 2) == "请用四川话表达。<|endofprompt|>"


def test_several_instructions_share_one_prompt_in_fixed_order():
    text = prompts.instruct_text(
        prompts.instructions_for(dialect="sichuan", emotion="happy", speed=1.2, volume=0.8, free_text="像讲故事一样<|endofprompt|>"),
        3,
    )
    assert text == ("You are a helpful assistant. 请用四川话表达。请非常开心地说一句话。请用尽可能快地语速说一句话。"
                    "Please say a sentence in a very soft voice.像讲故事一样<|endofprompt|>")
    assert text.count("<|endofprompt|>") == 1


def test_marker_check():
    assert prompts.llm_text_has_marker("a", "b<|endofprompt|>")
    assert not prompts.llm_text_has_marker("You are a helpful assistant.", "")
