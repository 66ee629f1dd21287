"""Throughput gain of dynamic batching, measured through the real pipeline with a fake engine
whose cost per call is mostly fixed (like one GPU forward pass): ``call_ms + item_ms * n``.

Closed loop: ``--clients`` threads each submit a job of ``--segments`` segments, wait for its
result and submit the next, until ``--jobs`` jobs are done. Repeated for each max batch size.
Prints one row per batch size: throughput (segments/s, audio s per wall s), mean batch size,
median and p95 first-chunk latency, and the gain over no batching.

    python benchmarks/batching.py [--jobs 64] [--clients 16] [--call-ms 20] [--item-ms 2]

Needs the test extra (the fake engines live in ``tests/fakes.py``).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from fakes import BatchingFakeEngine, make_settings, submit  # noqa: E402

from cosyweb.pipeline import TTSService  # noqa: E402


def run_one(max_batch: int, args: argparse.Namespace) -> dict:
    """Serve ``args.jobs`` jobs with batches of up to ``max_batch``; return the figures."""
    engine = BatchingFakeEngine(
        max_batch=max_batch,
        call_cost_s=args.call_ms / 1000.0,
        item_cost_s=args.item_ms / 1000.0,
        n_chunks=1,
        chunk_samples=int(args.segment_audio_s * 16000),
    )
    settings = make_settings(
        concurrency=1,
        max_active_jobs=max(args.clients, 1),
        max_queue=args.clients,
        max_queue_audio_s=1e6,
        batch_wait_ms=args.batch_wait_ms,
    )
    svc = TTSService(engine, settings)
    svc.start()
    texts = [f"seg{i}" for i in range(args.segments)]
    remaining = [args.jobs]
    lock = threading.Lock()
    first_chunk_ms: list[float] = []
    audio_s = [0.0]

    def client(k: int) -> None:
        while True:
            with lock:
                if remaining[0] <= 0:
                    return
                remaining[0] -= 1
            job = submit(svc, *texts, client_id=f"c{k}")
            _, status = job.result(timeout=600)
            with lock:
                first_chunk_ms.append(status.first_chunk_ms)
                audio_s[0] += status.duration_s

    t0 = time.perf_counter()
    threads = [threading.Thread(target=client, args=(k,)) for k in range(args.clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall_s = time.perf_counter() - t0
    svc.shutdown(grace_s=0)
    fc = sorted(first_chunk_ms)
    return {
        "max_batch": max_batch,
        "wall_s": wall_s,
        "segments_per_s": args.jobs * args.segments / wall_s,
        "audio_s_per_s": audio_s[0] / wall_s,
        "mean_batch": sum(len(texts) for _, texts in engine.calls) / len(engine.calls),
        "n_calls": len(engine.calls),
        "fc_p50_ms": statistics.median(fc),
        "fc_p95_ms": fc[min(len(fc) - 1, int(round(0.95 * (len(fc) - 1))))],
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--jobs", type=int, default=64)
    ap.add_argument("--clients", type=int, default=16)
    ap.add_argument("--segments", type=int, default=3, help="segments per job")
    ap.add_argument("--segment-audio-s", type=float, default=2.0, help="audio seconds per segment")
    ap.add_argument("--call-ms", type=float, default=20.0, help="fixed cost per engine call")
    ap.add_argument("--item-ms", type=float, default=2.0, help="extra cost per batched item")
    ap.add_argument("--batch-wait-ms", type=float, default=5.0)
    ap.add_argument("--batches", default="1,2,4,8,16")
    args = ap.parse_args()
    rows = [run_one(int(b), args) for b in args.batches.split(",")]
    base = rows[0]["segments_per_s"]
    print(
        f"dynamic batching, fake engine cost = {args.call_ms:g} ms/call + {args.item_ms:g} ms/item; "
        f"{args.jobs} jobs x {args.segments} segments, {args.clients} closed-loop clients, "
        f"batch_wait_ms={args.batch_wait_ms:g}"
    )
    print(f"{'max_batch':>9} {'calls':>6} {'mean_batch':>10} {'seg/s':>8} {'audio_s/s':>10} {'fc_p50_ms':>10} {'fc_p95_ms':>10} {'gain':>6}")
    for r in rows:
        print(
            f"{r['max_batch']:>9} {r['n_calls']:>6} {r['mean_batch']:>10.2f} {r['segments_per_s']:>8.1f} "
            f"{r['audio_s_per_s']:>10.1f} {r['fc_p50_ms']:>10.1f} {r['fc_p95_ms']:>10.1f} {r['segments_per_s'] / base:>5.2f}x"
        )


if __name__ == "__main__":
    main()
