"""The command line: ``python app.py [serve options]`` / ``python -m cosyweb serve|synth ...``.

``serve`` (the default) runs the web app; ``synth`` clones a voice once and writes a wav.
Both go through the same :class:`~cosyweb.pipeline.service.TTSService`, so one scheduler
owns admission for every entry point. Every serve option also comes from a YAML config
(``--config FILE``) and ``COSYWEB_*`` environment variables; precedence is
flags > environment > config file > defaults (:func:`cosyweb.config.load_settings`).

Exit status: 0 success; 2 bad input or bad settings (the bilingual message on stderr);
3 start-up failure (:class:`~cosyweb.errors.StartupError`, e.g. missing CosyVoice code or
weights); 1 any other failure of a job.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any, Optional, Sequence

from cosyweb import __version__
from cosyweb.errors import CosywebError, InvalidInputError, StartupError

EXIT_OK, EXIT_FAILED, EXIT_BAD_INPUT, EXIT_STARTUP = 0, 1, 2, 3

#: argparse dest -> Settings field, for the flags shared by serve and synth.
_ENGINE_FLAGS = ("engine", "model_dir", "cosyvoice_root", "device", "log_level")
_SERVE_FLAGS = ("host", "port", "share", "auth", "no_auth", "max_queue", "concurrency")


def _add_engine_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("engine / 引擎")
    g.add_argument("--config", metavar="FILE", help="YAML config file (also COSYWEB_CONFIG)")
    g.add_argument("--engine", metavar="ID", help="engine id: lite (default), cosyvoice, cosyvoice3, cosyvoice2")
    g.add_argument("--model-dir", metavar="D", help="local model directory (CosyVoice engines)")
    g.add_argument("--cosyvoice-root", metavar="R", help="path of a CosyVoice source checkout")
    g.add_argument("--device", metavar="D", help="auto, cuda, cuda:N, mps or cpu (CosyVoice engines)")
    g.add_argument("--log-level", metavar="L", help="DEBUG, INFO, WARNING, ERROR")


def _add_serve_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("server / 服务")
    g.add_argument("--host", metavar="H", help="interface to bind (default 127.0.0.1; 0.0.0.0 in Docker)")
    g.add_argument("--port", metavar="P", type=int, help="HTTP port (default 7860)")
    g.add_argument("--share", action="store_const", const=True, default=None,
                   help="also open a public Gradio share link (needs --auth or --no-auth)")
    g.add_argument("--auth", metavar="USER:PASS", help="require this login for the UI and API")
    g.add_argument("--no-auth", action="store_const", const=True, default=None,
                   help="allow --share without a login (explicit opt-out)")
    g.add_argument("--max-queue", metavar="N", type=int, help="jobs that may wait for a slot; beyond: busy")
    g.add_argument("--concurrency", metavar="N", type=int, help="engine calls at once")


def build_parser() -> argparse.ArgumentParser:
    """The ``cosyweb`` argument parser with ``serve`` and ``synth`` sub-commands."""
    parser = argparse.ArgumentParser(
        prog="cosyweb",
        description="零样本语音克隆 / zero-shot voice cloning (CosyVoice3 style). "
        "Without a sub-command, `serve` is assumed.",
    )
    parser.add_argument("--version", action="version", version=f"cosyweb {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="{serve,synth}")

    serve = sub.add_parser(
        "serve",
        help="run the web app (default)",
        description="Run the web app (python app.py = python -m cosyweb serve). "
        "One-off synthesis: python -m cosyweb synth --help",
    )
    _add_serve_options(serve)
    _add_engine_options(serve)

    synth = sub.add_parser("synth", help="clone a voice once and write a wav")
    g = synth.add_argument_group("synthesis / 合成")
    g.add_argument("--prompt-audio", required=True, metavar="P", help="prompt recording (wav, flac, mp3, ogg, m4a, webm...)")
    g.add_argument("--prompt-text", default="", metavar="T", help="what the prompt says (optional for lite)")
    g.add_argument("--text", required=True, metavar="X", help="text to speak; annotations like 她[hao4] allowed")
    g.add_argument("--mode", default="zero_shot", metavar="M", help="zero_shot | cross_lingual | instruct (or 3s极速复刻...)")
    g.add_argument("--dialect", default="mandarin", metavar="D", help="mandarin, sichuan, ... or 四川话")
    g.add_argument("--emotion", default="none", metavar="E", help="none, happy, sad, angry or 开心/伤心/生气")
    g.add_argument("--speed", type=float, default=1.0, metavar="S", help="speaking rate factor, 0.5 to 2.0")
    g.add_argument("--volume", type=float, default=1.0, metavar="V", help="loudness factor, 0.25 to 2.0")
    g.add_argument("--seed", type=int, default=0, metavar="N", help="random seed (same seed, same audio)")
    g.add_argument("--instruct-text", default="", metavar="I", help="instruction for instruct mode")
    g.add_argument("--language", default="auto", metavar="L", help="text language: auto (detect), zh, yue, en")
    g.add_argument("--out", required=True, metavar="OUT.wav", help="output wav path")
    _add_engine_options(synth)
    return parser


def parse_args(argv: Optional[Sequence[str]] = None) -> argparse.Namespace:
    """Parse ``argv``; a missing sub-command (``python app.py --port 8000``) means ``serve``."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] not in ("serve", "synth", "--version"):
        argv = ["serve", *argv]
    return build_parser().parse_args(argv)


