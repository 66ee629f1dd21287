"""The HTTP API (``/api/v1``) on a fake engine: prompt registration, whole-wav and streaming
synthesis (bytes and headers), busy refusals (503 + Retry-After + position/wait estimate),
the per-client limit (429), bad input (422 with the specific message and position), unknown
ids (404), timeouts (504 / aborted stream), disconnect cancels the job, login.

The audio of the fake engine is a constant per segment (``fakes.value_for``), so every byte
of a response can be checked against what the engine produced."""

from __future__ import annotations

import asyncio
import base64
import io
import json
import struct
import threading

import numpy as np
import pytest
import soundfile as sf
from fakes import FakeEngine, Gate, service_factory, submit, value_for, wait_until  # noqa: F401
from fastapi.testclient import TestClient

from cosyweb.options import SynthesisOptions
from cosyweb.server.api_inputs import api_key_client_id
from cosyweb.server.app import build_app

pytestmark = pytest.mark.timeout(60)

TEXT = "你好，世界。今天天气很好。"
BUSY_ZH, BUSY_EN = "系统繁忙，请稍后再试", "System busy, please try again later"


@pytest.fixture
def prompt_bytes(shared_prompts) -> bytes:
    return (shared_prompts / "cosyvoice__zero_shot_prompt.wav").read_bytes()


def make(service_factory, tmp_path, engine=None, **settings):
    svc = service_factory(engine or FakeEngine(), output_dir=tmp_path / "out", **settings)
    return svc, TestClient(build_app(svc, svc.settings, mount_ui=False))


def register(client, prompt_bytes, prompt_text="", key="k") -> dict:
    r = client.post("/api/v1/prompts", files={"prompt_audio": ("p.wav", prompt_bytes, "audio/wav")},
                    data={"prompt_text": prompt_text}, headers={"X-API-Key": key})
    assert r.status_code == 201, r.text
    return r.json()


def expected_pcm(svc, engine: FakeEngine, text: str) -> np.ndarray:
    """int16 samples the fake engine makes for ``text`` (segments from the real front end)."""
    segs = svc.analyze_text(text, SynthesisOptions())
    parts = [np.full(engine.chunk_samples * engine.n_chunks, value_for(s.text), np.float32) for s in segs]
    return np.rint(np.concatenate(parts) * 32767).astype(np.int16)


# --- prompts ------------------------------------------------------------------------------------
def test_register_prompt_prepares_the_voice_in_the_background(service_factory, tmp_path, prompt_bytes):
    svc, client = make(service_factory, tmp_path)
    body = register(client, prompt_bytes, "希望你以后能够做的比我还好呦。")
    assert len(body["prompt_id"]) == 32 and body["prompt_text"] == "希望你以后能够做的比我还好呦。"
    assert body["stats"]["sample_rate"] == 24000 and 2.5 < body["stats"]["duration_s"] < 3.6
    assert body["warnings"] == [] and body["voice"] in ("pending", "ready")
    pid = body["prompt_id"]
    assert wait_until(lambda: client.get(f"/api/v1/prompts/{pid}").json()["voice"] == "ready")
    assert len(svc.engine.prepared) == 1
    assert client.delete(f"/api/v1/prompts/{pid}").status_code == 204
    r = client.get(f"/api/v1/prompts/{pid}")
    assert r.status_code == 404 and r.json()["error"]["code"] == "prompt.unknown"


def test_register_rejects_bad_uploads_with_bilingual_messages(service_factory, tmp_path):
    _, client = make(service_factory, tmp_path)
    silent = io.BytesIO()
    sf.write(silent, np.zeros(48000, np.float32), 16000, format="WAV")
    r = client.post("/api/v1/prompts", files={"prompt_audio": ("s.wav", silent.getvalue(), "audio/wav")})
    assert r.status_code == 422 and "静音" in r.json()["error"]["zh"] and "silent" in r.json()["error"]["en"].lower()
    r = client.post("/api/v1/prompts", files={"prompt_audio": ("g.wav", b"\x00garbage" * 500, "audio/wav")})
    assert r.status_code == 422 and r.json()["error"]["zh"] and r.json()["error"]["en"]
    r = client.post("/api/v1/prompts", json={"prompt_audio": "x"})
    assert r.status_code == 422 and r.json()["error"]["code"] == "request.content_type"
    for route, extra in (("/api/v1/prompts", {}), ("/api/v1/tts", {"text": TEXT})):  # an empty file says so
        r = client.post(route, files={"prompt_audio": ("e.wav", b"", "audio/wav")}, data=extra)
        assert r.status_code == 422 and "文件为空" in r.json()["error"]["zh"], (route, r.text)
        assert "the file is empty" in r.json()["error"]["en"]


