"""Import the official CosyVoice code and neutralise its known pitfalls.

Everything here is about upstream FunAudioLLM/CosyVoice at commit ace7c47, which
cosyweb imports as a user's installation would and never copies:

* ``cosyvoice/utils/file_utils.py`` calls ``logging.basicConfig(level=DEBUG)`` at import
  time -> :func:`contained_logging` restores the root logger.
* ``CausalConditionalCFM.__init__`` (``cosyvoice/flow/flow_matching.py``) calls
  ``set_all_random_seed(0)`` while ``AutoModel`` builds the model -> :func:`preserved_rng`.
* ``load_wav`` uses ``torchaudio.load``, which needs torchcodec and system FFmpeg from
  torchaudio 2.9 on -> :func:`install_soundfile_loader` replaces it, in every
  ``cosyvoice.*`` module that imported it by name, with :func:`load_wav_soundfile`.
* ``CosyVoice2Model.tts`` grows ``self.token_hop_len`` on the shared model in every
  stream and never resets it -> :func:`install_model_guards` makes it per thread.
* The LLM runs in a thread (``llm_job``); a failure there (a missing ``<|endofprompt|>``
  asserts in ``CosyVoice3LM.inference``; CUDA OOM) is only logged, and a streaming ``tts``
  then waits forever for ``llm_end_dict[uuid]`` -> :func:`install_model_guards` wraps
  ``llm_job`` so the end flag is always set and the error is kept for the caller.
"""

from __future__ import annotations

import contextlib
import logging
import random
import sys
import threading
from typing import Any, Iterator, Optional

import numpy as np

from cosyweb.errors import StartupError

log = logging.getLogger(__name__)

#: Per-request dictionaries that ``CosyVoiceModel``/``CosyVoice2Model`` keep, keyed by a uuid.
SESSION_DICTS = ("tts_speech_token_dict", "llm_end_dict", "hift_cache_dict", "mel_overlap_dict", "flow_cache_dict")

#: pip names of modules whose absence upstream's import reports as ModuleNotFoundError.
_PIP_NAMES = {
    "hyperpyyaml": "hyperpyyaml",
    "whisper": "openai-whisper (pip install --no-deps openai-whisper)",
    "matcha": "matcha-tts (pip install --no-deps matcha-tts) or the third_party/Matcha-TTS submodule",
    "onnxruntime": "onnxruntime (onnxruntime-gpu on CUDA)",
    "modelscope": "modelscope",
    "inflect": "inflect",
    "omegaconf": "omegaconf",
    "conformer": "conformer",
    "diffusers": "diffusers",
    "x_transformers": "x-transformers",
    "transformers": "transformers",
    "torchaudio": "torchaudio",
    "torch": "torch",
}


@contextlib.contextmanager
def contained_logging() -> Iterator[None]:
    """Undo upstream's ``logging.basicConfig(level=logging.DEBUG)``: restore the root level and handlers."""
    root = logging.getLogger()
    level, handlers = root.level, list(root.handlers)
    try:
        yield
    finally:
        for h in list(root.handlers):
            if h not in handlers:
                root.removeHandler(h)
        root.setLevel(level)


@contextlib.contextmanager
def preserved_rng(torch: Any) -> Iterator[None]:
    """Save and restore the global RNG states (python, numpy, torch CPU, every CUDA device)."""
    py_state, np_state, cpu_state = random.getstate(), np.random.get_state(), torch.get_rng_state()
    cuda_states = torch.cuda.get_rng_state_all() if torch.cuda.is_available() else None
    try:
        yield
    finally:
        random.setstate(py_state)
        np.random.set_state(np_state)
        torch.set_rng_state(cpu_state)
        if cuda_states is not None:
            torch.cuda.set_rng_state_all(cuda_states)


def import_cosyvoice_cli() -> Any:
    """Import ``cosyvoice.cli.cosyvoice`` (the caller has set ``sys.path``) and install the loader.

    Returns:
        The module (it has ``AutoModel``).

    Raises:
        StartupError: a module CosyVoice needs is missing (the message names its pip package).
    """
    try:
        with contained_logging():
            import cosyvoice.cli.cosyvoice as cli  # noqa: PLC0415 - heavy, imported on load only
    except ModuleNotFoundError as exc:
        name = (exc.name or "").split(".")[0]
        what = _PIP_NAMES.get(name, name or str(exc))
        raise StartupError(
            f"CosyVoice 依赖的模块 {name} 未安装：请 pip install -e '.[cosyvoice]'，或 pip install -r <CosyVoice>/requirements.txt（缺少 {what}）",
            f"A module CosyVoice needs is not installed: {name}. Run pip install -e '.[cosyvoice]' or "
            f"pip install -r <CosyVoice>/requirements.txt (missing: {what})",
            module=name,
        ) from exc
    install_soundfile_loader()
    return cli


