"""The HTTP API (v1): register prompts, synthesise to a wav, or stream PCM as it is produced.

Every route goes through the one :class:`~cosyweb.pipeline.service.TTSService` of the app
(``app.state.service``), so the API, the Gradio UI and the Gradio API share one scheduler,
one admission control and one set of metrics. Routes (all under ``/api/v1``):

==========================  ======================================================================
``GET  /info``              engine capabilities, sample rate, formats and limits
``GET  /stats``             queue depth, active jobs, recent median first chunk, counters
``POST /prompts``           multipart ``prompt_audio`` (+ ``prompt_text``): decode, check and store
                            the prompt, prepare its voice in the background; 201
                            ``{"prompt_id", "prompt_text", "stats", "warnings", "voice"}``
``GET  /prompts/{id}``      the same, with ``voice``: ready / pending / failed / not_started
``DELETE /prompts/{id}``    forget it (204)
``POST /tts``               synthesise a whole text: ``audio/wav`` (PCM_16, the engine's own sample
                            rate, lossless), status JSON in the ``X-Cosyweb-Status`` header
``POST /tts/stream``        the same inputs; streams raw PCM16 (or a WAV stream) as it is made, see
                            :mod:`cosyweb.server.api_stream`
``GET  /jobs/{id}``         a job's state: queued (with position) / running / done (status) /
                            failed / timeout / cancelled (bilingual error)
``DELETE /jobs/{id}``       cancel a job (a stop button)
==========================  ======================================================================

Inputs and the client identity are described in :mod:`cosyweb.server.api_inputs`.

Admission happens before any response starts: a busy service answers at once with 503
(``Retry-After``; body ``{"error": {"code": "busy", "zh": "系统繁忙，请稍后再试", "en": "System
busy, please try again later", "details": {"position", "estimated_wait_s", "queue_depth",
"reason"}}}``), the per-client limit with 429 (also ``Retry-After``), bad input with 422 and the
specific bilingual message (e.g. the character position of a bad annotation), an unknown
prompt id with 404. A job that times out is cancelled and reported (504 for ``/tts``; for a
stream, the stream is aborted and ``/jobs/{id}`` says ``timeout``). A client that disconnects
cancels its job.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections import OrderedDict
from typing import Any, Optional

import anyio
from fastapi import APIRouter, Depends, Request
from fastapi.responses import JSONResponse, Response

from cosyweb.audio.encode import wav_bytes
from cosyweb.errors import BusyError, InvalidInputError
from cosyweb.server.api_inputs import (
    CLIENT_COOKIE,
    FORMATS,
    TtsInputs,
    check_content_length,
    client_identity,
    max_upload_bytes,
    read_tts_inputs,
    read_upload,
    require_login,
)
from cosyweb.server.api_stream import JobAudioStream, ascii_json, stream_headers
from cosyweb.server.app import error_response

log = logging.getLogger("cosyweb.server")

#: Finished jobs whose summary ``GET /jobs/{id}`` still answers.
FINISHED_JOBS_KEPT = 1024
#: Texts up to this many characters are analysed on the event loop (at most ~5 ms); longer ones
#: in a worker thread, so a 5,000-character text never stalls other requests.
INLINE_ANALYSIS_MAX_CHARS = 120


class JobNotFoundError(InvalidInputError):
    """Unknown job id (HTTP 404)."""

    http_status = 404

    def __init__(self, job_id: str) -> None:
        super().__init__("job.unknown", f"找不到任务 {job_id}", f"Unknown job {job_id}", job_id=job_id)


class ApiState:
    """Per-app bookkeeping of the API: the jobs it admitted while their response lasts, then
    summaries of finished jobs (bounded LRU). Used from the event loop only."""

    def __init__(self) -> None:
        self.live: dict[str, Any] = {}
        self.finished: "OrderedDict[str, dict]" = OrderedDict()

    def track(self, job: Any) -> None:
        """Follow an admitted job until :meth:`record` (so ``GET /jobs/{id}`` answers at once,
        and with the result as soon as the job ends, before its response is over)."""
        self.live[job.id] = job

    def record(self, job: Any) -> None:
        """Remember the outcome of a finished (or abandoned) job for ``GET /jobs/{id}``."""
        self.live.pop(job.id, None)
        self.finished[job.id] = job_summary(job)
        self.finished.move_to_end(job.id)
        while len(self.finished) > FINISHED_JOBS_KEPT:
            self.finished.popitem(last=False)

    def lookup(self, job_id: str) -> Optional[dict]:
        """The summary of a job the API admitted (live or finished), or None."""
        job = self.live.get(job_id)
        if job is not None:
            return job_summary(job)
        return self.finished.get(job_id)


def job_summary(job: Any) -> dict:
    """JSON state of a job: ``{"job_id", "status", "position", "audio_s", "result", "error",
    "first_engine_ms"}`` (``first_engine_ms``: the engine call that made the first chunk)."""
    out: dict[str, Any] = {"job_id": job.id, "status": job.status, "audio_s": round(job.audio_s, 3)}
    if not job.finished:
        out["position"] = job.position()
    if job.status_info is not None:
        out["result"] = job.status_info.to_dict()
    if job.first_engine_s is not None:
        out["first_engine_ms"] = round(1000.0 * job.first_engine_s, 2)
    if job.error is not None:
        out["error"] = json.loads(json.dumps(job.error.to_dict(), default=str))  # details may hold any type
    return out


def _state(request: Request) -> ApiState:
    st = getattr(request.app.state, "cosyweb_api", None)
    if st is None:
        st = request.app.state.cosyweb_api = ApiState()
    return st


def _ensure_ready(service: Any) -> None:
    if not service.ready:
        raise BusyError(retry_after_s=5.0, reason="not_ready")


def _with_cookie(response: Response, new_cookie: Optional[str]) -> Response:
    if new_cookie:
        response.set_cookie(CLIENT_COOKIE, new_cookie, httponly=True, samesite="lax", max_age=30 * 24 * 3600)
    return response


router = APIRouter(prefix="/api/v1", dependencies=[Depends(require_login)])


# --- description ------------------------------------------------------------------------------
@router.get("/info")
def info(request: Request) -> JSONResponse:
    """Engine capabilities, output sample rate, streaming formats and input limits."""
    service, settings = request.app.state.service, request.app.state.settings
    return JSONResponse({
        "engine": service.capabilities.to_dict(),
        "sample_rate": service.sample_rate,
        "formats": list(FORMATS),
        "limits": {
            "max_text_chars": settings.max_text_chars,
            "max_upload_mb": settings.max_upload_mb,
            "max_prompt_s": settings.max_prompt_s,
            "per_client_jobs": settings.per_client_jobs,
            "job_timeout_s": settings.job_timeout_s,
        },
    })


@router.get("/stats")
def stats(request: Request) -> JSONResponse:
    """The service's stats snapshot (see :meth:`TTSService.stats`)."""
    return JSONResponse(request.app.state.service.stats())