def settings_from_args(args: argparse.Namespace):
    """Build :class:`~cosyweb.config.Settings` with the flags that were given (flags > env > config).

    Raises:
        FileNotFoundError: ``--config`` names no file.
        pydantic.ValidationError: a value out of range or of the wrong type.
    """
    from cosyweb.config import load_settings

    names = _ENGINE_FLAGS + (_SERVE_FLAGS if args.command == "serve" else ())
    overrides = {n: getattr(args, n, None) for n in names}
    return load_settings(getattr(args, "config", None), **overrides)


def _die(code: int, zh: str, en: str) -> int:
    print(f"错误：{zh}\nerror: {en}", file=sys.stderr)
    return code


def _settings_or_exit(args: argparse.Namespace) -> tuple[Any, int]:
    from pydantic import ValidationError

    try:
        return settings_from_args(args), EXIT_OK
    except FileNotFoundError as exc:
        return None, _die(EXIT_BAD_INPUT, f"找不到配置文件：{exc}", f"config file not found: {exc}")
    except (ValidationError, ValueError) as exc:
        detail = "; ".join(
            f"{'.'.join(str(x) for x in e.get('loc', ()))}: {e.get('msg')}" for e in getattr(exc, "errors", lambda: [])()
        ) or str(exc)
        return None, _die(EXIT_BAD_INPUT, f"设置无效：{detail}", f"invalid settings: {detail}")


def cmd_serve(args: argparse.Namespace) -> int:
    """``serve``: run the web app until SIGTERM / Ctrl+C."""
    settings, rc = _settings_or_exit(args)
    if settings is None:
        return rc
    from cosyweb.server.run import check_share_auth, serve

    try:
        check_share_auth(settings)
    except StartupError as err:
        return _die(EXIT_BAD_INPUT, err.zh, err.en)
    try:
        return serve(settings)
    except StartupError as err:
        return _die(EXIT_STARTUP, err.zh, err.en)


def cmd_synth(args: argparse.Namespace) -> int:
    """``synth``: one job through a private TTSService; writes ``--out`` and prints the JSON status."""
    settings, rc = _settings_or_exit(args)
    if settings is None:
        return rc
    settings = settings.model_copy(update={"warmup": False})  # one job: a warm-up only adds latency
    from cosyweb.audio.encode import write_wav
    from cosyweb.server.run import build_service, configure_logging
    from cosyweb.ui.inputs import build_options, merge_warnings

    configure_logging("WARNING" if settings.log_level.upper() == "INFO" else settings.log_level)
    try:
        options = build_options(
            args.mode, args.dialect, args.emotion, args.speed, args.volume, args.seed, args.instruct_text,
            args.language,
        )
        if not args.text.strip():
            raise InvalidInputError("text.empty", "请输入要合成的文本", "Please enter the text to synthesise")
    except CosywebError as err:
        return _die(EXIT_BAD_INPUT, err.zh, err.en)
    try:
        service = build_service(settings)
    except StartupError as err:
        return _die(EXIT_STARTUP, err.zh, err.en)
    try:
        prompt = service.load_prompt(args.prompt_audio)
        job = service.submit(prompt, args.text, options, prompt_text=args.prompt_text or "")
        audio, status = job.result()
        out = write_wav(args.out, audio, job.sample_rate)
    except InvalidInputError as err:
        return _die(EXIT_BAD_INPUT, err.zh, err.en)
    except CosywebError as err:
        return _die(EXIT_FAILED, err.zh, err.en)
    finally:
        service.shutdown(grace_s=0)
    info = status.to_dict()
    info["warnings"] = merge_warnings([m.to_dict() for m in prompt.warnings], info.get("warnings", []))
    info["out"] = str(out)
    print(json.dumps(info, ensure_ascii=False))
    return EXIT_OK


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Entry point of ``python app.py``, ``python -m cosyweb`` and the ``cosyweb`` script."""
    args = parse_args(argv)
    if args.command == "synth":
        return cmd_synth(args)
    return cmd_serve(args)
