"""Text from agents placed where a line break means something else (email headers); times in recorded notes as
people read them."""

from __future__ import annotations

import re
from datetime import datetime

from django.utils import timezone

_BREAKS = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029\s]+")


def one_line(text: str, limit: int = 150) -> str:
    """``text`` with every run of whitespace and control characters (CR, LF, NUL, the Unicode line and
    paragraph separators…) turned into one space, cut to ``limit`` characters with an ellipsis.
    An email subject built from it never raises ``BadHeaderError``."""
    flat = _BREAKS.sub(" ", text).strip()
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


# A time as notes record it (ISO 8601).
_ISO_TIME = re.compile(r"\b\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:\d\d)?")


def readable_times(text: str) -> str:
    """``text`` with each ISO 8601 time in it as people read one: ``2026-12-06 22:10:40 UTC`` (the site's time
    zone), not ``2026-12-06T22:10:40.123456+00:00``."""

    def readable(match: re.Match[str]) -> str:
        try:
            moment = datetime.fromisoformat(match.group(0).replace("Z", "+00:00"))
        except ValueError:
            return match.group(0)
        if timezone.is_naive(moment):
            moment = timezone.make_aware(moment)
        return f"{timezone.localtime(moment):%Y-%m-%d %H:%M:%S %Z}".rstrip()

    return _ISO_TIME.sub(readable, text)
