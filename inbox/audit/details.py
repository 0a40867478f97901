"""An audit event's data as the audit log page shows it: one "Label: value" a key, in words ("Attempts: 6",
"Until: 2026-03-02 10:15:07 UTC", "Fields: slug, name"), where the page showed the JSON. The JSON stays in the
exports and behind the row's summary."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from inbox.core.text import readable_times

VALUE_LIMIT = 200  # characters of one value on the page; the whole of it is in the JSON and the exports
_WORD_BREAK = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|_")
# Keys whose plain split reads badly.
_LABELS = {
    "id": "ID",
    "url": "URL",
    "payload": "Answer",
    "interruptId": "Interrupt",
    "interruptIds": "Interrupts",
    "runId": "Run",
    "threadId": "Thread",
    "resumedRunId": "Resumed run",
    "toolCallId": "Tool call",
    "everSent": "Ever sent",
}


@dataclass(frozen=True)
class Detail:
    label: str
    value: str


def label_of(key: str) -> str:
    if key in _LABELS:
        return _LABELS[key]
    words = _WORD_BREAK.sub(" ", key).strip().lower()
    return (words[:1].upper() + words[1:]) or key


def value_words(value: Any) -> str:
    if value is None:
        return "—"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, str):
        text = readable_times(value)
    elif isinstance(value, list) and all(not isinstance(entry, dict | list) for entry in value):
        text = ", ".join(value_words(entry) for entry in value) or "none"
    elif isinstance(value, dict) and all(not isinstance(entry, dict | list) for entry in value.values()):
        text = "; ".join(f"{label_of(str(key))}: {value_words(entry)}" for key, entry in value.items()) or "none"
    elif isinstance(value, int | float):
        text = str(value)
    else:
        text = readable_times(json.dumps(value, ensure_ascii=False))
    return text if len(text) <= VALUE_LIMIT else text[: VALUE_LIMIT - 1].rstrip() + "…"


def audit_details(data: Any) -> list[Detail]:
    """``data`` of an audit event, one ``Detail`` a key, by key (PostgreSQL's jsonb keeps no insertion order, so
    the same event reads the same on either database)."""
    if not data:
        return []
    if not isinstance(data, dict):
        return [Detail("Data", value_words(data))]
    return [
        Detail(label_of(str(key)), value_words(value)) for key, value in sorted(data.items(), key=lambda kv: str(kv[0]))
    ]
