"""Deciding inbox items: the one write path every page, API call and bulk action goes through.

``decision_submit`` checks (``inbox.decisions.rules``, in order) and then applies: it closes the item, or counts
a vote toward ``InboxItem.required_approvals``. Rows are locked run first, then item, so that decisions on
sibling items serialize and the one that closes the run's last open item creates the resume. docs/deciding.md."""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import Min
from django.utils import timezone

from inbox import access
from inbox.audit.record import Actor, audit
from inbox.core.errors import ApplicationError
from inbox.decisions.rules import (
    BULK_ACTIONS,
    DecisionError,
    check_claim,
    check_comment_length,
    check_edits_offered,
    check_not_requester,
    check_open,
    check_payload,
    check_status,
    check_undoable,
    check_visible,
    schema_for,
    undo_reopens,
)
from inbox.decisions.shapes import EDIT_KEYS, bulk_payload, outcome_for
from inbox.expiry.services import expire_items, expire_runs, run_is_past_expiry
from inbox.limits import MAX_BULK_ITEMS, MAX_DECISION_COMMENT
from inbox.live import push as live
from inbox.models import Decision, DecisionVia, InboxItem, Run
from inbox.resumes.services import resume_create_if_complete, resume_withdraw


@dataclass
class DecisionOutcome:
    item: InboxItem
    decision: Decision
    closed: bool
    approvals: int = 1
    required: int = 1
    warnings: list[str] = field(default_factory=list)


def _canonical(payload: Any) -> str:
    return json.dumps(payload, sort_keys=True, separators=(",", ":"))


def _answer_key(payload: Any, outcome: str) -> str:
    """What a quorum compares: the answer, where a plain approval's edit key (the proposal, unchanged, as "Approve
    with edits" without an edit sends it) is no different from the button's approval."""
    if outcome == InboxItem.Outcome.APPROVED and isinstance(payload, dict):
        payload = {key: value for key, value in payload.items() if key not in EDIT_KEYS}
    return _canonical(payload)


@dataclass(frozen=True)
class DecidedBy:
    """Who decides besides a person: an auto-decision policy (inbox.policies) acting through its service
    account. ``counts_as_approver`` says whether its approval is one of a quorum's approvals."""

    label: str
    audit_data: dict
    counts_as_approver: bool


def decision_submit(
    *,
    item_id: int,
    user,
    status: Any,
    payload: Any = None,
    comment: str = "",
    undoable: bool = False,
    via: str = DecisionVia.API,
) -> DecisionOutcome:
    """A person decides. ``undoable``: they may undo it for ``INBOX_UNDO_SECONDS`` (``decision_undo``), and
    nothing of the run is sent before that window closes. ``via``: how (a ``DecisionVia``), for review quality."""
    check_visible(item_id, user)
    return _decide(
        item_id=item_id, user=user, status=status, payload=payload, comment=comment, undoable=undoable, via=via
    )


def decision_by_policy(
    *, item_id: int, user, status: str, payload: Any, comment: str, decided_by: DecidedBy
) -> DecisionOutcome:
    """An auto-decision policy decides: the same rules as a person (open, expiry, claims, schema, quorum),
    with the policy's service account as the decider. The policy's scope replaces visibility."""
    return _decide(
        item_id=item_id,
        user=user,
        status=status,
        payload=payload,
        comment=comment,
        decided_by=decided_by,
        via=DecisionVia.POLICY,
    )