# --- prompts -----------------------------------------------------------------------------------
def _prompt_body(service: Any, prompt_id: str) -> dict:
    entry = service.get_prompt(prompt_id)
    return {
        "prompt_id": entry.prompt_id,
        "prompt_text": entry.prompt_text,
        "stats": entry.prompt.stats(),
        "warnings": [m.to_dict() for m in entry.prompt.warnings],
        "voice": service.voice_state(prompt_id),
        "voice_error": entry.voice_error,
    }


@router.post("/prompts", status_code=201)
async def register_prompt(request: Request) -> JSONResponse:
    """Upload a prompt once (multipart ``prompt_audio``, optional ``prompt_text``); its voice is
    prepared in the background so that the first synthesis starts without that cost."""
    service, settings = request.app.state.service, request.app.state.settings
    _ensure_ready(service)
    max_bytes = max_upload_bytes(settings)
    check_content_length(request, max_bytes)
    audio, prompt_text = None, ""
    ctype = request.headers.get("content-type", "")
    if "multipart/form-data" not in ctype:
        raise InvalidInputError("request.content_type", "请用 multipart/form-data 上传提示音频（字段 prompt_audio）",
                                "Upload the prompt as multipart/form-data (field prompt_audio)")
    async with request.form(max_files=1, max_fields=8) as form:
        for name, value in form.multi_items():
            if name == "prompt_audio":
                audio = await read_upload(value, max_bytes)
            elif name == "prompt_text" and isinstance(value, str):
                prompt_text = value.strip()
            else:
                raise InvalidInputError("request.unknown_field", f"未知字段「{name}」", f"Unknown field '{name}'",
                                        field=name)
    if audio is None:  # an empty file goes on to the prompt loader, which says it is empty
        raise InvalidInputError("prompt.missing", "请先上传或录制提示音频", "Please upload or record a prompt audio first")
    prompt = await anyio.to_thread.run_sync(service.load_prompt, audio)
    prompt_id = service.register_prompt(prompt, prompt_text)
    return JSONResponse(_prompt_body(service, prompt_id), status_code=201)


@router.get("/prompts/{prompt_id}")
def get_prompt(request: Request, prompt_id: str) -> JSONResponse:
    """A registered prompt's measurements, warnings and voice state (404 if unknown)."""
    return JSONResponse(_prompt_body(request.app.state.service, prompt_id))


