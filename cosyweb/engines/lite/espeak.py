"""A small ctypes bridge to the libespeak-ng bundled in the ``espeakng-loader`` wheel.

espeak-ng keeps its state in process globals (voice, parameters, wave generator),
so every call goes through one module-level lock, as piper does with
``_ESPEAK_PHONEMIZER_LOCK`` (OHF-Voice/piper1-gpl ``src/piper/voice.py``).

Repeatability: espeak's wave generator keeps state in C statics from one
utterance to the next (pitch flutter, harmonic-spectrum switch, gain control)
and draws noise from its own generator. Measured on libespeak-ng 1.52: a seed
(``espeak_ng_SetRandSeed``) plus re-initialisation is not enough. Each utterance
therefore gets a freshly loaded library (``dlopen``/``dlclose``, about 0.5 ms),
the seed and a constant F0 (``espeak_ng_SetConstF0``): the same text, voice,
rate and seed then give bit-identical samples. The lite engine generates its own
F0 contour, so espeak's intonation is not needed.

C API reference: ``src/include/espeak-ng/speak_lib.h`` and ``espeak_ng.h`` of
espeak-ng/espeak-ng. Only ASCII or UTF-8 text is passed; with
``espeakPHONEMES`` the text may carry inline ``[[...]]`` espeak phonemes.
"""

from __future__ import annotations

import _ctypes
import ctypes
import threading
from dataclasses import dataclass, field

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
    """One freshly loaded copy of libespeak-ng. Use only under :data:`_LOCK`, then :meth:`close`.

    espeak-ng keeps wave-generator state in C statics that neither
    ``espeak_Terminate`` nor ``espeak_Initialize`` reset (e.g. the harmonic
    spectrum switch and the automatic gain control inside ``Wavegen``). Measured
    on 1.52: with re-initialisation and a seed alone, the word "three" still
    alternates between two waveforms from call to call. Loading the library
    afresh for each utterance (``dlopen`` + ``dlclose``, about 0.5 ms) gives every
    utterance the same initial state, hence bit-identical audio.
    """

    def __init__(self) -> None:
        try:
            import espeakng_loader
        except ImportError as e:  # pragma: no cover - a declared dependency
            raise StartupError(
                "缺少 espeakng-loader，请运行 pip install espeakng-loader",
                "espeakng-loader is missing: pip install espeakng-loader",
            ) from e
        self.data_path = espeakng_loader.get_data_path().encode()
        self.lib = ctypes.CDLL(espeakng_loader.get_library_path(), mode=ctypes.RTLD_LOCAL)
        lib = self.lib
        lib.espeak_Initialize.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_char_p, ctypes.c_int]
        lib.espeak_Initialize.restype = ctypes.c_int
        lib.espeak_SetVoiceByName.argtypes = [ctypes.c_char_p]
        lib.espeak_SetVoiceByName.restype = ctypes.c_int
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
        self.sample_rate = lib.espeak_Initialize(_AUDIO_OUTPUT_SYNCHRONOUS, 0, self.data_path, _INITIALIZE_DONT_EXIT)
        if self.sample_rate <= 0:
            self.close(terminate=False)
            raise StartupError(
                f"espeak-ng 初始化失败（数据目录 {self.data_path.decode()}）",
                f"espeak-ng failed to initialise (data path {self.data_path.decode()})",
            )
        lib.espeak_SetSynthCallback(_CALLBACK)

    def set_voice(self, voice: str) -> None:
        if self.lib.espeak_SetVoiceByName(voice.encode()) != 0:
            raise EngineError(f"espeak-ng voice not found: {voice}")

    def close(self, terminate: bool = True) -> None:
        """Terminate espeak and unload this copy of the library."""
        if terminate:
            self.lib.espeak_Terminate()
        _ctypes.dlclose(self.lib._handle)


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
#: espeak's rate as reported by espeak_Initialize (22050 Hz for the bundled data).
_SAMPLE_RATE_HZ: int | None = None


def sample_rate() -> int:
    """The output rate of the bundled espeak-ng in Hz (22050).

    Raises:
        cosyweb.errors.StartupError: the library or its data cannot be loaded.
    """
    global _SAMPLE_RATE_HZ
    with _LOCK:
        if _SAMPLE_RATE_HZ is None:
            lib = _Library()
            _SAMPLE_RATE_HZ = lib.sample_rate
            lib.close()
        return _SAMPLE_RATE_HZ


def synthesize(
    text: str,
    voice: str,
    *,
    rate_wpm: int = 175,
    seed: int = 0,
    const_f0_hz: int = 120,
) -> EspeakAudio:
    """Synthesise one clause with espeak-ng.

    Args:
        text: UTF-8 text; inline ``[[...]]`` espeak phonemes are allowed.
        voice: espeak voice name, optionally with a variant (``"cmn-Latn-pinyin+f2"``).
        rate_wpm: speaking rate, clamped to [80, 450] words per minute.
        seed: seed of espeak's noise generator (same seed and inputs -> same samples).
        const_f0_hz: constant F0 for the whole utterance, Hz; 0 keeps espeak's own
            intonation (then the output is not bit-repeatable: pitch flutter has state).

    Returns:
        :class:`EspeakAudio` at :func:`sample_rate` Hz.

    Raises:
        cosyweb.errors.EngineError: unknown voice or a synthesis error.
        cosyweb.errors.StartupError: the library cannot be loaded.
    """
    global _SAMPLE_RATE_HZ
    data = text.encode("utf-8") + b"\0"
    with _LOCK:
        lib = _Library()
        try:
            _SAMPLE_RATE_HZ = rate = lib.sample_rate
            lib.set_voice(voice)
            lib.lib.espeak_SetParameter(_PARAM_RATE, int(np.clip(rate_wpm, RATE_MIN_WPM, RATE_MAX_WPM)), 0)
            lib.lib.espeak_ng_SetConstF0(int(const_f0_hz))
            lib.lib.espeak_ng_SetRandSeed(int(seed) & 0x7FFFFFFF)
            _chunks.clear()
            _words.clear()
            status = lib.lib.espeak_Synth(data, len(data), 0, _POS_CHARACTER, 0, _FLAGS_UTF8_PHONEMES, None, None)
            chunks, words = list(_chunks), list(_words)
            _chunks.clear()
            _words.clear()
        finally:
            lib.close()
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
        voice: espeak voice name.

    Returns:
        One transcription per text; clauses joined by ``" | "``.

    Raises:
        cosyweb.errors.EngineError: unknown voice.
    """
    results = []
    with _LOCK:
        lib = _Library()
        try:
            lib.set_voice(voice)
            for text in texts:
                buf = ctypes.c_char_p(text.encode("utf-8"))
                ptr = ctypes.pointer(buf)
                out = []
                while ptr.contents.value:
                    res = lib.lib.espeak_TextToPhonemes(ptr, 1, 0)
                    out.append(res.decode("utf-8", "replace") if res else "")
                results.append(" | ".join(out))
        finally:
            lib.close()
    return results
