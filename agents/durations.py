"""Durations as people type and read them: ``2h 30m``, ``90m``, ``1d``, ``1 day 2 h`` (the inbox's own
display), and back to the compact form ``2h 30m``. Used for an agent's default expiry (TTL)."""

from __future__ import annotations

import re
from datetime import timedelta
from decimal import Decimal, InvalidOperation

UNIT_SECONDS = {"w": 604_800, "d": 86_400, "h": 3_600, "m": 60, "s": 1}
# Every spelling of a unit, to its one-letter key. "min" and "m" are minutes ("mo"nths are not a unit here).
UNIT_NAMES = {
    **{name: "w" for name in ("w", "wk", "wks", "week", "weeks")},
    **{name: "d" for name in ("d", "day", "days")},
    **{name: "h" for name in ("h", "hr", "hrs", "hour", "hours")},
    **{name: "m" for name in ("m", "min", "mins", "minute", "minutes")},
    **{name: "s" for name in ("s", "sec", "secs", "second", "seconds")},
}
_PART = re.compile(r"(\d+(?:\.\d+)?)\s*([a-z]+)")
_SEPARATORS = re.compile(r"[\s,]+|\band\b")
MAX_INPUT = 64  # characters: anything longer is not a duration anyone types


class DurationParseError(ValueError):
    """The text is not a duration; the message says what to type instead."""


def parse_duration(text: str) -> timedelta:
    """``"2h 30m"`` → 2:30:00. Parts are a number and a unit (w, d, h, m, s, or their words), in any order
    but each unit once. A bare number is refused: it has no unit."""
    value = text.strip().lower()
    if not value:
        raise DurationParseError("Enter a duration, e.g. 2h 30m, 90m or 1d.")
    if len(value) > MAX_INPUT:
        raise DurationParseError(f"Too long: a duration is at most {MAX_INPUT} characters, e.g. 2h 30m.")
    if re.fullmatch(r"\d+(?:\.\d+)?", value):
        raise DurationParseError(f"Add a unit: {value}m, {value}h or {value}d.")
    seconds = Decimal(0)
    seen: set[str] = set()
    position = 0
    for match in _PART.finditer(value):
        if _SEPARATORS.sub("", value[position : match.start()]):
            break
        unit = UNIT_NAMES.get(match.group(2))
        if unit is None or unit in seen:
            break
        seen.add(unit)
        try:
            seconds += Decimal(match.group(1)) * UNIT_SECONDS[unit]
        except InvalidOperation:  # pragma: no cover - the pattern admits only decimals
            break
        position = match.end()
    else:
        if seen and not _SEPARATORS.sub("", value[position:]):
            try:
                return timedelta(seconds=int(seconds))
            except OverflowError:
                raise DurationParseError("Far too long for a duration.") from None
    raise DurationParseError("Not a duration: use a number and a unit (d, h, m, s), e.g. 2h 30m, 90m or 1d.")


def format_duration(value: timedelta | None) -> str:
    """2:30:00 → ``"2h 30m"``; 1 day → ``"1d"``; what ``parse_duration`` reads back to the same value."""
    if value is None:
        return ""
    seconds = int(value.total_seconds())
    parts = []
    for unit in ("d", "h", "m", "s"):
        count, seconds = divmod(seconds, UNIT_SECONDS[unit])
        if count:
            parts.append(f"{count}{unit}")
    return " ".join(parts) or "0s"
