"""First-chunk latency under load: first-chunk priority versus FIFO, and the effect of
``max_active_jobs``, measured through the real pipeline with a fake engine of fixed cost per
segment (``--segment-ms``; one worker).

Closed loop: ``--clients`` threads each submit a job of ``--segments`` segments, wait for it,
and submit the next. One client is the unloaded figure; N clients load the single worker N×.
``priority_max_overtakes=0`` is plain FIFO; ``max_active_jobs=1`` serves one job at a time
(queued jobs wait for the whole previous job, so no priority can help).

    python benchmarks/priority.py [--jobs 48] [--segment-ms 50] [--segments 4]

Needs the test extra (the fake engines live in ``tests/fakes.py``).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import threading
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from fakes import BatchingFakeEngine, make_settings, submit  # noqa: E402

from cosyweb.pipeline import TTSService  # noqa: E402


def run(clients: int, max_active_jobs: int, max_overtakes: int, args: argparse.Namespace) -> tuple[float, float]:
    """Median and p95 first-chunk latency in ms for one configuration."""
    engine = BatchingFakeEngine(max_batch=1, call_cost_s=args.segment_ms / 1000.0, n_chunks=1, chunk_samples=16000)
    settings = make_settings(
        concurrency=1, max_active_jobs=max_active_jobs, max_queue=4 * clients, priority_max_overtakes=max_overtakes
    )
    svc = TTSService(engine, settings)
    svc.start()
    texts = [f"s{i}" for i in range(args.segments)]
    first_chunk_ms: list[float] = []
    left = [args.jobs]
    lock = threading.Lock()

    def client(k: int) -> None:
        while True:
            with lock:
                if left[0] <= 0:
                    return
                left[0] -= 1
            _, status = submit(svc, *texts, client_id=f"c{k}").result(timeout=600)
            with lock:
                first_chunk_ms.append(status.first_chunk_ms)

    threads = [threading.Thread(target=client, args=(k,)) for k in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    svc.shutdown(grace_s=0)
    fc = sorted(first_chunk_ms)
    return statistics.median(fc), fc[int(round(0.95 * (len(fc) - 1)))]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--jobs", type=int, default=48)
    ap.add_argument("--segments", type=int, default=4)
    ap.add_argument("--segment-ms", type=float, default=50.0)
    args = ap.parse_args()
    configs = [(1, 1, 4), (2, 1, 4), (2, 2, 0), (2, 2, 4), (4, 1, 4), (4, 4, 0), (4, 4, 4)]
    print(f"first-chunk latency, one worker, {args.segment_ms:g} ms per segment, {args.segments} segments per job, "
          f"{args.jobs} jobs per row")
    print(f"{'clients':>7} {'max_active_jobs':>15} {'policy':>9} {'fc_p50_ms':>10} {'fc_p95_ms':>10}")
    for clients, active, overtakes in configs:
        p50, p95 = run(clients, active, overtakes, args)
        policy = "fifo" if overtakes == 0 else "priority"
        print(f"{clients:>7} {active:>15} {policy:>9} {p50:>10.0f} {p95:>10.0f}")


if __name__ == "__main__":
    main()
