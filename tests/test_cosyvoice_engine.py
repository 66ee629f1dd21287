"""Contract tests: the real CosyVoice adapter against a faithful fake of upstream's AutoModel surface.

No GPU, no CosyVoice checkout, no weights: ``tests/cosyvoice_fake`` is laid out like a
CosyVoice checkout and keeps upstream's signatures, assertions and failure modes (the hang
on a missing ``<|endofprompt|>``, the growing ``token_hop_len``, the reseeded RNG, the
DEBUG root logger, the torchaudio loader that fails without torchcodec).
"""

from __future__ import annotations

import logging
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

torch = pytest.importorskip("torch", reason="the CosyVoice contract tests need torch (pip install torch==2.13.0)")

sys.path.insert(0, str(Path(__file__).resolve().parent))
from cosyvoice_fake import make_engine, make_prompt  # noqa: E402

from cosyweb.engines.cosyvoice import prompts  # noqa: E402
from cosyweb.engines.cosyvoice.upstream import load_wav_soundfile  # noqa: E402
from cosyweb.errors import EngineError, GPUMemoryError, InvalidInputError, UnsupportedOptionError  # noqa: E402
from cosyweb.options import DIALECTS, Mode, SynthesisOptions  # noqa: E402
from cosyweb.text.types import TextSegment  # noqa: E402

pytestmark = pytest.mark.timeout(60)

TRANSCRIPT = "希望你以后能够做的比我还好呦。"
LONG = "收到好友从远方寄来的生日礼物那份意外的惊喜。"  # 22 characters -> 176 fake speech tokens
SR = 24000
HOLD = int(SR * 0.040)  # the adapter holds back the last 40 ms of a segment for its fade-out


def seg(text: str, index: int = 0) -> TextSegment:
    return TextSegment(index=index, text=text, cosyvoice_text=text)


@pytest.fixture
def engine(tmp_path):
    eng = make_engine(tmp_path)
    yield eng
    eng.close()


@pytest.fixture
def voice(engine):
    return engine.prepare_voice(make_prompt(), TRANSCRIPT)


@pytest.fixture
def recorder(engine, monkeypatch):
    """Record every upstream inference call's arguments (the real methods still run)."""
    calls = []
    cv = engine.cosyvoice
    for name in ("inference_zero_shot", "inference_cross_lingual", "inference_instruct2", "add_zero_shot_spk"):
        orig = getattr(cv, name)

        def wrapper(*args, _orig=orig, _name=name, **kwargs):
            calls.append((_name, args, kwargs))
            return _orig(*args, **kwargs)

        monkeypatch.setattr(cv, name, wrapper)
    return calls


def synth(engine, voice, text, **opts):
    return list(engine.synthesize(voice, seg(text, opts.pop("index", 0)), SynthesisOptions(**opts)))


def cat(chunks):
    return np.concatenate(chunks) if chunks else np.zeros(0, np.float32)


# --- modes: exact strings reach upstream --------------------------------------------------
def test_zero_shot_call_exact_arguments(engine, voice, recorder):
    synth(engine, voice, "你好。", stream=False)
    (name, args, kw), = [c for c in recorder if c[0] == "inference_zero_shot"]
    assert kw["tts_text"] == "你好。"
    assert kw["prompt_text"] == "You are a helpful assistant.<|endofprompt|>" + TRANSCRIPT
    assert kw["text_frontend"] is False and kw["stream"] is False and kw["speed"] == 1.0
    assert kw["zero_shot_spk_id"]
    # the cached speaker was added with the same prompt text
    (_, add_args, _), = [c for c in recorder if c[0] == "add_zero_shot_spk"]
    assert add_args[0] == kw["prompt_text"]


def test_prompt_is_a_wav_path_at_least_16k(engine, recorder, tmp_path):
    for rate_hz in (8000, 24000):
        v = engine.prepare_voice(make_prompt(sample_rate_hz=rate_hz), TRANSCRIPT)
        synth(engine, v, "你好。", stream=False)
        kw = recorder[-1][2]
        path = kw["prompt_wav"]
        assert isinstance(path, str) and Path(path).is_file()
        info = sf.info(path)
        assert info.channels == 1 and info.samplerate == max(rate_hz, 16000)
        assert abs(info.frames / info.samplerate - 2.0) < 0.01