def test_a_chunked_body_over_the_limit_is_refused_while_it_is_read(service_factory, tmp_path):
    svc, client = make(service_factory, tmp_path, max_upload_mb=1)
    sent = []

    def body():  # no Content-Length: Transfer-Encoding chunked
        yield b'{"text": "'
        for _ in range(64):
            sent.append(1)
            yield b"a" * (256 * 1024)
        yield b'"}'

    r = client.post("/api/v1/tts", content=body(), headers={"content-type": "application/json"})
    assert r.status_code == 413 and r.json()["error"]["code"] == "request.too_large"
    assert "上限为 1 MB" in r.json()["error"]["zh"] and "the limit is 1 MB" in r.json()["error"]["en"]
    r = client.post("/api/v1/prompts", content=body(), headers={"content-type": "multipart/form-data; boundary=x"})
    assert r.status_code == 413
    assert svc.stats()["admitted"] == 0
    r = client.get("/api/v1/info")  # the app carries on
    assert r.status_code == 200


# --- whole wav ------------------------------------------------------------------------------------
def test_tts_returns_the_whole_wav_at_the_engine_rate_with_the_status_header(service_factory, tmp_path, prompt_bytes):
    svc, client = make(service_factory, tmp_path)
    pid = register(client, prompt_bytes)["prompt_id"]
    r = client.post("/api/v1/tts", json={"prompt_id": pid, "text": TEXT, "seed": 3}, headers={"X-API-Key": "k"})
    assert r.status_code == 200 and r.headers["content-type"] == "audio/wav"
    data, sr = sf.read(io.BytesIO(r.content), dtype="int16")
    assert sr == 16000
    np.testing.assert_array_equal(data, expected_pcm(svc, svc.engine, TEXT))
    status = json.loads(r.headers["X-Cosyweb-Status"])
    assert status["sample_rate"] == 16000 and status["duration_s"] == pytest.approx(len(data) / sr, abs=1e-3)
    assert status["n_segments"] == 2 and status["first_chunk_ms"] > 0 and status["job_id"] == r.headers["X-Cosyweb-Job-Id"]
    job = client.get(f"/api/v1/jobs/{status['job_id']}").json()
    assert job["status"] == "done" and job["result"]["n_segments"] == 2


def test_tts_with_an_uploaded_prompt_file(service_factory, tmp_path, prompt_bytes):
    svc, client = make(service_factory, tmp_path)
    r = client.post("/api/v1/tts", data={"text": TEXT, "prompt_text": ""},
                    files={"prompt_audio": ("p.wav", prompt_bytes, "audio/wav")})
    assert r.status_code == 200
    data, _ = sf.read(io.BytesIO(r.content), dtype="int16")
    np.testing.assert_array_equal(data, expected_pcm(svc, svc.engine, TEXT))
    assert "cosyweb_client=" in r.headers.get("set-cookie", "")  # a browser gets a session id


# --- streaming ----------------------------------------------------------------------------------------
def test_stream_is_raw_pcm16_with_its_format_headers(service_factory, tmp_path, prompt_bytes):
    svc, client = make(service_factory, tmp_path)
    pid = register(client, prompt_bytes)["prompt_id"]
    r = client.post("/api/v1/tts/stream", json={"prompt_id": pid, "text": TEXT})
    assert r.status_code == 200 and r.headers["content-type"] == "application/octet-stream"
    assert (r.headers["X-Sample-Rate"], r.headers["X-Channels"], r.headers["X-Sample-Format"]) == ("16000", "1", "s16le")
    assert r.headers["X-Cosyweb-Queue-Position"] == "0" and json.loads(r.headers["X-Cosyweb-Warnings"]) == []
    np.testing.assert_array_equal(np.frombuffer(r.content, "<i2"), expected_pcm(svc, svc.engine, TEXT))


