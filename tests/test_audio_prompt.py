"""Prompt conditioning and checks (load_prompt) on the real prompts and on signals built from them."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf
from scipy.signal import resample_poly

from cosyweb.audio import analysis as an
from cosyweb.audio.prompt import load_prompt, load_prompt_with_settings
from cosyweb.config import Settings
from cosyweb.errors import InvalidInputError

SR = 24000


def _codes(prompt) -> set[str]:
    return {m.code for m in prompt.warnings}


def _p95_dbfs(row: dict) -> float:
    """The manifest's measured speech level ("level p95 -15.9 dBFS")."""
    m = re.search(r"level p95 (-?[\d.]+) dBFS", row["notes"])
    assert m, row["file"]
    return float(m.group(1))


@pytest.fixture(scope="module")
def loaded(shared_prompts, prompt_manifest) -> dict:
    return {name: load_prompt(shared_prompts / name) for name in sorted(prompt_manifest)}


def _write(path: Path, x: np.ndarray, sr: int = SR) -> Path:
    sf.write(path, x, sr, subtype="FLOAT")
    return path


def _mono(shared_prompts: Path, name: str) -> np.ndarray:
    """A 24 kHz mono prompt as float32."""
    x, sr = sf.read(shared_prompts / name, dtype="float32")
    assert sr == SR and x.ndim == 1, name
    return x


# --- the real prompts ------------------------------------------------------------------------


def test_every_real_prompt_loads_conditioned(loaded):
    for name, p in loaded.items():
        assert p.samples.dtype == np.float32 and p.samples.ndim == 1, name
        assert p.sample_rate == SR and abs(len(p.samples) / SR - p.duration_s) < 1e-9, name
        assert np.max(np.abs(p.samples)) <= 1.0, name
        assert 1.0 <= p.speech_s <= p.duration_s <= 30.0, name
        assert p.rms_dbfs < p.peak_dbfs <= 0.0, name
        a, b = p.kept_range_s
        assert abs((b - a) - p.duration_s) < 2e-3 and b <= p.original_duration_s + 1e-3, name
        assert all(m.zh and m.en for m in p.warnings), name


def test_noisy_warning_exactly_on_the_noisy_prompts(loaded, prompt_manifest):
    for name, p in loaded.items():
        tagged = "[HARD:noisy]" in prompt_manifest[name]["notes"]
        assert ("prompt.noisy" in _codes(p)) == tagged, (name, p.snr_db)
    snr_noisy = max(p.snr_db for n, p in loaded.items() if "[HARD:noisy]" in prompt_manifest[n]["notes"])
    snr_clean = min(p.snr_db for n, p in loaded.items() if "[HARD:noisy]" not in prompt_manifest[n]["notes"])
    assert snr_noisy < 12.0 and snr_clean > 20.0  # a clear margin around the 15 dB threshold


def test_quiet_warning_follows_the_speech_level(loaded, prompt_manifest):
    for name, p in loaded.items():
        row = prompt_manifest[name]
        if "[HARD:quiet]" in row["notes"] or _p95_dbfs(row) < -33.0:
            assert "prompt.quiet" in _codes(p), (name, p.rms_dbfs)
        elif _p95_dbfs(row) > -30.0:
            assert "prompt.quiet" not in _codes(p), (name, p.rms_dbfs)
    assert loaded["kimiaudio__asr_example.wav"].rms_dbfs < -40.0  # the ~-40 dBFS clip


def test_short_warning_on_short_prompts_only(loaded, prompt_manifest):
    for name, p in loaded.items():
        row = prompt_manifest[name]
        if "[HARD:short<3s]" in row["notes"]:
            assert "prompt.short" in _codes(p) and p.duration_s < 3.0, name
        elif float(row["duration_s"]) > 4.0:
            assert "prompt.short" not in _codes(p), name


def test_no_clipping_or_low_rate_warnings_on_real_prompts(loaded):
    for name, p in loaded.items():
        assert not _codes(p) & {"prompt.clipping", "prompt.low_sample_rate"}, name