def test_prefix_is_added_to_each_segment_cross_lingual(engine, voice, recorder):
    for i, text in enumerate(["Hello there.", "第二句话。"]):
        synth(engine, voice, text, mode=Mode.CROSS_LINGUAL, stream=True, index=i)
    tts = [kw["tts_text"] for name, _, kw in recorder if name == "inference_cross_lingual"]
    assert tts == ["You are a helpful assistant.<|endofprompt|>Hello there.",
                   "You are a helpful assistant.<|endofprompt|>第二句话。"]


@pytest.mark.parametrize("dialect", [d for d in DIALECTS if d != "mandarin"])
def test_each_dialect_is_an_instruct2_call_with_upstream_string(engine, voice, recorder, dialect):
    synth(engine, voice, "你好。", mode=Mode.INSTRUCT, dialect=dialect, stream=False)
    (name, _, kw), = [c for c in recorder if c[0].startswith("inference")]
    assert name == "inference_instruct2"
    assert kw["instruct_text"] == f"You are a helpful assistant. {prompts.DIALECT_INSTRUCTIONS[dialect]}<|endofprompt|>"
    assert kw["tts_text"] == "你好。"


def test_emotion_speed_volume_in_instruct_mode(engine, voice, recorder):
    synth(engine, voice, "你好。", mode=Mode.INSTRUCT, emotion="sad", stream=True)
    synth(engine, voice, "你好。", mode=Mode.INSTRUCT, speed=1.5, stream=True)
    synth(engine, voice, "你好。", mode=Mode.INSTRUCT, volume=2.0, stream=True)
    got = [(kw["instruct_text"], kw["speed"], kw["stream"]) for n, _, kw in recorder if n == "inference_instruct2"]
    assert got == [
        ("You are a helpful assistant. 请非常伤心地说一句话。<|endofprompt|>", 1.0, True),
        ("You are a helpful assistant. 请用尽可能快地语速说一句话。<|endofprompt|>", 1.0, True),
        ("You are a helpful assistant. Please say a sentence as loudly as possible.<|endofprompt|>", 1.0, True),
    ]


def test_dialect_in_zero_shot_mode_becomes_instruct_not_ignored(engine, voice, recorder):
    synth(engine, voice, "你好。", mode=Mode.ZERO_SHOT, dialect="sichuan")
    assert [n for n, _, _ in recorder if n.startswith("inference")] == ["inference_instruct2"]


def test_instruct_mode_without_instruction_and_zero_shot_without_transcript_are_refused(engine):
    v = engine.prepare_voice(make_prompt(), "")
    with pytest.raises(InvalidInputError, match="Instruct mode needs an instruction"):
        synth(engine, v, "你好。", mode=Mode.INSTRUCT)
    with pytest.raises(InvalidInputError, match="prompt transcript"):
        synth(engine, v, "你好。", mode=Mode.ZERO_SHOT)
    assert cat(synth(engine, v, "你好。", mode=Mode.CROSS_LINGUAL)).size > 0


def test_user_typed_markers_are_not_doubled(engine, recorder):
    v = engine.prepare_voice(make_prompt(), "You are a helpful assistant.<|endofprompt|>" + TRANSCRIPT)
    synth(engine, v, "你好<|endofprompt|>。", stream=False)
    kw = recorder[-1][2]
    assert kw["prompt_text"].count("<|endofprompt|>") == 1 and kw["tts_text"] == "你好。"


def test_instruct_speaker_cache_keeps_the_instruction(engine, voice):
    """Upstream's instruct2 with a zero_shot_spk_id uses the *stored* prompt text: it must be the instruction."""
    synth(engine, voice, "你好。", mode=Mode.INSTRUCT, emotion="happy", stream=False)
    tok = engine.cosyvoice.frontend.tokenizer
    want = tok.encode("You are a helpful assistant. 请非常开心地说一句话。<|endofprompt|>")
    stored = [v["prompt_text"][0].tolist() for v in engine.cosyvoice.frontend.spk2info.values()]
    assert want in stored


