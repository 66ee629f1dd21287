"""Integration: a real ``python app.py`` process (lite engine) driven over HTTP with
``gradio_client`` and real prompts from ``../shared/prompts``.

Covers: cloning from a Mandarin, an English, an mp3 and the Cantonese prompt with plausible
durations; the streaming endpoint; 好 annotated hao3 vs hao4 changes the F0 contour of that
syllable; bad inputs get their messages and the app keeps serving; the probes and metrics;
the shipped examples; a burst of 6 against ``--max-queue 1 --concurrency 1`` gives busy
refusals while every accepted job completes; SIGTERM lets a running job finish; ``--share``
offline keeps serving.
"""

from __future__ import annotations

import os
import re
import signal
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import librosa
import numpy as np
import pytest
import soundfile as sf
from gradio_client import Client, handle_file
from serving_app import AppProcess, running_app

from cosyweb.ui.blocks import example_rows

ROOT = Path(__file__).resolve().parents[1]
BUSY_ZH = "系统繁忙，请稍后再试"
BUSY_EN = "System busy, please try again later"

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]


# --- app processes -------------------------------------------------------------------------
@pytest.fixture(scope="module")
def app(tmp_path_factory):
    with running_app(tmp_path_factory.mktemp("app"), check_exit=True) as proc:
        yield proc


@pytest.fixture(scope="module")
def busy_app(tmp_path_factory):
    with running_app(tmp_path_factory.mktemp("busy"), "--max-queue", "1", "--concurrency", "1") as proc:
        yield proc


@pytest.fixture(scope="module")
def client(app) -> Client:
    return Client(app.url + "/", verbose=False)


def synthesize(client: Client, prompt, text: str, **kw):
    """Call the non-streaming API; returns (float samples, sample rate, status dict)."""
    wav, status = client.predict(
        prompt_audio=handle_file(str(prompt)) if prompt is not None else None,
        prompt_text=kw.pop("prompt_text", ""),
        text=text,
        api_name="/synthesize",
        **kw,
    )
    data, sr = sf.read(wav, dtype="float32")
    return data, sr, status


# --- cloning real prompts -------------------------------------------------------------------
CASES = {
    # prompt file: (text, language, (min_s, max_s) plausible duration)
    "cosyvoice__zero_shot_prompt.wav": ("她[h][ào]干净，今天是2026年11月30日。", "auto", (2.0, 10.0)),  # ~18 syllables
    "higgsaudio__en_woman.wav": ("The weather is lovely today, so let us go for a walk in the park.", "auto", (2.0, 10.0)),
    "zonos__exampleaudio.mp3": ("Good morning, and thank you all for coming.", "auto", (1.2, 7.0)),  # ~11 syllables
    "minguniaudio__yueyu_demo.wav": ("你做乜嘢啊？今日天气好好。", "yue", (1.5, 8.0)),  # 11 syllables
}


@pytest.mark.parametrize("prompt_file", list(CASES))
def test_clone_real_prompts_with_plausible_duration(client, shared_prompts, prompt_file):
    text, language, (lo_s, hi_s) = CASES[prompt_file]
    data, sr, status = synthesize(client, shared_prompts / prompt_file, text, language=language, seed=1)
    duration_s = len(data) / sr
    assert lo_s <= duration_s <= hi_s, (prompt_file, duration_s)
    assert abs(duration_s - status["duration_s"]) < 0.01 and status["sample_rate"] == sr
    assert status["rtf"] > 0 and status["first_chunk_ms"] > 0 and isinstance(status["warnings"], list)
    assert float(np.sqrt(np.mean(data**2))) > 0.01  # speech, not silence


