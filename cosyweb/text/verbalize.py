"""Numbers, dates, times, percentages, money and digit strings spelled out in Chinese or English.

Chinese readings use cn2an (``cn2an.an2cn``, "low" mode: 十二点五, 一千零一); English readings use
num2words (cardinal, ordinal, year). Both take decimal strings, never floats, so 0.1 stays 0.1.
Each function takes the digits as written (``"12.5"``) and returns words only, with no
punctuation that the tokenizer would turn into a pause.
"""

from __future__ import annotations

import cn2an
from num2words import num2words

ZH_DIGIT = "零一二三四五六七八九"
EN_DIGIT = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine")
EN_MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August",
             "September", "October", "November", "December")
#: Longest integer part cn2an accepts (it raises beyond 16 digits); longer ones are read digit by digit.
ZH_MAX_DIGITS = 16
EN_MAX_DIGITS = 15

_CURRENCY_ZH = {"$": "美元", "€": "欧元", "£": "英镑"}
#: symbol -> (singular, plural, cent singular, cent plural)
_CURRENCY_EN = {
    "$": ("dollar", "dollars", "cent", "cents"),
    "€": ("euro", "euros", "cent", "cents"),
    "£": ("pound", "pounds", "penny", "pence"),
    "¥": ("yuan", "yuan", "fen", "fen"),
    "￥": ("yuan", "yuan", "fen", "fen"),
}


def _clean(num: str) -> str:
    return num.replace(",", "").replace("，", "").replace("−", "-").strip()


def _number_parts(num: str, max_digits: int) -> tuple[bool, str, str, bool]:
    """``(negative, integer digits, fraction digits, read digit by digit)`` of a number string;
    digit by digit when the integer part is longer than ``max_digits`` or has a leading 0."""
    num = _clean(num)
    int_part, _, frac = num.lstrip("+-").partition(".")
    by_digit = len(int_part) > max_digits or (len(int_part) > 1 and int_part.startswith("0"))
    return num.startswith("-"), int_part, frac, by_digit


# ---------------------------------------------------------------- Chinese
def zh_digits(num: str, one_as_yao: bool = False) -> str:
    """Read a digit string digit by digit: ``"2026"`` -> 二零二六; with ``one_as_yao`` 1 is 幺."""
    table = ZH_DIGIT.replace("一", "幺") if one_as_yao else ZH_DIGIT
    return "".join(table[int(d)] for d in num if d.isdigit())


def zh_cardinal(num: str) -> str:
    """``"12.5"`` -> 十二点五, ``"-3"`` -> 负三, ``"1,234"`` -> 一千二百三十四; huge or 0-led: digit by digit."""
    negative, int_part, frac, by_digit = _number_parts(num, ZH_MAX_DIGITS)
    words = zh_digits(int_part) if by_digit else cn2an.an2cn(int_part or "0", "low")
    if frac:
        words += "点" + zh_digits(frac)
    return ("负" if negative else "") + words


def zh_time(hour: str, minute: str, second: str | None = None) -> str:
    """``("10", "30")`` -> 十点三十分; ``("10", "05")`` -> 十点零五分; ``("10", "00")`` -> 十点."""
    out = zh_cardinal(str(int(hour))) + "点"
    m = int(minute)
    if m or (second and int(second)):
        out += ("零" + ZH_DIGIT[m] if 0 < m < 10 else zh_cardinal(str(m)) if m else "零") + "分"
    if second and int(second):
        out += zh_cardinal(str(int(second))) + "秒"
    return out


def zh_date(year: str | None, month: str | None, day: str | None) -> str:
    """``("2026", "11", "30")`` -> 二零二六年十一月三十日 (the year digit by digit)."""
    out = ""
    if year:
        out += zh_digits(year) + "年"
    if month:
        out += zh_cardinal(str(int(month))) + "月"
    if day:
        out += zh_cardinal(str(int(day))) + "日"
    return out


