"""Start-up of the CosyVoice engine: every missing piece is a fast, clear StartupError.

Missing code, missing or incomplete weights, a missing GPU, a mistyped engine id. None of
these may import torch, reach the network, or leave a half-working app.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from cosyvoice_fake import FAKE_ROOT, make_model_dir  # noqa: E402

from cosyweb.config import Settings  # noqa: E402
from cosyweb.engines.cosyvoice import create  # noqa: E402
from cosyweb.errors import StartupError  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def settings(**kw) -> Settings:
    base = dict(engine="cosyvoice", cosyvoice_root=FAKE_ROOT, device="cpu", warmup=False)
    base.update(kw)
    return Settings(**base)


def run_py(code: str, env: dict | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
    e = {k: v for k, v in os.environ.items() if k != "COSYVOICE_ROOT"}
    e.update(env or {})
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=timeout, env=e)


def test_nonexistent_model_dir_fails_fast_without_network_or_torch():
    proc = run_py(
        "import sys\n"
        "from cosyweb.config import Settings\n"
        "from cosyweb.engines.cosyvoice import create\n"
        "from cosyweb.errors import StartupError\n"
        "try:\n"
        "    create(Settings(engine='cosyvoice', model_dir='/nonexistent/Fun-CosyVoice3-0.5B'))\n"
        "except StartupError as e:\n"
        "    print(e)\n"
        "print('torch' in sys.modules, 'cosyvoice' in sys.modules, 'modelscope' in sys.modules)\n"
    )
    assert proc.returncode == 0, proc.stderr
    assert "Model directory not found: /nonexistent/Fun-CosyVoice3-0.5B" in proc.stdout
    assert "模型目录不存在" in proc.stdout and "download_model.py" in proc.stdout
    assert proc.stdout.strip().endswith("False False False")


def test_app_cli_fails_fast_with_a_helpful_message():
    proc = subprocess.run(
        [sys.executable, "app.py", "--engine", "cosyvoice", "--model-dir", "/nonexistent"],
        cwd=ROOT, capture_output=True, text=True, timeout=120,
    )
    assert proc.returncode != 0
    out = proc.stdout + proc.stderr
    assert "Model directory not found: /nonexistent" in out and "download" in out


@pytest.mark.parametrize("model_dir", [None])
def test_no_model_dir(model_dir):
    with pytest.raises(StartupError, match="needs a model directory"):
        create(settings(model_dir=model_dir))


def test_dir_without_yaml(tmp_path):
    with pytest.raises(StartupError, match="no cosyvoice3.yaml or cosyvoice2.yaml"):
        create(settings(model_dir=tmp_path))


def test_incomplete_download_lists_missing_files(tmp_path):
    md = make_model_dir(tmp_path / "m", 3)
    (md / "llm.pt").unlink()
    shutil.rmtree(md / "CosyVoice-BlankEN")
    with pytest.raises(StartupError) as err:
        create(settings(model_dir=md))
    assert err.value.details["missing"] == ["llm.pt", "CosyVoice-BlankEN"]
    assert "resumes" in str(err.value)


def test_first_generation_model_is_refused(tmp_path):
    (tmp_path / "cosyvoice.yaml").write_text("sample_rate: 22050\n")
    with pytest.raises(StartupError, match="CosyVoice-300M"):
        create(settings(model_dir=tmp_path))


def test_engine_aliases_and_detection(tmp_path):
    v3 = make_model_dir(tmp_path / "v3", 3)
    v2 = make_model_dir(tmp_path / "v2", 2)
    assert create(settings(model_dir=v3)).version == 3
    assert create(settings(model_dir=v2)).version == 2
    assert create(settings(engine="cosyvoice3", model_dir=v3)).capabilities.name == "cosyvoice3"
    assert create(settings(engine="cosyvoice2", model_dir=v2)).capabilities.name == "cosyvoice2"
    with pytest.raises(StartupError, match="needs cosyvoice2.yaml"):
        create(settings(engine="cosyvoice2", model_dir=v3))


def test_bad_code_root(tmp_path):
    md = make_model_dir(tmp_path / "m", 3)
    with pytest.raises(StartupError, match="not a CosyVoice checkout") as err:
        create(settings(model_dir=md, cosyvoice_root=tmp_path / "nothing"))
    assert "git clone --recursive https://github.com/FunAudioLLM/CosyVoice" in str(err.value)


def test_missing_code_everywhere(tmp_path):
    md = make_model_dir(tmp_path / "m", 3)
    proc = run_py(
        "from cosyweb.config import Settings\n"
        "from cosyweb.engines.cosyvoice import create\n"
        f"create(Settings(engine='cosyvoice', model_dir={str(md)!r}))\n"
    )
    assert proc.returncode != 0
    assert "The official CosyVoice code was not found" in proc.stderr and "COSYVOICE_ROOT" in proc.stderr


def test_cosyvoice_root_env_is_used(tmp_path, monkeypatch):
    md = make_model_dir(tmp_path / "m", 3)
    monkeypatch.setenv("COSYVOICE_ROOT", str(FAKE_ROOT))
    eng = create(Settings(engine="cosyvoice", model_dir=md, device="cpu"))
    assert eng.code_root == FAKE_ROOT


def test_missing_matcha(tmp_path):
    root = tmp_path / "CosyVoice"
    shutil.copytree(FAKE_ROOT / "cosyvoice", root / "cosyvoice")  # no third_party/Matcha-TTS
    md = make_model_dir(tmp_path / "m", 3)
    proc = run_py(
        "from cosyweb.config import Settings\n"
        "from cosyweb.engines.cosyvoice import create\n"
        f"e = create(Settings(engine='cosyvoice', model_dir={str(md)!r}, cosyvoice_root={str(root)!r}, device='cpu'))\n"
        "e.load()\n"
    )
    assert proc.returncode != 0
    assert "Matcha-TTS is missing" in proc.stderr and "matcha-tts" in proc.stderr


def test_missing_dependency_is_named(tmp_path):
    root = tmp_path / "CosyVoice"
    shutil.copytree(FAKE_ROOT, root, ignore=shutil.ignore_patterns("__pycache__"))
    fe = root / "cosyvoice" / "cli" / "frontend.py"
    fe.write_text("import hyperpyyaml_not_installed_here\n" + fe.read_text())
    md = make_model_dir(tmp_path / "m", 3)
    proc = run_py(
        "from cosyweb.config import Settings\n"
        "from cosyweb.engines.cosyvoice import create\n"
        f"e = create(Settings(engine='cosyvoice', model_dir={str(md)!r}, cosyvoice_root={str(root)!r}, device='cpu'))\n"
        "e.load()\n"
    )
    assert proc.returncode != 0
    assert "A module CosyVoice needs is not installed: hyperpyyaml_not_installed_here" in proc.stderr


@pytest.mark.parametrize("device, match", [
    ("auto", "No GPU found"),
    ("cuda", "No GPU found"),
    ("cuda:1", "No GPU found"),
    ("tpu", "Invalid device"),
])
def test_missing_gpu(tmp_path, device, match):
    pytest.importorskip("torch")
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    eng = create(settings(model_dir=make_model_dir(tmp_path / "m", 3), device=device))
    with pytest.raises(StartupError, match=match) as err:
        eng.load()
    if match == "No GPU found":
        assert "--device cpu" in str(err.value) and "--gpus all" in str(err.value)
    assert eng.cosyvoice is None


def test_importing_the_engine_package_does_not_import_torch():
    proc = run_py("import sys, cosyweb.engines.cosyvoice as m; m.create; print('torch' in sys.modules)")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "False"
