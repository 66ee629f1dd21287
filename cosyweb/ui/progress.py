"""What a user sees while and after a job runs: queue position, the one-line status, the
prompt report; and a job-event iterator that also ticks while nothing happens."""

from __future__ import annotations

import asyncio
import threading
import time
from collections import OrderedDict
from typing import Any, AsyncIterator, Callable, Optional

from cosyweb.options import SynthesisStatus
from cosyweb.ui.i18n import t


def _fmt_s(x: float, nd: int = 2) -> str:
    return f"{x:.{nd}f}"


def status_line(status: SynthesisStatus, lang: str) -> str:
    """The one-line status of a finished job: queue wait, first chunk, total, audio s, RTF."""
    return t(
        "status_done",
        lang,
        queue_wait_s=_fmt_s(status.queue_wait_ms / 1000.0),
        first_chunk_ms=f"{status.first_chunk_ms:.0f}",
        total_s=_fmt_s(status.total_ms / 1000.0),
        duration_s=_fmt_s(status.duration_s),
        rtf=f"{status.rtf:.3f}",
    )


async def events_with_ticks(job: Any, tick_s: float) -> AsyncIterator[Any]:
    """``job.aevents()``, plus ``None`` every ``tick_s`` seconds while no event arrives.

    The ticks let the caller refresh the queue position and give Gradio a chance to notice a
    disconnected client. A pump task reads the job's events into an asyncio queue so that a
    timed-out wait does not cancel the job's own iterator.
    """
    q: asyncio.Queue = asyncio.Queue()
    done = object()

    async def pump() -> None:
        try:
            async for ev in job.aevents():
                q.put_nowait(ev)
        finally:
            q.put_nowait(done)

    task = asyncio.ensure_future(pump())
    try:
        while True:
            try:
                item = await asyncio.wait_for(q.get(), timeout=tick_s)
            except asyncio.TimeoutError:
                yield None
                continue
            if item is done:
                if task.done() and task.exception() is not None:
                    raise task.exception()
                return
            yield item
    finally:
        if not task.done():
            task.cancel()


#: A status line as a function of the UI language (``"zh"``/``"en"`` -> Markdown).
Render = Callable[[str], str]


class StatusLines:
    """Per session (Gradio ``session_hash``): its UI language and the last status line it was
    shown, kept as a :data:`Render` so that a language switch re-renders it.

    Used by the streaming handler (which reads the session language at every event, so a
    switch during a run is followed) and by the stop / language-switch handlers. Bounded: the
    ``keep`` most recently used sessions are remembered (LRU).

    Args:
        keep: sessions remembered.
    """

    def __init__(self, keep: int = 512) -> None:
        self.keep = max(1, int(keep))
        self._items: "OrderedDict[str, dict]" = OrderedDict()
        self._lock = threading.Lock()

    def _entry(self, session: Optional[str]) -> Optional[dict]:
        if not session:
            return None
        entry = self._items.get(session)
        if entry is None:
            entry = self._items[session] = {"lang": None, "render": None, "kind": None}
            while len(self._items) > self.keep:
                self._items.popitem(last=False)
        self._items.move_to_end(session)
        return entry

    def lang(self, session: Optional[str], default: str) -> str:
        """The session's UI language as last set by :meth:`set_lang` (``default`` if never)."""
        with self._lock:
            entry = self._items.get(session) if session else None
            return (entry or {}).get("lang") or default

    def set_lang(self, session: Optional[str], lang: str) -> None:
        """Record the session's UI language (a language switch)."""
        with self._lock:
            entry = self._entry(session)
            if entry is not None:
                entry["lang"] = lang

    def say(self, session: Optional[str], render: Render, lang: str, kind: str) -> str:
        """Record ``render`` as the session's status line and return it in ``lang``.

        Args:
            kind: ``"progress"`` (queued, generating), ``"done"``, ``"error"`` or ``"cancelled"``.
        """
        with self._lock:
            entry = self._entry(session)
            if entry is not None:
                entry["render"], entry["kind"] = render, kind
        return render(lang)

    def shown(self, session: Optional[str], line: Any) -> tuple[Optional[Render], Optional[str]]:
        """``(render, kind)`` of the session's recorded line when ``line`` (the text on screen) is
        that line in either language; ``(None, None)`` otherwise (e.g. another event wrote it)."""
        with self._lock:
            entry = self._items.get(session) if session else None
            render = (entry or {}).get("render")
            if render is None or not line or str(line) not in (render("zh"), render("en")):
                return None, None
            return render, entry["kind"]


def waited(t0: float, lang: str) -> str:
    """`` (waited N s)`` since monotonic time ``t0``, for the queue-position line."""
    return t("status_waited", lang, s=int(time.monotonic() - t0))


def warnings_suffix(status: SynthesisStatus, lang: str) -> str:
    """The job's warnings as Markdown lines to append to the status line ("" if none)."""
    ws = [w.get(lang) or w.get("en", "") for w in (status.warnings or [])]
    return "".join("\n\n" + t("warning_item", lang, message=w) for w in ws if w)


def prompt_report(prompt: Any, lang: str) -> str:
    """Markdown with a prompt's measurements, any cut, and its warnings."""
    stats = prompt.stats()
    lines = [t("prompt_ok", lang), t("prompt_stats", lang, **stats)]
    if stats.get("trimmed_from_s"):
        start, end = stats["trimmed_from_s"]
        lines.append(t("prompt_trimmed", lang, start=f"{start:.1f}", end=f"{end:.1f}"))
    lines += [t("warning_item", lang, message=w) for w in prompt.warnings.texts(lang)]
    return "\n\n".join(lines)