def load_wav_soundfile(wav: Any, target_sr: int, min_sr: int = 16000) -> Any:
    """Drop-in replacement for upstream ``cosyvoice.utils.file_utils.load_wav``, without torchaudio I/O.

    Reads with soundfile (libsndfile: wav, flac, ogg...), down-mixes to mono and resamples
    with soxr (high quality) instead of ``torchaudio.transforms.Resample``.

    Args:
        wav: a path or a binary file object, as upstream accepts.
        target_sr: output rate in Hz (16000 for the speech tokenizer and campplus, 24000 for the flow).
        min_sr: lowest accepted input rate when resampling, Hz (upstream asserts the same).

    Returns:
        torch.float32 tensor, shape ``(1, n_samples)``, at ``target_sr``.

    Raises:
        TypeError: ``wav`` is an array or tensor (upstream's API takes a file; the
            upstream servers that pass a tensor are broken).
        ValueError: the input rate is below ``min_sr``.
    """
    import soundfile as sf  # noqa: PLC0415
    import soxr  # noqa: PLC0415
    import torch  # noqa: PLC0415

    if isinstance(wav, (np.ndarray, torch.Tensor)):
        raise TypeError("load_wav takes a file path or a file object, not samples")
    data, sr_hz = sf.read(wav, dtype="float32", always_2d=True)
    mono = data.mean(axis=1)
    if sr_hz != target_sr:
        if sr_hz < min_sr:
            raise ValueError(f"wav sample rate {sr_hz} must be at least {min_sr}")
        mono = soxr.resample(mono, sr_hz, target_sr, quality="HQ")
    return torch.from_numpy(np.ascontiguousarray(mono, dtype=np.float32)).unsqueeze(0)


def install_soundfile_loader() -> list[str]:
    """Replace ``load_wav`` wherever a loaded ``cosyvoice.*`` module holds upstream's function.

    Upstream's frontend does ``from cosyvoice.utils.file_utils import load_wav``, so patching
    only ``file_utils`` would not reach it: every module is checked.

    Returns:
        Names of the modules patched in this call (empty when already done).
    """
    patched = []
    for name, mod in list(sys.modules.items()):
        if mod is None or not (name == "cosyvoice" or name.startswith("cosyvoice.")):
            continue
        fn = getattr(mod, "load_wav", None)
        if callable(fn) and fn is not load_wav_soundfile and getattr(fn, "__module__", "").startswith("cosyvoice"):
            setattr(mod, "load_wav", load_wav_soundfile)
            patched.append(name)
    return patched


