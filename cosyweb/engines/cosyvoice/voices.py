"""Prompt files and cached speaker features for the CosyVoice engine.

* :class:`PromptFiles` writes each prompt once as a float32 wav file (>= 16 kHz) in a
  private temporary folder, because every upstream inference method takes the prompt as
  a *path* (``load_wav``); the upstream servers that pass a tensor are broken.
* :class:`SpeakerCache` keeps upstream speaker entries (``add_zero_shot_spk``, then
  ``zero_shot_spk_id``) in a bounded LRU keyed by the prompt's audio hash plus the text the
  LLM is prompted with, so a repeated voice skips the speech-token, fbank/campplus and mel
  feature extraction. Entries in use are pinned and never evicted under a running request.
"""

from __future__ import annotations

import contextlib
import hashlib
import shutil
import tempfile
import threading
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator

import numpy as np
import soundfile as sf
import soxr

from cosyweb.audio.types import PromptAudio

#: Upstream's ``load_wav`` refuses to resample from below this rate (Hz).
MIN_PROMPT_RATE_HZ = 16000


class PromptFiles:
    """Prompt recordings written as wav files, at most ``max_files`` kept (LRU), removed on :meth:`close`.

    Args:
        max_files: bound on files kept on disk.
    """

    def __init__(self, max_files: int = 64) -> None:
        self._dir = Path(tempfile.mkdtemp(prefix="cosyweb-prompts-"))
        self._max_files = max(1, max_files)
        self._paths: "OrderedDict[str, Path]" = OrderedDict()
        self._lock = threading.Lock()

    @property
    def directory(self) -> Path:
        return self._dir

    def path_for(self, prompt: PromptAudio) -> Path:
        """The wav path of ``prompt``, writing it if needed.

        The file is mono float32 at ``prompt.sample_rate`` if that is at least 16 kHz, else
        resampled to 16 kHz with soxr.

        Returns:
            An existing file path.
        """
        key = prompt.fingerprint
        with self._lock:
            path = self._paths.get(key)
            if path is not None and path.is_file():
                self._paths.move_to_end(key)
                return path
            samples = np.asarray(prompt.samples, dtype=np.float32).reshape(-1)
            rate_hz = int(prompt.sample_rate)
            if rate_hz < MIN_PROMPT_RATE_HZ:
                samples = soxr.resample(samples, rate_hz, MIN_PROMPT_RATE_HZ, quality="HQ").astype(np.float32)
                rate_hz = MIN_PROMPT_RATE_HZ
            path = self._dir / f"{key}.wav"
            tmp = path.with_suffix(".part")
            sf.write(str(tmp), samples, rate_hz, subtype="FLOAT", format="WAV")
            tmp.replace(path)
            self._paths[key] = path
            while len(self._paths) > self._max_files:
                _, old = self._paths.popitem(last=False)
                old.unlink(missing_ok=True)
            return path

    def close(self) -> None:
        """Remove every file and the folder."""
        with self._lock:
            self._paths.clear()
            shutil.rmtree(self._dir, ignore_errors=True)


@dataclass
class _Entry:
    spk_id: str
    n_users: int = 0


class SpeakerCache:
    """Bounded LRU of upstream speaker ids, with pinning.

    Args:
        max_entries: bound; the least recently used unpinned entry is evicted past it.
        remove: called with a ``spk_id`` when its entry is evicted (drops it from upstream's ``spk2info``).

    Attributes:
        n_hits, n_misses: counters, for the benchmark and the tests.
    """

    def __init__(self, max_entries: int, remove: Callable[[str], None]) -> None:
        self._max = max(1, max_entries)
        self._remove = remove
        self._entries: "OrderedDict[str, _Entry]" = OrderedDict()
        self._lock = threading.Lock()
        self._adding: dict[str, threading.Lock] = {}
        self.n_hits = 0
        self.n_misses = 0

    @staticmethod
    def key(voice_key: str, llm_prompt_text: str) -> str:
        """Cache key: the voice key (audio hash + transcript hash) and a hash of the LLM prompt text."""
        return f"{voice_key}|{hashlib.sha1(llm_prompt_text.encode('utf-8')).hexdigest()[:16]}"

    @contextlib.contextmanager
    def use(self, key: str, add: Callable[[str], None]) -> Iterator[str]:
        """Pin the entry for ``key`` while the block runs, creating it with ``add(spk_id)`` on a miss.

        Concurrent misses on the same key extract features once.

        Yields:
            The upstream ``zero_shot_spk_id``.
        """
        with self._lock:
            add_lock = self._adding.setdefault(key, threading.Lock())
        with add_lock:
            with self._lock:
                entry = self._entries.get(key)
                if entry is not None:
                    self.n_hits += 1
                    entry.n_users += 1
                    self._entries.move_to_end(key)
            if entry is None:
                spk_id = "cosyweb-" + hashlib.sha1(key.encode("utf-8")).hexdigest()[:20]
                add(spk_id)
                with self._lock:
                    self.n_misses += 1
                    entry = _Entry(spk_id, 1)
                    self._entries[key] = entry
                    self._evict_locked()
        with self._lock:
            self._adding.pop(key, None)
        try:
            yield entry.spk_id
        finally:
            with self._lock:
                entry.n_users -= 1
                self._evict_locked()

    def __len__(self) -> int:
        return len(self._entries)

    def _evict_locked(self) -> None:
        if len(self._entries) <= self._max:
            return
        for k in list(self._entries):
            if len(self._entries) <= self._max:
                break
            e = self._entries[k]
            if e.n_users == 0:
                del self._entries[k]
                self._remove(e.spk_id)
