"""The real CosyVoice3 code, unmodified, on a tiny randomly initialised model, end to end on the CPU.

Run it with a CosyVoice checkout (nothing else is downloaded)::

    bash scripts/cosyvoice_test_env.sh /path/to/CosyVoice      # once, into the current env
    COSYVOICE_ROOT=/path/to/CosyVoice python -m pytest -m cosyvoice_real tests/test_cosyvoice_real.py -s

Skipped, with this reason shown, unless ``COSYVOICE_ROOT`` is set. It covers the real config
loading (hyperpyyaml, ``AutoModel``), the tokenizer's special-token ids, every mode, streaming,
the ``token_hop_len`` fix, the ``<|endofprompt|>`` hang guard, seeds, the speaker cache and
the import side effects. ``-s`` prints the measured figures.

The tiny LLM never stops early (its stop rows are zeroed, see ``tests/cosyvoice_tiny.py``),
so every call returns exactly ``20 x (text tokens) x 960`` samples: the assertions use that.
"""

from __future__ import annotations

import copy
import logging
import os
import random
import sys
import threading
import time
from pathlib import Path

import pytest

ROOT_ENV = os.environ.get("COSYVOICE_ROOT", "")
pytestmark = [
    pytest.mark.cosyvoice_real,
    pytest.mark.skipif(not ROOT_ENV, reason="real-code test: set COSYVOICE_ROOT=/path/to/CosyVoice after "
                                            "`bash scripts/cosyvoice_test_env.sh /path/to/CosyVoice`"),
    pytest.mark.timeout(900),
]

SR = 24000
SAMPLES_PER_TOKEN = 960  # 25 speech tokens per second at 24 kHz
HOLD = int(SR * 0.040)  # the adapter holds back 40 ms per segment for its fade-out
TRANSCRIPT = "希望你以后能够做的比我还好呦。"
SHORT = "你好。"
LONG = "今天天气很不错。"  # 8 text tokens -> 160 speech tokens: enough to show the hop growing to 100


@pytest.fixture(scope="session")
def real(tmp_path_factory):
    """(engine, tokenizer, figures) on a freshly built tiny model; side effects measured around load()."""
    cache = tmp_path_factory.mktemp("cache")
    for var in ("HF_HOME", "MPLCONFIGDIR", "XDG_CACHE_HOME"):
        os.environ.setdefault(var, str(cache / var.lower()))
    if "cosyvoice" in sys.modules and not str(getattr(sys.modules["cosyvoice"], "__file__", "")).startswith(
        str(Path(ROOT_ENV).resolve())
    ):
        pytest.fail("another `cosyvoice` package is already imported (the contract tests' fake?): run this file "
                    "alone: COSYVOICE_ROOT=... pytest -m cosyvoice_real tests/test_cosyvoice_real.py", pytrace=False)
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    sys.path.insert(0, ROOT_ENV)
    from cosyvoice_tiny import build_tiny_cosyvoice3

    from cosyweb.config import Settings
    from cosyweb.engines.cosyvoice import create

    figures = {}
    t0 = time.perf_counter()
    model_dir = build_tiny_cosyvoice3(tmp_path_factory.mktemp("tiny") / "Fun-CosyVoice3-tiny")
    figures["build_s"] = time.perf_counter() - t0

    import numpy as np
    import torch

    root = logging.getLogger()
    level_before = root.level
    random.seed(7)
    np.random.seed(7)
    torch.manual_seed(7)
    eng = create(Settings(engine="cosyvoice", model_dir=model_dir, cosyvoice_root=ROOT_ENV, device="cpu", warmup=True),
                 chunk_timeout_s=300.0)
    t0 = time.perf_counter()
    eng.load()
    figures["load_s"] = time.perf_counter() - t0
    after = (random.random(), float(np.random.rand()), float(torch.rand(1)))
    random.seed(7)
    np.random.seed(7)
    torch.manual_seed(7)
    figures["rng_preserved"] = after == (random.random(), float(np.random.rand()), float(torch.rand(1)))
    figures["root_level"] = (level_before, root.level)
    t0 = time.perf_counter()
    eng.warmup()
    figures["warmup_s"] = time.perf_counter() - t0
    yield eng, eng.cosyvoice.frontend.tokenizer, figures
    print("\nreal-code figures:", {k: (round(v, 2) if isinstance(v, float) else v) for k, v in figures.items()})
    eng.close()