def test_streaming_endpoint_streams_chunks_then_offers_the_wav(client, shared_prompts):
    job = client.submit(
        lang="zh", prompt_audio=handle_file(str(shared_prompts / "stepaudio__Tingting_prompt.wav")), prompt_text="",
        text="那等我们到海洋馆之后，给妈妈买个礼物。然后我们一起回家吃饭，好不好呀？", api_name="/synthesize_stream",
    )
    outputs = list(job)
    assert job.status().success
    final = job.outputs()[-1]
    assert final[1] and final[1].endswith(".wav") and "RTF" in final[2]
    streamed = [o for o in outputs if isinstance(o[0], str) and o[0]]
    assert streamed, outputs  # audio arrived before the end
    data, sr = sf.read(final[1])
    assert len(data) / sr > 2.0


# --- pronunciation annotation changes F0 ---------------------------------------------------------
def _last_syllable_f0(data: np.ndarray, sr: int) -> np.ndarray:
    """F0 (Hz, librosa.pyin) over the last syllable: the last run of frames above 25 % of the peak RMS."""
    y = librosa.resample(data.astype(np.float32), orig_sr=sr, target_sr=16000)
    hop = 160  # 10 ms
    rms = librosa.feature.rms(y=y, frame_length=1024, hop_length=hop)[0]
    active = rms > 0.25 * rms.max()
    idx = np.flatnonzero(active)
    end = idx[-1] + 1
    start = end - 1
    while start > 0 and active[start - 1]:
        start -= 1
    f0, _, _ = librosa.pyin(y, fmin=70, fmax=800, sr=16000, frame_length=1024, hop_length=hop, fill_na=None)
    return f0[start:end]


def _st(a: float, b: float) -> float:
    """Interval from b to a in semitones."""
    return 12.0 * np.log2(a / b)


def test_annotating_hao3_vs_hao4_changes_the_f0_contour(client, shared_prompts):
    prompt = shared_prompts / "cosyvoice__zero_shot_prompt.wav"
    contours = {}
    for reading in ("hao3", "hao4"):
        data, sr, _ = synthesize(client, prompt, f"她[{reading}]", seed=0)
        contours[reading] = _last_syllable_f0(data, sr)
    c3, c4 = contours["hao3"], contours["hao4"]
    assert len(c3) >= 8 and len(c4) >= 8, (len(c3), len(c4))
    third3, third4 = len(c3) // 3, len(c4) // 3
    # tone 4 (51) starts high and falls; tone 3 (214) starts low and dips
    assert _st(np.median(c4[:third4]), np.median(c3[:third3])) > 2.0, (c3, c4)
    assert _st(np.median(c4[:third4]), np.median(c4[-third4:])) > 1.0, c4
    assert np.min(c3) < np.min(c4), (c3, c4)


# --- bad inputs ----------------------------------------------------------------------------------
def test_bad_inputs_get_their_messages_and_the_app_keeps_serving(client, shared_prompts, tmp_path):
    from gradio_client.exceptions import AppError

    good = shared_prompts / "cosyvoice__zero_shot_prompt.wav"
    silent = tmp_path / "silent.wav"
    sf.write(silent, np.zeros(16000 * 3, np.float32), 16000)
    garbage = tmp_path / "garbage.wav"
    garbage.write_bytes(os.urandom(5000))
    cases = [
        (None, "你好。", {}, ["请先上传或录制提示音频", "Please upload or record a prompt audio first"]),
        (silent, "你好。", {}, ["静音", "silent"]),
        (garbage, "你好。", {}, ["/"]),
        (good, "今天天气[hoo4]", {}, ["第5个字符处的拼音标注 [hoo4] 无效", "invalid pinyin annotation [hoo4] at character 5"]),
        (good, "你好。", {"dialect": "四川话"}, ["四川话", "CosyVoice3"]),
        (good, "你好。", {"speed": 7.0}, ["无效的语速", "Invalid speed"]),
    ]
    for prompt, text, kw, expected in cases:
        with pytest.raises(AppError) as ei:
            synthesize(client, prompt, text, **kw)
        msg = str(ei.value)
        for part in expected:
            assert part in msg, (prompt, text, kw, msg)
    data, sr, _ = synthesize(client, good, "你好，世界。")
    assert len(data) / sr > 0.5
    assert httpx.get(client.src.rstrip("/") + "/healthz").status_code == 200


