"""A public share link for a running server, through Gradio's tunnel, with a deadline.

``demo.launch(share=True)`` is not usable here because the app is our FastAPI app with
Gradio mounted (``gr.mount_gradio_app``), served by our own uvicorn. Gradio's tunnel is a
separate piece (``gradio.networking.setup_tunnel``, used by ``Blocks.launch``): it asks
``api.gradio.app`` for a share server, downloads the ``frpc`` client once into the Hugging
Face cache and runs it to forward ``<random>.gradio.live`` to our local port. That works for
any local HTTP server, mounted or not.

Offline, every step can fail or stall (DNS, the 30 s HTTP timeouts, the 30 s frpc
handshake). :func:`open_share_link` therefore runs it in a daemon thread and waits at most
``timeout_s``; on failure it returns None and the caller keeps serving locally.
"""

from __future__ import annotations

import logging
import secrets
import threading
from typing import Optional
from urllib.parse import urlparse, urlunparse

log = logging.getLogger("cosyweb.server")

#: Longest wait for a share link before giving up (the server keeps running either way).
SHARE_TIMEOUT_S = 45.0


def tunnel_host(bind_host: str) -> str:
    """The local address the tunnel should forward to for a server bound to ``bind_host``."""
    return "127.0.0.1" if bind_host in ("0.0.0.0", "", "::", "localhost") else bind_host


def open_share_link(local_host: str, local_port: int, timeout_s: float = SHARE_TIMEOUT_S) -> tuple[Optional[str], str]:
    """Try to open a Gradio share tunnel to ``local_host:local_port``.

    Args:
        local_host: address the local server listens on (``0.0.0.0`` is mapped to 127.0.0.1).
        local_port: its port.
        timeout_s: longest wait; the attempt is abandoned (not killed) after this.

    Returns:
        ``(url, "")`` with an ``https://….gradio.live`` URL, or ``(None, reason)``.
    """
    from gradio import networking  # lazy: pulls in gradio

    result: dict[str, object] = {}

    def attempt() -> None:
        try:
            result["url"] = networking.setup_tunnel(
                local_host=tunnel_host(local_host),
                local_port=int(local_port),
                share_token=secrets.token_urlsafe(32),
                share_server_address=None,
                share_server_tls_certificate=None,
            )
        except BaseException as exc:  # noqa: BLE001 - any failure means "no link"
            result["error"] = exc

    th = threading.Thread(target=attempt, name="cosyweb-share-tunnel", daemon=True)
    th.start()
    th.join(timeout_s)
    if "url" in result:
        parsed = urlparse(str(result["url"]))
        return urlunparse(("https",) + tuple(parsed[1:])), ""
    if "error" in result:
        err = result["error"]
        return None, f"{type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''}".strip()
    return None, f"no answer from the share server within {timeout_s:g} s"


def close_share_links() -> None:
    """Stop every frpc tunnel this process opened (also registered with atexit by Gradio)."""
    try:
        from gradio import tunneling
    except ImportError:  # pragma: no cover
        return
    for tunnel in list(tunneling.CURRENT_TUNNELS):
        try:
            tunnel.kill()
        except Exception:  # pragma: no cover - best effort at exit
            log.debug("could not stop a share tunnel", exc_info=True)
