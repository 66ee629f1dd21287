"""Load-time settings, from (highest first) CLI flags, ``COSYWEB_*`` environment
variables, a YAML config file, then defaults. Built on pydantic-settings.

Per-request options are not here: see :class:`cosyweb.options.SynthesisOptions`.
This module imports nothing of ours.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Literal, Optional

import yaml
from pydantic import Field, field_validator
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict


class Settings(BaseSettings):
    """All load-time settings. Each field is also ``COSYWEB_<FIELD>`` in the environment
    and ``<field>:`` in a YAML config file (``--config FILE`` or ``COSYWEB_CONFIG``).
    """

    model_config = SettingsConfigDict(env_prefix="COSYWEB_", extra="forbid", validate_default=True)

    # --- serving ---------------------------------------------------------------
    host: str = Field("127.0.0.1", description="Interface to bind (0.0.0.0 in Docker).")
    port: int = Field(7860, ge=0, le=65535, description="HTTP port.")
    share: bool = Field(False, description="Ask Gradio for a public share link (requires auth).")
    auth: Optional[str] = Field(None, description="USER:PASS for the web UI and API.")
    no_auth: bool = Field(False, description="Allow --share without --auth (explicit opt-out).")
    ui_language: Literal["zh", "en"] = Field("zh", description="Default UI language.")
    output_dir: Path = Field(Path("outputs"), description="Where finished wav files are written.")
    keep_outputs: int = Field(200, ge=1, description="Finished wav files kept in output_dir (oldest removed).")
    log_level: str = Field("INFO", description="Python logging level.")

    # --- engine ----------------------------------------------------------------
    engine: str = Field("lite", description="Engine id: lite, cosyvoice (CosyVoice3/2), fake.")
    model_dir: Optional[Path] = Field(None, description="Local model directory (CosyVoice engines).")
    cosyvoice_root: Optional[Path] = Field(None, description="Path of a CosyVoice source checkout.")
    device: str = Field("auto", description="auto, cuda, cuda:N, mps or cpu (CosyVoice engines).")
    fp16: Optional[bool] = Field(None, description="Half precision; default: on for CUDA.")
    load_trt: bool = Field(False, description="Pass load_trt to CosyVoice AutoModel.")
    load_vllm: bool = Field(False, description="Pass load_vllm to CosyVoice AutoModel.")
    empty_cache_every: int = Field(20, ge=0, description="Call torch.cuda.empty_cache() every N jobs (0 = never).")
    warmup: bool = Field(True, description="Run a short synthesis at start-up before reporting ready.")

    # --- pipeline / admission ----------------------------------------------------
    concurrency: Optional[int] = Field(None, ge=1, description="Engine calls at once; default: the engine's own.")
    max_active_jobs: Optional[int] = Field(
        None, ge=1, description="Jobs streaming at once; default: 2 x concurrency x max batch (first-chunk priority)."
    )
    max_queue: int = Field(8, ge=0, description="Admitted jobs that may wait for a slot; beyond this: busy.")
    max_queue_audio_s: float = Field(600.0, gt=0, description="Estimated audio seconds that may wait; beyond: busy.")
    per_client_jobs: int = Field(1, ge=1, description="Active jobs per browser session / API key.")
    job_timeout_s: float = Field(300.0, gt=0, description="A job past this deadline is cancelled.")
    max_batch: Optional[int] = Field(None, ge=1, description="Dynamic batch size cap; default: the engine's.")
    batch_wait_ms: float = Field(5.0, ge=0, description="How long the batcher waits to fill a batch.")
    voice_cache_size: int = Field(32, ge=1, description="Prepared voices kept (LRU).")
    prompt_store_size: int = Field(64, ge=1, description="Prompts registered through the HTTP API kept (LRU).")
    watchdog_s: float = Field(120.0, gt=0, description="An engine call longer than this marks the service unhealthy.")
    shutdown_grace_s: float = Field(30.0, ge=0, description="On SIGTERM, running jobs get this long to finish.")
    first_chunk_lane: Optional[int] = Field(
        None, ge=0, description="Workers kept for first segments of new jobs; default: 1 with 2+ workers, else 0."
    )
    priority_max_overtakes: int = Field(
        4, ge=0, description="A later segment waits behind at most this many newer first segments (0 = plain FIFO)."
    )

    # --- inputs ------------------------------------------------------------------
    max_upload_mb: float = Field(20.0, gt=0, description="Largest prompt upload in MiB.")
    max_prompt_s: float = Field(30.0, gt=0, description="Longer prompts are cut to their best stretch of speech.")
    min_speech_s: float = Field(1.0, gt=0, description="Prompts with less speech are rejected.")
    prompt_sample_rate: int = Field(24000, ge=8000, description="Rate prompts are resampled to, Hz.")
    max_text_chars: int = Field(5000, ge=1, description="Longest synthesis text, in characters.")
    first_segment_chars: int = Field(12, ge=2, description="Target length of the first streamed segment, in syllables (1 per Han character).")
    segment_chars: int = Field(60, ge=4, description="Target length of later segments, in syllables (1 per Han character).")

    @field_validator("auth")
    @classmethod
    def _check_auth(cls, v: Optional[str]) -> Optional[str]:
        if v is not None and (":" not in v or not v.split(":", 1)[0] or not v.split(":", 1)[1]):
            raise ValueError("auth must be USER:PASS")
        return v

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        # init (CLI flags) > environment > YAML file > defaults
        return (init_settings, env_settings, _YamlSource(settings_cls))

    def auth_pair(self) -> Optional[tuple[str, str]]:
        """``(user, password)`` or None."""
        if not self.auth:
            return None
        user, pw = self.auth.split(":", 1)
        return user, pw


class _YamlSource(PydanticBaseSettingsSource):
    """Reads the YAML file named by ``COSYWEB_CONFIG`` (set by ``--config``)."""

    def get_field_value(self, field, field_name):  # pragma: no cover - unused API
        return None, field_name, False

    def __call__(self) -> dict[str, Any]:
        path = os.environ.get("COSYWEB_CONFIG")
        if not path:
            return {}
        p = Path(path)
        if not p.is_file():
            raise FileNotFoundError(f"config file not found: {p}")
        data = yaml.safe_load(p.read_text(encoding="utf-8")) or {}
        if not isinstance(data, dict):
            raise ValueError(f"config file {p} must hold a mapping of setting: value")
        return {k.replace("-", "_"): v for k, v in data.items()}


def load_settings(config_file: str | Path | None = None, **overrides: Any) -> Settings:
    """Build :class:`Settings` from a YAML file, the environment and explicit overrides.

    Args:
        config_file: YAML file; None uses ``COSYWEB_CONFIG`` if set.
        **overrides: values that win over everything (CLI flags); None values are ignored.

    Raises:
        FileNotFoundError: the config file does not exist.
        pydantic.ValidationError: a value is out of range or of the wrong type.
    """
    old = os.environ.get("COSYWEB_CONFIG")
    if config_file is not None:
        os.environ["COSYWEB_CONFIG"] = str(config_file)
    try:
        return Settings(**{k: v for k, v in overrides.items() if v is not None})
    finally:
        if config_file is not None:
            if old is None:
                os.environ.pop("COSYWEB_CONFIG", None)
            else:
                os.environ["COSYWEB_CONFIG"] = old
