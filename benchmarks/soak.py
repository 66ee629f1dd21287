"""Soak test: hundreds of requests with a new voice every time; memory, descriptors and
temporary files must stay bounded and no job may get stuck.

It starts the app (lite engine) on a free localhost port with its own ``TMPDIR``, Gradio
temp dir and output dir (``keep_outputs`` small, so the retention is exercised), then sends
``--requests`` requests (default 550): a warm-up, a sequential phase and a concurrent phase
(``--clients`` threads). Every request uses a new voice: a random variant of a real prompt
from ``../shared/prompts`` (random crop, gain and a resampling by +-6 %, which shifts pitch
and timbre, so the fingerprint always differs). The requests rotate over the entry points:

* register the variant (``POST /api/v1/prompts``, voice prepared in the background), then
  stream by ``prompt_id`` (``/api/v1/tts/stream``);
* stream with the prompt file uploaded in the same request;
* the Gradio API ``/synthesize`` (writes a wav into the output dir, pruned to ``keep_outputs``).

Tracked after the warm-up (which fills the prompt store and the voice cache): RSS and open
file descriptors of the server (``/proc/<pid>``, counted after idle keep-alive connections
have closed), files in the server's temp dir, output dir and Gradio upload cache. Checked at
the end: RSS growth after warm-up < 10 %, no new temp files (the lite engine writes two espeak
voice files at start-up), outputs within ``keep_outputs``, open descriptors back to the
warm-up level, zero stuck jobs (nothing active or queued, and every admitted job ended), zero
errors.

    python benchmarks/soak.py [--requests 550] [--warmup 130] [--clients 4]
"""

from __future__ import annotations

import argparse
import io
import random
import sys
import threading
import time
from pathlib import Path

import httpx
import numpy as np
import soundfile as sf

sys.path.insert(0, str(Path(__file__).resolve().parent))

from serving_common import AppServer, median, real_prompts, stream_tts  # noqa: E402

TEXTS = ("你好，今天天气很好。", "希望你以后能够做的比我还好呦。", "The weather is lovely today.", "谢谢你的帮助。")
KEEP_OUTPUTS = 20


def load_sources(paths: list[Path]) -> list[tuple[np.ndarray, int]]:
    """Mono float32 audio of every prompt soundfile can read (the mp3 is skipped)."""
    out = []
    for p in paths:
        try:
            data, sr = sf.read(str(p), dtype="float32", always_2d=True)
        except Exception:  # noqa: BLE001 - mp3: not needed for variants
            continue
        out.append((data.mean(axis=1), sr))
    return out


def variant(sources: list[tuple[np.ndarray, int]], rng: random.Random) -> bytes:
    """A new voice: random crop (70-100 %, at least 2.5 s), gain (-6..+3 dB) and a +-6 %
    resampling of a real prompt, as 16-bit wav bytes."""
    x, sr = sources[rng.randrange(len(sources))]
    n = len(x)
    keep = max(min(n, int(2.5 * sr)), int(n * rng.uniform(0.7, 1.0)))
    start = rng.randrange(0, n - keep + 1)
    y = x[start:start + keep]
    factor = rng.uniform(0.94, 1.06)
    t = np.arange(0, len(y) - 1, factor)
    y = np.interp(t, np.arange(len(y)), y).astype(np.float32)
    peak = float(np.max(np.abs(y))) or 1.0
    y = y * min(10 ** (rng.uniform(-6, 3) / 20), 0.98 / peak)
    buf = io.BytesIO()
    sf.write(buf, y, sr, format="WAV", subtype="PCM_16")
    return buf.getvalue()


def count_files(d: Path) -> int:
    return sum(1 for p in d.rglob("*") if p.is_file()) if d.exists() else 0


