"""The rules of deciding, apart from the writes that apply them (``inbox.decisions.services``): who may decide
(visibility, the claim, no self-approval), what may be decided (a valid status, the item still open, the answer
valid against its schema and within its limits), what a bulk action can decide, and the refusal they raise.
Nothing here writes; pages, exports and other packages read these rules from here."""

from __future__ import annotations

import ast
import json
import re
from datetime import datetime
from typing import Any

import jsonschema
import re2
import referencing.exceptions
from django.conf import settings
from django.db.models import Min

from inbox import access
from inbox.agui import emitters
from inbox.core import jsonschema_safe, schema_view
from inbox.core.errors import ApplicationError
from inbox.core.safe_json import UnsafeJson, check_text, check_value
from inbox.decisions.wording import in_words
from inbox.limits import MAX_JSON_DEPTH
from inbox.models import EDIT_KEYS, Decision, InboxItem

BOOLEAN_APPROVAL_SCHEMA: dict = {
    "type": "object",
    "properties": {"approved": {"type": "boolean"}},
    "required": ["approved"],
}


def check_comment_length(text: str, *, limit: int, path: str) -> None:
    """At most ``limit`` characters, and none the database cannot store (NUL, lone surrogates)."""
    check_comment_text(text, path=path)
    if len(text) > limit:
        raise DecisionError(
            400,
            "invalid_comment",
            f"A comment is at most {limit} characters ({len(text)} given).",
            [{"path": path, "message": f"must be at most {limit} characters"}],
        )


def check_comment_text(text: str, *, path: str) -> None:
    try:
        check_text(text, path)
    except UnsafeJson as exc:
        raise DecisionError(400, "invalid_comment", exc.message, [{"path": path, "message": exc.message}]) from None


class DecisionError(ApplicationError):
    """A refused decision, claim, assignment or comment; ``errors`` are ``[{"path", "message"}]``."""

    def __init__(self, status: int, code: str, message: str, errors: list[dict] | None = None, **extra: Any):
        super().__init__(status, code, message, errors=errors, **extra)


def default_schema_for(item: InboxItem) -> dict | None:
    """The schema an answer is validated against: the interrupt's own, the one its known emitter's resume code
    reads (``inbox.agui.emitters``), or the spec's boolean default for tool approvals and confirmations. None
    means any JSON value is accepted."""
    return schema_for(item.response_schema, item.reason, item.tool_call_id, item.metadata, item.message)


def is_tool_approval(reason: str, tool_call_id: str = "") -> bool:
    """A tool approval, whatever its reason string: ``tool_call`` (the spec's), or any interrupt bound to a
    proposed call by its ``toolCallId`` (``tool-approval``, ``tool_approval``, ``mastra:tool_suspend``, ...)."""
    return reason == "tool_call" or bool(tool_call_id)


def schema_for(
    response_schema: Any, reason: str, tool_call_id: str = "", metadata: Any = None, message: str = ""
) -> dict | None:
    if response_schema is not None:
        return response_schema
    implied = emitters.implied_schema(
        emitters.Interrupt(reason=reason, message=message or "", tool_call_id=tool_call_id or "", metadata=metadata)
    )
    if implied is not None:
        return implied
    if reason == "confirmation" or is_tool_approval(reason, tool_call_id):
        return BOOLEAN_APPROVAL_SCHEMA
    return None


def check_edits_offered(status: Any, payload: Any, schema: dict | None) -> DecisionError | None:
    """The refusal of edited arguments the interrupt did not offer, or None. The spec makes ``editedArgs`` in
    the ``responseSchema`` the capability signal for approve-with-edits: an agent whose schema lacks it (or that
    sent none) runs its original arguments whatever is sent, so an answer carrying them would be a lie."""
    if status != Decision.Status.RESOLVED or not isinstance(payload, dict):
        return None
    # Offered however the schema offers it: its own properties, a union's branch, an allOf member, a local $ref.
    offered = schema_view.property_names(schema) & set(EDIT_KEYS) if isinstance(schema, dict) else set()
    for key in EDIT_KEYS:
        if key in payload and key not in offered:
            message = (
                f"This interrupt does not offer edits: its responseSchema has no '{key}' property (the capability "
                f"signal for approve-with-edits), so the agent would run its original arguments. Send the answer "
                f"without '{key}'."
            )
            return DecisionError(400, "edits_not_offered", message, [{"path": key, "message": message}])
    return None


_REQUIRED_SUFFIX = " is a required property"


