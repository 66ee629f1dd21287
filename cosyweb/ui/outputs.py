"""Finished results as wav files in ``settings.output_dir``, bounded to ``keep_outputs`` files.

The web UI offers each finished job for download and the ``synthesize`` API returns it, so
the file must outlive the request; the directory is pruned (oldest first) so that it cannot
grow without bound.
"""

from __future__ import annotations

import logging
import threading
from pathlib import Path

import numpy as np

from cosyweb.audio.encode import write_wav

log = logging.getLogger("cosyweb.ui")

#: File name pattern of our outputs (only these are ever pruned).
_PREFIX = "cosyweb-"


class OutputStore:
    """Writes result wavs and keeps at most ``keep`` of them.

    Args:
        output_dir: directory to write into (created if missing).
        keep: files kept; older ``cosyweb-*.wav`` files beyond this are deleted.
    """

    def __init__(self, output_dir: Path | str, keep: int = 200) -> None:
        self.output_dir = Path(output_dir).resolve()
        self.keep = max(1, int(keep))
        self._lock = threading.Lock()

    def save(self, samples: np.ndarray, sample_rate: int, job_id: str) -> Path:
        """Write one result as 16-bit PCM wav and prune old ones.

        Args:
            samples: float32 mono, shape ``(n_samples,)``, range [-1, 1].
            sample_rate: Hz.
            job_id: used in the file name (``cosyweb-<job_id>.wav``).

        Returns:
            The absolute path of the written file.

        Raises:
            OSError: the directory is not writable.
        """
        self.output_dir.mkdir(parents=True, exist_ok=True)
        path = self.output_dir / f"{_PREFIX}{job_id}.wav"
        write_wav(path, samples, sample_rate)
        self._prune()
        return path

    def _prune(self) -> None:
        with self._lock:
            files = sorted(self.output_dir.glob(f"{_PREFIX}*.wav"), key=lambda p: p.stat().st_mtime_ns)
            for old in files[: max(0, len(files) - self.keep)]:
                try:
                    old.unlink()
                except OSError:  # removed by another process, or still open on Windows
                    log.debug("could not remove old output %s", old)