def test_stream_as_wav_has_an_unknown_length_header(service_factory, tmp_path, prompt_bytes):
    svc, client = make(service_factory, tmp_path)
    pid = register(client, prompt_bytes)["prompt_id"]
    r = client.post("/api/v1/tts/stream?format=wav", json={"prompt_id": pid, "text": TEXT})
    assert r.status_code == 200 and r.headers["content-type"] == "audio/wav"
    head = r.content[:44]
    assert head[:4] == b"RIFF" and head[8:16] == b"WAVEfmt " and head[36:40] == b"data"
    assert struct.unpack("<I", head[4:8])[0] == 0xFFFFFFFF and struct.unpack("<I", head[40:44])[0] == 0xFFFFFFFF
    channels, rate = struct.unpack("<HI", head[22:28])
    assert (channels, rate, struct.unpack("<H", head[34:36])[0]) == (1, 16000, 16)
    np.testing.assert_array_equal(np.frombuffer(r.content[44:], "<i2"), expected_pcm(svc, svc.engine, TEXT))


# --- refusals and bad input -----------------------------------------------------------------------
def test_busy_is_503_with_retry_after_and_an_estimate_before_any_stream(service_factory, tmp_path, prompt_bytes):
    engine = FakeEngine()
    gate = engine.on("hold", before=Gate()).before
    svc, client = make(service_factory, tmp_path, engine, concurrency=1, max_active_jobs=1, max_queue=0)
    pid = register(client, prompt_bytes)["prompt_id"]
    assert wait_until(lambda: svc.voice_state(pid) == "ready")
    running = submit(svc, "hold")
    assert gate.wait_reached()
    for path in ("/api/v1/tts/stream", "/api/v1/tts"):
        r = client.post(path, json={"prompt_id": pid, "text": TEXT}, headers={"X-API-Key": "other"})
        assert r.status_code == 503 and int(r.headers["Retry-After"]) >= 1
        err = r.json()["error"]
        assert (err["zh"], err["en"]) == (BUSY_ZH, BUSY_EN)
        assert err["details"]["reason"] == "queue_full" and err["details"]["position"] == 1
        assert err["details"]["estimated_wait_s"] >= 0 and err["details"]["queue_depth"] == 0
    gate.open()
    running.result(timeout=10)
    assert svc.stats()["refused"] == 2 and engine.call_texts() == ["hold"]


def test_per_client_limit_is_429_with_retry_after(service_factory, tmp_path, prompt_bytes):
    engine = FakeEngine()
    gate = engine.on("hold", before=Gate()).before
    svc, client = make(service_factory, tmp_path, engine, per_client_jobs=1)
    pid = register(client, prompt_bytes)["prompt_id"]
    running = submit(svc, "hold", client_id=api_key_client_id("alice"))
    assert gate.wait_reached()
    r = client.post("/api/v1/tts/stream", json={"prompt_id": pid, "text": TEXT}, headers={"X-API-Key": "alice"})
    assert r.status_code == 429 and r.headers["Retry-After"] and BUSY_ZH in r.json()["error"]["zh"]
    other: list = []
    bob = threading.Thread(target=lambda: other.append(client.post(
        "/api/v1/tts/stream", json={"prompt_id": pid, "text": TEXT}, headers={"X-API-Key": "bob"})))
    bob.start()
    assert wait_until(lambda: svc.stats()["active_jobs"] == 2)  # another client is admitted...
    gate.open()
    running.result(timeout=10)
    bob.join(10)
    assert other[0].status_code == 200 and other[0].content  # ...and served


@pytest.mark.parametrize(
    "body, status, code, parts",
    [
        ({"text": "今天天气[hoo4]"}, 422, "text.bad_annotation", ["第5个字符", "[hoo4]", "character 5"]),
        ({"text": TEXT, "speed": 7}, 422, "option.invalid", ["语速", "speed"]),
        ({"text": TEXT, "dialect": "四川话"}, 422, "option.dialect_unsupported", ["四川话", "CosyVoice3"]),
        ({"text": "   "}, 422, "text.empty", ["请输入", "enter the text"]),
        ({"text": TEXT, "speeed": 1}, 422, "request.unknown_field", ["speeed", "speeed"]),
        ({"text": 5}, 422, "request.field_type", ["text", "text"]),
        ({"text": TEXT, "format": "mp3"}, 422, "request.format", ["mp3", "mp3"]),
        ({"text": TEXT, "prompt_id": "nope"}, 404, "prompt.unknown", ["nope", "nope"]),
    ],
)
def test_bad_input_gets_its_specific_bilingual_message(service_factory, tmp_path, prompt_bytes, body, status, code, parts):
    svc, client = make(service_factory, tmp_path)
    body = {"prompt_id": register(client, prompt_bytes)["prompt_id"], **body}
    r = client.post("/api/v1/tts/stream", json=body)
    assert r.status_code == status, r.text
    err = r.json()["error"]
    assert err["code"] == code
    assert parts[0] in err["zh"] and parts[-1] in err["en"]
    if code == "text.bad_annotation":
        assert err["details"]["position"] == 5
    assert svc.stats()["admitted"] == 0


