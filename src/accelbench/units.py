"""Every number formatter and parser of the suite, in one place: bytes, seconds, rates, hours,
dollars. Binary units (KiB, MiB) for what allocators hold, decimal ones (kB, TB) for what
disks and clouds sell."""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

_UNITS = {
    "": 1,
    "b": 1,
    "kb": 10**3,
    "mb": 10**6,
    "gb": 10**9,
    "tb": 10**12,
    "kib": 2**10,
    "mib": 2**20,
    "gib": 2**30,
    "tib": 2**40,
}
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*$")


def parse_bytes(text: str) -> int:
    """'4GiB' -> 4294967296, '500MB' -> 500000000, '1024' -> 1024 (KiB/MiB/GiB are powers of 2)."""
    match = _SIZE.match(text)
    unit = match and match.group(2).lower()
    if not match or unit not in _UNITS:
        raise ValueError(f"{text!r} is not a size; write e.g. 4GiB, 512MiB or 500MB")
    value = int(float(match.group(1)) * _UNITS[unit])
    if value < 1:
        raise ValueError(f"{text!r} is not a positive size")
    return value


def format_bytes(count: float) -> str:
    """3717000 -> '3.5 MiB': powers of 2, as allocators count."""
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(count) < 1024 or unit == "GiB":
            return f"{count:.1f} {unit}" if unit != "B" else f"{count:.0f} B"
        count /= 1024
    raise AssertionError("unreachable")


def format_si_bytes(count: float) -> str:
    """47040000000000 -> '47.0 TB': decimal units, as disks and clouds are sold (format_bytes
    counts in powers of 2, as allocators do)."""
    scaled = count
    for unit in ("B", "kB", "MB", "GB", "TB", "PB", "EB", "ZB", "YB"):
        if abs(scaled) < 1000:
            return f"{scaled:.0f} {unit}" if unit == "B" else f"{scaled:.1f} {unit}"
        scaled /= 1000
    return f"{count:.3g} B"


def format_seconds(value: float) -> str:
    """0.0123 -> '12.3 ms': three significant digits in the largest unit under the value."""
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6)):
        if value >= scale:
            return f"{value / scale:.3g} {unit}"
    return f"{value * 1e9:.3g} ns"


def readable(value: float, small: str) -> str:
    """Thousands separators from 100 to a billion, three significant digits written out up to
    10^15 (6,080,000,000), e-notation only beyond (where 18 digits would read worse), `small` below."""
    if 100 <= value < 1e9:
        return f"{value:,.0f}"
    if 1e9 <= value < 1e15:
        return format_factor(value).removesuffix("x")
    return f"{value:.3g}" if value >= 1e15 else format(value, small)


def format_hours(hours: float) -> str:
    return f"{readable(hours, '.3g')} h"


def format_dollars(dollars: float) -> str:
    return f"${readable(dollars, '.2f')}"


def format_small(value: float, digits: int = 2) -> str:
    """0.000038 -> '0.000038': `digits` significant digits, written out, never e-notation
    (p-values, significance levels, loss gaps)."""
    if value == 0 or not math.isfinite(value):
        return f"{value:g}"
    places = max(0, digits - 1 - math.floor(math.log10(abs(value))))
    written = f"{value:.{places}f}"
    return written.rstrip("0").rstrip(".") if "." in written else written


def format_factor(value: float) -> str:
    """44512345.6 -> '44,500,000x': how many times, three significant digits, written out."""
    if value < 1000:
        return f"{value:.3g}x"
    magnitude = 10 ** (math.floor(math.log10(value)) - 2)
    return f"{round(value / magnitude) * magnitude:,.0f}x"


def format_number(value: object) -> str:
    """A plain number for a table: four significant digits, never e-notation below 10^15
    (a count of bytes or images is written out), '' for None."""
    if value is None:
        return ""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return str(value)
    if float(value).is_integer() and abs(value) < 1e15:
        return f"{int(value):,}"
    if 1e-4 <= abs(value) < 1e15:
        digits = max(0, 3 - int(f"{abs(value):e}".split("e")[1]))
        return f"{value:,.{digits}f}"
    return f"{value:.4g}"


# --- how a table's numbers read -------------------------------------------------------------


def _scaled(value: float, scales: Sequence[tuple[float, str]]) -> str:
    for scale, suffix in scales:
        if abs(value) >= scale:
            return f"{value / scale:.3g}{suffix}"
    return f"{value:.3g}"


def rate(value: float) -> str:
    """Samples per second in readable units: 31.2k/s."""
    return _scaled(value, ((1e9, "G"), (1e6, "M"), (1e3, "k"))) + "/s"


def flops(value: float) -> str:
    """Floating-point operations in readable units: 1.23 GFLOP."""
    scaled = _scaled(value, ((1e12, " T"), (1e9, " G"), (1e6, " M"), (1e3, " k")))
    return f"{scaled}{'' if ' ' in scaled else ' '}FLOP"


def milliseconds(value: float) -> str:
    return f"{value:.3g} ms"


def times(value: float) -> str:
    return f"{value:.2f}x"


def percent(value: float) -> str:
    return f"{100 * value:.2f}%"


def points(value: float) -> str:
    return f"{100 * value:+.2f} pt"


def plain(value: float) -> str:
    return f"{value:.3g}"


def count(value: float) -> str:
    return f"{value:,.0f}"


def two_places(value: float) -> str:
    return f"{value:.2f}"