class Soak:
    def __init__(self, server: AppServer, sources, workdir: Path) -> None:
        self.server = server
        self.sources = sources
        self.workdir = workdir
        self.lock = threading.Lock()
        self.n_done = 0
        self.errors: list[str] = []
        self.busy = 0
        self.latencies: list[float] = []

    def one(self, i: int, client: httpx.Client, gradio, key: str, rng: random.Random) -> None:
        wav = variant(self.sources, rng)
        text = TEXTS[i % len(TEXTS)]
        kind = i % 10
        t0 = time.perf_counter()
        try:
            if kind < 6:  # register + stream by id
                r = client.post(self.server.url + "/api/v1/prompts", files={"prompt_audio": ("v.wav", wav)},
                                headers={"X-API-Key": key}, timeout=120)
                if r.status_code != 201:
                    raise RuntimeError(f"register {r.status_code}: {r.text[:200]}")
                res = stream_tts(client, self.server.url, {"prompt_id": r.json()["prompt_id"], "text": text}, key)
            elif kind < 9:  # upload in the request
                res = stream_tts(client, self.server.url, {"text": text}, key,
                                 files={"prompt_audio": ("v.wav", wav, "audio/wav")})
            else:  # Gradio API
                from gradio_client import handle_file

                path = self.workdir / f"client-{key}.wav"
                path.write_bytes(wav)
                gradio.predict(prompt_audio=handle_file(str(path)), prompt_text="", text=text, api_name="/synthesize")
                res = None
            if res is not None and not res.complete:
                if res.busy:
                    with self.lock:
                        self.busy += 1
                else:
                    raise RuntimeError(f"stream {res.status}: {res.error}")
        except Exception as exc:  # noqa: BLE001 - counted
            with self.lock:
                self.errors.append(f"request {i}: {exc}"[:300])
        with self.lock:
            self.n_done += 1
            self.latencies.append(time.perf_counter() - t0)

    def run(self, start: int, n: int, n_clients: int) -> None:
        from gradio_client import Client

        counter = iter(range(start, start + n))
        lock = threading.Lock()

        def worker(c: int) -> None:
            rng = random.Random(1000 * c + start)
            gradio = Client(self.server.url + "/", verbose=False)
            with httpx.Client() as client:
                while True:
                    with lock:
                        i = next(counter, None)
                    if i is None:
                        return
                    self.one(i, client, gradio, f"soak-{c}", rng)

        threads = [threading.Thread(target=worker, args=(c,)) for c in range(n_clients)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()


#: Measurements are taken after this long idle: uvicorn closes idle keep-alive connections after
#: 5 s, and the server returns freed heap pages every 10 s (``malloc_trim``, cosyweb.server.run),
#: so every snapshot sees the same state rather than a random point of the trim cycle.
IDLE_S = 12.0


def snapshot(server: AppServer) -> dict:
    time.sleep(IDLE_S)
    return {"rss_mb": server.rss_mb(), "fds": server.open_fds(), "tmp": count_files(server.tmp_dir),
            "outputs": count_files(server.output_dir), "gradio": count_files(server.gradio_tmp)}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--requests", type=int, default=550, help="requests in all (warm-up included)")
    p.add_argument("--warmup", type=int, default=130, help="warm-up requests (fill the prompt store and voice cache)")
    p.add_argument("--clients", type=int, default=4, help="threads of the concurrent phase")
    p.add_argument("--server-env", action="append", default=[], metavar="K=V", help="extra server environment")
    args = p.parse_args()

    sources = load_sources(real_prompts())
    env = {"COSYWEB_KEEP_OUTPUTS": str(KEEP_OUTPUTS), **dict(kv.split("=", 1) for kv in args.server_env)}
    server = AppServer(env=env)
    t_start = time.monotonic()
    try:
        server.wait_ready()
        st = server.stats()
        print(f"engine {st['engine']}, concurrency {st['concurrency']}, max_active_jobs {st['max_active_jobs']}, "
              f"max_queue {st['max_queue']}; {len(sources)} real prompts as variant sources; "
              f"keep_outputs {KEEP_OUTPUTS}", flush=True)
        soak = Soak(server, sources, server.workdir)
        n_rest = args.requests - args.warmup
        n_seq = n_rest // 3
        soak.run(0, args.warmup, args.clients)
        base = snapshot(server)
        print(f"after warm-up ({args.warmup} requests, {time.monotonic() - t_start:.0f} s): {base}", flush=True)
        trace = [base]
        soak.run(args.warmup, n_seq, 1)
        trace.append(snapshot(server))
        print(f"after {n_seq} sequential requests: {trace[-1]}", flush=True)
        for k in range(4):
            soak.run(args.warmup + n_seq + k * (n_rest - n_seq) // 4, (n_rest - n_seq) // 4, args.clients)
            trace.append(snapshot(server))
            print(f"concurrent phase, part {k + 1}/4 ({args.clients} clients): {trace[-1]}", flush=True)
        end = snapshot(server)
        st = server.stats()
        ended = st["completed"] + st["failed"] + st["cancelled"] + st["timeout"]
        stuck = st["active_jobs"] + st["queue_depth"] + (st["admitted"] - ended)
        growth = (end["rss_mb"] - base["rss_mb"]) / base["rss_mb"]
        peak = server.peak_rss_mb()
        print(f"\n{soak.n_done} requests in {time.monotonic() - t_start:.0f} s (median {median(soak.latencies):.2f} s); "
              f"errors {len(soak.errors)}, busy refusals {soak.busy}")
        print(f"server stats: admitted {st['admitted']}, completed {st['completed']}, failed {st['failed']}, "
              f"cancelled {st['cancelled']}, timeout {st['timeout']}, voices cached {st['voices_cached']}, "
              f"prompts registered {st['prompts_registered']}")
        print(f"RSS after warm-up {base['rss_mb']:.0f} MiB -> end {end['rss_mb']:.0f} MiB "
              f"({100 * growth:+.1f} %; target < 10 %), peak {peak:.0f} MiB; trace "
              f"{[round(s['rss_mb']) for s in trace]}")
        print(f"open fds after warm-up {base['fds']} -> end {end['fds']}; trace {[s['fds'] for s in trace]}")
        print(f"files in the server's temp dir: {end['tmp']} at the end vs {base['tmp']} after warm-up (the espeak "
              f"voice files made at start-up; target: no new ones), outputs {end['outputs']} "
              f"(keep_outputs {KEEP_OUTPUTS}), Gradio upload cache {end['gradio']} (Gradio deletes them after 1 h)")
        print(f"stuck jobs: {stuck} (target 0)")
        for e in soak.errors[:10]:
            print("  error:", e)
        ok = (growth < 0.10 and end["tmp"] <= base["tmp"] and end["outputs"] <= KEEP_OUTPUTS and stuck == 0
              and not soak.errors and end["fds"] <= base["fds"] + 5)
        print("targets:", "OK" if ok else "MISSED")
    finally:
        server.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
