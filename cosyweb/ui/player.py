"""The page side of the low-latency player: the ``<head>`` HTML that loads
``static/player.js`` with its configuration, and the ids of the components it uses.

The player itself is two scripts: ``static/pcm_out.js`` (gapless scheduling of AudioBuffers
on one AudioContext, fades, underrun recovery, wav assembly) and ``static/player.js`` (taking
the click, fetch + ReadableStream -> PCM16 -> Float32, timeline, messages). It talks to the HTTP API
(``POST /api/v1/tts/stream``, :mod:`cosyweb.server.api`), so its jobs go through the same
:class:`~cosyweb.pipeline.service.TTSService` admission, busy refusal, cancellation and
metrics as the Gradio events. Gradio's streaming ``gr.Audio`` stays the fallback: the
player only takes a 生成 click when its checkbox is ticked, the browser has AudioContext and
fetch streaming, and the uploaded prompt has been registered (its ``prompt_id`` is in the
hidden ``#cw-prompt-id`` textbox).
"""

from __future__ import annotations

import json
from pathlib import Path

from cosyweb.ui.i18n import STRINGS

#: The player scripts, shipped as package data (``cosyweb/ui/static/*``), in load order.
STATIC_DIR = Path(__file__).resolve().parent / "static"
PCM_OUT_JS_PATH = STATIC_DIR / "pcm_out.js"
PLAYER_JS_PATH = STATIC_DIR / "player.js"
#: Where the HTTP API is mounted (see :func:`cosyweb.server.app.build_app`).
API_BASE = "/api/v1"
#: DOM ids the script relies on (``elem_id`` of the components in :mod:`cosyweb.ui.blocks`).
ELEM_IDS = {
    "generate": "cw-generate",
    "stop": "cw-stop",
    "use_player": "cw-use-player",
    "prompt_id": "cw-prompt-id",
    "player_go": "cw-player-go",
    "panel": "cw-player",
}
#: The JavaScript of the hidden ``#cw-player-go`` button's JS-only click event: it hands the
#: inputs' current values (component ids, not labels) to the player.
RUN_JS = "(...args) => (window.cosywebPlayer ? window.cosywebPlayer.run(args) : [])"
#: The JavaScript of the JS-only event on a change of the text or the prompt: the player drops its
#: error line, and the Gradio status line (its only input and output) is cleared when it is one.
STALE_JS = ("(status, text, promptId) => (window.cosywebPlayer ? "
            "window.cosywebPlayer.inputsChanged(status, text, promptId) : status)")


def player_strings() -> dict[str, list[str]]:
    """The player's UI strings, ``{key without the "player_" prefix: [zh, en]}``."""
    return {k[len("player_"):]: [zh, en] for k, (zh, en) in STRINGS.items() if k.startswith("player_")}


def _script_json(obj: object) -> str:
    """JSON that is safe inside an inline ``<script>`` (no ``</script>`` or ``<!--``)."""
    return json.dumps(obj, ensure_ascii=False).replace("<", "\\u003c")


def player_head(sample_rate: int, api_base: str = API_BASE) -> str:
    """HTML for ``gr.mount_gradio_app(head=...)``: the player's config and its two scripts.

    The scripts are inlined (about 20 KB), so they work under any root path and need no
    extra route.

    Args:
        sample_rate: the engine's output rate, Hz: the AudioContext is created at this rate
            so that buffers are not resampled one by one (each response also says its rate).
        api_base: URL path of the HTTP API.

    Raises:
        OSError: a script is missing from the installation.
    """
    config = {"apiBase": api_base, "sampleRate": int(sample_rate), "strings": player_strings()}
    scripts = "".join(f"<script>\n{p.read_text(encoding='utf-8')}\n</script>\n" for p in (PCM_OUT_JS_PATH, PLAYER_JS_PATH))
    return f"<script>window.cosywebPlayerConfig = {_script_json(config)};</script>\n{scripts}"
