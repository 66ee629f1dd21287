"""Run one upstream inference call in a producer thread, with a watchdog and click-free edges.

Why a thread per call: upstream's ``tts`` generator can block for ever (see
:mod:`cosyweb.engines.cosyvoice.upstream`); a consumer waiting on a queue with a timeout
cannot. The producer thread is also the unit the per-thread ``token_hop_len`` guard and
the seed gate work on: each call starts from the initial hop and holds the gate for
exactly its own generation.
"""

from __future__ import annotations

import gc
import logging
import queue
import threading
from dataclasses import dataclass
from typing import Any, Callable, ContextManager, Iterator, Optional

import numpy as np

from cosyweb.errors import CosywebError, EngineError, GPUMemoryError

from .upstream import ModelGuards

log = logging.getLogger(__name__)

#: Length of the fade-out at the end of each segment's audio, ms (no click at the end of a stream).
FADE_OUT_MS = 40.0
#: Length of the fade-in at the start of each segment's audio, ms (no click at segment seams).
FADE_IN_MS = 5.0


@dataclass
class CallSpec:
    """One upstream call.

    Attributes:
        start: returns upstream's generator of ``{'tts_speech': tensor (1, T)}`` (not yet started).
        gate: the seed gate context for this call (shared or exclusive).
        seed: 0 = random; otherwise seeded with upstream's ``set_all_random_seed`` inside the gate.
        set_seed: upstream's ``set_all_random_seed`` (or an equivalent).
        timeout_s: longest wait for the next chunk before the call is abandoned.
        label: for logs and messages.
    """

    start: Callable[[], Iterator[dict]]
    gate: ContextManager[Any]
    seed: int
    set_seed: Callable[[int], None]
    timeout_s: float
    label: str = ""


def is_cuda_oom(exc: BaseException) -> bool:
    """True for ``torch.cuda.OutOfMemoryError`` or a RuntimeError whose text says CUDA ran out of memory."""
    if type(exc).__name__ == "OutOfMemoryError":
        return True
    text = str(exc).lower()
    return isinstance(exc, RuntimeError) and "out of memory" in text and ("cuda" in text or "cublas" in text or "hip" in text)


def free_gpu_memory() -> None:
    """``gc.collect()`` then ``torch.cuda.empty_cache()`` when CUDA is in use."""
    gc.collect()
    try:
        import torch  # noqa: PLC0415

        if torch.cuda.is_available() and torch.cuda.is_initialized():
            torch.cuda.empty_cache()
    except Exception:  # noqa: BLE001 - best effort
        log.debug("empty_cache failed", exc_info=True)


def tensor_to_mono(t: Any) -> np.ndarray:
    """Upstream ``tts_speech`` (torch tensor ``(1, T)``, float32 or float16) -> float32 ``(T,)``."""
    arr = t.detach().float().cpu().numpy() if hasattr(t, "detach") else np.asarray(t, dtype=np.float32)
    return np.ascontiguousarray(arr.reshape(-1), dtype=np.float32)


def translate_error(exc: BaseException, label: str) -> CosywebError:
    """Map an upstream exception to our error: CUDA OOM -> :class:`GPUMemoryError` (memory freed)."""
    if isinstance(exc, CosywebError):
        return exc
    if is_cuda_oom(exc):
        free_gpu_memory()
        return GPUMemoryError()
    return EngineError(f"{label}: {type(exc).__name__}: {exc}" if label else f"{type(exc).__name__}: {exc}")