def _decide(
    *,
    item_id: int,
    user,
    status: Any,
    payload: Any,
    comment: str,
    decided_by: DecidedBy | None = None,
    undoable: bool = False,
    via: str = DecisionVia.API,
) -> DecisionOutcome:
    check_status(status, payload)
    comment = (comment or "").strip()
    check_comment_length(comment, limit=MAX_DECISION_COMMENT, path="comment")
    # The answer is checked here, before any row is locked: a costly schema never holds the run's lock.
    # An item's schema never changes, so the result still holds inside the transaction, where it is
    # raised in the rules' order (after the cheap checks of state, expiry, claim and requester).
    found = (
        InboxItem.objects.filter(pk=item_id)
        .values_list("response_schema", "reason", "tool_call_id", "metadata", "message")
        .first()
    )
    if found is None:
        raise DecisionError(404, "not_found", "No such item.")
    schema = schema_for(*found)
    payload_error = check_edits_offered(status, payload, schema) or check_payload(status, payload, schema)
    expired_now = False
    with transaction.atomic():
        run_pk = InboxItem.objects.values_list("run_id", flat=True).get(pk=item_id)
        run = Run.objects.select_for_update().get(pk=run_pk)
        item = (
            InboxItem.objects.select_for_update(of=("self",))
            .select_related("agent", "decided_by", "claimed_by")
            .get(pk=item_id)
        )
        item.run = run
        check_open(item)
        now = timezone.now()
        # A sibling past its expiresAt (even one already decided) means the run can never be resumed.
        lapsed_sibling = item.expires_at > now and run_is_past_expiry(run_id=run.pk, now=now)
        if item.expires_at <= now or lapsed_sibling:
            _expire_on_decide(item=item, now=now)
            expired_now = True
        else:
            first_expiry = _check_send_margin(run=run, now=now)
            overrode = check_claim(item, user)
            # What the answer means, judged once by the item's schema (a small bounded check): the self-approval
            # rule, the quorum, the item, the audit trail and every page read this verdict.
            meaning = outcome_for(item, status, payload)
            check_not_requester(item, user, meaning)
            if payload_error is not None:
                raise payload_error
            outcome = _apply(
                item=item,
                user=user,
                status=status,
                payload=payload,
                meaning=meaning,
                comment=comment,
                now=now,
                overrode=overrode,
                decided_by=decided_by,
                undo_until=undo_deadline(now=now, first_expiry=first_expiry) if undoable else None,
                via=via,
            )
    if expired_now:
        if lapsed_sibling:
            raise DecisionError(
                409,
                "expired",
                "Another interrupt of this run is past its expiresAt, so the run "
                "can no longer be resumed; this item was closed as expired.",
                state="expired",
            )
        raise DecisionError(409, "expired", f"This item expired at {item.expires_at.isoformat()}.", state="expired")
    return outcome


@dataclass
class RunChoice:
    """One interrupt's decision in a run-wide submit."""

    item: InboxItem
    status: str
    payload: Any = None


def decision_submit_run(
    *, run: Run, user, choices: list[RunChoice], comment: str = "", undoable: bool = False, via: str = DecisionVia.RUN
) -> list[DecisionOutcome]:
    """Decide several interrupts of one run in one go: all of them are stored, or none (the first refusal
    rolls the others back and names its interrupt)."""
    if not choices:
        raise DecisionError(400, "no_choice", "Choose a decision for at least one interrupt.")
    outcomes = []
    with transaction.atomic():
        for choice in choices:
            if choice.item.run_id != run.pk:
                raise DecisionError(400, "not_in_run", f"{choice.item.interrupt_id} is not an interrupt of this run.")
            try:
                outcomes.append(
                    decision_submit(
                        item_id=choice.item.pk,
                        user=user,
                        status=choice.status,
                        payload=choice.payload,
                        comment=comment,
                        undoable=undoable,
                        via=via,
                    )
                )
            except DecisionError as error:
                error.message = f"{choice.item.interrupt_id}: {error.message}"
                raise
    return outcomes


def send_margin_seconds() -> float:
    """How long before its run's first ``expiresAt`` a decision can still reach the agent (settings)."""
    return max(settings.INBOX_DECISION_SEND_MARGIN_SECONDS, settings.INBOX_RESUME_EXPIRY_MARGIN_SECONDS)


def undo_deadline(*, now: datetime, first_expiry: datetime | None) -> datetime | None:
    """Until when a decision made ``now`` may be undone: ``INBOX_UNDO_SECONDS``, shortened so that the resume,
    which waits for it, still leaves the send margin before the run's first ``expiresAt``. None: no undo."""
    seconds = settings.INBOX_UNDO_SECONDS
    if seconds <= 0:
        return None
    until = now + timedelta(seconds=seconds)
    if first_expiry is not None:
        until = min(until, first_expiry - timedelta(seconds=send_margin_seconds()))
    return until if until > now else None


def _check_send_margin(*, run: Run, now: datetime) -> datetime | None:
    """409 ``too_close_to_deadline`` when the resume this decision feeds could not be sent before the run's first
    ``expiresAt`` (decided siblings count: their lapse closes the run too). A 201 means the answer will be sent.
    Returns that first ``expiresAt``."""
    first = InboxItem.objects.filter(run_id=run.pk).aggregate(first=Min("expires_at"))["first"]
    margin = send_margin_seconds()
    if first is not None and first <= now + timedelta(seconds=margin):
        left = max((first - now).total_seconds(), 0.0)
        raise DecisionError(
            409,
            "too_close_to_deadline",
            f"This decision is too close to its deadline to reach the agent: the run expires at {first.isoformat()} "
            f"({left:.1f} s from now) and sending the answer needs {margin:g} s. Nothing was decided.",
            state="open",
            expiresAt=first.isoformat(),
            marginSeconds=margin,
        )
    return first


def _expire_on_decide(*, item: InboxItem, now) -> None:
    """Close the item as expired and its run as no longer resumable; committed even though the decision fails."""

    expire_items(items_qs=InboxItem.objects.filter(pk=item.pk), now=now, note="expired before it was decided")
    expire_runs(run_ids=[item.run_id], now=now)


