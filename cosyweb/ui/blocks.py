"""The Gradio Blocks layout of the web UI and its event wiring.

Layout first, handlers elsewhere (:mod:`cosyweb.ui.handlers`). The UI reads what the loaded
engine can do from ``service.capabilities`` and never special-cases an engine by name.

Gradio is only the transport: every event runs with ``concurrency_limit=None`` and the
Blocks queue has no size limit, so Gradio never queues or refuses; admission, the wait
queue, busy refusals and cancellation belong to the pipeline. The streaming event's
``validator=`` answers busy and missing inputs before Gradio queues it (see
:mod:`cosyweb.ui.fastpath`).

The low-latency player (:mod:`cosyweb.ui.player`, ``static/player.js``) lives beside the
Gradio output: an upload is registered with the service (hidden ``#cw-prompt-id``) so its
voice profile is computed ahead; with the "low-latency player" box ticked, the script takes
the 生成 click and streams PCM from ``/api/v1/tts/stream``; otherwise the click goes to the
streaming ``gr.Audio`` (the fallback). While the player is ticked, the fallback's output boxes
are hidden (``style.css``) unless the last run went to Gradio's path; the status line
(``#cw-status``) is re-rendered on a language switch (:meth:`UIHandlers.relabel_status`), left
alone by Stop when the player ran the job, and an error line goes when the text or prompt changes.

Public API endpoints (``gradio_client``):

- ``/synthesize_stream``: the UI's streaming event; inputs ``lang, prompt_audio, prompt_text,
  text, mode, dialect, emotion, speed, volume, seed, instruct_text, language``; outputs the
  streamed audio, the wav file and the status line.
- ``/synthesize``: non-streaming; inputs ``prompt_audio`` (any audio file), ``prompt_text``,
  ``text``, ``mode``, ``dialect``, ``emotion``, ``speed``, ``seed``, ``volume``,
  ``instruct_text``, ``language`` (ids or zh/en labels; ``language`` ``auto``/``zh``/``yue``/``en``);
  outputs a wav file and a JSON status.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

import gradio as gr

from cosyweb.options import SPEED_MAX, SPEED_MIN, VOLUME_MAX, VOLUME_MIN, Mode
from cosyweb.ui import i18n
from cosyweb.ui.handlers import UIHandlers
from cosyweb.ui.i18n import t
from cosyweb.ui.player import ELEM_IDS, RUN_JS, STALE_JS

#: Shipped example prompts (synthetic voices made for this project; see assets/README.md):
#: (file under assets/, prompt text, synthesis text).
EXAMPLES: list[tuple[str, str, str]] = [
    ("examples/zh_prompt.wav", "今天天气很好，我们一起去公园散步吧。", "她[h][ào]干净，今天是2026年11月30日。"),
    ("examples/en_prompt.wav", "The quick brown fox jumps over the lazy dog.", "Hello! This voice was cloned from a short prompt."),
    ("examples/zh_prompt.wav", "今天天气很好，我们一起去公园散步吧。", "银行的行长走在行人中间，觉得很好玩。"),
]
#: The project's assets/ directory (examples), next to the package.
ASSETS_DIR = Path(__file__).resolve().parents[2] / "assets"
CSS_PATH = Path(__file__).resolve().parent / "style.css"
PANEL_REFRESH_S = 2.0


def _engine_md(caps: Any, lang: str) -> str:
    desc = caps.description_en if lang == "en" else caps.description_zh
    return t("engine_heading", lang, name=caps.name, description=desc or caps.name)


def _prompt_text_info(caps: Any, lang: str) -> str:
    return t("prompt_text_info_required" if caps.needs_prompt_text else "prompt_text_info_optional", lang)


def example_rows() -> list[list[str]]:
    """The :data:`EXAMPLES` whose audio exists, as ``[path, prompt text, text]`` rows."""
    rows = []
    for rel, prompt_text, text in EXAMPLES:
        p = ASSETS_DIR / rel
        if p.is_file():
            rows.append([str(p), prompt_text, text])
    return rows


def build_blocks(service: Any, settings: Any, handlers: UIHandlers | None = None) -> gr.Blocks:
    """Build the UI for one service.

    Args:
        service: the started pipeline service (see :class:`UIHandlers` for what is used).
        settings: :class:`cosyweb.config.Settings` (``ui_language``, ``output_dir``...).
        handlers: optional pre-built handlers (tests).

    Returns:
        The ``gr.Blocks`` with its queue configured (no Gradio-side limits); mount it with
        :func:`cosyweb.server.app.build_app`.
    """
    h = handlers or UIHandlers(service, settings)
    caps = service.capabilities
    lang0 = i18n.norm_lang(getattr(settings, "ui_language", "zh"))
    modes = [m for m in Mode if m in caps.modes] or [Mode.ZERO_SHOT]
    mode0 = Mode.ZERO_SHOT.value if Mode.ZERO_SHOT in modes else modes[0].value

    with gr.Blocks(title="CosyWeb", analytics_enabled=False, delete_cache=(3600, 3600)) as demo:
        with gr.Row(equal_height=True):
            title_md = gr.Markdown(t("title", lang0) + "\n\n" + t("subtitle", lang0), elem_id="cw-title")
            lang = gr.Radio(i18n.language_choices(), value=lang0, label=t("language", lang0), scale=0,
                            min_width=200, elem_id="cw-lang")
        engine_md = gr.Markdown(_engine_md(caps, lang0), elem_id="cw-engine")
        panel_md = gr.Markdown(h.panel(lang0), elem_id="cw-panel")

        with gr.Row():
            with gr.Column(scale=1):
                prompt_audio = gr.Audio(sources=["upload", "microphone"], type="filepath",
                                        label=t("prompt_audio", lang0), elem_id="cw-prompt-audio")
                prompt_preview = gr.Audio(label=t("prompt_preview", lang0), interactive=False,
                                          elem_id="cw-prompt-preview")
                prompt_info = gr.Markdown(elem_id="cw-prompt-info")
                # The registered prompt's id, for the low-latency player (in the DOM, not shown).
                prompt_id = gr.Textbox("", visible="hidden", elem_id=ELEM_IDS["prompt_id"])
                prompt_text = gr.Textbox(label=t("prompt_text", lang0), info=_prompt_text_info(caps, lang0),
                                         placeholder=t("prompt_text_placeholder", lang0), lines=2,
                                         elem_id="cw-prompt-text")
            with gr.Column(scale=1):
                text = gr.Textbox(label=t("text", lang0), info=t("text_info", lang0),
                                  placeholder=t("text_placeholder", lang0), lines=4, elem_id="cw-text")
                text_check = gr.Markdown(elem_id="cw-text-check")
                with gr.Accordion(t("poly_accordion", lang0), open=False, elem_id="cw-poly") as poly_acc:
                    poly_state = gr.State([])
                    poly_btn = gr.Button(t("poly_list", lang0), size="sm", elem_id="cw-poly-list")
                    with gr.Row():
                        poly_dd = gr.Dropdown([], label=t("poly_char", lang0), elem_id="cw-poly-char")
                        reading_dd = gr.Dropdown([], label=t("poly_reading", lang0), elem_id="cw-poly-reading")
                    insert_btn = gr.Button(t("poly_insert", lang0), size="sm", elem_id="cw-poly-insert")
                    poly_note = gr.Markdown(elem_id="cw-poly-note")
                with gr.Accordion(t("options_accordion", lang0), open=True, elem_id="cw-options") as opts_acc:
                    mode = gr.Radio(i18n.mode_choices(modes, lang0), value=mode0, label=t("mode", lang0),
                                    info=i18n.missing_modes_info(caps.modes, lang0) or None, elem_id="cw-mode")
                    instruct_text = gr.Textbox("", label=t("instruct_text", lang0), placeholder=t("instruct_placeholder", lang0),
                                               visible=mode0 == Mode.INSTRUCT.value, elem_id="cw-instruct")
                    with gr.Row():
                        dialect = gr.Dropdown(i18n.dialect_choices(caps.dialects, lang0), value="mandarin",
                                              label=t("dialect", lang0), info=t("dialect_info", lang0), elem_id="cw-dialect")
                        emotion = gr.Dropdown(i18n.emotion_choices(caps.emotions, lang0), value="none",
                                              label=t("emotion", lang0), elem_id="cw-emotion")
                        text_language = gr.Dropdown(i18n.text_language_choices(caps.languages, lang0), value="auto",
                                                    label=t("text_language", lang0), elem_id="cw-text-language")
                    with gr.Row():
                        speed = gr.Slider(SPEED_MIN, SPEED_MAX, value=1.0, step=0.05, label=t("speed", lang0),
                                          info=None if caps.speed else t("speed_info_off", lang0),
                                          interactive=bool(caps.speed), elem_id="cw-speed")
                        volume = gr.Slider(VOLUME_MIN, VOLUME_MAX, value=1.0, step=0.05, label=t("volume", lang0),
                                           info=None if caps.volume else t("volume_info_off", lang0),
                                           interactive=bool(caps.volume), elem_id="cw-volume")
                    with gr.Row(equal_height=True):
                        seed = gr.Number(value=0, precision=0, minimum=0, label=t("seed", lang0), elem_id="cw-seed")
                        dice = gr.Button(t("dice", lang0), scale=0, min_width=100, elem_id="cw-dice")
                    option_check = gr.Markdown(elem_id="cw-option-check")

        with gr.Row():
            gen_btn = gr.Button(t("generate", lang0), variant="primary", elem_id="cw-generate")
            stop_btn = gr.Button(t("stop", lang0), variant="stop", elem_id="cw-stop")
        use_player = gr.Checkbox(True, label=t("player_use", lang0), info=t("player_use_info", lang0), interactive=True,
                                 elem_id=ELEM_IDS["use_player"])
        player_go = gr.Button("player", visible="hidden", elem_id=ELEM_IDS["player_go"])
        gr.HTML("", elem_id=ELEM_IDS["panel"])  # the player writes its status and download link here
        status_md = gr.Markdown(label="status", elem_id="cw-status")
        out_stream = gr.Audio(label=t("out_stream", lang0), streaming=True, autoplay=True, interactive=False,
                              elem_id="cw-out-stream")
        out_file = gr.File(label=t("out_file", lang0), interactive=False, height=90, elem_id="cw-out-file")

        rows = example_rows()
        examples = (
            gr.Examples(rows, inputs=[prompt_audio, prompt_text, text], label=t("examples", lang0),
                        examples_per_page=6, elem_id="cw-examples")
            if rows else None
        )

        # --- API-only inputs/outputs of /synthesize (never shown) ---------------------------------
        with gr.Column(visible=False):
            api_prompt = gr.File(label="prompt_audio", type="filepath")
            api_prompt_text = gr.Textbox(label="prompt_text", value="")
            api_text = gr.Textbox(label="text", value="")
            api_mode = gr.Textbox(label="mode", value=Mode.ZERO_SHOT.value)
            api_dialect = gr.Textbox(label="dialect", value="mandarin")
            api_emotion = gr.Textbox(label="emotion", value="none")
            api_speed = gr.Number(label="speed", value=1.0)
            api_seed = gr.Number(label="seed", value=0, precision=0)
            api_volume = gr.Number(label="volume", value=1.0)
            api_instruct = gr.Textbox(label="instruct_text", value="")
            api_language = gr.Textbox(label="language", value="auto")
            api_file = gr.File(label="wav")
            api_status = gr.JSON(label="status")
            api_btn = gr.Button("synthesize")

        # --- events ------------------------------------------------------------------------------
        quiet = dict(show_progress="hidden", api_visibility="private", concurrency_limit=None)
        # A new upload first clears the old prompt id (in the browser, at once), then is previewed
        # and registered: the service prepares its voice profile in the background.
        prompt_audio.change(None, None, prompt_id, js="() => ''", **quiet)
        prompt_audio.change(h.preview_prompt, [lang, prompt_audio], [prompt_preview, prompt_info], **quiet).then(
            h.register_prompt, [prompt_audio, prompt_text], prompt_id, **quiet)
        prompt_text.blur(h.register_prompt, [prompt_audio, prompt_text], prompt_id, **quiet)
        gr.on([text.change, text_language.change], h.check_text, [lang, text, text_language], text_check,
              trigger_mode="always_last", **quiet)
        poly_btn.click(h.list_polyphones, [lang, text], [poly_dd, reading_dd, poly_state, poly_note], **quiet)
        poly_dd.change(h.pick_polyphone, [poly_dd, poly_state], reading_dd, **quiet)
        insert_btn.click(h.insert_annotation, [lang, text, poly_dd, reading_dd, poly_state],
                         [text, poly_dd, reading_dd, poly_state, poly_note], **quiet)
        gr.on([mode.change, dialect.change, emotion.change], h.check_options, [lang, mode, dialect, emotion],
              option_check, **quiet)
        mode.change(lambda m: gr.update(visible=m == Mode.INSTRUCT.value), mode, instruct_text, **quiet)
        dice.click(h.roll_seed, None, seed, **quiet)

        # With the player ticked (and a registered prompt), player.js takes the click before Gradio
        # sees it and clicks the hidden player_go instead, whose JS-only event hands it the values.
        player_go.click(None, [lang, prompt_id, prompt_text, text, mode, dialect, emotion, speed, volume, seed,
                               instruct_text, text_language], None, js=RUN_JS, **quiet)
        # The player shows its run in #cw-player: a previous Gradio run's status line goes.
        player_go.click(None, None, status_md, js="() => ''", **quiet)
        # A previous run's error line is stale once the text or the prompt changes (the player
        # clears its own line too; the live text check already shows the new state).
        gr.on([text.change, prompt_audio.change, prompt_text.change, prompt_id.change], None,
              [status_md, text, prompt_id], status_md, js=STALE_JS, **quiet)
        gen = gen_btn.click(
            h.synthesize_stream,
            [lang, prompt_audio, prompt_text, text, mode, dialect, emotion, speed, volume, seed, instruct_text,
             text_language],
            [out_stream, out_file, status_md],
            api_name="synthesize_stream",
            concurrency_limit=None,
            show_progress="minimal",
            validator=h.validate_stream,  # queue=False: busy / missing inputs answered before queueing
        )
        stop_btn.click(h.stop_status, [lang, status_md], status_md, cancels=[gen], **quiet)

        api_btn.click(
            h.synthesize_api,
            [api_prompt, api_prompt_text, api_text, api_mode, api_dialect, api_emotion, api_speed, api_seed,
             api_volume, api_instruct, api_language],
            [api_file, api_status],
            api_name="synthesize",
            concurrency_limit=None,
        )

        timer = gr.Timer(PANEL_REFRESH_S)
        timer.tick(h.panel, lang, panel_md, **quiet)

        # --- language switch: every label, info, placeholder and choice list ------------------------
        relabels: list[tuple[Any, Callable[[str], Any]]] = [
            (title_md, lambda lg: gr.update(value=t("title", lg) + "\n\n" + t("subtitle", lg))),
            (lang, lambda lg: gr.update(label=t("language", lg))),
            (engine_md, lambda lg: gr.update(value=_engine_md(caps, lg))),
            (prompt_audio, lambda lg: gr.update(label=t("prompt_audio", lg))),
            (prompt_preview, lambda lg: gr.update(label=t("prompt_preview", lg))),
            (prompt_text, lambda lg: gr.update(label=t("prompt_text", lg), info=_prompt_text_info(caps, lg),
                                               placeholder=t("prompt_text_placeholder", lg))),
            (text, lambda lg: gr.update(label=t("text", lg), info=t("text_info", lg),
                                        placeholder=t("text_placeholder", lg))),
            (poly_acc, lambda lg: gr.update(label=t("poly_accordion", lg))),
            (poly_btn, lambda lg: gr.update(value=t("poly_list", lg))),
            (poly_dd, lambda lg: gr.update(label=t("poly_char", lg))),
            (reading_dd, lambda lg: gr.update(label=t("poly_reading", lg))),
            (insert_btn, lambda lg: gr.update(value=t("poly_insert", lg))),
            (opts_acc, lambda lg: gr.update(label=t("options_accordion", lg))),
            (mode, lambda lg: gr.update(label=t("mode", lg), choices=i18n.mode_choices(modes, lg),
                                        info=i18n.missing_modes_info(caps.modes, lg) or None)),
            (instruct_text, lambda lg: gr.update(label=t("instruct_text", lg), placeholder=t("instruct_placeholder", lg))),
            (dialect, lambda lg: gr.update(label=t("dialect", lg), info=t("dialect_info", lg),
                                           choices=i18n.dialect_choices(caps.dialects, lg))),
            (emotion, lambda lg: gr.update(label=t("emotion", lg), choices=i18n.emotion_choices(caps.emotions, lg))),
            (text_language, lambda lg: gr.update(label=t("text_language", lg),
                                                 choices=i18n.text_language_choices(caps.languages, lg))),
            (speed, lambda lg: gr.update(label=t("speed", lg), info=None if caps.speed else t("speed_info_off", lg))),
            (volume, lambda lg: gr.update(label=t("volume", lg), info=None if caps.volume else t("volume_info_off", lg))),
            (seed, lambda lg: gr.update(label=t("seed", lg))),
            (dice, lambda lg: gr.update(value=t("dice", lg))),
            (gen_btn, lambda lg: gr.update(value=t("generate", lg))),
            (use_player, lambda lg: gr.update(label=t("player_use", lg), info=t("player_use_info", lg))),
            (stop_btn, lambda lg: gr.update(value=t("stop", lg))),
            (out_stream, lambda lg: gr.update(label=t("out_stream", lg))),
            (out_file, lambda lg: gr.update(label=t("out_file", lg))),
        ]
        if examples is not None:
            relabels.append((examples.dataset, lambda lg: gr.update(
                label=t("examples", lg), headers=[t("prompt_audio", lg), t("prompt_text", lg), t("text", lg)])))

        def relabel(lg: str) -> list[Any]:
            """Updates for every component in the session language ``lg``."""
            lg = i18n.norm_lang(lg)
            return [fn(lg) for _, fn in relabels]

        relabel_targets = [c for c, _ in relabels]
        (
            lang.change(relabel, lang, relabel_targets, **quiet)
            .then(h.check_text, [lang, text, text_language], text_check, **quiet)
            .then(h.check_options, [lang, mode, dialect, emotion], option_check, **quiet)
            .then(h.panel, lang, panel_md, **quiet)
        )
        lang.change(h.preview_prompt, [lang, prompt_audio], [prompt_preview, prompt_info], **quiet)
        lang.change(h.relabel_status, [lang, status_md], status_md, **quiet)

    demo.queue(default_concurrency_limit=None, max_size=None)
    return demo


def css() -> str:
    """The UI's stylesheet (``style.css`` beside this module)."""
    return CSS_PATH.read_text(encoding="utf-8") if CSS_PATH.is_file() else ""
