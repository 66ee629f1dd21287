"""Shared helpers of the serving benchmarks (``load.py``, ``soak.py``, ``overhead.py``).

* :class:`AppServer` starts ``python app.py`` on a free localhost port (or wraps ``--url``),
  waits for ``/readyz``, reads the server process's RSS, peak RSS and open file descriptors
  from ``/proc`` (Linux) and stops it with SIGTERM.
* :func:`stream_tts` runs one ``POST /api/v1/tts/stream`` and times it on the client.
* :func:`real_prompts` lists the real recordings of ``../shared/prompts``.

Not a test module; imported by the scripts next to it.
"""

from __future__ import annotations

import csv
import os
import re
import shutil
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from serving_app import AppProcess, free_port  # noqa: E402,F401  (the project's one app launcher)

SHARED_PROMPTS = ROOT.parent / "shared" / "prompts"
BUSY_ZH = "系统繁忙，请稍后再试"

#: Synthesis texts of the load benchmarks: two sentences each (a short first segment, then one
#: or two later segments), Mandarin with an annotation and numbers, and English.
TEXTS = (
    "希望你以后能够做的比我还好呦。今天天气很好，我们一起去公园散步吧。",
    "那等我们到海洋馆之后，给妈妈买个礼物，好不好呀？然后我们一起回家吃饭。",
    "The weather is lovely today, so let us go for a walk in the park.",
    "她[h][ào]干净，今天是2026年11月30日。晚上七点半我们在学校门口见面。",
    "上次你说鞋子有点磨脚，我给你买了一双软软的鞋垫，你试试看合不合适。",
)


def real_prompts(directory: Path = SHARED_PROMPTS) -> list[Path]:
    """The recordings listed in ``manifest.tsv`` (sorted by name).

    Raises:
        SystemExit: the directory or its manifest is missing (a clear message, not a skip).
    """
    manifest = directory / "manifest.tsv"
    if not manifest.is_file():
        raise SystemExit(f"real prompts not found: {manifest} (expected ../shared/prompts beside the checkout)")
    with open(manifest, encoding="utf-8") as f:
        rows = list(csv.DictReader(f, delimiter="\t"))
    return sorted(directory / r["file"] for r in rows if (directory / r["file"]).is_file())


