"""Read paths of the item and run pages: the object if its viewer may see it, the run's items with what
their rows say (``run_items``), the item's neighbours in the list the approver came from, and what the item
page shows about the team (holder, quorum, assignees, discussion)."""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from typing import Any

from django.db.models import Q

from inbox.access import locked_by_claim, overrides_claim, visible_items, visible_runs
from inbox.decisions.shapes import shape_of
from inbox.listing.selectors import SORT_ORDERS, ListFilters, tab_rows
from inbox.models import InboxItem, Resume, Run


def item_for_page(*, user, pk: int) -> InboxItem | None:
    """The item (with its run and the run's resume, in one query) if ``user`` may see it. Its truth
    (``with_truth``'s attributes) is set by ``item_siblings``, which its page reads anyway."""
    items = visible_items(user).select_related(
        "agent", "thread", "run", "run__resume__resumed_run", "decided_by", "claimed_by"
    )
    return items.filter(pk=pk).first()


def run_for_page(*, user, pk: int) -> Run | None:
    """The run (with its resume) if ``user`` may see it."""
    return visible_runs(user).select_related("agent", "thread", "resume__resumed_run").filter(pk=pk).first()


def resume_of(run: Run) -> Resume | None:
    """The run's resume, or None: read once per run object (Django caches the reverse one-to-one, absent
    included), so a page that selected it with the run reads it for free."""
    try:
        return run.resume
    except Resume.DoesNotExist:
        return None


def run_items(run: Run, *, also: tuple[InboxItem, ...] = ()) -> list[InboxItem]:
    """Every item of the run in order, each with ``with_truth``'s attributes computed here from the items
    themselves and the run's resume: the same values, without five correlated subqueries to build and run per
    row (the item and run pages have the whole run in hand). ``also``: other objects of this run's items that
    get the same attributes."""
    items = list(run.items.select_related("decided_by", "claimed_by").order_by("position", "pk"))
    truth = _run_truth(items, resume_of(run))
    for item in items:
        item.run = run  # the same run for every row: no query for item.run
    for item in (*items, *also):
        item.__dict__.update(truth)
    return items


def item_siblings(item: InboxItem) -> list[InboxItem]:
    """``run_items`` of the item's run; the item itself gets the same truth (see ``item_for_page``)."""
    return run_items(item.run, also=(item,))


def _run_truth(items: list[InboxItem], resume: Resume | None) -> dict[str, Any]:
    """``with_truth``'s annotations for any item of a run, from all of the run's items and its resume."""
    return {
        "run_has_open": any(item.status == InboxItem.Status.OPEN for item in items),
        "run_deadline": min(
            (item.expires_at for item in items if item.status != InboxItem.Status.EXPIRED), default=None
        ),
        "delivery": resume.state if resume else None,
        "delivery_error": resume.last_error if resume else None,
        "delivery_attempts": resume.attempts if resume else None,
        "delivery_next_at": resume.next_attempt_at if resume else None,
        "delivery_at": resume.delivered_at if resume else None,
    }


def neighbours_in_list(*, user, filters: ListFilters, item: InboxItem) -> tuple[InboxItem | None, InboxItem | None]:
    """The open items just after and just before ``item`` in the list's order under ``filters`` (the list the
    approver came from; its Decided, Expired or All tab counts as the Open one, since only open items are worked).
    The next one wraps around to the first, so the end of the list still leads somewhere while work remains."""
    worked = replace(filters, tab=filters.tab if filters.tab in ("open", "mine", "snoozed") else "open", page=1)
    # Only ids: with_truth's per-row subqueries (list_rows) made PostgreSQL hash every open item for one row.
    rows = tab_rows(user=user, filters=worked).exclude(pk=item.pk).only("pk", "expires_at")
    ordered = SORT_ORDERS[worked.effective_sort]
    after = _after_in_order(ordered, item)
    rows = rows.order_by(*ordered)
    following = rows.filter(after).first() or rows.first()
    previous = rows.exclude(after).order_by(*(_reversed(field) for field in ordered)).first()
    return following, previous


def _reversed(field: str) -> str:
    return field[1:] if field.startswith("-") else f"-{field}"


