"""Request side of the HTTP API: the synthesis inputs (JSON or multipart), the per-client
identity used by admission control, and the optional login check.

Inputs (``POST /api/v1/tts``, ``/api/v1/tts/stream``), as a JSON object or as form fields
(``multipart/form-data``, needed to upload a prompt file in the same request):

============== ======================================================================
field          meaning
============== ======================================================================
prompt_id      a prompt registered with ``POST /api/v1/prompts`` (or upload instead:)
prompt_audio   the prompt recording, a file field (multipart only)
prompt_text    the prompt's transcript (optional for the lite engine)
text           the text to speak (annotations such as ``她[hao4]`` allowed) — required
mode           zero_shot | cross_lingual | instruct (or 3s极速复刻 / 跨语种复刻 / 自然语言控制)
dialect        mandarin, sichuan, ... or 四川话 ...
emotion        none, happy, sad, angry or 开心 / 伤心 / 生气
speed          speaking rate factor, 0.5 to 2.0
volume         loudness factor, 0.25 to 2.0
seed           0 to 2**31-1; the same inputs and seed give the same audio
instruct_text  instruction for instruct mode (CosyVoice engines)
language       auto (default), zh, yue, en
format         streaming only: ``pcm`` (default) or ``wav``; also a query parameter
============== ======================================================================

Unknown fields are refused (422), so a misspelt option is never silently ignored.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import secrets
from dataclasses import dataclass, fields
from typing import Any, Optional

from fastapi import Request
from starlette.datastructures import UploadFile

from cosyweb.errors import CosywebError, InvalidInputError
from cosyweb.options import SynthesisOptions
from cosyweb.ui.inputs import both, build_options

#: Cookie that identifies a browser for the per-client limit when no API key is sent.
CLIENT_COOKIE = "cosyweb_client"
#: Header that carries an API key (its hash is the client id).
API_KEY_HEADER = "x-api-key"
#: Streaming formats.
FORMATS = ("pcm", "wav")
#: Multipart overhead allowed on top of the prompt size limit, bytes.
_FORM_OVERHEAD_BYTES = 256 * 1024
#: Path prefix of the HTTP API (its request bodies are limited by :func:`api_body_limit_bytes`).
API_PREFIX = "/api/"


def max_upload_bytes(settings: Any) -> int:
    """The largest prompt upload, bytes (``settings.max_upload_mb`` MiB)."""
    return int(float(settings.max_upload_mb) * 1024 * 1024)


def api_body_limit_bytes(settings: Any) -> int:
    """The largest request body of the HTTP API, bytes: :func:`max_upload_bytes` plus multipart
    overhead. Enforced on ``Content-Length`` and while reading
    (:class:`cosyweb.server.body_limit.BodyLimitMiddleware`)."""
    return max_upload_bytes(settings) + _FORM_OVERHEAD_BYTES


class AuthRequiredError(CosywebError):
    """The app runs with ``--auth`` and the request carried no valid login (HTTP 401)."""

    http_status = 401

    def __init__(self) -> None:
        super().__init__(
            "auth.required",
            "需要登录：请使用 HTTP Basic 认证（--auth 设置的用户名和密码）或先在网页登录",
            "Login required: use HTTP Basic auth (the --auth USER:PASS) or log in to the web page first",
        )


class PayloadTooLargeError(InvalidInputError):
    """The request body exceeds the upload limit (HTTP 413)."""

    http_status = 413

    def __init__(self, n_bytes: int, max_bytes: int) -> None:
        mib, max_mib = n_bytes / 2**20, max_bytes / 2**20
        super().__init__(
            "request.too_large",
            f"上传内容过大（{mib:.1f} MB），上限为 {max_mib:.0f} MB",
            f"Upload too large ({mib:.1f} MB); the limit is {max_mib:.0f} MB",
            n_bytes=n_bytes,
            max_bytes=max_bytes,
        )


def _bad_request(code: str, zh: str, en: str, **details: Any) -> InvalidInputError:
    return InvalidInputError(code, zh, en, **details)


@dataclass
class TtsInputs:
    """The parsed fields of one synthesis request (strings as sent; see the module table)."""

    prompt_id: str = ""
    prompt_audio: Optional[bytes] = None
    prompt_text: str = ""
    text: str = ""
    mode: Any = None
    dialect: Any = None
    emotion: Any = None
    speed: Any = 1.0
    volume: Any = 1.0
    seed: Any = 0
    instruct_text: Any = ""
    language: Any = None
    format: str = "pcm"

    def options(self) -> SynthesisOptions:
        """The :class:`SynthesisOptions` of these fields.

        Raises:
            InvalidInputError: an unknown mode/dialect/emotion/language or a number out of range.
        """
        return build_options(self.mode, self.dialect, self.emotion, self.speed, self.volume, self.seed,
                             self.instruct_text, self.language)

    def check(self) -> None:
        """Refuse a request without text or prompt, or with an unknown format.

        Raises:
            InvalidInputError: with a bilingual message naming the field.
        """
        if not self.text.strip():
            raise InvalidInputError("text.empty", *both("err_no_text"))
        if not self.prompt_id and self.prompt_audio is None:  # b"": the loader says "the file is empty"
            raise InvalidInputError("prompt.missing", *both("err_no_prompt"))
        if self.format not in FORMATS:
            raise _bad_request("request.format", f"未知的音频格式「{self.format}」，可选 pcm、wav",
                               f"Unknown format '{self.format}'; use pcm or wav", field="format")


_FIELDS = {f.name for f in fields(TtsInputs)}
_STR_FIELDS = {"prompt_id", "prompt_text", "text", "format"}


def _assign(inputs: TtsInputs, name: str, value: Any) -> None:
    if name not in _FIELDS or name == "prompt_audio":
        raise _bad_request("request.unknown_field", f"未知字段「{name}」", f"Unknown field '{name}'", field=name)
    if name in _STR_FIELDS:
        if value is None:
            value = ""
        if not isinstance(value, str):
            raise _bad_request("request.field_type", f"字段「{name}」必须是字符串", f"Field '{name}' must be a string",
                               field=name)
        value = value.strip() if name in ("prompt_id", "format") else value
    setattr(inputs, name, value)


def check_content_length(request: Request, max_bytes: int) -> None:
    """Refuse at once a body announced larger than ``max_bytes`` plus form overhead.

    Raises:
        PayloadTooLargeError: ``Content-Length`` over the limit.
    """
    try:
        n = int(request.headers.get("content-length") or 0)
    except ValueError:
        n = 0
    if n > max_bytes + _FORM_OVERHEAD_BYTES:
        raise PayloadTooLargeError(n, max_bytes)


async def read_upload(value: Any, max_bytes: int) -> bytes:
    """The bytes of a multipart file field, at most ``max_bytes`` + 1 (the prompt loader
    refuses anything over ``max_bytes`` with its own bilingual message).

    Raises:
        InvalidInputError: the field is not a file.
    """
    if not isinstance(value, UploadFile):
        raise _bad_request("request.field_type", "字段「prompt_audio」必须是上传的文件",
                           "Field 'prompt_audio' must be an uploaded file", field="prompt_audio")
    return await value.read(max_bytes + 1)


async def read_tts_inputs(request: Request, max_upload_bytes: int) -> TtsInputs:
    """Parse a JSON or form body into :class:`TtsInputs` (``format`` may also be a query parameter).

    Raises:
        InvalidInputError: malformed JSON, an unknown field, a field of the wrong type, or an
            unsupported content type (all 422); PayloadTooLargeError (413).
    """
    check_content_length(request, max_upload_bytes)
    inputs = TtsInputs()
    ctype = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if ctype in ("application/json", ""):
        raw = await request.body()
        try:
            data = json.loads(raw or b"{}")
        except (ValueError, UnicodeDecodeError) as exc:
            raise _bad_request("request.json", f"请求体不是有效的 JSON：{exc}", f"The body is not valid JSON: {exc}")
        if not isinstance(data, dict):
            raise _bad_request("request.json", "请求体必须是 JSON 对象", "The body must be a JSON object")
        for name, value in data.items():
            _assign(inputs, str(name), value)
    elif ctype in ("multipart/form-data", "application/x-www-form-urlencoded"):
        async with request.form(max_files=1, max_fields=32) as form:
            for name, value in form.multi_items():
                if name == "prompt_audio":
                    inputs.prompt_audio = await read_upload(value, max_upload_bytes) if value != "" else None
                elif isinstance(value, UploadFile):
                    raise _bad_request("request.field_type", f"字段「{name}」不能是文件", f"Field '{name}' cannot be a file",
                                       field=name)
                else:
                    _assign(inputs, name, value)
    else:
        raise _bad_request("request.content_type", f"不支持的请求类型「{ctype}」，请用 JSON 或 multipart/form-data",
                           f"Unsupported content type '{ctype}'; send JSON or multipart/form-data")
    if "format" in request.query_params:
        _assign(inputs, "format", request.query_params["format"])
    inputs.format = (inputs.format or "pcm").lower()
    return inputs


# --- who is asking --------------------------------------------------------------------------
def api_key_client_id(key: str) -> str:
    """The client id of an API key: ``"key:" + sha256(key)[:16]`` (the key itself is not kept)."""
    return "key:" + hashlib.sha256(key.strip().encode("utf-8")).hexdigest()[:16]


def client_identity(request: Request) -> tuple[str, Optional[str]]:
    """The per-client admission key of a request, and a new cookie value to set (or None).

    In order: an ``X-API-Key`` header (``"key:" + sha256(key)[:16]``; the key itself is
    never kept), the ``cosyweb_client`` cookie (``"session:<value>"``, one per browser), or
    the client address (``"ip:<host>"``; behind a reverse proxy on this host uvicorn reports
    the forwarded address). A request without the cookie is given one, so a browser's next
    requests count per session; the current request still counts per address. Ids are not
    authentication: a client that sends a new key per request only meets the global limits.
    """
    key = request.headers.get(API_KEY_HEADER, "").strip()
    if key:
        return api_key_client_id(key), None
    cookie = request.cookies.get(CLIENT_COOKIE, "").strip()
    if cookie and len(cookie) <= 64:
        return "session:" + cookie, None
    host = request.client.host if request.client is not None else "unknown"
    return "ip:" + host, secrets.token_urlsafe(16)


def _mounted_gradio_app(request: Request) -> Any:
    for route in getattr(request.app, "routes", []):
        sub = getattr(route, "app", None)
        if sub is not None and hasattr(sub, "tokens") and hasattr(sub, "cookie_id"):
            return sub
    return None


def require_login(request: Request) -> None:
    """FastAPI dependency: with ``settings.auth`` set, accept HTTP Basic credentials equal to
    it, or the login cookie of the mounted Gradio UI (so the page's own player works).

    Raises:
        AuthRequiredError: neither is present and valid (HTTP 401).
    """
    settings = request.app.state.settings
    pair = settings.auth_pair() if hasattr(settings, "auth_pair") else None
    if not pair:
        return
    header = request.headers.get("authorization", "")
    if header[:6].lower() == "basic ":
        try:
            user, _, password = base64.b64decode(header[6:].strip()).decode("utf-8").partition(":")
        except (binascii.Error, UnicodeDecodeError):
            user, password = "", ""
        ok_user = secrets.compare_digest(user.encode(), pair[0].encode())
        ok_pass = secrets.compare_digest(password.encode(), pair[1].encode())
        if ok_user and ok_pass:
            return
    gradio_app = _mounted_gradio_app(request)
    if gradio_app is not None:
        cid = gradio_app.cookie_id
        token = request.cookies.get(f"access-token-{cid}") or request.cookies.get(f"access-token-unsecure-{cid}")
        if token and token in gradio_app.tokens:
            return
    raise AuthRequiredError()