# --- speed, volume, chunks --------------------------------------------------------------
def test_speed_runs_without_streaming_and_shortens_audio(engine, voice, recorder):
    normal = cat(synth(engine, voice, LONG, seed=7, stream=True))
    fast = synth(engine, voice, LONG, seed=7, speed=1.5, stream=True)
    kw = recorder[-1][2]
    assert kw["stream"] is False and kw["speed"] == 1.5
    assert abs(cat(fast).size - normal.size / 1.5) < 0.01 * normal.size


def test_volume_is_a_gain_outside_instruct_mode(engine, voice):
    loud = cat(synth(engine, voice, LONG, seed=3, stream=False))
    soft = cat(synth(engine, voice, LONG, seed=3, stream=False, volume=0.5))
    assert soft.size == loud.size
    np.testing.assert_allclose(soft, 0.5 * loud, atol=1e-6)


def test_stream_yields_every_chunk_and_ends_with_a_fade(engine, voice):
    streamed = synth(engine, voice, LONG, seed=11, stream=True)
    whole = cat(synth(engine, voice, LONG, seed=11, stream=False))
    assert len(streamed) >= 3
    assert cat(streamed).size == whole.size == 8 * len(LONG) * 960  # nothing dropped (not only the last chunk)
    tail = cat(streamed)[-HOLD:]
    assert abs(tail[-1]) < 1e-3 and np.abs(tail[-HOLD // 8:]).max() < 0.2 * np.abs(whole[-HOLD:]).max()
    assert abs(cat(streamed)[0]) < 1e-6  # fade-in


# --- the token_hop_len pitfall ----------------------------------------------------------
def _raw_first_chunks(cv, prompt_path, n):
    sizes = []
    for _ in range(n):
        gen = cv.inference_zero_shot(LONG, prompts.V3_PREFIX + TRANSCRIPT, prompt_path, stream=True, text_frontend=False)
        sizes.append(next(gen)["tts_speech"].shape[1])
        for _ in gen:
            pass
    return sizes


def test_fake_reproduces_the_growing_hop_bug(engine, voice, tmp_path):
    """Control: upstream's model unguarded (a second AutoModel) grows its hop 25 -> 100 tokens."""
    import cosyvoice.cli.cosyvoice as cli

    raw = cli.AutoModel(model_dir=str(engine.model_info.model_dir))
    path = str(engine._files.path_for(voice.prompt))
    # first chunk = hop + padding of the 50 prompt tokens to a multiple of the hop (CosyVoice2Model.tts)
    assert _raw_first_chunks(raw, path, 2) == [(25 + 0) * 960, (100 + 50) * 960]
    assert raw.model.token_hop_len == 100


def test_hop_is_reset_for_sequential_streams(engine, voice):
    firsts = [synth(engine, voice, LONG, stream=True)[0].size for _ in range(3)]
    assert firsts == [25 * 960 - HOLD] * 3
    assert engine.cosyvoice.model.token_hop_len == 25


def test_hop_is_per_request_for_concurrent_streams(engine, voice):
    results = {}

    def run(i):
        results[i] = synth(engine, voice, LONG, stream=True)[0].size

    threads = [threading.Thread(target=run, args=(i,)) for i in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert results == {0: 25 * 960 - HOLD, 1: 25 * 960 - HOLD, 2: 25 * 960 - HOLD}


# --- the missing <|endofprompt|> hang ------------------------------------------------------
def test_adapter_refuses_text_without_marker(engine, voice, monkeypatch):
    monkeypatch.setattr(prompts, "zero_shot_prompt_text", lambda transcript, version: transcript)
    n_before = engine.cosyvoice.model.n_tts_calls
    with pytest.raises(EngineError, match="endofprompt"):
        synth(engine, voice, "你好。", stream=True)
    assert engine.cosyvoice.model.n_tts_calls == n_before


def test_fake_hangs_without_marker_when_unguarded(engine, voice):
    """Control: upstream's streaming generator never ends when the LLM thread asserted."""
    import cosyvoice.cli.cosyvoice as cli

    raw = cli.AutoModel(model_dir=str(engine.model_info.model_dir))
    path = str(engine._files.path_for(voice.prompt))
    done = threading.Event()
    old_hook = threading.excepthook
    threading.excepthook = lambda args: None  # the LLM thread's AssertionError (upstream only logs it)

    def consume():
        try:
            for _ in raw.inference_zero_shot("你好。", TRANSCRIPT, path, stream=True, text_frontend=False):
                pass
        except RuntimeError:  # once released: zero tokens crash the vocoder, as upstream's HiFT does
            pass
        done.set()

    try:
        threading.Thread(target=consume, daemon=True).start()
        assert not done.wait(1.0), "the fake must hang like upstream"
    finally:
        for uid in list(raw.model.llm_end_dict):  # release the spinning generator
            raw.model.llm_end_dict[uid] = True
        threading.excepthook = old_hook


@pytest.mark.parametrize("stream", [True, False])
def test_llm_failure_ends_the_call_instead_of_hanging(engine, voice, monkeypatch, stream):
    monkeypatch.setattr(prompts, "zero_shot_prompt_text", lambda transcript, version: transcript)
    monkeypatch.setattr(engine, "check_marker", lambda plan: None)  # a bug slipped past the first guard
    t0 = time.monotonic()
    with pytest.raises(EngineError, match="endofprompt not detected|<\\|endofprompt\\|> not detected"):
        synth(engine, voice, "你好。", stream=stream)
    assert time.monotonic() - t0 < 10
    model = engine.cosyvoice.model
    assert model.tts_speech_token_dict == {} and model.llm_end_dict == {} and model.hift_cache_dict == {}
    monkeypatch.undo()
    assert cat(synth(engine, voice, "你好。", stream=stream)).size > 0  # the engine still works


def test_watchdog_abandons_a_stalled_call(tmp_path, monkeypatch):
    import cosyvoice.cli.model as fake_model

    eng = make_engine(tmp_path, chunk_timeout_s=0.5)
    v = eng.prepare_voice(make_prompt(), TRANSCRIPT)
    release = threading.Event()
    monkeypatch.setattr(fake_model.CosyVoice3Model, "hang_token2wav", release)
    try:
        with pytest.raises(EngineError, match="no audio for 0.5 s"):
            synth(eng, v, "你好。", stream=True)
    finally:
        release.set()
    monkeypatch.setattr(fake_model.CosyVoice3Model, "hang_token2wav", None)
    assert cat(synth(eng, v, "你好。")).size > 0
    eng.close()


# --- CUDA out of memory ------------------------------------------------------------------------
def test_oom_fails_the_job_frees_state_and_engine_carries_on(engine, voice, monkeypatch):
    import cosyvoice.cli.model as fake_model

    emptied = []
    monkeypatch.setattr("cosyweb.engines.cosyvoice.calls.free_gpu_memory", lambda: emptied.append(1))
    monkeypatch.setattr(fake_model.CosyVoice3Model, "fail_token2wav",
                        torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB"))
    with pytest.raises(GPUMemoryError) as err:
        synth(engine, voice, LONG, stream=True)
    assert "GPU memory exhausted, please retry" in str(err.value) and "GPU 显存不足" in str(err.value)
    assert emptied
    model = engine.cosyvoice.model
    deadline = time.monotonic() + 5
    while (model.tts_speech_token_dict or model.llm_end_dict) and time.monotonic() < deadline:
        time.sleep(0.01)  # the abandoned LLM thread stops at its next token
    assert model.tts_speech_token_dict == {} and model.llm_end_dict == {} and model.hift_cache_dict == {}
    assert cat(synth(engine, voice, LONG, stream=True)).size == 8 * len(LONG) * 960


def test_cancelled_stream_frees_upstream_state(engine, voice):
    gen = engine.synthesize(voice, seg(LONG), SynthesisOptions(stream=True))
    next(gen)
    gen.close()
    model = engine.cosyvoice.model
    deadline = time.monotonic() + 5
    while (model.tts_speech_token_dict or model.llm_end_dict) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert model.tts_speech_token_dict == {} and model.llm_end_dict == {}


# --- seeds ----------------------------------------------------------------------------------
def test_same_seed_same_audio_other_seed_other_audio(engine, voice):
    a = cat(synth(engine, voice, LONG, seed=42, stream=True))
    b = cat(synth(engine, voice, LONG, seed=42, stream=True))
    c = cat(synth(engine, voice, LONG, seed=43, stream=True))
    np.testing.assert_array_equal(a, b)
    assert a.size == c.size and not np.array_equal(a, c)


def test_seeded_requests_do_not_interleave(engine, voice):
    """Run seeded requests from 4 threads at once: each must equal its result when run alone."""
    alone = {s: cat(synth(engine, voice, LONG, seed=s, stream=True)) for s in (1, 2, 3, 4)}
    together = {}

    def run(s):
        together[s] = cat(synth(engine, voice, LONG, seed=s, stream=True))

    threads = [threading.Thread(target=run, args=(s,)) for s in alone]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    for s in alone:
        np.testing.assert_array_equal(together[s], alone[s])


def test_seed_gate_shares_unseeded_and_isolates_seeded():
    from cosyweb.engines.cosyvoice.seeding import SeedGate

    gate = SeedGate()
    inside = threading.Event()
    with gate.for_seed(0):
        t = threading.Thread(target=lambda: gate.for_seed(0).__enter__() and None)
        ok = []

        def shared_enter():
            with gate.for_seed(0):
                ok.append("shared")

        def exclusive_enter():
            with gate.for_seed(5):
                inside.set()

        s = threading.Thread(target=shared_enter)
        s.start()
        s.join(2)
        assert ok == ["shared"]  # a second unseeded holder got in
        x = threading.Thread(target=exclusive_enter)
        x.start()
        assert not inside.wait(0.3)  # the seeded one waits for the unseeded holder
    assert inside.wait(2)
    x.join(2)
    del t


# --- caches and hygiene ---------------------------------------------------------------------
def test_repeated_voice_skips_feature_extraction(engine, voice):
    fe = engine.cosyvoice.frontend
    n0 = fe.n_feature_extractions
    for _ in range(3):
        synth(engine, voice, "你好。", stream=False)
    synth(engine, voice, "你好。", mode=Mode.CROSS_LINGUAL, stream=False)
    assert fe.n_feature_extractions - n0 == 1
    assert engine.speaker_cache_stats()["hits"] == 3
    other = engine.prepare_voice(make_prompt(), "另一段文字。")
    synth(engine, other, "你好。", stream=False)
    assert fe.n_feature_extractions - n0 == 2


def test_speaker_cache_is_bounded(tmp_path):
    eng = make_engine(tmp_path, voice_cache_size=2)
    for i in range(4):
        v = eng.prepare_voice(make_prompt(seed=i), f"第{i}段。")
        synth(eng, v, "你好。", stream=False)
    assert eng.speaker_cache_stats()["entries"] == 2
    assert len(eng.cosyvoice.frontend.spk2info) == 2
    eng.close()


def test_empty_cache_every_n_jobs(tmp_path, monkeypatch):
    eng = make_engine(tmp_path, empty_cache_every=2)
    v = eng.prepare_voice(make_prompt(), TRANSCRIPT)
    calls = []
    monkeypatch.setattr(torch.cuda, "empty_cache", lambda: calls.append(1))
    eng.device = "cuda:0"  # pretend; the fake runs on the CPU either way
    for job in range(5):
        for i in range(2):  # two segments per job; only index 0 starts a job
            synth(eng, v, "你好。", index=i, stream=False)
    assert eng.n_jobs == 5 and len(calls) == 2 == eng.n_empty_cache
    eng.close()


# --- loader and import side effects ------------------------------------------------------------
def test_load_wav_replaced_everywhere_upstream_looks_it_up(engine, voice):
    import cosyvoice.cli.frontend as fe_mod
    import cosyvoice.utils.file_utils as fu

    assert fu.load_wav is load_wav_soundfile and fe_mod.load_wav is load_wav_soundfile
    synth(engine, voice, "你好。", stream=False)
    assert fu.N_CALLS == 0  # the torchaudio-style loader was never reached


def test_soundfile_loader_shape_rate_and_errors(tmp_path):
    stereo = np.stack([np.full(44100, 0.5), np.zeros(44100)], axis=1).astype(np.float32)
    sf.write(tmp_path / "a.wav", stereo, 44100, subtype="PCM_16")
    x = load_wav_soundfile(str(tmp_path / "a.wav"), 16000)
    assert x.dtype == torch.float32 and x.dim() == 2 and x.shape[0] == 1 and abs(x.shape[1] - 16000) <= 1
    assert abs(float(x[0, 1000:-1000].mean()) - 0.25) < 0.001  # mono = mean of the channels
    with open(tmp_path / "a.wav", "rb") as f:  # file objects work, as upstream's do
        assert load_wav_soundfile(f, 24000).shape[1] == 24000
    sf.write(tmp_path / "low.wav", np.zeros(8000, np.float32), 8000)
    with pytest.raises(ValueError, match="at least 16000"):
        load_wav_soundfile(str(tmp_path / "low.wav"), 16000)
    with pytest.raises(TypeError):
        load_wav_soundfile(torch.zeros(1, 100), 16000)


def test_load_contains_logging_rng_and_network_side_effects(tmp_path):
    import random

    root = logging.getLogger()
    level, handlers = root.level, list(root.handlers)
    random.seed(123)
    np.random.seed(123)
    torch.manual_seed(123)
    eng = make_engine(tmp_path)
    after = (random.random(), float(np.random.rand()), float(torch.rand(1)))
    random.seed(123)
    np.random.seed(123)
    torch.manual_seed(123)
    assert after == (random.random(), float(np.random.rand()), float(torch.rand(1)))  # AutoModel's reseed undone
    assert root.level == level and root.handlers == handlers  # basicConfig(DEBUG) undone
    import cosyvoice.cli.cosyvoice as cli

    assert cli.NETWORK_CALLS == []
    eng.close()


# --- models and capabilities -----------------------------------------------------------------
def test_v3_capabilities(engine):
    c = engine.capabilities
    assert c.name == "cosyvoice3" and c.sample_rate == 24000 and c.streaming
    assert c.dialects == frozenset(DIALECTS) and c.emotions == {"none", "happy", "sad", "angry"}
    assert c.speed and not c.speed_when_streaming and c.volume and c.pinyin_annotations and c.arpabet
    assert set(Mode) == set(c.modes) and {"zh", "en", "yue"} <= c.languages
    assert c.default_concurrency == 1  # on the CPU; 2 on a GPU


def test_v3_accepts_its_pinyin_tokens_and_rejects_others(engine, voice, recorder):
    synth(engine, voice, "她[h][ào]干净。[breath]", stream=False)
    assert recorder[-1][2]["tts_text"] == "她[h][ào]干净。[breath]"
    with pytest.raises(UnsupportedOptionError, match=r"\[hao4\]"):
        synth(engine, voice, "她[hao4]干净。")


def test_cosyvoice2_conventions_and_limits(tmp_path):
    eng = make_engine(tmp_path, version=2)
    assert eng.capabilities.name == "cosyvoice2" and not eng.capabilities.pinyin_annotations
    v = eng.prepare_voice(make_prompt(), TRANSCRIPT)
    calls = []
    cv = eng.cosyvoice
    for name in ("inference_zero_shot", "inference_instruct2"):
        orig = getattr(cv, name)
        setattr(cv, name, lambda *a, _o=orig, _n=name, **k: (calls.append((_n, k)), _o(*a, **k))[1])
    synth(eng, v, "你好。[breath]", stream=True)
    synth(eng, v, "你好。", mode=Mode.INSTRUCT, dialect="sichuan")
    assert calls[0][1]["prompt_text"] == TRANSCRIPT
    assert calls[1][1]["instruct_text"] == "请用四川话表达。<|endofprompt|>"
    with pytest.raises(UnsupportedOptionError, match="not supported by this model"):
        synth(eng, v, "她[h][ào]干净。")
    with pytest.raises(UnsupportedOptionError):
        synth(eng, v, "你好。", mode=Mode.INSTRUCT, dialect="yunnan")
    eng.close()


def test_warmup_runs_a_real_synthesis(engine):
    n = engine.cosyvoice.model.n_tts_calls
    engine.warmup()
    assert engine.cosyvoice.model.n_tts_calls == n + 2