def percentile(values: list[float], q: float) -> float:
    """The ``q``-th percentile (0..100, linear interpolation); NaN for no values."""
    if not values:
        return float("nan")
    xs = sorted(values)
    if len(xs) == 1:
        return xs[0]
    k = (len(xs) - 1) * q / 100.0
    lo, hi = int(k), min(int(k) + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (k - lo)


def median(values: list[float]) -> float:
    """Median, NaN for no values."""
    return statistics.median(values) if values else float("nan")


def proc_status_kb(pid: int, key: str) -> int:
    """A ``/proc/<pid>/status`` field in kB (``VmRSS``, ``VmHWM``...), 0 if unreadable."""
    try:
        text = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return 0
    m = re.search(rf"^{key}:\s+(\d+) kB", text, re.M)
    return int(m.group(1)) if m else 0


def n_open_fds(pid: int) -> int:
    """Open file descriptors of ``pid`` (``/proc/<pid>/fd``), -1 if unreadable."""
    try:
        return len(os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return -1


def scrape_metric(text: str, name: str) -> Optional[float]:
    """The value of an unlabelled sample ``name`` in Prometheus text, or None."""
    m = re.search(rf"^{re.escape(name)} ([0-9.eE+-]+)$", text, re.M)
    return float(m.group(1)) if m else None


class AppServer:
    """``python app.py`` on a free port (or an already running app at ``url``).

    A local app is started with ``tests/serving_app.AppProcess`` (the project's one launcher),
    logging at WARNING, with ``TMPDIR`` inside ``workdir`` so leaked temp files can be counted.

    Args:
        args: extra command-line options (``--concurrency 1`` ...).
        env: extra environment (``COSYWEB_MAX_ACTIVE_JOBS`` ...).
        url: use this running app instead of starting one (RSS then comes from ``/metrics``).
        workdir: where the server's outputs, Gradio temp files and log go (a new temp dir, removed
            by :meth:`stop`, if None).
    """

    def __init__(self, args: tuple[str, ...] = (), env: Optional[dict[str, str]] = None, url: Optional[str] = None,
                 workdir: Optional[Path] = None) -> None:
        self.app: Optional[AppProcess] = None
        self._own_workdir = workdir is None and not url
        self.workdir = Path(workdir or (Path(tempfile.gettempdir()) if url else tempfile.mkdtemp(prefix="cosyweb-bench-")))
        self.output_dir = self.workdir / "outputs"
        self.gradio_tmp = self.workdir / "gradio"
        self.tmp_dir = self.workdir / "tmp"
        if url:
            self.url = url.rstrip("/")
            return
        for d in (self.output_dir, self.gradio_tmp, self.tmp_dir):
            d.mkdir(parents=True, exist_ok=True)
        self.app = AppProcess(self.workdir, *args,
                              env={"TMPDIR": str(self.tmp_dir), "COSYWEB_LOG_LEVEL": "WARNING", **(env or {})})
        self.port, self.url = self.app.port, self.app.url

    @property
    def pid(self) -> Optional[int]:
        """The local server's process id (None for a remote app)."""
        return self.app.pid if self.app is not None else None

    def wait_ready(self, timeout_s: float = 240.0) -> "AppServer":
        """Block until ``/readyz`` answers 200 (a remote app: once, then trusted).

        Raises:
            RuntimeError: the process exited or did not get ready in time (with its log tail).
        """
        if self.app is not None:
            self.app.wait_ready(timeout_s)
        return self

    def log_tail(self, n_chars: int = 3000) -> str:
        """The last ``n_chars`` characters of the local server's log ("" for a remote app)."""
        return self.app.log()[-n_chars:] if self.app is not None else ""

    def rss_mb(self) -> float:
        """Current RSS of the server, MiB (from ``/metrics`` for a remote app)."""
        if self.pid is not None:
            return proc_status_kb(self.pid, "VmRSS") / 1024.0
        v = scrape_metric(httpx.get(self.url + "/metrics", timeout=5).text, "process_resident_memory_bytes")
        return (v or 0.0) / 2**20

    def peak_rss_mb(self) -> float:
        """Peak RSS (``VmHWM``) of a local server, MiB; NaN for a remote one."""
        return proc_status_kb(self.pid, "VmHWM") / 1024.0 if self.pid is not None else float("nan")

    def open_fds(self) -> int:
        """Open file descriptors of the server (``/proc`` or ``process_open_fds``)."""
        if self.pid is not None:
            return n_open_fds(self.pid)
        v = scrape_metric(httpx.get(self.url + "/metrics", timeout=5).text, "process_open_fds")
        return int(v) if v is not None else -1

    def stats(self) -> dict:
        """``GET /api/v1/stats``."""
        return httpx.get(self.url + "/api/v1/stats", timeout=10).json()

    def stop(self, timeout_s: float = 90.0) -> Optional[int]:
        """SIGTERM and wait; returns the exit status (None for a remote app). A temp workdir
        of a cleanly stopped server is removed; an unclean exit prints the log's tail."""
        if self.app is None:
            return None
        rc = self.app.stop(timeout_s)
        if rc != 0:
            print(f"server exited with {rc}:\n{self.log_tail()}")
        elif self._own_workdir:
            shutil.rmtree(self.workdir, ignore_errors=True)
        return rc

    def __enter__(self) -> "AppServer":
        return self.wait_ready()

    def __exit__(self, *exc: Any) -> None:
        self.stop()


def register_prompt(client: httpx.Client, url: str, path: Path, data: Optional[bytes] = None, prompt_text: str = "",
                    api_key: str = "bench") -> dict:
    """``POST /api/v1/prompts`` with a file; returns the JSON body.

    Raises:
        httpx.HTTPStatusError: the upload was refused.
    """
    content = data if data is not None else path.read_bytes()
    r = client.post(url + "/api/v1/prompts", files={"prompt_audio": (path.name, content)},
                    data={"prompt_text": prompt_text}, headers={"X-API-Key": api_key}, timeout=60)
    r.raise_for_status()
    return r.json()


@dataclass
class StreamResult:
    """One streaming request, timed on the client (seconds from sending the request).

    Attributes:
        status: HTTP status (0: no response).
        t_headers_s: response headers received.
        t_first_audio_s: first audio byte received (None if none).
        t_end_s: body complete or failure.
        n_bytes: audio bytes received.
        sample_rate: from ``X-Sample-Rate``.
        queue_position: from ``X-Cosyweb-Queue-Position`` (0: started at once).
        job_id: from ``X-Cosyweb-Job-Id``.
        error: JSON error body of a refusal, or a transport error text.
        complete: the stream ended cleanly (False: aborted mid-stream or refused).
    """

    status: int = 0
    t_headers_s: float = 0.0
    t_first_audio_s: Optional[float] = None
    t_end_s: float = 0.0
    n_bytes: int = 0
    sample_rate: int = 0
    queue_position: Optional[int] = None
    job_id: str = ""
    error: Any = None
    complete: bool = False
    extra: dict = field(default_factory=dict)

    @property
    def audio_s(self) -> float:
        return self.n_bytes / 2.0 / self.sample_rate if self.sample_rate else 0.0

    @property
    def busy(self) -> bool:
        return self.status in (503, 429) and isinstance(self.error, dict) and BUSY_ZH in str(self.error)


def stream_tts(client: httpx.Client, url: str, body: dict, api_key: str, timeout_s: float = 300.0,
               files: Optional[dict] = None) -> StreamResult:
    """One ``POST /api/v1/tts/stream`` (JSON ``body``, or multipart with ``files``), read to the end."""
    res = StreamResult()
    t0 = time.perf_counter()
    kw: dict[str, Any] = {"data": body, "files": files} if files else {"json": body}
    try:
        with client.stream("POST", url + "/api/v1/tts/stream", headers={"X-API-Key": api_key}, timeout=timeout_s,
                           **kw) as r:
            res.status = r.status_code
            res.t_headers_s = time.perf_counter() - t0
            if r.status_code != 200:
                r.read()
                try:
                    res.error = r.json()
                except ValueError:
                    res.error = r.text
                res.extra["retry_after"] = r.headers.get("retry-after")
                res.t_end_s = time.perf_counter() - t0
                return res
            res.sample_rate = int(r.headers["x-sample-rate"])
            res.queue_position = int(r.headers.get("x-cosyweb-queue-position", "0"))
            res.job_id = r.headers.get("x-cosyweb-job-id", "")
            for chunk in r.iter_raw():
                if chunk and res.t_first_audio_s is None:
                    res.t_first_audio_s = time.perf_counter() - t0
                res.n_bytes += len(chunk)
            res.complete = True
    except httpx.HTTPError as exc:
        res.error = f"{type(exc).__name__}: {exc}"
    res.t_end_s = time.perf_counter() - t0
    return res