def test_missing_prompt_and_malformed_json(service_factory, tmp_path):
    _, client = make(service_factory, tmp_path)
    r = client.post("/api/v1/tts", json={"text": TEXT})
    assert r.status_code == 422 and r.json()["error"]["code"] == "prompt.missing"
    r = client.post("/api/v1/tts", content=b"{not json", headers={"content-type": "application/json"})
    assert r.status_code == 422 and r.json()["error"]["code"] == "request.json"


def test_a_timed_out_job_is_504_with_the_message(service_factory, tmp_path, prompt_bytes):
    engine = FakeEngine()
    engine.on("*", before=Gate())  # never opened during the request: the deadline fires
    svc, client = make(service_factory, tmp_path, engine, job_timeout_s=0.3)
    pid = register(client, prompt_bytes)["prompt_id"]
    r = client.post("/api/v1/tts", json={"prompt_id": pid, "text": TEXT})
    assert r.status_code == 504
    err = r.json()["error"]
    assert err["code"] == "timeout" and "超时" in err["zh"] and "timed out" in err["en"]
    assert svc.stats()["timeout"] == 1 and svc.stats()["active_jobs"] == 0


def test_login_required_when_auth_is_configured(service_factory, tmp_path, prompt_bytes):
    svc = service_factory(FakeEngine(), output_dir=tmp_path / "out")
    settings = svc.settings.model_copy(update={"auth": "alice:s3cret"})
    client = TestClient(build_app(svc, settings, mount_ui=False))
    r = client.get("/api/v1/info")
    assert r.status_code == 401 and r.json()["error"]["code"] == "auth.required"
    bad = base64.b64encode(b"alice:nope").decode()
    assert client.get("/api/v1/info", headers={"Authorization": f"Basic {bad}"}).status_code == 401
    good = base64.b64encode(b"alice:s3cret").decode()
    r = client.get("/api/v1/info", headers={"Authorization": f"Basic {good}"})
    assert r.status_code == 200 and r.json()["sample_rate"] == 16000 and r.json()["formats"] == ["pcm", "wav"]
    assert client.get("/healthz").status_code == 200  # probes stay open


# --- the stream on the wire: disconnects and failures (the ASGI app driven directly) --------------
def _scope(path: str, key: str = "k") -> dict:
    return {
        "type": "http", "asgi": {"version": "3.0", "spec_version": "2.4"}, "http_version": "1.1", "method": "POST",
        "scheme": "http", "path": path, "raw_path": path.encode(), "query_string": b"", "root_path": "",
        "headers": [(b"content-type", b"application/json"), (b"x-api-key", key.encode())],
        "client": ("127.0.0.1", 40000), "server": ("testserver", 80),
    }


def drive(app, body: dict, disconnect_after: str = "never") -> list[dict]:
    """POST /api/v1/tts/stream; the client disconnects after the response start (``"start"``),
    after the first audio bytes (``"audio"``) or not at all. Returns the messages sent."""
    sent: list[dict] = []

    async def run() -> None:
        gone = asyncio.Event()
        request = [{"type": "http.request", "body": json.dumps(body).encode(), "more_body": False}]

        async def receive() -> dict:
            if request:
                return request.pop()
            await gone.wait()
            return {"type": "http.disconnect"}

        async def send(message: dict) -> None:
            sent.append(message)
            if disconnect_after == "start" and message["type"] == "http.response.start":
                gone.set()
            if disconnect_after == "audio" and message["type"] == "http.response.body" and message.get("body"):
                gone.set()

        await asyncio.wait_for(app(_scope("/api/v1/tts/stream"), receive, send), timeout=20)

    asyncio.run(run())
    return sent


def test_disconnect_mid_stream_cancels_the_job_and_frees_its_slot(service_factory, tmp_path, prompt_bytes):
    engine = FakeEngine()
    gate = engine.on("今天天气很好。", before=Gate("segment 2")).before
    svc, client = make(service_factory, tmp_path, engine, concurrency=1, max_active_jobs=1)
    pid = register(client, prompt_bytes)["prompt_id"]
    sent = drive(client.app, {"prompt_id": pid, "text": TEXT}, disconnect_after="audio")
    assert sent[0]["status"] == 200 and not any(m.get("more_body") is False for m in sent[1:])
    stats = svc.stats()
    assert stats["cancelled"] == 1 and stats["active_jobs"] == 0 and stats["completed"] == 0
    job_id = dict(sent[0]["headers"])[b"x-cosyweb-job-id"].decode()
    assert client.get(f"/api/v1/jobs/{job_id}").json()["error"]["details"]["reason"] == "client_gone"
    gate.open()  # a held engine call (if segment 2 had started) returns; its audio goes nowhere
    assert wait_until(lambda: svc._core.monitor.n_calls == 0)
    assert svc.stats()["completed"] == 0 and client.get(f"/api/v1/jobs/{job_id}").json()["status"] == "cancelled"


