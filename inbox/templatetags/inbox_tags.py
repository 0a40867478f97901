"""Small filters for the approver pages. Everything here returns plain text: the templates escape it."""

from __future__ import annotations

import json
import re
from datetime import datetime, timedelta
from typing import Any

from django import template
from django.template.loader import render_to_string
from django.utils import timezone

from inbox import access, limits
from inbox.core import safe_json
from inbox.core.text import readable_times
from inbox.decisions.rules import UNDO_OFFER_SESSION_KEY, is_tool_approval, undo_window_end
from inbox.decisions.shapes import needs_form_input
from inbox.limits import MAX_JSON_DEPTH
from inbox.models import InboxItem, Resume
from inbox.resumes.states import Delivery, delivery_of_item, delivery_of_resume, error_in_words
from inbox.web.routing import LIVE_PATH

register = template.Library()

CORE_REASONS = {"tool_call": "Tool call", "input_required": "Input required", "confirmation": "Confirmation"}


@register.filter
def pretty_json(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=False, default=str)


@register.filter
def compact_json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(", ", ": "), default=str)


# Reasons agents send besides the core ones, in words (the raw string stays in the badge's title).
WILD_REASONS = {
    "tool_approval": "Tool approval",
    "tool-approval": "Tool approval",
    "mastra:tool_suspend": "Tool approval",
    "ask_question": "Question",
    "ask_user": "Question",
}


def _reason_of(value: Any) -> tuple[str, bool]:
    """(the reason string, whether it is bound to a proposed call) of an item or a bare reason."""
    if isinstance(value, str):
        return value, False
    reason = getattr(value, "reason", "") or ""
    return reason, is_tool_approval(reason, getattr(value, "tool_call_id", "") or "")


@register.filter
def reason_label(value: Any) -> str:
    """An item's reason in words: a core reason's name; "Tool approval" for any interrupt naming a proposed
    call whatever its reason string; a known one of the wild; else the name humanized, its framework after it
    ("langgraph:interrupt" reads "Interrupt (langgraph)")."""
    reason, bound = _reason_of(value)
    if reason in CORE_REASONS:
        return CORE_REASONS[reason]
    if bound or reason in WILD_REASONS:
        return WILD_REASONS.get(reason, "Tool approval")
    framework, _, name = reason.rpartition(":")
    words = re.sub(r"[\s_.-]+", " ", name).strip()
    if not words:
        return reason
    words = words[0].upper() + words[1:]
    return f"{words} ({framework})" if framework else words


@register.filter
def reason_class(value: Any) -> str:
    reason, bound = _reason_of(value)
    if reason in CORE_REASONS:
        return f"reason-{reason.replace('_', '-')}"
    return "reason-tool-call" if bound else "reason-custom"


@register.filter
def message_text(content: Any) -> str:
    """A snapshot message's content: a string, or a list of parts of which the text ones are shown."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = [part.get("text", "") for part in content if isinstance(part, dict) and part.get("type") == "text"]
        if texts:
            return "\n".join(texts)
    return pretty_json(content)


@register.filter
def tool_call_args(tool_call: Any) -> str:
    """An assistant message's toolCalls[i].function.arguments, pretty when it is JSON."""
    arguments = ((tool_call or {}).get("function") or {}).get("arguments", "")
    try:
        return pretty_json(safe_json.loads(arguments, max_depth=MAX_JSON_DEPTH))
    except (TypeError, safe_json.UnsafeJson):
        return str(arguments)


@register.filter
def get_item(mapping: dict, key: str) -> Any:
    return mapping.get(key) if isinstance(mapping, dict) else None


# The words of an age, written once: ``(below this many seconds, words, unit in seconds)``; ``{n}`` is the
# age in units. short_age renders them; the page carries them (``age_steps``) so that a list left open
# keeps its ages current with the same words (inbox.js reads them, it does not know them).
AGE_STEPS: list[tuple[int | None, str, int]] = [
    (60, "just now", 1),
    (3600, "{n} min ago", 60),
    (86400, "{n} h ago", 3600),
    (None, "{n} d ago", 86400),
]


