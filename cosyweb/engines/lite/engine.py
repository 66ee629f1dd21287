"""The embedded CPU engine: espeak-ng speech adapted toward the prompt speaker with WORLD.

Per segment: :mod:`render` (espeak-ng at a constant F0, timed syllables) ->
:mod:`adapt` analysis -> :mod:`durations` (phrase-final lengthening) ->
:mod:`prosody` F0 from tone targets -> envelope
conversion (warp, mean mel-cepstrum EQ, k-NN frame replacement) -> WORLD
resynthesis -> loudness. One chunk per segment; the pipeline streams segment by
segment. Output rate: 22050 Hz, espeak-ng's native rate, so nothing is resampled
on the way (the prompt is resampled once, when its profile is built).
"""

from __future__ import annotations

import hashlib
import logging
from contextlib import nullcontext
from typing import Iterator

import numpy as np

from cosyweb.audio.types import PromptAudio
from cosyweb.engines.base import Engine, EngineCapabilities, Voice
from cosyweb.engines.lite import adapt, cpu_share, durations, profile, prosody, render
from cosyweb.errors import CosywebError, EngineError, StartupError
from cosyweb.options import Mode, SynthesisOptions
from cosyweb.text.types import TextSegment, Token, TokenKind

log = logging.getLogger(__name__)

#: Output sample rate, Hz.
SAMPLE_RATE_HZ = profile.ANALYSIS_RATE_HZ
#: Bumped when the profile recipe changes, so cached voices are not reused across versions.
PROFILE_VERSION = "lite2"
#: The speaking-rate factor taken from the prompt is kept in this range.
PROMPT_RATE_MIN, PROMPT_RATE_MAX = 0.75, 1.35

CAPABILITIES = EngineCapabilities(
    name="lite",
    sample_rate=SAMPLE_RATE_HZ,
    streaming=False,
    max_batch=1,
    default_concurrency=2,  # two worker threads: one is kept for first segments (first-chunk lane)
    languages=frozenset({"zh", "yue", "en"}),
    modes=frozenset({Mode.ZERO_SHOT, Mode.CROSS_LINGUAL, Mode.INSTRUCT}),
    dialects=frozenset({"mandarin"}),
    emotions=frozenset({"none", "happy", "sad", "angry"}),
    speed=True,
    speed_when_streaming=True,
    volume=True,
    pinyin_annotations=True,
    arpabet=True,
    needs_prompt_text=False,
    description_zh=(
        "内置轻量引擎：基于 espeak-ng 合成并用 WORLD 向提示音色近似调整，音色与自然度只是近似，"
        "适合预览、CI 和无 GPU 的机器；录音棚级音质请使用 CosyVoice3 引擎。"
    ),
    description_en=(
        "Built-in lite engine: espeak-ng speech moved toward the prompt voice with WORLD. The voice is an "
        "approximation, meant for previews, CI and machines without a GPU; studio quality needs the "
        "CosyVoice3 engine."
    ),
)


