"""Device choice for the CosyVoice engine: cuda, then mps, then (only when asked) cpu.

Upstream places its models on ``torch.device('cuda' if torch.cuda.is_available() else 'cpu')``
(``cosyvoice/cli/model.py``, ``frontend.py``); cosyweb chooses first, then selects the CUDA
device (``cuda:N``) before ``AutoModel`` or moves the modules to MPS after it.
"""

from __future__ import annotations

from typing import Any

from cosyweb.errors import StartupError

_NO_GPU_EN = (
    "No GPU found: torch sees no CUDA device (and no Apple MPS). CosyVoice3 on the CPU is many times slower "
    "than real time. Check `nvidia-smi`, run Docker with `--gpus all`, and make sure torch's CUDA build "
    "matches the driver (python -c 'import torch; print(torch.version.cuda, torch.cuda.is_available())'). "
    "To run on the CPU anyway pass --device cpu, or use --engine lite."
)
_NO_GPU_ZH = (
    "未找到 GPU：torch 看不到 CUDA 设备（也没有 Apple MPS）。CosyVoice3 在 CPU 上远慢于实时。请检查 nvidia-smi、"
    "Docker 是否加了 --gpus all、torch 的 CUDA 版本是否与驱动匹配。若仍要用 CPU 运行请加 --device cpu，或改用 --engine lite。"
)


def resolve_device(requested: str, torch: Any) -> str:
    """Pick the torch device string.

    Args:
        requested: ``"auto"``, ``"cuda"``, ``"cuda:N"``, ``"mps"`` or ``"cpu"``.
        torch: the imported torch module.

    Returns:
        ``"cuda:N"``, ``"mps"`` or ``"cpu"``.

    Raises:
        StartupError: ``auto`` found no GPU; a requested CUDA/MPS device is not there; an unknown name.
    """
    req = (requested or "auto").strip().lower()
    has_mps = bool(getattr(getattr(torch.backends, "mps", None), "is_available", lambda: False)())
    if req == "auto":
        if torch.cuda.is_available():
            return f"cuda:{torch.cuda.current_device()}"
        if has_mps:
            return "mps"
        raise StartupError(_NO_GPU_ZH, _NO_GPU_EN)
    if req == "cuda" or req.startswith("cuda:"):
        if not torch.cuda.is_available():
            raise StartupError(_NO_GPU_ZH, _NO_GPU_EN, requested=req)
        index = 0 if req == "cuda" else _parse_index(req)
        n = torch.cuda.device_count()
        if index >= n:
            raise StartupError(
                f"请求的设备 {req} 不存在（只有 {n} 块 GPU）",
                f"Requested device {req} does not exist (torch sees {n} GPU(s))",
                requested=req,
            )
        return f"cuda:{index}"
    if req == "mps":
        if not has_mps:
            raise StartupError("请求了 MPS，但 torch 不支持本机的 MPS", "MPS was requested but torch has no MPS here", requested=req)
        return "mps"
    if req == "cpu":
        return "cpu"
    raise StartupError(
        f"无效的设备名：{requested}（可用 auto、cuda、cuda:N、mps、cpu）",
        f"Invalid device {requested!r} (use auto, cuda, cuda:N, mps or cpu)",
        requested=req,
    )


def _parse_index(req: str) -> int:
    try:
        return int(req.split(":", 1)[1])
    except ValueError:
        raise StartupError(f"无效的设备名：{req}", f"Invalid device {req!r}", requested=req) from None


def default_fp16(device: str, configured: "bool | None") -> bool:
    """fp16 on CUDA by default; never off CUDA (upstream's autocast is ``torch.cuda.amp``)."""
    if not device.startswith("cuda"):
        return False
    return True if configured is None else bool(configured)
