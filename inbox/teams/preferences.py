"""A user's notification preferences (email at once, a periodic digest, or none). Changes are audited."""

from __future__ import annotations

from typing import Any

from django.db import transaction

from inbox.audit.record import Actor, audit
from inbox.models import NotificationPreference


def preferences_of(user: Any) -> NotificationPreference:
    """The user's preferences; the defaults are stored the first time they are asked for."""
    prefs, _ = NotificationPreference.objects.get_or_create(user=user)
    return prefs


@transaction.atomic
def preferences_set_email_mode(*, user: Any, mode: str) -> NotificationPreference:
    """Set how the user hears about new items. A change is audited (``preferences.changed``); setting the
    mode already in force writes nothing."""
    prefs = NotificationPreference.objects.select_for_update().get(pk=preferences_of(user).pk)
    previous = prefs.email_mode
    if mode != previous:
        prefs.email_mode = mode
        prefs.save(update_fields=["email_mode"])
        audit(
            actor=Actor.for_user(user),
            verb="preferences.changed",
            obj=prefs,
            data={"email_mode": {"from": previous, "to": mode}},
        )
    return prefs