@pytest.fixture(scope="session")
def voice(real):
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from cosyvoice_fake import make_prompt

    return real[0].prepare_voice(make_prompt(duration_s=2.0), TRANSCRIPT)


def run(eng, voice, text, index=0, **opts):
    from cosyweb.options import SynthesisOptions
    from cosyweb.text.types import TextSegment

    return list(eng.synthesize(voice, TextSegment(index=index, text=text, cosyvoice_text=text), SynthesisOptions(**opts)))


def n_samples(chunks):
    return sum(c.size for c in chunks)


def expected_samples(tokenizer, text: str) -> int:
    return 20 * len(tokenizer.encode(text)) * SAMPLES_PER_TOKEN


def test_real_config_tokenizer_and_side_effects(real):
    eng, tok, fig = real
    import cosyvoice.cli.frontend as fe_mod
    import cosyvoice.utils.file_utils as fu

    from cosyweb.engines.cosyvoice.upstream import load_wav_soundfile

    assert type(eng.cosyvoice).__name__ == "CosyVoice3" and type(eng.cosyvoice.model).__name__ == "CosyVoice3Model"
    assert eng.cosyvoice.sample_rate == SR == eng.capabilities.sample_rate
    assert tok.encode("<|endofprompt|>") == [151646]
    assert tok.encode("[breath]") == [151647] and tok.encode("[h]") == [151763] and tok.encode("[ào]") == [151854]
    assert fe_mod.load_wav is load_wav_soundfile and fu.load_wav is load_wav_soundfile
    assert fig["rng_preserved"], "AutoModel's set_all_random_seed(0) leaked"
    assert fig["root_level"][0] == fig["root_level"][1], "cosyvoice's basicConfig(DEBUG) leaked"
    assert eng.capabilities.name == "cosyvoice3" and eng.capabilities.pinyin_annotations


def test_every_mode_has_the_exact_length(real, voice):
    eng, tok, fig = real
    from cosyweb.engines.cosyvoice import prompts
    from cosyweb.options import Mode

    cases = {
        "zero_shot": (dict(mode=Mode.ZERO_SHOT), SHORT),
        "cross_lingual": (dict(mode=Mode.CROSS_LINGUAL), prompts.V3_PREFIX + SHORT),
        "instruct_dialect": (dict(mode=Mode.INSTRUCT, dialect="sichuan"), SHORT),
        "instruct_emotion": (dict(mode=Mode.INSTRUCT, emotion="happy"), SHORT),
        "annotated": (dict(mode=Mode.ZERO_SHOT), "她[h][ào]干净。"),
    }
    for name, (opts, llm_text) in cases.items():
        text = "她[h][ào]干净。" if name == "annotated" else SHORT
        t0 = time.perf_counter()
        chunks = run(eng, voice, text, stream=False, **opts)
        fig[f"{name}_nonstream_s"] = time.perf_counter() - t0
        assert n_samples(chunks) == expected_samples(tok, llm_text), name
        audio = __import__("numpy").concatenate(chunks)
        assert audio.dtype.name == "float32" and abs(audio).max() <= 1.0 and abs(audio).max() > 0


