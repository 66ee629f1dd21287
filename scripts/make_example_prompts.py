"""Make the example prompt recordings shipped in ``assets/examples/`` (synthetic, our own).

The UI's examples must work out of the box, without third-party recordings: these voices are
espeak-ng speech (from the ``espeakng-loader`` wheel, with espeak's own intonation), lightly
shaped (a gentle fade in/out and 0.25 s of room tone at both ends), saved as 16-bit wav.
They are not realistic voices; they only make the examples runnable. Re-run to regenerate:

    python scripts/make_example_prompts.py
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from cosyweb.audio.encode import write_wav
from cosyweb.engines.lite import espeak

OUT_DIR = Path(__file__).resolve().parents[1] / "assets" / "examples"

#: file name -> (espeak voice, text, speaking rate in words per minute)
PROMPTS: dict[str, tuple[str, str, int]] = {
    "zh_prompt.wav": ("cmn+f3", "今天天气很好，我们一起去公园散步吧。", 150),
    "en_prompt.wav": ("en-us+m3", "The quick brown fox jumps over the lazy dog.", 150),
}
PAD_S = 0.25  # room tone at each end, seconds
FADE_S = 0.02  # fade in/out, seconds
NOISE_DBFS = -60.0  # level of the room tone


def make(voice: str, text: str, rate_wpm: int) -> tuple[np.ndarray, int]:
    """Synthesise one prompt: float32 mono samples and the rate in Hz."""
    audio = espeak.synthesize(text, voice, rate_wpm=rate_wpm, seed=1, const_f0_hz=0)
    x, sr = audio.samples.astype(np.float32), audio.sample_rate
    n_fade = int(FADE_S * sr)
    ramp = np.linspace(0.0, 1.0, n_fade, dtype=np.float32)
    x[:n_fade] *= ramp
    x[-n_fade:] *= ramp[::-1]
    x *= 0.5 / max(float(np.max(np.abs(x))), 1e-6)  # peak -6 dBFS
    pad = np.zeros(int(PAD_S * sr), np.float32)
    y = np.concatenate([pad, x, pad])
    rng = np.random.default_rng(0)
    y += (10 ** (NOISE_DBFS / 20) * rng.standard_normal(len(y))).astype(np.float32)
    return y, sr


def main() -> None:
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    for name, (voice, text, rate) in PROMPTS.items():
        y, sr = make(voice, text, rate)
        path = write_wav(OUT_DIR / name, y, sr)
        print(f"{path}: {len(y) / sr:.2f} s at {sr} Hz — {text}")


if __name__ == "__main__":
    main()
