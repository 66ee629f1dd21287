"""Held-out speaker similarity of the lite engine, measured with resemblyzer's GE2E encoder.

Method (issue 2, section 7): for every Mandarin recording in ``../shared/prompts``
(manifest language ``zh``) longer than 8 s, clone from its first 55% and compare
the clone with the unseen last 45% of the same recording. The clone reads a
fixed Mandarin text (:data:`TEXT`), the same for every speaker: the held-out
part's own transcript is not known word by word, so the comparison is
cross-text, which is the harder and more honest case for a speaker encoder.
The prompt goes through the real prompt conditioning
(:func:`cosyweb.audio.prompt.load_prompt`) and the real text front end.

Printed per recording: same-speaker cosine (clone vs its own held-out part),
the best and mean cosine to the other speakers' held-out parts, and two
reference points: the real first 55% vs the held-out part (upper bound) and
plain espeak-ng with its own intonation (no adaptation). Summary: mean
same-speaker cosine and the margin (mean same-speaker minus mean other-speaker
cosine). Targets: mean >= 0.72, margin >= 0.10.

Requirements: resemblyzer needs torch, which the app must not import. Use the
separate benchmark environment::

    python -m venv --system-site-packages /work/venvs/bench
    /work/venvs/bench/bin/pip install torch==2.13.0 "setuptools<81" webrtcvad-wheels
    /work/venvs/bench/bin/pip install --no-deps resemblyzer

Run from the project root::

    /work/venvs/bench/bin/python benchmarks/lite_similarity.py [--prompts-dir ../shared/prompts] [--json out.json]
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import sys
import time
from pathlib import Path

import numpy as np
import soundfile as sf

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from cosyweb.audio.decode import decode_audio  # noqa: E402
from cosyweb.audio.prompt import load_prompt  # noqa: E402
from cosyweb.engines.lite import create  # noqa: E402
from cosyweb.engines.lite import render  # noqa: E402
from cosyweb.options import SynthesisOptions  # noqa: E402
from cosyweb.text.frontend import analyze  # noqa: E402

#: The fixed text every clone reads (47 characters, all four tones, a pause).
TEXT = "今天下午我们一起去公园散步，顺便看看湖边新开的花。天气预报说明天会下雨，所以大家出门记得带伞。"
#: Fraction of each recording used as the prompt; the rest is held out.
PROMPT_FRACTION = 0.55
#: Recordings must be longer than this, seconds.
MIN_DURATION_S = 8.0


def mandarin_recordings(prompts_dir: Path) -> list[Path]:
    """Manifest rows with language zh and duration above :data:`MIN_DURATION_S`."""
    with open(prompts_dir / "manifest.tsv", encoding="utf-8") as f:
        rows = list(csv.DictReader(f, delimiter="\t"))
    return [prompts_dir / r["file"] for r in rows if r["language"] == "zh" and float(r["duration_s"]) > MIN_DURATION_S]


def split_recording(path: Path) -> tuple[bytes, np.ndarray, int]:
    """Decode, down-mix and split: (wav bytes of the first 55%, float32 last 45%, rate)."""
    audio, sr = decode_audio(str(path))
    mono = audio.mean(axis=1) if audio.ndim == 2 else audio
    cut = int(len(mono) * PROMPT_FRACTION)
    buf = io.BytesIO()
    sf.write(buf, mono[:cut], sr, format="WAV", subtype="FLOAT")
    return buf.getvalue(), mono[cut:].astype(np.float32), sr


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.dot(a, b) / (np.linalg.norm(a) * np.linalg.norm(b)))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--prompts-dir", type=Path, default=ROOT.parent / "shared" / "prompts")
    ap.add_argument("--text", default=TEXT, help="text every clone reads")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", type=Path, help="also write the figures to this file")
    args = ap.parse_args()

    try:
        from resemblyzer import VoiceEncoder, preprocess_wav
    except ImportError:
        print("resemblyzer is not installed: see the docstring of this script for the benchmark venv",
              file=sys.stderr)
        return 2

    paths = mandarin_recordings(args.prompts_dir)
    if len(paths) < 2:
        print(f"need at least two Mandarin recordings over {MIN_DURATION_S} s in {args.prompts_dir}", file=sys.stderr)
        return 2
    encoder = VoiceEncoder("cpu", verbose=False)
    engine = create()
    engine.load()
    engine.warmup()
    segments = analyze(args.text, "zh")
    options = SynthesisOptions(seed=args.seed)

    def embed(x: np.ndarray, sr: int) -> np.ndarray:
        return encoder.embed_utterance(preprocess_wav(x.astype(np.float32), source_sr=sr))

    rows = []
    for path in paths:
        prompt_bytes, held_out, sr = split_recording(path)
        prompt = load_prompt(prompt_bytes, target_sample_rate=24000)
        t0 = time.perf_counter()
        voice = engine.prepare_voice(prompt)
        profile_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        clone = np.concatenate([c for seg in segments for c in engine.synthesize(voice, seg, options)])
        synth_s = time.perf_counter() - t0
        prof = voice.data
        plain = np.concatenate([
            render.render(seg, variant=prof.variant, rate_factor=1.0, pause_factor=1.0, seed=0, const_f0_hz=0).samples
            for seg in segments
        ])
        rows.append({
            "file": path.name,
            "gender": prof.gender,
            "f0_hz": round(prof.f0_median_hz),
            "warp": prof.warp,
            "profile_s": profile_s,
            "rtf": synth_s / (len(clone) / engine.capabilities.sample_rate),
            "emb_clone": embed(clone, engine.capabilities.sample_rate),
            "emb_plain": embed(plain, 22050),
            "emb_prompt": embed(prompt.samples, prompt.sample_rate),
            "emb_held": embed(held_out, sr),
        })

    n = len(rows)
    same = np.array([cosine(r["emb_clone"], r["emb_held"]) for r in rows])
    other = np.array([[cosine(rows[i]["emb_clone"], rows[j]["emb_held"]) for j in range(n) if j != i] for i in range(n)])
    upper = np.array([cosine(r["emb_prompt"], r["emb_held"]) for r in rows])
    plain = np.array([cosine(r["emb_plain"], r["emb_held"]) for r in rows])
    print(f"text: {args.text}")
    print(f"{'recording':52s} {'sex':6s} {'F0':>4s} {'warp':>5s} {'same':>6s} {'other':>6s} {'best-o':>6s}"
          f" {'real':>6s} {'espeak':>6s} {'prof_s':>6s} {'rtf':>5s}")
    for i, r in enumerate(rows):
        print(f"{r['file']:52s} {r['gender']:6s} {r['f0_hz']:4d} {r['warp']:5.2f} {same[i]:6.3f} {other[i].mean():6.3f}"
              f" {other[i].max():6.3f} {upper[i]:6.3f} {plain[i]:6.3f} {r['profile_s']:6.2f} {r['rtf']:5.3f}")
    margin = float(same.mean() - other.mean())
    print(f"mean same-speaker cosine {same.mean():.3f} (target >= 0.72); mean other-speaker {other.mean():.3f}; "
          f"margin {margin:.3f} (target >= 0.10); recordings with same > best other: "
          f"{int((same > other.max(1)).sum())}/{n}")
    print(f"reference: real prompt half vs held-out {upper.mean():.3f}; plain espeak vs held-out {plain.mean():.3f}")
    if args.json:
        args.json.write_text(json.dumps({
            "text": args.text,
            "mean_same": float(same.mean()),
            "mean_other": float(other.mean()),
            "margin": margin,
            "per_recording": [
                {"file": r["file"], "same": float(same[i]), "other_mean": float(other[i].mean()),
                 "other_max": float(other[i].max()), "real": float(upper[i]), "espeak": float(plain[i])}
                for i, r in enumerate(rows)
            ],
        }, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
