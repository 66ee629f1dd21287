"""Load test of the running app over its real HTTP API and Gradio API.

N concurrent closed-loop clients (each sends a request, reads it to the end, sends the next;
after a busy refusal it waits ``--busy-backoff-s`` and tries again) for ``--duration-s``
seconds, at 1×, 2× and 4× the configured capacity, with the real prompts of
``../shared/prompts`` (registered once through ``POST /api/v1/prompts``, so their voices are
prepared; ``--gradio-fraction`` of the clients use the Gradio API ``/synthesize`` instead and
upload the prompt file with every request).

Capacity is the server's ``concurrency`` (engine calls at once, ``--concurrency``) unless
``--capacity`` says otherwise; the server's ``max_active_jobs`` and ``max_queue`` are printed
with it. Before the levels, one client alone measures the unloaded first-chunk latency. With
the default queue (8 jobs), 4x the capacity is still admitted (queued); to measure busy
refusals under overload, give the server a small queue, e.g. ``--max-queue 1`` (the admission
configuration of the burst test of the main-job issue).

Reported per level: admitted / refused / other errors, first-chunk latency (client side,
request sent -> first audio byte of ``/api/v1/tts/stream``) median and p95, of all admitted
streams and of those that started at once (``X-Cosyweb-Queue-Position: 0``), busy-refusal
latency median and p95, audio seconds produced per wall second, peak RSS of the server
process, and whether every admitted job completed. Targets (issue "serving core") are
checked at the end.

    python benchmarks/load.py                          # starts the app itself (lite engine)
    python benchmarks/load.py --max-queue 1                # overload: busy refusals at 4x
    python benchmarks/load.py --concurrency 2 --duration-s 60
    python benchmarks/load.py --url http://127.0.0.1:7860   # an app that is already running

Server options when it starts the app: ``--concurrency``, ``--max-active-jobs``,
``--max-queue`` (passed as flags / ``COSYWEB_*`` variables).
"""

from __future__ import annotations

import argparse
import random
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))

from serving_common import (  # noqa: E402
    BUSY_ZH,
    TEXTS,
    AppServer,
    StreamResult,
    median,
    percentile,
    real_prompts,
    register_prompt,
    stream_tts,
)


@dataclass
class LevelResult:
    """Everything one load level measured."""

    n_clients: int
    wall_s: float = 0.0
    streams: list[StreamResult] = field(default_factory=list)
    gradio_ok: list[dict] = field(default_factory=list)  # {"total_s", "first_chunk_ms", "duration_s"}
    refusal_s: list[float] = field(default_factory=list)  # HTTP API: request sent -> 503/429 received
    gradio_refusal_s: list[float] = field(default_factory=list)  # gradio_client: upload + queue protocol included
    errors: list[str] = field(default_factory=list)
    peak_rss_mb: float = 0.0
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def admitted(self) -> int:
        return sum(1 for s in self.streams if s.status == 200) + len(self.gradio_ok)

    @property
    def completed(self) -> int:
        return sum(1 for s in self.streams if s.complete) + len(self.gradio_ok)

    @property
    def first_chunk_s(self) -> list[float]:
        return [s.t_first_audio_s for s in self.streams if s.complete and s.t_first_audio_s is not None]

    @property
    def first_chunk_direct_s(self) -> list[float]:
        return [s.t_first_audio_s for s in self.streams
                if s.complete and s.t_first_audio_s is not None and s.queue_position == 0]

    @property
    def audio_s(self) -> float:
        return sum(s.audio_s for s in self.streams if s.complete) + sum(g["duration_s"] for g in self.gradio_ok)


def http_client_loop(url: str, key: str, prompt_ids: list[str], deadline: float, res: LevelResult,
                     backoff_s: float, rng: random.Random) -> None:
    with httpx.Client() as client:
        while time.monotonic() < deadline:
            body = {"prompt_id": rng.choice(prompt_ids), "text": rng.choice(TEXTS), "seed": rng.randrange(1000)}
            r = stream_tts(client, url, body, key)
            with res.lock:
                if r.busy:
                    res.refusal_s.append(r.t_end_s)
                elif r.status != 200 or not r.complete:
                    res.errors.append(f"http {r.status}: {r.error}")
                res.streams.append(r)
            if r.busy:
                time.sleep(backoff_s)


def gradio_client_loop(url: str, prompts: list[Path], deadline: float, res: LevelResult, backoff_s: float,
                       rng: random.Random) -> None:
    from gradio_client import Client, handle_file

    client = Client(url + "/", verbose=False)
    while time.monotonic() < deadline:
        t0 = time.perf_counter()
        try:
            _wav, status = client.predict(prompt_audio=handle_file(str(rng.choice(prompts))), prompt_text="",
                                          text=rng.choice(TEXTS), seed=rng.randrange(1000), api_name="/synthesize")
        except Exception as exc:  # noqa: BLE001 - classified below
            dt = time.perf_counter() - t0
            with res.lock:
                if BUSY_ZH in str(exc):
                    res.gradio_refusal_s.append(dt)
                else:
                    res.errors.append(f"gradio: {exc}")
            if BUSY_ZH in str(exc):
                time.sleep(backoff_s)
            continue
        with res.lock:
            res.gradio_ok.append({"total_s": time.perf_counter() - t0, "first_chunk_ms": status["first_chunk_ms"],
                                  "duration_s": status["duration_s"]})


