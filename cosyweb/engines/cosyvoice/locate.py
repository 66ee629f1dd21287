"""Find the CosyVoice source and check a model directory, before anything heavy is imported.

Every failure is a :class:`cosyweb.errors.StartupError` whose message says how to fix it,
so that ``python app.py --engine cosyvoice --model-dir /nonexistent`` fails in
milliseconds instead of importing torch, or letting upstream's ``AutoModel`` treat the
path as a ModelScope model id and go to the network (``cosyvoice/cli/cosyvoice.py``
``AutoModel`` calls ``snapshot_download`` for any ``model_dir`` that does not exist).

No torch, no CosyVoice import here.
"""

from __future__ import annotations

import importlib.util
import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from cosyweb.errors import StartupError

#: Upstream's config file name per model generation; ``AutoModel`` picks the class by it.
YAML_BY_VERSION: dict[int, str] = {3: "cosyvoice3.yaml", 2: "cosyvoice2.yaml"}
#: Files each generation's constructor opens (``CosyVoice2.__init__`` / ``CosyVoice3.__init__``).
REQUIRED_FILES: dict[int, tuple[str, ...]] = {
    3: ("cosyvoice3.yaml", "llm.pt", "flow.pt", "hift.pt", "campplus.onnx", "speech_tokenizer_v3.onnx", "CosyVoice-BlankEN"),
    2: ("cosyvoice2.yaml", "llm.pt", "flow.pt", "hift.pt", "campplus.onnx", "speech_tokenizer_v2.onnx", "CosyVoice-BlankEN"),
}
DOWNLOAD_HINT = (
    "python scripts/download_model.py --model-id Fun-CosyVoice3-0.5B --dest /models/Fun-CosyVoice3-0.5B"
)
CODE_HINT_EN = (
    "get the official code with `git clone --recursive https://github.com/FunAudioLLM/CosyVoice` and pass "
    "--cosyvoice-root /path/to/CosyVoice (or set COSYVOICE_ROOT), then `pip install -e '.[cosyvoice]'`"
)
CODE_HINT_ZH = (
    "请先获取官方代码：git clone --recursive https://github.com/FunAudioLLM/CosyVoice，"
    "然后用 --cosyvoice-root /path/to/CosyVoice（或环境变量 COSYVOICE_ROOT）指定路径，并安装 pip install -e '.[cosyvoice]'"
)


@dataclass(frozen=True)
class ModelInfo:
    """A checked local model directory.

    Attributes:
        model_dir: absolute path.
        version: 3 (Fun-CosyVoice3-0.5B) or 2 (CosyVoice2-0.5B).
        sample_rate_hz: output rate read from the YAML (24000 for both).
    """

    model_dir: Path
    version: int
    sample_rate_hz: int


def check_model_dir(model_dir: Optional[os.PathLike | str], want_version: Optional[int] = None) -> ModelInfo:
    """Check that ``model_dir`` is a complete local CosyVoice3 or CosyVoice2 model directory.

    Args:
        model_dir: the configured directory (``--model-dir`` / ``COSYWEB_MODEL_DIR``).
        want_version: 3 or 2 when the engine id names one (``cosyvoice3``); None to detect.

    Returns:
        The detected :class:`ModelInfo`.

    Raises:
        StartupError: no directory configured, it does not exist, it holds no known YAML, the YAML is
            for another generation than requested, or weights are missing. The message lists what is
            missing and the download command.
    """
    if model_dir is None or str(model_dir).strip() == "":
        raise StartupError(
            f"CosyVoice 引擎需要模型目录：请用 --model-dir 指定，或先下载：{DOWNLOAD_HINT}",
            f"The CosyVoice engine needs a model directory: pass --model-dir, or download one first: {DOWNLOAD_HINT}",
        )
    path = Path(model_dir).expanduser()
    if not path.is_dir():
        raise StartupError(
            f"模型目录不存在：{path}。请检查 --model-dir，或先下载模型：{DOWNLOAD_HINT}",
            f"Model directory not found: {path}. Check --model-dir, or download the model first: {DOWNLOAD_HINT}",
            model_dir=str(path),
        )
    path = path.resolve()
    if (path / "cosyvoice.yaml").is_file() and not any((path / y).is_file() for y in YAML_BY_VERSION.values()):
        raise StartupError(
            f"{path} 是第一代 CosyVoice(300M) 模型，本应用只支持 Fun-CosyVoice3-0.5B 与 CosyVoice2-0.5B",
            f"{path} holds a first-generation CosyVoice-300M model; cosyweb supports Fun-CosyVoice3-0.5B and CosyVoice2-0.5B",
            model_dir=str(path),
        )
    found = [v for v, y in YAML_BY_VERSION.items() if (path / y).is_file()]
    if not found:
        raise StartupError(
            f"{path} 中没有 cosyvoice3.yaml 或 cosyvoice2.yaml，不是 CosyVoice 模型目录。请下载：{DOWNLOAD_HINT}",
            f"{path} has no cosyvoice3.yaml or cosyvoice2.yaml, so it is not a CosyVoice model directory. "
            f"Download one with: {DOWNLOAD_HINT}",
            model_dir=str(path),
        )
    version = max(found)
    if want_version is not None and want_version not in found:
        raise StartupError(
            f"引擎 cosyvoice{want_version} 需要 {YAML_BY_VERSION[want_version]}，但 {path} 是 CosyVoice{version} 模型；"
            f"请改用 --engine cosyvoice 或换模型目录",
            f"Engine cosyvoice{want_version} needs {YAML_BY_VERSION[want_version]}, but {path} holds a "
            f"CosyVoice{version} model; use --engine cosyvoice or another model directory",
            model_dir=str(path),
        )
    version = want_version or version
    missing = [f for f in REQUIRED_FILES[version] if not (path / f).exists()]
    if missing:
        raise StartupError(
            f"模型目录 {path} 不完整，缺少：{', '.join(missing)}。请重新下载（支持断点续传）：{DOWNLOAD_HINT}",
            f"Model directory {path} is incomplete, missing: {', '.join(missing)}. Download it again "
            f"(resumes where it stopped): {DOWNLOAD_HINT}",
            model_dir=str(path),
            missing=missing,
        )
    return ModelInfo(path, version, _yaml_sample_rate(path / YAML_BY_VERSION[version]))


