"""Claims: who holds an open item (claim, release, assign). Every change is audited and pushed live."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.db import transaction
from django.utils import timezone

from inbox import access
from inbox.audit.record import Actor, audit
from inbox.decisions.rules import DecisionError, check_open, check_visible
from inbox.live import push as live
from inbox.models import InboxItem
from inbox.teams.away import away_of, delegation_note, holder_for, tell_delegate


def _locked_visible_item(*, item_id: int, user) -> InboxItem:
    check_visible(item_id, user)
    item = InboxItem.objects.select_for_update(of=("self",)).select_related("claimed_by").get(pk=item_id)
    check_open(item)
    return item


def _set_claim(*, item: InboxItem, holder, actor_user, verb: str, note: dict | None = None) -> InboxItem:
    previous = item.claimed_by.get_username() if item.claimed_by is not None else None
    item.claimed_by = holder
    item.claimed_at = timezone.now() if holder else None
    item.save(update_fields=["claimed_by", "claimed_at"])
    audit(
        actor=Actor.for_user(actor_user),
        verb=verb,
        obj=item,
        data={"holder": holder.get_username() if holder else None, "previous": previous, **(note or {})},
    )
    live.publish_on_commit(
        live.groups_for(agent_id=item.agent_id, item_id=item.pk, run_id=item.run_id, team_ids=[item.routed_team_id]),
        "item.claimed",
        {"item": item.pk, "run": item.run_id, "claimedBy": holder.get_username() if holder else None},
    )
    return item


@transaction.atomic
def item_claim(*, item_id: int, user) -> InboxItem:
    item = _locked_visible_item(item_id=item_id, user=user)
    if access.locked_by_claim(user, item) and item.claimed_by is not None:
        holder = item.claimed_by.get_username()
        away = away_of(user)
        if away is not None and away.delegate_id == item.claimed_by_id:
            message = f"You are away: {holder}, your delegate, holds this item until {away.ends_at:%Y-%m-%d %H:%M}."
        else:
            message = f"{holder} already holds this item."
        raise DecisionError(409, "claimed", message, claimedBy=holder)
    # Someone away who claims an item hands it to their delegate (inbox.teams.away), who is told.
    holder, away = holder_for(user, item, field="claim")
    note = delegation_note(away) if away else None
    item = _set_claim(item=item, holder=holder, actor_user=user, verb="item.claimed", note=note)
    if away is not None:
        tell_delegate(away=away, items=[item])
    return item


@transaction.atomic
def item_unclaim(*, item_id: int, user) -> InboxItem:
    item = _locked_visible_item(item_id=item_id, user=user)
    if item.claimed_by_id is None:
        return item
    if access.locked_by_claim(user, item):
        raise DecisionError(403, "claimed", "Only the holder or staff can release this claim.")
    return _set_claim(item=item, holder=None, actor_user=user, verb="item.unclaimed")


def assignee_named(username: str | None) -> Any:
    """The active user an item is to be handed to, by username."""
    username = (username or "").strip()
    assignee = get_user_model().objects.filter(username=username, is_active=True).first() if username else None
    if assignee is None:
        message = "Choose a teammate." if not username else f"No active user {username!r}."
        raise DecisionError(
            400,
            "invalid_assignee",
            "Choose a teammate to assign this item to." if not username else message,
            [{"path": "assignee", "message": message}],
        )
    return assignee


@transaction.atomic
def item_assign(*, item_id: int, user, assignee) -> InboxItem:
    item = _locked_visible_item(item_id=item_id, user=user)
    if access.locked_by_claim(user, item):
        raise DecisionError(403, "claimed", "Only the holder or staff can reassign this item.")
    if not access.visible_items(assignee).filter(pk=item_id).exists():
        raise DecisionError(
            400,
            "invalid_assignee",
            f"{assignee.get_username()} cannot see this item's agent.",
            [{"path": "assignee", "message": "not a member of the agent's teams"}],
        )
    holder, away = holder_for(assignee, item)
    note = delegation_note(away) if away else None
    item = _set_claim(item=item, holder=holder, actor_user=user, verb="item.assigned", note=note)
    if away is not None:
        tell_delegate(away=away, items=[item])
    return item
