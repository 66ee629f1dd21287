"""A faithful fake of the official CosyVoice code's public surface, for contract tests without GPU or weights.

This folder is laid out like a CosyVoice checkout (``cosyvoice/...`` and
``third_party/Matcha-TTS/matcha``), so the adapter finds and imports it exactly as it would
the real code: through ``--cosyvoice-root`` / ``COSYVOICE_ROOT``. What it mimics, and why, is
written at the top of each fake module.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

#: Pass this as ``cosyvoice_root``.
FAKE_ROOT = Path(__file__).resolve().parent

WEIGHT_FILES = ("llm.pt", "flow.pt", "hift.pt", "campplus.onnx")


def make_model_dir(path: Path, version: int = 3, sample_rate_hz: int = 24000) -> Path:
    """Create a model directory the fake (and the adapter's checks) accept: YAML, weight files, BlankEN."""
    path.mkdir(parents=True, exist_ok=True)
    (path / f"cosyvoice{version}.yaml").write_text(f"sample_rate: {sample_rate_hz}\n", encoding="utf-8")
    for name in WEIGHT_FILES + (f"speech_tokenizer_v{version}.onnx",):
        (path / name).write_bytes(b"\0")
    (path / "CosyVoice-BlankEN").mkdir(exist_ok=True)
    return path


def voiced_samples(duration_s: float = 2.0, sample_rate_hz: int = 24000, f0_hz: float = 130.0, seed: int = 0) -> np.ndarray:
    """A speech-like float32 test signal (harmonic buzz with a syllable-rate envelope plus a little noise)."""
    t = np.arange(int(duration_s * sample_rate_hz)) / sample_rate_hz
    buzz = sum(np.sin(2 * np.pi * f0_hz * k * t) / k for k in range(1, 8))
    env = 0.5 + 0.5 * np.sin(2 * np.pi * 4.0 * t) ** 2
    noise = 0.01 * np.random.default_rng(seed).standard_normal(t.size)
    return (0.2 * buzz * env + noise).astype(np.float32)


def make_prompt(duration_s: float = 2.0, sample_rate_hz: int = 24000, seed: int = 0):
    """A :class:`cosyweb.audio.types.PromptAudio` holding :func:`voiced_samples`."""
    from cosyweb.audio.types import PromptAudio

    x = voiced_samples(duration_s, sample_rate_hz, seed=seed)
    return PromptAudio(samples=x, sample_rate=sample_rate_hz, original_sample_rate=sample_rate_hz, duration_s=x.size / sample_rate_hz)


def make_engine(tmp_path: Path, version: int = 3, load: bool = True, chunk_timeout_s: float = 20.0, engine: str = "cosyvoice", **settings):
    """Create (and by default load) the real adapter on the fake CosyVoice and a fake model directory."""
    from cosyweb.config import Settings
    from cosyweb.engines.cosyvoice import create

    model_dir = make_model_dir(tmp_path / f"model-v{version}", version)
    opts = dict(engine=engine, model_dir=model_dir, cosyvoice_root=FAKE_ROOT, device="cpu", warmup=False)
    opts.update(settings)
    eng = create(Settings(**opts), chunk_timeout_s=chunk_timeout_s)
    if load:
        eng.load()
    return eng
