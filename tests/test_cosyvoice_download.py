"""scripts/download_model.py: progress, resume after an interruption, retries and fallbacks,
checked against a fake model hub directory (no network)."""

from __future__ import annotations

import hashlib
import importlib.util
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "download_model.py"
_spec = importlib.util.spec_from_file_location("download_model", SCRIPT)
dm = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(dm)


def fake_hub(path: Path, version: int = 3, llm_mb: float = 6.0) -> Path:
    """A model directory as a hub would serve it: real file names, random bytes."""
    rng = np.random.default_rng(0)
    path.mkdir(parents=True)
    (path / f"cosyvoice{version}.yaml").write_text("sample_rate: 24000\n")
    for name, n in (("llm.pt", llm_mb), ("flow.pt", 2.0), ("hift.pt", 0.5), ("campplus.onnx", 0.3),
                    (f"speech_tokenizer_v{version}.onnx", 1.0), ("CosyVoice-BlankEN/config.json", 0.001),
                    ("CosyVoice-BlankEN/model.safetensors", 1.0)):
        p = path / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(rng.bytes(int(n * 1e6)))
    return path


def sha(p: Path) -> str:
    return hashlib.sha256(p.read_bytes()).hexdigest()


def test_interrupted_copy_resumes_where_it_stopped(tmp_path, capsys):
    hub = fake_hub(tmp_path / "hub")
    dest = tmp_path / "models" / "Fun-CosyVoice3-0.5B"
    budget = {"left": 4_500_000}

    def cut(f, n):  # the connection drops after 4.5 MB
        if budget["left"] <= 0:
            raise ConnectionResetError("connection reset by peer")
        buf = f.read(min(n, budget["left"]))
        budget["left"] -= len(buf)
        return buf

    with pytest.raises(ConnectionResetError):
        dm.from_local(hub, dest, read=cut)
    parts = list(dest.rglob("*.part"))
    assert len(parts) == 1 and parts[0].stat().st_size > 0
    resumed_name = parts[0].name[: -len(".part")]
    on_disk_before = sum(p.stat().st_size for p in dest.rglob("*") if p.is_file())
    assert on_disk_before == 4_500_000

    read_again = {"n": 0}

    def count(f, n):
        buf = f.read(n)
        read_again["n"] += len(buf)
        return buf

    dm.from_local(hub, dest, read=count)
    total = sum(p.stat().st_size for p in hub.rglob("*") if p.is_file())
    assert read_again["n"] == total - on_disk_before  # nothing already on disk was read again
    for p in hub.rglob("*"):
        if p.is_file():
            assert sha(dest / p.relative_to(hub)) == sha(p)
    assert not list(dest.rglob("*.part"))
    err = capsys.readouterr().err
    assert f"{resumed_name}: resuming at" in err and "MB/s" in err and "%" in err


def test_cli_downloads_then_skips_and_reports_missing_files(tmp_path):
    hub = fake_hub(tmp_path / "hub")
    dest = tmp_path / "models" / "m"
    run = lambda *a: subprocess.run([sys.executable, str(SCRIPT), *a], capture_output=True, text=True, timeout=120)  # noqa: E731
    first = run("--model-id", "Fun-CosyVoice3-0.5B", "--dest", str(dest), "--source", f"local:{hub}")
    assert first.returncode == 0, first.stderr
    assert first.stdout.strip() == str(dest) and (dest / dm.MARKER).is_file()
    assert "100%" in first.stderr
    second = run("--dest", str(dest), "--source", f"local:{hub}")
    assert second.returncode == 0 and "already complete" in second.stderr

    broken = tmp_path / "hub2"
    fake_hub(broken)
    (broken / "llm.pt").unlink()
    bad = run("--dest", str(tmp_path / "models" / "x"), "--source", f"local:{broken}", "--retries", "1")
    assert bad.returncode == 1 and "files are missing: llm.pt" in bad.stderr and "run again to resume" in bad.stderr
    assert run("--source", "ftp", "--dest", str(tmp_path / "y")).returncode == 2


def test_model_ids_and_env(tmp_path, monkeypatch):
    assert dm.resolve("Fun-CosyVoice3-0.5B")[1]["huggingface"] == "FunAudioLLM/Fun-CosyVoice3-0.5B-2512"
    assert dm.resolve("CosyVoice2-0.5B")[1]["modelscope"] == "iic/CosyVoice2-0.5B"
    assert dm.resolve("iic/CosyVoice2-0.5B")[0] == "CosyVoice2-0.5B"
    assert dm.resolve("someone/CosyVoice2-finetune")[1]["yaml"] == "cosyvoice2.yaml"


def test_retries_then_falls_back_to_the_other_hub(tmp_path):
    hub = fake_hub(tmp_path / "hub", version=2)
    calls = []

    def flaky_hf(repo, dest):
        calls.append(("huggingface", repo))
        raise TimeoutError("read timed out")

    def ms(repo, dest):
        calls.append(("modelscope", repo))
        dm.from_local(hub, dest)

    dest = dm.download("CosyVoice2-0.5B", tmp_path / "d", "auto", retries=2, backoff_s=0.0,
                       fetchers={"huggingface": flaky_hf, "modelscope": ms})
    assert calls == [("huggingface", "FunAudioLLM/CosyVoice2-0.5B")] * 2 + [("modelscope", "iic/CosyVoice2-0.5B")]
    assert not dm.missing_files(dest, "cosyvoice2.yaml")
