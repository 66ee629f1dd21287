"""The one engine interface. The pipeline talks to engines only through this.

An engine turns (voice, text segment, options) into float32 audio. It never
sees HTTP, Gradio, queues or other users: admission, scheduling, batching,
cancellation and metrics belong to :mod:`cosyweb.pipeline`. This mirrors
LitServe's ``setup / predict`` split (Lightning-AI/LitServe ``api.py``).

Engines declare what they can do in :class:`EngineCapabilities`; the pipeline
and the UI read that and never special-case an engine by name.
"""

from __future__ import annotations

import abc
from dataclasses import dataclass, field
from typing import Any, Iterator, Sequence

import numpy as np

from cosyweb.audio.types import PromptAudio
from cosyweb.errors import UnsupportedOptionError
from cosyweb.options import DIALECTS, EMOTIONS, Mode, SynthesisOptions
from cosyweb.text.types import TextSegment


@dataclass(frozen=True)
class EngineCapabilities:
    """What an engine supports. Read by the pipeline (batching, concurrency) and the UI (what to enable).

    Attributes:
        name: engine id, e.g. ``"lite"``, ``"cosyvoice3"``.
        sample_rate: output sample rate in Hz.
        streaming: True if :meth:`Engine.synthesize` yields several chunks per segment.
        max_batch: the largest list :meth:`Engine.synthesize_batch` accepts; 1 = no batching.
        default_concurrency: engine calls that may run at once (worker threads).
        languages: language ids it can speak (``"zh"``, ``"yue"``, ``"en"``).
        modes: cloning modes it supports.
        dialects: dialect ids (keys of :data:`cosyweb.options.DIALECTS`) it supports;
            ``"mandarin"`` is always included.
        emotions: emotion ids it supports; ``"none"`` is always included.
        speed: True if it honours ``options.speed``.
        speed_when_streaming: True if speed also works with streaming output.
        volume: True if it honours ``options.volume``.
        pinyin_annotations: True if user pinyin annotations change pronunciation.
        arpabet: True if ARPAbet annotations are honoured.
        needs_prompt_text: True if the prompt transcript is required (zero-shot on CosyVoice).
        description_zh, description_en: honest one-line description shown in the UI.
    """

    name: str
    sample_rate: int
    streaming: bool = False
    max_batch: int = 1
    default_concurrency: int = 1
    languages: frozenset[str] = frozenset({"zh"})
    modes: frozenset[Mode] = frozenset({Mode.ZERO_SHOT})
    dialects: frozenset[str] = frozenset({"mandarin"})
    emotions: frozenset[str] = frozenset({"none"})
    speed: bool = False
    speed_when_streaming: bool = False
    volume: bool = False
    pinyin_annotations: bool = False
    arpabet: bool = False
    needs_prompt_text: bool = False
    description_zh: str = ""
    description_en: str = ""

    def to_dict(self) -> dict[str, Any]:
        """JSON-friendly form (sets become sorted lists)."""
        out: dict[str, Any] = {}
        for k, v in self.__dict__.items():
            if isinstance(v, frozenset):
                out[k] = sorted(x.value if isinstance(x, Mode) else x for x in v)
            else:
                out[k] = v
        return out


@dataclass
class Voice:
    """A prepared prompt speaker, cached by the pipeline and reused across requests.

    Attributes:
        key: cache key, ``"<prompt fingerprint>:<hash of prompt text>"``.
        prompt: the conditioned prompt recording.
        prompt_text: the prompt transcript ("" if unknown).
        data: engine-specific state (a voice profile, a speaker embedding, a speaker id).
    """

    key: str
    prompt: PromptAudio
    prompt_text: str = ""
    data: Any = None


@dataclass
class SegmentWork:
    """One unit of engine work: a segment of one request, as handed to a batched call.

    Attributes:
        voice: the prepared voice.
        segment: the text segment.
        options: the request's options.
        job_id: the owning job, for logs.
    """

    voice: Voice
    segment: TextSegment
    options: SynthesisOptions
    job_id: str = ""
    extra: dict = field(default_factory=dict)


