"""Serve the app: engine -> TTSService -> FastAPI (+ Gradio) -> uvicorn, with graceful shutdown.

``python app.py`` and ``python -m cosyweb serve`` both end up in :func:`serve`. The order
matters:

1. refuse ``--share`` without ``--auth`` (unless ``--no-auth``), before loading anything;
2. put ffmpeg on ``PATH`` (Gradio's streaming audio needs it) before gradio is imported;
3. build the engine and start the service: a :class:`~cosyweb.errors.StartupError` (missing
   CosyVoice code, weights or GPU) ends here, before any port is opened;
4. assemble the HTTP app and serve it; with ``--share``, open a tunnel in the background.

On SIGTERM or Ctrl+C the service stops admission and lets running jobs finish within
``settings.shutdown_grace_s`` while the server keeps streaming them; then the server exits.
A second signal forces the exit.
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
import os
import signal
import sys
import threading
import time
from typing import Any, Callable, Optional

import uvicorn

from cosyweb.errors import StartupError

log = logging.getLogger("cosyweb.server")

#: After the last job has finished on shutdown, keep serving this long so that clients can
#: still fetch results (``gradio_client`` downloads the wav after completion; the browser
#: fetches the streamed audio segments and the download) before connections are closed.
SHUTDOWN_LINGER_S = 3.0

#: The interpreter's thread switch interval while serving (Python's default is 5 ms). Engine
#: workers run Python code that holds the GIL; every time the event loop needs the GIL back to
#: deliver a chunk or answer a request it may wait one interval, several times per chunk. 1 ms
#: keeps that wait within the serving-overhead budget (measured: benchmarks/overhead.py).
SWITCH_INTERVAL_S = 0.001

#: glibc malloc arenas while serving. By default glibc gives threads up to 8 x cores arenas;
#: with engine workers, the event loop and a thread pool all allocating numpy arrays, freed
#: memory stays fragmented across them and RSS creeps up by tens of percent over a few hundred
#: requests. Two arenas keep it flat at no measurable cost (benchmarks/soak.py).
MALLOC_ARENAS = 2


#: How often the server hands freed heap memory back to the OS (``malloc_trim``), seconds.
TRIM_INTERVAL_S = 10.0


def start_malloc_trimmer(interval_s: float = TRIM_INTERVAL_S) -> bool:
    """Call glibc's ``malloc_trim(0)`` every ``interval_s`` seconds from a daemon thread.

    Audio and spectrogram arrays of every size come and go with each job; glibc keeps freed
    pages inside its heaps (its mmap threshold rises after the first large free), so RSS creeps
    up over hundreds of requests although nothing leaks. ``malloc_trim`` returns those pages
    (a few ms, off the event loop). Returns False where glibc is not available.
    """
    if not sys.platform.startswith("linux"):
        return False
    try:
        trim = ctypes.CDLL("libc.so.6").malloc_trim
    except (OSError, AttributeError):
        return False
    trim.argtypes = [ctypes.c_size_t]

    def loop() -> None:
        while True:
            time.sleep(interval_s)
            trim(0)

    threading.Thread(target=loop, name="cosyweb-malloc-trim", daemon=True).start()
    return True


def limit_malloc_arenas(n_arenas: int = MALLOC_ARENAS) -> bool:
    """``mallopt(M_ARENA_MAX, n_arenas)`` on glibc (the same as ``MALLOC_ARENA_MAX``); call it
    before any thread starts. Returns False where it is not available (musl, macOS, Windows)."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL("libc.so.6")
        return bool(libc.mallopt(ctypes.c_int(-8), ctypes.c_int(int(n_arenas))))  # -8: M_ARENA_MAX
    except (OSError, AttributeError):
        return False


def check_share_auth(settings: Any) -> None:
    """A share link is public: require ``--auth USER:PASS`` unless ``--no-auth`` was given.

    Raises:
        StartupError: ``share`` is on, ``auth`` is unset and ``no_auth`` is off.
    """
    if settings.share and not settings.auth and not settings.no_auth:
        raise StartupError(
            "--share 会生成公开链接，请同时用 --auth 用户名:密码 设置登录（或明确加上 --no-auth）",
            "--share makes the app public: add --auth USER:PASS (or, explicitly, --no-auth)",
        )