def zh_money(symbol: str, amount: str) -> str:
    """``("¥", "12.5")`` -> 十二元五角; ``("$", "3")`` -> 三美元; ``("$", "3.5")`` -> 三点五美元."""
    amount = _clean(amount)
    if symbol in ("¥", "￥"):
        yuan, _, frac = amount.partition(".")
        frac = (frac + "00")[:2]
        out = zh_cardinal(yuan or "0") + "元" if int(yuan or "0") or frac == "00" else ""
        if frac[0] != "0":
            out += ZH_DIGIT[int(frac[0])] + "角"
        if frac[1] != "0":
            out += ("零" if frac[0] == "0" and out else "") + ZH_DIGIT[int(frac[1])] + "分"
        return out
    return zh_cardinal(amount) + _CURRENCY_ZH.get(symbol, "")


# ---------------------------------------------------------------- English
def _n2w(n: int, **kw) -> str:
    return num2words(n, **kw).replace(",", "")


def en_digits(num: str) -> str:
    """``"138"`` -> "one three eight"."""
    return " ".join(EN_DIGIT[int(d)] for d in num if d.isdigit())


def en_cardinal(num: str) -> str:
    """``"12.5"`` -> "twelve point five", ``"-3"`` -> "minus three"; huge or 0-led: digit by digit."""
    negative, int_part, frac, by_digit = _number_parts(num, EN_MAX_DIGITS)
    words = en_digits(int_part) if by_digit else _n2w(int(int_part or "0"))
    if frac:
        words += " point " + en_digits(frac)
    return ("minus " if negative else "") + words


def en_ordinal(num: str) -> str:
    """``"21"`` -> "twenty-first"."""
    return _n2w(int(_clean(num)), to="ordinal")


def en_year(num: str) -> str:
    """``"2026"`` -> "twenty twenty-six"."""
    return _n2w(int(num), to="year")


def en_time(hour: str, minute: str, second: str | None = None) -> str:
    """``("10", "30")`` -> "ten thirty"; ``("10", "05")`` -> "ten oh five"; ``("10", "00")`` -> "ten o'clock"."""
    h, m = int(hour), int(minute)
    out = _n2w(h) + (" o'clock" if m == 0 else f" oh {EN_DIGIT[m]}" if m < 10 else " " + _n2w(m))
    if second and int(second):
        out += " and " + _n2w(int(second)) + " seconds"
    return out


def en_date(year: str | None, month: str | None, day: str | None) -> str:
    """``("2026", "11", "30")`` -> "November thirtieth twenty twenty-six"."""
    parts = []
    if month:
        parts.append(EN_MONTHS[int(month) - 1])
    if day:
        parts.append(en_ordinal(day))
    if year:
        parts.append(en_year(year))
    return " ".join(parts)


def en_money(symbol: str, amount: str) -> str:
    """``("$", "3")`` -> "three dollars"; ``("$", "3.50")`` -> "three dollars and fifty cents"."""
    one, many, cent, cents = _CURRENCY_EN.get(symbol, ("", "", "", ""))
    whole, _, frac = _clean(amount).partition(".")
    w = int(whole or "0")
    out = f"{_n2w(w)} {one if w == 1 else many}".strip()
    if frac:
        c = int((frac + "00")[:2])
        if len(frac) > 2:  # not a money amount in cents: read the decimal
            return f"{en_cardinal(amount)} {many}".strip()
        if c:
            out += f" and {_n2w(c)} {cent if c == 1 else cents}"
    return out


def en_fraction(num: str, den: str) -> str:
    """``("1", "2")`` -> "one half"; ``("3", "4")`` -> "three quarters"; ``("2", "5")`` -> "two fifths"."""
    a, b = int(num), int(den)
    if b == 2:
        name = "half" if a == 1 else "halves"
    elif b == 4:
        name = "quarter" if a == 1 else "quarters"
    else:
        name = _n2w(b, to="ordinal") + ("" if a == 1 else "s")
    return f"{_n2w(a)} {name}"
