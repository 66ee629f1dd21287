"""Spelling the front end's readings for espeak-ng: pinyin, Jyutping, English words, ARPAbet.

espeak-ng's ``cmn-Latn-pinyin`` voice reads tone-numbered pinyin and
``yue-Latn-jyutping`` reads tone-numbered Jyutping, so the reading the front end
decided (user annotations included) is exactly what is spoken. Measured on the
espeak-ng 1.52 data in ``espeakng-loader`` (every toned syllable of pypinyin's
``pinyin_dict`` run through ``espeak_TextToPhonemes``): all 1,549 read natively
except jiong/qiong/xiong, wong, ê and the interjections m, n, hm, hng, which fall
back to English. Those are injected as espeak phonemes (``[[...]]``), built from
the phonemes espeak itself uses for the neighbouring syllables (``yong`` =
``j'ong``, ``xiang`` = ``S;'iA N``). ü is written ``v`` (``lv4``).

ARPAbet phones (CMUdict, as CosyVoice3 accepts them) are mapped to the espeak
``en-us`` phoneme mnemonics that ``espeak_TextToPhonemes`` prints for the
same sounds (father ``A:``, but ``V``, about ``@``, bird ``3:``).
"""

from __future__ import annotations

import re

from cosyweb.errors import InvalidInputError

#: espeak language voices (file names under espeak-ng-data/lang) per language id.
ESPEAK_VOICES: dict[str, str] = {"zh": "cmn-Latn-pinyin", "yue": "yue-Latn-jyutping", "en": "en-US"}

#: Mandarin tone number -> the tone digits of espeak's cmn phoneme table (Chao numbers).
_CMN_TONE_DIGITS = {1: "55", 2: "35", 3: "214", 4: "51", 5: "11"}

#: Mandarin syllables (without tone) that espeak reads as English, -> espeak cmn phonemes.
#: ``{T}`` is replaced by the tone digits. Sources: espeak's own transcriptions of
#: yong (``j'ong``), jiang (``tS;'iA``), qiang (``tS;h'iA``), xiang (``S;'iA``), ng (``'N-``).
_CMN_INJECT: dict[str, str] = {
    "jiong": "tS;j'ong{T}",
    "qiong": "tS;hj'ong{T}",
    "xiong": "S;j'ong{T}",
    "wong": "w'ong{T}",
    "m": "'m-{T}",
    "n": "'n-{T}",
    "hm": "h'm-{T}",
    "hng": "h'N-{T}",
    "ê": "'E{T}",
}

#: Cantonese syllabic nasals that espeak reads toneless and very short (27 ms), -> yue phonemes.
_YUE_INJECT: dict[str, str] = {"m": "'m-{T}", "ng": "'N-{T}", "hm": "h'm-{T}", "hng": "h'N-{T}"}

#: ARPAbet vowel -> espeak en-us vowel (stressed form, unstressed form).
_ARPA_VOWELS: dict[str, tuple[str, str]] = {
    "AA": ("A:", "A:"),
    "AE": ("a", "a"),
    "AH": ("V", "@"),
    "AO": ("O:", "O:"),
    "AW": ("aU", "aU"),
    "AY": ("aI", "aI"),
    "EH": ("E", "E"),
    "ER": ("3:", "3"),
    "EY": ("eI", "eI"),
    "IH": ("I", "I"),
    "IY": ("i:", "i:"),
    "OW": ("oU", "oU"),
    "OY": ("OI", "OI"),
    "UH": ("U", "U"),
    "UW": ("u:", "u:"),
}
#: ARPAbet consonant -> espeak en-us consonant.
_ARPA_CONSONANTS: dict[str, str] = {
    "B": "b", "CH": "tS", "D": "d", "DH": "D", "F": "f", "G": "g", "HH": "h", "JH": "dZ",
    "K": "k", "L": "l", "M": "m", "N": "n", "NG": "N", "P": "p", "R": "r", "S": "s",
    "SH": "S", "T": "t", "TH": "T", "V": "v", "W": "w", "Y": "j", "Z": "z", "ZH": "Z",
}