class _Producer(threading.Thread):
    """Runs one upstream generator; puts ("chunk", array) / ("error", exc) / ("done", None)."""

    def __init__(self, spec: CallSpec, guards: ModelGuards) -> None:
        super().__init__(name=f"cosyvoice-call-{spec.label}", daemon=True)
        self.spec = spec
        self.guards = guards
        self.out: "queue.Queue[tuple[str, Any]]" = queue.Queue()
        self.cancel = threading.Event()

    def run(self) -> None:
        g, spec = self.guards, self.spec
        uuid: Optional[str] = None
        error: Optional[BaseException] = None
        with spec.gate:
            try:
                g.begin_call()
                if spec.seed:
                    spec.set_seed(spec.seed)
                gen = spec.start()
                for out in gen:
                    uuid = g.current_uuid()
                    self.out.put(("chunk", tensor_to_mono(out["tts_speech"])))
                    if self.cancel.is_set():
                        gen.close()
                        raise _Cancelled()
                uuid = g.current_uuid()
                llm_exc = g.take_llm_error(uuid)
                if llm_exc is not None:
                    raise llm_exc
                g.finish(uuid)
            except BaseException as exc:  # noqa: BLE001 - handed to the consumer
                uuid = uuid or g.current_uuid()
                g.abandon(uuid)
                if spec.seed:  # nothing of this call may draw from the RNG once the gate opens
                    g.wait_llm(uuid, 30.0)
                if not isinstance(exc, _Cancelled):
                    llm_exc = g.take_llm_error(uuid)
                    error = llm_exc if llm_exc is not None else exc
        self.out.put(("error", error) if error is not None else ("done", None))


class _Cancelled(Exception):
    """The consumer went away; the producer stops at the next chunk."""


def run_call(spec: CallSpec, guards: ModelGuards, sample_rate_hz: int, gain: float = 1.0) -> Iterator[np.ndarray]:
    """Run ``spec`` and yield its audio as it comes, with a fade-in and a held-back faded tail.

    Args:
        spec: the call.
        guards: the model's guards.
        sample_rate_hz: output rate (for the fade lengths).
        gain: linear gain applied to every sample (then clipped to [-1, 1]).

    Yields:
        float32 arrays ``(n,)`` in [-1, 1]; the last ``FADE_OUT_MS`` are held back until the call
        ends, then yielded faded out. Empty chunks are skipped.

    Raises:
        EngineError: the call failed, or produced nothing for ``spec.timeout_s`` (it is then abandoned).
        GPUMemoryError: CUDA ran out of memory (memory was freed; the engine stays usable).
    """
    n_fade_out = max(1, int(sample_rate_hz * FADE_OUT_MS / 1000.0))
    n_fade_in = max(1, int(sample_rate_hz * FADE_IN_MS / 1000.0))
    producer = _Producer(spec, guards)
    producer.start()
    held = np.zeros(0, np.float32)
    n_yielded = 0
    finished = False
    try:
        while True:
            try:
                kind, payload = producer.out.get(timeout=spec.timeout_s)
            except queue.Empty:
                producer.cancel.set()
                log.error("CosyVoice call %s produced no audio for %.0f s; abandoned", spec.label, spec.timeout_s)
                raise EngineError(f"no audio for {spec.timeout_s:g} s, the call was abandoned") from None
            if kind == "error":
                finished = True
                raise translate_error(payload, spec.label) from payload
            if kind == "done":
                finished = True
                break
            chunk = payload
            if gain != 1.0:
                chunk = np.clip(chunk * np.float32(gain), -1.0, 1.0).astype(np.float32)
            if chunk.size == 0:
                continue
            buf = np.concatenate([held, chunk]) if held.size else chunk
            if n_yielded == 0 and buf.size > n_fade_out:
                k = min(n_fade_in, buf.size - n_fade_out)
                buf = buf.copy()
                buf[:k] *= np.linspace(0.0, 1.0, k, endpoint=False, dtype=np.float32)
            if buf.size > n_fade_out:
                out, held = buf[:-n_fade_out], buf[-n_fade_out:]
                n_yielded += out.size
                yield out
            else:
                held = buf
        if held.size:
            tail = held.copy()
            tail *= np.linspace(1.0, 0.0, tail.size, dtype=np.float32)
            yield tail
    finally:
        if not finished:
            producer.cancel.set()
