"""Delegation while away: a person marks themselves away and names a delegate, who gets the items assigned to or
held by them meanwhile.

``away_set`` / ``away_clear`` write it (audited), ``holder_for`` puts the delegate in the place of an away person
who claims or is assigned an item, and ``delegation_sweep`` (beat) hands over what they hold when the period
begins; each hand-over tells the delegate (``tell_delegate``: a push to their pages and an e-mail). The delegate is a teammate (``check_away``, for the page, the API and the admin alike); the rules of
deciding hold for them as for anyone (docs/teams.md)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.contrib.auth import get_user_model
from django.db import transaction
from django.utils import timezone

from inbox import access
from inbox.audit.record import Actor, audit
from inbox.core.errors import ApplicationError
from inbox.decisions.rules import is_requester, requester_of
from inbox.live import push as live
from inbox.models import AwayStatus, InboxItem, Notice, NotificationPreference
from inbox.teams import outbox
from inbox.teams.mail import email_message
from inbox.teams.summaries import item_summary, with_decision_links

# How many of the handed items the delegate's e-mail names, and the push lists (the rest are counted).
TOLD_AT_MOST = 20


def away_of(user: Any, *, now: datetime | None = None) -> AwayStatus | None:
    """The user's away status while it is in force, else None."""
    if user is None or not getattr(user, "is_authenticated", False):
        return None
    now = now or timezone.now()
    return (
        AwayStatus.objects.select_related("delegate", "user")
        .filter(user_id=user.pk, starts_at__lte=now, ends_at__gt=now)
        .first()
    )


def away_status_of(user: Any) -> AwayStatus | None:
    """The user's away status, in force or to come (None once it has ended). A request's signed-in user was read
    with it (``inbox.teams.backends.signed_in``): then no query."""
    if user.__class__.inbox_away.is_cached(user):
        away = getattr(user, "inbox_away", None)
        return away if away is not None and away.ends_at > timezone.now() else None
    return (
        AwayStatus.objects.select_related("delegate", "user")
        .filter(user_id=user.pk, ends_at__gt=timezone.now())
        .first()
    )


def _refuse(field: str, message: str) -> ApplicationError:
    return ApplicationError(400, "invalid_away", f"{field}: {message}", errors=[{"path": field, "message": message}])


def check_away(*, user: Any, starts_at: datetime, ends_at: datetime, delegate: Any) -> None:
    if ends_at <= starts_at:
        raise _refuse("until", "must be after from")
    if ends_at <= timezone.now():
        raise _refuse("until", "is already past")
    if delegate is None or not delegate.is_active:
        raise _refuse("delegate", "choose an active person")
    if delegate.pk == user.pk:
        raise _refuse("delegate", "choose someone other than the person who is away")
    if not may_delegate_to(user, delegate):
        raise _refuse("delegate", f"choose a teammate: {delegate.get_username()} is in none of your teams")
    theirs = AwayStatus.objects.filter(user_id=delegate.pk, starts_at__lt=ends_at, ends_at__gt=starts_at).first()
    if theirs is not None:
        raise _refuse("delegate", f"{delegate.get_username()} is away then too (until {theirs.ends_at:%Y-%m-%d %H:%M})")


@transaction.atomic
def away_set(*, user: Any, starts_at: datetime, ends_at: datetime, delegate: Any, set_by: Any) -> AwayStatus:
    """Mark ``user`` away from ``starts_at`` until ``ends_at`` with ``delegate`` deciding for them (replacing any
    earlier status). ``set_by`` is the person themselves, or staff."""
    check_away(user=user, starts_at=starts_at, ends_at=ends_at, delegate=delegate)
    now = timezone.now()
    away, _ = AwayStatus.objects.update_or_create(
        user=user,
        defaults={
            "starts_at": starts_at,
            "ends_at": ends_at,
            "delegate": delegate,
            "set_by": set_by,
            "updated_at": now,
        },
    )
    audit(
        actor=Actor.for_user(set_by),
        verb="away.set",
        obj=away,
        data={
            "user": user.get_username(),
            "from": starts_at.isoformat(),
            "until": ends_at.isoformat(),
            "delegate": delegate.get_username(),
        },
    )
    if away.in_force(now):
        hand_over(away=away, now=now)
    return away


@transaction.atomic
def away_clear(*, user: Any, set_by: Any) -> bool:
    """``user`` is back: their away status is deleted (audited). False when there was none."""
    away = AwayStatus.objects.select_for_update().filter(user_id=user.pk).first()
    if away is None:
        return False
    audit(actor=Actor.for_user(set_by), verb="away.cleared", obj=away, data={"user": user.get_username()})
    away.delete()
    return True


def refusal_for(delegate: Any, item: InboxItem) -> str | None:
    """Why ``item`` may not go to ``delegate``, in words, or None: they must see it and must not be its requester."""
    if not access.visible_items(delegate).filter(pk=item.pk).exists():
        return f"{delegate.get_username()} cannot see this item's agent"
    if is_requester(delegate, requester_of(item)):
        return f"{delegate.get_username()} asked for this action, so they may not approve it"
    return None


