"""Digests: each digest-mode user gets, once per ``INBOX_DIGEST_SECONDS``, one mail of the open items of their
teams that arrived since the last one (``inbox.teams.tasks.send_digests``, on beat)."""

from __future__ import annotations

from collections import defaultdict
from datetime import timedelta

from django.conf import settings
from django.utils import timezone

from inbox import access
from inbox.models import InboxItem, NotificationPreference
from inbox.teams.mail import email_message
from inbox.teams.summaries import item_summary, with_decision_links

DIGEST_SECONDS = settings.INBOX_DIGEST_SECONDS


def mail_digests() -> int:
    """Mail each digest-mode user the open items of their teams that arrived since their last digest.
    A user's window is claimed with a conditional update, so two beat runs never mail the same items."""
    now = timezone.now()
    sent = 0
    prefs = NotificationPreference.objects.filter(email_mode=NotificationPreference.Mode.DIGEST).select_related("user")
    for pref in prefs.exclude(user__email="").filter(user__is_active=True):
        since = pref.digest_last_sent_at or now - timedelta(seconds=DIGEST_SECONDS)
        # filter(x=None) is "IS NULL", so a first digest claims the same way.
        claimed = NotificationPreference.objects.filter(
            pk=pref.pk, digest_last_sent_at=pref.digest_last_sent_at
        ).update(digest_last_sent_at=now)
        if not claimed:
            continue
        items = list(
            InboxItem.objects.filter(
                access.deciding_items_q(pref.user),
                status=InboxItem.Status.OPEN,
                created_at__gt=since,
                created_at__lte=now,
            )
            .distinct()
            .select_related("agent", "thread", "run")
            .order_by("agent__name", "created_at")
        )
        if not items:
            continue
        groups: dict[str, list[dict]] = defaultdict(list)
        for item in items:
            groups[item.agent.name or item.agent.slug].append(
                with_decision_links(item_summary(item), item, user=pref.user)
            )
        subject = f"[Inbox] Digest: {len(items)} item(s) waiting for a decision"
        message = email_message(
            pref.user, subject, "digest", {"groups": dict(groups), "count": len(items), "since": since}
        )
        sent += message.send() or 0
    return sent