def _after_in_order(ordered: tuple[str, ...], item: InboxItem) -> Q:
    """The rows that come after ``item`` in the order ``ordered`` (fields, "-" for descending; the last one
    unique), as a filter: greater on the first field, or equal on it and after on the rest."""
    field, *rest = ordered
    name = field.lstrip("-")
    value = getattr(item, name)
    later = Q(**{f"{name}__{'lt' if field.startswith('-') else 'gt'}": value})
    if not rest:
        return later
    return later | (Q(**{name: value}) & _after_in_order(tuple(rest), item))


def unfiled_results(*, resumed_run: Run | None, items: list[InboxItem]) -> list[dict]:
    """The resumed run's TOOL_CALL_RESULTs that answer no item's tool call: what a non-tool interrupt (a
    Strands ``tool_context.interrupt``, a CrewAI flow step...) led to. Shown on the run page."""
    if resumed_run is None:
        return []
    filed = {cid for item in items for cid in (item.linked_call_id, item.tool_call_id) if cid}
    return [result for result in resumed_run.tool_results or [] if result.get("toolCallId") not in filed]


@dataclass(frozen=True)
class Quorum:
    """``approvals`` of ``required`` distinct approvals of the same answer, and who gave them."""

    required: int
    approvers: list[str]

    @property
    def approvals(self) -> int:
        return len(self.approvers)

    @property
    def remaining(self) -> int:
        return max(0, self.required - self.approvals)

    @property
    def steps(self) -> list[bool]:
        """One entry per approval needed, True where given: the progress dots."""
        return [True] * min(self.approvals, self.required) + [False] * self.remaining


def item_quorum(*, item: InboxItem, decisions: list) -> Quorum | None:
    """The item's quorum when its agent asks for more than one approver; None otherwise. Counts the
    approvals the decision service counts: resolved, non-denying decisions still marked ``counts``."""
    required = item.required_approvals
    if required < 2:
        return None
    votes = [d for d in decisions if d.counts and d.is_approval]
    return Quorum(required=required, approvers=list(dict.fromkeys(d.user.get_username() for d in votes)))


def assignable_users(item: InboxItem) -> list:
    """Who an item can be handed to: active members of its agent's teams (or of the team a policy routed it
    to), and staff (who see everything)."""
    from django.contrib.auth import get_user_model

    teams = [item.routed_team_id] if item.routed_team_id else item.agent.teams.all()
    return list(
        get_user_model()
        .objects.filter(is_active=True)
        .filter(Q(groups__in=teams) | Q(is_staff=True))
        .distinct()
        .order_by("username")
        .only("pk", "username", "first_name", "last_name")
    )


def comments_of(target: InboxItem | Run) -> list:
    """The discussion on an item or a run, oldest first (newest last)."""
    return list(target.comments.select_related("user").order_by("created_at", "pk"))


def my_approval_counts(*, user, item: InboxItem, decisions: list) -> bool:
    """``user`` approved ``item`` with the answer its Approve button sends, and that vote still counts: the
    button would be refused (409 ``already_approved``). Another answer (other edits) is still theirs to give."""
    shape = shape_of(item)
    if shape is None:
        return False
    plain = json.dumps(shape.payload(True), sort_keys=True)
    return any(
        d.user_id == user.pk and d.counts and d.is_approval and json.dumps(d.payload, sort_keys=True) == plain
        for d in decisions
    )


def item_team(*, user, item: InboxItem, decisions: list) -> dict:
    """What the item page shows about the team: who holds the item and whether the viewer may decide it,
    whom it can be handed to, the quorum so far and the discussion."""
    locked = locked_by_claim(user, item)
    may_reassign = item.is_open and not locked
    quorum = item_quorum(item=item, decisions=decisions)
    return {
        # My approval already counts towards the quorum: approving the same answer again would be refused.
        "approve_spent": quorum is not None
        and item.is_open
        and my_approval_counts(user=user, item=item, decisions=decisions),
        "holder_is_me": item.held_by(user),
        # Only the holder decides a claimed item; staff may, and the service audits the override.
        "claim_locked": item.is_open and locked,
        "claim_override": item.is_open and overrides_claim(user, item),
        "may_reassign": may_reassign,
        "assignees": assignable_users(item) if may_reassign else [],
        "quorum": quorum,
        "i_approved": quorum is not None and user.get_username() in quorum.approvers,
        "comments": comments_of(item),
    }
