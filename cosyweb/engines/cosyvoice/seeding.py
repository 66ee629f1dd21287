"""Per-request seeds on top of CosyVoice's process-global RNG.

Upstream seeds with ``cosyvoice.utils.common.set_all_random_seed`` (python, numpy, torch CPU
and CUDA generators at once), and its LLM samples with ``torch.multinomial`` on the global
generator from a thread of its own. Two requests running at once therefore draw from the same
stream, so a seed only reproduces audio if no other request runs meanwhile.

:class:`SeedGate` is a writer-preferring readers-writer lock:

* an unseeded request (``seed == 0``: "random") takes it *shared*, so unseeded requests run
  concurrently up to the pipeline's limit;
* a seeded request (``seed != 0``) takes it *exclusive* for its whole generation, so seeded
  requests never interleave with any other request and the same inputs and seed give the
  same audio.
"""

from __future__ import annotations

import contextlib
import threading
from typing import Iterator


class SeedGate:
    """Readers-writer lock; waiting exclusive holders block new shared ones (no writer starvation)."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._n_shared = 0
        self._exclusive = False
        self._n_waiting_exclusive = 0

    @contextlib.contextmanager
    def shared(self) -> Iterator[None]:
        """Hold the gate together with other shared holders."""
        with self._cond:
            while self._exclusive or self._n_waiting_exclusive:
                self._cond.wait()
            self._n_shared += 1
        try:
            yield
        finally:
            with self._cond:
                self._n_shared -= 1
                self._cond.notify_all()

    @contextlib.contextmanager
    def exclusive(self) -> Iterator[None]:
        """Hold the gate alone."""
        with self._cond:
            self._n_waiting_exclusive += 1
            try:
                while self._exclusive or self._n_shared:
                    self._cond.wait()
            finally:
                self._n_waiting_exclusive -= 1
            self._exclusive = True
        try:
            yield
        finally:
            with self._cond:
                self._exclusive = False
                self._cond.notify_all()

    def for_seed(self, seed: int) -> "contextlib.AbstractContextManager[None]":
        """Exclusive for a fixed seed (``seed != 0``), shared for a random one (``seed == 0``)."""
        return self.exclusive() if seed else self.shared()