def test_streaming_hop_bug_and_fix(real, voice):
    eng, tok, fig = real
    from cosyvoice.cli.model import CosyVoice3Model

    from cosyweb.engines.cosyvoice import prompts

    # Before the fix: upstream's own model object (same modules, no cosyweb guard) grows its hop.
    raw = copy.copy(eng.cosyvoice)
    raw.model = CosyVoice3Model(eng.cosyvoice.model.llm, eng.cosyvoice.model.flow, eng.cosyvoice.model.hift, fp16=False)
    wav = str(eng._files.path_for(voice.prompt))
    raw_firsts = []
    for _ in range(2):
        gen = raw.inference_zero_shot(LONG, prompts.V3_PREFIX + TRANSCRIPT, wav, stream=True, text_frontend=False)
        raw_firsts.append(next(gen)["tts_speech"].shape[1])
        for _ in gen:
            pass
    fig["raw_first_chunks"] = raw_firsts
    fig["raw_hop_after"] = raw.model.token_hop_len
    assert raw_firsts[1] > raw_firsts[0] and raw.model.token_hop_len == 100

    # With the adapter: every stream, sequential or concurrent, starts from hop 25.
    t0 = time.perf_counter()
    seq = [run(eng, voice, LONG, stream=True) for _ in range(2)]
    fig["stream_call_s"] = (time.perf_counter() - t0) / 2
    fig["adapter_first_chunks_sequential"] = [c[0].size for c in seq]
    fig["adapter_chunk_sizes"] = [c.size for c in seq[0]]
    assert [c[0].size for c in seq] == [raw_firsts[0] - HOLD] * 2
    assert all(n_samples(c) == expected_samples(tok, LONG) for c in seq)  # every chunk kept
    together = {}

    def go(i):
        together[i] = run(eng, voice, LONG, stream=True)[0].size

    threads = [threading.Thread(target=go, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(600)
    fig["adapter_first_chunks_concurrent"] = [together[0], together[1]]
    assert together == {0: raw_firsts[0] - HOLD, 1: raw_firsts[0] - HOLD}
    assert eng.cosyvoice.model.token_hop_len == 25


def test_missing_marker_ends_with_an_error_not_a_hang(real, voice, monkeypatch):
    eng, tok, fig = real
    from cosyweb.engines.cosyvoice import prompts
    from cosyweb.errors import EngineError

    monkeypatch.setattr(prompts, "zero_shot_prompt_text", lambda transcript, version: transcript)
    with pytest.raises(EngineError, match="endofprompt"):
        run(eng, voice, SHORT, stream=True)  # refused before upstream is called
    monkeypatch.setattr(eng, "check_marker", lambda plan: None)
    t0 = time.perf_counter()
    with pytest.raises(EngineError, match="endofprompt"):
        run(eng, voice, SHORT, stream=True)  # upstream's LLM thread asserts; the guard ends the stream
    fig["missing_marker_error_s"] = time.perf_counter() - t0
    model = eng.cosyvoice.model
    assert model.tts_speech_token_dict == {} and model.llm_end_dict == {}


def test_seed_speed_and_speaker_cache(real, voice):
    eng, tok, fig = real
    import numpy as np

    from cosyweb.audio.types import PromptAudio

    a = np.concatenate(run(eng, voice, SHORT, stream=False, seed=123))
    b = np.concatenate(run(eng, voice, SHORT, stream=False, seed=123))
    c = np.concatenate(run(eng, voice, SHORT, stream=False, seed=124))
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)
    fast = n_samples(run(eng, voice, SHORT, stream=True, speed=1.5))
    assert abs(fast - a.size / 1.5) <= 2 * 480

    fresh = PromptAudio(samples=voice.prompt.samples[::-1].copy(), sample_rate=SR, original_sample_rate=SR,
                        duration_s=voice.prompt.duration_s)
    v2 = eng.prepare_voice(fresh, TRANSCRIPT)
    stats0 = eng.speaker_cache_stats()
    t0 = time.perf_counter()
    run(eng, v2, SHORT, stream=False)
    cold = time.perf_counter() - t0
    t0 = time.perf_counter()
    run(eng, v2, SHORT, stream=False)
    warm = time.perf_counter() - t0
    stats1 = eng.speaker_cache_stats()
    assert stats1["misses"] == stats0["misses"] + 1 and stats1["hits"] == stats0["hits"] + 1
    fig["voice_cold_call_s"], fig["voice_cached_call_s"] = cold, warm