def holder_for(person: Any, item: InboxItem, *, field: str = "assignee") -> tuple[Any, AwayStatus | None]:
    """Who holds ``item`` when it is claimed by or assigned to ``person``: their delegate while they are away (with
    the away status), else ``person`` (and None). Refused (400 naming ``field``) when the delegate may not hold
    it."""
    away = away_of(person)
    if away is None:
        return person, None
    why = refusal_for(away.delegate, item)
    if why is not None:
        message = f"{person.get_username()} is away until {away.ends_at:%Y-%m-%d %H:%M} and their delegate {why}."
        raise ApplicationError(
            400,
            "delegate_refused",
            message,
            errors=[{"path": field, "message": message}],
            delegate=away.delegate.get_username(),
        )
    return away.delegate, away


def delegation_note(away: AwayStatus) -> dict[str, str]:
    """What the audit records about a hand-over."""
    return {"delegatedFrom": away.user.get_username(), "awayUntil": away.ends_at.isoformat()}


def hand_over(*, away: AwayStatus, now: datetime, send: bool = False) -> int:
    """Give the open items ``away.user`` holds to their delegate (or release those the delegate may not hold), and
    tell the delegate. Call inside a transaction; ``send``: this process sends the e-mail after the commit (a
    worker), else the notices' doorbell does. Returns how many went to the delegate."""
    items = list(
        InboxItem.objects.select_for_update(of=("self",))
        .select_related("run", "thread")
        .filter(status=InboxItem.Status.OPEN, claimed_by_id=away.user_id)
        .order_by("pk")
    )
    actor = Actor.system("delegation")
    handed: list[InboxItem] = []
    for item in items:
        why = refusal_for(away.delegate, item)
        holder = None if why else away.delegate
        item.claimed_by = holder
        item.claimed_at = now if holder else None
        item.save(update_fields=["claimed_by", "claimed_at"])
        data = {"from": away.user.get_username(), "until": away.ends_at.isoformat()}
        if why:
            audit(
                actor=actor,
                verb="item.delegation_refused",
                obj=item,
                data={**data, "delegate": away.delegate.get_username(), "why": why},
            )
        else:
            audit(actor=actor, verb="item.delegated", obj=item, data={**data, "to": away.delegate.get_username()})
            handed.append(item)
        live.publish_on_commit(
            live.groups_for(
                agent_id=item.agent_id, item_id=item.pk, run_id=item.run_id, team_ids=[item.routed_team_id]
            ),
            "item.claimed",
            {"item": item.pk, "run": item.run_id, "claimedBy": holder.get_username() if holder else None},
        )
    tell_delegate(away=away, items=handed, send=send)
    return len(handed)


def tell_delegate(*, away: AwayStatus, items: list[InboxItem], send: bool = False) -> None:
    """The delegate hears that ``items`` are theirs now: an ``items.delegated`` push to their pages, and an
    e-mail (with one-click decision links bound to them) unless they turned mail off. Written in the hand-over's
    transaction, sent after its commit."""
    if not items:
        return
    delegate, name = away.delegate, away.user.get_username()
    until = timezone.localtime(away.ends_at)
    what = f"“{items[0].short_title}”" if len(items) == 1 else f"{len(items)} items"
    message = f"{what} {'is' if len(items) == 1 else 'are'} yours while {name} is away (until {until:%Y-%m-%d %H:%M})."
    live.publish_on_commit(
        [live.personal_group(delegate.pk)],
        "items.delegated",
        {"items": [item.pk for item in items[:TOLD_AT_MOST]], "count": len(items), "from": name, "message": message},
    )
    mode = NotificationPreference.objects.filter(user=delegate).values_list("email_mode", flat=True).first()
    if not delegate.email or mode == NotificationPreference.Mode.OFF:
        return
    named = items[:TOLD_AT_MOST]
    context = {
        "away": name,
        "until": until,
        "count": len(items),
        "more": len(items) - len(named),
        "items": [with_decision_links(item_summary(item), item, user=delegate) for item in named],
    }
    subject = f"[Inbox] {what} handed to you: {name} is away"
    notices = outbox.email_notices(
        Notice.Kind.DELEGATION, [(delegate, email_message(delegate, subject, "delegated", context))]
    )
    (outbox.deliver_on_commit if send else outbox.ring_on_commit)(notices)


def delegation_sweep(*, now: datetime | None = None) -> int:
    """Beat: hand over the items still held by people whose away period has begun. Returns how many were handed."""
    now = now or timezone.now()
    holders = InboxItem.objects.filter(status=InboxItem.Status.OPEN, claimed_by_id__isnull=False).values(
        "claimed_by_id"
    )
    periods = AwayStatus.objects.filter(starts_at__lte=now, ends_at__gt=now, user_id__in=holders).select_related(
        "user", "delegate"
    )
    handed = 0
    for away in periods:
        with transaction.atomic():
            handed += hand_over(away=away, now=now, send=True)
    return handed


def _delegates_of(user: Any) -> Any:
    people = get_user_model().objects.filter(is_active=True).exclude(pk=user.pk)
    if not user.is_staff:
        people = people.filter(groups__in=user.groups.all())
    return people.distinct()


def delegates_for(user: Any) -> list[Any]:
    """Whom ``user`` may name: the active people of their teams (everyone active, for staff), but themselves."""
    return list(_delegates_of(user).order_by("username"))


def may_delegate_to(user: Any, delegate: Any) -> bool:
    """The page's choice and the API's check (``check_away``): ``delegate`` is one of ``delegates_for(user)``."""
    return _delegates_of(user).filter(pk=delegate.pk).exists()
