"""Handlers that keep the 生成 click fast: registering the uploaded prompt (so the
low-latency player finds its voice profile already computed) and the streaming event's
``validator=`` (busy refusal and missing inputs answered before Gradio queues the event).

Mixed into :class:`cosyweb.ui.handlers.UIHandlers`; they use its ``service``,
``load_prompt`` and the module helpers there.
"""

from __future__ import annotations

import logging
import threading
from typing import Any, Optional

import gradio as gr

from cosyweb.errors import BusyError, CosywebError
from cosyweb.pipeline.prompts import PromptNotFoundError
from cosyweb.ui.i18n import bilingual, message, norm_lang, t

log = logging.getLogger("cosyweb.ui")

#: Registrations remembered per handlers object (upload + prompt text -> prompt_id), so that a
#: prompt-text box that loses focus without a change does not register the prompt again.
REGISTERED_KEPT = 64


def _from_page(request: Optional[gr.Request]) -> bool:
    """True for requests of the web page itself (Gradio's frontend marks them ``x-gradio-user: app``)."""
    headers = getattr(request, "headers", None) if request is not None else None
    try:
        return headers is not None and str(headers.get("x-gradio-user", "")).lower() == "app"
    except Exception:  # an unusual Request object: treat it as an API call
        return False


class FastPathHandlers:
    """Mixin: ``register_prompt`` and ``validate_stream`` (needs ``self.service``,
    ``self.load_prompt``)."""

    service: Any

    def register_prompt(self, prompt_audio: Any, prompt_text: Any) -> str:
        """Register the uploaded prompt with the service and return its ``prompt_id``.

        The service prepares the voice profile in the background right away (a low-priority
        worker item), so the player's first request finds it computed. Called after the
        preview on upload (the decoded prompt comes from the handlers' LRU) and again when the
        prompt text changes (the voice depends on it).

        Returns:
            The id (32 hex characters), or ``""`` when nothing is uploaded or the recording is
            rejected (the preview already shows why). The same upload with the same text gives
            the same id while the service still holds it.
        """
        from cosyweb.ui.handlers import _path_of  # same package; avoids an import cycle

        path = _path_of(prompt_audio)
        if not path:
            return ""
        text = str(prompt_text or "").strip()
        memo, lock = self._registrations()
        with lock:
            known = memo.get((path, text))
        if known:
            try:
                self.service.get_prompt(known)
                return known
            except PromptNotFoundError:  # evicted from the service's store: register again
                pass
        try:
            prompt = self.load_prompt(prompt_audio)
            prompt_id = str(self.service.register_prompt(prompt, text))
        except CosywebError:
            return ""
        except Exception:
            log.exception("prompt registration failed")
            return ""
        with lock:
            memo[(path, text)] = prompt_id
            while len(memo) > REGISTERED_KEPT:
                memo.pop(next(iter(memo)))
        return prompt_id

    def _registrations(self) -> tuple[dict, threading.Lock]:
        memo = self.__dict__.get("_registered")
        if memo is None:
            memo = self.__dict__.setdefault("_registered", ({}, threading.Lock()))
        return memo

    def validate_stream(
        self,
        lang: str,
        prompt_audio: Any,
        prompt_text: Any,
        text: Any,
        mode: Any,
        dialect: Any,
        emotion: Any,
        speed: Any,
        volume: Any,
        seed: Any,
        instruct_text: Any,
        language: Any,
        request: Optional[gr.Request] = None,
    ) -> list[dict]:
        """The ``validator=`` of the streaming 生成 event (Gradio runs it with ``queue=False``
        inside the ``/queue/join`` request, before the event is queued).

        A missing prompt or text is marked on its component; a busy service is refused at
        once with ``系统繁忙，请稍后再试 / System busy, please try again later`` (a toast).
        This is only an early answer: admission stays authoritative in the handler
        (:meth:`UIHandlers.synthesize_stream` submits, and may still be refused).

        Only the page's own requests (Gradio's frontend sends ``x-gradio-user: app``) are
        checked here: ``gradio_client`` turns a refused ``/queue/join`` into a bare HTTP 400, so
        API callers get the handler's ``gr.Error`` with its message instead.

        Returns:
            One ``gr.validate`` per input (12).

        Raises:
            gr.Error: busy or per-client limit (bilingual, session language first).
        """
        from cosyweb.ui.handlers import _client_id, _path_of

        lang = norm_lang(lang)
        ok = gr.validate(True, "")
        checks = [ok] * 12
        if not _from_page(request):
            return checks
        problems = False
        if not _path_of(prompt_audio):
            checks[1] = gr.validate(False, bilingual(message("err_no_prompt"), lang))
            problems = True
        if not str(text or "").strip():
            checks[3] = gr.validate(False, bilingual(message("err_no_text"), lang))
            problems = True
        if problems:
            return checks
        try:
            self.service.precheck(_client_id(request))
        except BusyError as err:
            raise gr.Error(bilingual(err, lang), title=t("error_title", lang), print_exception=False) from None
        return checks