def _yaml_sample_rate(yaml_path: Path, default_hz: int = 24000) -> int:
    """Read the top-level ``sample_rate:`` of a hyperpyyaml file without evaluating its tags."""
    try:
        text = yaml_path.read_text(encoding="utf-8")
    except OSError:
        return default_hz
    m = re.search(r"^sample_rate:\s*(\d+)\s*$", text, flags=re.MULTILINE)
    return int(m.group(1)) if m else default_hz


def find_code_root(configured: Optional[os.PathLike | str]) -> Optional[Path]:
    """Locate the CosyVoice source.

    Order: ``configured`` (``--cosyvoice-root`` / ``COSYWEB_COSYVOICE_ROOT``), then the
    ``COSYVOICE_ROOT`` environment variable, then an importable ``cosyvoice`` package.

    Returns:
        The checkout root to put on ``sys.path``, or None when ``cosyvoice`` is already importable.

    Raises:
        StartupError: a configured root lacks ``cosyvoice/cli/cosyvoice.py``, or nothing is found.
    """
    for source, value in (("--cosyvoice-root", configured), ("COSYVOICE_ROOT", os.environ.get("COSYVOICE_ROOT"))):
        if value is None or str(value).strip() == "":
            continue
        root = Path(value).expanduser()
        if not (root / "cosyvoice" / "cli" / "cosyvoice.py").is_file():
            raise StartupError(
                f"{source}={root} 下没有 cosyvoice/cli/cosyvoice.py，不是 CosyVoice 源码目录。{CODE_HINT_ZH}",
                f"{source}={root} has no cosyvoice/cli/cosyvoice.py, so it is not a CosyVoice checkout; {CODE_HINT_EN}",
                cosyvoice_root=str(root),
            )
        return root.resolve()
    if importlib.util.find_spec("cosyvoice") is not None:
        return None
    raise StartupError(
        f"找不到 CosyVoice 官方代码。{CODE_HINT_ZH}",
        f"The official CosyVoice code was not found: {CODE_HINT_EN}",
    )


def add_to_sys_path(root: Optional[Path]) -> list[str]:
    """Put the checkout and its ``third_party/Matcha-TTS`` (if present) at the front of ``sys.path``.

    Returns:
        The entries added (so a caller can remove them again).
    """
    added: list[str] = []
    if root is None:
        return added
    for p in (root / "third_party" / "Matcha-TTS", root):
        s = str(p)
        if p.is_dir() and s not in sys.path:
            sys.path.insert(0, s)
            added.append(s)
    return added


def check_matcha() -> None:
    """Check that Matcha-TTS (``matcha``) is importable: CosyVoice's flow and HiFT modules import it.

    Raises:
        StartupError: neither ``third_party/Matcha-TTS`` nor the ``matcha-tts`` package is there.
    """
    if importlib.util.find_spec("matcha") is None:
        raise StartupError(
            "缺少 Matcha-TTS：请用 git clone --recursive 获取 CosyVoice（含 third_party/Matcha-TTS），"
            "或 pip install --no-deps matcha-tts==0.0.7.2",
            "Matcha-TTS is missing: clone CosyVoice with --recursive (third_party/Matcha-TTS), "
            "or pip install --no-deps matcha-tts==0.0.7.2",
        )
