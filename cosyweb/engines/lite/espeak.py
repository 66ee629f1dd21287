"""A small ctypes bridge to the libespeak-ng bundled in the ``espeakng-loader`` wheel.

espeak-ng keeps its state in process globals (voice, parameters, wave generator),
so every call goes through one module-level lock, as piper does with
``_ESPEAK_PHONEMIZER_LOCK`` (OHF-Voice/piper1-gpl ``src/piper/voice.py``).

Repeatability. espeak's wave generator keeps state in C statics from one
utterance to the next, and a seed (``espeak_ng_SetRandSeed``) alone does not make
it repeatable. Measured on libespeak-ng 1.52 and traced in its ``wavegen.c``:

* pitch flutter advances a static index: removed by a constant F0
  (``espeak_ng_SetConstF0``); the lite engine makes its own F0 contour anyway;
* "roughness" (creaky amplitude modulation on alternate pitch cycles) depends on
  a static cycle counter that is never reset, so the English word "three"
  alternated between two waveforms from call to call: removed by voices with
  ``roughness 0``. espeak has no API for it, so each voice (a language file plus
  an optional variant, from espeak's own data) is written once per process to a
  temporary voice file with ``roughness 0`` appended and loaded with
  ``espeak_ng_SetVoiceByFile``;
* everything else is reset by re-initialising the library before each utterance
  (``espeak_Terminate`` + ``espeak_Initialize``, 0.3 ms, no memory growth).

With these, the same text, voice, rate and seed give bit-identical samples
whatever was synthesised before. (Loading a fresh copy of the library per
utterance also works but leaks about 2 KB per load.)

C API reference: ``src/include/espeak-ng/speak_lib.h`` and ``espeak_ng.h`` of
espeak-ng/espeak-ng. Only ASCII or UTF-8 text is passed; with
``espeakPHONEMES`` the text may carry inline ``[[...]]`` espeak phonemes.
"""

from __future__ import annotations

import atexit
import ctypes
import shutil
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from cosyweb.errors import EngineError, StartupError

#: espeak_AUDIO_OUTPUT: AUDIO_OUTPUT_SYNCHRONOUS (no sound device, callback gets everything).
_AUDIO_OUTPUT_SYNCHRONOUS = 2
#: espeakINITIALIZE_DONT_EXIT: return an error instead of calling exit() when data is missing.
_INITIALIZE_DONT_EXIT = 0x8000
#: espeak_POSITION_TYPE POS_CHARACTER.
_POS_CHARACTER = 1
#: Synth flags: espeakCHARS_UTF8 | espeakPHONEMES (inline [[...]] phonemes).
_FLAGS_UTF8_PHONEMES = 0x1 | 0x100
#: espeak_PARAMETER id of the speaking rate.
_PARAM_RATE = 1
#: espeak_EVENT_TYPE values we read.
_EVENT_LIST_TERMINATED, _EVENT_WORD = 0, 1

#: espeak-ng rate limits in words per minute (speak_lib.h: espeakRATE_MINIMUM/MAXIMUM).
RATE_MIN_WPM, RATE_MAX_WPM = 80, 450


class _Event(ctypes.Structure):
    """``espeak_EVENT`` from speak_lib.h (40 bytes on 64-bit platforms)."""

    _fields_ = [
        ("type", ctypes.c_int),
        ("unique_identifier", ctypes.c_uint),
        ("text_position", ctypes.c_int),  # 1-based character position in the input text
        ("length", ctypes.c_int),  # word length in characters (WORD events)
        ("audio_position", ctypes.c_int),  # ms from the start of the output
        ("sample", ctypes.c_int),
        ("user_data", ctypes.c_void_p),
        ("id", ctypes.c_char * 8),  # union {int number; const char *name; char string[8]}
    ]


_SynthCallback = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(ctypes.c_short), ctypes.c_int, ctypes.POINTER(_Event))


