"""The mail every team notice is sent as (announcements, digests, delivery failures): who wants it, and one
message in text and HTML from the ``email/`` templates, with absolute links to the inbox."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.mail import EmailMultiAlternatives
from django.template.loader import render_to_string

from agents.models import Agent
from inbox.access import approvers_of
from inbox.core.text import one_line
from inbox.models import NotificationPreference


def absolute_url(path: str) -> str:
    return settings.SITE_URL.rstrip("/") + path


def recipients_of(agent: Agent, mode: str, *, team_id: int | None = None) -> list[Any]:
    """Who decides the agent's items (its teams, or staff when it has none; see ``approvers_of``) and wants
    mail in ``mode``. No preference row means the model default: immediate."""
    users = approvers_of(agent.pk, team_id=team_id)
    if mode == NotificationPreference.Mode.IMMEDIATE:
        return list(users.exclude(inbox_prefs__email_mode=NotificationPreference.Mode.DIGEST))
    return list(users.filter(inbox_prefs__email_mode=mode))


def email_message(user: Any, subject: str, template: str, context: dict[str, Any]) -> EmailMultiAlternatives:
    context = {
        **context,
        "user": user,
        "site_url": settings.SITE_URL,
        "settings_url": absolute_url("/inbox/settings/notifications/"),
    }
    text = render_to_string(f"email/{template}.txt", context)
    html = render_to_string(f"email/{template}.html", context)
    message = EmailMultiAlternatives(one_line(subject), text, settings.DEFAULT_FROM_EMAIL, [user.email])
    message.attach_alternative(html, "text/html")
    return message
