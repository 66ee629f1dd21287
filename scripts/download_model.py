#!/usr/bin/env python3
"""Download a CosyVoice model into a local directory, with progress and resume after an interruption.

    python scripts/download_model.py                                   # MODEL_ID or Fun-CosyVoice3-0.5B
    python scripts/download_model.py --model-id CosyVoice2-0.5B --dest /models/CosyVoice2-0.5B
    python scripts/download_model.py --source modelscope               # or huggingface, or auto
    python scripts/download_model.py --source local:/mnt/share/Fun-CosyVoice3-0.5B   # a copy on disk

Environment: ``MODEL_ID`` (default ``Fun-CosyVoice3-0.5B``), ``MODEL_SOURCE`` (``auto``: Hugging
Face, then ModelScope), ``MODELS_DIR`` (default ``/models``), and the hubs' own ``HF_ENDPOINT``,
``HF_TOKEN``, ``MODELSCOPE_DOMAIN``.

Sources:

* ``huggingface``: ``huggingface_hub.snapshot_download(repo, local_dir=dest)``; it shows a progress
  bar per file and resumes ``.incomplete`` files.
* ``modelscope``: ``modelscope.snapshot_download(repo, local_dir=dest)``; progress bars, resumes.
* ``local:PATH``: a directory (a previous download, a network volume, a test's fake hub). Files are
  copied to ``NAME.part`` from where the last run stopped, then renamed; progress goes to stderr.

Every source is retried (``--retries``, with back-off); a retry resumes. A finished download
leaves ``.cosyweb-download.json``; the next start only checks that the required files are there.
Exit status: 0 = complete, 1 = failed (the message says what is missing), 2 = bad arguments.
"""

from __future__ import annotations

import argparse
import fcntl
import json
import os
import sys
import time
from pathlib import Path
from typing import Callable, Iterable, Optional

#: Short model ids -> hub repositories (FunAudioLLM/CosyVoice README, "Model download").
MODELS: dict[str, dict[str, str]] = {
    "Fun-CosyVoice3-0.5B": {"huggingface": "FunAudioLLM/Fun-CosyVoice3-0.5B-2512",
                            "modelscope": "FunAudioLLM/Fun-CosyVoice3-0.5B-2512", "yaml": "cosyvoice3.yaml"},
    "CosyVoice2-0.5B": {"huggingface": "FunAudioLLM/CosyVoice2-0.5B", "modelscope": "iic/CosyVoice2-0.5B",
                        "yaml": "cosyvoice2.yaml"},
}
#: Files the engine opens, per YAML (kept in step with cosyweb.engines.cosyvoice.locate.REQUIRED_FILES).
REQUIRED: dict[str, tuple[str, ...]] = {
    "cosyvoice3.yaml": ("cosyvoice3.yaml", "llm.pt", "flow.pt", "hift.pt", "campplus.onnx",
                        "speech_tokenizer_v3.onnx", "CosyVoice-BlankEN/config.json"),
    "cosyvoice2.yaml": ("cosyvoice2.yaml", "llm.pt", "flow.pt", "hift.pt", "campplus.onnx",
                        "speech_tokenizer_v2.onnx", "CosyVoice-BlankEN/config.json"),
}
MARKER = ".cosyweb-download.json"
CHUNK_BYTES = 1 << 20


def log(msg: str) -> None:
    print(f"[download] {msg}", file=sys.stderr, flush=True)


def resolve(model_id: str) -> tuple[str, dict[str, str]]:
    """``(name, {"huggingface": repo, "modelscope": repo, "yaml": file})`` for a short id or a repo id."""
    for name, repos in MODELS.items():
        if model_id in (name, repos["huggingface"], repos["modelscope"]):
            return name, repos
    yaml = "cosyvoice2.yaml" if "cosyvoice2" in model_id.lower() else "cosyvoice3.yaml"
    return model_id.rsplit("/", 1)[-1], {"huggingface": model_id, "modelscope": model_id, "yaml": yaml}


def missing_files(dest: Path, yaml: str) -> list[str]:
    """Required files absent from ``dest`` (or left as ``.part``/``.incomplete``)."""
    return [f for f in REQUIRED[yaml] if not (dest / f).is_file()]


class Progress:
    """Throttled byte-count progress on stderr: ``file done/total MB pct MB/s``."""

    def __init__(self, total_bytes: int, every_s: float = 1.0) -> None:
        self.total = max(1, total_bytes)
        self.done = 0
        self.every_s = every_s
        self.t0 = self.t_last = time.monotonic()
        self.n_lines = 0

    def add(self, n: int, name: str, force: bool = False) -> None:
        self.done += n
        now = time.monotonic()
        if force or now - self.t_last >= self.every_s:
            rate = self.done / max(now - self.t0, 1e-6) / 1e6
            log(f"{name}: {self.done / 1e6:.1f}/{self.total / 1e6:.1f} MB {100.0 * self.done / self.total:.0f}% {rate:.1f} MB/s")
            self.t_last = now
            self.n_lines += 1


