"""The CosyVoice3 / CosyVoice2 engine: the official ``AutoModel`` behind cosyweb's Engine interface.

Mapping of a request (one :class:`~cosyweb.text.types.TextSegment` at a time; the text
front end has already normalised and split the text):

=====================  ==============================  ==========================================
effective mode         upstream method                 text the LLM sees (v3)
=====================  ==============================  ==========================================
zero-shot              ``inference_zero_shot``         prompt_text = prefix + transcript
cross-lingual          ``inference_cross_lingual``     tts_text = prefix + segment
instruct               ``inference_instruct2``         instruct_text = system + instruction + marker
=====================  ==============================  ==========================================

The mode is *instruct* when the request asks for it, or chooses a dialect, an emotion or a
free-form instruction (they only exist as instructions). In instruct calls speed and volume
become upstream's fast/slow and loud/soft instructions; otherwise speed goes to upstream's
``speed`` (that segment then runs without streaming, as upstream ignores speed when
streaming) and volume is a linear gain. Every call passes ``text_frontend=False``: our
front end already normalised the text, and upstream skips its own for ``<|...|>`` text anyway.

A seed of 0 means "random" and runs concurrently; any other seed is reproducible and runs
alone (see :mod:`cosyweb.engines.cosyvoice.seeding`).
"""

from __future__ import annotations

import dataclasses
import hashlib
import logging
import re
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, Optional

import numpy as np

from cosyweb.audio.types import PromptAudio
from cosyweb.engines.base import Engine, Voice
from cosyweb.errors import EngineError, InvalidInputError, StartupError, UnsupportedOptionError
from cosyweb.options import Mode, SynthesisOptions
from cosyweb.text.types import TextSegment

from . import prompts
from .calls import CallSpec, free_gpu_memory, is_cuda_oom, run_call, translate_error
from .capabilities import capabilities_for
from .device import default_fp16, resolve_device
from .locate import ModelInfo, add_to_sys_path, check_matcha
from .seeding import SeedGate
from .upstream import contained_logging, import_cosyvoice_cli, install_model_guards, preserved_rng
from .voices import PromptFiles, SpeakerCache

log = logging.getLogger(__name__)

#: Token id of ``<|endofprompt|>`` that ``CosyVoice3LM.inference`` hard-codes.
END_OF_PROMPT_ID = 151646
_BRACKET_TOKEN = re.compile(r"\[[^\[\]\s]+\]")


@dataclass(frozen=True)
class CallPlan:
    """One upstream call, decided from a segment and its options.

    Attributes:
        method: ``inference_zero_shot``, ``inference_cross_lingual`` or ``inference_instruct2``.
        kwargs: its text arguments (``tts_text`` and ``prompt_text`` / ``instruct_text``).
        llm_texts: the texts whose tokens the LLM sees (checked for ``<|endofprompt|>`` on v3).
        cache_prompt_text: the ``prompt_text`` given to ``add_zero_shot_spk`` for the speaker cache.
        stream: upstream ``stream``.
        speed: upstream ``speed`` (1.0 when streaming).
        gain: linear output gain.
    """

    method: str
    kwargs: dict
    llm_texts: tuple[str, ...]
    cache_prompt_text: str
    stream: bool
    speed: float
    gain: float