def _error_path(error: jsonschema.ValidationError) -> str:
    path = list(error.absolute_path)
    # A missing required property is reported on its parent; point at the property itself. jsonschema reports
    # each missing one in an error of its own whose message starts with the name's repr (every error carries
    # the whole list, so searching it for the name would make a wide ``required`` quadratic).
    if error.validator == "required" and error.message.endswith(_REQUIRED_SUFFIX):
        try:
            missing = ast.literal_eval(error.message.removesuffix(_REQUIRED_SUFFIX))
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            missing = None
        if isinstance(missing, str):
            path.append(missing)
    return ".".join(str(part) for part in path)


# What applying a stored schema can raise that is the schema's fault, not the inbox's: an unresolvable $ref,
# a type or format the validator does not know, a pattern that is not a regular expression. Anything else
# is a bug and must surface as one (a 500 and a logged traceback), not as a refused answer.
SCHEMA_APPLICATION_ERRORS = (
    jsonschema.exceptions.SchemaError,
    jsonschema.exceptions.UnknownType,
    jsonschema.exceptions.FormatError,
    referencing.exceptions.Unresolvable,
    re.error,
    re2.error,
)


def validate_payload(schema: dict | None, payload: Any) -> list[dict]:
    """Every problem with ``payload`` under ``schema``: ``[{"path": "year", "message": ...}]``.
    No ``$ref`` is ever fetched, patterns match in linear time and the work is bounded
    (``inbox.core.jsonschema_safe``): an unresolvable reference or a too costly check is reported as an error."""
    if schema is None:
        return []
    try:
        errors = sorted(jsonschema_safe.iter_errors(schema, payload), key=lambda e: (list(e.absolute_path), e.message))
        return [{"path": _error_path(error), "message": in_words(error)} for error in errors]
    except jsonschema_safe.ValidationTooCostly as exc:
        return [{"path": "", "message": f"checking this answer against its schema takes more than {exc}"}]
    except RecursionError:
        return [{"path": "", "message": "the answer or its schema is nested too deeply to check"}]
    except SCHEMA_APPLICATION_ERRORS as exc:  # a schema jsonschema cannot apply, or a $ref (never fetched)
        return [{"path": "", "message": f"the schema cannot be applied: {exc.__class__.__name__}: {exc}"}]


def check_payload(status: Any, payload: Any, schema: dict | None) -> DecisionError | None:
    """The refusal of a ``resolved`` payload (too large, unsafe or invalid against ``schema``), or None.
    Runs before any row is locked; the caller raises it in the rules' order."""
    if status != Decision.Status.RESOLVED:
        return None
    limit = settings.INBOX_DECISION_MAX_BYTES
    try:
        check_value(payload, "payload", max_depth=MAX_JSON_DEPTH)
        size = len(json.dumps(payload, separators=(",", ":"), ensure_ascii=False).encode())
    except UnsafeJson as exc:
        return DecisionError(400, "invalid_payload", exc.message, [{"path": exc.path, "message": exc.message}])
    except (RecursionError, ValueError, TypeError):
        message = "The answer cannot be stored as JSON."
        return DecisionError(400, "invalid_payload", message, [{"path": "payload", "message": message}])
    if size > limit:
        message = f"The answer is {size} bytes; the limit is {limit} bytes (INBOX_DECISION_MAX_BYTES)."
        return DecisionError(413, "payload_too_large", message, [{"path": "payload", "message": message}])
    errors = validate_payload(schema, payload)
    if errors:
        first = errors[0]
        where = f" at '{first['path']}'" if first["path"] else ""
        return DecisionError(
            400, "invalid_payload", f"The answer does not match the schema{where}: {first['message']}", errors
        )
    return None


def requester_of(item: InboxItem) -> str:
    metadata = item.metadata if isinstance(item.metadata, dict) else {}
    value = metadata.get("requestedBy")
    return value.strip() if isinstance(value, str) and value.strip() else item.run.requested_by


def is_requester(user, requester: str) -> bool:
    """``user`` is the person who asked for the action (by username or email)."""
    if not requester:
        return False
    names = {user.get_username().lower()}
    if getattr(user, "email", ""):
        names.add(user.email.lower())
    return requester.lower() in names


def check_status(status: Any, payload: Any) -> None:
    if status not in (Decision.Status.RESOLVED, Decision.Status.CANCELLED):
        raise DecisionError(
            400,
            "invalid_status",
            "status must be 'resolved' or 'cancelled'.",
            [{"path": "status", "message": f"{status!r} is not one of 'resolved', 'cancelled'"}],
        )
    if status == Decision.Status.CANCELLED and payload is not None:
        raise DecisionError(
            400,
            "invalid_payload",
            "A cancelled decision carries no payload.",
            [{"path": "payload", "message": "must be omitted when status is 'cancelled'"}],
        )