@router.delete("/prompts/{prompt_id}", status_code=204)
def delete_prompt(request: Request, prompt_id: str) -> Response:
    """Forget a registered prompt (404 if unknown)."""
    service = request.app.state.service
    if not service.forget_prompt(prompt_id):
        service.get_prompt(prompt_id)  # raises PromptNotFoundError
    return Response(status_code=204)


# --- synthesis ---------------------------------------------------------------------------------
async def _admit(request: Request) -> tuple[Any, TtsInputs, Optional[str]]:
    """Refuse busy at once, parse and check the inputs, resolve the prompt, submit.

    Returns:
        ``(job, inputs, new client cookie or None)``.

    Raises:
        CosywebError: busy (503), client limit (429), bad input (422), unknown prompt (404).
    """
    service, settings = request.app.state.service, request.app.state.settings
    client_id, new_cookie = client_identity(request)
    service.precheck(client_id)  # busy: answered before reading or decoding anything
    inputs = await read_tts_inputs(request, max_upload_bytes(settings))
    inputs.check()
    options = inputs.options()
    if inputs.prompt_id:
        entry = service.get_prompt(inputs.prompt_id)
        prompt, prompt_text = entry.prompt, inputs.prompt_text.strip() or entry.prompt_text
    else:
        prompt = await anyio.to_thread.run_sync(service.load_prompt, inputs.prompt_audio)
        prompt_text = inputs.prompt_text.strip()

    def submit() -> Any:
        return service.submit(prompt, inputs.text, options, prompt_text=prompt_text, client_id=client_id)

    if len(inputs.text) <= INLINE_ANALYSIS_MAX_CHARS:
        job = submit()
    else:
        job = await anyio.to_thread.run_sync(submit)
    _state(request).track(job)
    return job, inputs, new_cookie


async def _until_disconnect(request: Request) -> None:
    while True:
        message = await request.receive()
        if message["type"] == "http.disconnect":
            return


@router.post("/tts")
async def tts(request: Request) -> Response:
    """Synthesise a whole text; ``audio/wav`` (PCM_16 at the engine's sample rate) with the
    status JSON (``duration_s``, ``sample_rate``, ``rtf``, ``first_chunk_ms``, ``queue_wait_ms``,
    ``total_ms``, ``warnings``...) in ``X-Cosyweb-Status``. Errors are JSON with their status
    code; a client that disconnects cancels the job."""
    job, _inputs, new_cookie = await _admit(request)
    state = _state(request)
    done = asyncio.ensure_future(_wait_terminal(job))
    gone = asyncio.ensure_future(_until_disconnect(request))
    try:
        await asyncio.wait({done, gone}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in (done, gone):
            if not task.done():
                task.cancel()
        if not job.finished:
            job.cancel("client_gone")
        state.record(job)
    if job.error is not None:
        return _with_cookie(error_response(job.error), new_cookie)
    status = job.status_info.to_dict()
    body = await anyio.to_thread.run_sync(wav_bytes, job.audio(), job.sample_rate)
    headers = {"X-Cosyweb-Status": ascii_json(status), "X-Cosyweb-Job-Id": job.id, "Cache-Control": "no-store"}
    return _with_cookie(Response(body, media_type="audio/wav", headers=headers), new_cookie)


async def _wait_terminal(job: Any) -> None:
    async for _ev in job.aevents():
        pass


@router.post("/tts/stream")
async def tts_stream(request: Request) -> Response:
    """Stream a job's audio as it is produced (raw PCM16 or a WAV stream; see
    :mod:`cosyweb.server.api_stream`). Admission and input checks answer before the stream
    starts; a client that disconnects cancels the job."""
    job, inputs, new_cookie = await _admit(request)
    headers = stream_headers(job, inputs.format, job.position() or 0)
    return _with_cookie(JobAudioStream(job, inputs.format, headers, _state(request).record), new_cookie)


# --- jobs --------------------------------------------------------------------------------------
@router.get("/jobs/{job_id}")
def get_job(request: Request, job_id: str) -> JSONResponse:
    """A job's state while queued/running, or its outcome after it ended (404 if unknown)."""
    summary = _state(request).lookup(job_id)
    if summary is None:
        job = request.app.state.service.get_job(job_id)  # a job of another entry point (the UI)
        if job is None:
            raise JobNotFoundError(job_id)
        summary = job_summary(job)
    return JSONResponse(summary)


@router.delete("/jobs/{job_id}")
def cancel_job(request: Request, job_id: str) -> JSONResponse:
    """Cancel a queued or running job; ``{"cancelled": true}`` (false if it had already ended)."""
    service = request.app.state.service
    if service.get_job(job_id) is None and _state(request).lookup(job_id) is None:
        raise JobNotFoundError(job_id)
    return JSONResponse({"job_id": job_id, "cancelled": bool(service.cancel(job_id, "stop"))})
