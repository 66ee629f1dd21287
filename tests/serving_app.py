"""A real ``python app.py`` process, for the serving and browser tests and the benchmarks.

Not a test module. The one launcher of the project's out-of-process checks:
``tests/test_serving_*.py``, ``tests/test_integration_gradio.py``, ``tests/browser_helpers.py``
and ``benchmarks/serving_common.py`` all start the app through :class:`AppProcess`.

Free localhost port, its own output and Gradio temp directories, readiness through ``/readyz``,
SIGTERM then kill in :meth:`AppProcess.stop` (always call it in ``finally``).
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator, Optional

import httpx

ROOT = Path(__file__).resolve().parents[1]
READY_TIMEOUT_S = 240.0


class AppError(RuntimeError):
    """The app process exited early or did not become ready in time (message: its log's tail)."""


def free_port() -> int:
    """A free TCP port on 127.0.0.1."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class AppProcess:
    """``python app.py --host 127.0.0.1 --port <free port> *args``.

    The environment is this process's without any ``COSYWEB_*`` variable, plus
    ``COSYWEB_OUTPUT_DIR=<tmp>/outputs`` and ``GRADIO_TEMP_DIR=<tmp>/gradio``, plus ``env``.

    Args:
        tmp: a directory for the log (``app-<port>.log``), the outputs and Gradio's uploads.
        *args: more command-line flags (``--max-queue 1`` ...).
        env: more environment variables (they win over the defaults above).

    Attributes:
        port, url: where it listens (``http://127.0.0.1:<port>``).
        log_path: its combined stdout/stderr.
        proc: the :class:`subprocess.Popen`.
    """

    def __init__(self, tmp: Path, *args: str, env: Optional[dict[str, str]] = None) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_path = Path(tmp) / f"app-{self.port}.log"
        full_env = {k: v for k, v in os.environ.items() if not k.startswith("COSYWEB_")}
        full_env.update(COSYWEB_OUTPUT_DIR=str(Path(tmp) / "outputs"), GRADIO_TEMP_DIR=str(Path(tmp) / "gradio"),
                        PYTHONUNBUFFERED="1", GRADIO_ANALYTICS_ENABLED="False")
        full_env.update(env or {})
        self._log = open(self.log_path, "wb")
        self.proc = subprocess.Popen(
            [sys.executable, "app.py", "--host", "127.0.0.1", "--port", str(self.port), *args],
            cwd=ROOT, env=full_env, stdout=self._log, stderr=subprocess.STDOUT,
        )

    @property
    def pid(self) -> int:
        """The process id."""
        return self.proc.pid

    def log(self) -> str:
        """The process output so far."""
        return self.log_path.read_text(encoding="utf-8", errors="replace")

    def wait_ready(self, timeout_s: float = READY_TIMEOUT_S) -> "AppProcess":
        """Poll ``/readyz`` until it answers 200; returns ``self``.

        Raises:
            AppError: the process exited, or was not ready within ``timeout_s`` seconds.
        """
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AppError(f"app exited with {self.proc.returncode} before it was ready:\n{self.log()[-3000:]}")
            try:
                if httpx.get(self.url + "/readyz", timeout=2).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.3)
        raise AppError(f"app not ready within {timeout_s} s:\n{self.log()[-3000:]}")

    def stop(self, timeout_s: float = 60.0) -> Optional[int]:
        """SIGTERM, wait up to ``timeout_s`` seconds, then SIGKILL; returns the exit status."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout_s)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        self._log.close()
        return self.proc.returncode


@contextmanager
def running_app(tmp: Path, *args: str, env: Optional[dict[str, str]] = None,
                check_exit: bool = False) -> Iterator[AppProcess]:
    """An :class:`AppProcess` that is ready inside the ``with`` block and stopped after it.

    Args:
        tmp, args, env: as for :class:`AppProcess`.
        check_exit: after a SIGTERM, the app must exit with status 0 (a graceful shutdown).

    Raises:
        AppError: it did not get ready, or ``check_exit`` and it exited with another status.
    """
    proc = AppProcess(tmp, *args, env=env)
    try:
        yield proc.wait_ready()
    finally:
        rc = proc.stop()
    if check_exit and rc != 0:
        raise AppError(f"SIGTERM should end the app cleanly, got exit status {rc}:\n{proc.log()[-2000:]}")


def register_prompt(url: str, path: Path, key: str = "test") -> str:
    """``POST /api/v1/prompts`` with a real recording; returns the prompt id once its voice is ready."""
    r = httpx.post(url + "/api/v1/prompts", files={"prompt_audio": (path.name, path.read_bytes())},
                   headers={"X-API-Key": key}, timeout=60)
    assert r.status_code == 201, r.text
    pid = r.json()["prompt_id"]
    deadline = time.monotonic() + 60
    while httpx.get(f"{url}/api/v1/prompts/{pid}", timeout=10).json()["voice"] == "pending":
        assert time.monotonic() < deadline, "voice never prepared"
        time.sleep(0.1)
    return pid
