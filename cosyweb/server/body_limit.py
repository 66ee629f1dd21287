"""A request-body size limit that holds however the body is sent.

``Content-Length`` is checked by the routes before they read anything, but a client may send a
body with ``Transfer-Encoding: chunked`` (no length) and the JSON and form parsers would read it
all into memory. :class:`BodyLimitMiddleware` counts the bytes as the app receives them and
stops the request with :class:`~cosyweb.server.api_inputs.PayloadTooLargeError` (HTTP 413, the
bilingual message) as soon as the count passes the limit, before the rest is read.
"""

from __future__ import annotations

from typing import Callable, Optional

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from cosyweb.server.api_inputs import PayloadTooLargeError


class BodyLimitMiddleware:
    """Pure ASGI middleware: at most ``limit_for(path)`` body bytes per HTTP request.

    Args:
        app: the wrapped ASGI app.
        limit_for: the limit in bytes for a request path, or None for no limit (e.g. paths
            served by Gradio, which enforces its own ``max_file_size``).

    The error is raised from ``receive()`` inside the route, so the app's exception handler
    for :class:`~cosyweb.errors.CosywebError` answers 413 with ``request.too_large``.
    """

    def __init__(self, app: ASGIApp, limit_for: Callable[[str], Optional[int]]) -> None:
        self.app = app
        self.limit_for = limit_for

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        limit = self.limit_for(scope.get("path", "")) if scope["type"] == "http" else None
        if limit is None:
            await self.app(scope, receive, send)
            return
        n_bytes = 0

        async def limited_receive() -> Message:
            nonlocal n_bytes
            message = await receive()
            if message["type"] == "http.request":
                n_bytes += len(message.get("body", b""))
                if n_bytes > limit:
                    raise PayloadTooLargeError(n_bytes, limit)
            return message

        await self.app(scope, limited_receive, send)