def test_long_stereo_mp3_is_cut_under_the_limit(loaded):
    p = loaded["zonos__exampleaudio.mp3"]
    assert p.original_channels == 2 and p.original_duration_s > 30.5
    assert p.duration_s <= 30.0 and p.duration_s > 28.0
    assert p.trimmed_from_s is not None and p.trimmed_from_s == pytest.approx(p.kept_range_s, abs=0.01)
    cut = next(m for m in p.warnings if m.code == "prompt.cut")
    a, b = p.trimmed_from_s
    assert f"{a:.1f}–{b:.1f}" in cut.en and f"保留了 {a:.1f}–{b:.1f} 秒" in cut.zh
    assert "30.8 s" in cut.en


def test_21s_prompt_is_under_the_limit_and_not_cut(loaded):
    p = loaded["mossttsd__single_reference.wav"]
    assert p.trimmed_from_s is None and "prompt.cut" not in _codes(p)
    assert p.duration_s > 20.5


# --- conditioning ----------------------------------------------------------------------------


def test_stereo_is_downmixed(tmp_path, shared_prompts):
    x = _mono(shared_prompts, "higgsaudio__en_woman.wav")
    mono = load_prompt(_write(tmp_path / "m.wav", x))
    stereo = load_prompt(_write(tmp_path / "s.wav", np.stack([x, 0.5 * x], axis=1)))
    assert stereo.original_channels == 2 and stereo.samples.ndim == 1
    assert stereo.rms_dbfs == pytest.approx(mono.rms_dbfs + 20 * np.log10(0.75), abs=0.1)
    np.testing.assert_allclose(stereo.samples, 0.75 * mono.samples, atol=1e-5)


def test_out_of_phase_stereo_is_not_cancelled(tmp_path, shared_prompts):
    x = _mono(shared_prompts, "higgsaudio__en_woman.wav")
    p = load_prompt(_write(tmp_path / "anti.wav", np.stack([x, -x], axis=1)))
    assert p.speech_s > 4.0 and p.rms_dbfs > -25.0


