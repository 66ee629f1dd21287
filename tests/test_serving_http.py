"""Integration: the HTTP API and probes of a real ``python app.py`` process (lite engine) with
real prompts from ``../shared/prompts``: /healthz, /readyz, /metrics, a streamed and a whole
synthesis, and a busy refusal (503 + Retry-After + bilingual body) while another client's
stream runs, which still completes. The app runs with one active job and no queue so that a
second request is refused for sure."""

from __future__ import annotations

import io
import json
import re
import threading
import time

import httpx
import numpy as np
import pytest
import soundfile as sf
from serving_app import register_prompt, running_app

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]

LONG_TEXT = "希望你以后能够做的比我还好呦。今天天气很好，我们一起去公园散步吧。" * 6


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    with running_app(tmp_path_factory.mktemp("serving"), "--max-queue", "0", "--concurrency", "1",
                     env={"COSYWEB_MAX_ACTIVE_JOBS": "1"}, check_exit=True) as proc:
        yield proc


@pytest.fixture(scope="module")
def prompt_id(app, shared_prompts) -> str:
    return register_prompt(app.url, shared_prompts / "cosyvoice__zero_shot_prompt.wav")


def _metric(text: str, name: str, labels: str = "") -> float:
    m = re.search(rf"^{re.escape(name)}{re.escape(labels)} ([0-9.eE+-]+)$", text, re.M)
    assert m, f"{name}{labels} not in /metrics"
    return float(m.group(1))


def test_probes_and_metrics(app, prompt_id):
    assert httpx.get(app.url + "/healthz").json() == {"status": "ok", "engine": "lite"}
    assert httpx.get(app.url + "/readyz").json()["status"] == "ready"
    httpx.post(app.url + "/api/v1/tts", json={"prompt_id": prompt_id, "text": "你好。"}, timeout=120).raise_for_status()
    text = httpx.get(app.url + "/metrics").text
    assert _metric(text, "cosyweb_jobs_completed_total") >= 1
    assert _metric(text, "cosyweb_ready") == 1 and _metric(text, "cosyweb_healthy") == 1
    assert _metric(text, "cosyweb_voice_prewarms_total", '{outcome="prepared"}') >= 1
    assert _metric(text, "process_resident_memory_bytes") > 50e6
    assert "cosyweb_first_chunk_seconds_bucket" in text and "cosyweb_batch_size_bucket" in text


def test_stream_and_whole_wav_of_a_real_prompt(app, prompt_id):
    text = "她[h][ào]干净，今天是2026年11月30日。"
    chunks: list[bytes] = []
    with httpx.stream("POST", app.url + "/api/v1/tts/stream", json={"prompt_id": prompt_id, "text": text, "seed": 1},
                      headers={"X-API-Key": "a"}, timeout=120) as r:
        assert r.status_code == 200 and r.headers["x-sample-rate"] == "22050"
        chunks.extend(r.iter_raw())
    pcm = np.frombuffer(b"".join(chunks), "<i2")
    assert 2.0 < len(pcm) / 22050 < 10.0 and np.abs(pcm).max() > 1000
    r = httpx.post(app.url + "/api/v1/tts", json={"prompt_id": prompt_id, "text": text, "seed": 1},
                   headers={"X-API-Key": "a"}, timeout=120)
    wav, sr = sf.read(io.BytesIO(r.content), dtype="int16")
    status = json.loads(r.headers["x-cosyweb-status"])
    assert sr == 22050 and status["duration_s"] == pytest.approx(len(wav) / sr, abs=1e-3)
    np.testing.assert_array_equal(wav, pcm)  # the same seed gives the same audio, stream or file


def test_busy_refusal_is_503_with_retry_after_while_the_running_stream_completes(app, prompt_id):
    result: dict = {}

    def long_stream() -> None:
        with httpx.stream("POST", app.url + "/api/v1/tts/stream", json={"prompt_id": prompt_id, "text": LONG_TEXT},
                          headers={"X-API-Key": "first"}, timeout=300) as r:
            result["status"] = r.status_code
            result["bytes"] = sum(len(c) for c in r.iter_raw())

    t = threading.Thread(target=long_stream)
    t.start()
    deadline = time.monotonic() + 60
    while httpx.get(app.url + "/api/v1/stats").json()["active_jobs"] != 1:
        assert time.monotonic() < deadline and t.is_alive(), "the long job never started"
        time.sleep(0.05)
    r = httpx.post(app.url + "/api/v1/tts/stream", json={"prompt_id": prompt_id, "text": "你好。"},
                   headers={"X-API-Key": "second"}, timeout=30)
    assert r.status_code == 503 and int(r.headers["retry-after"]) >= 1
    err = r.json()["error"]
    assert err["zh"] == "系统繁忙，请稍后再试" and err["en"] == "System busy, please try again later"
    assert err["details"]["reason"] == "queue_full" and err["details"]["estimated_wait_s"] > 0
    t.join(300)
    assert result["status"] == 200 and result["bytes"] / 2 / 22050 > 20.0  # the running stream completed
    metrics = httpx.get(app.url + "/metrics").text
    assert _metric(metrics, "cosyweb_jobs_refused_busy_total", '{reason="queue_full"}') >= 1
    assert httpx.get(app.url + "/healthz").status_code == 200
