"""Deciding from the notification: signed Approve / Deny links in new-item e-mails, digests and team webhooks.

A link names the item, the action and its recipient (a person, or a team for a webhook). Opening it never
decides: its confirmation page's POST does, through ``decision_submit`` with every rule; a link works once and
expires (docs/security.md, docs/teams.md)."""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.core import signing
from django.db import IntegrityError, transaction
from django.urls import reverse
from django.utils import timezone

from inbox import access
from inbox.audit.record import Actor, audit
from inbox.decisions.rules import DecisionError
from inbox.decisions.services import DecisionOutcome, decision_submit
from inbox.decisions.shapes import bulk_payload, needs_form_input
from inbox.models import AwayStatus, DecisionVia, InboxItem
from inbox.models.links import DecisionLinkUse

SALT = "inbox.decision-link"
ACTIONS = ("approve", "deny")  # each sends the item's own yes/no shape (``inbox.decisions.shapes``)


class LinkRefused(Exception):
    """Why a link cannot be used; ``code`` drives the page (invalid, not_yours, used, expired, decided)."""

    def __init__(self, code: str, message: str, *, item: InboxItem | None = None, status: int = 400):
        super().__init__(message)
        self.code = code
        self.message = message
        self.item = item
        self.status = status


@dataclass
class DecisionLink:
    token: str
    item_id: int
    action: str
    user_id: int | None
    team_id: int | None
    expires_at: int

    @property
    def token_hash(self) -> str:
        return hashlib.sha256(self.token.encode()).hexdigest()


def offers_links(item: InboxItem) -> bool:
    """A yes/no item: a bare Approve or Deny is a complete answer."""
    return item.is_open and not needs_form_input(item)


def make_token(*, item: InboxItem, action: str, user: Any = None, team_id: int | None = None) -> str:
    if action not in ACTIONS or (user is None) == (team_id is None):
        raise ValueError("a decision link is for approve/deny and for exactly one user or one team")
    body: dict[str, Any] = {"i": item.pk, "a": action, "e": int(item.expires_at.timestamp()), "n": secrets.token_hex(4)}
    if user is not None:
        body["u"] = user.pk
    else:
        body["t"] = team_id
    return signing.dumps(body, salt=SALT, compress=True)


def link_path(token: str) -> str:
    return reverse("inbox:decision_link", args=[token])


def links_for(item: InboxItem, *, user: Any = None, team_id: int | None = None) -> dict[str, str] | None:
    """``{"approve": path, "deny": path}`` for a yes/no item, else None; none for a person while someone else
    holds the item (the claim would refuse them: the delegate of someone away holds what they held)."""
    if not offers_links(item):
        return None
    if user is not None and item.claimed_by_id not in (None, user.pk):
        return None
    return {action: link_path(make_token(item=item, action=action, user=user, team_id=team_id)) for action in ACTIONS}


def read_link(token: str) -> DecisionLink:
    max_age = timedelta(days=settings.INBOX_DECISION_LINK_MAX_AGE_DAYS)
    try:
        body = signing.loads(token, salt=SALT, max_age=max_age)
        return DecisionLink(
            token=token,
            item_id=int(body["i"]),
            action=body["a"] if body["a"] in ACTIONS else "",
            user_id=body.get("u"),
            team_id=body.get("t"),
            expires_at=int(body["e"]),
        )
    except signing.SignatureExpired:
        raise LinkRefused(
            "too_old",
            f"This decision link is more than {settings.INBOX_DECISION_LINK_MAX_AGE_DAYS:g} days old, so it no longer "
            "works. Open the inbox to decide the item.",
            status=410,
        ) from None
    except (signing.BadSignature, KeyError, TypeError, ValueError):
        raise LinkRefused("invalid", "This decision link is not valid (it may have been cut short).") from None


def check_link(link: DecisionLink, user: Any) -> InboxItem:
    """Everything a link must pass before its page offers to decide; the item it decides."""
    if not link.action:
        raise LinkRefused("invalid", "This decision link is not valid.")
    mine = link.user_id == user.pk if link.user_id is not None else user.groups.filter(pk=link.team_id).exists()
    if not mine:
        # Forwarded to someone else: it does nothing for them, and says nothing about the item.
        raise LinkRefused(
            "not_yours",
            "This decision link was sent to someone else, so it does nothing for you. Open the inbox to see what "
            "you may decide.",
            status=403,
        )
    item = (
        InboxItem.objects.select_related("agent", "thread", "run", "decided_by", "claimed_by")
        .filter(pk=link.item_id)
        .first()
    )
    if item is None or not access.visible_items(user).filter(pk=item.pk).exists():
        # Access is checked when the link is used: someone who left the item's team learns nothing of it.
        raise LinkRefused("invalid", "The item of this link no longer exists.", status=404)
    use = DecisionLinkUse.objects.filter(token_hash=link.token_hash).first()
    if use is not None:
        raise LinkRefused(
            "used",
            f"This link was already used, {timezone.localtime(use.used_at):%Y-%m-%d %H:%M %Z}.",
            item=item,
            status=409,
        )
    if (
        item.status == InboxItem.Status.EXPIRED
        or item.expires_at <= timezone.now()
        or link.expires_at <= timezone.now().timestamp()
    ):
        raise LinkRefused(
            "expired", f"This item expired at {item.expires_at:%Y-%m-%d %H:%M %Z}.", item=item, status=409
        )
    if not item.is_open:
        who = f" by {item.decided_by.get_username()}" if item.decided_by is not None else ""
        raise LinkRefused(
            "decided", f"This item was already {item.get_status_display().lower()}{who}.", item=item, status=409
        )
    if access.locked_by_claim(user, item) and item.claimed_by is not None:
        raise LinkRefused("held", _held_by_whom(item, user), item=item, status=403)
    return item


def _held_by_whom(item: InboxItem, user: Any) -> str:
    """Where the item went: to the delegate of someone away, or to whoever claimed it."""
    holder = item.claimed_by.get_username() if item.claimed_by is not None else ""
    now = timezone.now()
    away = AwayStatus.objects.filter(user_id=user.pk, starts_at__lte=now, ends_at__gt=now).first()
    if away is not None and away.delegate_id == item.claimed_by_id:
        until = timezone.localtime(away.ends_at)
        return f"You are away until {until:%Y-%m-%d %H:%M %Z}: {holder}, your delegate, holds this item and decides it."
    return f"{holder} holds this item now, so only they (or staff) decide it."


def use_link(*, token: str, user: Any, comment: str = "") -> DecisionOutcome:
    """The confirmation's POST: check the link, record its use (once), then decide with every rule."""
    link = read_link(token)
    item = check_link(link, user)
    try:
        with transaction.atomic():
            use = DecisionLinkUse.objects.create(token_hash=link.token_hash, item=item, user=user, action=link.action)
    except IntegrityError:
        raise LinkRefused("used", "This link was already used.", item=item, status=409) from None
    answer = bulk_payload(item, link.action)
    try:
        if answer is None:
            raise DecisionError(400, "needs_input", "This item needs an answer from its form; open it to decide.")
        outcome = decision_submit(
            item_id=item.pk, user=user, status=answer[0], payload=answer[1], comment=comment, via=DecisionVia.LINK
        )
    except DecisionError as error:
        DecisionLinkUse.objects.filter(pk=use.pk).update(result=error.code)
        raise
    DecisionLinkUse.objects.filter(pk=use.pk).update(result="ok")
    audit(
        actor=Actor.for_user(user),
        verb="item.link_used",
        obj=item,
        data={"action": link.action, "via": "team link" if link.team_id is not None else "email link"},
    )
    return outcome
