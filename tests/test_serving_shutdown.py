"""Integration: graceful shutdown of a real ``python app.py`` process (lite engine). A long job
streams through ``/api/v1/tts/stream``; SIGTERM stops admission (new requests get 503
``shutting_down``, ``/readyz`` 503) while the running job streams to its end; then the process
exits with status 0 within the grace period."""

from __future__ import annotations

import signal
import threading
import time

import httpx
import pytest
from serving_app import AppProcess, register_prompt

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]

GRACE_S = 60.0
#: run.py keeps serving this long after the last job so results can still be fetched.
LINGER_S = 3.0
LONG_TEXT = "希望你以后能够做的比我还好呦。今天天气很好，我们一起去公园散步吧。" * 8


def test_sigterm_drains_the_running_stream_refuses_new_work_and_exits_0(tmp_path, shared_prompts):
    app = AppProcess(tmp_path, env={"COSYWEB_SHUTDOWN_GRACE_S": str(GRACE_S)})
    try:
        app.wait_ready()
        pid = register_prompt(app.url, shared_prompts / "cosyvoice__zero_shot_prompt.wav")
        started = threading.Event()
        result: dict = {}

        def long_stream() -> None:
            try:
                with httpx.stream("POST", app.url + "/api/v1/tts/stream", json={"prompt_id": pid, "text": LONG_TEXT},
                                  headers={"X-API-Key": "long"}, timeout=300) as r:
                    result["status"] = r.status_code
                    n = 0
                    for chunk in r.iter_raw():
                        n += len(chunk)
                        started.set()
                    result["bytes"] = n
                    result["complete"] = True
            except httpx.HTTPError as exc:
                result["error"] = repr(exc)
            finally:
                started.set()

        t = threading.Thread(target=long_stream)
        t.start()
        assert started.wait(120) and "error" not in result, result
        app.proc.send_signal(signal.SIGTERM)
        t_signal = time.monotonic()

        deadline = time.monotonic() + 10
        while True:  # the signal handler runs within moments; then admission is closed
            r = httpx.post(app.url + "/api/v1/tts/stream", json={"prompt_id": pid, "text": "你好。"},
                           headers={"X-API-Key": "late"}, timeout=30)
            if r.status_code == 503:
                break
            assert time.monotonic() < deadline, f"still admitting after SIGTERM: {r.status_code}"
            time.sleep(0.05)
        assert r.json()["error"]["details"]["reason"] == "shutting_down" and r.headers["retry-after"]
        assert httpx.get(app.url + "/readyz").status_code == 503
        assert t.is_alive(), "the long job should still be streaming while the refusals are checked"

        t.join(GRACE_S)
        assert result.get("complete") and result["status"] == 200, result
        assert result["bytes"] / 2 / 22050 > 30.0  # all of it: ~8 x 2 sentences
        assert app.proc.wait(GRACE_S + LINGER_S + 15) == 0
        assert time.monotonic() - t_signal < GRACE_S + LINGER_S + 15
        assert "cancelled_running=0" in app.log()
    finally:
        app.stop()