def check_open(item: InboxItem) -> None:
    if item.status == InboxItem.Status.OPEN:
        return
    extra: dict[str, Any] = {"state": item.status}
    if item.is_decided:
        extra["decision"] = {
            "status": item.status,
            "payload": item.response_payload,
            "decidedBy": item.decided_by.get_username() if item.decided_by is not None else None,
            "decidedAt": item.decided_at.isoformat() if item.decided_at else None,
            "comment": item.decision_comment,
        }
    if item.status == InboxItem.Status.EXPIRED:
        extra["note"] = item.status_note
        raise DecisionError(409, "expired", f"This item expired at {item.expires_at.isoformat()}.", **extra)
    raise DecisionError(409, "not_open", f"This item is already {item.status}.", **extra)


def check_claim(item: InboxItem, user) -> bool:
    """True when staff override someone else's claim (recorded in the audit)."""
    if not access.locked_by_claim(user, item):
        return access.overrides_claim(user, item)
    assert item.claimed_by is not None  # locked by a claim: someone holds it
    raise DecisionError(
        403,
        "claimed",
        f"{item.claimed_by.get_username()} holds this item; only they decide it.",
        claimedBy=item.claimed_by.get_username(),
    )


def check_not_requester(item: InboxItem, user, outcome: str) -> None:
    """The requester may deny or cancel their own action, never approve it (nor answer for it). ``outcome`` is the
    decision's meaning as the item's schema judges it (``inbox.decisions.shapes.outcome_for``)."""
    if outcome in (InboxItem.Outcome.DENIED, InboxItem.Outcome.CANCELLED):
        return
    if is_requester(user, requester_of(item)):
        raise DecisionError(403, "self_approval", "You asked for this action, so someone else must approve it.")


# The session key of the pages' Undo offer: {"items": [ids], "words": "Denied: “…”"} (``decisions.views``).
UNDO_OFFER_SESSION_KEY = "undo_offer"


def undo_window_end(*, user, item_ids: list[int], now: datetime) -> datetime | None:
    """When the user's open undo windows on these items close (the earliest); None when nothing can be undone."""
    return (
        Decision.objects.filter(user=user, item_id__in=item_ids, withdrawn_at__isnull=True, undo_until__gt=now)
        .aggregate(end=Min("undo_until"))
        .get("end")
    )


def undoable_decision(item: InboxItem, user) -> Decision | None:
    """The user's latest decision on ``item`` that was made undoable and is not withdrawn (its window may be over)."""
    return (
        item.decisions.filter(user=user, withdrawn_at__isnull=True, undo_until__isnull=False)
        .order_by("-created_at", "-pk")
        .first()
    )


def check_undoable(item: InboxItem, user, now: datetime) -> Decision:
    """The decision ``user`` may undo on ``item`` now: their own, made undoable, not withdrawn, and within its
    window (``Decision.undo_until``). 409 ``nothing_to_undo`` or ``too_late``."""
    decision = undoable_decision(item, user)
    if decision is None:
        raise DecisionError(
            409, "nothing_to_undo", "You have no decision on this item that can be undone.", state=item.status
        )
    if decision.undo_until is not None and decision.undo_until <= now:
        raise DecisionError(
            409,
            "too_late",
            f"Too late to undo: the undo window closed at {decision.undo_until.isoformat()} and the answer "
            "goes to the agent.",
            state=item.status,
            undoUntil=decision.undo_until.isoformat(),
        )
    return decision


def undo_reopens(item: InboxItem, decision: Decision) -> bool:
    """Whether withdrawing ``decision`` opens ``item`` again: it closed the item, or it was one of the approvals
    that together met the quorum. A vote on an item someone else denied or cancelled leaves it closed."""
    if item.status not in InboxItem.DECIDED:
        return False
    if decision.final:
        return True
    return item.status == InboxItem.Status.RESOLVED and not item.is_denial and decision.counts and decision.is_approval


def check_visible(item_id: int, user) -> None:
    """What the user may not see does not exist for them: 404, before anything about the request is judged."""
    if not access.may_see(user, "item", item_id):
        raise DecisionError(404, "not_found", "No such item.")


# What a bulk action may do; approve and deny send each item's own yes/no shape (``inbox.decisions.shapes``).
BULK_ACTIONS = ("approve", "deny", "cancel")
