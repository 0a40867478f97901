"""Text from agents placed where a line break means something else (email headers)."""

from __future__ import annotations

import re

_BREAKS = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029\s]+")


def one_line(text: str, limit: int = 150) -> str:
    """``text`` with every run of whitespace and control characters (CR, LF, NUL, the Unicode line and
    paragraph separators…) turned into one space, cut to ``limit`` characters with an ellipsis.
    An email subject built from it never raises ``BadHeaderError``."""
    flat = _BREAKS.sub(" ", text).strip()
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"
