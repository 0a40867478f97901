"""The item page's readable JSON: arguments as a field list, edits as a field-by-field word diff
(``inbox.core.json_view``, the diff the tool-call trail shows too), and the decision history as sentences."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django import template
from django.utils import dateformat, timezone

from inbox.agui import emitters
from inbox.core.json_view import DiffLine, args_diff, edit_count, field_rows
from inbox.decisions.forms import TEXT_ANSWER_KEY, asks_for_words, jsonform_can_render, offers_text_answer
from inbox.limits import FIELD_LIST_ROWS
from inbox.models import Decision, InboxItem, edited_args_in

register = template.Library()

MAX_INDENT = 6  # deeper fields are drawn at this indent (the depth is still in the JSON view)
REASON_PREVIEW = 240  # characters of a denial's reason in the history sentence; the rest is under Details


@register.filter
def asked(item: Any) -> str:
    """What the item asks, in the agent's words: its message, or where its emitter writes its question (a
    Strands interrupt's ``reason``; ``inbox.agui.emitters.question_of``); "" when it says nothing."""
    if not isinstance(item, InboxItem):
        return ""
    return emitters.question_of(emitters.Interrupt.of(item))


@register.filter
def proposal(item: Any) -> dict | None:
    """The tool call the item asks about ({"id", "name", "args", "argsText"}), or None when the run has none."""
    return item.proposal if isinstance(item, InboxItem) else None


@register.filter
def proposal_args(item: Any) -> Any:
    """The proposed arguments in the order the agent wrote them."""
    if not isinstance(item, InboxItem):
        return None
    return item.proposed_args


@register.simple_tag
def field_list(value: Any) -> dict[str, Any]:
    """``{% field_list value as fields %}``: ``fields.rows`` (label, text, kind, indent) and ``fields.truncated``."""
    rows, truncated = field_rows(value, limit=FIELD_LIST_ROWS)
    return {
        "rows": [
            {"label": row.label, "text": row.text, "kind": row.kind, "indent": min(row.depth, MAX_INDENT)}
            for row in rows
        ],
        "truncated": truncated,
        "limit": FIELD_LIST_ROWS,
    }


@register.simple_tag
def outcome_diff(item: Any) -> list[DiffLine] | None:
    """The closing answer's edits against the proposal, or None when it is not an approval with edits (edited
    arguments equal to the proposal are a plain approval) or the proposal is unknown (nothing to compare with)."""
    if not isinstance(item, InboxItem):
        return None
    edited = item.edited_args
    proposal = item.proposal
    if edited is None or proposal is None or proposal.get("args") is None:
        return None
    return args_diff(item.proposed_args, edited)


@register.filter
def edited_paths(diff: Any) -> list[str]:
    """The fields an edit changed, added or removed, in the proposal's order."""
    return [line.path for line in diff or [] if line.change != "same"]


@dataclass
class HistoryEntry:
    """One line of the item's history: "<who> <words>[: <reason>]", with details on demand."""

    kind: str  # an outcome key (approved, approved_with_edits, denied, answered, cancelled, expired)
    who: str
    words: str
    at: datetime | None
    reason: str = ""  # a denial's comment, read as part of the sentence
    comment: str = ""  # any other comment, shown under the sentence
    note: str = ""  # e.g. a vote that no longer counts
    diff: list[DiffLine] = field(default_factory=list)
    payload: Any = None
    has_payload: bool = False
    full_reason: str = ""  # a reason too long for the sentence, whole under Details

    @property
    def has_details(self) -> bool:
        return bool(self.diff or self.has_payload or self.full_reason)


def _answer_words(item: InboxItem, payload: Any) -> str:
    in_words = isinstance(payload, str) or (isinstance(payload, dict) and set(payload) == {TEXT_ANSWER_KEY})
    if in_words and (offers_text_answer(item) or asks_for_words(item)):
        return "answered in words"
    if item.response_schema is not None and jsonform_can_render(item.response_schema):
        return "answered the form"
    return "answered"


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}{'' if count == 1 else 's'}"


def _decision_entry(item: InboxItem, decision: Decision, proposal: Any, known: bool) -> HistoryEntry:
    who = decision.user.get_username() if decision.user_id else "(deleted user)"
    entry = HistoryEntry(
        kind="cancelled", who=who, words="cancelled the interrupt", at=decision.created_at, comment=decision.comment
    )
    if decision.withdrawn_at is not None:
        entry.note = f"Undone by {who} {_at(decision.withdrawn_at)}, before anything was sent: it does not count."
    if decision.status == Decision.Status.CANCELLED:
        return entry
    payload = decision.payload
    entry.payload, entry.has_payload = payload, True
    entry.kind = decision.outcome or InboxItem.Outcome.ANSWERED  # as the item's schema judged it when made
    if entry.kind == "denied":
        entry.words, entry.comment = "denied", ""
        reason = decision.comment.strip()
        entry.reason = reason if len(reason) <= REASON_PREVIEW else reason[: REASON_PREVIEW - 1].rstrip() + "…"
        entry.full_reason = reason if entry.reason != reason else ""
    elif entry.kind == "approved_with_edits":
        edited = edited_args_in(payload)
        if known:
            entry.diff = args_diff(proposal, edited)
            count = edit_count(entry.diff)
            entry.words = (
                f"approved with {_plural(count, 'edit')}" if count else "approved with edits that changed nothing"
            )
        else:
            entry.words = "approved with edited arguments"
    elif entry.kind == "answered":
        entry.words = _answer_words(item, payload)
    else:
        entry.words = "approved"
    if not decision.counts and decision.withdrawn_at is None:
        entry.note = "No longer counts: a later edit restarted the approvals."
    return entry


def _at(moment: datetime) -> str:
    return dateformat.format(timezone.localtime(moment), "M j, H:i:s T")


def _closing_entry(item: InboxItem, approvals: int) -> HistoryEntry | None:
    """The item's end when no person's decision was it: expired, or closed by the system."""
    at = item.decided_at or item.expires_at
    when = dateformat.format(timezone.localtime(at), "M j, H:i T") if at else ""
    if item.status == InboxItem.Status.EXPIRED:
        if approvals:
            words = f"Expired at {when}, with {approvals} of {_plural(item.required_approvals, 'approval')}"
        else:
            words = f"Expired at {when}, no one decided"
        return HistoryEntry(kind="expired", who="", words=words, at=None, comment=item.status_note)
    if item.status == InboxItem.Status.CANCELLED and not item.decided_by_id:
        return HistoryEntry(kind="cancelled", who="", words=f"Cancelled at {when}", at=None, comment=item.status_note)
    return None


@register.simple_tag
def item_history(item: Any, decisions: Any) -> list[HistoryEntry]:
    """``{% item_history item decisions as entries %}``: every decision on the item as a sentence ("alice
    approved with 2 edits", "bob denied: too risky", "carol answered the form"), then how the item ended
    when no decision ended it ("Expired at …, no one decided")."""
    if not isinstance(item, InboxItem):
        return []
    proposal_record = item.proposal
    known = proposal_record is not None and proposal_record.get("args") is not None
    proposal = item.proposed_args if known else None
    required = item.required_approvals
    entries, approvals = [], 0
    for decision in decisions or []:
        entry = _decision_entry(item, decision, proposal, known)
        if decision.counts and decision.is_approval:
            approvals += 1
            if required > 1:
                entry.words += f" ({approvals} of {_plural(required, 'approval')})"
        entries.append(entry)
    closing = _closing_entry(item, approvals)
    if closing is not None:
        entries.append(closing)
    return entries
