"""The command line: option parsing and precedence (flags > env > config), `synth` with the
lite engine on a real prompt, bad inputs exit 2 with the bilingual message, start-up errors
exit fast and non-zero without opening a port."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from cosyweb.cli import EXIT_BAD_INPUT, EXIT_STARTUP, parse_args, settings_from_args

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.timeout(180)


def run_cli(*args: str, env: dict | None = None, timeout: float = 150) -> subprocess.CompletedProcess:
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("COSYWEB_")}
    full_env.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "cosyweb", *args], cwd=ROOT, capture_output=True, text=True, timeout=timeout, env=full_env
    )


# --- parsing and precedence ------------------------------------------------------------------
def test_no_subcommand_means_serve():
    args = parse_args(["--port", "8123", "--share", "--auth", "u:p"])
    assert args.command == "serve" and args.port == 8123 and args.share is True and args.auth == "u:p"
    assert parse_args([]).command == "serve"
    assert parse_args(["synth", "--prompt-audio", "p.wav", "--text", "x", "--out", "o.wav"]).command == "synth"


def test_precedence_is_flags_then_env_then_config(tmp_path, monkeypatch):
    for k in list(os.environ):
        if k.startswith("COSYWEB_"):
            monkeypatch.delenv(k)
    cfg = tmp_path / "c.yaml"
    cfg.write_text("port: 9000\nmax_queue: 3\nconcurrency: 2\nhost: 0.0.0.0\n", encoding="utf-8")
    s = settings_from_args(parse_args(["--config", str(cfg)]))
    assert (s.port, s.max_queue, s.concurrency, s.host) == (9000, 3, 2, "0.0.0.0")
    monkeypatch.setenv("COSYWEB_PORT", "9100")
    monkeypatch.setenv("COSYWEB_MAX_QUEUE", "5")
    s = settings_from_args(parse_args(["--config", str(cfg)]))
    assert (s.port, s.max_queue, s.concurrency) == (9100, 5, 2)
    s = settings_from_args(parse_args(["--config", str(cfg), "--port", "9200", "--concurrency", "1"]))
    assert (s.port, s.max_queue, s.concurrency) == (9200, 5, 1)
    # flags not given leave the env/config value alone (no argparse defaults leak in)
    monkeypatch.setenv("COSYWEB_SHARE", "true")
    monkeypatch.setenv("COSYWEB_NO_AUTH", "true")
    s = settings_from_args(parse_args(["--config", str(cfg)]))
    assert s.share is True and s.no_auth is True


def test_every_serve_flag_reaches_settings(tmp_path):
    s = settings_from_args(parse_args([
        "--host", "0.0.0.0", "--port", "7001", "--engine", "lite", "--share", "--auth", "a:b", "--max-queue", "1",
        "--concurrency", "1", "--model-dir", str(tmp_path), "--cosyvoice-root", str(tmp_path), "--device", "cpu",
        "--log-level", "DEBUG",
    ]))
    assert (s.host, s.port, s.engine, s.share, s.auth, s.max_queue, s.concurrency) == ("0.0.0.0", 7001, "lite", True, "a:b", 1, 1)
    assert (s.model_dir, s.cosyvoice_root, s.device, s.log_level) == (tmp_path, tmp_path, "cpu", "DEBUG")


# --- serve: refusals before anything starts ---------------------------------------------------
def test_share_without_auth_is_refused():
    p = run_cli("serve", "--share", "--port", "1", timeout=60)
    assert p.returncode == EXIT_BAD_INPUT
    assert "--auth" in p.stderr and "--no-auth" in p.stderr and "公开" in p.stderr


def test_unknown_engine_exits_fast_listing_valid_ids():
    p = run_cli("serve", "--engine", "nope", "--port", "1", timeout=60)
    assert p.returncode == EXIT_STARTUP
    assert "lite" in p.stderr and "cosyvoice" in p.stderr and "nope" in p.stderr
    assert "Uvicorn running" not in p.stdout + p.stderr


def test_cosyvoice_without_its_model_exits_with_a_helpful_message(tmp_path):
    p = run_cli("serve", "--engine", "cosyvoice", "--model-dir", str(tmp_path / "nonexistent"), "--port", "1", timeout=120)
    assert p.returncode == EXIT_STARTUP, p.stderr
    assert "错误" in p.stderr and "error:" in p.stderr
    assert "Uvicorn running" not in p.stdout + p.stderr


def test_bad_setting_value_exits_2():
    p = run_cli("serve", "--port", "99999", timeout=60)
    assert p.returncode == EXIT_BAD_INPUT and "port" in p.stderr


# --- synth ---------------------------------------------------------------------------------
def test_synth_writes_the_wav_and_prints_the_json_status(shared_prompts, tmp_path):
    out = tmp_path / "out.wav"
    p = run_cli("synth", "--prompt-audio", str(shared_prompts / "cosyvoice__zero_shot_prompt.wav"),
                "--prompt-text", "希望你以后能够做的比我还好呦。", "--text", "她[h][ào]干净，今天是2026年11月30日。",
                "--emotion", "开心", "--seed", "3", "--out", str(out))
    assert p.returncode == 0, p.stderr
    status = json.loads(p.stdout.strip().splitlines()[-1])
    for key in ("duration_s", "sample_rate", "rtf", "first_chunk_ms", "warnings"):
        assert key in status
    data, sr = sf.read(out)
    assert sr == status["sample_rate"] and abs(len(data) / sr - status["duration_s"]) < 0.01
    assert 2.5 < status["duration_s"] < 12.0  # 20 syllables of speech
    assert np.sqrt(np.mean(data**2)) > 0.01  # not silence


def test_synth_reports_prompt_warnings(shared_prompts, tmp_path):
    p = run_cli("synth", "--prompt-audio", str(shared_prompts / "fireredasr__IT0011W0001.wav"), "--text", "你好。",
                "--out", str(tmp_path / "o.wav"))
    assert p.returncode == 0, p.stderr
    codes = [w["code"] for w in json.loads(p.stdout.strip().splitlines()[-1])["warnings"]]
    assert "prompt.short" in codes


@pytest.mark.parametrize(
    "extra, zh, en",
    [
        (["--text", "她[hoo4]干净"], "第2个字符处的拼音标注 [hoo4] 无效", "invalid pinyin annotation [hoo4] at character 2"),
        (["--text", "你好", "--dialect", "四川话"], "四川话", "CosyVoice3"),
        (["--text", "你好", "--dialect", "klingon"], "无效的方言", "Invalid dialect"),
        (["--text", "你好", "--speed", "5"], "无效的语速", "Invalid speed"),
        (["--text", "   "], "请输入要合成的文本", "enter the text"),
    ],
)
def test_synth_bad_inputs_exit_2_with_the_bilingual_message(shared_prompts, tmp_path, extra, zh, en):
    out = tmp_path / "o.wav"
    p = run_cli("synth", "--prompt-audio", str(shared_prompts / "cosyvoice__zero_shot_prompt.wav"), *extra, "--out", str(out))
    assert p.returncode == EXIT_BAD_INPUT, p.stdout + p.stderr
    assert zh in p.stderr and en in p.stderr
    assert not out.exists()


@pytest.mark.parametrize("kind", ["missing", "garbage", "silent"])
def test_synth_bad_prompts_exit_2(tmp_path, kind):
    prompt = tmp_path / "p.wav"
    if kind == "garbage":
        prompt.write_bytes(os.urandom(4000))
    elif kind == "silent":
        sf.write(prompt, np.zeros(16000 * 3, np.float32), 16000)
    p = run_cli("synth", "--prompt-audio", str(prompt), "--text", "你好", "--out", str(tmp_path / "o.wav"))
    assert p.returncode == EXIT_BAD_INPUT, p.stdout + p.stderr
    assert "错误：" in p.stderr and "error:" in p.stderr
    if kind == "silent":
        assert "静音" in p.stderr and "silent" in p.stderr


# --- engine registry (used by serve and synth) ---------------------------------------------------
def test_registry_maps_engine_ids_lazily_and_refuses_unknown_ones():
    from cosyweb.config import Settings
    from cosyweb.engines.registry import create_engine, engine_ids
    from cosyweb.errors import StartupError

    assert engine_ids() == ["lite", "cosyvoice", "cosyvoice3", "cosyvoice2"]
    lite = create_engine(Settings(engine="lite"))
    assert lite.capabilities.name == "lite"
    with pytest.raises(StartupError) as ei:
        create_engine(Settings(engine="tacotron"))
    assert "tacotron" in ei.value.zh and "lite, cosyvoice, cosyvoice3, cosyvoice2" in ei.value.en