@pytest.mark.parametrize("rate", [8000, 16000, 44100, 48000])
def test_resampling_to_24k_keeps_duration_and_content(tmp_path, shared_prompts, rate):
    # the noisy prompt has sound throughout, so nothing is trimmed and durations compare exactly
    x = _mono(shared_prompts, "amphion__se_noise.wav")  # 10.00 s at 24 kHz
    g = np.gcd(rate, SR)
    y = resample_poly(x, rate // g, SR // g).astype(np.float32)
    p = load_prompt(_write(tmp_path / f"r{rate}.wav", y, rate))
    assert p.sample_rate == SR and p.original_sample_rate == rate
    assert p.duration_s == pytest.approx(10.0, abs=0.01)
    n = min(len(x), len(p.samples))
    if rate >= SR:  # the full band survives: the waveform comes back
        assert np.corrcoef(x[:n], p.samples[:n])[0, 1] > 0.99
    assert ("prompt.low_sample_rate" in _codes(p)) == (rate < 16000)


@pytest.mark.parametrize(
    "name", ["cosyvoice__zero_shot_prompt.wav", "higgsaudio__en_woman.wav", "stepaudioeditx__fear_zh_female_prompt.wav"]
)
@pytest.mark.parametrize("pad", ["zeros", "noise-70dB"])
def test_padded_silence_is_trimmed_back(tmp_path, shared_prompts, name, pad):
    x = _mono(shared_prompts, name)
    plain = load_prompt(_write(tmp_path / "plain.wav", x))
    rng = np.random.default_rng(1)
    sil = (
        np.zeros(SR, np.float32) if pad == "zeros" else (rng.standard_normal(SR) * 10 ** (-70 / 20)).astype(np.float32)
    )
    padded = load_prompt(_write(tmp_path / "padded.wav", np.concatenate([sil, x, sil])))
    assert padded.original_duration_s == pytest.approx(len(x) / SR + 2.0, abs=1e-3)
    # 2 s were added; what is kept is the original's trimmed speech again (+ margins, +-0.15 s)
    assert padded.duration_s == pytest.approx(plain.duration_s, abs=0.15)
    assert padded.duration_s < len(x) / SR + 0.25
    assert padded.kept_range_s[0] == pytest.approx(1.0 + plain.kept_range_s[0], abs=0.15)
    assert padded.speech_s == pytest.approx(plain.speech_s, abs=0.1)


def test_trim_keeps_margins(tmp_path, shared_prompts):
    x = _mono(shared_prompts, "cosyvoice__zero_shot_prompt.wav")
    p = load_prompt(_write(tmp_path / "p.wav", np.concatenate([np.zeros(SR, np.float32), x])))
    lead = p.samples[: int(0.08 * SR)]
    assert np.max(np.abs(lead)) < 10 ** (-40 / 20)  # the kept margin is (near) silence
    energy = an.frame_energy_db(p.samples, SR)
    assert energy[int(0.1 / an.HOP_S) + 3 :].max() > -30  # and speech follows the margin


# --- rejections --------------------------------------------------------------------------------


@pytest.mark.parametrize("level_db", [None, -90.0])
def test_digital_silence_is_rejected(tmp_path, level_db):
    x = np.zeros(3 * SR, np.float32)
    if level_db is not None:
        x = (np.random.default_rng(0).standard_normal(3 * SR) * 10 ** (level_db / 20) / 4).astype(np.float32)
    with pytest.raises(InvalidInputError) as ei:
        load_prompt(_write(tmp_path / "s.wav", x))
    assert ei.value.code == "prompt.silent" and "静音" in ei.value.zh and "silent" in ei.value.en


def test_under_one_second_of_speech_is_rejected(tmp_path, shared_prompts):
    x = _mono(shared_prompts, "higgsaudio__en_woman.wav")
    e = an.frame_energy_db(x, SR)
    i = int(np.argmax(e)) * int(an.HOP_S * SR)
    burst = x[max(0, i - SR // 4) : i + SR // 4]  # 0.5 s around the loudest frame
    sil = np.zeros(2 * SR, np.float32)
    with pytest.raises(InvalidInputError) as ei:
        load_prompt(_write(tmp_path / "b.wav", np.concatenate([sil, burst, sil])))
    assert ei.value.code == "prompt.too_short"
    measured = ei.value.details["speech_s"]
    assert 0.2 < measured < 0.7
    assert f"{measured:.1f} s" in ei.value.en and f"{measured:.1f} 秒" in ei.value.zh


def test_steady_noise_without_speech_is_rejected(tmp_path):
    x = (np.random.default_rng(0).standard_normal(4 * SR) * 0.05).astype(np.float32)
    with pytest.raises(InvalidInputError) as ei:
        load_prompt(_write(tmp_path / "n.wav", x))
    assert ei.value.code == "prompt.too_short" and ei.value.details["speech_s"] < 0.5


def test_min_speech_is_configurable(shared_prompts):
    p = load_prompt(shared_prompts / "fireredasr__IT0011W0001.wav")
    with pytest.raises(InvalidInputError) as ei:
        load_prompt(shared_prompts / "fireredasr__IT0011W0001.wav", min_speech_s=p.speech_s + 0.5)
    assert ei.value.code == "prompt.too_short"


def test_too_large_and_undecodable_pass_through(shared_prompts):
    with pytest.raises(InvalidInputError) as ei:
        load_prompt(shared_prompts / "whisper__jfk.flac", max_bytes=100_000)
    assert ei.value.code == "prompt.too_large"
    with pytest.raises(InvalidInputError) as ei:
        load_prompt(b"\x00\x01garbage" * 100)
    assert ei.value.code == "prompt.undecodable"
    with pytest.raises(InvalidInputError) as ei:
        load_prompt(None)
    assert ei.value.code == "prompt.missing"


# --- warnings on built signals -----------------------------------------------------------------


def test_clipping_warning(tmp_path, shared_prompts):
    x = _mono(shared_prompts, "higgsaudio__en_woman.wav")
    p = load_prompt(_write(tmp_path / "c.wav", np.clip(x * 8.0, -1.0, 1.0)))
    assert "prompt.clipping" in _codes(p) and p.clipped_fraction > 0.01
    assert "prompt.clipping" not in _codes(load_prompt(_write(tmp_path / "ok.wav", x)))


def test_float_file_above_full_scale_is_scaled_not_clipped(tmp_path, shared_prompts):
    x = _mono(shared_prompts, "higgsaudio__en_woman.wav")
    x = x / np.max(np.abs(x)) * 2.0
    p = load_prompt(_write(tmp_path / "hot.wav", x))
    assert np.max(np.abs(p.samples)) == pytest.approx(1.0, abs=1e-6)
    assert p.peak_dbfs == pytest.approx(0.0, abs=1e-4)


def test_noise_warning_tracks_added_noise(tmp_path, shared_prompts):
    x = _mono(shared_prompts, "cosyvoice__zero_shot_prompt.wav")
    e = an.frame_energy_db(x, SR)
    speech_power = np.mean(10 ** (e[e > np.percentile(e, 95) - 20] / 10))
    rng = np.random.default_rng(0)
    results = {}
    for snr in (5.0, 25.0):
        noise = rng.standard_normal(len(x)) * np.sqrt(speech_power / 10 ** (snr / 10))
        p = load_prompt(_write(tmp_path / f"n{snr:g}.wav", (x + noise).astype(np.float32)))
        assert p.snr_db == pytest.approx(snr, abs=3.0)
        results[snr] = _codes(p)
    assert "prompt.noisy" in results[5.0] and "prompt.noisy" not in results[25.0]


def test_quiet_warning_on_an_attenuated_prompt(tmp_path, shared_prompts):
    x = _mono(shared_prompts, "higgsaudio__en_woman.wav")
    loud = load_prompt(_write(tmp_path / "l.wav", x))
    quiet = load_prompt(_write(tmp_path / "q.wav", x * 10 ** (-25 / 20)))
    assert quiet.rms_dbfs == pytest.approx(loud.rms_dbfs - 25, abs=0.2)
    assert "prompt.quiet" in _codes(quiet) and "prompt.quiet" not in _codes(loud)


# --- the duration limit ------------------------------------------------------------------------


def test_long_prompt_keeps_the_stretch_with_speech(tmp_path, shared_prompts):
    """6 s of speech, 14 s of near-silence, then 26 s of speech: the 30 s cut keeps the last part."""
    a = _mono(shared_prompts, "higgsaudio__en_woman.wav")  # 6.4 s
    tail = [
        _mono(shared_prompts, n)
        for n in (
            "soulxpodcast__female_mandarin.wav",
            "mossttsd__zh_spk1_moon.wav",
            "stepaudioeditx__fear_zh_female_prompt.wav",
        )
    ]
    rng = np.random.default_rng(0)
    quiet = (rng.standard_normal(14 * SR) * 10 ** (-70 / 20)).astype(np.float32)
    gap = np.zeros(SR // 2, np.float32)
    speech_tail = np.concatenate([tail[0], gap, tail[1], gap, tail[2]])
    x = np.concatenate([a, quiet, speech_tail])
    tail_start_s = (len(a) + len(quiet)) / SR
    p = load_prompt(_write(tmp_path / "long.wav", x))
    assert p.original_duration_s > 45.0 and p.duration_s <= 30.0
    assert p.trimmed_from_s is not None and "prompt.cut" in _codes(p)
    assert tail_start_s - 1.0 < p.trimmed_from_s[0] <= tail_start_s  # starts where the tail speech starts
    assert p.trimmed_from_s[1] > len(x) / SR - 0.5  # and runs to the end
    tail_speech = load_prompt(_write(tmp_path / "tail.wav", speech_tail)).speech_s
    assert p.speech_s > 0.95 * tail_speech  # all of the tail speech is kept


def test_settings_limits_apply(shared_prompts):
    s = Settings(max_prompt_s=8.0, min_speech_s=1.0, prompt_sample_rate=16000)
    p = load_prompt_with_settings(shared_prompts / "mossttsd__pod_m_enhanced.wav", s)
    assert p.sample_rate == 16000 and p.duration_s <= 8.0 and "prompt.cut" in _codes(p)
    assert p.speech_s > 6.0  # the cut went to a stretch with speech
    with pytest.raises(InvalidInputError) as ei:
        load_prompt_with_settings(shared_prompts / "whisper__jfk.flac", Settings(max_upload_mb=0.5))
    assert ei.value.code == "prompt.too_large"


def test_fingerprint_is_stable_across_path_and_bytes(shared_prompts):
    path = shared_prompts / "vallex__ja-2.ogg"
    a, b = load_prompt(path), load_prompt(path.read_bytes())
    assert a.fingerprint == b.fingerprint and b.source_path is None
    assert a.fingerprint != load_prompt(shared_prompts / "valle__8455_210777_000067_000000.wav").fingerprint


def test_package_exports_load_prompt_lazily():
    import cosyweb.audio
    from cosyweb.audio import prompt

    assert cosyweb.audio.load_prompt is prompt.load_prompt
    with pytest.raises(AttributeError):
        cosyweb.audio.no_such_name  # noqa: B018
