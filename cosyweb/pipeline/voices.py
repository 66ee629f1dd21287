"""A bounded LRU cache of prepared voices, with single-flight preparation.

:meth:`cosyweb.engines.base.Engine.prepare_voice` (voice profile / speaker embedding)
runs once per prompt fingerprint + prompt text; later jobs with the same prompt reuse
the result. The cache holds at most ``max_size`` voices (least recently used evicted),
so a soak with a new voice per request keeps memory flat. Two workers that miss on the
same key at once share one preparation (the second waits on the first's Future).
"""

from __future__ import annotations

import hashlib
import threading
import weakref
from collections import OrderedDict
from concurrent.futures import Future
from typing import Callable

from cosyweb.audio.types import PromptAudio
from cosyweb.engines.base import Voice


_fingerprints: dict[int, tuple["weakref.ref[PromptAudio]", str]] = {}
_fingerprints_lock = threading.Lock()


def prompt_fingerprint(prompt: PromptAudio) -> str:
    """``prompt.fingerprint``, memoised per prompt object while it lives.

    The fingerprint is a sha1 over the int16 prompt (~1.4 MB for 30 s at 24 kHz, about 4 ms);
    the UI reuses one PromptAudio per upload, so repeat jobs skip that cost.
    """
    pid = id(prompt)
    with _fingerprints_lock:
        hit = _fingerprints.get(pid)
        if hit is not None and hit[0]() is prompt:
            return hit[1]
    fp = prompt.fingerprint

    def _forget(_ref: "weakref.ref[PromptAudio]", pid: int = pid) -> None:
        with _fingerprints_lock:
            if _fingerprints.get(pid, (None,))[0] is _ref:
                del _fingerprints[pid]

    with _fingerprints_lock:
        _fingerprints[pid] = (weakref.ref(prompt, _forget), fp)
    return fp


def voice_key(prompt: PromptAudio, prompt_text: str) -> str:
    """Cache key ``"<prompt fingerprint>:<sha1 of prompt text, 16 hex>"``. Computed on a worker,
    never in ``submit``."""
    text_hash = hashlib.sha1(prompt_text.strip().encode("utf-8")).hexdigest()[:16]
    return f"{prompt_fingerprint(prompt)}:{text_hash}"


class VoiceCache:
    """LRU of :class:`Voice` by key.

    Args:
        max_size: voices kept (>= 1).

    Attributes:
        hits, misses: lookup counts.
    """

    def __init__(self, max_size: int) -> None:
        self.max_size = max(1, int(max_size))
        self._voices: "OrderedDict[str, Voice]" = OrderedDict()
        self._pending: dict[str, Future] = {}
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def __len__(self) -> int:
        with self._lock:
            return len(self._voices)

    def __contains__(self, key: str) -> bool:
        with self._lock:
            return key in self._voices

    def is_pending(self, key: str) -> bool:
        """True while a preparation of ``key`` is running (another caller would wait for it)."""
        with self._lock:
            return key in self._pending

    def keys(self) -> list[str]:
        """Keys from least to most recently used."""
        with self._lock:
            return list(self._voices)

    def get_or_create(self, key: str, factory: Callable[[], Voice]) -> tuple[Voice, bool]:
        """Return ``(voice, hit)``: the cached voice, or ``factory()``'s result, cached.

        Raises:
            Whatever ``factory`` raises (nothing is cached then; a concurrent waiter on the
            same key gets the same exception).
        """
        with self._lock:
            voice = self._voices.get(key)
            if voice is not None:
                self._voices.move_to_end(key)
                self.hits += 1
                return voice, True
            self.misses += 1
            fut = self._pending.get(key)
            owner = fut is None
            if owner:
                fut = self._pending[key] = Future()
        if not owner:
            return fut.result(), True
        try:
            voice = factory()
        except BaseException as exc:
            with self._lock:
                self._pending.pop(key, None)
            fut.set_exception(exc)
            raise
        with self._lock:
            self._pending.pop(key, None)
            self._voices[key] = voice
            self._voices.move_to_end(key)
            while len(self._voices) > self.max_size:
                self._voices.popitem(last=False)
        fut.set_result(voice)
        return voice, False

    def clear(self) -> None:
        """Drop every cached voice."""
        with self._lock:
            self._voices.clear()
