"""A bounded server-side store of registered prompts (upload once, synthesise many times).

A client (the HTTP API, the low-latency player) uploads a prompt recording once with
:meth:`cosyweb.pipeline.service.TTSService.register_prompt` and gets an opaque
``prompt_id``; later requests name the id instead of re-uploading the audio, and the
pipeline prepares the voice in the background right after registration (a low-priority
work item on the workers, see :mod:`cosyweb.pipeline.scheduler`), so that the first
synthesis finds the voice profile already computed.

The store is an LRU of at most ``max_size`` prompts (``settings.prompt_store_size``): a
server that sees a new voice on every request keeps constant memory. Ids are random
(``secrets.token_hex``), never derived from the audio, so an id cannot be guessed from a
recording. Thread-safe.
"""

from __future__ import annotations

import secrets
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any, Optional

from cosyweb.audio.types import PromptAudio
from cosyweb.errors import InvalidInputError

class PromptNotFoundError(InvalidInputError):
    """The ``prompt_id`` is unknown or was evicted from the store (HTTP 404): upload it again."""

    http_status = 404

    def __init__(self, prompt_id: str) -> None:
        super().__init__(
            "prompt.unknown",
            f"找不到提示音频 {prompt_id}（可能已过期），请重新上传",
            f"Unknown prompt id {prompt_id} (it may have expired); please upload the prompt again",
            prompt_id=prompt_id,
        )


@dataclass
class RegisteredPrompt:
    """One stored prompt.

    Attributes:
        prompt_id: the opaque id (32 hex characters).
        prompt: the conditioned prompt recording.
        prompt_text: its transcript ("" if unknown).
        voice_key: the voice-cache key of (prompt, prompt_text).
        created_at: registration time, seconds since the epoch.
        voice_error: the bilingual error dict (``{"code", "zh", "en", "details"}``) if the
            background voice preparation failed, else None.
    """

    prompt_id: str
    prompt: PromptAudio
    prompt_text: str
    voice_key: str
    created_at: float = field(default_factory=time.time)
    voice_error: Optional[dict[str, Any]] = None


class PromptStore:
    """LRU of :class:`RegisteredPrompt` by id.

    Args:
        max_size: prompts kept (>= 1); registering one more evicts the least recently used.
    """

    def __init__(self, max_size: int) -> None:
        self.max_size = max(1, int(max_size))
        self._items: "OrderedDict[str, RegisteredPrompt]" = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        with self._lock:
            return len(self._items)

    def add(self, prompt: PromptAudio, prompt_text: str, voice_key: str) -> RegisteredPrompt:
        """Store a prompt under a new random id and return its entry (evicts the LRU one if full)."""
        entry = RegisteredPrompt(secrets.token_hex(16), prompt, prompt_text, voice_key)
        with self._lock:
            self._items[entry.prompt_id] = entry
            while len(self._items) > self.max_size:
                self._items.popitem(last=False)
        return entry

    def get(self, prompt_id: str) -> RegisteredPrompt:
        """The entry of ``prompt_id`` (marked most recently used).

        Raises:
            PromptNotFoundError: unknown or evicted id.
        """
        with self._lock:
            entry = self._items.get(str(prompt_id))
            if entry is None:
                raise PromptNotFoundError(str(prompt_id))
            self._items.move_to_end(entry.prompt_id)
            return entry

    def remove(self, prompt_id: str) -> bool:
        """Forget ``prompt_id``. Returns False if it was not stored."""
        with self._lock:
            return self._items.pop(str(prompt_id), None) is not None

    def entries_with_key(self, voice_key: str) -> list[RegisteredPrompt]:
        """Every stored entry whose voice key is ``voice_key`` (to update their voice state)."""
        with self._lock:
            return [e for e in self._items.values() if e.voice_key == voice_key]