class ModelGuards:
    """Per-model state of the guards installed by :func:`install_model_guards`.

    Attributes:
        base_hop_len: the model's initial ``token_hop_len`` (25 for CosyVoice2/3), or None.
        llm_errors: uuid -> exception raised in that request's LLM thread.
        llm_done: uuid -> Event set when that LLM thread has ended.
    """

    def __init__(self, model: Any) -> None:
        self.model = model
        self.base_hop_len: Optional[int] = None
        self._hop = threading.local()
        self._call = threading.local()
        self.llm_errors: dict[str, BaseException] = {}
        self.llm_done: dict[str, threading.Event] = {}
        self._abandoned: set[str] = set()

    # -- per-thread token_hop_len ------------------------------------------------
    def get_hop(self) -> int:
        return getattr(self._hop, "value", self.base_hop_len)

    def set_hop(self, value: int) -> None:
        self._hop.value = value

    def begin_call(self) -> None:
        """Start a request in this thread: hop back to its initial value, no uuid yet."""
        if self.base_hop_len is not None:
            self._hop.value = self.base_hop_len
        self._call.uuid = None

    def current_uuid(self) -> Optional[str]:
        """The upstream session uuid of this thread's request (known after its first ``token2wav``)."""
        return getattr(self._call, "uuid", None)

    def note_uuid(self, uuid: Optional[str]) -> None:
        self._call.uuid = uuid

    # -- clean-up -------------------------------------------------------------------
    def take_llm_error(self, uuid: Optional[str]) -> Optional[BaseException]:
        """Pop the LLM thread's exception for ``uuid``, if any."""
        return self.llm_errors.pop(uuid, None) if uuid else None

    def abandon(self, uuid: Optional[str]) -> None:
        """Free the upstream state of a request that stopped early (error, cancel, timeout).

        Removing its token list makes a still-running LLM thread stop at its next token
        (its append raises KeyError, caught by the ``llm_job`` guard, which then finishes the clean-up).
        """
        if not uuid:
            return
        model = self.model
        with model.lock:
            done = self.llm_done.get(uuid)
            if done is not None and not done.is_set():
                self._abandoned.add(uuid)
                getattr(model, "tts_speech_token_dict", {}).pop(uuid, None)
            else:
                self._pop_all(uuid)

    def finish(self, uuid: Optional[str]) -> None:
        """Forget the bookkeeping of a request that has ended (upstream popped its own state)."""
        if uuid:
            self.llm_done.pop(uuid, None)
            self.llm_errors.pop(uuid, None)

    def wait_llm(self, uuid: Optional[str], timeout_s: float) -> bool:
        """Wait until the LLM thread of ``uuid`` has ended; True if it has (or never started)."""
        ev = self.llm_done.get(uuid) if uuid else None
        return True if ev is None else ev.wait(timeout_s)

    def _pop_all(self, uuid: str) -> None:
        for name in SESSION_DICTS:
            d = getattr(self.model, name, None)
            if isinstance(d, dict):
                d.pop(uuid, None)
        self.llm_done.pop(uuid, None)


def install_model_guards(model: Any) -> ModelGuards:
    """Install the hop, LLM-thread and clean-up guards on an upstream ``CosyVoice*Model`` instance.

    * ``token_hop_len`` becomes a per-thread value (a property on a same-named subclass, so
      upstream's ``self.__class__.__name__`` checks still hold). Each request runs in its own
      producer thread and starts from the initial hop, however many streams ran before or run
      beside it.
    * ``llm_job`` is wrapped: whatever happens, ``llm_end_dict[uuid]`` ends up True (so a
      streaming ``tts`` cannot wait forever), and the exception is kept in ``llm_errors``.
    * ``token2wav`` is wrapped: it records the request's uuid for the calling thread, and on an
      exception frees that request's upstream state before re-raising.

    Idempotent: a model already guarded returns its existing :class:`ModelGuards`.
    """
    existing = getattr(model, "_cosyweb_guards", None)
    if existing is not None:
        return existing
    guards = ModelGuards(model)

    if "token_hop_len" in vars(model):
        guards.base_hop_len = int(vars(model).pop("token_hop_len"))
        cls = type(model)
        model.__class__ = type(
            cls.__name__,
            (cls,),
            {
                "token_hop_len": property(lambda self: guards.get_hop(), lambda self, v: guards.set_hop(v)),
                "__module__": cls.__module__,
                "__doc__": f"{cls.__name__} with a per-thread token_hop_len (cosyweb guard).",
            },
        )

    orig_llm_job = model.llm_job
    orig_token2wav = model.token2wav

    def llm_job(text: Any, prompt_text: Any, llm_prompt_speech_token: Any, llm_embedding: Any, uuid: str) -> None:
        done = guards.llm_done.setdefault(uuid, threading.Event())
        try:
            orig_llm_job(text, prompt_text, llm_prompt_speech_token, llm_embedding, uuid)
        except BaseException as exc:  # noqa: BLE001 - kept for the caller, never swallowed silently
            if uuid not in guards._abandoned:
                guards.llm_errors[uuid] = exc
                log.warning("CosyVoice LLM thread failed (request %s): %r", uuid, exc)
        finally:
            with model.lock:
                if uuid in guards._abandoned:
                    guards._abandoned.discard(uuid)
                    guards._pop_all(uuid)
                elif uuid in model.llm_end_dict:
                    model.llm_end_dict[uuid] = True
            done.set()

    def token2wav(*args: Any, **kwargs: Any) -> Any:
        uuid = kwargs.get("uuid")
        guards.note_uuid(uuid)
        try:
            return orig_token2wav(*args, **kwargs)
        except BaseException:
            guards.abandon(uuid)
            raise

    model.llm_job = llm_job
    model.token2wav = token2wav
    model._cosyweb_guards = guards
    return guards
