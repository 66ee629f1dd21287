"""Serving overhead on the first chunk: the full app stack minus the bare engine call.

It starts the app (lite engine) on a free localhost port, registers a real prompt from
``../shared/prompts`` (its voice is prepared in the background), then alternates, for each
run and text:

* **stack**: ``POST /api/v1/tts/stream`` (JSON with ``prompt_id``) -> first audio byte at the
  client, read on to the end (HTTP, parsing, admission, text front end, scheduler, worker,
  event stream, PCM encoding, the network);
* **direct**: the same engine call in this process, ``LiteEngine.synthesize(voice, segment 0,
  options)`` on the same prompt and the same first segment -> first chunk.

Both are idle-machine figures (one request at a time). Printed, per text and overall: the
medians of both and the median of the paired differences (the serving overhead; target
<= 10 ms). Two processes on a shared CPU make that difference noisy (the engine call alone
varies by tens of ms), so the server also reports, for the very request, how long the engine
call that made the first chunk took (``first_engine_ms`` of ``GET /api/v1/jobs/{id}``):
client first byte minus that is the overhead of the same call measured without
cross-process noise, split into the pipeline part (server submit -> first chunk minus the
engine call) and the rest (HTTP, parsing, admission, text front end, network).

    python benchmarks/overhead.py [--runs 60] [--prompt cosyvoice__zero_shot_prompt.wav]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from serving_common import SHARED_PROMPTS, AppServer, median, percentile, register_prompt, stream_tts  # noqa: E402

TEXTS = (
    "希望你以后能够做的比我还好呦。",
    "那等我们到海洋馆之后，给妈妈买个礼物，好不好呀？",
    "The weather is lovely today, so let us go for a walk.",
)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--runs", type=int, default=60, help="runs per text")
    p.add_argument("--prompt", default="cosyvoice__zero_shot_prompt.wav", help="file in ../shared/prompts")
    args = p.parse_args()

    from cosyweb.config import Settings
    from cosyweb.engines.lite import create
    from cosyweb.options import SynthesisOptions
    from cosyweb.pipeline import TTSService

    prompt_path = SHARED_PROMPTS / args.prompt
    settings = Settings(warmup=True)
    engine = create(settings)
    local = TTSService(engine, settings)  # only for load_prompt / analyze_text: the same front end
    engine.load()
    engine.warmup()
    options = SynthesisOptions()
    prompt = local.load_prompt(str(prompt_path))
    voice = engine.prepare_voice(prompt, "")
    first_segments = [local.analyze_text(t, options)[0] for t in TEXTS]

    def direct(i: int) -> float:
        t0 = time.perf_counter()
        gen = engine.synthesize(voice, first_segments[i], options)
        next(gen)
        dt = time.perf_counter() - t0
        gen.close()
        return dt

    stack: dict[int, list[float]] = {i: [] for i in range(len(TEXTS))}
    bare: dict[int, list[float]] = {i: [] for i in range(len(TEXTS))}
    server_fc: list[float] = []
    same_call: list[float] = []  # client first byte - the server's own engine call, per request
    pipeline_part: list[float] = []  # server submit -> first chunk - the engine call
    with AppServer() as server, httpx.Client() as client:
        pid = register_prompt(client, server.url, prompt_path)["prompt_id"]
        while client.get(f"{server.url}/api/v1/prompts/{pid}").json()["voice"] == "pending":
            time.sleep(0.05)
        for i in range(len(TEXTS)):  # warm both paths
            stream_tts(client, server.url, {"prompt_id": pid, "text": TEXTS[i]}, "overhead")
            direct(i)
        for _ in range(args.runs):
            for i, text in enumerate(TEXTS):
                r = stream_tts(client, server.url, {"prompt_id": pid, "text": text}, "overhead")
                if not r.complete or r.t_first_audio_s is None:
                    raise SystemExit(f"stream failed: {r.status} {r.error}")
                stack[i].append(r.t_first_audio_s)
                job = client.get(f"{server.url}/api/v1/jobs/{r.job_id}").json()
                server_fc.append(job["result"]["first_chunk_ms"] / 1000.0)
                engine_s = job["first_engine_ms"] / 1000.0
                same_call.append(r.t_first_audio_s - engine_s)
                pipeline_part.append(server_fc[-1] - engine_s)
                bare[i].append(direct(i))
    paired = [s - b for i in stack for s, b in zip(stack[i], bare[i])]
    print(f"{args.runs} runs x {len(TEXTS)} texts, prompt {args.prompt}, lite engine, one request at a time")
    for i, text in enumerate(TEXTS):
        d = [s - b for s, b in zip(stack[i], bare[i])]
        print(f"  text {i} (first segment {first_segments[i].text!r}): through the app p50 "
              f"{1000 * median(stack[i]):6.1f} ms, direct p50 {1000 * median(bare[i]):6.1f} ms, "
              f"paired difference p50 {1000 * median(d):5.1f} ms")
    overhead_ms = 1000 * median(paired)
    print(f"serving overhead, app minus direct call (median of paired differences): {overhead_ms:.1f} ms "
          f"(p95 {1000 * percentile(paired, 95):.1f} ms) (target <= 10 ms) {'OK' if overhead_ms <= 10 else 'MISSED'}")
    print(f"serving overhead, app minus the server's own engine call of the same request: "
          f"p50 {1000 * median(same_call):.1f} ms, p95 {1000 * percentile(same_call, 95):.1f} ms")
    print(f"  of which in the pipeline (submit -> first chunk minus the engine call): p50 "
          f"{1000 * median(pipeline_part):.2f} ms; HTTP, parsing, admission, text front end, network: p50 "
          f"{1000 * (median(same_call) - median(pipeline_part)):.2f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