def test_disconnect_while_queued_cancels_the_queued_job(service_factory, tmp_path, prompt_bytes):
    engine = FakeEngine()
    gate = engine.on("hold", before=Gate()).before
    svc, client = make(service_factory, tmp_path, engine, concurrency=1, max_active_jobs=1, max_queue=2)
    pid = register(client, prompt_bytes)["prompt_id"]
    running = submit(svc, "hold")
    assert gate.wait_reached()
    sent = drive(client.app, {"prompt_id": pid, "text": TEXT}, disconnect_after="start")
    headers = dict(sent[0]["headers"])
    assert headers[b"x-cosyweb-queue-position"] == b"1"
    assert svc.stats()["queue_depth"] == 0 and svc.stats()["cancelled"] == 1
    gate.open()
    running.result(timeout=10)
    assert len(engine.calls) == 1  # the cancelled job never reached the engine


def test_failure_mid_stream_aborts_the_response_and_the_job_says_why(service_factory, tmp_path, prompt_bytes):
    engine = FakeEngine()
    engine.on("今天天气很好。", error=RuntimeError("internal detail"))
    svc, client = make(service_factory, tmp_path, engine)
    pid = register(client, prompt_bytes)["prompt_id"]
    sent = drive(client.app, {"prompt_id": pid, "text": TEXT})
    bodies = [m for m in sent if m["type"] == "http.response.body"]
    assert bodies and all(m["more_body"] for m in bodies)  # no clean end: the client sees a broken stream
    assert sum(len(m["body"]) for m in bodies) == 2 * engine.chunk_samples * engine.n_chunks  # segment 1 arrived
    job_id = dict(sent[0]["headers"])[b"x-cosyweb-job-id"].decode()
    job = client.get(f"/api/v1/jobs/{job_id}").json()
    assert job["status"] == "failed" and job["error"]["code"] == "engine.failed"
    assert "internal detail" not in json.dumps(job)


def test_jobs_route_shows_the_queue_position_and_cancels(service_factory, tmp_path):
    engine = FakeEngine()
    gate = engine.on("hold", before=Gate()).before
    svc, client = make(service_factory, tmp_path, engine, concurrency=1, max_active_jobs=1, max_queue=2)
    running = submit(svc, "hold")
    assert gate.wait_reached()
    queued = submit(svc, "later")
    assert client.get(f"/api/v1/jobs/{queued.id}").json() == {
        "job_id": queued.id, "status": "queued", "audio_s": 0.0, "position": 1}
    r = client.delete(f"/api/v1/jobs/{queued.id}")
    assert r.json()["cancelled"] is True and queued.status == "cancelled"
    assert client.get("/api/v1/jobs/unknown").status_code == 404
    gate.open()
    running.result(timeout=10)
    stats = client.get("/api/v1/stats").json()
    assert stats["completed"] == 1 and stats["cancelled"] == 1 and stats["max_active_jobs"] == 1


def test_a_stream_past_its_deadline_is_aborted_and_reported_as_timeout(service_factory, tmp_path, prompt_bytes):
    engine = FakeEngine()
    engine.on("今天天气很好。", before=Gate("segment 2"))  # held past the deadline
    svc, client = make(service_factory, tmp_path, engine, job_timeout_s=0.3)
    pid = register(client, prompt_bytes)["prompt_id"]
    sent = drive(client.app, {"prompt_id": pid, "text": TEXT})
    bodies = [m for m in sent if m["type"] == "http.response.body"]
    assert bodies and all(m["more_body"] for m in bodies)  # the first segment streamed, then the abort
    job_id = dict(sent[0]["headers"])[b"x-cosyweb-job-id"].decode()
    job = client.get(f"/api/v1/jobs/{job_id}").json()
    assert job["status"] == "timeout" and "超时" in job["error"]["zh"] and "timed out" in job["error"]["en"]
    assert svc.stats()["active_jobs"] == 0
