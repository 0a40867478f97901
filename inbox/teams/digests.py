"""Digests: each digest-mode user gets, once per ``INBOX_DIGEST_SECONDS``, one mail of the open items of their
teams that arrived since the last one, and of the items they snoozed that came back meanwhile
(``inbox.teams.tasks.send_digests``, on beat)."""

from __future__ import annotations

from collections import defaultdict
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.urls import reverse
from django.utils import timezone

from inbox import access
from inbox.models import InboxItem, Notice, NotificationPreference, Snooze
from inbox.teams import outbox
from inbox.teams.mail import absolute_url, email_message
from inbox.teams.summaries import item_summary, with_decision_links

DIGEST_SECONDS = settings.INBOX_DIGEST_SECONDS
DIGEST_LISTED = 50  # items a digest lists, and snoozed items back; it counts the rest and links to the inbox


def mail_digests() -> int:
    """Mail each digest-mode user the open items of their teams that arrived since their last digest.
    A user's window is claimed with a conditional update, so two beat runs never mail the same items; the digest
    is a notice written in the claim's transaction, sent once all are written. Returns the emails sent."""
    now = timezone.now()
    written: list[int] = []
    prefs = NotificationPreference.objects.filter(email_mode=NotificationPreference.Mode.DIGEST).select_related("user")
    for pref in prefs.exclude(user__email="").filter(user__is_active=True):
        with transaction.atomic():
            written += _digest(pref, now)
    return outbox.deliver(written)


def _digest(pref: NotificationPreference, now: datetime) -> list[int]:
    """Claim the user's window and write their digest's notice (none when nothing arrived)."""
    since = pref.digest_last_sent_at or now - timedelta(seconds=DIGEST_SECONDS)
    # filter(x=None) is "IS NULL", so a first digest claims the same way.
    claimed = NotificationPreference.objects.filter(pk=pref.pk, digest_last_sent_at=pref.digest_last_sent_at).update(
        digest_last_sent_at=now
    )
    if not claimed:
        return []
    arrived = InboxItem.objects.filter(
        access.deciding_items_q(pref.user),
        status=InboxItem.Status.OPEN,
        created_at__gt=since,
        created_at__lte=now,
    ).distinct()
    woken = Snooze.objects.filter(
        user=pref.user, woken_at__gt=since, woken_at__lte=now, item__status=InboxItem.Status.OPEN
    )
    items = list(arrived.select_related("agent", "thread", "run").order_by("agent__name", "created_at")[:DIGEST_LISTED])
    back = [
        with_decision_links(item_summary(snooze.item), snooze.item, user=pref.user)
        for snooze in woken.select_related("item__agent", "item__thread", "item__run").order_by("woken_at", "pk")[
            :DIGEST_LISTED
        ]
    ]
    if not items and not back:
        return []
    # A digest lists at most DIGEST_LISTED of each and counts the rest (a burst can be thousands of items).
    count = arrived.count() if len(items) == DIGEST_LISTED else len(items)
    back_count = woken.count() if len(back) == DIGEST_LISTED else len(back)
    groups: dict[str, list[dict]] = defaultdict(list)
    for item in items:
        groups[item.agent.name or item.agent.slug].append(with_decision_links(item_summary(item), item, user=pref.user))
    subject = f"[Inbox] Digest: {count + back_count} item(s) waiting for a decision"
    context = {
        "groups": dict(groups),
        "count": count,
        "more": count - len(items),
        "since": since,
        "back": back,
        "back_more": back_count - len(back),
        "inbox_url": absolute_url(reverse("inbox:list")),
    }
    message = email_message(pref.user, subject, "digest", context)
    return [notice.pk for notice in outbox.email_notices(Notice.Kind.DIGEST, [(pref.user, message)])]