def run_level(server: AppServer, n_clients: int, duration_s: float, prompt_ids: list[str], prompts: list[Path],
              gradio_fraction: float, backoff_s: float, tag: str, seed: int = 0) -> LevelResult:
    """Run ``n_clients`` closed-loop clients for ``duration_s`` seconds; wait for stragglers."""
    res = LevelResult(n_clients)
    n_gradio = int(round(n_clients * gradio_fraction))
    deadline = time.monotonic() + duration_s
    threads = []
    for i in range(n_clients):
        rng = random.Random(seed * 1000 + i)
        if i < n_gradio:
            t = threading.Thread(target=gradio_client_loop, args=(server.url, prompts, deadline, res, backoff_s, rng))
        else:
            t = threading.Thread(target=http_client_loop,
                                 args=(server.url, f"{tag}-{i}", prompt_ids, deadline, res, backoff_s, rng))
        threads.append(t)
    stop = threading.Event()

    def sample_rss() -> None:
        while not stop.is_set():
            try:
                res.peak_rss_mb = max(res.peak_rss_mb, server.rss_mb())
            except Exception:  # noqa: BLE001 - sampling only
                pass
            stop.wait(0.5)

    sampler = threading.Thread(target=sample_rss, daemon=True)
    t0 = time.monotonic()
    sampler.start()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    res.wall_s = time.monotonic() - t0
    stop.set()
    sampler.join()
    res.peak_rss_mb = max(res.peak_rss_mb, server.peak_rss_mb() if server.pid else 0.0)
    return res


def wait_voices_ready(server: AppServer, prompt_ids: list[str], timeout_s: float = 120.0) -> None:
    deadline = time.monotonic() + timeout_s
    pending = set(prompt_ids)
    while pending and time.monotonic() < deadline:
        for pid in list(pending):
            state = httpx.get(f"{server.url}/api/v1/prompts/{pid}", headers={"X-API-Key": "bench"}).json()["voice"]
            if state in ("ready", "failed", "not_started"):
                pending.discard(pid)
        time.sleep(0.2)


def fmt_ms(x: float) -> str:
    return "   n/a" if x != x else f"{1000 * x:6.0f}"