# --- probes, metrics, examples ------------------------------------------------------------------
def test_probes_and_metrics_of_the_running_app(app, client, shared_prompts):
    synthesize(client, shared_prompts / "cosyvoice__zero_shot_prompt.wav", "你好。")
    assert httpx.get(app.url + "/healthz").json()["status"] == "ok"
    assert httpx.get(app.url + "/readyz").status_code == 200
    metrics = httpx.get(app.url + "/metrics").text
    completed = re.search(r"^cosyweb_jobs_completed_total(?:\{[^}]*\})? ([0-9.e+]+)$", metrics, re.M)
    assert completed and float(completed.group(1)) >= 1, metrics[:2000]
    assert "cosyweb_first_chunk_seconds_bucket" in metrics


def test_shipped_examples_work_out_of_the_box(client):
    rows = example_rows()
    assert rows
    for path, prompt_text, text in rows:
        data, sr, status = synthesize(client, path, text, prompt_text=prompt_text)
        assert len(data) / sr > 1.0 and not status["warnings"]


# --- admission under a burst ---------------------------------------------------------------------
def test_burst_of_six_gives_busy_refusals_and_every_accepted_job_completes(busy_app, shared_prompts):
    prompt = shared_prompts / "cosyvoice__zero_shot_prompt.wav"
    text = "希望你以后能够做的比我还好呦。" * 4  # several seconds of work per job
    clients = [Client(busy_app.url + "/", verbose=False) for _ in range(6)]  # 6 sessions
    barrier = threading.Barrier(6)

    def one(c: Client):
        barrier.wait()
        try:
            data, sr, status = synthesize(c, prompt, text)
            return "ok", len(data) / sr
        except Exception as exc:  # noqa: BLE001 - classify below
            return "error", str(exc)

    with ThreadPoolExecutor(6) as ex:
        results = list(ex.map(one, clients))
    ok = [r for r in results if r[0] == "ok"]
    busy = [r for r in results if r[0] == "error" and BUSY_ZH in r[1] and BUSY_EN in r[1]]
    assert len(ok) + len(busy) == 6, results  # no other kind of failure
    assert busy and ok, results
    assert len(ok) <= 4, results  # 1 running + 1 queued at any time; late arrivals may get in after
    assert all(d > 3.0 for _, d in ok)
    assert httpx.get(busy_app.url + "/healthz").status_code == 200


# --- shutdown and share --------------------------------------------------------------------------
def test_sigterm_lets_the_running_job_finish(tmp_path, shared_prompts):
    proc = AppProcess(tmp_path)
    try:
        proc.wait_ready()
        c = Client(proc.url + "/", verbose=False)
        job = c.submit(prompt_audio=handle_file(str(shared_prompts / "cosyvoice__zero_shot_prompt.wav")),
                       prompt_text="", text="希望你以后能够做的比我还好呦。" * 3, api_name="/synthesize")
        deadline = time.monotonic() + 60
        while "cosyweb_active_jobs 1.0" not in httpx.get(proc.url + "/metrics").text:
            assert time.monotonic() < deadline, "job never started"
            time.sleep(0.05)
        proc.proc.send_signal(signal.SIGTERM)
        wav, status = job.result(timeout=120)
        assert sf.info(wav).duration > 3.0
        assert proc.proc.wait(90) == 0
    finally:
        proc.stop()


def test_share_offline_reports_no_link_and_keeps_serving(tmp_path):
    proc = AppProcess(tmp_path, "--share", "--no-auth")
    try:
        proc.wait_ready()
        deadline = time.monotonic() + 120
        while not re.search(r"Could not create a share link|Public URL", proc.log()):
            assert proc.proc.poll() is None, proc.log()[-2000:]
            assert time.monotonic() < deadline, proc.log()[-2000:]
            time.sleep(0.5)
        assert httpx.get(proc.url + "/readyz").status_code == 200
        assert httpx.get(proc.url + "/").status_code == 200
    finally:
        assert proc.stop() == 0
