"""Event handlers of the web UI and of the Gradio API, talking only to the pipeline.

Every handler receives plain values from Gradio components and returns plain values or
``gr.update``/``gr.skip`` objects, so they can be tested without a browser. Errors from the
pipeline (:class:`cosyweb.errors.CosywebError`) become ``gr.Error`` with the bilingual
message, session language first (:func:`cosyweb.ui.i18n.bilingual`).

Admission is the pipeline's: Gradio's queue is only the transport (events run with
``concurrency_limit=None``). The streaming handler refuses a busy request before its first
yield, so the browser and ``gradio_client`` both get ``系统繁忙，请稍后再试 / System busy,
please try again later`` at once.
"""

from __future__ import annotations

import logging
import os
import random
import threading
import time
from collections import OrderedDict
from pathlib import Path
from typing import Any, AsyncIterator, Optional

import anyio
import gradio as gr
import numpy as np

from cosyweb.audio.encode import to_int16
from cosyweb.errors import CosywebError, InvalidInputError, JobCancelledError, Message
from cosyweb.options import DIALECTS, EMOTIONS, MODE_LABELS, SynthesisOptions
from cosyweb.ui.fastpath import FastPathHandlers
from cosyweb.ui.i18n import bilingual, norm_lang, t
from cosyweb.ui.inputs import SEED_MAX, annotate, both, build_options, merge_warnings, resolve_language
from cosyweb.ui.outputs import OutputStore
from cosyweb.ui.progress import (
    Render,
    StatusLines,
    events_with_ticks,
    prompt_report,
    status_line,
    waited,
    warnings_suffix,
)

log = logging.getLogger("cosyweb.ui")

#: While a job waits or runs without new audio, the status line is re-sent this often
#: (seconds). Gradio only notices a closed tab when a handler yields, then closes the
#: generator (-> job.cancel()), so this bounds how long a gone client holds its slot.
QUEUE_REFRESH_S = 1.0
#: Conditioned prompts kept per process, keyed by upload path + size + mtime.
PROMPT_CACHE_SIZE = 8


#: What a user sees for an unexpected exception (details go to the log, never to the client).
INTERNAL_ERROR = Message("internal", "服务器内部错误，请重试", "Internal server error, please retry")


def _gr_error(err: "CosywebError | Message", lang: str) -> gr.Error:
    """A ``gr.Error`` carrying the bilingual message (session language first)."""
    return gr.Error(bilingual(err, lang), title=t("error_title", lang), print_exception=False)


def _client_id(request: Optional[gr.Request]) -> Optional[str]:
    """The per-client admission key: the Gradio session (one per browser tab / API client)."""
    if request is None:
        return None
    return getattr(request, "session_hash", None) or None


def _path_of(value: Any) -> Optional[str]:
    """A file path from a Gradio file/audio value (str, Path, dict with ``path``, FileData)."""
    if value is None or value == "":
        return None
    if isinstance(value, (str, os.PathLike)):
        return os.fspath(value)
    if isinstance(value, dict):
        return value.get("path") or value.get("name")
    return getattr(value, "path", None)