def split_tone(syllable: str, max_tone: int) -> tuple[str, int]:
    """Split ``"hao4"`` into ``("hao", 4)``; a missing tone is the neutral tone (5 for pinyin).

    Args:
        syllable: tone-numbered syllable, lower or upper case.
        max_tone: 5 for pinyin, 6 for Jyutping.

    Raises:
        cosyweb.errors.InvalidInputError: not a letters-then-digit syllable.
    """
    s = syllable.strip().lower()
    m = re.fullmatch(r"([^\d]+)(\d?)", s)
    if not m or (m.group(2) and not 1 <= int(m.group(2)) <= max_tone):
        raise InvalidInputError(
            "lite.bad_syllable",
            f"无法朗读的音节：{syllable}",
            f"cannot pronounce the syllable {syllable!r}",
        )
    tone = int(m.group(2)) if m.group(2) else (5 if max_tone == 5 else 0)
    return m.group(1), tone


def pinyin_to_espeak(syllable: str) -> tuple[str, int]:
    """Spell one tone-numbered pinyin syllable for the ``cmn-Latn-pinyin`` voice.

    Args:
        syllable: e.g. ``"hao4"``, ``"lv4"`` (ü as ``v``; ``ü`` and ``u:`` are accepted too),
            ``"ma5"`` or ``"ma"`` (neutral tone), ``"xiong2"``, ``"m2"``.

    Returns:
        ``(text, tone)``: the text to give espeak (the syllable itself or ``[[phonemes]]``)
        and the tone number 1-5.

    Raises:
        cosyweb.errors.InvalidInputError: not a tone-numbered syllable.
    """
    base, tone = split_tone(syllable, 5)
    base = base.replace("ü", "v").replace("u:", "v")
    if base in _CMN_INJECT:
        return "[[" + _CMN_INJECT[base].replace("{T}", _CMN_TONE_DIGITS[tone]) + "]]", tone
    if not re.fullmatch(r"[a-z]+", base):
        raise InvalidInputError(
            "lite.bad_syllable", f"无法朗读的拼音：{syllable}", f"cannot pronounce the pinyin {syllable!r}"
        )
    return f"{base}{tone}", tone


def jyutping_to_espeak(syllable: str) -> tuple[str, int]:
    """Spell one tone-numbered Jyutping syllable for the ``yue-Latn-jyutping`` voice.

    Args:
        syllable: e.g. ``"nei5"``, ``"m4"``.

    Returns:
        ``(text, tone)`` with the tone 1-6 (0 if the syllable carried none).

    Raises:
        cosyweb.errors.InvalidInputError: not a tone-numbered syllable.
    """
    base, tone = split_tone(syllable, 6)
    if not re.fullmatch(r"[a-z]+", base):
        raise InvalidInputError(
            "lite.bad_syllable", f"无法朗读的粤拼：{syllable}", f"cannot pronounce the Jyutping {syllable!r}"
        )
    if base in _YUE_INJECT:
        return "[[" + _YUE_INJECT[base].replace("{T}", str(tone or 3)) + "]]", tone
    return f"{base}{tone or ''}", tone


def arpabet_to_espeak(phones: tuple[str, ...] | list[str]) -> tuple[str, bool]:
    """Spell one word's ARPAbet phones as inline espeak ``en-us`` phonemes.

    Args:
        phones: e.g. ``("M", "AY0", "N", "UW1", "T")``; vowels carry stress digits 0/1/2.

    Returns:
        ``(text, stressed)``: ``"[[maIn'u:t]]"`` and whether a primary stress was present.

    Raises:
        cosyweb.errors.InvalidInputError: an unknown phone.
    """
    out = []
    stressed = False
    for ph in phones:
        p = ph.strip().upper()
        m = re.fullmatch(r"([A-Z]+)([012]?)", p)
        if m and m.group(1) in _ARPA_VOWELS:
            stress = m.group(2) or "0"
            strong, weak = _ARPA_VOWELS[m.group(1)]
            if stress == "1":
                out.append("'" + strong)
                stressed = True
            elif stress == "2":
                out.append("," + strong)
            else:
                out.append(weak)
        elif m and not m.group(2) and m.group(1) in _ARPA_CONSONANTS:
            out.append(_ARPA_CONSONANTS[m.group(1)])
        else:
            raise InvalidInputError(
                "lite.bad_arpabet",
                f"无法识别的 ARPAbet 音素：{ph}",
                f"unknown ARPAbet phone {ph!r}",
            )
    return "[[" + "".join(out) + "]]", stressed


def english_word(word: str) -> str:
    """Make an English word safe for espeak: letters, apostrophes and digits kept, other symbols dropped.

    Args:
        word: one WORD token's text (the front end has normally spelled numbers out;
            espeak reads any digits left).

    Returns:
        Space-separated plain words (may be empty).
    """
    return " ".join(p.strip("'") for p in re.findall(r"[A-Za-z\u00C0-\u024F']+|\d+", word) if p.strip("'"))