def copy_resumable(src: Path, dst: Path, progress: Progress, read: Optional[Callable[..., bytes]] = None) -> int:
    """Copy ``src`` to ``dst`` through ``dst.part``, continuing a partial copy.

    Args:
        read: ``read(fileobj, n)`` hook (tests use it to cut the stream); default ``fileobj.read(n)``.

    Returns:
        Bytes copied in this call (0 when ``dst`` was already complete).
    """
    size = src.stat().st_size
    if dst.is_file() and dst.stat().st_size == size:
        progress.add(size, dst.name)
        return 0
    part = dst.with_name(dst.name + ".part")
    part.parent.mkdir(parents=True, exist_ok=True)
    offset = part.stat().st_size if part.is_file() else 0
    if offset > size:
        part.unlink()
        offset = 0
    if offset:
        log(f"{dst.name}: resuming at {offset / 1e6:.1f} MB")
    progress.add(offset, dst.name)
    copied = 0
    with open(src, "rb") as fin, open(part, "ab") as fout:
        fin.seek(offset)
        while True:
            buf = read(fin, CHUNK_BYTES) if read else fin.read(CHUNK_BYTES)
            if not buf:
                break
            fout.write(buf)
            copied += len(buf)
            progress.add(len(buf), dst.name)
    if part.stat().st_size != size:
        raise OSError(f"{dst.name}: copied {part.stat().st_size} of {size} bytes")
    os.replace(part, dst)
    progress.add(0, dst.name, force=True)
    return copied


def from_local(src_dir: Path, dest: Path, read: Optional[Callable[..., bytes]] = None) -> None:
    """Mirror ``src_dir`` into ``dest`` with :func:`copy_resumable` (hidden files skipped)."""
    if not src_dir.is_dir():
        raise FileNotFoundError(f"local source {src_dir} is not a directory")
    files = sorted(p for p in src_dir.rglob("*") if p.is_file() and not any(s.startswith(".") for s in p.relative_to(src_dir).parts))
    progress = Progress(sum(p.stat().st_size for p in files))
    for p in files:
        copy_resumable(p, dest / p.relative_to(src_dir), progress, read)


def from_huggingface(repo: str, dest: Path) -> None:
    from huggingface_hub import snapshot_download  # noqa: PLC0415

    snapshot_download(repo_id=repo, local_dir=str(dest))


def from_modelscope(repo: str, dest: Path) -> None:
    from modelscope import snapshot_download  # noqa: PLC0415

    snapshot_download(repo, local_dir=str(dest))


def plan_sources(source: str) -> list[str]:
    """``auto`` -> Hugging Face then ModelScope; otherwise the one named."""
    return ["huggingface", "modelscope"] if source == "auto" else [source]


def download(model_id: str, dest: Path, source: str = "auto", retries: int = 3, backoff_s: float = 5.0,
             fetchers: Optional[dict[str, Callable[[str, Path], None]]] = None) -> Path:
    """Make ``dest`` a complete model directory, downloading what is missing.

    Raises:
        RuntimeError: every source failed, or the result lacks required files.
    """
    name, repos = resolve(model_id)
    dest.mkdir(parents=True, exist_ok=True)
    with open(dest / ".download.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # two containers on one volume: the second waits
        if (dest / MARKER).is_file() and not missing_files(dest, repos["yaml"]):
            log(f"{name} already complete in {dest}")
            return dest
        fetch = {"huggingface": from_huggingface, "modelscope": from_modelscope, **(fetchers or {})}
        errors = []
        for src in plan_sources(source):
            repo = repos.get(src, "")
            runner: Callable[[], None]
            if src.startswith("local:"):
                runner = lambda p=Path(src[len("local:"):]): from_local(p, dest)  # noqa: E731
            elif src in fetch:
                runner = lambda f=fetch[src], r=repo: f(r, dest)  # noqa: E731
            else:
                raise ValueError(f"unknown source {src!r} (auto, huggingface, modelscope, local:PATH)")
            for attempt in range(1, retries + 1):
                try:
                    log(f"{name}: {src} {repo} -> {dest} (attempt {attempt}/{retries})")
                    runner()
                    missing = missing_files(dest, repos["yaml"])
                    if missing:
                        raise RuntimeError(f"download finished but files are missing: {', '.join(missing)}")
                    (dest / MARKER).write_text(json.dumps({"model_id": name, "source": src, "repo": repo,
                                                           "finished_at": time.strftime("%Y-%m-%dT%H:%M:%S")}))
                    log(f"{name} complete in {dest}")
                    return dest
                except Exception as exc:  # noqa: BLE001 - retried, then reported
                    errors.append(f"{src} attempt {attempt}: {type(exc).__name__}: {exc}")
                    log(errors[-1])
                    if attempt < retries:
                        time.sleep(backoff_s * attempt)
        raise RuntimeError("model download failed; run again to resume. " + " | ".join(errors[-3:]))


def main(argv: Optional[Iterable[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model-id", default=os.environ.get("MODEL_ID", "Fun-CosyVoice3-0.5B"),
                    help=f"short id ({', '.join(MODELS)}) or a hub repo id; env MODEL_ID")
    ap.add_argument("--dest", default=None, help="target directory (default: $MODELS_DIR/<name>, MODELS_DIR=/models)")
    ap.add_argument("--source", default=os.environ.get("MODEL_SOURCE", "auto"),
                    help="auto, huggingface, modelscope or local:PATH; env MODEL_SOURCE")
    ap.add_argument("--retries", type=int, default=3)
    ap.add_argument("--backoff-s", type=float, default=5.0)
    args = ap.parse_args(list(argv) if argv is not None else None)
    name, _ = resolve(args.model_id)
    dest = Path(args.dest) if args.dest else Path(os.environ.get("MODELS_DIR", "/models")) / name
    try:
        download(args.model_id, dest, args.source, args.retries, args.backoff_s)
    except ValueError as exc:
        log(str(exc))
        return 2
    except Exception as exc:  # noqa: BLE001
        log(f"ERROR: {exc}")
        return 1
    print(dest)
    return 0


if __name__ == "__main__":
    sys.exit(main())