class CosyVoiceEngine(Engine):
    """The official CosyVoice3 (or CosyVoice2) model behind the :class:`Engine` interface.

    Args:
        settings: load-time settings (``model_dir``, ``device``, ``fp16``, ``load_trt``, ``load_vllm``,
            ``empty_cache_every``, ``voice_cache_size``, ``watchdog_s``, ``concurrency``).
        model: the checked model directory (:func:`cosyweb.engines.cosyvoice.locate.check_model_dir`).
        code_root: the CosyVoice checkout to import from, or None if ``cosyvoice`` is importable.
        chunk_timeout_s: longest wait for the next chunk of a call before it is abandoned;
            default ``settings.watchdog_s``.

    Construction is cheap and imports no torch; :meth:`load` does the work.
    """

    def __init__(self, settings: Any, model: ModelInfo, code_root: Optional[Path], chunk_timeout_s: Optional[float] = None) -> None:
        self.settings = settings
        self.model_info = model
        self.version = model.version
        self.code_root = code_root
        # Until load() knows the device: a GPU unless the CPU was asked for (the pipeline reads
        # default_concurrency when it is built, before load()).
        on_gpu = str(getattr(settings, "device", "auto")).strip().lower() != "cpu"
        self.capabilities = capabilities_for(model.version, model.sample_rate_hz, on_gpu=on_gpu)
        self.chunk_timeout_s = float(chunk_timeout_s or getattr(settings, "watchdog_s", 120.0))
        self.device: Optional[str] = None
        self.fp16: Optional[bool] = None
        self.cosyvoice: Any = None  # upstream CosyVoice3 / CosyVoice2 object
        self.n_jobs = 0
        self.n_empty_cache = 0
        self._guards: Any = None
        self._set_seed: Any = None
        self._special_tokens: frozenset[str] = frozenset()
        self._gate = SeedGate()
        self._files = PromptFiles(max_files=2 * int(getattr(settings, "voice_cache_size", 32)))
        self._speakers: Optional[SpeakerCache] = None
        self._lock = threading.Lock()

    # -- lifecycle -------------------------------------------------------------------
    def load(self) -> None:
        """Import torch and CosyVoice, build ``AutoModel`` and install the guards.

        Raises:
            StartupError: torch or a CosyVoice dependency missing; no GPU (``device=auto``);
                the model fails to load (corrupt weights, GPU too small); a tokenizer without
                ``<|endofprompt|>`` at id 151646.
        """
        try:
            import torch  # noqa: PLC0415 - heavy, only here
        except ImportError as exc:
            raise StartupError(
                "CosyVoice 引擎需要 torch：请 pip install -e '.[cosyvoice]'",
                "The CosyVoice engine needs torch: pip install -e '.[cosyvoice]'",
            ) from exc
        device = resolve_device(getattr(self.settings, "device", "auto"), torch)
        fp16 = default_fp16(device, getattr(self.settings, "fp16", None))
        add_to_sys_path(self.code_root)
        check_matcha()
        if device.startswith("cuda"):
            torch.cuda.set_device(int(device.split(":")[1]))
        concurrency = int(getattr(self.settings, "concurrency", None) or (2 if device.startswith("cuda") else 1))
        with preserved_rng(torch):
            cli = import_cosyvoice_cli()
            with contained_logging():
                try:
                    cv = cli.AutoModel(
                        model_dir=str(self.model_info.model_dir),
                        load_trt=bool(getattr(self.settings, "load_trt", False)),
                        load_vllm=bool(getattr(self.settings, "load_vllm", False)),
                        fp16=fp16,
                        trt_concurrent=concurrency,
                    )
                except StartupError:
                    raise
                except Exception as exc:  # noqa: BLE001 - every load failure becomes a fix-it message
                    raise self._load_error(exc) from exc
        kind = type(cv).__name__
        if kind not in ("CosyVoice3", "CosyVoice2"):
            raise StartupError(f"不支持的模型类型：{kind}", f"Unsupported model class {kind}; use Fun-CosyVoice3-0.5B or CosyVoice2-0.5B")
        if device == "mps":
            self._move_to(cv, torch.device("mps"))
        tokenizer = cv.frontend.tokenizer
        if self.version >= 3 and tokenizer.encode(prompts.END_OF_PROMPT) != [END_OF_PROMPT_ID]:
            raise StartupError(
                f"模型的分词器中 <|endofprompt|> 不是 {END_OF_PROMPT_ID}，模型目录可能损坏，请重新下载",
                f"The model's tokenizer does not map <|endofprompt|> to id {END_OF_PROMPT_ID}; the model directory "
                "looks damaged, download it again",
            )
        from cosyvoice.utils.common import set_all_random_seed  # noqa: PLC0415

        self._special_tokens = frozenset(getattr(tokenizer, "special_tokens", {}).get("additional_special_tokens", []))
        self._guards = install_model_guards(cv.model)
        self._set_seed = set_all_random_seed
        self._speakers = SpeakerCache(int(getattr(self.settings, "voice_cache_size", 32)), self._drop_speaker)
        self.cosyvoice, self.device, self.fp16 = cv, device, fp16
        self.capabilities = dataclasses.replace(
            capabilities_for(self.version, int(cv.sample_rate), on_gpu=device.startswith("cuda")),
            default_concurrency=2 if device.startswith("cuda") else 1,
        )
        log.info("CosyVoice%d loaded from %s on %s (fp16=%s)", self.version, self.model_info.model_dir, device, fp16)

    def warmup(self) -> None:
        """One short streaming and one non-streaming synthesis with a synthetic prompt.

        Raises:
            StartupError: the model cannot synthesise (the app must not report ready).
        """
        self._require_loaded()
        sr_hz = 24000
        t = np.arange(int(1.5 * sr_hz)) / sr_hz
        wave = 0.3 * np.sign(np.sin(2 * np.pi * 140.0 * t)) * (0.6 + 0.4 * np.sin(2 * np.pi * 3.0 * t))
        wave = (wave + 0.01 * np.random.default_rng(0).standard_normal(t.size)).astype(np.float32)
        prompt = PromptAudio(samples=wave, sample_rate=sr_hz, original_sample_rate=sr_hz, duration_s=t.size / sr_hz)
        voice = self.prepare_voice(prompt, "你好。")
        seg = TextSegment(index=-1, text="你好。", cosyvoice_text="你好。")
        try:
            for stream in (True, False):
                for _ in self.synthesize(voice, seg, SynthesisOptions(stream=stream)):
                    pass
        except Exception as exc:  # noqa: BLE001
            raise StartupError(f"CosyVoice 预热合成失败：{exc}", f"CosyVoice warm-up synthesis failed: {exc}") from exc

    def close(self) -> None:
        """Drop the model, free GPU memory and remove the prompt files."""
        self.cosyvoice = None
        self._guards = None
        self._files.close()
        free_gpu_memory()

    # -- voices ------------------------------------------------------------------------
    def prepare_voice(self, prompt: PromptAudio, prompt_text: str = "") -> Voice:
        """Write the prompt file and return the voice; speaker features are extracted on first use and cached.

        Returns:
            A :class:`Voice` with ``key = "<prompt fingerprint>:<sha1 of transcript>"``.
        """
        text = _clean_user_text(prompt_text)
        self._files.path_for(prompt)
        key = f"{prompt.fingerprint}:{hashlib.sha1(text.encode('utf-8')).hexdigest()[:12]}"
        return Voice(key=key, prompt=prompt, prompt_text=text)

    def speaker_cache_stats(self) -> dict[str, int]:
        """``{"hits", "misses", "entries"}`` of the speaker-feature cache."""
        sc = self._speakers
        return {"hits": sc.n_hits, "misses": sc.n_misses, "entries": len(sc)} if sc else {"hits": 0, "misses": 0, "entries": 0}

    # -- synthesis ---------------------------------------------------------------------
    def validate_options(self, options: SynthesisOptions) -> None:
        """Base checks, plus: instruct mode needs at least one instruction."""
        super().validate_options(options)
        if options.mode == Mode.INSTRUCT and not self._instructions(options):
            raise InvalidInputError(
                "option.instruction_missing",
                "「自然语言控制」模式需要一个指令：请选择方言、情感、语速或音量，或填写指令文本",
                "Instruct mode needs an instruction: choose a dialect, an emotion, a speed or a volume, or type one",
            )

    def plan(self, voice: Voice, text: str, options: SynthesisOptions) -> CallPlan:
        """Decide the upstream call for one segment's text (pure; no model needed).

        Raises:
            InvalidInputError: zero-shot without a prompt transcript.
        """
        v = self.version
        instructions = self._instructions(options)
        if instructions:
            itext = prompts.instruct_text(instructions, v)
            return CallPlan("inference_instruct2", {"tts_text": text, "instruct_text": itext}, (itext, text), itext,
                            options.stream, 1.0, 1.0)
        stream = options.stream and options.speed == 1.0
        speed = 1.0 if stream else float(options.speed)
        zs_prompt = prompts.zero_shot_prompt_text(voice.prompt_text, v)
        if options.mode == Mode.CROSS_LINGUAL:
            tts = prompts.cross_lingual_text(text, v)
            return CallPlan("inference_cross_lingual", {"tts_text": tts}, (tts,), zs_prompt, stream, speed, options.volume)
        if not voice.prompt_text:
            raise InvalidInputError(
                "prompt.text_required",
                "「3s极速复刻」需要参考音频的文本（prompt text）；不知道文本时请用「跨语种复刻」",
                "Zero-shot cloning needs the prompt transcript; use cross-lingual mode if you do not know it",
            )
        return CallPlan("inference_zero_shot", {"tts_text": text, "prompt_text": zs_prompt}, (zs_prompt, text), zs_prompt,
                        stream, speed, options.volume)

    def synthesize(self, voice: Voice, segment: TextSegment, options: SynthesisOptions) -> Iterator[np.ndarray]:
        """Synthesise one segment, yielding float32 ``(n,)`` chunks at ``capabilities.sample_rate`` as they come.

        Raises:
            UnsupportedOptionError: an annotation token this model does not have (all pinyin on CosyVoice2).
            InvalidInputError: see :meth:`plan` and :meth:`validate_options`.
            GPUMemoryError: CUDA ran out of memory; memory was freed, the engine stays usable.
            EngineError: the call failed or stalled for ``chunk_timeout_s``.
        """
        self._require_loaded()
        self.validate_options(options)
        text = _clean_user_text(segment.cosyvoice_text or segment.text)
        if not text:
            return
        self._check_tokens(text)
        plan = self.plan(voice, text, options)
        self.check_marker(plan)
        if segment.index == 0:
            self._count_job()
        yield from self._execute(voice, plan, options.seed, f"{plan.method}#{segment.index}")

    def check_marker(self, plan: CallPlan) -> None:
        """The hang guard: on CosyVoice3, refuse to call upstream without ``<|endofprompt|>``.

        Raises:
            EngineError: the marker is missing (a bug in cosyweb; upstream would hang when streaming).
        """
        if self.version >= 3 and not prompts.llm_text_has_marker(*plan.llm_texts):
            raise EngineError("internal: CosyVoice3 text without <|endofprompt|> refused (upstream would hang)")

    def _execute(self, voice: Voice, plan: CallPlan, seed: int, label: str) -> Iterator[np.ndarray]:
        cv = self.cosyvoice
        wav = str(self._files.path_for(voice.prompt))
        key = SpeakerCache.key(voice.key, plan.cache_prompt_text)

        def add(spk_id: str) -> None:
            try:
                cv.add_zero_shot_spk(plan.cache_prompt_text, wav, spk_id)
            except Exception as exc:  # noqa: BLE001
                raise translate_error(exc, "add_zero_shot_spk") from exc

        with self._speakers.use(key, add) as spk_id:
            method = getattr(cv, plan.method)
            args = dict(plan.kwargs, prompt_wav=wav, zero_shot_spk_id=spk_id, stream=plan.stream, speed=plan.speed,
                        text_frontend=False)
            spec = CallSpec(start=lambda: method(**args), gate=self._gate.for_seed(int(seed)), seed=int(seed),
                            set_seed=self._set_seed, timeout_s=self.chunk_timeout_s, label=label)
            yield from run_call(spec, self._guards, self.capabilities.sample_rate, gain=plan.gain)

    # -- helpers -----------------------------------------------------------------------
    def _instructions(self, options: SynthesisOptions) -> list[str]:
        wants = (options.mode == Mode.INSTRUCT or options.dialect != "mandarin" or options.emotion != "none"
                 or bool(options.instruct_text.strip()))
        if not wants:
            return []
        return prompts.instructions_for(options.dialect, options.emotion, options.speed, options.volume, options.instruct_text)

    def _check_tokens(self, text: str) -> None:
        for m in _BRACKET_TOKEN.finditer(text):
            tok = m.group(0)
            if tok in self._special_tokens:
                continue
            if self.version < 3:
                raise UnsupportedOptionError(
                    "option.annotation_unsupported",
                    f"当前模型 CosyVoice2 不支持拼音/音素标注（{tok}），请去掉标注或改用 Fun-CosyVoice3-0.5B",
                    f"Pinyin/phoneme annotations such as {tok} are not supported by this model (CosyVoice2); "
                    "remove them or use Fun-CosyVoice3-0.5B",
                    token=tok,
                )
            raise UnsupportedOptionError(
                "option.annotation_unknown",
                f"{tok} 不是 CosyVoice3 的拼音/音素记号",
                f"{tok} is not a CosyVoice3 pinyin/phoneme token",
                token=tok,
            )

    def _count_job(self) -> None:
        every = int(getattr(self.settings, "empty_cache_every", 0) or 0)
        with self._lock:
            self.n_jobs += 1
            due = every > 0 and self.n_jobs % every == 0
        if due and (self.device or "").startswith("cuda"):
            import torch  # noqa: PLC0415

            torch.cuda.empty_cache()
            self.n_empty_cache += 1

    def _drop_speaker(self, spk_id: str) -> None:
        cv = self.cosyvoice
        if cv is not None:
            cv.frontend.spk2info.pop(spk_id, None)

    def _require_loaded(self) -> None:
        if self.cosyvoice is None:
            raise EngineError("the CosyVoice engine is not loaded (call load() first)")

    @staticmethod
    def _move_to(cv: Any, device: Any) -> None:
        """Move upstream's modules to ``device`` (MPS); upstream itself only knows cuda/cpu."""
        cv.model.device = device
        for name in ("llm", "flow", "hift"):
            getattr(cv.model, name).to(device)
        cv.frontend.device = device

    def _load_error(self, exc: BaseException) -> StartupError:
        if is_cuda_oom(exc):
            free_gpu_memory()
            return StartupError(
                "加载模型时 GPU 显存不足：至少需要约 8 GB，请换更大的 GPU 或关闭占用显存的进程",
                "The GPU ran out of memory while loading the model: about 8 GB are needed; use a larger GPU "
                "or stop other processes using it (nvidia-smi)",
            )
        return StartupError(
            f"加载 CosyVoice 模型失败（{self.model_info.model_dir}）：{type(exc).__name__}: {exc}。模型文件可能不完整，请重新下载",
            f"Loading the CosyVoice model from {self.model_info.model_dir} failed: {type(exc).__name__}: {exc}. "
            "The files may be incomplete; download them again",
        )


def _clean_user_text(text: str) -> str:
    """Strip user-typed ``<|endofprompt|>`` markers and a leading system prompt: cosyweb places those itself."""
    t = (text or "").replace(prompts.END_OF_PROMPT, "").strip()
    if t.startswith(prompts.SYSTEM_PROMPT):
        t = t[len(prompts.SYSTEM_PROMPT):].strip()
    return t