@register.filter
def short_age(value: datetime | None) -> str:
    """ "just now", "4 min ago", "3 h ago", "2 d ago": short enough for a table column."""
    if value is None:
        return ""
    seconds = max(0, int((timezone.now() - value).total_seconds()))
    for below, words, unit in AGE_STEPS:
        if below is None or seconds < below:
            return words.format(n=seconds // unit)
    return ""


@register.filter
def short_remaining(value: datetime | None) -> str:
    """ "5d 4h", "3h 07m", "4m 09s", "expired": what ``inbox.js`` counts down with (``formatRemaining``), so the
    page reads the same before and after its script runs."""
    if value is None:
        return ""
    return remaining_words(int((value - timezone.now()).total_seconds()))


def remaining_words(seconds: int) -> str:
    """ "3d 4h", "2h 05m", "4m 09s" or "expired": the time left as the list's due column counts it down."""
    if seconds <= 0:
        return "expired"
    days, hours, minutes = seconds // 86400, seconds % 86400 // 3600, seconds % 3600 // 60
    if days:
        return f"{days}d {hours}h"
    if hours:
        return f"{hours}h {minutes:02d}m"
    return f"{minutes}m {seconds % 60:02d}s"


@register.filter
def until_words(moment: datetime | None) -> str:
    """A time ahead as people say it in the current time zone: "14:30" today, "tomorrow 09:00", "Mon 09:00"
    within the week, "Dec 14, 09:00" later."""
    if not moment:
        return ""
    local = timezone.localtime(moment)
    days = (local.date() - timezone.localdate()).days
    clock = f"{local:%H:%M}"
    if days <= 0:
        return clock
    if days == 1:
        return f"tomorrow {clock}"
    if days < 7:
        return f"{local:%a} {clock}"
    return f"{local:%b} {local.day}, {clock}"


# The list draws 50 rows a page, each with a few moments and cut texts: these filters give what ``|date:"c"``,
# ``|date:"Y-m-d H:i:s T"`` and ``|truncatechars`` give for them without the general formatter, the Unicode
# normalization and the translation lookups of each call.


@register.filter(expects_localtime=True)
def iso(moment: datetime | None) -> str:
    """``|date:"c"``: the moment (in the current time zone) in ISO 8601."""
    return moment.isoformat() if isinstance(moment, datetime) else ""


@register.filter(expects_localtime=True)
def stamp(moment: datetime | None) -> str:
    """``|date:"Y-m-d H:i:s T"``: the moment (in the current time zone) as people read it."""
    if not isinstance(moment, datetime):
        return ""
    return f"{moment:%Y-%m-%d %H:%M:%S} {moment.tzname() or ''}".rstrip()


@register.filter
def clip(text: Any, length: int) -> str:
    """``|truncatechars``: at most ``length`` characters, the last one "…" when cut."""
    text = str(text)
    return text if len(text) <= length else text[: length - 1] + "…"


@register.simple_tag
def age_steps() -> list[dict[str, Any]]:
    return [{"below": below, "words": words, "unit": unit} for below, words, unit in AGE_STEPS]


@register.filter
def kv_pairs(mapping: Any) -> list[tuple[str, str, bool]]:
    """Top-level (key, text, is_json) pairs of a JSON object, for a readable summary of metadata."""
    if not isinstance(mapping, dict):
        return []
    pairs = []
    for key, value in mapping.items():
        if isinstance(value, str | int | float | bool) or value is None:
            pairs.append((str(key), value if isinstance(value, str) else json.dumps(value), False))
        else:
            pairs.append((str(key), compact_json(value), True))
    return pairs


@register.filter
def duration(value: timedelta | None) -> str:
    """A timedelta as people say it: '1 day', '2 h 30 min', '45 s'."""
    if value is None:
        return ""
    seconds = int(value.total_seconds())
    days, rest = divmod(seconds, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    parts = []
    if days:
        parts.append(f"{days} day{'s' if days != 1 else ''}")
    if hours:
        parts.append(f"{hours} h")
    if minutes:
        parts.append(f"{minutes} min")
    if secs and not days:
        parts.append(f"{secs} s")
    return " ".join(parts) or "0 s"


@register.filter
def initials(user: Any) -> str:
    """Up to two letters for an avatar: from the full name when there is one, else the username."""
    if user is None:
        return ""
    full = " ".join(part for part in (getattr(user, "first_name", ""), getattr(user, "last_name", "")) if part)
    words = [word for word in (full or user.get_username()).replace(".", " ").replace("_", " ").split() if word]
    if len(words) >= 2:
        return (words[0][0] + words[1][0]).upper()
    return (words[0][:2] if words else "?").upper()


@register.filter
def avatar_hue(user: Any) -> int:
    """A stable hue per person (one of 12, 30° apart: app.css styles ``.avatar[data-hue]``), so the same
    teammate keeps the same avatar colour everywhere."""
    name = user.get_username() if user is not None else ""
    return (sum(ord(char) * (index + 1) for index, char in enumerate(name)) % 360) // 30 * 30


@register.filter
def needs_form(item: Any) -> bool:
    """True when a bulk approve/deny cannot decide the item: it needs an answer from its own form."""
    return needs_form_input(item)


@register.filter
def held_by(item: Any, user: Any) -> bool:
    """``{% if item|held_by:user %}``: the viewer holds the item (``InboxItem.held_by``)."""
    return item.held_by(user)


@register.filter
def held_by_other(item: Any, user: Any) -> bool:
    """``{% if item|held_by_other:user %}``: someone else holds the item (``InboxItem.held_by_other``)."""
    return item.held_by_other(user)


@register.filter(name="locked_by_claim")
def locked_by_claim_filter(item: Any, user: Any) -> bool:
    """``{% if item|locked_by_claim:user %}``: someone else's claim stops the viewer deciding the item
    (``inbox.access.locked_by_claim``)."""
    return access.locked_by_claim(user, item)


@register.simple_tag
def limit(name: str) -> int:
    """``{% limit "MAX_DECISION_COMMENT" %}``: a size limit from ``inbox.limits``, so a form's ``maxlength``
    is the number the server enforces. An unknown name fails loudly."""
    value = getattr(limits, name)
    return value() if callable(value) else value


# --- the truth of an item: its run's deadline and where its answer is (ui) ---------------------------------


@register.filter
def run_deadline(item: Any) -> datetime | None:
    """When the item stops being decidable: the earliest expiresAt among its run's items that have not expired
    (``inbox.listing.selectors.with_truth`` annotates it; computed here for an item that was not annotated)."""
    if not isinstance(item, InboxItem):
        return None
    annotated = getattr(item, "run_deadline", None)
    if annotated is not None:
        return min(annotated, item.expires_at)
    first = (
        InboxItem.objects.filter(run_id=item.run_id)
        .exclude(status=InboxItem.Status.EXPIRED)
        .order_by("expires_at")
        .values_list("expires_at", flat=True)
        .first()
    )
    return min(first, item.expires_at) if first else item.expires_at


@register.filter
def delivery(item: Any) -> Delivery | None:
    """``item|delivery``: where the item's answer is (``inbox.resumes.states``), the one source every page,
    row, e-mail and the API draw it from."""
    return delivery_of_item(item) if isinstance(item, InboxItem) else None


@register.filter
def resume_delivery(resume: Resume | None) -> Delivery:
    """``resume|resume_delivery``: the delivery a run's resume row stands for (a run page, an agent's)."""
    return delivery_of_resume(resume)


@register.filter
def delivery_error_words(error: Any) -> str:
    """``resume.last_error|delivery_error_words``: a recorded delivery error as people read it (times readable,
    an agent's RUN_ERROR said as what happened)."""
    return error_in_words(str(error or ""))


@register.filter(name="readable_times")
def readable_times_filter(text: Any) -> str:
    """``notice.last_error|readable_times``: a recorded note with its ISO 8601 times as people read them."""
    return readable_times(str(text or ""))


@register.filter
def delivery_state(item: Any) -> str:
    """The state key of ``item|delivery`` (``inbox.resumes.states``)."""
    found = delivery(item)
    return found.state if found else ""


@register.filter
def delivery_sentence(item: Any) -> str:
    found = delivery(item)
    return found.sentence if found else ""


@register.filter
def event_outcome(event: Any) -> str:
    """An audit event's outcome key (approved, denied, …) for the item-closing verbs, else ''."""
    verb = getattr(event, "verb", "")
    data = getattr(event, "data", None) or {}
    if not isinstance(data, dict):
        return ""
    if verb in ("item.expired", "item.created_expired"):
        return "expired"
    if verb == "item.superseded":
        return "superseded"
    if verb == "item.cancelled":
        return "cancelled"
    if verb == "item.resolved":
        # The outcome judged when the decision was made (events from before it was recorded: the item's).
        return str(data.get("outcome") or getattr(event, "item_outcome", ""))
    return ""


@register.filter
def outcome_label(key: str) -> str:
    return dict(InboxItem.Outcome.choices).get(key, key)


@register.simple_tag
def live_socket_path() -> str:
    """Where pages open their websocket (inbox.web.routing)."""

    return "/" + LIVE_PATH


SOON = timedelta(hours=1)  # an e-mail marks a deadline closer than this


def _moment(value: Any) -> datetime | None:
    if isinstance(value, datetime):
        return value
    try:
        return datetime.fromisoformat(str(value))
    except ValueError:
        return None


@register.filter
def deadline_words(value: Any) -> str:
    """An ``expiresAt`` (datetime or ISO string, as in e-mails and webhooks) for people: "Fri 4 Dec, 14:05 UTC
    (in 25 minutes)"; the string unchanged when it is not a time."""
    moment = _moment(value)
    if moment is None:
        return str(value)
    left = moment - timezone.now()
    when = timezone.localtime(moment).strftime("%a %-d %b, %H:%M %Z")
    if left <= timedelta(0):
        return f"{when} (past)"
    minutes = int(left.total_seconds() // 60)
    if minutes < 60:
        rest = f"{max(minutes, 1)} minute{'s' if minutes != 1 else ''}"
    elif minutes < 48 * 60:
        hours = minutes // 60
        rest = f"{hours} hour{'s' if hours != 1 else ''}"
    else:
        rest = f"{minutes // (24 * 60)} days"
    return f"{when} (in {rest})"


@register.filter
def deadline_is_soon(value: Any) -> bool:
    moment = _moment(value)
    return moment is not None and moment - timezone.now() < SOON


@register.simple_tag(takes_context=True)
def undo_toast(context: template.Context) -> str:
    """``{% undo_toast as html %}``: "Denied: “…” — Undo" while the user's last decisions (the offer the decision
    pages leave in the session) can still be undone; '' once their window closed or they were undone."""
    request = context.get("request")
    session = getattr(request, "session", None)
    if request is None or session is None:
        return ""
    offer = session.get(UNDO_OFFER_SESSION_KEY)
    if not offer or not request.user.is_authenticated:
        return ""
    items = [pk for pk in offer.get("items", []) if isinstance(pk, int)]
    now = timezone.now()
    end = undo_window_end(user=request.user, item_ids=items, now=now)
    if end is None:
        session.pop(UNDO_OFFER_SESSION_KEY, None)
        return ""
    toast = {
        "offer": offer,
        "items": items,
        "until": end,
        "seconds": max(1, round((end - now).total_seconds())),
        "ms": int((end - now).total_seconds() * 1000),
        "next": request.get_full_path(),
    }
    return render_to_string("inbox/_undo_toast.html", toast, request=request)
