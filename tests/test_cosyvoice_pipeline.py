"""The whole pipeline (TTSService: admission, workers, voice cache) with the real CosyVoice adapter
on the faithful fake of upstream (``tests/cosyvoice_fake``), and a real prompt from ``../shared/prompts``.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("torch", reason="the CosyVoice contract tests need torch (pip install torch==2.13.0)")
service_mod = pytest.importorskip("cosyweb.pipeline.service", reason="cosyweb.pipeline.service (TTSService) not present yet")

sys.path.insert(0, str(Path(__file__).resolve().parent))
from cosyvoice_fake import FAKE_ROOT, make_model_dir  # noqa: E402

from cosyweb.config import Settings  # noqa: E402
from cosyweb.engines.cosyvoice import create  # noqa: E402
from cosyweb.errors import GPUMemoryError, UnsupportedOptionError  # noqa: E402
from cosyweb.options import Mode, SynthesisOptions  # noqa: E402

pytestmark = pytest.mark.timeout(120)
SR = 24000


@pytest.fixture
def service(tmp_path):
    s = Settings(engine="cosyvoice", model_dir=make_model_dir(tmp_path / "m", 3), cosyvoice_root=FAKE_ROOT,
                 device="cpu", warmup=True, concurrency=2, max_queue=8, output_dir=tmp_path / "out")
    svc = service_mod.TTSService(create(s, chunk_timeout_s=20.0), s)
    svc.start()
    yield svc
    svc.shutdown(grace_s=5)


@pytest.fixture
def prompt(service, shared_prompts):
    return service.load_prompt(str(shared_prompts / "cosyvoice__zero_shot_prompt.wav"))


TRANSCRIPT = "希望你以后能够做的比我还好呦。"
TEXT = "她[h][ào]干净，今天是2026年11月30日。我们明天再见吧。"


def test_zero_shot_streaming_job_end_to_end(service, prompt):
    assert service.capabilities.name == "cosyvoice3" and service.sample_rate == SR
    job = service.submit(prompt, TEXT, SynthesisOptions(stream=True, seed=5), prompt_text=TRANSCRIPT)
    kinds = [e.kind for e in job.events(timeout=60)]
    audio, status = job.result(timeout=60)
    assert kinds[-1] == "done" and kinds.count("chunk") >= 3
    assert status.n_segments >= 2 and status.sample_rate == SR
    assert audio.dtype == np.float32 and np.abs(audio).max() <= 1.0
    assert abs(status.duration_s - audio.size / SR) < 1e-3 and status.first_chunk_ms > 0
    # every segment's audio is in the result (8 fake tokens per text token, 960 samples each, none dropped)
    assert audio.size > 0 and audio.size % 960 == 0


def test_every_mode_through_the_pipeline(service, prompt):
    for opts in (SynthesisOptions(mode=Mode.CROSS_LINGUAL), SynthesisOptions(mode=Mode.INSTRUCT, dialect="sichuan"),
                 SynthesisOptions(mode=Mode.ZERO_SHOT, emotion="happy", stream=False),
                 SynthesisOptions(mode=Mode.ZERO_SHOT, speed=1.5)):
        audio, status = service.submit(prompt, "你好，世界。", opts, prompt_text=TRANSCRIPT).result(timeout=60)
        assert audio.size > SR // 2, opts


def test_seeded_jobs_are_reproducible_through_the_pipeline(service, prompt):
    jobs = [service.submit(prompt, TEXT, SynthesisOptions(seed=9), prompt_text=TRANSCRIPT) for _ in range(2)]
    a, b = (j.result(timeout=60)[0] for j in jobs)
    np.testing.assert_array_equal(a, b)


def test_oom_fails_one_job_and_the_service_carries_on(service, prompt, monkeypatch):
    import cosyvoice.cli.model as fake_model
    import torch

    monkeypatch.setattr(fake_model.CosyVoice3Model, "fail_token2wav", torch.cuda.OutOfMemoryError("CUDA out of memory."))
    bad = service.submit(prompt, "你好。", SynthesisOptions(), prompt_text=TRANSCRIPT)
    with pytest.raises(GPUMemoryError):
        bad.result(timeout=60)
    good = service.submit(prompt, "你好。", SynthesisOptions(), prompt_text=TRANSCRIPT)
    assert good.result(timeout=60)[0].size > 0
    assert service.healthy


def test_unsupported_option_is_refused_at_submit(tmp_path, shared_prompts):
    s = Settings(engine="cosyvoice", model_dir=make_model_dir(tmp_path / "m2", 2), cosyvoice_root=FAKE_ROOT,
                 device="cpu", warmup=False, output_dir=tmp_path / "out")
    svc = service_mod.TTSService(create(s), s)
    svc.start()
    try:
        p = svc.load_prompt(str(shared_prompts / "cosyvoice__zero_shot_prompt.wav"))
        with pytest.raises(UnsupportedOptionError):
            svc.submit(p, "你好。", SynthesisOptions(mode=Mode.INSTRUCT, dialect="yunnan"), prompt_text=TRANSCRIPT)
        job = svc.submit(p, "她[h][ào]干净。", SynthesisOptions(), prompt_text=TRANSCRIPT)
        with pytest.raises(UnsupportedOptionError, match="not supported by this model"):
            job.result(timeout=60)
    finally:
        svc.shutdown(grace_s=5)
