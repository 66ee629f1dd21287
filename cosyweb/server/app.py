"""The HTTP application: our FastAPI app with health, readiness and metrics routes, and the
Gradio UI mounted at ``/``.

The FastAPI app is ours (not Gradio's), so other routes (a low-latency streaming endpoint,
for example) are added beside Gradio with ``routers=`` and go through the same
:class:`~cosyweb.pipeline.service.TTSService`. Our routes map
:class:`cosyweb.errors.CosywebError` to HTTP status codes (``BusyError`` -> 503 with
``Retry-After``) and never leak internal errors: unexpected ones are logged and answered
with a generic 500.

Routes:
    GET /healthz   liveness: 200 ``{"status": "ok"}``, 503 when the service is unhealthy
    GET /readyz    readiness: 200 once the engine is loaded and warmed up, else 503
    GET /metrics   Prometheus text exposition of the service's registry
    /api/v1/...    the HTTP API: prompts, whole-wav and streaming synthesis, jobs
                   (:mod:`cosyweb.server.api`; ``api=False`` leaves it out)
    /              the Gradio UI and its API (``/gradio_api/...``)
"""

from __future__ import annotations

import logging
import math
from typing import Any, Sequence

from fastapi import APIRouter, FastAPI, Request
from fastapi.responses import JSONResponse, Response
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from cosyweb.errors import BusyError, CosywebError

log = logging.getLogger("cosyweb.server")


def error_response(err: CosywebError) -> JSONResponse:
    """The JSON response for a CosywebError: its ``http_status`` (422 bad input, 503 busy,
    504 timeout...), body ``{"error": {"code", "zh", "en", "details"}}``, and for busy
    refusals a ``Retry-After`` header in whole seconds (at least 1)."""
    headers = {}
    if isinstance(err, BusyError):
        headers["Retry-After"] = str(max(1, math.ceil(float(err.retry_after_s or 1))))
    status = int(getattr(err, "http_status", 500) or 500)
    return JSONResponse({"error": _jsonable(err.to_dict())}, status_code=status, headers=headers)


def _jsonable(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {str(k): _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_jsonable(v) for v in obj]
    if obj is None or isinstance(obj, (str, int, float, bool)):
        return obj
    return str(obj)


def probe_router(service: Any) -> APIRouter:
    """``/healthz``, ``/readyz`` and ``/metrics`` for one service."""
    router = APIRouter()

    @router.get("/healthz", include_in_schema=False)
    def healthz() -> JSONResponse:
        ok = bool(service.healthy)
        return JSONResponse({"status": "ok" if ok else "unhealthy", "engine": service.engine_name},
                            status_code=200 if ok else 503)

    @router.get("/readyz", include_in_schema=False)
    def readyz() -> JSONResponse:
        ready = bool(service.ready)
        headers = {} if ready else {"Retry-After": "5"}
        return JSONResponse({"status": "ready" if ready else "not_ready", "engine": service.engine_name},
                            status_code=200 if ready else 503, headers=headers)

    @router.get("/metrics", include_in_schema=False)
    def metrics() -> Response:
        return Response(generate_latest(service.metrics_registry), media_type=CONTENT_TYPE_LATEST)

    return router


def build_app(
    service: Any,
    settings: Any,
    *,
    routers: Sequence[APIRouter] = (),
    mount_ui: bool = True,
    api: bool = True,
) -> FastAPI:
    """Assemble the HTTP app for a started service.

    Args:
        service: the :class:`~cosyweb.pipeline.service.TTSService` (``healthy``, ``ready``,
            ``engine_name``, ``metrics_registry``, and what the UI needs).
        settings: :class:`cosyweb.config.Settings` (``auth``, ``output_dir``, ``max_upload_mb``).
        routers: extra routers, registered before Gradio's catch-all mount at ``/``.
        mount_ui: False builds the HTTP routes only (tests of the routes).
        api: include the HTTP API (:mod:`cosyweb.server.api`, ``/api/v1/...``).

    Returns:
        The FastAPI app; serve it with uvicorn (see :func:`cosyweb.server.run.serve`).
    """
    app = FastAPI(title="cosyweb", docs_url=None, redoc_url=None, openapi_url=None)
    app.state.service = service
    app.state.settings = settings

    @app.exception_handler(CosywebError)
    async def _cosyweb_error(_request: Request, exc: CosywebError) -> JSONResponse:
        return error_response(exc)

    @app.exception_handler(Exception)
    async def _unexpected(_request: Request, exc: Exception) -> JSONResponse:  # pragma: no cover - safety net
        log.exception("unhandled error in an HTTP route")
        return JSONResponse(
            {"error": {"code": "internal", "zh": "服务器内部错误", "en": "Internal server error", "details": {}}},
            status_code=500,
        )

    app.include_router(probe_router(service))
    if api:
        from cosyweb.server.api import router as api_router  # imports this module's error_response
        from cosyweb.server.api_inputs import API_PREFIX, api_body_limit_bytes
        from cosyweb.server.body_limit import BodyLimitMiddleware

        app.include_router(api_router)
        api_limit = api_body_limit_bytes(settings)
        app.add_middleware(BodyLimitMiddleware,
                           limit_for=lambda path: api_limit if path.startswith(API_PREFIX) else None)
    for r in routers:
        app.include_router(r)
    if mount_ui:
        mount_ui_on(app, service, settings)
    return app


def mount_ui_on(app: FastAPI, service: Any, settings: Any) -> FastAPI:
    """Mount the Gradio UI at ``/`` (after every other route), with auth when configured.

    Gradio may serve files from ``settings.output_dir`` (finished wavs) and ``assets/``
    (examples); uploads over twice ``settings.max_upload_mb`` are refused by Gradio itself,
    smaller ones over the limit by the prompt loader (bilingual message).
    """
    import gradio as gr  # imported here: callers put ffmpeg on PATH first (pydub reads it on import)

    from cosyweb.ui.blocks import ASSETS_DIR, build_blocks, css
    from cosyweb.ui.player import player_head

    output_dir = settings.output_dir.resolve()
    output_dir.mkdir(parents=True, exist_ok=True)
    blocks = build_blocks(service, settings)
    app.state.blocks = blocks
    auth = settings.auth_pair() if hasattr(settings, "auth_pair") else None
    return gr.mount_gradio_app(
        app,
        blocks,
        path="/",
        auth=auth,
        auth_message="CosyWeb" if auth else None,
        allowed_paths=[str(output_dir), str(ASSETS_DIR)],
        # Gradio's own limit is a backstop at twice ours, so that a moderately large upload still
        # reaches the prompt loader and gets its bilingual "too large" message.
        max_file_size=int(2 * settings.max_upload_mb * 1024 * 1024),
        show_error=False,  # unexpected exceptions: a generic message (gr.Error is always shown)
        css=css(),
        head=player_head(service.sample_rate),  # the low-latency player (cosyweb/ui/static/player.js)
        footer_links=["api", "settings"],
        run_history=False,
        ssr_mode=False,
        server_name=settings.host,
        server_port=settings.port,
    )