class UIHandlers(FastPathHandlers):
    """The UI's and API's handlers, bound to one service.

    Args:
        service: a started :class:`cosyweb.pipeline.service.TTSService` (or an object with the
            same interface: ``capabilities``, ``engine_name``, ``ready``, ``healthy``,
            ``load_prompt``, ``register_prompt``, ``analyze_text``, ``polyphones``, ``submit``,
            ``precheck``, ``stats``).
        settings: :class:`cosyweb.config.Settings` (``output_dir``, ``keep_outputs``).
    """

    def __init__(self, service: Any, settings: Any, store: Optional[OutputStore] = None) -> None:
        self.service = service
        self.settings = settings
        self.store = store or OutputStore(settings.output_dir, settings.keep_outputs)
        self._prompts: "OrderedDict[tuple, Any]" = OrderedDict()
        self._prompts_lock = threading.Lock()
        #: Per session: UI language and last status line (re-rendered on a language switch).
        self.lines = StatusLines()

    # --- inputs ------------------------------------------------------------------------
    #: Parse UI/API option values (see :func:`cosyweb.ui.inputs.build_options`).
    build_options = staticmethod(build_options)

    def load_prompt(self, value: Any):
        """Decode and check a prompt upload through the service, with a small LRU cache so
        that the preview and the following generate click decode the file once.

        Raises:
            InvalidInputError: no file, or the service rejects the recording.
        """
        path = _path_of(value)
        if not path:
            raise InvalidInputError("prompt.missing", *both("err_no_prompt"))
        try:
            st = os.stat(path)
            key: tuple = (path, st.st_size, st.st_mtime_ns)
        except OSError:
            key = (path, None, None)
        with self._prompts_lock:
            hit = self._prompts.get(key)
            if hit is not None:
                self._prompts.move_to_end(key)
                return hit
        prompt = self.service.load_prompt(path)
        with self._prompts_lock:
            self._prompts[key] = prompt
            while len(self._prompts) > PROMPT_CACHE_SIZE:
                self._prompts.popitem(last=False)
        return prompt

    async def _admit(self, lang: str, prompt_value: Any, prompt_text: Any, text: Any, options: SynthesisOptions,
                     client_id: Optional[str]):
        """Check inputs, refuse when busy, decode the prompt and submit. Returns the Job.

        Raises:
            gr.Error: any CosywebError (busy, bad input, unsupported option), bilingual.
        """
        try:
            if not _path_of(prompt_value):
                raise InvalidInputError("prompt.missing", *both("err_no_prompt"))
            if not str(text or "").strip():
                raise InvalidInputError("text.empty", *both("err_no_text"))
            self.service.precheck(client_id)  # refuse busy at once, before decoding the prompt
            prompt = await anyio.to_thread.run_sync(self.load_prompt, prompt_value)
            return await anyio.to_thread.run_sync(
                lambda: self.service.submit(
                    prompt, str(text), options, prompt_text=str(prompt_text or "").strip(), client_id=client_id
                )
            )
        except CosywebError as err:
            raise _gr_error(err, lang) from None
        except Exception:
            log.exception("unexpected error while admitting a job")
            raise _gr_error(INTERNAL_ERROR, lang) from None

    # --- prompt preview -------------------------------------------------------------------
    def preview_prompt(self, lang: str, prompt_value: Any) -> tuple[Any, str]:
        """On upload/record: the conditioned (trimmed) prompt and its measurements + warnings.

        Returns:
            ``((sample_rate, int16 samples) or None, markdown)``.
        """
        lang = norm_lang(lang)
        if not _path_of(prompt_value):
            return None, ""
        try:
            prompt = self.load_prompt(prompt_value)
        except CosywebError as err:
            return None, t("prompt_bad", lang, message=err.text(lang))
        except Exception:
            log.exception("prompt preview failed")
            return None, t("prompt_bad", lang, message=INTERNAL_ERROR.text(lang))
        return (prompt.sample_rate, to_int16(prompt.samples)), prompt_report(prompt, lang)

    # --- text -----------------------------------------------------------------------------
    def check_text(self, lang: str, text: Any, language: Any = None) -> str:
        """Inline validation of the synthesis text: segments and estimated length, or the
        specific error (e.g. ``第5个字符处的拼音标注 [hoo4] 无效``)."""
        lang = norm_lang(lang)
        text = str(text or "")
        if not text.strip():
            return ""
        try:
            segments = self.service.analyze_text(text, SynthesisOptions(language=resolve_language(language)))
        except CosywebError as err:
            return t("text_bad", lang, message=err.text(lang))
        except Exception:
            log.exception("text check failed")
            return t("text_bad", lang, message=INTERNAL_ERROR.text(lang))
        est_s = sum(s.estimated_duration_s() for s in segments)
        return t("text_ok", lang, n_segments=len(segments), estimated_s=f"{est_s:.1f}")

    def list_polyphones(self, lang: str, text: Any) -> tuple[Any, Any, list[dict], str]:
        """List the polyphones of ``text`` for the pronunciation helper.

        Returns:
            (polyphone dropdown update, reading dropdown update, state, note markdown). The
            state is a list of ``{"pos", "char", "current", "candidates"}``.
        """
        lang = norm_lang(lang)
        text = str(text or "")
        try:
            found = self.service.polyphones(text) if text.strip() else []
        except CosywebError as err:
            return gr.skip(), gr.skip(), [], t("text_bad", lang, message=err.text(lang))
        except Exception:
            log.exception("polyphone listing failed")
            return gr.skip(), gr.skip(), [], t("text_bad", lang, message=INTERNAL_ERROR.text(lang))
        items = [
            {"pos": p.pos, "char": p.char, "current": p.current, "candidates": list(p.candidates)} for p in found
        ]
        choices = [(t("poly_char_choice", lang, **it), str(it["pos"])) for it in items]
        first = items[0] if items else None
        note = t("poly_found", lang, n=len(items)) if items else t("poly_none", lang)
        return (
            gr.update(choices=choices, value=str(first["pos"]) if first else None),
            gr.update(choices=first["candidates"] if first else [], value=first["current"] if first else None),
            items,
            note,
        )

    @staticmethod
    def pick_polyphone(pos_value: Any, items: list[dict]) -> Any:
        """When a polyphone is chosen: offer its readings (current reading preselected)."""
        for it in items or []:
            if str(it["pos"]) == str(pos_value):
                return gr.update(choices=it["candidates"], value=it["current"])
        return gr.update(choices=[], value=None)

    def insert_annotation(self, lang: str, text: Any, pos_value: Any, reading: Any, items: list[dict]):
        """Replace the chosen character with its bracketed reading (``好`` -> ``[hao4]``) and
        list the remaining polyphones again.

        Returns:
            (text, polyphone dropdown update, reading dropdown update, state, note markdown).
        """
        lang = norm_lang(lang)
        text = str(text or "")
        item = next((it for it in items or [] if str(it["pos"]) == str(pos_value)), None)
        if item is None or not reading:
            return text, gr.skip(), gr.skip(), items, t("poly_pick", lang)
        pos = int(item["pos"])
        if not (1 <= pos <= len(text)) or text[pos - 1] != item["char"]:
            return text, gr.skip(), gr.skip(), items, t("poly_stale", lang)
        if str(reading) not in item["candidates"]:  # readings come from the front end's list
            return text, gr.skip(), gr.skip(), items, t("poly_pick", lang)
        new_text = annotate(text, pos, str(reading))
        poly_dd, reading_dd, new_items, _ = self.list_polyphones(lang, new_text)
        return new_text, poly_dd, reading_dd, new_items, t("poly_inserted", lang, pos=pos, char=item["char"], reading=reading)

    # --- options --------------------------------------------------------------------------
    def check_options(self, lang: str, mode: Any, dialect: Any, emotion: Any) -> str:
        """Inline refusal of a mode/dialect/emotion the engine does not declare ("" if fine).

        Reads ``service.capabilities`` only; ``submit`` refuses the same choices with
        :class:`cosyweb.errors.UnsupportedOptionError`, so nothing is ever silently ignored.
        """
        lang = norm_lang(lang)
        caps = self.service.capabilities
        try:
            opts = self.build_options(mode=mode, dialect=dialect, emotion=emotion)
        except CosywebError as err:
            return t("text_bad", lang, message=bilingual(err, lang))
        problems = []
        if opts.mode not in caps.modes:
            zh, en = MODE_LABELS[opts.mode]
            problems.append((f"当前引擎（{caps.name}）不支持模式「{zh}」", f"The {caps.name} engine does not support the mode {en}"))
        if opts.dialect not in caps.dialects and opts.dialect != "mandarin":
            zh, en = DIALECTS[opts.dialect]
            problems.append((
                f"当前引擎（{caps.name}）不支持方言「{zh}」，方言需要 CosyVoice3 引擎",
                f"The {caps.name} engine does not support the dialect {en}; dialects need the CosyVoice3 engine",
            ))
        if opts.emotion not in caps.emotions and opts.emotion != "none":
            zh, en = EMOTIONS[opts.emotion]
            problems.append((f"当前引擎（{caps.name}）不支持情感「{zh}」", f"The {caps.name} engine does not support the emotion {en}"))
        return "\n\n".join(
            t("text_bad", lang, message=bilingual(Message("option.unsupported", zh, en), lang)) for zh, en in problems
        )

    @staticmethod
    def roll_seed() -> int:
        """A fresh random seed in [0, 2**31 - 1]."""
        return random.randint(0, SEED_MAX)

    # --- status panel -----------------------------------------------------------------------
    def panel(self, lang: str) -> str:
        """Queue depth, active jobs and recent median first-chunk latency (for a gr.Timer)."""
        lang = norm_lang(lang)
        stats = self.service.stats()
        if not stats.get("healthy", True):
            return t("panel_unhealthy", lang)
        if not stats.get("ready", True):
            return t("panel_not_ready", lang)
        median = stats.get("median_first_chunk_ms")
        return t(
            "panel",
            lang,
            queue_depth=stats.get("queue_depth", 0),
            active_jobs=stats.get("active_jobs", 0),
            median_first_chunk=t("ms", lang, value=f"{median:.0f}") if median is not None else t("na", lang),
        )

    # --- synthesis: streaming (UI + api_name="synthesize_stream") ----------------------------
    async def synthesize_stream(
        self,
        lang: str,
        prompt_audio: Any,
        prompt_text: str,
        text: str,
        mode: Any,
        dialect: Any,
        emotion: Any,
        speed: float,
        volume: float,
        seed: Any,
        instruct_text: str,
        language: Any,
        request: gr.Request,
    ) -> AsyncIterator[tuple[Any, Any, str]]:
        """Stream one job: yields ``(audio chunk, wav file, status line)``.

        Audio chunks are ``(sample_rate, int16 ndarray)``: int16, because Gradio re-normalises
        float chunks one by one and the volume would jump. While queued, the status shows the
        queue position, refreshed every :data:`QUEUE_REFRESH_S`. The finished result is written
        to ``settings.output_dir`` and offered as the file output. A closed tab or the stop
        button closes this generator, which cancels the job and frees its slot.

        Raises:
            gr.Error: busy (before the first yield), bad input, unsupported option, job failure.
        """
        lang = norm_lang(lang)
        try:
            options = self.build_options(mode, dialect, emotion, speed, volume, seed, instruct_text, language)
        except CosywebError as err:
            raise _gr_error(err, lang) from None
        sid = _client_id(request)
        job = await self._admit(lang, prompt_audio, prompt_text, text, options, sid)
        self.lines.set_lang(sid, lang)
        finished = False
        parts: list[np.ndarray] = []
        last_status: Optional[Render] = None
        t_submit = time.monotonic()

        def say(render: Render, kind: str = "progress") -> str:
            return self.lines.say(sid, render, lang, kind)

        try:
            async for ev in events_with_ticks(job, QUEUE_REFRESH_S):
                lang = self.lines.lang(sid, lang)  # follows a language switch during the run
                if ev is None or ev.kind == "queued":
                    pos = job.position()
                    if pos:  # still waiting: refresh the position
                        yield gr.skip(), gr.skip(), say(
                            lambda lg, pos=pos: t("status_queued", lg, position=pos) + waited(t_submit, lg))
                    elif ev is None and last_status:  # running: a heartbeat, so a closed tab is noticed
                        yield gr.skip(), gr.skip(), say(last_status)
                    continue
                if ev.kind == "started":
                    last_status = lambda lg: t("status_started", lg)  # noqa: E731
                    yield gr.skip(), None, say(last_status)
                elif ev.kind == "chunk":
                    parts.append(ev.audio)
                    audio_s = sum(len(p) for p in parts) / float(job.sample_rate)
                    last_status = lambda lg, a=f"{audio_s:.1f}": t("status_streaming", lg, audio_s=a)  # noqa: E731
                    yield (job.sample_rate, to_int16(ev.audio)), gr.skip(), say(last_status)
                elif ev.kind == "done":
                    finished = True
                    audio = np.concatenate(parts) if parts else np.zeros(0, np.float32)
                    path = await anyio.to_thread.run_sync(self.store.save, audio, job.sample_rate, job.id)
                    st = ev.status
                    yield gr.skip(), str(path), say(lambda lg: status_line(st, lg) + warnings_suffix(st, lg), "done")
                    return
                elif ev.kind == "error":
                    finished = True
                    err = ev.error
                    if isinstance(err, JobCancelledError):
                        yield gr.skip(), gr.skip(), say(lambda lg: t("status_cancelled", lg), "cancelled")
                        return
                    yield gr.skip(), gr.skip(), say(lambda lg: t("status_error", lg, message=err.text(lg)), "error")
                    raise _gr_error(err, lang)
        finally:
            if not finished:
                job.cancel("client_gone")

    # --- status line: stop button, language switch ------------------------------------------
    def stop_status(self, lang: str, status: Any, request: Optional[gr.Request] = None) -> Any:
        """The stop button's status line (the click also cancels the streaming event).

        ``■ 已停止`` replaces a line of a run in progress; an empty line (the low-latency
        player ran the job and shows its own stop line in ``#cw-player``) and a finished run's
        line are left as they are (``gr.skip()``).
        """
        lang = norm_lang(lang)
        sid = _client_id(request)
        _, kind = self.lines.shown(sid, status)
        if not status or kind in ("done", "error", "cancelled"):
            return gr.skip()
        return self.lines.say(sid, lambda lg: t("status_cancelled", lg), lang, "cancelled")

    def relabel_status(self, lang: str, status: Any, request: Optional[gr.Request] = None) -> str:
        """On a language switch: the status line on screen in the new language ``lang``.

        The session's last line is re-rendered; a line this session's record does not know is
        cleared rather than left in the old language (a run in progress writes its line again
        within :data:`QUEUE_REFRESH_S`, in the new language: the handler reads it per event).
        """
        lang = norm_lang(lang)
        sid = _client_id(request)
        self.lines.set_lang(sid, lang)
        render, _ = self.lines.shown(sid, status)
        return render(lang) if render else ""

    # --- synthesis: whole file (api_name="synthesize") --------------------------------------
    async def synthesize_api(
        self,
        prompt_audio: Any,
        prompt_text: str,
        text: str,
        mode: Any,
        dialect: Any,
        emotion: Any,
        speed: float,
        seed: Any,
        volume: float,
        instruct_text: str,
        language: Any,
        request: gr.Request,
    ) -> tuple[str, dict]:
        """Synthesise a whole text and return ``(wav file path, status dict)``.

        The status dict is :meth:`SynthesisStatus.to_dict` (``duration_s``, ``sample_rate``,
        ``rtf``, ``first_chunk_ms``, ``queue_wait_ms``, ``total_ms``...) with ``warnings``
        (``[{"code", "zh", "en"}]``, prompt warnings included) and ``file``.

        Raises:
            gr.Error: bilingual ``"<zh> / <en>"`` message: busy, bad input, job failure.
        """
        lang = "zh"
        try:
            options = self.build_options(mode, dialect, emotion, speed, volume, seed, instruct_text, language)
        except CosywebError as err:
            raise _gr_error(err, lang) from None
        job = await self._admit(lang, prompt_audio, prompt_text, text, options, _client_id(request))
        finished = False
        try:
            async for ev in job.aevents():
                if ev.kind == "done":
                    finished = True
                    audio = job.audio()
                    path = await anyio.to_thread.run_sync(self.store.save, audio, job.sample_rate, job.id)
                    status = ev.status.to_dict()
                    status["warnings"] = merge_warnings(getattr(job, "warnings", []), status.get("warnings", []))
                    status["file"] = Path(path).name
                    return str(path), status
                if ev.kind == "error":
                    finished = True
                    raise _gr_error(ev.error, lang)
            raise gr.Error("job ended without a result")  # pragma: no cover - the pipeline always ends a job
        finally:
            if not finished:
                job.cancel("client_gone")


__all__ = ["UIHandlers", "prompt_report", "status_line"]