@dataclass(frozen=True)
class WordEvent:
    """One espeak word event: where a word (a pinyin syllable, an English word) starts.

    Attributes:
        text_pos: 1-based character position in the synthesised text (inside ``[[...]]``
            for injected phonemes).
        length: length of the word in characters.
        time_s: start time of the word in the output, seconds (1 ms resolution).
    """

    text_pos: int
    length: int
    time_s: float


@dataclass
class EspeakAudio:
    """The result of one espeak utterance.

    Attributes:
        samples: float32 mono waveform, shape ``(n_samples,)``, range [-1, 1].
        sample_rate: Hz (22050 for the bundled data).
        words: word events in time order.
    """

    samples: np.ndarray
    sample_rate: int
    words: list[WordEvent] = field(default_factory=list)


class _Library:
    """The loaded libespeak-ng with its ctypes signatures. Use only under :data:`_LOCK`."""

    def __init__(self) -> None:
        try:
            import espeakng_loader
        except ImportError as e:  # pragma: no cover - a declared dependency
            raise StartupError(
                "缺少 espeakng-loader，请运行 pip install espeakng-loader",
                "espeakng-loader is missing: pip install espeakng-loader",
            ) from e
        try:
            self.data_dir = Path(espeakng_loader.get_data_path())
            self.lib = ctypes.CDLL(espeakng_loader.get_library_path())
        except (OSError, RuntimeError) as e:
            raise StartupError(
                f"无法加载 espeak-ng 库：{e}，请重新安装 espeakng-loader",
                f"Cannot load the espeak-ng library: {e}; reinstall espeakng-loader",
            ) from e
        lib = self.lib
        lib.espeak_Initialize.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_char_p, ctypes.c_int]
        lib.espeak_Initialize.restype = ctypes.c_int
        lib.espeak_SetVoiceByName.argtypes = [ctypes.c_char_p]
        lib.espeak_SetVoiceByName.restype = ctypes.c_int
        lib.espeak_ng_SetVoiceByFile.argtypes = [ctypes.c_char_p]
        lib.espeak_ng_SetVoiceByFile.restype = ctypes.c_int
        lib.espeak_SetParameter.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int]
        lib.espeak_SetParameter.restype = ctypes.c_int
        lib.espeak_SetSynthCallback.argtypes = [_SynthCallback]
        lib.espeak_Synth.argtypes = [
            ctypes.c_void_p, ctypes.c_size_t, ctypes.c_uint, ctypes.c_int,
            ctypes.c_uint, ctypes.c_uint, ctypes.c_void_p, ctypes.c_void_p,
        ]
        lib.espeak_Synth.restype = ctypes.c_int
        lib.espeak_ng_SetRandSeed.argtypes = [ctypes.c_long]
        lib.espeak_ng_SetRandSeed.restype = ctypes.c_int
        lib.espeak_ng_SetConstF0.argtypes = [ctypes.c_int]
        lib.espeak_ng_SetConstF0.restype = ctypes.c_int
        lib.espeak_TextToPhonemes.argtypes = [ctypes.POINTER(ctypes.c_char_p), ctypes.c_int, ctypes.c_int]
        lib.espeak_TextToPhonemes.restype = ctypes.c_char_p
        self.sample_rate = 0
        self._voice_dir: Path | None = None
        self._voice_texts: dict[tuple[str, str], str] = {}
        self.initialize()

    def initialize(self) -> None:
        """(Re-)initialise espeak: resets the wave generator and the parameters."""
        if self.sample_rate:
            self.lib.espeak_Terminate()
        rate = self.lib.espeak_Initialize(_AUDIO_OUTPUT_SYNCHRONOUS, 0, str(self.data_dir).encode(),
                                          _INITIALIZE_DONT_EXIT)
        if rate <= 0:
            raise StartupError(
                f"espeak-ng 初始化失败（数据目录 {self.data_dir}）",
                f"espeak-ng failed to initialise (data path {self.data_dir})",
            )
        self.sample_rate = rate
        self.lib.espeak_SetSynthCallback(_CALLBACK)

    def set_voice_by_name(self, voice: str) -> None:
        if self.lib.espeak_SetVoiceByName(voice.encode()) != 0:
            raise EngineError(f"espeak-ng voice not found: {voice}")

    def voice_file(self, language: str, variant: str) -> bytes:
        """Path of a voice file: espeak's language file + variant attributes + ``roughness 0``.

        Written once per process into a private temporary directory (and again if a
        temp cleaner removed it).
        """
        key = (language, variant)
        if key not in self._voice_texts:
            lang_file = next((p for p in (self.data_dir / "lang").rglob("*")
                              if p.is_file() and p.name.lower() == language.lower()), None)
            if lang_file is None:
                raise EngineError(f"espeak-ng voice not found: {language}")
            lines = lang_file.read_text(encoding="utf-8").splitlines()
            if variant:
                var_file = self.data_dir / "voices" / "!v" / variant
                if not var_file.is_file():
                    raise EngineError(f"espeak-ng voice variant not found: {variant}")
                # a variant's own "language variant" / "name" lines would rename the voice
                lines += [ln for ln in var_file.read_text(encoding="utf-8").splitlines()
                          if ln.split()[:1] not in (["language"], ["name"])]
            lines.append("roughness 0")
            self._voice_texts[key] = "\n".join(lines) + "\n"
        # espeak_ng_SetVoiceByFile copies the path into a 60-byte buffer and reads "+" as a
        # variant separator: short names, no "+"
        if self._voice_dir is None or not self._voice_dir.is_dir():
            self._voice_dir = _short_temp_dir()
        path = self._voice_dir / f"v{list(self._voice_texts).index(key)}"
        if not path.is_file():
            path.write_text(self._voice_texts[key], encoding="utf-8")
        return str(path).encode()

    def set_voice(self, language: str, variant: str) -> None:
        if self.lib.espeak_ng_SetVoiceByFile(self.voice_file(language, variant)) != 0:
            raise EngineError(f"espeak-ng could not load the voice {language}+{variant}")


