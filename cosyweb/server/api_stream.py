"""Response side of the HTTP API: streaming a job's audio as it is produced.

Wire format of ``POST /api/v1/tts/stream`` (chosen for a ``fetch()`` + ``AudioContext``
player: every byte after the optional header is a sample, so the reader converts each
received piece with ``new Int16Array(buffer)`` and schedules it, with no container to parse):

* ``format=pcm`` (default): ``Content-Type: application/octet-stream``, headers
  ``X-Sample-Rate`` (Hz), ``X-Channels: 1``, ``X-Sample-Format: s16le``; the body is raw
  little-endian signed 16-bit mono PCM. A network read may end in the middle of a sample:
  keep an odd trailing byte for the next read.
* ``format=wav``: ``Content-Type: audio/wav``; a 44-byte RIFF/WAVE header whose RIFF and
  ``data`` sizes are ``0xFFFFFFFF`` (length unknown), then the same PCM. ``curl ... > a.wav``
  gives a playable file.

Both headers carry ``X-Cosyweb-Job-Id`` and ``X-Cosyweb-Queue-Position`` (0: started at once,
n: waiting at place n). The response ends cleanly after the last sample. If the job fails,
times out or is cancelled after the response has started, the response is aborted (the
connection is closed without the final empty chunk, so ``reader.read()`` rejects and curl
reports a transfer error) and ``GET /api/v1/jobs/{job_id}`` tells why, in zh and en. A client
that disconnects cancels its job at once, whether it is queued or streaming; its slot is
free within one segment.
"""

from __future__ import annotations

import json
import logging
import struct
from typing import Any, Callable, Mapping

import anyio
import numpy as np
from starlette.responses import Response
from starlette.types import Receive, Scope, Send

from cosyweb.audio.encode import to_int16

log = logging.getLogger("cosyweb.server")

#: ``0xFFFFFFFF``: the RIFF and data chunk size of a WAV stream of unknown length.
UNKNOWN_SIZE = 0xFFFFFFFF


def wav_stream_header(sample_rate: int, n_channels: int = 1) -> bytes:
    """A 44-byte PCM_16 WAV header with unknown (``0xFFFFFFFF``) RIFF and data sizes.

    Args:
        sample_rate: Hz.
        n_channels: interleaved channels.
    """
    bits = 16
    block_align = n_channels * bits // 8
    return (
        b"RIFF" + struct.pack("<I", UNKNOWN_SIZE) + b"WAVE"
        + b"fmt " + struct.pack("<IHHIIHH", 16, 1, n_channels, int(sample_rate), int(sample_rate) * block_align,
                                block_align, bits)
        + b"data" + struct.pack("<I", UNKNOWN_SIZE)
    )


def pcm16_bytes(audio: np.ndarray) -> bytes:
    """float32 samples in [-1, 1] (clipped) -> little-endian int16 bytes, 2 bytes per sample."""
    return to_int16(audio).astype("<i2", copy=False).tobytes()


def ascii_json(obj: Any) -> str:
    """Compact JSON with non-ASCII escaped, safe for an HTTP header value."""
    return json.dumps(obj, ensure_ascii=True, separators=(",", ":"))


def stream_headers(job: Any, fmt: str, position: int) -> dict[str, str]:
    """The headers of a streaming response for ``job`` (see the module docstring)."""
    headers = {
        "X-Sample-Rate": str(job.sample_rate),
        "X-Channels": "1",
        "X-Sample-Format": "s16le",
        "X-Cosyweb-Job-Id": job.id,
        "X-Cosyweb-Queue-Position": str(int(position or 0)),
        "X-Cosyweb-Warnings": ascii_json(list(getattr(job, "warnings", []) or [])),
        "Cache-Control": "no-store",
        "X-Accel-Buffering": "no",  # nginx: do not buffer the stream
    }
    return headers


class JobAudioStream(Response):
    """A response that streams one job's audio chunks as PCM16 (or a WAV stream).

    Args:
        job: an admitted :class:`cosyweb.pipeline.job.Job`.
        fmt: ``"pcm"`` or ``"wav"``.
        headers: response headers (see :func:`stream_headers`).
        on_end: called with the job once the response is over (done, failed or client gone).

    It always listens for the client's disconnect (whatever the ASGI spec version the
    server reports), so a client that goes away while its job is queued or between chunks
    cancels the job at once.
    """

    def __init__(self, job: Any, fmt: str, headers: Mapping[str, str], on_end: Callable[[Any], None]) -> None:
        self.job = job
        self.fmt = fmt
        self.on_end = on_end
        self.status_code = 200
        self.media_type = "audio/wav" if fmt == "wav" else "application/octet-stream"
        self.background = None
        self.init_headers(headers)
        self.completed = False

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            async with anyio.create_task_group() as tg:

                async def watch_disconnect() -> None:
                    while True:
                        message = await receive()
                        if message["type"] == "http.disconnect":
                            tg.cancel_scope.cancel()
                            return

                tg.start_soon(watch_disconnect)
                try:
                    await self._stream(send)
                finally:
                    tg.cancel_scope.cancel()
        finally:
            if not self.job.finished:
                self.job.cancel("client_gone")
            try:
                self.on_end(self.job)
            except Exception:  # pragma: no cover - bookkeeping must not break the response
                log.exception("stream end hook failed")

    async def _stream(self, send: Send) -> None:
        await send({"type": "http.response.start", "status": self.status_code, "headers": self.raw_headers})
        if self.fmt == "wav":
            await send({"type": "http.response.body", "body": wav_stream_header(self.job.sample_rate), "more_body": True})
        async for ev in self.job.aevents():
            if ev.kind == "chunk":
                await send({"type": "http.response.body", "body": pcm16_bytes(ev.audio), "more_body": True})
            elif ev.kind == "done":
                await send({"type": "http.response.body", "body": b"", "more_body": False})
                self.completed = True
                return
            elif ev.kind == "error":
                # Abort: no final chunk, so the client sees a broken transfer, not a short file.
                log.info("stream of job %s aborted: %s", self.job.id, ev.error.code if ev.error else "error")
                return