def print_level(name: str, r: LevelResult) -> None:
    fc, direct = r.first_chunk_s, r.first_chunk_direct_s
    print(
        f"{name:>9} {r.n_clients:>3} | adm {r.admitted:4d} ref {len(r.refusal_s) + len(r.gradio_refusal_s):4d} "
        f"err {len(r.errors):3d} "
        f"done {r.completed:4d} | fc p50 {fmt_ms(median(fc))} p95 {fmt_ms(percentile(fc, 95))} "
        f"| direct n={len(direct):3d} p50 {fmt_ms(median(direct))} p95 {fmt_ms(percentile(direct, 95))} "
        f"| HTTP refusal p50 {fmt_ms(median(r.refusal_s))} p95 {fmt_ms(percentile(r.refusal_s, 95))} "
        f"| audio/s {r.audio_s / max(r.wall_s, 1e-9):5.2f} | peak RSS {r.peak_rss_mb:6.0f} MiB",
        flush=True,
    )
    if r.gradio_ok or r.gradio_refusal_s:
        g = [x["first_chunk_ms"] / 1000 for x in r.gradio_ok]
        print(f"{'':>13}   gradio /synthesize: {len(r.gradio_ok)} ok, server first chunk p50 {fmt_ms(median(g))} "
              f"p95 {fmt_ms(percentile(g, 95))} ms, total p50 {fmt_ms(median([x['total_s'] for x in r.gradio_ok]))} ms; "
              f"{len(r.gradio_refusal_s)} busy, client time p50 {fmt_ms(median(r.gradio_refusal_s))} p95 "
              f"{fmt_ms(percentile(r.gradio_refusal_s, 95))} ms (file upload and Gradio queue protocol included)")
    for e in r.errors[:5]:
        print(f"{'':>13}   error: {e[:300]}")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--url", help="drive this running app instead of starting one")
    p.add_argument("--concurrency", type=int, help="server --concurrency (when starting the app)")
    p.add_argument("--max-active-jobs", type=int, help="server max_active_jobs (when starting the app)")
    p.add_argument("--max-queue", type=int, help="server --max-queue (when starting the app)")
    p.add_argument("--first-chunk-lane", type=int, help="server first_chunk_lane (when starting the app)")
    p.add_argument("--server-env", action="append", default=[], metavar="K=V",
                   help="more server settings as COSYWEB_* variables (when starting the app)")
    p.add_argument("--capacity", type=int, help="clients at 1x (default: the server's concurrency)")
    p.add_argument("--multipliers", default="1,2,4", help="load levels as multiples of the capacity")
    p.add_argument("--duration-s", type=float, default=40.0, help="seconds per level")
    p.add_argument("--unloaded-requests", type=int, default=40, help="sequential requests of the unloaded figure")
    p.add_argument("--gradio-fraction", type=float, default=0.25, help="share of clients using the Gradio API")
    p.add_argument("--busy-backoff-s", type=float, default=0.25, help="pause after a busy refusal")
    args = p.parse_args()

    cli: list[str] = []
    env: dict[str, str] = {}
    if args.concurrency:
        cli += ["--concurrency", str(args.concurrency)]
    if args.max_queue is not None:
        cli += ["--max-queue", str(args.max_queue)]
    if args.max_active_jobs:
        env["COSYWEB_MAX_ACTIVE_JOBS"] = str(args.max_active_jobs)
    if args.first_chunk_lane is not None:
        env["COSYWEB_FIRST_CHUNK_LANE"] = str(args.first_chunk_lane)
    env.update(kv.split("=", 1) for kv in args.server_env)
    server = AppServer(tuple(cli), env, url=args.url)
    try:
        server.wait_ready()
        st = server.stats()
        capacity = args.capacity or int(st["concurrency"])
        print(f"engine {st['engine']}: concurrency {st['concurrency']}, max_active_jobs {st['max_active_jobs']}, "
              f"max_queue {st['max_queue']}, max_batch {st['max_batch']}, first_chunk_lane {st.get('first_chunk_lane')}; "
              f"capacity (1x) = {capacity} clients")
        prompts = real_prompts()
        prompt_ids = []
        with httpx.Client() as c:
            for pth in prompts:  # one at a time: each voice is prepared before the next upload
                prompt_ids.append(register_prompt(c, server.url, pth)["prompt_id"])
                wait_voices_ready(server, prompt_ids[-1:])
        print(f"{len(prompt_ids)} real prompts registered; voices prepared")

        base = LevelResult(1)
        t0 = time.monotonic()
        with httpx.Client() as c:
            for i in range(args.unloaded_requests):  # every text equally often, across the prompts
                body = {"prompt_id": prompt_ids[(7 * i) % len(prompt_ids)], "text": TEXTS[i % len(TEXTS)], "seed": i}
                r = stream_tts(c, server.url, body, "unloaded")
                base.streams.append(r)
                if not r.complete:
                    base.errors.append(f"http {r.status}: {r.error}")
        base.wall_s = time.monotonic() - t0
        base.peak_rss_mb = server.peak_rss_mb()
        print_level("unloaded", base)
        unloaded_p50, unloaded_p95 = median(base.first_chunk_s), percentile(base.first_chunk_s, 95)

        levels = {}
        for k in (int(x) for x in args.multipliers.split(",")):
            r = run_level(server, k * capacity, args.duration_s, prompt_ids, prompts, args.gradio_fraction,
                          args.busy_backoff_s, tag=f"x{k}", seed=k)
            levels[k] = r
            print_level(f"{k}x", r)
            time.sleep(1.0)
        st = server.stats()
        stuck = st["active_jobs"] + st["queue_depth"]
        print(f"after the run: active {st['active_jobs']}, queued {st['queue_depth']}, admitted {st['admitted']}, "
              f"completed {st['completed']}, failed {st['failed']}, cancelled {st['cancelled']}, timeout {st['timeout']}")

        print("\ntargets:")
        if 2 in levels:
            r = levels[2]
            p95 = percentile(r.first_chunk_direct_s, 95)
            print(f"  2x: p95 first chunk of new requests (started at once) {fmt_ms(p95)} ms vs unloaded p95 "
                  f"{fmt_ms(unloaded_p95)} ms / p50 {fmt_ms(unloaded_p50)} ms -> ratio {p95 / unloaded_p95:.2f} "
                  f"(target <= 2) {'OK' if p95 <= 2 * unloaded_p95 else 'MISSED'}")
            p95_all = percentile(r.first_chunk_s, 95)
            print(f"      (all admitted streams incl. queued: p95 {fmt_ms(p95_all)} ms, ratio {p95_all / unloaded_p95:.2f})")
        if 4 in levels:
            r = levels[4]
            p95 = percentile(r.refusal_s, 95)
            if not r.refusal_s and not r.gradio_refusal_s:
                print(f"  4x: no busy refusal at this level (max_active_jobs + max_queue held every client); other "
                      f"errors {len(r.errors)}, admitted {r.admitted} completed {r.completed}. To check the refusal "
                      f"target, run with a small queue, e.g. --max-queue 1")
            else:
                ok = p95 <= 0.05 and not r.errors and r.completed == r.admitted
                print(f"  4x: {len(r.refusal_s)} HTTP busy refusals, p95 {fmt_ms(p95)} ms (target <= 50), other errors "
                      f"{len(r.errors)} (target 0), admitted {r.admitted} completed {r.completed} -> "
                      f"{'OK' if ok else 'MISSED'}")
        print(f"  stuck jobs after the run: {stuck} (target 0)")
    finally:
        server.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
