"""First-chunk latency and RTF of the lite engine on real prompts.

For each prompt (short and long Mandarin, English, an English mp3 and Cantonese,
from ``../shared/prompts``) it measures, after one engine warm-up:

* ``cold``: a new prompt: prompt decoding + voice profile + first segment, i.e. what a
  user waits for before the first audio of a request with a prompt never seen before;
* ``cached``: the same request again with the voice profile cached by the pipeline:
  first segment only;
* RTF: compute seconds per audio second over the whole text (all segments), cached voice.

Segments come from the real text front end with its default first-segment
length (12 characters), exactly as the pipeline streams them. Times are wall
clock (``time.perf_counter``) and process CPU (``time.process_time``); on a
shared machine the CPU figures are the steadier ones.

Requirements: the app's own environment (no torch). Run from the project root::

    python benchmarks/lite_latency.py [--prompts-dir ../shared/prompts] [--repeats 3]

Targets (issue 2 / lite notes, 2 cores): RTF well under 0.2, warm first segment about
0.3 s, prompt profile about 0.4 s.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from cosyweb.audio.prompt import load_prompt  # noqa: E402
from cosyweb.engines.lite import create  # noqa: E402
from cosyweb.options import SynthesisOptions  # noqa: E402
from cosyweb.text.frontend import analyze  # noqa: E402

TEXTS = {
    "zh": "她[h][ào]干净，今天是2026年11月30日。我们下午一起去公园散步，顺便看看湖边新开的花。",
    "en": "Hello, this is a quick preview of the lite engine. It runs on any laptop without a graphics card.",
    "yue": "你做乜嘢啊，系咪唔想倾偈啊？我哋今晚一齐去饮茶啦。",
}
#: (file, language of the text read with it)
PROMPTS = [
    ("cosyvoice__zero_shot_prompt.wav", "zh"),
    ("soulxpodcast__female_mandarin.wav", "zh"),
    ("mossttsd__pod_m_enhanced.wav", "zh"),
    ("higgsaudio__en_woman.wav", "en"),
    ("zonos__exampleaudio.mp3", "en"),
    ("minguniaudio__yueyu_demo.wav", "yue"),
]


class Clock:
    """Wall and CPU seconds since creation."""

    def __init__(self) -> None:
        self.wall0, self.cpu0 = time.perf_counter(), time.process_time()

    def read(self) -> tuple[float, float]:
        return time.perf_counter() - self.wall0, time.process_time() - self.cpu0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--prompts-dir", type=Path, default=ROOT.parent / "shared" / "prompts")
    ap.add_argument("--repeats", type=int, default=3, help="runs per prompt (the median is shown)")
    args = ap.parse_args()

    c = Clock()
    engine = create()
    engine.load()
    engine.warmup()
    wall, cpu = c.read()
    sr = engine.capabilities.sample_rate
    print(f"engine load + warm-up: {wall:.2f} s wall, {cpu:.2f} s CPU")
    print(f"{'prompt':36s} {'lang':4s} {'prompt_s':>8s} {'seg1':>5s} {'profile':>13s} {'cold 1st':>13s}"
          f" {'cached 1st':>13s} {'audio_s':>7s} {'RTF':>11s}")
    print(f"{'':36s} {'':4s} {'':>8s} {'chars':>5s} {'wall/cpu s':>13s} {'wall/cpu s':>13s} {'wall/cpu s':>13s}"
          f" {'':>7s} {'wall/cpu':>11s}")
    all_rtf, all_cached, all_profile = [], [], []
    for name, lang in PROMPTS:
        path = args.prompts_dir / name
        if not path.is_file():
            print(f"{name}: missing, skipped")
            continue
        segments = analyze(TEXTS[lang], lang)
        runs = []
        for rep in range(args.repeats):
            options = SynthesisOptions(seed=rep)
            c = Clock()
            prompt = load_prompt(str(path), target_sample_rate=24000)
            p0 = c.read()
            voice = engine.prepare_voice(prompt)
            p1 = c.read()
            next(iter(engine.synthesize(voice, segments[0], options)))
            cold = c.read()
            c = Clock()
            chunks = []
            first = None
            for seg in segments:
                for chunk in engine.synthesize(voice, seg, options):
                    chunks.append(chunk)
                    if first is None:
                        first = c.read()
            total = c.read()
            audio_s = sum(len(x) for x in chunks) / sr
            runs.append({
                "prompt_s": prompt.duration_s,
                "profile": (p1[0] - p0[0], p1[1] - p0[1]),
                "cold": cold,
                "cached": first,
                "audio_s": audio_s,
                "rtf": (total[0] / audio_s, total[1] / audio_s),
            })

        def med(key: str, i: int) -> float:
            return statistics.median(r[key][i] for r in runs)

        r0 = runs[0]
        print(f"{name:36s} {lang:4s} {r0['prompt_s']:8.1f} {len(segments[0].text):5d}"
              f" {med('profile', 0):6.3f}/{med('profile', 1):6.3f} {med('cold', 0):6.3f}/{med('cold', 1):6.3f}"
              f" {med('cached', 0):6.3f}/{med('cached', 1):6.3f} {r0['audio_s']:7.2f}"
              f" {med('rtf', 0):5.3f}/{med('rtf', 1):5.3f}")
        all_rtf.append(med("rtf", 0))
        all_cached.append(med("cached", 0))
        all_profile.append(med("profile", 0))
    if all_rtf:
        print(f"median over prompts: RTF {np.median(all_rtf):.3f} (target < 0.2), cached first chunk "
              f"{np.median(all_cached):.3f} s (target ~0.3), profile {np.median(all_profile):.3f} s (target ~0.4)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