def _apply(
    *,
    item: InboxItem,
    user,
    status: str,
    payload: Any,
    meaning: str,
    comment: str,
    now,
    overrode: bool,
    decided_by: DecidedBy | None = None,
    undo_until: datetime | None = None,
    via: str = DecisionVia.API,
) -> DecisionOutcome:
    required = item.required_approvals
    approving = status == Decision.Status.RESOLVED and meaning != InboxItem.Outcome.DENIED
    actor = Actor.for_user(user)
    if decided_by is not None:
        actor = dataclasses.replace(actor, label=decided_by.label)
    if approving and required > 1 and decided_by is not None and not decided_by.counts_as_approver:
        # A policy's approval is one of the quorum only when the policy says so: otherwise it is on record
        # and the item still waits for every approval from people.
        decision = Decision.objects.create(
            item=item,
            user=user,
            status=status,
            payload=payload,
            comment=comment,
            counts=False,
            created_at=now,
            via=via,
            outcome=meaning,
        )
        approvals = item.decisions.filter(counts=True, status=Decision.Status.RESOLVED).count()
        audit(
            actor=actor,
            verb="item.approval_recorded",
            obj=item,
            data={
                "status": status,
                "payload": payload,
                "outcome": meaning,
                "comment": comment,
                "counted": False,
                "approvals": approvals,
                "required": required,
                **decided_by.audit_data,
            },
        )
        return DecisionOutcome(item=item, decision=decision, closed=False, approvals=approvals, required=required)
    if approving and required > 1:
        votes = list(item.decisions.filter(counts=True, status=Decision.Status.RESOLVED))
        answer = _answer_key(payload, meaning)
        same = [vote for vote in votes if _answer_key(vote.payload, vote.outcome) == answer]
        if len(same) != len(votes):
            # A different answer restarts the count: earlier approvals no longer count towards it.
            item.decisions.filter(counts=True).update(counts=False)
            same = []
        if any(vote.user_id == user.pk for vote in same):
            raise DecisionError(
                409,
                "already_approved",
                "You already approved this answer; another approver must.",
                approvals=len(same),
                required=required,
            )
        approvals = len({vote.user_id for vote in same}) + 1
    else:
        approvals = required
    decision = Decision.objects.create(
        item=item,
        user=user,
        status=status,
        payload=payload if status == Decision.Status.RESOLVED else None,
        comment=comment,
        final=approvals >= required,
        created_at=now,
        undo_until=undo_until,
        via=via,
        outcome=meaning,
    )
    data = {
        "status": status,
        "payload": decision.payload,
        "outcome": meaning,
        "comment": comment,
        "approvals": approvals,
        "required": required,
        **(decided_by.audit_data if decided_by is not None else {}),
    }
    if undo_until is not None:
        data["undoUntil"] = undo_until.isoformat()
    if overrode and item.claimed_by is not None:
        data["overrodeClaimOf"] = item.claimed_by.get_username()
    if approvals < required:
        audit(actor=actor, verb="item.approval_recorded", obj=item, data=data)
        live.publish_on_commit(
            live.groups_for(
                agent_id=item.agent_id, item_id=item.pk, run_id=item.run_id, team_ids=[item.routed_team_id]
            ),
            "item.vote",
            {
                "item": item.pk,
                "run": item.run_id,
                "approvals": approvals,
                "required": required,
                "by": user.get_username(),
            },
        )
        return DecisionOutcome(item=item, decision=decision, closed=False, approvals=approvals, required=required)

    item.status = status
    item.response_payload = decision.payload
    item.decided_by = user
    item.decided_at = now
    item.decision_comment = comment
    item.outcome = meaning
    item.save(update_fields=["status", "outcome", "response_payload", "decided_by", "decided_at", "decision_comment"])
    audit(actor=actor, verb=f"item.{status}", obj=item, data=data)
    live.publish_on_commit(
        live.groups_for(agent_id=item.agent_id, item_id=item.pk, run_id=item.run_id, team_ids=[item.routed_team_id]),
        "item.decided",
        {
            "item": item.pk,
            "run": item.run_id,
            "status": status,
            "outcome": item.outcome,
            "decidedBy": user.get_username(),
            "decidedAt": now.isoformat(),
        },
    )

    resume_create_if_complete(run=item.run)
    return DecisionOutcome(item=item, decision=decision, closed=True, approvals=approvals, required=required)