class Engine(abc.ABC):
    """Base class of every engine.

    Lifecycle: construct (cheap, no heavy imports) -> :meth:`load` (weights; raises
    :class:`cosyweb.errors.StartupError` with a fix-it message) -> :meth:`warmup` ->
    many :meth:`prepare_voice` / :meth:`synthesize` calls from worker threads -> :meth:`close`.

    Thread safety: :meth:`synthesize` may be called from up to
    ``capabilities.default_concurrency`` threads at once (or the configured
    concurrency). An engine with process-global state must lock internally.
    """

    capabilities: EngineCapabilities

    def load(self) -> None:  # pragma: no cover - trivial default
        """Load models. Default: nothing to load."""

    def warmup(self) -> None:  # pragma: no cover - trivial default
        """Run one short synthesis so the first user request is not slow. Default: nothing."""

    def close(self) -> None:  # pragma: no cover - trivial default
        """Free resources. Default: nothing."""

    @abc.abstractmethod
    def prepare_voice(self, prompt: PromptAudio, prompt_text: str = "") -> Voice:
        """Analyse a prompt once (voice profile / speaker embedding).

        Args:
            prompt: the conditioned prompt.
            prompt_text: its transcript, "" if unknown.

        Returns:
            A :class:`Voice`; the pipeline caches it by ``Voice.key``.

        Raises:
            cosyweb.errors.InvalidInputError: the prompt cannot be used (e.g. no voiced frames).
        """

    @abc.abstractmethod
    def synthesize(self, voice: Voice, segment: TextSegment, options: SynthesisOptions) -> Iterator[np.ndarray]:
        """Synthesise one text segment.

        Args:
            voice: from :meth:`prepare_voice`.
            segment: one sentence-sized segment from the text front end.
            options: per-request options, already validated by :meth:`validate_options`.

        Yields:
            float32 mono chunks, shape ``(n_samples,)``, range [-1, 1], at
            ``capabilities.sample_rate`` Hz. Non-streaming engines yield once.

        Raises:
            cosyweb.errors.EngineError: (or a subclass) the call failed; only this job fails.
        """

    def synthesize_batch(self, items: Sequence[SegmentWork]) -> list[np.ndarray]:
        """Synthesise several segments in one call (dynamic batching).

        Default: one :meth:`synthesize` call per item, concatenated. Engines that really
        batch override this and declare ``capabilities.max_batch > 1``.

        Returns:
            One float32 waveform per item, in order.
        """
        out = []
        for it in items:
            parts = list(self.synthesize(it.voice, it.segment, it.options))
            out.append(np.concatenate(parts) if parts else np.zeros(0, np.float32))
        return out

    def validate_options(self, options: SynthesisOptions) -> None:
        """Refuse options the engine does not support, with a clear bilingual message.

        Raises:
            cosyweb.errors.UnsupportedOptionError: unsupported mode, dialect, emotion, language,
                or speed in streaming mode where the engine cannot do it.
        """
        caps = self.capabilities
        if options.mode not in caps.modes:
            raise UnsupportedOptionError(
                "option.mode_unsupported",
                f"当前引擎（{caps.name}）不支持该模式：{options.mode.value}",
                f"The loaded engine ({caps.name}) does not support mode {options.mode.value}",
            )
        if options.dialect not in caps.dialects:
            zh, en = DIALECTS.get(options.dialect, (options.dialect, options.dialect))
            raise UnsupportedOptionError(
                "option.dialect_unsupported",
                f"当前引擎（{caps.name}）不支持方言「{zh}」，方言需要 CosyVoice3 引擎",
                f"The loaded engine ({caps.name}) does not support the dialect {en}; dialects need the CosyVoice3 engine",
                dialect=options.dialect,
            )
        if options.emotion not in caps.emotions:
            zh, en = EMOTIONS.get(options.emotion, (options.emotion, options.emotion))
            raise UnsupportedOptionError(
                "option.emotion_unsupported",
                f"当前引擎（{caps.name}）不支持情感「{zh}」",
                f"The loaded engine ({caps.name}) does not support the emotion {en}",
            )
        if options.language is not None and options.language not in caps.languages:
            raise UnsupportedOptionError(
                "option.language_unsupported",
                f"当前引擎（{caps.name}）不支持语言：{options.language}",
                f"The loaded engine ({caps.name}) does not support language {options.language}",
            )
        if options.speed != 1.0 and not caps.speed:
            raise UnsupportedOptionError(
                "option.speed_unsupported",
                f"当前引擎（{caps.name}）不支持调节语速",
                f"The loaded engine ({caps.name}) cannot change the speaking rate",
            )
