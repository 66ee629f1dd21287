#!/usr/bin/env python3
"""CosyVoice engine benchmark: first-chunk latency, RTF and throughput. Prints a table.

On a GPU machine with downloaded weights (e.g. inside the cosyweb:gpu image)::

    python benchmarks/gpu_bench.py --model-dir /models/Fun-CosyVoice3-0.5B --cosyvoice-root /opt/CosyVoice

CPU smoke check on a tiny random model (see tests/cosyvoice_tiny.py)::

    python benchmarks/gpu_bench.py --model-dir /tmp/tiny --cosyvoice-root ~/CosyVoice --device cpu --quick

What is measured (through cosyweb's adapter, i.e. what a user of the app gets from the engine):

* first-chunk latency, streaming, median and p95: with a *new* voice each time (speaker features
  extracted) and with a *cached* voice (``add_zero_shot_spk`` entry reused);
* RTF without streaming (compute seconds / audio seconds), median and p95;
* throughput at concurrency 1, 2, 4 and 8: streaming requests from that many threads at once,
  audio seconds produced per wall second, and the first-chunk median at that load.

Published anchors: CosyVoice3 "as low as 150 ms" first packet; Triton TRT-LLM CosyVoice3 on an L20:
750 ms first chunk at concurrency 4, RTF 0.109 at batch 1.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import threading
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from cosyweb.audio.types import PromptAudio  # noqa: E402
from cosyweb.config import Settings  # noqa: E402
from cosyweb.engines.cosyvoice import create  # noqa: E402
from cosyweb.options import SynthesisOptions  # noqa: E402
from cosyweb.text.types import TextSegment  # noqa: E402

DEFAULT_TRANSCRIPT = "希望你以后能够做的比我还好呦。"  # asset/zero_shot_prompt.wav, from upstream example.py
SHORT_TEXT = "今天天气很不错，我们一起去公园散步吧。"
LONG_TEXT = "收到好友从远方寄来的生日礼物，那份意外的惊喜与深深的祝福让我心中充满了甜蜜的快乐，笑容如花儿般绽放。"


def load_prompt(path: Path, rate_hz: int = 24000) -> PromptAudio:
    """Read a prompt wav as mono float32 at ``rate_hz`` (soundfile + soxr)."""
    import soundfile as sf
    import soxr

    x, sr = sf.read(str(path), dtype="float32", always_2d=True)
    x = x.mean(axis=1)
    if sr != rate_hz:
        x = soxr.resample(x, sr, rate_hz).astype(np.float32)
    return PromptAudio(samples=x, sample_rate=rate_hz, original_sample_rate=sr, duration_s=x.size / rate_hz)


def variant(prompt: PromptAudio, i: int) -> PromptAudio:
    """The same prompt with a tiny gain change: a different fingerprint, so a cache miss."""
    x = (prompt.samples * np.float32(1.0 - 1e-3 * (i + 1))).astype(np.float32)
    return PromptAudio(samples=x, sample_rate=prompt.sample_rate, original_sample_rate=prompt.original_sample_rate,
                       duration_s=prompt.duration_s)


def one_call(engine, voice, text: str, stream: bool) -> tuple[float, float, float]:
    """``(first_chunk_s, total_s, audio_s)`` of one segment."""
    seg = TextSegment(index=0, text=text, cosyvoice_text=text)
    t0 = time.perf_counter()
    first = None
    n = 0
    for chunk in engine.synthesize(voice, seg, SynthesisOptions(stream=stream)):
        if first is None:
            first = time.perf_counter() - t0
        n += chunk.size
    total = time.perf_counter() - t0
    return (first if first is not None else total), total, n / engine.capabilities.sample_rate


def pct(values: list[float], q: float) -> float:
    return float(np.percentile(np.asarray(values), q)) if values else float("nan")


def throughput(engine, voice, text: str, concurrency: int, per_thread: int) -> dict:
    firsts: list[float] = []
    audio = [0.0]
    lock = threading.Lock()

    def worker():
        for _ in range(per_thread):
            f, _, a = one_call(engine, voice, text, stream=True)
            with lock:
                firsts.append(f)
                audio[0] += a

    threads = [threading.Thread(target=worker) for _ in range(concurrency)]
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - t0
    return {"concurrency": concurrency, "requests": concurrency * per_thread, "wall_s": wall,
            "audio_s_per_s": audio[0] / wall, "req_per_s": concurrency * per_thread / wall,
            "first_chunk_p50_ms": 1000 * statistics.median(firsts), "first_chunk_p95_ms": 1000 * pct(firsts, 95)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model-dir", required=True)
    ap.add_argument("--cosyvoice-root", default=os.environ.get("COSYVOICE_ROOT"))
    ap.add_argument("--device", default="auto")
    ap.add_argument("--fp16", choices=["auto", "on", "off"], default="auto")
    ap.add_argument("--load-trt", action="store_true")
    ap.add_argument("--load-vllm", action="store_true")
    ap.add_argument("--prompt", default=None, help="prompt wav (default: <cosyvoice-root>/asset/zero_shot_prompt.wav)")
    ap.add_argument("--prompt-text", default=DEFAULT_TRANSCRIPT)
    ap.add_argument("-n", type=int, default=10, help="measurements per latency/RTF figure")
    ap.add_argument("--concurrency", default="1,2,4,8")
    ap.add_argument("--per-thread", type=int, default=3, help="requests per thread in the throughput runs")
    ap.add_argument("--text", default=SHORT_TEXT, help="text of the latency and throughput runs")
    ap.add_argument("--long-text", default=LONG_TEXT, help="text of the RTF runs")
    ap.add_argument("--quick", action="store_true",
                    help="smoke check (tiny CPU model): n=2, concurrency 1,2, 1 request per thread, short texts")
    ap.add_argument("--json", default=None, help="also write the figures to this file")
    args = ap.parse_args()
    if args.quick:
        args.n, args.concurrency, args.per_thread = 2, "1,2", 1
        args.text = args.long_text = "今天天气很不错。"
    levels = [int(c) for c in args.concurrency.split(",") if c.strip()]

    settings = Settings(engine="cosyvoice", model_dir=args.model_dir, cosyvoice_root=args.cosyvoice_root,
                        device=args.device, fp16=None if args.fp16 == "auto" else args.fp16 == "on",
                        load_trt=args.load_trt, load_vllm=args.load_vllm, concurrency=max(levels),
                        voice_cache_size=max(64, args.n + 4), warmup=True, watchdog_s=600)
    engine = create(settings)
    t0 = time.perf_counter()
    engine.load()
    load_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    engine.warmup()
    warmup_s = time.perf_counter() - t0

    prompt_path = Path(args.prompt) if args.prompt else Path(args.cosyvoice_root or ".") / "asset" / "zero_shot_prompt.wav"
    prompt = load_prompt(prompt_path)
    voice = engine.prepare_voice(prompt, args.prompt_text)
    one_call(engine, voice, args.text, stream=True)  # fill the speaker cache

    cold = [one_call(engine, engine.prepare_voice(variant(prompt, i), args.prompt_text), args.text, True)[0]
            for i in range(args.n)]
    cached = [one_call(engine, voice, args.text, True)[0] for _ in range(args.n)]
    rtf = []
    for _ in range(args.n):
        _, total, audio_s = one_call(engine, voice, args.long_text, stream=False)
        rtf.append(total / max(audio_s, 1e-9))
    runs = [throughput(engine, voice, args.text, c, args.per_thread) for c in levels]

    env = {"device": engine.device, "fp16": engine.fp16, "model": engine.capabilities.name, "load_s": load_s,
           "warmup_s": warmup_s, "prompt": str(prompt_path)}
    try:
        import torch

        if engine.device and engine.device.startswith("cuda"):
            env["gpu"] = torch.cuda.get_device_name()
            env["peak_vram_gib"] = torch.cuda.max_memory_allocated() / 2**30
            env["torch_cuda"] = torch.version.cuda
    except Exception:  # noqa: BLE001
        pass
    figures = {
        "env": env,
        "first_chunk_new_voice_ms": {"p50": 1000 * statistics.median(cold), "p95": 1000 * pct(cold, 95)},
        "first_chunk_cached_voice_ms": {"p50": 1000 * statistics.median(cached), "p95": 1000 * pct(cached, 95)},
        "rtf_nonstream": {"p50": statistics.median(rtf), "p95": pct(rtf, 95)},
        "throughput": runs,
    }

    print(f"\nCosyVoice engine benchmark  ({', '.join(f'{k}={v:.2f}' if isinstance(v, float) else f'{k}={v}' for k, v in env.items())})")
    print(f"{'measure':46s} {'p50':>10s} {'p95':>10s}")
    print(f"{'first chunk, streaming, new voice (ms)':46s} {figures['first_chunk_new_voice_ms']['p50']:10.0f} {figures['first_chunk_new_voice_ms']['p95']:10.0f}")
    print(f"{'first chunk, streaming, cached voice (ms)':46s} {figures['first_chunk_cached_voice_ms']['p50']:10.0f} {figures['first_chunk_cached_voice_ms']['p95']:10.0f}")
    print(f"{'RTF, non-streaming (compute s / audio s)':46s} {figures['rtf_nonstream']['p50']:10.3f} {figures['rtf_nonstream']['p95']:10.3f}")
    print(f"\n{'concurrency':>11s} {'requests':>9s} {'audio s/s':>10s} {'req/s':>7s} {'1st chunk p50 ms':>17s} {'p95 ms':>8s}")
    for r in runs:
        print(f"{r['concurrency']:11d} {r['requests']:9d} {r['audio_s_per_s']:10.2f} {r['req_per_s']:7.2f} "
              f"{r['first_chunk_p50_ms']:17.0f} {r['first_chunk_p95_ms']:8.0f}")
    print("\nanchors: CosyVoice3 first packet 'as low as 150 ms'; Triton TRT-LLM on L20: 750 ms first chunk "
          "at concurrency 4, RTF 0.109 at batch 1")
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=2))
    engine.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