#: espeak_ng_SetVoiceByFile keeps at most this many bytes of a voice file path.
_MAX_VOICE_PATH_BYTES = 59


def _short_temp_dir() -> Path:
    """A private temporary directory whose voice file paths fit espeak's path buffer."""
    for base in (None, "/tmp"):
        d = Path(tempfile.mkdtemp(prefix="cosyweb-espeak-", dir=base))
        if len(str(d / "v99").encode()) <= _MAX_VOICE_PATH_BYTES:
            atexit.register(shutil.rmtree, d, True)
            return d
        shutil.rmtree(d, True)
    raise StartupError(
        "临时目录路径过长，espeak-ng 无法加载语音文件",
        "The temporary directory path is too long for espeak-ng voice files",
    )


#: Buffers filled by the synthesis callback; only touched under :data:`_LOCK`.
_chunks: list[np.ndarray] = []
_words: list[tuple[int, int, int]] = []


def _on_audio(wav, n_samples, events) -> int:
    """``t_espeak_callback``: collect int16 samples and word events; 0 = continue."""
    if n_samples > 0 and wav:
        _chunks.append(np.ctypeslib.as_array(wav, shape=(n_samples,)).copy())
    i = 0
    while events[i].type != _EVENT_LIST_TERMINATED:
        ev = events[i]
        if ev.type == _EVENT_WORD:
            _words.append((ev.text_position, ev.length, ev.audio_position))
        i += 1
    return 0


_CALLBACK = _SynthCallback(_on_audio)  # module-level: ctypes keeps no reference of its own
_LOCK = threading.Lock()
_INSTANCE: _Library | None = None


def _library() -> _Library:
    global _INSTANCE
    if _INSTANCE is None:
        _INSTANCE = _Library()
    return _INSTANCE