class LiteEngine(Engine):
    """espeak-ng + WORLD voice adaptation; CPU only, no downloads.

    Thread safety: espeak-ng calls are serialised by a module lock (its state is
    process-global) and WORLD synthesis by another; everything else is per call.
    Instruct mode renders only emotion, speed and volume (``instruct_text`` is not read).
    """

    capabilities = CAPABILITIES

    def load(self) -> None:
        """Load libespeak-ng and check that it runs at the expected rate.

        Raises:
            cosyweb.errors.StartupError: the library or its data cannot be loaded.
        """
        from cosyweb.engines.lite import espeak

        rate = espeak.sample_rate()
        if rate != SAMPLE_RATE_HZ:
            raise StartupError(
                f"espeak-ng 的采样率为 {rate} Hz，应为 {SAMPLE_RATE_HZ} Hz，请重新安装 espeakng-loader",
                f"espeak-ng runs at {rate} Hz, expected {SAMPLE_RATE_HZ} Hz; reinstall espeakng-loader",
            )

    def warmup(self) -> None:
        """Build the mel-cepstrum matrices and both espeak references, then synthesise one short phrase."""
        for variant, const_f0 in profile.VARIANTS.values():
            profile.espeak_reference(variant, const_f0)
        rng = np.random.default_rng(0)
        t = np.arange(int(1.5 * SAMPLE_RATE_HZ)) / SAMPLE_RATE_HZ
        tone = 0.3 * np.sin(2 * np.pi * 150 * t) * (1 + 0.5 * np.sin(2 * np.pi * 4 * t)) + 0.01 * rng.normal(size=len(t))
        prompt = PromptAudio(samples=tone.astype(np.float32), sample_rate=SAMPLE_RATE_HZ,
                             original_sample_rate=SAMPLE_RATE_HZ, duration_s=1.5)
        voice = self.prepare_voice(prompt)
        seg = TextSegment(0, "你好", "你好", [Token(TokenKind.HANZI, "你", "zh", "ni3"),
                                               Token(TokenKind.HANZI, "好", "zh", "hao3")], 2)
        for _ in self.synthesize(voice, seg, SynthesisOptions()):
            pass

    def prepare_voice(self, prompt: PromptAudio, prompt_text: str = "") -> Voice:
        """Build the :class:`~cosyweb.engines.lite.profile.VoiceProfile` of a prompt.

        Returns:
            ``Voice(key=f"{prompt.fingerprint}:{hash of prompt_text}:{PROFILE_VERSION}", data=profile)``.

        Raises:
            cosyweb.errors.InvalidInputError: no voiced speech in the prompt.
        """
        prof = profile.build_profile(prompt.samples, prompt.sample_rate, prompt_text)
        text_hash = hashlib.sha1(prompt_text.strip().encode("utf-8")).hexdigest()[:12]
        log.debug("lite profile: f0 %.0f Hz %s warp %.2f rate %.2f syl/s (%s)", prof.f0_median_hz,
                  prof.gender, prof.warp, prof.syllables_per_s, prof.rate_source)
        return Voice(key=f"{prompt.fingerprint}:{text_hash}:{PROFILE_VERSION}", prompt=prompt,
                     prompt_text=prompt_text, data=prof)

    def synthesize(self, voice: Voice, segment: TextSegment, options: SynthesisOptions) -> Iterator[np.ndarray]:
        """Synthesise one segment; yields exactly one float32 chunk at 22050 Hz (empty if nothing to say).

        Raises:
            cosyweb.errors.InvalidInputError: a reading espeak cannot spell.
            cosyweb.errors.EngineError: any other failure.
        """
        try:
            with cpu_share.first_segment() if segment.index == 0 else nullcontext():
                audio = self._synthesize(voice, segment, options)
            yield audio
        except CosywebError:
            raise
        except Exception as e:  # one job fails, with its reason; the worker carries on
            log.exception("lite synthesis failed")
            raise EngineError(f"{type(e).__name__}: {e}") from e

    def _synthesize(self, voice: Voice, segment: TextSegment, options: SynthesisOptions) -> np.ndarray:
        prof: profile.VoiceProfile = voice.data
        if not isinstance(prof, profile.VoiceProfile):
            raise EngineError("voice was not prepared by the lite engine")
        style = prosody.style_for(options.emotion, options.speed, options.volume)
        prompt_rate = float(np.clip(prof.syllables_per_s / profile.REFERENCE_SPS, PROMPT_RATE_MIN, PROMPT_RATE_MAX))
        rendered = render.render(
            segment,
            variant=prof.variant,
            rate_factor=prompt_rate * style.rate,
            pause_factor=1.0 / style.rate,
            seed=int(options.seed),
            const_f0_hz=prof.const_f0_hz,
        )
        if not rendered.units or not len(rendered.samples):
            return np.zeros(len(rendered.samples), np.float32)
        sr = rendered.sample_rate
        later = segment.index > 0  # steps aside for first segments before its heavy stages (cpu_share)
        if later:
            cpu_share.yield_to_first_segments()
        frames = adapt.analyze(rendered.samples, sr, rendered.const_f0_hz)
        n_in = len(frames.times_s)
        frames, units = durations.lengthen_phrase_ends(frames, rendered.units)
        n_samples = len(rendered.samples) + int(round((len(frames.times_s) - n_in) * durations.FRAME_PERIOD_MS
                                                      * sr / 1000.0))
        f0 = prosody.f0_contour(units, frames.times_s, frames.voiced, prof.log_f0_mean,
                                prof.log_f0_spread, style, seed=int(options.seed))
        target = adapt.Target(prof.warp, prof.mcep_delta, prof.frames, prof.unvoiced_delta, prof.unvoiced_frames)
        log_sp = adapt.convert_envelope(frames, sr, target)
        ap = adapt.synthetic_aperiodicity(frames.voiced, log_sp.shape[1], sr)
        if later:
            cpu_share.yield_to_first_segments()
        y = adapt.resynthesize(f0, log_sp, ap, sr)
        y = adapt.match_loudness(y, sr, prof.loudness_dbfs, style.gain)
        return y[:n_samples]


def create(settings=None) -> LiteEngine:
    """Factory used by the app: ``cosyweb.engines.lite.create(settings)``.

    Args:
        settings: :class:`cosyweb.config.Settings`; the lite engine needs none of its fields.
    """
    return LiteEngine()