def decision_bulk(
    *,
    item_ids: list[int],
    user,
    action: str,
    comment: str = "",
    undoable: bool = False,
    via: str = DecisionVia.BULK,
) -> list[dict]:
    """Decide many items, each in its own transaction with its own decision and audit event; one failure
    does not block the rest. Returns one result per id, in order. ``via``: bulk, or a key from the list."""
    if action not in BULK_ACTIONS:
        raise DecisionError(
            400,
            "invalid_action",
            f"action must be one of {', '.join(BULK_ACTIONS)}.",
            [{"path": "action", "message": f"{action!r} is not a bulk action"}],
        )
    if len(item_ids) > MAX_BULK_ITEMS:
        raise DecisionError(
            400,
            "too_many_items",
            f"At most {MAX_BULK_ITEMS} items at once.",
            [{"path": "ids", "message": f"at most {MAX_BULK_ITEMS} items at once"}],
        )
    check_comment_length((comment or "").strip(), limit=MAX_DECISION_COMMENT, path="comment")
    results = []
    items = {item.pk: item for item in access.visible_items(user).filter(pk__in=item_ids)}
    for item_id in dict.fromkeys(item_ids):
        item = items.get(item_id)
        if item is None:
            results.append({"id": item_id, "ok": False, "error": "not_found", "detail": "No such item."})
            continue
        answer = bulk_payload(item, action)
        if answer is None:
            results.append(
                {
                    "id": item_id,
                    "ok": False,
                    "error": "needs_input",
                    "detail": "This item needs an answer from its form; open it to decide.",
                }
            )
            continue
        status, payload = answer
        try:
            outcome = decision_submit(
                item_id=item_id,
                user=user,
                status=status,
                payload=payload,
                comment=comment,
                undoable=undoable,
                via=via,
            )
        except DecisionError as error:
            results.append({"id": item_id, "ok": False, "error": error.code, "detail": error.message})
        else:
            until = outcome.decision.undo_until
            results.append(
                {
                    "id": item_id,
                    "ok": True,
                    "status": outcome.item.status,
                    "closed": outcome.closed,
                    "undoUntil": until.isoformat() if until else None,
                }
            )
    return results


@dataclass
class UndoOutcome:
    item: InboxItem
    decision: Decision
    reopened: bool


def decision_undo(*, item_id: int, user) -> UndoOutcome:
    """The decider takes back their latest decision on an item within its undo window, while nothing of the run has
    been sent. The decision stays on record, withdrawn (it no longer counts); the item opens again when the
    decision closed it (or was one of the approvals that met its quorum), and the run's resume, held for the
    window, is withdrawn unsent. Other people's decisions stand. Refused with 409 ``nothing_to_undo``, or
    ``too_late`` when the window closed or a worker already claimed the resume."""
    check_visible(item_id, user)
    with transaction.atomic():
        # Locked as deciding locks them (run, then item): an undo and a sibling's decision serialize.
        run_pk = InboxItem.objects.values_list("run_id", flat=True).get(pk=item_id)
        run = Run.objects.select_for_update().get(pk=run_pk)
        item = InboxItem.objects.select_for_update(of=("self",)).select_related("agent").get(pk=item_id)
        item.run = run
        now = timezone.now()
        decision = check_undoable(item, user, now)
        reopened = undo_reopens(item, decision)
        was = {"status": item.status, "outcome": item.outcome}
        if reopened:
            resume_withdraw(
                run=run, user=user, note=f"{user.get_username()} undid their decision on {item.interrupt_id}"
            )
            item.decisions.filter(final=True).update(final=False)
            item.status, item.outcome, item.response_payload = InboxItem.Status.OPEN, "", None
            item.decided_by, item.decided_at, item.decision_comment = None, None, ""
            item.save(
                update_fields=["status", "outcome", "response_payload", "decided_by", "decided_at", "decision_comment"]
            )
        decision.withdrawn_at, decision.counts = now, False
        decision.save(update_fields=["withdrawn_at", "counts"])
        data = {
            "decision": decision.pk,
            "status": decision.status,
            "payload": decision.payload,
            "decidedAt": decision.created_at.isoformat(),
            "reopened": reopened,
            "was": was,
        }
        audit(actor=Actor.for_user(user), verb="item.decision_undone", obj=item, data=data)
        live.publish_on_commit(
            live.groups_for(
                agent_id=item.agent_id, item_id=item.pk, run_id=item.run_id, team_ids=[item.routed_team_id]
            ),
            "item.undone",
            {"item": item.pk, "run": item.run_id, "by": user.get_username(), "reopened": reopened},
        )
    return UndoOutcome(item=item, decision=decision, reopened=reopened)


def decision_undo_many(*, item_ids: list[int], user) -> list[dict]:
    """Undo the user's decisions on several items (a bulk action's), each on its own; one refusal does not stop
    the rest. One result per id, in order."""
    results = []
    for item_id in dict.fromkeys(item_ids[:MAX_BULK_ITEMS]):
        try:
            outcome = decision_undo(item_id=item_id, user=user)
        except ApplicationError as error:
            results.append({"id": item_id, "ok": False, "error": error.code, "detail": error.message})
        else:
            results.append({"id": item_id, "ok": True, "reopened": outcome.reopened})
    return results