class GracefulServer(uvicorn.Server):
    """uvicorn's server with a draining shutdown.

    The first SIGTERM/SIGINT starts ``drain()`` (the service's graceful shutdown) in a thread
    and keeps serving until it returns and :data:`SHUTDOWN_LINGER_S` more, so running jobs can
    finish streaming and their results can be fetched; a second signal exits at once. Unlike uvicorn, the captured signal is not re-raised afterwards,
    so the caller's clean-up runs and the exit status is 0.
    """

    def __init__(self, config: uvicorn.Config, drain: Callable[[], None]) -> None:
        super().__init__(config)
        self._drain = drain
        self._draining = False

    def handle_exit(self, sig: int, frame: Any) -> None:  # noqa: D401 - uvicorn hook
        if self._draining or self.should_exit:
            self.should_exit = True
            self.force_exit = True
            return
        self._draining = True
        log.info("signal %s: stopping admission, letting running jobs finish (again to force)", sig)

        def drain_then_exit() -> None:
            try:
                self._drain()
                deadline = time.monotonic() + SHUTDOWN_LINGER_S
                while time.monotonic() < deadline and not self.force_exit:
                    time.sleep(0.05)
            except Exception:  # pragma: no cover - shutdown must go on
                log.exception("graceful drain failed")
            finally:
                self.should_exit = True

        threading.Thread(target=drain_then_exit, name="cosyweb-drain", daemon=True).start()

    @contextlib.contextmanager
    def capture_signals(self):  # type: ignore[override]
        if threading.current_thread() is not threading.main_thread():
            yield
            return
        sigs = [signal.SIGINT, signal.SIGTERM]
        original = {s: signal.signal(s, self.handle_exit) for s in sigs}
        try:
            yield
        finally:
            for s, handler in original.items():
                signal.signal(s, handler)


def configure_logging(level: str) -> None:
    """One plain format for our loggers; uvicorn's own loggers keep theirs."""
    logging.basicConfig(
        level=getattr(logging, str(level).upper(), logging.INFO),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )


def _announce_share(server: uvicorn.Server, settings: Any, app: Any) -> None:
    from cosyweb.server.share import open_share_link

    while not server.started and not server.should_exit:
        time.sleep(0.1)
    if server.should_exit:
        return
    url, reason = open_share_link(settings.host, settings.port)
    app.state.share_url = url
    if url:
        print(f"* 公开链接 / Public URL: {url}", flush=True)
    else:
        print(
            f"* 无法创建分享链接，应用继续在本机提供服务 / Could not create a share link ({reason}); "
            f"still serving locally at http://{settings.host}:{settings.port}",
            flush=True,
        )


def build_service(settings: Any):
    """Create the engine named in ``settings`` and a started :class:`TTSService` around it.

    Raises:
        StartupError: unknown engine, missing code/weights/GPU (from the engine's ``load``).
    """
    from cosyweb.engines.registry import create_engine
    from cosyweb.pipeline.service import TTSService

    engine = create_engine(settings)
    service = TTSService(engine, settings)
    try:
        service.start()
    except BaseException:
        service.shutdown(grace_s=0)
        raise
    return service


def serve(settings: Any, *, service: Optional[Any] = None) -> int:
    """Run the web app until SIGTERM/SIGINT. Returns the process exit status (0).

    Raises:
        StartupError: see :func:`check_share_auth` and :func:`build_service`.
    """
    configure_logging(settings.log_level)
    check_share_auth(settings)
    sys.setswitchinterval(SWITCH_INTERVAL_S)
    if "MALLOC_ARENA_MAX" not in os.environ:
        limit_malloc_arenas()
    start_malloc_trimmer()
    from cosyweb.audio.ffmpeg import ensure_ffmpeg_on_path

    ensure_ffmpeg_on_path()
    t0 = time.monotonic()
    service = service or build_service(settings)
    try:
        from cosyweb.server.app import build_app

        app = build_app(service, settings)
        app.state.share_url = None
        config = uvicorn.Config(
            app,
            host=settings.host,
            port=settings.port,
            log_level=str(settings.log_level).lower(),
            timeout_graceful_shutdown=5,
            ws="none",
        )
        server = GracefulServer(config, drain=lambda: service.shutdown(settings.shutdown_grace_s))
        print(
            f"* cosyweb: engine {service.engine_name} ready in {time.monotonic() - t0:.1f} s; "
            f"open http://{'localhost' if settings.host in ('127.0.0.1', '0.0.0.0') else settings.host}:{settings.port}",
            flush=True,
        )
        if settings.share:
            threading.Thread(target=_announce_share, args=(server, settings, app), daemon=True,
                             name="cosyweb-share").start()
        server.run()
        if not server.started and not server._draining:
            return 1  # bind failed (port in use): uvicorn logged why
    finally:
        service.shutdown(grace_s=0)
        from cosyweb.server.share import close_share_links

        close_share_links()
        sys.stdout.flush()
    return 0