def sample_rate() -> int:
    """The output rate of the bundled espeak-ng in Hz (22050).

    Raises:
        cosyweb.errors.StartupError: the library or its data cannot be loaded.
    """
    with _LOCK:
        return _library().sample_rate


def synthesize(
    text: str,
    language: str,
    variant: str = "",
    *,
    rate_wpm: int = 175,
    seed: int = 0,
    const_f0_hz: int = 120,
) -> EspeakAudio:
    """Synthesise one clause with espeak-ng.

    Args:
        text: UTF-8 text; inline ``[[...]]`` espeak phonemes are allowed.
        language: espeak language voice, e.g. ``"cmn-Latn-pinyin"``, ``"yue-Latn-jyutping"``, ``"en-US"``.
        variant: espeak voice variant, e.g. ``"f3"``; ``""`` for the language's own voice.
        rate_wpm: speaking rate, clamped to [80, 450] words per minute.
        seed: seed of espeak's noise generator (breath noise of some variants).
        const_f0_hz: constant F0 for the whole utterance, Hz; 0 keeps espeak's own
            intonation (then the output is not bit-repeatable: pitch flutter has state).

    Returns:
        :class:`EspeakAudio` at :func:`sample_rate` Hz.

    Raises:
        cosyweb.errors.EngineError: unknown voice or variant, or a synthesis error.
        cosyweb.errors.StartupError: the library cannot be loaded.
    """
    data = text.encode("utf-8") + b"\0"
    with _LOCK:
        es = _library()
        es.initialize()
        es.set_voice(language, variant)
        lib = es.lib
        lib.espeak_SetParameter(_PARAM_RATE, int(np.clip(rate_wpm, RATE_MIN_WPM, RATE_MAX_WPM)), 0)
        lib.espeak_ng_SetConstF0(int(const_f0_hz))
        lib.espeak_ng_SetRandSeed(int(seed) & 0x7FFFFFFF)
        _chunks.clear()
        _words.clear()
        try:
            status = lib.espeak_Synth(data, len(data), 0, _POS_CHARACTER, 0, _FLAGS_UTF8_PHONEMES, None, None)
            chunks, words, rate = list(_chunks), list(_words), es.sample_rate
        finally:
            _chunks.clear()
            _words.clear()
    if status != 0:
        raise EngineError(f"espeak_Synth failed with status {status:#x}")
    pcm = np.concatenate(chunks) if chunks else np.zeros(0, np.int16)
    samples = pcm.astype(np.float32) / np.float32(32768.0)
    events = [WordEvent(pos, length, ms / 1000.0) for pos, length, ms in words]
    return EspeakAudio(samples=samples, sample_rate=rate, words=events)


def text_to_phonemes(texts: list[str], voice: str) -> list[str]:
    """espeak's own phoneme transcription (ASCII mnemonics, tone digits included).

    Used to check that a syllable is read natively, not by the English fallback
    (which shows as ``(en)`` in the output). Mode 0 (ASCII) gives correct tone
    digits; the IPA mode prints wrong ones (measured on 1.52).

    Args:
        texts: plain texts (no ``[[...]]``), transcribed one by one with one library load.
        voice: espeak voice name (``espeak_SetVoiceByName``), e.g. ``"cmn-Latn-pinyin"``.

    Returns:
        One transcription per text; clauses joined by ``" | "``.

    Raises:
        cosyweb.errors.EngineError: unknown voice.
    """
    results = []
    with _LOCK:
        es = _library()
        es.initialize()
        es.set_voice_by_name(voice)
        for text in texts:
            buf = ctypes.c_char_p(text.encode("utf-8"))
            ptr = ctypes.pointer(buf)
            out = []
            while ptr.contents.value:
                res = es.lib.espeak_TextToPhonemes(ptr, 1, 0)
                out.append(res.decode("utf-8", "replace") if res else "")
            results.append(" | ".join(out))
    return results
